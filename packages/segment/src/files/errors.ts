import { type ErrorContext, SegliftError } from '@seglift/format';

// Raised by verify here and by recompressRecordBatch's round trip in format: one class.
export { VerifyMismatchError } from '@seglift/format';

/** A filesystem step failed (open, read, rename, fsync); wraps the Node error with the file. */
export class SegmentIoError extends SegliftError {
  constructor(detail: string, context?: ErrorContext, options?: { cause?: unknown }) {
    super('IO', detail, context, options);
  }
}

/** The path is not a Kafka log segment (`<20-digit base offset>.log`, a regular file). */
export class NotASegmentError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('NOT_A_SEGMENT', detail, context);
  }
}

/** Another live run holds the segment's or the partition's lock. */
export class LockedError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('LOCKED', detail, context);
  }
}

/**
 * This run's segment or partition lock was taken over by another run while this one held it (it
 * was frozen past the stale time): it stops before its next rename and leaves the files to that run.
 */
export class LostLockError extends LockedError {}

/**
 * A log dir's `.lock` is held by someone else: a running Kafka broker (or another seglift). Nothing
 * may be written there until it stops; `--prepare` works beside it.
 */
export class LogDirLockedError extends SegliftError {
  readonly logDir: string;
  readonly holderPid: number | undefined;
  /** `advice`: what to do, as fits the command that met the lock (a front door may say its own). */
  constructor(
    logDir: string,
    lockPath: string,
    holderPid: number | undefined,
    advice = 'stop it first, or use --prepare',
  ) {
    const who = holderPid !== undefined && holderPid > 0 ? ` by pid ${holderPid}` : '';
    super(
      'LOG_DIR_LOCKED',
      `log dir ${logDir} is locked${who}: a Kafka broker (or another seglift) is running on it: ${advice}`,
      { file: lockPath },
    );
    this.logDir = logDir;
    this.holderPid = holderPid;
  }
}

/**
 * The log dir a partition belongs to (whose `.lock` a broker serving it holds) cannot be
 * established: a job names a log dir that does not hold the partition (no entry in it leads to
 * the partition's real dir). Nothing is written: locking another directory's `.lock` than the
 * broker's would let a conversion run beside it.
 */
export class LogDirUnknownError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('LOG_DIR_UNKNOWN', detail, context);
  }
}

/**
 * The partition holds files of an unfinished Kafka operation (`.cleaned`, or `.swap` files that
 * are not seglift's): a broker completing them at start-up deletes segment files by offset range,
 * so nothing is swapped in beside them. Starting and stopping the broker once clears them.
 */
export class KafkaLeftoversError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('KAFKA_LEFTOVERS', detail, context);
  }
}

/** The rewritten files could not be given the original's owner (seglift runs as another user). */
export class OwnershipError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('OWNERSHIP', detail, context);
  }
}

/**
 * A stage directory (two-phase migration) that cannot be used: on another filesystem than the log
 * dir (the commit is renames), inside it or containing it, or a non-empty directory that is not a
 * stage directory.
 */
export class StageDirError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('STAGE_DIR', detail, context);
  }
}

/**
 * The segment is not the file that was judged ready (a job's recorded size, mtime and inode): a
 * copy still writing it, or a file put in its place. Never converted: what was judged ready is
 * gone, and converting what is there now would swap out a file someone is still writing.
 */
export class SegmentChangedError extends SegliftError {
  constructor(detail: string, context?: ErrorContext) {
    super('SEGMENT_CHANGED', detail, context);
  }
}

/** A path that does not resolve inside one of the configured roots (after `..` and symlinks). */
export class PathOutsideRootsError extends SegliftError {
  readonly path: string;
  readonly roots: readonly string[];
  constructor(path: string, roots: readonly string[], why: string) {
    super(
      'PATH_OUTSIDE_ROOTS',
      `${why}; allowed roots: ${roots.length === 0 ? '(none)' : roots.join(', ')}`,
      {
        file: path,
      },
    );
    this.path = path;
    this.roots = roots;
  }
}

/** Wraps a Node error from reading or writing `file` as the typed error an operator reads. */
export function toSegmentError(err: unknown, file: string): SegliftError {
  if (err instanceof SegliftError) return err;
  const e = err as NodeJS.ErrnoException;
  if (e?.name === 'AbortError') return new SegmentIoError('aborted', { file }, { cause: err });
  const what = e?.code === 'ENOENT' ? 'no such file' : e?.code === 'EISDIR' ? 'is a directory' : undefined;
  return new SegmentIoError(
    what ? `${what} (${e.code})` : (e?.message ?? String(err)),
    { file },
    { cause: err },
  );
}
