/**
 * Seeded mutation fuzzing of `decompress` for every codec id (0-7) and magic (issue 6): valid
 * frames written by `compress` for each magic, mutated, truncated, or random, must decompress or
 * fail with a SegliftError (DECOMPRESSION_FAILED, DECOMPRESSION_LIMIT, UNKNOWN_CODEC,
 * UNSUPPORTED_FORMAT), within PER_INPUT_MS, never allocating past the limit plus one LZ4 block.
 * `pnpm fuzz` runs it longer (SEGLIFT_FUZZ_SECONDS).
 */
import { appendFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { SegliftError } from '../errors.js';
import { compress, decompress } from './index.js';

const SECONDS = Number(process.env.SEGLIFT_FUZZ_SECONDS ?? 0);
const SEED = Number(process.env.SEGLIFT_FUZZ_SEED ?? 20260601);
const CI_INPUTS = 6_000;
const PER_INPUT_MS = 2_000;
const LIMIT = 256 * 1024;
/** Largest allocation: the limit, or one LZ4 block (4 MiB max block size) plus its prefix. */
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

const stats = { inputs: 0, decompressedOk: 0, limitErrors: 0, failures: 0 };
afterAll(() => {
  if (process.env.SEGLIFT_FUZZ_STATS)
    appendFileSync(
      process.env.SEGLIFT_FUZZ_STATS,
      `${JSON.stringify({ suite: 'format/codecs', ...stats })}\n`,
    );
});

function payload(rand: () => number, size: number): Buffer {
  const words = ['kafka', 'offset', 'batch', 'x', '{"a":1}', 'zzzzzzzz'];
  let s = '';
  while (s.length < size) s += words[Math.floor(rand() * words.length)];
  return Buffer.from(s.slice(0, size));
}

describe('fuzz: decompress, every codec and magic', () => {
  it('mutated, truncated and random frames end in bytes or a SegliftError, within the limit', () => {
    const rand = prng(SEED ^ 0x51ed27);
    const seeds: { codec: number; magic: number; bytes: Buffer }[] = [];
    for (const codec of [1, 2, 3, 4]) {
      for (const magic of codec === 4 ? [2] : [0, 1, 2]) {
        for (const size of [0, 1, 100, 5000, 70_000, 300_000]) {
          seeds.push({ codec, magic, bytes: Buffer.from(compress(codec, payload(rand, size), { magic })) });
        }
      }
    }
    const failures: Failure[] = [];
    const deadline = SECONDS > 0 ? Date.now() + SECONDS * 1000 : Number.POSITIVE_INFINITY;
    const { largest } = trackAllocations(() => {
      for (let i = 0; SECONDS > 0 ? Date.now() < deadline : i < CI_INPUTS; i++) {
        const seed = seeds[Math.floor(rand() * seeds.length)];
        const hot = [0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24];
        let input: Buffer;
        if (rand() < 0.05) {
          input = Buffer.alloc(Math.floor(rand() * 64));
          for (let k = 0; k < input.length; k++) input[k] = Math.floor(rand() * 256);
        } else input = mutate(rand, seed.bytes, hot);
        // Mostly the seed's own codec; sometimes any id, unknown ones (5-7) included.
        const codec = rand() < 0.85 ? seed.codec : Math.floor(rand() * 8);
        const magic = rand() < 0.85 ? seed.magic : Math.floor(rand() * 3);
        stats.inputs++;
        const ok = check(
          `decompress(${codec}, magic ${magic})`,
          input,
          () => {
            try {
              return decompress(codec, input, { magic, maxBytes: LIMIT });
            } catch (err) {
              if (err instanceof SegliftError && err.code === 'DECOMPRESSION_LIMIT') stats.limitErrors++;
              throw err;
            }
          },
          failures,
        );
        if (ok) stats.decompressedOk++;
      }
    });
    stats.failures = failures.length;
    expect(failures.slice(0, 3)).toEqual([]);
    expect(largest).toBeLessThanOrEqual(ALLOC_BOUND);
    expect(stats.inputs).toBeGreaterThanOrEqual(SECONDS > 0 ? 1 : CI_INPUTS);
  });
});
