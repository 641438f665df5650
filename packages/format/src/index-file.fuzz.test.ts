/**
 * Fuzzing of the index decoders (issue 6): any bytes given to decodeOffsetIndex/decodeTimeIndex,
 * any length, decode to entries or fail with a SegliftError; the entry count never exceeds what
 * the bytes hold.
 */
import { type FuzzFailure, fuzzHarness, mutate, prng } from '@seglift/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { SegliftError } from './errors.js';
import { decodeOffsetIndex, decodeTimeIndex } from './index-file.js';

const CI_INPUTS = 20_000;
const PER_INPUT_MS = 2_000;

const fuzz = fuzzHarness({
  suite: 'format/index-file',
  ciInputs: CI_INPUTS,
  perInputMs: PER_INPUT_MS,
  typedError: SegliftError,
});
const stats = { inputs: 0, decodedOk: 0, failures: 0 };
afterAll(() => fuzz.writeStats(stats));

describe('fuzz: index decoders', () => {
  it('random, mutated and odd-length .index/.timeindex bytes end in entries or a SegliftError', () => {
    const rand = prng(fuzz.seed ^ 0x1de7);
    const failures: FuzzFailure[] = [];
    const more = fuzz.budget();
    const valid = Buffer.alloc(8 * 24 + 12 * 16);
    for (let k = 0; k < 24; k++) {
      valid.writeInt32BE(k * 10, k * 8);
      valid.writeInt32BE(k * 4096, k * 8 + 4);
    }
    for (let i = 0; more(i); i++) {
      const input = mutate(rand, valid.subarray(0, Math.floor(rand() * valid.length)), []);
      const base = [0n, 1n, 2n ** 62n, -1n, 9223372036854775807n][Math.floor(rand() * 5)];
      stats.inputs++;
      for (const [op, fn, size] of [
        ['decodeOffsetIndex', decodeOffsetIndex, 8],
        ['decodeTimeIndex', decodeTimeIndex, 12],
      ] as const) {
        let n = -1;
        const ok = fuzz.check(
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
