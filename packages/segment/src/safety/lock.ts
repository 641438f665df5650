import { randomUUID } from 'node:crypto';
import { close as closeFd, fstat, open as openFd, readSync } from 'node:fs';
import { stat, utimes } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { readBoundedText } from '../files/bounded-read.js';
import { LockedError, LostLockError } from '../files/errors.js';
import { statOrUndefined } from '../files/fs-util.js';
import { link, pause, removeIfExists, writeWholeFile } from '../files/fsops.js';
import { LOCK_SUFFIX, PARTITION_LOCK_NAME, TMP_SUFFIX } from '../files/names.js';

export interface LockInfo {
  pid: number;
  host: string;
  token: string;
  startedAt: string;
  /** The lock file's mtime when read: the holder touches it every LOCK_HEARTBEAT_MS. */
  mtimeMs?: number;
}

/** How often a holder touches its lock file. */
export const LOCK_HEARTBEAT_MS = 10_000;
/**
 * A lock not touched for this long is stale whoever took it: a worker pod killed with SIGKILL on
 * another node (another host name, another pid namespace) can never be seen to be dead, and its
 * lock must not block the segment forever. Generous against clock skew on shared storage.
 */
export const LOCK_STALE_AFTER_MS = 120_000;

export interface FileLock {
  path: string;
  token: string;
  release(): Promise<void>;
  /**
   * Throws `LockedError` ("lost its lock to another run") unless the lock file still holds this
   * lock's token: a process frozen (SIGSTOP, a VM pause) past LOCK_STALE_AFTER_MS stops touching
   * it, and another run may have taken it over as stale meanwhile.
   */
  assertHeld(): Promise<void>;
  /** A dead process's lock (a simulated crash): left in place, only this process's handle and heartbeat go. */
  abandon(): void;
}

export function lockPathFor(logPath: string): string {
  return logPath.replace(/\.log$/, '') + LOCK_SUFFIX;
}

export function partitionLockPath(partitionDir: string): string {
  return path.join(partitionDir, PARTITION_LOCK_NAME);
}

export async function readLock(lockPath: string): Promise<LockInfo | undefined> {
  const s = await lockState(lockPath);
  return typeof s === 'object' ? s : undefined;
}

/** The largest lock file read: a token, a pid, a host name and a time in a line of JSON. */
const MAX_LOCK_BYTES = 64 * 1024;

/** A missing lock (released meanwhile) is not an unreadable (corrupt) one: never confuse them. */
async function lockState(lockPath: string): Promise<LockInfo | 'absent' | 'unreadable'> {
  let text: string;
  try {
    // A FIFO or a device in a lock's place is unreadable, never a hang (files/bounded-read.ts).
    text = await readBoundedText(lockPath, MAX_LOCK_BYTES, 'lock file');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : 'unreadable';
  }
  let info: LockInfo;
  try {
    info = JSON.parse(text) as LockInfo;
  } catch {
    return 'unreadable';
  }
  if (typeof info?.token !== 'string') return 'unreadable';
  try {
    info.mtimeMs = (await stat(lockPath)).mtimeMs;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
  return info;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A lock is stale when it was taken on this host by a process that is gone, or when its holder
 * has not touched it for LOCK_STALE_AFTER_MS (a holder on another host that died).
 */
export function isStaleLock(info: LockInfo | undefined, now = Date.now()): boolean {
  if (info === undefined) return true;
  if (info.host === os.hostname() && !pidAlive(info.pid)) return true;
  return info.mtimeMs !== undefined && now - info.mtimeMs > LOCK_STALE_AFTER_MS;
}

/**
 * Whether a lock's temp file (a pending lock being linked into place, a takeover file) belongs
 * to a run that is gone. One still being written reads as unreadable: it is another run's only
 * once it is as old as a stale lock (removing it earlier would make that run's link fail).
 */
export async function isStaleLockTemp(tempPath: string, now = Date.now()): Promise<boolean> {
  const state = await lockState(tempPath);
  if (state === 'absent') return false;
  if (state !== 'unreadable') return isStaleLock(state, now);
  // Being written, or left half written by a crash: the name says who wrote it.
  const writer = PENDING_NAME_RE.exec(path.basename(tempPath));
  if (writer && writer[1] === os.hostname() && !pidAlive(Number(writer[2]))) return true;
  const st = await stat(tempPath).catch(() => undefined);
  return st !== undefined && now - st.mtimeMs > LOCK_STALE_AFTER_MS;
}

/**
 * `<lock>.<host>.<pid>.<token>.seglift-tmp`: a pending lock names its writer. Every lock name
 * ends in `.lock` and a host name may hold dots, so the host is what lies between them.
 */
const PENDING_NAME_RE = /\.lock\.(.+)\.(\d+)\.[0-9a-f-]{36}\.seglift-tmp$/;

function pendingPath(lockPath: string, info: LockInfo): string {
  return `${lockPath}.${info.host}.${info.pid}.${info.token}${TMP_SUFFIX}`;
}

/**
 * Removes a lock judged stale. Several runs can judge the same stale lock at once; a plain unlink
 * by a slower one would delete the lock a faster one has just taken, and both would convert. So
 * only the run that creates the takeover file named after the stale token may remove it, and
 * only while the lock still holds that token (nobody can replace a present lock: link() never
 * overwrites). Taking the lock is then a normal link() that any run may win.
 */
async function removeStaleLock(
  lockPath: string,
  stale: LockInfo | 'unreadable',
  pending: string,
): Promise<void> {
  const staleToken = stale === 'unreadable' ? 'unreadable' : stale.token;
  const takeover = `${lockPath}.takeover-${staleToken}${TMP_SUFFIX}`;
  try {
    await link(pending, takeover);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    // Another run is taking over (milliseconds), or one crashed in the middle and left its
    // takeover file: that one would block the stale lock forever (recoverLeftovers removes temp
    // files only once the lock is taken), so a takeover file as old as a stale lock is removed.
    const st = await stat(takeover).catch(() => undefined);
    if (st === undefined || Date.now() - st.mtimeMs <= LOCK_STALE_AFTER_MS) return;
    await removeIfExists(takeover);
    try {
      await link(pending, takeover);
    } catch (again) {
      if ((again as NodeJS.ErrnoException).code === 'EEXIST') return;
      throw again;
    }
  }
  try {
    const current = await lockState(lockPath);
    const same =
      stale === 'unreadable'
        ? current === 'unreadable'
        : typeof current === 'object' && current.token === staleToken;
    if (same) await removeIfExists(lockPath);
  } finally {
    await removeIfExists(takeover);
  }
}

function describeHolder(holder: LockInfo | undefined): string {
  return holder ? `pid ${holder.pid} on ${holder.host} since ${holder.startedAt}` : 'another run';
}

/** Touches the lock file every LOCK_HEARTBEAT_MS while held (exported for the heartbeat test). */
export function startHeartbeat(lockPath: string, everyMs = LOCK_HEARTBEAT_MS): () => void {
  const timer = setInterval(() => {
    const now = new Date();
    // Not through fsops: a heartbeat changes no data and lands at any instant.
    utimes(lockPath, now, now).catch(() => {});
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Exclusive lock file holding pid, host and a token (threads of one process share the pid, the
 * token tells them apart). It is written whole under a temporary name and linked into place
 * (link fails if the lock exists), so no run ever reads a half-written lock and takes it for a
 * stale one. A stale lock is replaced once; a live one -> LockedError naming its holder.
 */
export async function acquireFileLock(lockPath: string, what: string): Promise<FileLock> {
  const info: LockInfo = {
    pid: process.pid,
    host: os.hostname(),
    token: randomUUID(),
    startedAt: new Date().toISOString(),
  };
  // A temp name: if a crash leaves it behind, recoverLeftovers deletes it like our other temp files.
  const pending = pendingPath(lockPath, info);
  const text = JSON.stringify(info);
  await writeWholeFile(pending, text, { flags: 'wx', sync: true });
  // Kept open while held: its inode cannot be reused by another file meanwhile, so the lock path
  // naming this inode, with these bytes in it, is this lock (see `stillOurs`). A plain descriptor,
  // not a FileHandle: a lock a dead process drops (a simulated crash) is never closed by the GC.
  const opened = await promisify(openFd)(pending, 'r');
  let fd: number | undefined = opened;
  try {
    const ino = (await promisify(fstat)(opened)).ino;
    let tookOver = false;
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        await link(pending, lockPath);
        const stop = startHeartbeat(lockPath);
        const held = opened;
        fd = undefined;
        let open = true;
        const closeHeld = () => {
          if (open) closeFd(held, () => {});
          open = false;
        };
        return {
          path: lockPath,
          token: info.token,
          assertHeld: async () => {
            if (open && (await stillOurs(lockPath, held, ino, text))) return;
            const current = await readLock(lockPath);
            if (current?.token === info.token) return;
            const now = current ? `held by ${describeHolder(current)}` : 'gone';
            throw new LostLockError(
              `lost its lock to another run (the ${what} lock is ${now}): this run was paused past the stale time (${LOCK_STALE_AFTER_MS / 1000} s) and stops without renaming anything; the other run finishes the segment`,
              { file: lockPath },
            );
          },
          abandon: () => {
            stop();
            closeHeld();
          },
          release: async () => {
            stop();
            const ours = open && (await stillOurs(lockPath, held, ino, text));
            closeHeld();
            if (ours || (await readLock(lockPath))?.token === info.token) await removeIfExists(lockPath);
          },
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const state = await lockState(lockPath);
        if (state === 'absent') continue; // released meanwhile: try again
        const holder = state === 'unreadable' ? undefined : state;
        if (!tookOver && isStaleLock(holder)) {
          tookOver = true;
          await removeStaleLock(lockPath, state, pending);
          continue;
        }
        throw new LockedError(`${what} is locked by ${describeHolder(holder)}`, { file: lockPath });
      }
    }
  } finally {
    if (fd !== undefined) closeFd(fd, () => {});
    await removeIfExists(pending);
  }
  throw new LockedError(`could not take the lock of ${what}`, { file: lockPath });
}

/**
 * The check `assertHeld` makes before every rename of a swap, in two reads instead of a parse:
 * the lock path still names the inode this lock linked (a takeover links another file there,
 * and the inode held open is never reused meanwhile) and that inode still holds the bytes
 * written (the token). Anything else goes to the full check.
 */
async function stillOurs(lockPath: string, held: number, ino: number, text: string): Promise<boolean> {
  // Synchronous (fs-util.ts: two metadata reads of microseconds, no threadpool round trips).
  const want = Buffer.from(text);
  const buf = Buffer.alloc(want.length + 1);
  if (statOrUndefined(lockPath)?.ino !== ino) return false;
  let read: number;
  try {
    read = readSync(held, buf, 0, buf.length, 0);
  } catch {
    return false;
  }
  return read === want.length && want.equals(buf.subarray(0, want.length));
}

/** `<base>.log.seglift.lock`: one run converts a segment at a time. */
export function acquireSegmentLock(logPath: string): Promise<FileLock> {
  return acquireFileLock(lockPathFor(logPath), 'segment');
}

export interface PartitionLockOptions {
  signal?: AbortSignal;
  /** Give up after this long while a live holder keeps it (default: twice the stale time). */
  maxWaitMs?: number;
}

/**
 * A commit's partition locks, each held over its partition's run of swaps (the main thread's lane
 * of one partition, migrate.ts) instead of taken and released per segment: a lock taken is a file
 * written, fsynced, linked and removed again, about ten filesystem operations a segment. `take`
 * gives the lock held (taken at the partition's first segment; again when it was lost) as a
 * FileLock whose release leaves it held; `finish` releases it after the partition's last segment.
 * Only the lane of that partition takes it, so its swaps still come one after another.
 */
export class PartitionLocks {
  private readonly held = new Map<string, FileLock>();

  async take(partitionDir: string, options: PartitionLockOptions = {}): Promise<FileLock> {
    let lock = this.held.get(partitionDir);
    if (
      lock !== undefined &&
      !(await lock.assertHeld().then(
        () => true,
        () => false,
      ))
    ) {
      // Taken over while this process was frozen: the next segment waits for it like any other.
      lock.abandon();
      lock = undefined;
    }
    if (lock === undefined) {
      lock = await acquirePartitionLock(partitionDir, options);
      this.held.set(partitionDir, lock);
    }
    const shared = lock;
    return {
      path: shared.path,
      token: shared.token,
      assertHeld: () => shared.assertHeld(),
      release: async () => {},
      // A simulated crash: the process is dead, the lock stays for the next run to judge stale.
      abandon: () => {
        if (this.held.get(partitionDir) === shared) this.held.delete(partitionDir);
        shared.abandon();
      },
    };
  }

  async finish(partitionDir: string): Promise<void> {
    const lock = this.held.get(partitionDir);
    this.held.delete(partitionDir);
    // As Conversion's release: one that cannot be removed (a read-only filesystem, a simulated
    // crash) is stale once this process exits.
    await lock?.release().catch(() => {});
  }

  async finishAll(): Promise<void> {
    for (const dir of [...this.held.keys()]) await this.finish(dir);
  }
}

/**
 * The partition's swap lock (PARTITION_LOCK_NAME): held from before the first `.swap` rename of a
 * segment to after its last, and while leftovers of a crash are completed. Kafka's LogLoader
 * completes every `.log.swap` of a directory as one offset range and deletes every other file in
 * it, so two segments of one partition must never be mid-swap at once, whatever process or host
 * converts them. Swaps take milliseconds: a held lock is waited for.
 */
export async function acquirePartitionLock(
  partitionDir: string,
  options: PartitionLockOptions = {},
): Promise<FileLock> {
  const lockPath = partitionLockPath(partitionDir);
  const deadline = Date.now() + (options.maxWaitMs ?? 2 * LOCK_STALE_AFTER_MS);
  for (let wait = 5; ; wait = Math.min(250, wait * 2)) {
    // Only reads while a live holder has it: no files written per poll.
    const state = await lockState(lockPath);
    if (state === 'absent' || state === 'unreadable' || isStaleLock(state) || Date.now() >= deadline) {
      try {
        return await acquireFileLock(lockPath, 'partition');
      } catch (err) {
        if (!(err instanceof LockedError) || Date.now() >= deadline) throw err;
      }
    }
    options.signal?.throwIfAborted();
    await pause(wait);
  }
}
