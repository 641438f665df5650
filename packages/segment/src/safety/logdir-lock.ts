/**
 * Kafka's lock of a log dir, `<log.dir>/.lock`: a broker opens it (CREATE, READ, WRITE) and holds
 * an exclusive fcntl lock on it for as long as it runs (`LogManager.lockLogDirs`,
 * `org.apache.kafka.server.util.FileLock`); one that cannot take it stops with "Failed to acquire
 * lock on file .lock". seglift takes the same lock before it writes anything in a log dir and holds
 * it until it is done, so that it refuses to work under a running broker, and a broker started
 * meanwhile refuses to start instead of reading half-migrated files. `--prepare` only probes it
 * (`logDirLockHolder`): it writes nothing in the log dir.
 *
 * The descriptor is a plain fd (never a FileHandle, which Node closes when it is collected: that
 * would drop the lock in the middle of a migration).
 */
import { closeSync, constants, fchownSync, openSync, realpathSync } from 'node:fs';
import { readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { LogDirLockedError, LogDirUnknownError, SegmentIoError } from '../files/errors.js';
import { fstatNow, statNow } from '../files/fs-util.js';
import { lockHolder, tryLockWholeFile } from '../files/libc.js';
import { LOG_DIR_LOCK_NAME } from '../files/names.js';
import { logDirLockDenied } from '../files/ownership.js';

export interface LogDirLock {
  readonly logDir: string;
  /** `<logDir>/.lock` */
  readonly path: string;
  /** Drops the lock (idempotent). */
  release(): void;
}

export function logDirLockPath(logDir: string): string {
  return path.join(logDir, LOG_DIR_LOCK_NAME);
}

/**
 * Takes `<logDir>/.lock` as Kafka does, creating it when absent (a broker that stopped cleanly
 * deletes it). A created `.lock` gets the log dir's owner and group, so that the broker's user can
 * open it for writing when it starts. It is left in place on release: deleting it would let a
 * process that opened it just before lock the unlinked file while the next one locks a new one
 * (two holders; the worker takes and releases it per job), and a broker opens an existing one. Throws `LogDirLockedError` when someone else holds it.
 */
export function acquireLogDirLock(logDir: string): LogDirLock {
  const lockPath = logDirLockPath(logDir);
  let fd: number;
  let created = false;
  try {
    try {
      fd = openSync(lockPath, constants.O_RDWR | constants.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      try {
        fd = openSync(
          lockPath,
          constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
          0o644,
        );
        created = true;
      } catch (again) {
        // Another process created it meanwhile (a broker starting, another seglift).
        if ((again as NodeJS.ErrnoException).code !== 'EEXIST') throw again;
        fd = openSync(lockPath, constants.O_RDWR | constants.O_NOFOLLOW);
      }
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EACCES' || code === 'EPERM')
      throw logDirLockDenied(logDir, lockPath, err as NodeJS.ErrnoException);
    throw new SegmentIoError(
      `cannot open the log dir lock: ${(err as Error).message}`,
      { file: lockPath },
      { cause: err },
    );
  }
  try {
    if (!fstatNow(fd).isFile())
      throw new SegmentIoError('the log dir lock is not a regular file', { file: lockPath });
    if (!tryLockWholeFile(fd, lockPath)) {
      const holder = lockHolder(fd, lockPath);
      throw new LogDirLockedError(logDir, lockPath, holder?.pid);
    }
    if (created) {
      const dir = statNow(logDir);
      const own = fstatNow(fd);
      if (own.uid !== dir.uid || own.gid !== dir.gid) fchownSync(fd, dir.uid, dir.gid);
    }
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  let held = true;
  return {
    logDir,
    path: lockPath,
    release() {
      if (!held) return;
      held = false;
      closeSync(fd);
    },
  };
}

interface Shared {
  lock: LogDirLock;
  holders: number;
}

/**
 * The locks this process holds, by the log dir's real path. The lock belongs to an open file
 * description: a second descriptor of this process would be refused like another seglift, so
 * concurrent users of one process (the worker's jobs, a migrate's log dirs) share one.
 */
const shared = new Map<string, Shared>();

/**
 * Holds `<logDir>/.lock` for the caller: taken when this process does not hold it yet (throws
 * `LogDirLockedError` as `acquireLogDirLock` does), shared when it does. The lock is dropped when
 * the last holder releases. Main thread only: a worker thread has its own registry, and its own
 * descriptor would be refused.
 */
export function holdLogDirLock(logDir: string): LogDirLock {
  const key = realpathSync(logDir);
  let entry = shared.get(key);
  if (entry === undefined) {
    entry = { lock: acquireLogDirLock(logDir), holders: 0 };
    shared.set(key, entry);
  }
  entry.holders++;
  const held = entry;
  let released = false;
  return {
    logDir,
    path: held.lock.path,
    release() {
      if (released) return;
      released = true;
      if (--held.holders > 0) return;
      shared.delete(key);
      held.lock.release();
    },
  };
}

/**
 * Holds the locks of all `logDirs` (each once), all before the caller writes anything: when one
 * is held by someone else, the ones already taken are released and its `LogDirLockedError`
 * thrown. The result's `release` drops them all (idempotent).
 */
export function holdLogDirLocks(logDirs: Iterable<string>): { locks: LogDirLock[]; release(): void } {
  const locks: LogDirLock[] = [];
  const release = () => {
    for (const l of locks.splice(0).reverse()) l.release();
  };
  const seen = new Set<string>();
  try {
    for (const dir of logDirs) {
      const key = path.resolve(dir);
      if (seen.has(key)) continue;
      seen.add(key);
      locks.push(holdLogDirLock(key));
    }
  } catch (err) {
    release();
    throw err;
  }
  return { locks, release };
}

/**
 * Checks that `logDir` holds the partition whose real path is `realPartition`: it is its real
 * parent, or an entry of it (a symlink: a partition linked in from another disk) resolves to it.
 * Returns the log dir's real path; throws LogDirUnknownError otherwise (a job's claim is not
 * trusted: the wrong `.lock` would let a swap run beside a broker).
 */
export async function assertLogDirHolds(logDir: string, realPartition: string): Promise<string> {
  let realLogDir: string;
  try {
    realLogDir = await realpath(logDir);
  } catch (err) {
    throw new LogDirUnknownError(`log dir ${logDir} cannot be resolved: ${(err as Error).message}`, {
      file: logDir,
    });
  }
  if (path.dirname(realPartition) === realLogDir) return realLogDir;
  const entries = await readdir(realLogDir, { withFileTypes: true }).catch(() => []);
  for (const e of entries) {
    if (!e.isSymbolicLink()) continue;
    const target = await realpath(path.join(realLogDir, e.name)).catch(() => undefined);
    if (target === realPartition) return realLogDir;
  }
  throw new LogDirUnknownError(
    `log dir ${logDir} does not hold the partition ${realPartition} (neither its parent nor a symlink in it leads there): refusing to convert it, since its broker's .lock is unknown`,
    { file: realPartition },
  );
}

/**
 * Whether someone holds `<logDir>/.lock`, without taking it or creating it: undefined when the
 * file is absent or unlocked; else the holder's pid when the kernel can name it here (0: a process
 * in another PID namespace, -1: an open-file-description lock such as another seglift's).
 */
export function logDirLockHolder(logDir: string): { pid: number } | undefined {
  const lockPath = logDirLockPath(logDir);
  let fd: number;
  try {
    fd = openSync(lockPath, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SegmentIoError(
      `cannot open the log dir lock: ${(err as Error).message}`,
      { file: lockPath },
      { cause: err },
    );
  }
  try {
    return lockHolder(fd, lockPath);
  } finally {
    closeSync(fd);
  }
}
