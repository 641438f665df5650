/**
 * The two system calls Node does not expose, through koffi (a maintained FFI with prebuilt
 * binaries, so nothing is compiled on a broker host):
 * - fcntl record locks, which are what Kafka's `.lock` is: `LogManager.lockLogDirs` ->
 *   `FileLock.tryLock` -> `FileChannel.tryLock()`, an exclusive `fcntl(F_SETLK)` of the whole
 *   file on Linux. flock(2) locks do not conflict with those, and reading /proc/locks misses a
 *   broker in another PID namespace (a Kubernetes pod), so only an fcntl lock will do. We take
 *   open-file-description locks (F_OFD_SETLK, Linux >= 3.15): they conflict with the JVM's
 *   process-associated ones, and unlike those they are not dropped when some other code of this
 *   process closes another descriptor of the same file, and they conflict between two
 *   descriptors of one process (so a test can hold one against the code under test).
 * - utimensat(2), to give a rewritten file its original mtime to the nanosecond (fs.utimes takes
 *   a double of seconds: microseconds at best).
 * Only 64-bit Linux with glibc or musl: the struct layouts below are those.
 */
import { createRequire } from 'node:module';
import type * as Koffi from 'koffi';

// Loaded on first use (about 20 ms): inspect, verify and --version never take a lock.
let koffiModule: typeof Koffi | undefined;
/** koffi, loaded on first use (io-courtesy.ts binds its calls through it too). */
export function koffi(): typeof Koffi {
  koffiModule ??= createRequire(import.meta.url)('koffi') as typeof Koffi;
  return koffiModule;
}

let cLibrary: Koffi.LibraryHandle | undefined;
/**
 * The C library node itself is linked against (dlopen(NULL): glibc or musl alike), on the
 * 64-bit Linux whose struct layouts these bindings assume; `what` names the caller in the error.
 */
export function libcLibrary(what: string): Koffi.LibraryHandle {
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64'))
    throw new Error(`${what} needs 64-bit Linux (this is ${process.platform}/${process.arch})`);
  cLibrary ??= koffi().load(null);
  return cLibrary;
}

const F_OFD_GETLK = 36;
const F_OFD_SETLK = 37;
const F_WRLCK = 1;
const F_UNLCK = 2;
const SEEK_SET = 0;
const AT_FDCWD = -100;
const UTIME_OMIT = (1 << 30) - 2;
const EAGAIN = 11;
const EACCES = 13;

interface Flock {
  l_type: number;
  l_whence: number;
  l_start: number | bigint;
  l_len: number | bigint;
  l_pid: number;
}

interface Libc {
  fcntlLock(fd: number, cmd: number, lk: Flock): number;
  utimensat(
    dirfd: number,
    path: string,
    times: Array<{ tv_sec: bigint; tv_nsec: bigint }>,
    flags: number,
  ): number;
}

let bound: Libc | undefined;

function libc(): Libc {
  if (bound) return bound;
  const lib = libcLibrary("seglift's log dir lock");
  const k = koffi();
  // struct flock of <fcntl.h> on 64-bit Linux: short, short, off_t, off_t, pid_t (32 bytes).
  const flock = k.struct({
    l_type: 'short',
    l_whence: 'short',
    l_start: 'int64',
    l_len: 'int64',
    l_pid: 'int',
  });
  const timespec = k.struct({ tv_sec: 'int64', tv_nsec: 'long' });
  // fcntl is variadic in C; with an int and a pointer the 64-bit Linux calling conventions pass
  // the third argument exactly as a fixed one.
  const fcntlLock = lib.func('fcntl', 'int', ['int', 'int', k.inout(k.pointer(flock))]);
  const utimensat = lib.func('utimensat', 'int', ['int', 'str', k.pointer(timespec), 'int']);
  bound = { fcntlLock, utimensat };
  return bound;
}

function lastErrno(): number {
  return koffi().errno();
}

/** Mirrors a Node fs error, so callers and messages treat it as one. */
export function errnoError(syscall: string, path: string, errno: number): NodeJS.ErrnoException {
  const names: Record<number, string> = { 1: 'EPERM', 2: 'ENOENT', 13: 'EACCES', 22: 'EINVAL', 9: 'EBADF' };
  const code = names[errno] ?? `ERRNO${errno}`;
  const err = new Error(`${code}: ${syscall} failed, '${path}'`) as NodeJS.ErrnoException;
  err.code = code;
  err.errno = -errno;
  err.syscall = syscall;
  err.path = path;
  return err;
}

function wholeFile(type: number): Flock {
  return { l_type: type, l_whence: SEEK_SET, l_start: 0, l_len: 0, l_pid: 0 };
}

/**
 * Tries to take an exclusive fcntl lock on the whole of the open file `fd` (never waits).
 * false: another open file description holds a conflicting lock (a broker, another seglift).
 */
export function tryLockWholeFile(fd: number, path: string): boolean {
  const lk = wholeFile(F_WRLCK);
  if (libc().fcntlLock(fd, F_OFD_SETLK, lk) === 0) return true;
  const errno = lastErrno();
  if (errno === EAGAIN || errno === EACCES) return false;
  throw errnoError('fcntl(F_OFD_SETLK)', path, errno);
}

/**
 * Who holds a lock on the file `fd` is open on, without taking one: undefined when nobody does;
 * else the holder's pid when the kernel can name it in this PID namespace (a JVM's lock: its pid;
 * 0 when it lives in another namespace; -1 for an open-file-description lock such as ours).
 */
export function lockHolder(fd: number, path: string): { pid: number } | undefined {
  const lk = wholeFile(F_WRLCK);
  if (libc().fcntlLock(fd, F_OFD_GETLK, lk) !== 0) throw errnoError('fcntl(F_OFD_GETLK)', path, lastErrno());
  return lk.l_type === F_UNLCK ? undefined : { pid: lk.l_pid };
}

/**
 * Sets a file's mtime to `mtimeNs` (nanoseconds since the epoch) exactly; its atime is left as it
 * is. Follows symlinks, as fs.utimes does.
 */
export function setMtimeNs(path: string, mtimeNs: bigint): void {
  const times = [
    { tv_sec: 0n, tv_nsec: BigInt(UTIME_OMIT) },
    { tv_sec: mtimeNs / 1_000_000_000n, tv_nsec: mtimeNs % 1_000_000_000n },
  ];
  if (mtimeNs < 0n) throw new RangeError(`mtime before 1970 (${mtimeNs} ns): ${path}`);
  if (libc().utimensat(AT_FDCWD, path, times, 0) !== 0) throw errnoError('utimensat', path, lastErrno());
}
