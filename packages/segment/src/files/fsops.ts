/**
 * Every filesystem change the pipeline makes goes through here: creates, writes, fsyncs, renames,
 * unlinks, links, utimes, chown/chmod, mkdir. One place to see what a swap does to a directory,
 * and one seam: the changes are made by this thread's `FsOps` (as Kafka's LogCleaner and
 * LocalLog take a Time and a Scheduler), the system's unless other ones were injected. A caller
 * may wrap them (`wrapFsOps`), and a process may have them wrapped before any of its modules
 * loads: a function stored under `FS_OPS_HOOK` on globalThis (a `node --import` module sets it in
 * each thread) receives the system's FsOps and returns the ones the thread uses.
 */
import { constants } from 'node:fs';
import {
  type FileHandle,
  chmod as fsChmod,
  chown as fsChown,
  link as fsLink,
  mkdir as fsMkdir,
  rename as fsRename,
  rmdir as fsRmdir,
  unlink as fsUnlink,
  utimes as fsUtimes,
  open,
} from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { SegmentIoError } from './errors.js';
import { lstatOrUndefined } from './fs-util.js';
import { setMtimeNs } from './libc.js';

/**
 * The filesystem changes, one method each, the bare system calls (the functions below add the
 * error wording and the protocols). `pause` is the wait between the tries of a change (a lock
 * polled): as Kafka's Time.sleep, it belongs to the same injected world as the changes.
 */
export interface FsOps {
  /** Opens `p` for writing with `flags` ('w', 'wx') and `mode`. */
  create(p: string, flags: string, mode: number): Promise<FileHandle>;
  /** Writes all of `bytes` at `position` of the open file `p`. */
  write(fh: FileHandle, p: string, bytes: Uint8Array, position: number): Promise<void>;
  fsync(fh: FileHandle, p: string): Promise<void>;
  /** fsync of the directory `dir`, opened read-only. */
  fsyncDir(dir: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(p: string): Promise<void>;
  link(from: string, to: string): Promise<void>;
  utimes(p: string, atime: Date, mtime: Date): Promise<void>;
  /** The mtime to the nanosecond, the atime left. */
  setMtime(p: string, mtimeNs: bigint): Promise<void>;
  chown(p: string, uid: number, gid: number): Promise<void>;
  chmod(p: string, mode: number): Promise<void>;
  /** mkdir -p: the first directory created (undefined: `p` existed). */
  mkdir(p: string): Promise<string | undefined>;
  rmdir(p: string): Promise<void>;
  pause(ms: number): Promise<void>;
}

/** The system's filesystem. */
export const SYSTEM_FS_OPS: FsOps = Object.freeze({
  create: (p, flags, mode) => open(p, flags, mode),
  async write(fh, _p, bytes, position) {
    // A short write is continued, never left half done.
    for (let off = 0; off < bytes.length; ) {
      const { bytesWritten } = await fh.write(bytes, off, bytes.length - off, position + off);
      off += bytesWritten;
    }
  },
  fsync: (fh) => fh.sync(),
  async fsyncDir(dir) {
    let fh: FileHandle | undefined;
    try {
      fh = await open(dir, constants.O_RDONLY);
      await fh.sync();
    } catch (err) {
      // Some filesystems refuse fsync on a directory (EINVAL/EISDIR); nothing more we can do there.
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM') throw err;
    } finally {
      await fh?.close();
    }
  },
  rename: (from, to) => fsRename(from, to),
  unlink: (p) => fsUnlink(p),
  link: (from, to) => fsLink(from, to),
  utimes: (p, atime, mtime) => fsUtimes(p, atime, mtime),
  setMtime: async (p, mtimeNs) => setMtimeNs(p, mtimeNs),
  chown: (p, uid, gid) => fsChown(p, uid, gid),
  chmod: (p, mode) => fsChmod(p, mode),
  mkdir: (p) => fsMkdir(p, { recursive: true }),
  rmdir: (p) => fsRmdir(p),
  pause: async (ms) => {
    await sleep(ms);
  },
} satisfies FsOps);

/** The globalThis key of a function that wraps each thread's FsOps before its first change. */
export const FS_OPS_HOOK = Symbol.for('@seglift/segment.fsOps');

type FsOpsWrapper = (inner: FsOps) => FsOps;

let current: FsOps = SYSTEM_FS_OPS;
{
  const hook = (globalThis as Record<symbol, unknown>)[FS_OPS_HOOK];
  if (typeof hook === 'function') current = (hook as FsOpsWrapper)(current);
}

/** This thread's FsOps from now on are `wrap(the current ones)`; returns the function that undoes it. */
export function wrapFsOps(wrap: FsOpsWrapper): () => void {
  const before = current;
  current = wrap(before);
  return () => {
    current = before;
  };
}

/** Waits `ms` between two tries of a change (see FsOps.pause). */
export function pause(ms: number): Promise<void> {
  return current.pause(ms);
}

function ioError(what: string, file: string, err: unknown): SegmentIoError {
  if (err instanceof SegmentIoError) return err;
  return new SegmentIoError(`${what} failed: ${(err as Error).message}`, { file }, { cause: err });
}

/** Opens `p` for writing (created or truncated, or `wx`: must not exist) with `mode`. */
export function openForWrite(p: string, flags = 'w', mode = 0o644): Promise<FileHandle> {
  return current.create(p, flags, mode);
}

/** Writes all of `bytes` at `position` (a short write is continued, never left half done). */
export function writeAll(fh: FileHandle, p: string, bytes: Uint8Array, position: number): Promise<void> {
  return current.write(fh, p, bytes, position);
}

export function syncHandle(fh: FileHandle, p: string): Promise<void> {
  return current.fsync(fh, p);
}

export async function fsyncFile(p: string): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await syncHandle(fh, p);
  } finally {
    await fh.close();
  }
}

/** Makes renames/creates/unlinks in `dir` durable (a rename is only safe once its directory is synced). */
export async function fsyncDir(dir: string): Promise<void> {
  try {
    await current.fsyncDir(dir);
  } catch (err) {
    throw ioError('fsync of directory', dir, err);
  }
}

export async function rename(from: string, to: string): Promise<void> {
  try {
    await current.rename(from, to);
  } catch (err) {
    throw new SegmentIoError(
      `rename to ${to} failed: ${(err as Error).message}`,
      { file: from },
      { cause: err },
    );
  }
}

/** Unlinks `p`; false when it did not exist. */
export async function removeIfExists(p: string): Promise<boolean> {
  // Most calls clear temp names that are not there (about seven a swap): a synchronous lstat
  // answers that without an unlink's threadpool round trip (fs-util.ts). A name appearing after
  // it is left as it would be had the unlink come a moment earlier.
  let present = true;
  try {
    present = lstatOrUndefined(p) !== undefined;
  } catch {
    // Not stat-able (ENOTDIR, EACCES): the unlink reports it.
  }
  if (!present) return false;
  try {
    await current.unlink(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw ioError('unlink', p, err);
  }
  return true;
}

/** link(2): fails with EEXIST when `to` exists (what the lock protocol relies on). */
export function link(from: string, to: string): Promise<void> {
  return current.link(from, to);
}

export function utimes(p: string, atime: Date, mtime: Date): Promise<void> {
  return current.utimes(p, atime, mtime);
}

/**
 * Gives `p` the mtime `mtimeNs` to the nanosecond (utimensat: fs.utimes goes through a double of
 * seconds and loses the sub-microsecond part); its atime is left.
 */
export function setMtime(p: string, mtimeNs: bigint): Promise<void> {
  return current.setMtime(p, mtimeNs);
}

export function chown(p: string, uid: number, gid: number): Promise<void> {
  return current.chown(p, uid, gid);
}

export function chmod(p: string, mode: number): Promise<void> {
  return current.chmod(p, mode);
}

/** mkdir -p; returns the first directory it created (undefined: `p` existed already). */
export function mkdirp(p: string): Promise<string | undefined> {
  return current.mkdir(p);
}

/**
 * Undoes an `mkdirp(dir)` that created `made`: removes `dir` and its parents up to `made` while
 * they are empty (another writer's file keeps them, and that is no error).
 */
export async function removeEmptyDirs(dir: string, made: string): Promise<void> {
  for (let d = dir; d.startsWith(made); d = dirname(d)) {
    try {
      await current.rmdir(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return;
      throw ioError('rmdir', d, err);
    }
    if (d === made) return;
  }
}

/** Writes the whole file; fsyncs it when `sync`. No rename: callers pick the name protocol. */
export async function writeWholeFile(
  p: string,
  data: Uint8Array | string,
  { flags = 'w', mode = 0o644, sync = false }: { flags?: string; mode?: number; sync?: boolean } = {},
): Promise<void> {
  const fh = await openForWrite(p, flags, mode);
  try {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    await writeAll(fh, p, bytes, 0);
    if (sync) await syncHandle(fh, p);
  } finally {
    await fh.close();
  }
}

/**
 * Streaming copy, fsynced: for backups and `.swap` copies of files we do not rewrite. `finish`
 * (owner, mode, times) runs before the fsync, so the copy's metadata is as durable as its bytes
 * before any rename gives it a name that counts.
 */
export async function copyFileSynced(
  from: string,
  to: string,
  mode = 0o644,
  { chunkSize = 4 << 20, finish }: { chunkSize?: number; finish?: (p: string) => Promise<void> } = {},
): Promise<void> {
  const src = await open(from, 'r');
  try {
    const dst = await openForWrite(to, 'w', mode);
    try {
      const buf = Buffer.allocUnsafe(chunkSize);
      let pos = 0;
      for (;;) {
        const { bytesRead } = await src.read(buf, 0, chunkSize, pos);
        if (bytesRead === 0) break;
        await writeAll(dst, to, buf.subarray(0, bytesRead), pos);
        pos += bytesRead;
      }
      await finish?.(to);
      await syncHandle(dst, to);
    } finally {
      await dst.close();
    }
  } finally {
    await src.close();
  }
}
