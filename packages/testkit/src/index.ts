/**
 * The harness the seeded mutation fuzz suites (*.fuzz.test.ts) share: a seeded PRNG, a byte
 * mutator, the per-input check (typed error or result), the input budget (CI count or
 * `pnpm fuzz` seconds), allocation tracking and the stats line scripts/fuzz.mjs prints. Time is
 * no signal in the CI run (a loaded machine is not a slow input): only `pnpm fuzz` flags inputs
 * slower than the suite's per-input limit; both report the slowest input in the stats.
 * Test-only: it knows no seglift types (the typed error class is passed in) so packages/format
 * can use it too. The requirement gates of the whole suite are here too (requires.ts).
 */
import { appendFileSync } from 'node:fs';

/** Seconds per suite set by `pnpm fuzz`; 0 runs each suite's fixed CI input count. */
export const FUZZ_SECONDS = Number(process.env.SEGLIFT_FUZZ_SECONDS ?? 0);
/** Seed of every suite's PRNG (each suite mixes in its own constant). */
export const FUZZ_SEED = Number(process.env.SEGLIFT_FUZZ_SEED ?? 20260601);

/** mulberry32: small, fast and the same sequence on every platform for a given seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Values that sit on the edges of Kafka's size, count and offset checks. */
export const INTERESTING32: readonly number[] = [
  0, 1, -1, 7, 12, 14, 49, 61, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x10000, 0x3fffffff,
  0x7fffffff, -0x80000000, 0x40000, 0x100000,
];

/** Byte-level mutations, biased towards the length/count fields at `hot` positions. */
export function mutate(rand: () => number, src: Uint8Array, hot: readonly number[]): Buffer {
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

/**
 * True while the loop at input `i` should go on: `ciInputs` inputs, or until FUZZ_SECONDS have
 * passed from this call when `pnpm fuzz` set them.
 */
export function fuzzBudget(ciInputs: number): (i: number) => boolean {
  const deadline = FUZZ_SECONDS > 0 ? Date.now() + FUZZ_SECONDS * 1000 : Number.POSITIVE_INFINITY;
  return (i) => (FUZZ_SECONDS > 0 ? Date.now() < deadline : i < ciInputs);
}

/** The class of the errors a reader may throw (SegliftError); any constructor of an Error. */
export type TypedErrorClass = abstract new (...args: never[]) => Error;

/** Why `err` is a failure, or undefined when it is an instance of `typed` with a non-empty code. */
export function unexpectedError(err: unknown, typed: TypedErrorClass): string | undefined {
  if (err instanceof typed) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && code.length > 0) return undefined;
  }
  return String((err as Error)?.stack ?? err);
}

export interface FuzzFailure {
  op: string;
  /** The input in hex (the first 2000 bytes). */
  input: string;
  error: string;
}

/** Runs one reader on one input; returns whether it returned (not threw). */
export type FuzzCheck = (
  op: string,
  input: Uint8Array,
  fn: () => unknown,
  failures: FuzzFailure[],
) => boolean;

/** The slowest single check so far (for the stats line). */
export const slowestInput = { ms: 0, op: '' };

/**
 * A check where anything but a return or a `typed` error with a code is recorded in `failures`;
 * so is an input slower than `perInputMs` when one is given (`pnpm fuzz` only, see above).
 */
export function fuzzCheck(typed: TypedErrorClass, perInputMs?: number): FuzzCheck {
  return (op, input, fn, failures) => {
    const t = performance.now();
    let ok = false;
    try {
      fn();
      ok = true;
    } catch (err) {
      const error = unexpectedError(err, typed);
      if (error !== undefined)
        failures.push({ op, input: Buffer.from(input).toString('hex').slice(0, 4000), error });
    }
    const ms = performance.now() - t;
    if (ms > slowestInput.ms) Object.assign(slowestInput, { ms: Math.round(ms), op });
    if (perInputMs !== undefined && ms > perInputMs)
      failures.push({ op, input: Buffer.from(input).toString('hex').slice(0, 4000), error: `took ${ms} ms` });
    return ok;
  };
}

/**
 * Records the largest Buffer allocation requested until `restore` (a length field that drives an
 * allocation shows up here long before memory runs out).
 */
export function startAllocationTracking(): { largest: () => number; restore: () => void } {
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
  return {
    largest: () => largest,
    restore: () =>
      names.forEach((n, i) => {
        B[n] = saved[i];
      }),
  };
}

/** Records the largest Buffer allocation requested while `fn` runs. */
export function trackAllocations<T>(fn: () => T): { result: T; largest: number } {
  const tracking = startAllocationTracking();
  try {
    const result = fn();
    return { result, largest: tracking.largest() };
  } finally {
    tracking.restore();
  }
}

/** Appends the suite's stats line for scripts/fuzz.mjs (when it set SEGLIFT_FUZZ_STATS). */
export function writeFuzzStats(suite: string, stats: object): void {
  if (process.env.SEGLIFT_FUZZ_STATS)
    appendFileSync(process.env.SEGLIFT_FUZZ_STATS, `${JSON.stringify({ suite, ...stats })}\n`);
}

export interface FuzzHarnessOptions {
  /** The suite's name in the stats line, e.g. 'format/codecs'. */
  suite: string;
  /** Inputs tried when `pnpm fuzz` set no FUZZ_SECONDS (the CI run). */
  ciInputs: number;
  /** Longest time one input may take before it counts as a failure (`pnpm fuzz` only). */
  perInputMs: number;
  /** The only error class a reader may throw (SegliftError), always with a code. */
  typedError: TypedErrorClass;
}

/** One suite's view of the harness: its seed, budget, check and stats line. */
export interface FuzzHarness {
  readonly seed: number;
  readonly seconds: number;
  /** Inputs the loop must have tried: ciInputs, or 1 in a timed `pnpm fuzz` run. */
  readonly minInputs: number;
  /**
   * Starts the budget (the deadline counts from this call): `for (let i = 0; more(i); i++)`;
   * `inputs` overrides ciInputs for one loop.
   */
  budget(inputs?: number): (i: number) => boolean;
  check: FuzzCheck;
  /** Why `err` is a failure, or undefined for a typed error with a code. */
  unexpected(err: unknown): string | undefined;
  /** For afterAll: the stats line scripts/fuzz.mjs prints. */
  writeStats(stats: object): void;
}

export function fuzzHarness(options: FuzzHarnessOptions): FuzzHarness {
  const { suite, ciInputs, perInputMs, typedError } = options;
  return {
    seed: FUZZ_SEED,
    seconds: FUZZ_SECONDS,
    minInputs: FUZZ_SECONDS > 0 ? 1 : ciInputs,
    budget: (inputs = ciInputs) => fuzzBudget(inputs),
    check: fuzzCheck(typedError, FUZZ_SECONDS > 0 ? perInputMs : undefined),
    unexpected: (err) => unexpectedError(err, typedError),
    writeStats: (stats) =>
      writeFuzzStats(suite, { ...stats, slowestInputMs: slowestInput.ms, slowestOp: slowestInput.op }),
  };
}

export * from './codecs.js';
export * from './faults.js';
export * from './process.js';
export * from './redis.js';
export * from './requirements.js';
export * from './requires.js';
