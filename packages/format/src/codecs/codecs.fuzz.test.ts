/**
 * Seeded mutation fuzzing of `decompress` for every codec id (0-7) and magic (issue 6): valid
 * frames written by `compress` for each magic, mutated, truncated, or random, must decompress or
 * fail with a SegliftError (DECOMPRESSION_FAILED, DECOMPRESSION_LIMIT, UNKNOWN_CODEC,
 * UNSUPPORTED_FORMAT), never allocating past the limit plus one LZ4 block. `pnpm fuzz` runs it
 * longer (SEGLIFT_FUZZ_SECONDS) and there also flags inputs slower than PER_INPUT_MS.
 */
import { type FuzzFailure, fuzzHarness, mutate, prng, trackAllocations } from '@seglift/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { SegliftError } from '../errors.js';
import { compress, decompress } from './index.js';

const CI_INPUTS = 6_000;
const PER_INPUT_MS = 2_000;
const LIMIT = 256 * 1024;
/** Largest allocation: the limit, or one LZ4 block (4 MiB max block size) plus its prefix. */
const ALLOC_BOUND = 4 * 1024 * 1024 + 64 * 1024;

const fuzz = fuzzHarness({
  suite: 'format/codecs',
  ciInputs: CI_INPUTS,
  perInputMs: PER_INPUT_MS,
  typedError: SegliftError,
});
const stats = { inputs: 0, decompressedOk: 0, limitErrors: 0, failures: 0 };
afterAll(() => fuzz.writeStats(stats));

function payload(rand: () => number, size: number): Buffer {
  const words = ['kafka', 'offset', 'batch', 'x', '{"a":1}', 'zzzzzzzz'];
  let s = '';
  while (s.length < size) s += words[Math.floor(rand() * words.length)];
  return Buffer.from(s.slice(0, size));
}

describe('fuzz: decompress, every codec and magic', () => {
  it('mutated, truncated and random frames end in bytes or a SegliftError, within the limit', () => {
    const rand = prng(fuzz.seed ^ 0x51ed27);
    const seeds: { codec: number; magic: number; bytes: Buffer }[] = [];
    for (const codec of [1, 2, 3, 4]) {
      for (const magic of codec === 4 ? [2] : [0, 1, 2]) {
        for (const size of [0, 1, 100, 5000, 70_000, 300_000]) {
          seeds.push({ codec, magic, bytes: Buffer.from(compress(codec, payload(rand, size), { magic })) });
        }
      }
    }
    const failures: FuzzFailure[] = [];
    const more = fuzz.budget();
    const { largest } = trackAllocations(() => {
      for (let i = 0; more(i); i++) {
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
        const ok = fuzz.check(
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
    expect(stats.inputs).toBeGreaterThanOrEqual(fuzz.minInputs);
  });
});
