/**
 * Seeded mutation fuzzing of the legacy readers (issue 6): v0/v1 messages and gzip/snappy/lz4
 * wrappers (absolute and relative inner offsets, LogAppendTime, inner streams mutated before
 * compression), mutated, truncated and re-sealed with a valid CRC-32, fed to readLegacyEntry,
 * iterateLegacyRecords and logicalRecordsOfLegacyEntry and to the Upconverter. Each ends in a
 * result or a SegliftError with a code, with bounded allocations. `pnpm fuzz` runs it longer
 * (SEGLIFT_FUZZ_SECONDS) and there also flags inputs slower than PER_INPUT_MS.
 */
import { compress, crc32, SegliftError } from '@seglift/format';
import { type FuzzFailure, fuzzHarness, mutate, prng, trackAllocations } from '@seglift/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { iterateLegacyRecords, logicalRecordsOfLegacyEntry } from './deep.js';
import { encodeLegacyEntry, readLegacyEntry } from './message.js';
import { Upconverter } from './upconvert.js';
import { encodeCompressedWrapper } from './writer.js';

const CI_INPUTS = 10_000;
const PER_INPUT_MS = 2_000;
const LIMIT = 256 * 1024;
const ALLOC_BOUND = 4 * 1024 * 1024 + 64 * 1024;

/** Rewrites the size field and the CRC-32 so a mutation reaches the message parser. */
function reseal(b: Buffer, fixSize: boolean): Buffer {
  if (b.length < 17) return b;
  if (fixSize) b.writeInt32BE(b.length - 12, 8);
  const end = Math.min(b.length, 12 + Math.max(0, b.readInt32BE(8)));
  if (end > 16) b.writeUInt32BE(crc32(b.subarray(16, end)), 12);
  return b;
}

const text = (rand: () => number, n: number) =>
  Buffer.from('legacy message '.repeat(1 + Math.floor(rand() * n)));

function inner(rand: () => number, magic: 0 | 1, base: bigint, n: number) {
  return Array.from({ length: n }, (_, i) => ({
    offset: base + BigInt(i),
    timestamp: magic === 1 ? 1_500_000_000_000n + BigInt(i) : undefined,
    key: i % 3 === 0 ? null : Buffer.from(`k${i}`),
    value: i % 5 === 4 ? null : text(rand, 8),
  }));
}

function seeds(rand: () => number): Buffer[] {
  const out: Buffer[] = [];
  for (const magic of [0, 1] as const) {
    out.push(
      Buffer.from(
        encodeLegacyEntry(3n, { magic, timestamp: 1_500_000_000_000n, key: null, value: text(rand, 5) }),
      ),
    );
    out.push(Buffer.from(encodeLegacyEntry(4n, { magic, key: Buffer.from('k'), value: null })));
    out.push(Buffer.from(encodeLegacyEntry(5n, { magic, key: Buffer.alloc(0), value: Buffer.alloc(0) })));
    for (const codec of [1, 2, 3] as const) {
      for (const n of [1, 4, 30]) {
        out.push(
          Buffer.from(encodeCompressedWrapper({ magic, codec, messages: inner(rand, magic, 100n, n) })),
        );
      }
      if (magic === 1) {
        out.push(
          Buffer.from(
            encodeCompressedWrapper({
              magic,
              codec,
              timestampType: 'LogAppendTime',
              wrapperTimestamp: 1_700_000_000_000n,
              messages: inner(rand, magic, 200n, 5),
            }),
          ),
        );
      }
    }
  }
  return out;
}

/** A wrapper whose inner message set is mutated before compression (reaches the inner parser). */
function mutatedInnerWrapper(rand: () => number): Buffer {
  const magic = rand() < 0.5 ? 0 : 1;
  const codec = 1 + Math.floor(rand() * 3);
  const n = 1 + Math.floor(rand() * 8);
  const set = Buffer.concat(
    inner(rand, magic, magic === 0 ? 50n : 0n, n).map((m) =>
      encodeLegacyEntry(m.offset, { magic, timestamp: m.timestamp, key: m.key, value: m.value }),
    ),
  );
  const hot = [8, 12, 16, 17, 18, 22, 26, 30];
  let mutated = mutate(rand, set, hot);
  if (rand() < 0.6) mutated = resealAll(mutated);
  const value = Buffer.from(compress(codec, mutated, { magic }));
  return Buffer.from(
    encodeLegacyEntry(magic === 0 ? 50n + BigInt(n - 1) : BigInt(n - 1), {
      magic,
      attributes: codec,
      timestamp: 1_500_000_000_000n,
      key: null,
      value,
    }),
  );
}

/** Reseals every entry of a message set whose sizes still chain. */
function resealAll(b: Buffer): Buffer {
  let p = 0;
  while (p + 17 <= b.length) {
    const size = b.readInt32BE(p + 8);
    if (size < 14 || p + 12 + size > b.length) break;
    reseal(b.subarray(p, p + 12 + size) as Buffer, false);
    p += 12 + size;
  }
  return b;
}

const fuzz = fuzzHarness({
  suite: 'legacy/message',
  ciInputs: CI_INPUTS,
  perInputMs: PER_INPUT_MS,
  typedError: SegliftError,
});
const stats = { inputs: 0, decodedOk: 0, failures: 0 };
afterAll(() => fuzz.writeStats(stats));

describe('fuzz: legacy message sets and wrappers', () => {
  it('mutated, truncated and re-sealed entries end in records or a SegliftError', () => {
    const rand = prng(fuzz.seed ^ 0x1e9ac7);
    const base = seeds(rand);
    const failures: FuzzFailure[] = [];
    const opts = { maxDecompressedBytes: LIMIT };
    const more = fuzz.budget();
    const HOT = [8, 12, 16, 17, 18, 22, 26, 30, 34];
    const { largest } = trackAllocations(() => {
      for (let i = 0; more(i); i++) {
        let input: Buffer;
        const roll = rand();
        if (roll < 0.3) input = mutatedInnerWrapper(rand);
        else {
          input = mutate(rand, base[Math.floor(rand() * base.length)], HOT);
          if (roll < 0.75) input = reseal(input, rand() < 0.5);
        }
        stats.inputs++;
        fuzz.check('readLegacyEntry', input, () => readLegacyEntry(input, 0), failures);
        const ok = fuzz.check(
          'iterateLegacyRecords',
          input,
          () => [...iterateLegacyRecords(input, opts)],
          failures,
        );
        if (ok) stats.decodedOk++;
        fuzz.check(
          'logicalRecordsOfLegacyEntry',
          input,
          () => logicalRecordsOfLegacyEntry(input, opts),
          failures,
        );
        fuzz.check(
          'Upconverter',
          input,
          () => {
            const up = new Upconverter({
              grouping: rand() < 0.5 ? 'kafka' : 'coalesce',
              codec: 4,
              maxDecompressedBytes: LIMIT,
            });
            return [...up.push(input), ...up.flush()];
          },
          failures,
        );
      }
    });
    stats.failures = failures.length;
    expect(failures.slice(0, 3)).toEqual([]);
    expect(largest).toBeLessThanOrEqual(ALLOC_BOUND);
  });
});
