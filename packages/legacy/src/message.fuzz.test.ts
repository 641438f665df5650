/**
 * Seeded mutation fuzzing of the legacy readers (issue 6): v0/v1 messages and gzip/snappy/lz4
 * wrappers (absolute and relative inner offsets, LogAppendTime, inner streams mutated before
 * compression), mutated, truncated and re-sealed with a valid CRC-32, fed to readLegacyEntry,
 * iterateLegacyRecords and logicalRecordsOfLegacyEntry and to the Upconverter. Each ends in a
 * result or a SegliftError with a code, within PER_INPUT_MS, with bounded allocations.
 * `pnpm fuzz` runs it longer (SEGLIFT_FUZZ_SECONDS).
 */
import { appendFileSync } from 'node:fs';
import { compress, crc32, SegliftError } from '@seglift/format';
import { afterAll, describe, expect, it } from 'vitest';
import { iterateLegacyRecords, logicalRecordsOfLegacyEntry } from './deep.js';
import { encodeLegacyEntry, readLegacyEntry } from './message.js';
import { Upconverter } from './upconvert.js';
import { encodeCompressedWrapper } from './writer.js';

const SECONDS = Number(process.env.SEGLIFT_FUZZ_SECONDS ?? 0);
const SEED = Number(process.env.SEGLIFT_FUZZ_SEED ?? 20260601);
const CI_INPUTS = 10_000;
const PER_INPUT_MS = 2_000;
const LIMIT = 256 * 1024;
const ALLOC_BOUND = 4 * 1024 * 1024 + 64 * 1024;

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const INTERESTING32 = [
  0, 1, -1, 7, 12, 14, 49, 61, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000, 0x3fffffff,
  0x7fffffff, -0x80000000, 0x40000, 0x100000,
];

/** Byte-level mutations, biased towards the length/count fields at `hot` positions. */
function mutate(rand: () => number, src: Uint8Array, hot: number[]): Buffer {
  const int = (n: number) => Math.floor(rand() * n);
  let b = Buffer.from(src);
  const rounds = 1 + int(3);
  for (let k = 0; k < rounds; k++) {
    if (b.length === 0) return Buffer.from([int(256)]);
    switch (int(10)) {
      case 0:
        b[int(b.length)] ^= 1 << int(8);
        break;
      case 1:
        b[int(b.length)] = [0, 0xff, 0x7f, 0x80, 1][int(5)];
        break;
      case 2:
      case 3: {
        const p = hot.length > 0 && rand() < 0.7 ? hot[int(hot.length)] : int(b.length);
        if (p + 4 > b.length) break;
        const v = rand() < 0.6 ? INTERESTING32[int(INTERESTING32.length)] : b.readInt32BE(p) + int(17) - 8;
        b.writeUInt32BE(v >>> 0, p);
        break;
      }
      case 4:
        b = b.subarray(0, int(b.length));
        break;
      case 5: {
        const p = int(b.length + 1);
        const ins = Buffer.alloc(1 + int(16));
        for (let i = 0; i < ins.length; i++) ins[i] = int(256);
        b = Buffer.concat([b.subarray(0, p), ins, b.subarray(p)]);
        break;
      }
      case 6: {
        const p = int(b.length);
        b = Buffer.concat([b.subarray(0, p), b.subarray(p + 1 + int(32))]);
        break;
      }
      case 7: {
        const p = int(b.length);
        const q = Math.min(b.length, p + 1 + int(64));
        b = Buffer.concat([b.subarray(0, q), b.subarray(p, q), b.subarray(q)]);
        break;
      }
      case 8: {
        // A run of continuation bytes: varints that never end or overflow.
        const p = int(b.length);
        b.fill(rand() < 0.5 ? 0xff : 0x80, p, Math.min(b.length, p + 1 + int(10)));
        break;
      }
      case 9:
        // Codec bits of the attributes (ids 5-7 included).
        if (b.length > 22) b[22] = (b[22] & ~7) | int(8);
        break;
    }
  }
  return b;
}

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

interface Failure {
  op: string;
  input: string;
  error: string;
}

/** Runs `fn`; anything but a return or a SegliftError with a code, or a slow input, is a failure. */
function check(op: string, input: Uint8Array, fn: () => unknown, failures: Failure[]): boolean {
  const t = performance.now();
  let ok = false;
  try {
    fn();
    ok = true;
  } catch (err) {
    if (!(err instanceof SegliftError) || typeof err.code !== 'string' || err.code.length === 0) {
      failures.push({
        op,
        input: Buffer.from(input).toString('hex').slice(0, 4000),
        error: String((err as Error)?.stack ?? err),
      });
    }
  }
  const ms = performance.now() - t;
  if (ms > PER_INPUT_MS)
    failures.push({ op, input: Buffer.from(input).toString('hex').slice(0, 4000), error: `took ${ms} ms` });
  return ok;
}

/** Records the largest Buffer allocation requested while `fn` runs. */
function trackAllocations<T>(fn: () => T): { result: T; largest: number } {
  const B = Buffer as unknown as Record<string, (...a: unknown[]) => Buffer>;
  const names = ['alloc', 'allocUnsafe', 'allocUnsafeSlow'];
  const saved = names.map((n) => B[n]);
  let largest = 0;
  names.forEach((n, i) => {
    B[n] = (...a: unknown[]) => {
      if (typeof a[0] === 'number' && a[0] > largest) largest = a[0];
      return saved[i].apply(Buffer, a);
    };
  });
  try {
    return { result: fn(), largest };
  } finally {
    names.forEach((n, i) => {
      B[n] = saved[i];
    });
  }
}

const stats = { inputs: 0, decodedOk: 0, failures: 0 };
afterAll(() => {
  if (process.env.SEGLIFT_FUZZ_STATS)
    appendFileSync(
      process.env.SEGLIFT_FUZZ_STATS,
      `${JSON.stringify({ suite: 'legacy/message', ...stats })}\n`,
    );
});

describe('fuzz: legacy message sets and wrappers', () => {
  it('mutated, truncated and re-sealed entries end in records or a SegliftError', () => {
    const rand = prng(SEED ^ 0x1e9ac7);
    const base = seeds(rand);
    const failures: Failure[] = [];
    const opts = { maxDecompressedBytes: LIMIT };
    const deadline = SECONDS > 0 ? Date.now() + SECONDS * 1000 : Number.POSITIVE_INFINITY;
    const HOT = [8, 12, 16, 17, 18, 22, 26, 30, 34];
    const { largest } = trackAllocations(() => {
      for (let i = 0; SECONDS > 0 ? Date.now() < deadline : i < CI_INPUTS; i++) {
        let input: Buffer;
        const roll = rand();
        if (roll < 0.3) input = mutatedInnerWrapper(rand);
        else {
          input = mutate(rand, base[Math.floor(rand() * base.length)], HOT);
          if (roll < 0.75) input = reseal(input, rand() < 0.5);
        }
        stats.inputs++;
        check('readLegacyEntry', input, () => readLegacyEntry(input, 0), failures);
        const ok = check(
          'iterateLegacyRecords',
          input,
          () => [...iterateLegacyRecords(input, opts)],
          failures,
        );
        if (ok) stats.decodedOk++;
        check('logicalRecordsOfLegacyEntry', input, () => logicalRecordsOfLegacyEntry(input, opts), failures);
        check(
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
