/**
 * Fuzzing of the index decoders (issue 6): any bytes given to decodeOffsetIndex/decodeTimeIndex,
 * any length, decode to entries or fail with a SegliftError; the entry count never exceeds what
 * the bytes hold.
 */
import { appendFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { SegliftError } from './errors.js';
import { decodeOffsetIndex, decodeTimeIndex } from './index-file.js';

const SECONDS = Number(process.env.SEGLIFT_FUZZ_SECONDS ?? 0);
const SEED = Number(process.env.SEGLIFT_FUZZ_SEED ?? 20260601);
const CI_INPUTS = 20_000;
const PER_INPUT_MS = 2_000;

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

const stats = { inputs: 0, decodedOk: 0, failures: 0 };
afterAll(() => {
  if (process.env.SEGLIFT_FUZZ_STATS)
    appendFileSync(
      process.env.SEGLIFT_FUZZ_STATS,
      `${JSON.stringify({ suite: 'format/index-file', ...stats })}\n`,
    );
});

describe('fuzz: index decoders', () => {
  it('random, mutated and odd-length .index/.timeindex bytes end in entries or a SegliftError', () => {
    const rand = prng(SEED ^ 0x1de7);
    const failures: Failure[] = [];
    const deadline = SECONDS > 0 ? Date.now() + SECONDS * 1000 : Number.POSITIVE_INFINITY;
    const valid = Buffer.alloc(8 * 24 + 12 * 16);
    for (let k = 0; k < 24; k++) {
      valid.writeInt32BE(k * 10, k * 8);
      valid.writeInt32BE(k * 4096, k * 8 + 4);
    }
    for (let i = 0; SECONDS > 0 ? Date.now() < deadline : i < CI_INPUTS; i++) {
      const input = mutate(rand, valid.subarray(0, Math.floor(rand() * valid.length)), []);
      const base = [0n, 1n, 2n ** 62n, -1n, 9223372036854775807n][Math.floor(rand() * 5)];
      stats.inputs++;
      for (const [op, fn, size] of [
        ['decodeOffsetIndex', decodeOffsetIndex, 8],
        ['decodeTimeIndex', decodeTimeIndex, 12],
      ] as const) {
        let n = -1;
        const ok = check(
          op,
          input,
          () => {
            n = fn(input, base).length;
          },
          failures,
        );
        if (ok) {
          stats.decodedOk++;
          if (n !== Math.floor(input.length / size))
            failures.push({ op, input: input.toString('hex'), error: `${n} entries` });
        }
      }
    }
    stats.failures = failures.length;
    expect(failures.slice(0, 3)).toEqual([]);
  });
});
