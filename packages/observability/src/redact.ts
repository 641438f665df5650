/**
 * Makes values safe to log: secrets are replaced, errors become plain objects with their typed
 * context, bigints (Kafka offsets, producer ids) become decimal strings so JSON parsers keep
 * every digit, and byte arrays are summarised instead of dumped.
 */

export const REDACTED = '[REDACTED]';

/** Keys whose values are always secret, whatever they hold. */
const SECRET_KEY =
  /pass(?:word|wd|phrase)?$|secret|token|api[-_]?key|authorization|credential|private[-_]?key/i;

/** `scheme://userinfo@` in any string; the greedy userinfo stops at the end of the authority. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#]*)@/gi;

/** `password=...`, `token=...` query parameters (`?` or `&` before them). */
const SECRET_QUERY = /([?&](?:password|pass|secret|token|access_token|api[-_]?key|auth)=)[^&#\s]*/gi;

const MAX_DEPTH = 8;

/**
 * Removes the credentials of every URL in `text`: `redis://:pw@host` -> `redis://:[REDACTED]@host`,
 * `redis://user:pw@host` -> `redis://user:[REDACTED]@host`, `https://tok@host` ->
 * `https://[REDACTED]@host` (a lone userinfo is usually a token), and secret query parameters.
 */
export function redactString(text: string): string {
  if (!text.includes('://') && !text.includes('=')) return text;
  return text
    .replace(URL_USERINFO, (_match, scheme: string, userinfo: string) => {
      const colon = userinfo.indexOf(':');
      return colon === -1 ? `${scheme}${REDACTED}@` : `${scheme}${userinfo.slice(0, colon)}:${REDACTED}@`;
    })
    .replace(SECRET_QUERY, `$1${REDACTED}`);
}

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

interface ErrorLike {
  name?: unknown;
  message?: unknown;
  stack?: unknown;
  cause?: unknown;
  toJSON?: () => unknown;
}

/**
 * An error as a plain object: its own primitive fields (Node's `code`, `errno`, `syscall`,
 * `path`; CrcMismatchError's `expected`/`actual`), then `toJSON()` when it has one (SegliftError:
 * name, code, message, file, position, offset), then `type`, `message`, `stack` and `cause`.
 */
export function serializeError(err: unknown, depth = 0): unknown {
  if (!(err instanceof Error)) return sanitize(err, depth);
  const e = err as Error & ErrorLike;
  const out: Record<string, unknown> = { type: e.name };
  for (const key of Object.keys(e)) {
    const v = (e as unknown as Record<string, unknown>)[key];
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) out[key] = v;
  }
  if (typeof e.toJSON === 'function') {
    const json = e.toJSON();
    if (json !== null && typeof json === 'object') Object.assign(out, json);
  }
  if (out.message === undefined) out.message = e.message;
  out.stack = e.stack;
  if (e.cause !== undefined && depth < MAX_DEPTH) out.cause = serializeError(e.cause, depth + 1);
  if (err instanceof AggregateError && depth < MAX_DEPTH) {
    out.errors = err.errors.map((inner) => serializeError(inner, depth + 1));
  }
  return sanitize(out, depth);
}

/**
 * A copy of `value` that is safe to log (see the module comment). Cycles and nesting deeper
 * than 8 levels are cut with a marker rather than throwing inside a log call.
 */
export function sanitize(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  switch (typeof value) {
    case 'string':
      return redactString(value);
    case 'bigint':
      return value.toString();
    case 'function':
    case 'symbol':
      return undefined;
    case 'object':
      break;
    default:
      return value;
  }
  if (value === null) return null;
  if (value instanceof Error) return serializeError(value, depth);
  if (value instanceof Date) return value;
  if (ArrayBuffer.isView(value)) return `[${value.constructor.name} byteLength=${value.byteLength}]`;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Object]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v) => sanitize(v, depth + 1, seen));
    if (value instanceof Map) return sanitize(Object.fromEntries(value), depth, seen);
    if (value instanceof Set) return sanitize([...value], depth, seen);
    const source = value as Record<string, unknown>;
    if (typeof (source as ErrorLike).toJSON === 'function') {
      return sanitize((source as ErrorLike).toJSON!(), depth + 1, seen);
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(source)) {
      const v = source[key];
      if (v !== undefined && v !== null && isSecretKey(key)) out[key] = REDACTED;
      else out[key] = sanitize(v, depth + 1, seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}
