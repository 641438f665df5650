/**
 * The command-line flag parser of every seglift program (the flags are the highest-precedence
 * source of settings): node:util's parseArgs, with what an operator expects of it on top.
 * - A mistyped flag gets the nearest known one: `unknown option '--levle'; did you mean --level?`
 *   instead of node's advice about `--`.
 * - A negative number is a value, not an option: `--level -5` (zstd's fast levels).
 * - A string option followed by another option (`--out --json`) is a missing value, not a
 *   directory called `--json`.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';

export type FlagOptions = NonNullable<ParseArgsConfig['options']>;

export interface ParsedFlags {
  values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  positionals: string[];
}

/** A command-line mistake; the message is for the operator (the caller adds `--help` advice). */
export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

/** `-5`, `-131072`: a negative number (sizes with k/m/g too), never an option name. */
const NEGATIVE_NUMBER = /^-\d+([kmg]i?b?)?$/i;

export function parseFlags(
  argv: readonly string[],
  options: FlagOptions,
  { allowPositionals = true }: { allowPositionals?: boolean } = {},
): ParsedFlags {
  // Non-strict with tokens: every option as typed, checked here with our own messages.
  const { tokens } = parseArgs({
    args: [...argv],
    options,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const normalized: string[] = [];
  const positionals: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'option-terminator') continue;
    if (t.kind === 'positional') {
      if (!allowPositionals) throw new FlagError(`unexpected argument '${t.value}'`);
      positionals.push(t.value);
      continue;
    }
    const spec = options[t.name];
    if (spec === undefined) throw new FlagError(unknownOption(t.rawName, options));
    if (spec.type === 'boolean') {
      if (t.value !== undefined) throw new FlagError(`option ${t.rawName} takes no value (got '${t.value}')`);
      normalized.push(`--${t.name}`);
      continue;
    }
    if (t.value === undefined) throw new FlagError(`option ${t.rawName} needs a value`);
    if (!t.inlineValue && t.value.startsWith('-') && !NEGATIVE_NUMBER.test(t.value)) {
      throw new FlagError(
        `option ${t.rawName} needs a value (got the option '${t.value}'; write ${t.rawName}=${t.value} if that is the value)`,
      );
    }
    normalized.push(`--${t.name}=${t.value}`);
  }
  // Strict now that every token is known to be well formed: typed values, defaults, arrays.
  const { values } = parseArgs({ args: normalized, options, strict: true, allowPositionals: false });
  return { values: values as ParsedFlags['values'], positionals };
}

function unknownOption(raw: string, options: FlagOptions): string {
  const known = Object.keys(options).map((n) => `--${n}`);
  const guess = raw.startsWith('--') ? nearest(raw, known) : undefined;
  return `unknown option '${raw}'${guess ? `; did you mean ${guess}?` : ''}`;
}

/**
 * The candidate nearest to `word` (Levenshtein distance, case-insensitive) when it is close
 * enough to be a typo (at most 2 edits, and fewer than a third of the word), or the one candidate
 * `word` is a prefix of; undefined otherwise.
 */
export function nearest(word: string, candidates: readonly string[]): string | undefined {
  const w = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = distance(w, c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  if (best !== undefined && bestDistance <= Math.min(2, Math.floor(w.length / 3))) return best;
  const prefixed = candidates.filter((c) => c.toLowerCase().startsWith(w));
  return prefixed.length === 1 ? prefixed[0] : undefined;
}

function distance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}
