/**
 * Seeded mutation fuzzing of the v2 RecordBatch readers (issue 6). Every mutated or truncated
 * batch (generated in every codec, control and empty batches; in a second test real broker
 * batches from ../shared/fixtures/real) must end in a result or a SegliftError with a code: no
 * other exception and no allocation beyond the configured limit. `pnpm fuzz` runs the same
 * loops for longer (SEGLIFT_FUZZ_SECONDS) and also flags inputs slower than PER_INPUT_MS.
 */
import { readFileSync } from 'node:fs';
import {
  type FuzzFailure,
  fuzzHarness,
  mutate,
  needs,
  prng,
  realFixtures,
  realSegmentLogs,
  trackAllocations,
} from '@seglift/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeControlRecordKey, encodeEndTransactionMarker } from './control.js';
import { crc32c } from './crc.js';
import { SegliftError } from './errors.js';
import { logicalRecordsOfBatch } from './logical.js';
import {
  checkRecordBatchCrc,
  decodeRecords,
  encodeRecordBatch,
  encodeRecordBatchFromPayload,
  isControlBatch,
  iterateRecords,
  type RecordBatchFields,
  readRecordBatchHeader,
  recompressRecordBatch,
  recordsPayload,
} from './record-batch.js';
import type { Record as KRecord } from './types.js';

const CI_INPUTS = 12_000;
const PER_INPUT_MS = 2_000;
/** Small limit so a length field that drives an allocation is caught. */
const LIMIT = 256 * 1024;
/** Largest allocation any reader may make for one input (limit + one codec block + slack). */
const ALLOC_BOUND = LIMIT + 4 * 1024 * 1024 + 64 * 1024;

/** Rewrites length and CRC-32C so a mutation reaches the record parser instead of the CRC check. */
function reseal(b: Buffer, fixLength: boolean): Buffer {
  if (b.length < 61) return b;
  if (fixLength) b.writeInt32BE(b.length - 12, 8);
  const end = Math.min(b.length, 12 + Math.max(0, b.readInt32BE(8)));
  if (end > 21) b.writeUInt32BE(crc32c(b.subarray(21, end)), 17);
  return b;
}

function fields(baseOffset: bigint, over: Partial<RecordBatchFields> = {}): RecordBatchFields {
  return {
    baseOffset,
    partitionLeaderEpoch: 5,
    attributes: 0,
    lastOffsetDelta: 0,
    baseTimestamp: 1_600_000_000_000n,
    maxTimestamp: 1_600_000_000_000n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    ...over,
  };
}

function records(rand: () => number, n: number): KRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    attributes: 0,
    timestampDelta: i * 3,
    offsetDelta: i,
    key: i % 4 === 0 ? null : Buffer.from(`key-${i}`),
    value: i % 7 === 3 ? null : Buffer.from('value '.repeat(1 + Math.floor(rand() * 20))),
    headers:
      i % 2 === 0 ? [{ key: Buffer.from([0x68, 0xff]), value: i % 3 === 0 ? null : Buffer.from('hv') }] : [],
  }));
}

/** Seeds: every codec, with and without headers, idempotent/transactional, control, empty. */
function generatedBatches(): Buffer[] {
  const rand = prng(fuzz.seed);
  const out: Buffer[] = [];
  for (const codec of [0, 1, 2, 3, 4]) {
    for (const n of [1, 5, 40]) {
      const rs = records(rand, n);
      out.push(
        Buffer.from(
          encodeRecordBatch(
            fields(1000n, { lastOffsetDelta: n - 1, maxTimestamp: 1_600_000_000_000n + BigInt(3 * (n - 1)) }),
            rs,
            codec,
          ),
        ),
      );
    }
    out.push(
      Buffer.from(
        encodeRecordBatch(
          fields(7n, {
            producerId: 9n,
            producerEpoch: 1,
            baseSequence: 0x7ffffffe,
            attributes: 0x18,
            lastOffsetDelta: 2,
          }),
          records(rand, 3),
          codec,
        ),
      ),
    );
  }
  out.push(
    Buffer.from(
      encodeRecordBatch(
        fields(50n, { producerId: 9n, producerEpoch: 1, attributes: 0x30 }),
        [
          {
            attributes: 0,
            timestampDelta: 0,
            offsetDelta: 0,
            key: encodeControlRecordKey(0),
            value: encodeEndTransactionMarker(3),
            headers: [],
          },
        ],
        0,
      ),
    ),
  );
  out.push(Buffer.from(encodeRecordBatch(fields(60n, { lastOffsetDelta: 4, baseTimestamp: -1n }), [], 0)));
  return out;
}

/** Up to 400 v2 batches of the real broker segments (the test needs ../shared/fixtures/real). */
function realBatches(): Buffer[] {
  const out: Buffer[] = [];
  for (const p of realSegmentLogs()) {
    const f = readFileSync(p);
    let pos = 0;
    while (pos + 17 <= f.length) {
      const size = f.readInt32BE(pos + 8) + 12;
      if (size < 12 || pos + size > f.length) break;
      if (f[pos + 16] === 2 && out.length < 400) out.push(Buffer.from(f.subarray(pos, pos + size)));
      pos += size;
    }
  }
  expect(out.length).toBe(400);
  return out;
}

const HOT = [8, 23, 57, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70];

/** Batches whose compressed record stream itself is mutated (reaches the record parser per codec). */
function mutatedPayloadBatch(rand: () => number, codec: number): Buffer {
  const n = 1 + Math.floor(rand() * 20);
  const plainBatch = Buffer.from(
    encodeRecordBatch(fields(0n, { lastOffsetDelta: n - 1 }), records(rand, n), 0),
  );
  const payload = mutate(rand, plainBatch.subarray(61), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const count = rand() < 0.8 ? n : [0, n + 1, n - 1, 0x7fffffff, -1][Math.floor(rand() * 5)];
  const b = Buffer.from(
    encodeRecordBatchFromPayload(fields(0n, { lastOffsetDelta: n - 1 }), Math.max(0, count), payload, codec),
  );
  if (count < 0) {
    b.writeInt32BE(count, 57);
    reseal(b, false);
  }
  return b;
}

const fuzz = fuzzHarness({
  suite: 'format/record-batch',
  ciInputs: CI_INPUTS,
  perInputMs: PER_INPUT_MS,
  typedError: SegliftError,
});
/** Whether recompressRecordBatch rewrites the batch (not a control or empty batch kept as it is). */
function recompressedAtAll(batch: Uint8Array): boolean {
  try {
    const h = readRecordBatchHeader(batch, 0);
    return h.recordsCount !== 0 && !isControlBatch(h);
  } catch {
    return false;
  }
}

const stats = { inputs: 0, decodedOk: 0, failures: 0, arrayBuffersGrowthMB: 0, arrayBuffersJumpMB: 0 };
afterAll(() => fuzz.writeStats(stats));

describe('fuzz: v2 record batch readers', () => {
  it('mutated and truncated batches (generated in every codec, control, empty) end in a result or a SegliftError', () => {
    fuzzBatches(generatedBatches(), 0x9e3779b9, CI_INPUTS);
  });
  // A quarter of the CI inputs: the real batches are a second family of seeds, not the main one.
  needs(realFixtures).it(
    'mutated and truncated real broker batches end in a result or a SegliftError',
    () => {
      fuzzBatches(realBatches(), 0x7f4a7c15, CI_INPUTS / 4);
    },
  );
});

function fuzzBatches(seeds: Buffer[], salt: number, ciInputs: number): void {
  const rand = prng(fuzz.seed ^ salt);
  const failures: FuzzFailure[] = [];
  const decode = { maxDecompressedBytes: LIMIT };
  const more = fuzz.budget(ciInputs);
  let inputs = 0;
  // Largest growth of arrayBuffers over a window of 256 inputs, for `pnpm fuzz`'s stats line
  // only: GC timing makes it no test signal (the allocation tracker below is the deterministic
  // one). Not the total: Node 20's zlib *Sync functions keep ~16 KB per call that throws.
  let lastArrayBuffers = process.memoryUsage().arrayBuffers;
  const baseArrayBuffers = lastArrayBuffers;
  let maxJump = 0;
  const { largest } = trackAllocations(() => {
    for (let i = 0; more(i); i++) {
      let input: Buffer;
      const roll = rand();
      if (roll < 0.25) input = mutatedPayloadBatch(rand, Math.floor(rand() * 5));
      else {
        input = mutate(rand, seeds[Math.floor(rand() * seeds.length)], HOT);
        if (roll < 0.7) input = reseal(input, rand() < 0.5);
      }
      stats.inputs++;
      inputs++;
      fuzz.check('readRecordBatchHeader', input, () => readRecordBatchHeader(input, 0), failures);
      const crcOk = fuzz.check('checkRecordBatchCrc', input, () => checkRecordBatchCrc(input), failures);
      const decodedOk = fuzz.check('decodeRecords', input, () => decodeRecords(input, decode), failures);
      if (decodedOk) stats.decodedOk++;
      fuzz.check('iterateRecords', input, () => [...iterateRecords(input, decode)], failures);
      fuzz.check('logicalRecordsOfBatch', input, () => [...logicalRecordsOfBatch(input, decode)], failures);
      fuzz.check('recordsPayload', input, () => recordsPayload(input, decode), failures);
      fuzz.check('recompressRecordBatch', input, () => recompressRecordBatch(input, 4, decode), failures);
      // The round trip is as strict as decodeRecords: it accepts exactly the CRC-valid batches
      // decodeRecords accepts (the segment pipeline relies on it instead of a second decode).
      const roundTrip = { ...decode, roundTrip: true };
      const roundTripOk = fuzz.check(
        'recompressRecordBatch roundTrip',
        input,
        () => recompressRecordBatch(input, 4, roundTrip),
        failures,
      );
      // (Control and empty batches are copied as they are, never parsed.)
      if (crcOk && roundTripOk !== decodedOk && recompressedAtAll(input)) {
        failures.push({
          op: 'recompressRecordBatch roundTrip',
          input: Buffer.from(input).subarray(0, 2000).toString('hex'),
          error: `roundTrip ${roundTripOk ? 'accepted' : 'refused'} what decodeRecords ${decodedOk ? 'accepted' : 'refused'}`,
        });
      }
      if ((i & 255) === 0) {
        const now = process.memoryUsage().arrayBuffers;
        maxJump = Math.max(maxJump, now - lastArrayBuffers);
        lastArrayBuffers = now;
      }
    }
  });
  stats.failures += failures.length;
  stats.arrayBuffersGrowthMB = Math.round((lastArrayBuffers - baseArrayBuffers) / 1e6);
  stats.arrayBuffersJumpMB = Math.max(stats.arrayBuffersJumpMB, Math.round(maxJump / 1e6));
  expect(failures.slice(0, 3)).toEqual([]);
  // No length field drove an allocation past the limit (a 0x7fffffff-sized one would show here).
  expect(largest).toBeLessThanOrEqual(ALLOC_BOUND);
  expect(inputs).toBeGreaterThanOrEqual(fuzz.seconds > 0 ? 1 : ciInputs);
}
