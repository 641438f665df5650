/**
 * Every filesystem change the pipeline makes goes through here: creates, writes, fsyncs, renames,
 * unlinks, links, utimes, chown/chmod, mkdir. One place to see what a swap does to a directory,
 * and one place where tests observe it: they count operations and crash after the Nth
 * (`observeFsOps`), check which files and directories were fsynced before which rename, and a
 * test-only environment variable kills the process right after a chosen operation, so a real
 * broker can be started on exactly that state (e2e/kafka).
 *
 * SEGLIFT_TEST_KILL_AFTER (tests only):
 *   `<op>:<suffix>[@k]`  SIGKILL right after the k-th (default 1st) operation of kind <op> whose
 *                        path ends with <suffix>, e.g. `rename:.log.swap`
 *   `#N`                 SIGKILL right after the N-th filesystem change of this thread
 * SEGLIFT_TEST_HOLD_AFTER (tests only), same syntax, with SEGLIFT_TEST_HOLD_WHILE=<file>: right
 *   after that operation, wait while <file> exists (the event loop keeps running: aborts and
 *   lock renewals go on), so a test acts on a conversion held at a known point instead of racing it.
 */
import { constants, existsSync } from 'node:fs';
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
import { SegmentIoError } from './errors.js';
import { lstatOrUndefined } from './fs-util.js';
import { setMtimeNs } from './libc.js';

export type FsOpKind =
  | 'create'
  | 'write'
  | 'fsync'
  | 'fsync-dir'
  | 'rename'
  | 'unlink'
  | 'link'
  | 'utimes'
  | 'chown'
  | 'chmod'
  | 'mkdir'
  | 'rmdir';

export interface FsOp {
  kind: FsOpKind;
  /** The file changed (for rename and link: the new name). */
  path: string;
  /** rename and link: the old name. */
  from?: string;
}

export type FsObserver = (op: FsOp) => void;

/**
 * Thrown by a test that simulates a crash (an observer, or `crashFsOps`): callers let it through
 * and leave every file exactly as it is, as a dead process would.
 */
export class SimulatedCrash extends Error {
  constructor(readonly at: string) {
    super(`simulated crash after ${at}`);
    this.name = 'SimulatedCrash';
  }
}

const observers = new Set<FsObserver>();
let opCount = 0;
let crashed: SimulatedCrash | undefined;

/**
 * Tests: from now on every filesystem change of this thread throws `crash` before it happens,
 * as if the process had died (a crash stops all of its tasks, not only the one that saw it).
 * `undefined` lifts it.
 */
export function crashFsOps(crash: SimulatedCrash | undefined): void {
  crashed = crash;
}

/** Throws the simulated crash, if any: a dead process does not go on waiting either. */
export function throwIfCrashed(): void {
  if (crashed) throw crashed;
}
const before = throwIfCrashed;

/**
 * Calls `observer` after every filesystem change of this thread, in order. It may throw (a test
 * simulating a crash throws SimulatedCrash): the change has happened, nothing after it runs.
 * Returns the function that removes the observer.
 */
export function observeFsOps(observer: FsObserver): () => void {
  observers.add(observer);
  return () => observers.delete(observer);
}

interface KillRule {
  kind?: string;
  suffix?: string;
  nth: number;
}

function parseRule(variable: string): KillRule | undefined {
  const spec = process.env[variable];
  if (!spec) return undefined;
  const n = /^#(\d+)$/.exec(spec);
  if (n) return { nth: Number(n[1]) };
  const m = /^([a-z-]+):([^@]+)(?:@(\d+))?$/.exec(spec);
  if (!m) throw new Error(`${variable}: cannot parse '${spec}' (<op>:<suffix>[@k] or #N)`);
  return { kind: m[1], suffix: m[2], nth: m[3] ? Number(m[3]) : 1 };
}

/** Counts the operations matching a rule; true at its nth. */
function matcher(rule: KillRule | undefined): (op: FsOp) => boolean {
  let seen = 0;
  return (op) =>
    rule !== undefined &&
    (rule.kind === undefined
      ? opCount === rule.nth
      : op.kind === rule.kind && op.path.endsWith(rule.suffix!) && ++seen === rule.nth);
}

const killHere = matcher(parseRule('SEGLIFT_TEST_KILL_AFTER'));
const holdHere = matcher(parseRule('SEGLIFT_TEST_HOLD_AFTER'));
const holdWhile = process.env.SEGLIFT_TEST_HOLD_WHILE;

async function done(op: FsOp): Promise<void> {
  opCount++;
  if (killHere(op)) {
    process.kill(process.pid, 'SIGKILL');
    // SIGKILL is delivered before the kill call returns to this thread in practice; never go on.
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
  }
  for (const o of observers) o(op);
  if (holdWhile && holdHere(op)) {
    while (existsSync(holdWhile)) await new Promise((r) => setTimeout(r, 20));
  }
}

function ioError(what: string, file: string, err: unknown): SegmentIoError {
  if (err instanceof SegmentIoError) return err;
  return new SegmentIoError(`${what} failed: ${(err as Error).message}`, { file }, { cause: err });
}

/** Opens `p` for writing (created or truncated, or `wx`: must not exist) with `mode`. */
export async function openForWrite(p: string, flags = 'w', mode = 0o644): Promise<FileHandle> {
  before();
  const fh = await open(p, flags, mode);
  try {
    await done({ kind: 'create', path: p });
  } catch (err) {
    await fh.close();
    throw err;
  }
  return fh;
}

/** Writes all of `bytes` at `position` (a short write is continued, never left half done). */
export async function writeAll(
  fh: FileHandle,
  p: string,
  bytes: Uint8Array,
  position: number,
): Promise<void> {
  before();
  let off = 0;
  while (off < bytes.length) {
    const { bytesWritten } = await fh.write(bytes, off, bytes.length - off, position + off);
    off += bytesWritten;
  }
  await done({ kind: 'write', path: p });
}

export async function syncHandle(fh: FileHandle, p: string): Promise<void> {
  before();
  await fh.sync();
  await done({ kind: 'fsync', path: p });
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
  before();
  let fh: FileHandle | undefined;
  try {
    fh = await open(dir, constants.O_RDONLY);
    await fh.sync();
  } catch (err) {
    // Some filesystems refuse fsync on a directory (EINVAL/EISDIR); nothing more we can do there.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM')
      throw ioError('fsync of directory', dir, err);
  } finally {
    await fh?.close();
  }
  await done({ kind: 'fsync-dir', path: dir });
}

export async function rename(from: string, to: string): Promise<void> {
  before();
  try {
    await fsRename(from, to);
  } catch (err) {
    throw new SegmentIoError(
      `rename to ${to} failed: ${(err as Error).message}`,
      { file: from },
      { cause: err },
    );
  }
  await done({ kind: 'rename', path: to, from });
}

/** Unlinks `p`; false when it did not exist. */
export async function removeIfExists(p: string): Promise<boolean> {
  before();
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
    await fsUnlink(p);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw ioError('unlink', p, err);
  }
  await done({ kind: 'unlink', path: p });
  return true;
}

/** link(2): fails with EEXIST when `to` exists (what the lock protocol relies on). */
export async function link(from: string, to: string): Promise<void> {
  before();
  await fsLink(from, to);
  await done({ kind: 'link', path: to, from });
}

export async function utimes(p: string, atime: Date, mtime: Date): Promise<void> {
  before();
  await fsUtimes(p, atime, mtime);
  await done({ kind: 'utimes', path: p });
}

/**
 * Gives `p` the mtime `mtimeNs` to the nanosecond (utimensat: fs.utimes goes through a double of
 * seconds and loses the sub-microsecond part); its atime is left. A 'utimes' operation.
 */
export async function setMtime(p: string, mtimeNs: bigint): Promise<void> {
  before();
  setMtimeNs(p, mtimeNs);
  await done({ kind: 'utimes', path: p });
}

export async function chown(p: string, uid: number, gid: number): Promise<void> {
  before();
  await fsChown(p, uid, gid);
  await done({ kind: 'chown', path: p });
}

export async function chmod(p: string, mode: number): Promise<void> {
  before();
  await fsChmod(p, mode);
  await done({ kind: 'chmod', path: p });
}

/** mkdir -p; returns the first directory it created (undefined: `p` existed already). */
export async function mkdirp(p: string): Promise<string | undefined> {
  before();
  const made = await fsMkdir(p, { recursive: true });
  if (made !== undefined) await done({ kind: 'mkdir', path: p });
  return made;
}

/**
 * Undoes an `mkdirp(dir)` that created `made`: removes `dir` and its parents up to `made` while
 * they are empty (another writer's file keeps them, and that is no error).
 */
export async function removeEmptyDirs(dir: string, made: string): Promise<void> {
  for (let d = dir; d.startsWith(made); d = dirname(d)) {
    before();
    try {
      await fsRmdir(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOENT') return;
      throw ioError('rmdir', d, err);
    }
    await done({ kind: 'rmdir', path: d });
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
