import { isSecretKey, REDACTED, redactString } from '@seglift/observability';

export { REDACTED };

/** A redis URL with its password replaced (the user name is kept: it helps debugging and is not secret). */
export function redactUrl(url: string): string {
  return redactString(url);
}

/** Redacts a value found at `path` (used for config error messages too): observability's rule. */
export function redactValue(path: string, value: unknown): unknown {
  const key = path.slice(path.lastIndexOf('.') + 1);
  if (typeof value !== 'string') return value;
  return isSecretKey(key) ? REDACTED : redactString(value);
}

/** A deep copy with the redis password (and any password/secret/token field) replaced by [REDACTED]. */
export function redactConfig<T>(config: T): T {
  return walk(config, '') as T;
}

function walk(v: unknown, path: string): unknown {
  if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}.${i}`));
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = walk(x, path === '' ? k : `${path}.${k}`);
    return out;
  }
  return redactValue(path, v);
}
