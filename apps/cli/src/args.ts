import { FlagError, type FlagOptions, type ParsedFlags, parseFlags } from '@seglift/config';
import { UsageError } from './exit-codes.js';

export type Parsed = ParsedFlags;

/**
 * The program's flag parser (@seglift/config's parseFlags: suggestions for mistyped flags,
 * negative numbers as values), its errors turned into usage errors for `command`.
 */
export function parse(command: string, argv: string[], options: FlagOptions): Parsed {
  try {
    return parseFlags(argv, { ...options, help: { type: 'boolean', short: 'h' } });
  } catch (err) {
    if (err instanceof FlagError) throw new UsageError(err.message, command);
    throw err;
  }
}

export function str(p: Parsed, name: string): string | undefined {
  const v = p.values[name];
  return typeof v === 'string' ? v : undefined;
}

export function flag(p: Parsed, name: string): boolean {
  return p.values[name] === true;
}

/** A non-negative integer option (sizes accept k/m/g suffixes: 64k, 1m). */
export function intOpt(
  command: string,
  p: Parsed,
  name: string,
  { min = 0, max = Number.MAX_SAFE_INTEGER, sizes = false } = {},
): number | undefined {
  const raw = str(p, name);
  if (raw === undefined) return undefined;
  const m = /^(-?\d+)([kmg]i?b?)?$/i.exec(raw.trim());
  if (!m || (m[2] && !sizes)) throw new UsageError(`--${name} expects an integer, got '${raw}'`, command);
  const unit = m[2] ? { k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[m[2][0].toLowerCase() as 'k' | 'm' | 'g'] : 1;
  const n = Number(m[1]) * unit;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(`--${name} must be between ${min} and ${max}, got '${raw}'`, command);
  }
  return n;
}

export function choice<T extends string>(
  command: string,
  p: Parsed,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const raw = str(p, name);
  if (raw === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new UsageError(`--${name} must be one of ${allowed.join('|')}, got '${raw}'`, command);
  }
  return raw as T;
}

export function requirePositionals(command: string, p: Parsed, what: string): string[] {
  if (p.positionals.length === 0) throw new UsageError(`missing ${what}`, command);
  return p.positionals;
}
