import { InvalidArgumentError } from '@seglift/format';
import { encodeJobFailure, jobFailureOf } from '@seglift/queue';
import { UnrecoverableError } from 'bullmq';

/**
 * A job this worker cannot run as queued: data that is not JSON, a payload the job schema refuses,
 * no conversion settings (an older watcher's). Permanent (INVALID_ARGUMENT): the same on every
 * attempt and on every worker, so it fails at once instead of coming back for ever.
 */
export class InvalidJobError extends InvalidArgumentError {}

/**
 * Codes of errors that come out the same on every attempt (the bytes or the request are wrong):
 * the job fails at once instead of burning retries.
 */
export const PERMANENT_CODES: ReadonlySet<string> = new Set([
  'CORRUPT_RECORD',
  'CRC_MISMATCH',
  'TRUNCATED',
  'UNKNOWN_CODEC',
  'UNSUPPORTED_FORMAT',
  'DECOMPRESSION_LIMIT',
  'DECOMPRESSION_FAILED',
  'VERIFY_MISMATCH',
  'PATH_OUTSIDE_ROOTS',
  'INVALID_ARGUMENT',
  'NOT_A_SEGMENT',
  // An operator must act (run as the broker's user; start the broker once to finish its swap).
  'OWNERSHIP',
  'KAFKA_LEFTOVERS',
  'STAGE_DIR',
  // A job's log dir that does not hold its partition: the same on every attempt.
  'LOG_DIR_UNKNOWN',
  // Not the file judged ready: converting it would swap out a file still being written.
  'SEGMENT_CHANGED',
]);

/** Node errno codes worth retrying (busy files, full disks being cleaned, fd exhaustion, flaky I/O). */
export const TRANSIENT_ERRNO: ReadonlySet<string> = new Set([
  'EBUSY',
  'EAGAIN',
  'ENOSPC',
  'EDQUOT',
  'EMFILE',
  'ENFILE',
  'EIO',
  'EINTR',
  'ETIMEDOUT',
  'ENOMEM',
  'ESTALE',
]);

/** Errno codes that need an operator (permissions, read-only mounts): retrying will not help. */
export const PERMANENT_ERRNO: ReadonlySet<string> = new Set([
  'EACCES',
  'EPERM',
  'EROFS',
  'EISDIR',
  'ENOTDIR',
]);

export type ErrorClass = 'permanent' | 'transient';

export function classifyError(err: unknown): ErrorClass {
  const e = err as { code?: unknown; cause?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code !== undefined && PERMANENT_CODES.has(code)) return 'permanent';
  // A log dir's .lock: a broker's (a pid, or 0 from another PID namespace) stays until an operator
  // stops it; another seglift's (-1, an open-file-description lock) ends with its run.
  if (code === 'LOG_DIR_LOCKED') {
    const pid = (e as { holderPid?: unknown }).holderPid;
    return typeof pid === 'number' && pid >= 0 ? 'permanent' : 'transient';
  }
  if (code !== undefined && PERMANENT_ERRNO.has(code)) return 'permanent';
  // SegmentIoError ('IO') wraps a Node error: its cause decides.
  if (code === 'IO' && e?.cause !== undefined) {
    const causeCode = (e.cause as { code?: unknown })?.code;
    if (typeof causeCode === 'string' && PERMANENT_ERRNO.has(causeCode)) return 'permanent';
  }
  return 'transient';
}

/**
 * The error a processor throws: UnrecoverableError (BullMQ fails the job without retrying) for
 * permanent errors, a plain Error for transient ones; either's message is the job's failure as
 * the queue's contract encodes it (the watcher decodes it from the job's failedReason).
 */
export function toJobError(err: unknown): Error {
  const failure = jobFailureOf(err);
  if (classifyError(err) === 'permanent') return new UnrecoverableError(encodeJobFailure(failure));
  const e = new Error(encodeJobFailure(failure));
  e.name = failure.name ?? 'Error';
  return e;
}
