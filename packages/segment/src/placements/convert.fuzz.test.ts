/**
 * Seeded mutation fuzzing of whole segments through the file pipeline (issue 6):
 * readSegmentEntries, verifySegment and convertSegment (outDir and in place) on mutated,
 * truncated and re-sealed copies of generated segments (every magic and codec, control and empty
 * batches) and, in a second test, of real broker segments (../shared/fixtures/real).
 * Every input ends in a result or a SegliftError with a code (a failed report carries one);
 * nothing else is thrown; no allocation exceeds
 * ALLOC_BOUND with small maxEntryBytes/maxDecompressedBatchBytes; the source file is never
 * modified. When convert succeeds, the output verifies clean and holds exactly the records an
 * independent (kafkajs) decode of the input gives. `pnpm fuzz` runs it longer, and there also
 * flags inputs slower than PER_INPUT_MS (time is no signal on a shared CI machine).
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { crc32, crc32c, decompress, SegliftError } from '@seglift/format';
import { encodeLegacyEntry, readLegacyEntry } from '@seglift/legacy';
import {
  fuzzHarness,
  needs,
  prng,
  realFixtures,
  realSegmentLogs,
  startAllocationTracking,
} from '@seglift/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { readSegmentEntries } from '../rewrite/reader.js';
import { verifySegment } from '../rewrite/verify.js';
import { mixedSegment, tmpDir, v2Batch } from '../test-support/fixtures.js';
import { independentRecords, type PlainRecord, shallowEntries } from '../test-support/independent.js';
import { convertSegment } from './convert.js';

const CI_INPUTS = 1500;
const PER_INPUT_MS = 5_000;
const MAX_DECOMPRESSED = 256 * 1024;
const MAX_ENTRY = 1024 * 1024;
/** Reader chunk (4 MiB) or the 4 MiB write buffer, plus slack; a length-driven allocation would be far above. */
const ALLOC_BOUND = 4 * 1024 * 1024 + 256 * 1024;

const INTERESTING32 = [
  0, 1, -1, 12, 13, 14, 48, 49, 61, 0x7f, 0x80, 0xffff, 0x10000, 0x7fffffff, -0x80000000, 0x3fffffff,
  0x100000,
];

interface Seed {
  bytes: Buffer;
  base: bigint;
  /** Entry start positions (the hot fields are at +8 size, +16 magic, +17 attributes, +57 count). */
  entries: number[];
}

function entryStarts(b: Buffer): number[] {
  const out: number[] = [];
  let p = 0;
  while (p + 17 <= b.length) {
    const size = b.readInt32BE(p + 8);
    if (size < 14 || p + 12 + size > b.length) break;
    out.push(p);
    p += 12 + size;
  }
  return out;
}

function mutate(rand: () => number, seed: Seed): Buffer {
  const int = (n: number) => Math.floor(rand() * n);
  let b = Buffer.from(seed.bytes);
  const at = () => {
    const e = seed.entries[int(seed.entries.length)] ?? 0;
    return e + [8, 8, 16, 17, 21, 23, 35, 57, 61, 22, 26, 30][int(12)];
  };
  for (let k = 1 + int(3); k > 0; k--) {
    if (b.length === 0) break;
    switch (int(9)) {
      case 0:
        b[int(b.length)] ^= 1 << int(8);
        break;
      case 1:
      case 2: {
        const p = rand() < 0.8 ? at() : int(b.length);
        if (p + 4 > b.length) break;
        const v = rand() < 0.6 ? INTERESTING32[int(INTERESTING32.length)] : b.readInt32BE(p) + int(17) - 8;
        b.writeUInt32BE(v >>> 0, p);
        break;
      }
      case 3: {
        const p = at();
        if (p < b.length) b[p] = int(256);
        break;
      }
      case 4:
        b = b.subarray(0, int(b.length));
        break;
      case 5: {
        const p = int(b.length);
        b = Buffer.concat([b.subarray(0, p), b.subarray(p + 1 + int(64))]);
        break;
      }
      case 6: {
        // Duplicate or swap whole entries: repeated or reordered offsets.
        const e = seed.entries;
        if (e.length < 2) break;
        const i = int(e.length - 1);
        const a = b.subarray(e[i], e[i + 1]);
        b = Buffer.concat([b.subarray(0, e[i + 1]), a, b.subarray(e[i + 1])]);
        break;
      }
      case 7: {
        // Codec bits: legacy attributes at +17, v2 low attribute byte at +22 (ids 5-7 included).
        const e = seed.entries[int(seed.entries.length)] ?? 0;
        const p = b[e + 16] === 2 ? e + 22 : e + 17;
        if (p < b.length) b[p] = (b[p] & ~7) | int(8);
        break;
      }
      case 8: {
        const p = int(b.length);
        b.fill(0xff, p, Math.min(b.length, p + 1 + int(8)));
        break;
      }
    }
  }
  return b;
}

/** Recomputes each entry's CRC (v2 CRC-32C, legacy CRC-32) so mutations get past the CRC checks. */
function reseal(b: Buffer): Buffer {
  let p = 0;
  while (p + 17 <= b.length) {
    const size = b.readInt32BE(p + 8);
    if (size < 14 || p + 12 + size > b.length) break;
    const end = p + 12 + size;
    if (b[p + 16] === 2 && size >= 49) b.writeUInt32BE(crc32c(b.subarray(p + 21, end)), p + 17);
    else if (b[p + 16] < 2) b.writeUInt32BE(crc32(b.subarray(p + 16, end)), p + 12);
    p = end;
  }
  return b;
}

/** The real broker segments of at most 256 KiB (the test needs ../shared/fixtures/real). */
async function realSeeds(): Promise<Seed[]> {
  const out: Seed[] = [];
  for (const p of realSegmentLogs()) {
    const name = path.basename(p);
    const size = (await stat(p)).size;
    if (!/^\d{20}\.log$/.test(name) || size > 256 * 1024 || size === 0) continue;
    const bytes = await readFile(p);
    out.push({ bytes, base: BigInt(name.slice(0, 20)), entries: entryStarts(bytes) });
  }
  expect(out.length).toBeGreaterThan(0);
  return out;
}

function generatedSeeds(): Seed[] {
  const seeds: Buffer[] = [mixedSegment(0n, 1).bytes, mixedSegment(0n, 2).bytes];
  const rand = prng(fuzz.seed);
  // Small single-codec segments: every codec in v2, and plain legacy.
  for (const codec of [0, 1, 2, 3, 4] as const) {
    seeds.push(
      Buffer.concat([
        v2Batch(0n, [Buffer.from('a'), null, Buffer.from('ccc')], codec),
        v2Batch(3n, [Buffer.from('d'.repeat(300))], codec, {}, true),
      ]),
    );
  }
  seeds.push(
    Buffer.concat(
      Array.from({ length: 6 }, (_, i) =>
        encodeLegacyEntry(BigInt(i), {
          magic: (i % 2) as 0 | 1,
          timestamp: 1_500_000_000_000n + BigInt(i),
          key: null,
          value: Buffer.from(`v${rand()}`),
        }),
      ),
    ),
  );
  return seeds.map((bytes) => ({
    bytes: Buffer.from(bytes),
    base: 0n,
    entries: entryStarts(Buffer.from(bytes)),
  }));
}

/**
 * The records a consumer gets from `file`, entry by entry, decoded by kafkajs. One known
 * difference is settled by Kafka's rule instead: when the decompressed inner stream of a legacy
 * wrapper ends in a truncated message, Kafka's DataLogInputStream quietly stops after the complete
 * ones (docs/kafka-format.md §2, "legacy inner stream truncated"), while kafkajs drops the whole wrapper. Such
 * wrappers are walked here by hand (sizes, then Kafka's v1 relative-offset rule) and their
 * complete messages expected.
 */
async function expectedRecords(file: Buffer): Promise<{ records: PlainRecord[]; truncatedInner: number }> {
  const records: PlainRecord[] = [];
  let truncatedInner = 0;
  for (const e of shallowEntries(file)) {
    const got = await independentRecords(e.bytes);
    const codec = e.magic < 2 ? e.bytes[17] & 0x07 : 0;
    if (codec === 0 || got.length > 0) {
      records.push(...got);
      continue;
    }
    const wrapper = readLegacyEntry(e.bytes, 0);
    const inner = Buffer.from(
      decompress(codec, wrapper.value ?? new Uint8Array(0), { magic: e.magic, maxBytes: MAX_DECOMPRESSED }),
    );
    const complete: {
      offset: bigint;
      key: Buffer | null;
      value: Buffer | null;
      ts: bigint;
      magic: number;
    }[] = [];
    let p = 0;
    let truncated = false;
    while (p + 12 <= inner.length) {
      const size = inner.readInt32BE(p + 8);
      if (p + 12 + size > inner.length) {
        truncated = true;
        break;
      }
      const m = readLegacyEntry(inner.subarray(p, p + 12 + size), 0);
      complete.push({
        offset: m.offset,
        key: m.key ? Buffer.from(m.key) : null,
        value: m.value ? Buffer.from(m.value) : null,
        ts: m.timestamp,
        magic: m.magic,
      });
      p += 12 + size;
    }
    if (!truncated) {
      records.push(...got);
      continue;
    }
    truncatedInner++;
    const logAppendTime = e.magic === 1 && (e.bytes[17] & 0x08) !== 0;
    const last = complete.at(-1)?.offset ?? 0n;
    for (const m of complete) {
      records.push({
        offset: String(e.magic === 1 ? wrapper.offset - last + m.offset : m.offset),
        timestamp: String(m.magic === 0 ? -1n : logAppendTime ? wrapper.timestamp : m.ts),
        timestampType: m.magic === 1 && logAppendTime ? 'LogAppendTime' : 'CreateTime',
        key: m.key === null ? null : m.key.toString('hex'),
        value: m.value === null ? null : m.value.toString('hex'),
        headers: '{}',
        producerId: '-1',
        producerEpoch: -1,
        sequence: -1,
        isTransactional: false,
        isControl: false,
      });
    }
  }
  return { records, truncatedInner };
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

interface Failure {
  op: string;
  seed: number;
  error: string;
}

const fuzz = fuzzHarness({
  suite: 'segment/convert',
  ciInputs: CI_INPUTS,
  perInputMs: PER_INPUT_MS,
  typedError: SegliftError,
});
const stats = {
  inputs: 0,
  converted: 0,
  convertedWithSourceOffsetAnomalies: 0,
  wrappersWithTruncatedInnerStream: 0,
  arrayBuffersGrowthMB: 0,
  arrayBuffersJumpMB: 0,
  failedTyped: 0,
  skipped: 0,
  inPlace: 0,
  failures: 0,
};
afterAll(() => fuzz.writeStats(stats));

// A fixed number of inputs, not a time budget: ~50 s alone on 2 cores, past 60 s beside other
// suites' processes, so the limit only catches a hang.
const FUZZ_TIMEOUT_MS = 180_000;

describe('fuzz: segment files through reader, verifySegment and convertSegment', () => {
  it(
    'every mutated generated segment ends in a typed result; a successful conversion verifies and keeps every record',
    async () => {
      await fuzzSegments(generatedSeeds(), 0x5e6, CI_INPUTS);
    },
    FUZZ_TIMEOUT_MS,
  );
  // A quarter of the CI inputs: the real segments are a second family of seeds.
  needs(realFixtures).it(
    'every mutated real broker segment ends in a typed result; a successful conversion verifies and keeps every record',
    async () => {
      await fuzzSegments(await realSeeds(), 0x7e41, CI_INPUTS / 4);
    },
    FUZZ_TIMEOUT_MS,
  );
});

async function fuzzSegments(seeds: Seed[], salt: number, ciInputs: number): Promise<void> {
  const rand = prng(fuzz.seed ^ salt);
  const root = await tmpDir('seglift-fuzz-');
  const failures: Failure[] = [];
  const more = fuzz.budget(ciInputs);
  const convertedBefore = stats.converted;
  const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
  const alloc = startAllocationTracking();
  // Largest arrayBuffers rise during one input (sampled every 2 ms), for `pnpm fuzz`'s stats
  // line only: sampling and GC timing make it no test signal (the allocation tracker is the
  // deterministic one). Not the total: Node 20's zlib *Sync functions keep ~16 KB per call
  // that throws (corrupt gzip), even after GC.
  const baseArrayBuffers = process.memoryUsage().arrayBuffers;
  let inputBase = baseArrayBuffers;
  let inputPeak = baseArrayBuffers;
  let maxJump = 0;
  const sampler = setInterval(() => {
    inputPeak = Math.max(inputPeak, process.memoryUsage().arrayBuffers);
  }, 2);
  try {
    for (let i = 0; more(i); i++) {
      const seed = seeds[Math.floor(rand() * seeds.length)];
      let input = mutate(rand, seed);
      if (rand() < 0.7) input = reseal(input);
      const name = `${seed.base.toString().padStart(20, '0')}.log`;
      const pdir = path.join(root, `in-${i}`, 'topic-0');
      await mkdir(pdir, { recursive: true });
      const log = path.join(pdir, name);
      await writeFile(log, input);
      const inputSha = sha(input);
      stats.inputs++;
      const fail = (op: string, error: string) => {
        failures.push({ op, seed: i, error: `${error} (input kept as ${kept})` });
      };
      // Failing inputs are kept for a rerun: seglift-fuzz-failures/<seed>-<i>.log in the tmp dir.
      const kept = path.join(os.tmpdir(), 'seglift-fuzz-failures', `${fuzz.seed}-${i}-${name}`);
      const keep = async () => {
        if (failures.length > failuresBefore) {
          await mkdir(path.dirname(kept), { recursive: true });
          await writeFile(kept, input);
        }
      };
      const failuresBefore = failures.length;
      const t0 = performance.now();
      inputBase = process.memoryUsage().arrayBuffers;
      inputPeak = inputBase;
      const acceptTruncatedTail = rand() < 0.3;
      const limits = { maxEntryBytes: MAX_ENTRY, acceptTruncatedTail };

      try {
        for await (const _ of readSegmentEntries(log, limits)) {
          // entries only
        }
      } catch (err) {
        const p = fuzz.unexpected(err);
        if (p) fail('readSegmentEntries', p);
      }
      // Offsets that go backwards or repeat in the source are kept as they are (convert never
      // reorders or drops records); the output may only repeat the source's own anomalies.
      let sourceOffsetProblems = false;
      try {
        const v = await verifySegment(log, { ...limits, maxDecompressedBytes: MAX_DECOMPRESSED });
        sourceOffsetProblems = v.problems.some((x) => x.kind === 'offsets');
        if (!v.ok && v.problems.length === 0) fail('verifySegment', 'not ok without a problem');
        if (v.error && typeof v.error.code !== 'string') fail('verifySegment', 'error without a code');
      } catch (err) {
        fail('verifySegment', `threw: ${String((err as Error)?.stack ?? err)}`);
      }

      const inPlace = rand() < 0.15;
      const outDir = path.join(root, `out-${i}`);
      const codec = codecs[Math.floor(rand() * codecs.length)];
      let report: Awaited<ReturnType<typeof convertSegment>> | undefined;
      try {
        report = await convertSegment(
          log,
          {
            codec,
            maxDecompressedBatchBytes: MAX_DECOMPRESSED,
            maxEntryBytes: MAX_ENTRY,
            acceptTruncatedTail,
          },
          inPlace ? { kind: 'inPlace' } : { kind: 'outDir', dir: outDir },
        );
      } catch (err) {
        fail('convertSegment', `threw: ${String((err as Error)?.stack ?? err)}`);
      }
      if (inPlace) stats.inPlace++;
      if (report?.result === 'failed') {
        stats.failedTyped++;
        if (typeof report.error?.code !== 'string')
          fail('convertSegment', `failed without a code: ${report.reason}`);
        if (sha(await readFile(log)) !== inputSha)
          fail('convertSegment', 'failed conversion changed the source');
        const left = (await readdir(pdir)).filter((n) => n !== name);
        if (left.length > 0) fail('convertSegment', `leftovers after failure: ${left.join(',')}`);
        if (!inPlace && existsSync(outDir) && (await readdir(outDir)).length > 0)
          fail('convertSegment', `partial output kept: ${(await readdir(outDir)).join(',')}`);
      } else if (report?.result === 'skipped') {
        stats.skipped++;
        if (sha(await readFile(log)) !== inputSha) fail('convertSegment', 'skip changed the source');
      } else if (report?.result === 'converted' || report?.result === 'copied') {
        stats.converted++;
        if (sourceOffsetProblems) stats.convertedWithSourceOffsetAnomalies++;
        const out = inPlace ? log : path.join(outDir, name);
        if (!inPlace && sha(await readFile(log)) !== inputSha)
          fail('convertSegment', 'outDir run changed the source');
        const v = await verifySegment(out);
        const bad = v.problems.filter((x) => !(x.kind === 'offsets' && sourceOffsetProblems));
        if (bad.length > 0) fail('verify output', JSON.stringify(bad.slice(0, 2)));
        const whole = input.subarray(0, input.length - report.truncatedTailBytes);
        try {
          const { records: expected, truncatedInner } = await expectedRecords(whole);
          if (truncatedInner > 0) stats.wrappersWithTruncatedInnerStream++;
          const actual = await independentRecords(await readFile(out));
          if (JSON.stringify(expected) !== JSON.stringify(actual))
            fail(
              'records',
              `converted records differ from an independent decode (${expected.length} vs ${actual.length})`,
            );
        } catch (err) {
          fail('independent decode', `kafkajs could not decode what convert accepted: ${String(err)}`);
        }
        if (inPlace) {
          const left = (await readdir(pdir)).filter((n) => !/^\d{20}\.(log|index|timeindex)$/.test(n));
          if (left.length > 0) fail('convertSegment', `leftovers after in-place: ${left.join(',')}`);
        }
      }
      inputPeak = Math.max(inputPeak, process.memoryUsage().arrayBuffers);
      maxJump = Math.max(maxJump, inputPeak - inputBase);
      const ms = performance.now() - t0;
      if (fuzz.seconds > 0 && ms > PER_INPUT_MS) fail('time', `input took ${Math.round(ms)} ms`);
      await keep();
      await rm(path.join(root, `in-${i}`), { recursive: true, force: true });
      await rm(outDir, { recursive: true, force: true });
    }
  } finally {
    clearInterval(sampler);
    alloc.restore();
    await rm(root, { recursive: true, force: true });
  }
  stats.failures += failures.length;
  stats.arrayBuffersJumpMB = Math.max(stats.arrayBuffersJumpMB, Math.round(maxJump / 1e6));
  stats.arrayBuffersGrowthMB = Math.round((process.memoryUsage().arrayBuffers - baseArrayBuffers) / 1e6);
  if (process.env.FUZZ_DEBUG)
    for (const f of failures) console.log('FAIL', f.op, f.seed, f.error.slice(0, 300));
  expect(failures.slice(0, 3)).toEqual([]);
  expect(alloc.largest()).toBeLessThanOrEqual(ALLOC_BOUND);
  // The loop must reach the end of the pipeline, not only its error paths.
  expect(stats.converted - convertedBefore).toBeGreaterThan(0);
}
