/** Read-only file helpers; every change to the filesystem goes through fsops.ts. */
import { type BigIntStats, fstatSync, lstatSync, type Stats, statSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';

/*
 * Every synchronous stat of this package goes through the functions below. Node's
 * fs.realpathSync, which its module loader runs on every require, reads the last synchronous
 * stat's result from a buffer all of them share, and stops resolving a path early when that
 * result was a FIFO or a socket (lib/fs.js, realpathSync: "break if a pipe/socket"). A stat of a
 * FIFO named like a segment followed by the first load of a native codec (loaded lazily, behind
 * pnpm's symlinks) failed with "Cannot find native binding". These leave a regular file's stat in
 * that buffer. (A bigint stat fills another buffer; it goes through here all the same.)
 */
function scrubbed<T extends Stats | BigIntStats | undefined>(st: T): T {
  if (st !== undefined && (st.isFIFO() || st.isSocket())) statSync(process.execPath);
  return st;
}

/** fs.statSync (followed), safe for the module loader (above). */
export function statNow(p: string): Stats;
export function statNow(p: string, options: { bigint: true }): BigIntStats;
export function statNow(p: string, options?: { bigint: true }): Stats | BigIntStats {
  return scrubbed(options?.bigint ? statSync(p, { bigint: true }) : statSync(p));
}

/** fs.lstatSync, safe for the module loader (above). */
export function lstatNow(p: string): Stats {
  return scrubbed(lstatSync(p));
}

/** `p`'s lstat, or undefined when there is no such name. */
export function lstatOrUndefined(p: string): Stats | undefined {
  return scrubbed(lstatSync(p, { throwIfNoEntry: false }));
}

/** fs.fstatSync, safe for the module loader (above). */
export function fstatNow(fd: number): Stats {
  return scrubbed(fstatSync(fd));
}

/*
 * The metadata reads of a swap and its checks (stat, lstat: ~100 a segment) are synchronous: on
 * a local disk one takes microseconds in this thread, while fs.promises sends each through libuv's
 * threadpool, a round trip of thread switches (most of a commit's CPU on one core, issue 26),
 * queued behind the fsyncs that occupy its four threads. Data reads and every change stay async.
 */

/** `p`'s stat (followed), or undefined when it cannot be read (missing, or no access). */
export function statOrUndefined(p: string): Stats | undefined;
export function statOrUndefined(p: string, options: { bigint: true }): BigIntStats | undefined;
export function statOrUndefined(p: string, options?: { bigint: true }): Stats | BigIntStats | undefined {
  try {
    return scrubbed(
      options?.bigint
        ? statSync(p, { bigint: true, throwIfNoEntry: false })
        : statSync(p, { throwIfNoEntry: false }),
    );
  } catch {
    return undefined;
  }
}

export async function exists(p: string): Promise<boolean> {
  return statOrUndefined(p) !== undefined;
}

/** Whether two files hold the same bytes (sizes first, then 1 MiB at a time). */
export async function sameContent(a: string, b: string, chunkSize = 1 << 20): Promise<boolean> {
  const [sa, sb] = await Promise.all([stat(a), stat(b)]);
  if (sa.size !== sb.size) return false;
  const fa = await open(a, 'r');
  try {
    const fb = await open(b, 'r');
    try {
      const ba = Buffer.allocUnsafe(Math.min(chunkSize, sa.size));
      const bb = Buffer.allocUnsafe(Math.min(chunkSize, sa.size));
      for (let pos = 0; pos < sa.size; pos += chunkSize) {
        const n = Math.min(chunkSize, sa.size - pos);
        const [ra, rb] = await Promise.all([fa.read(ba, 0, n, pos), fb.read(bb, 0, n, pos)]);
        if (ra.bytesRead !== n || rb.bytesRead !== n) return false;
        if (!ba.subarray(0, n).equals(bb.subarray(0, n))) return false;
      }
      return true;
    } finally {
      await fb.close();
    }
  } finally {
    await fa.close();
  }
}
