/**
 * How a segment job ends, as BullMQ keeps it in Redis: a `JobResult` (what the processor returns,
 * BullMQ's `returnvalue`) or a `JobFailure` (the message of the error the processor throws, BullMQ's
 * `failedReason`, a JSON string). The worker writes both through the encoders, the watcher reads
 * them through the decoders. The JSON is the one earlier versions wrote, so jobs already in Redis
 * decode the same; a `failedReason` that is not JSON (BullMQ's own, e.g. a job stalled too often)
 * decodes to its message.
 */
import * as z from 'zod/mini';

export const JobResultSchema = z.object({
  /** The segment's `.log` (a real path, within the worker's roots). */
  path: z.string(),
  /** The SegmentReport's result: converted, skipped, copied, ... */
  result: z.string(),
  /** Why skipped (e.g. 'already-target-codec', 'missing', 'source-changed'). */
  reason: z.optional(z.string()),
  bytesIn: z.number(),
  bytesOut: z.number(),
  durationMs: z.number(),
});
export type JobResult = z.output<typeof JobResultSchema>;

/** The value a processor returns for `r` (no field set to undefined: BullMQ stores it as JSON). */
export function encodeJobResult(r: JobResult): JobResult {
  return {
    path: r.path,
    result: r.result,
    ...(r.reason === undefined ? {} : { reason: r.reason }),
    bytesIn: r.bytesIn,
    bytesOut: r.bytesOut,
    durationMs: r.durationMs,
  };
}

/** A job's `returnvalue` as a JobResult, or undefined when it is none (not a worker's). */
export function decodeJobResult(value: unknown): JobResult | undefined {
  const r = JobResultSchema.safeParse(value);
  return r.success ? r.data : undefined;
}

/**
 * Why a job failed: the typed error's code, message, and where in which file (SegliftError's
 * `toJSON()`: file, byte position, offset as a decimal string). Errors that are not typed carry
 * their name and message only.
 */
export interface JobFailure {
  name?: string;
  code?: string;
  message: string;
  file?: string;
  position?: number;
  /** An int64 offset, decimal (it does not fit a double). */
  offset?: string;
  /** VERIFY_MISMATCH: the field that differs (VerifyMismatchError's `field`). */
  field?: string;
}

const text = (v: unknown) => (typeof v === 'string' ? v : undefined);
const offsetText = (v: unknown) =>
  typeof v === 'string' || typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))
    ? String(v)
    : undefined;

/** The fields of a JobFailure found in `o`, in the contract's order, none undefined. */
function pick(o: Record<string, unknown>, message: string): JobFailure {
  const name = text(o.name);
  const code = text(o.code);
  const file = text(o.file);
  const position = typeof o.position === 'number' && Number.isInteger(o.position) ? o.position : undefined;
  const offset = offsetText(o.offset);
  const field = text(o.field);
  return {
    ...(name === undefined ? {} : { name }),
    ...(code === undefined ? {} : { code }),
    message,
    ...(file === undefined ? {} : { file }),
    ...(position === undefined ? {} : { position }),
    ...(offset === undefined ? {} : { offset }),
    ...(field === undefined ? {} : { field }),
  };
}

/**
 * The failure of `err`: a typed error (its `toJSON()`), a typed error's JSON as a conversion
 * report carries it (file, position and offset kept), any other error or value (name, code and
 * message).
 */
export function jobFailureOf(err: unknown): JobFailure {
  if (err === null || typeof err !== 'object') return { name: 'Error', message: String(err) };
  const e = err as { toJSON?: () => unknown; message?: unknown };
  const json = typeof e.toJSON === 'function' ? e.toJSON() : undefined;
  const o = (json !== null && typeof json === 'object' ? json : err) as Record<string, unknown>;
  // An Error's name and message are not own properties: read them off the error itself.
  return pick(
    { ...o, name: o.name ?? (err as { name?: unknown }).name },
    text(o.message) ?? text(e.message) ?? '',
  );
}

/** The `failedReason` text of a failure (the message of the error the processor throws). */
export function encodeJobFailure(failure: JobFailure): string {
  return JSON.stringify(failure);
}

/** A job's `failedReason` as the failure it stands for; a plain message (not JSON) is kept as such. */
export function decodeJobFailure(reason: string | undefined): JobFailure {
  if (reason === undefined) return { message: 'unknown' };
  try {
    const o = JSON.parse(reason) as unknown;
    if (o !== null && typeof o === 'object' && !Array.isArray(o)) {
      const r = o as Record<string, unknown>;
      return pick(r, text(r.message) ?? reason);
    }
  } catch {
    // not JSON: a plain message
  }
  return { message: reason };
}
