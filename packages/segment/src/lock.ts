import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { SegmentIoError } from './errors.js';
import { removeIfExists, writeFileSynced } from './fs-util.js';
import { LOCK_SUFFIX } from './names.js';

export interface LockInfo {
  pid: number;
  host: string;
  token: string;
  startedAt: string;
}

export interface SegmentLock {
  path: string;
  token: string;
  release(): Promise<void>;
}

export function lockPathFor(logPath: string): string {
  return logPath.replace(/\.log$/, '') + LOCK_SUFFIX;
}

export async function readLock(lockPath: string): Promise<LockInfo | undefined> {
  try {
    return JSON.parse(await readFile(lockPath, 'utf8')) as LockInfo;
  } catch {
    return undefined;
  }
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
 * A lock is stale when it was taken on this host by a process that is gone. A lock from another
 * host (shared storage) is never considered stale: we cannot see its process.
 */
export function isStaleLock(info: LockInfo | undefined): boolean {
  if (info === undefined) return true;
  return info.host === os.hostname() && !pidAlive(info.pid);
}

/**
 * Exclusive per-segment lock `<base>.log.seglift.lock`, created with O_EXCL, holding pid, host and a
 * token (threads of one process share the pid, the token tells them apart). A stale lock is
 * replaced once; a live one -> SegmentIoError.
 */
export async function acquireSegmentLock(logPath: string): Promise<SegmentLock> {
  const lockPath = lockPathFor(logPath);
  const info: LockInfo = {
    pid: process.pid,
    host: os.hostname(),
    token: randomUUID(),
    startedAt: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFileSynced(lockPath, JSON.stringify(info), 'wx');
      return {
        path: lockPath,
        token: info.token,
        release: async () => {
          const current = await readLock(lockPath);
          if (current?.token === info.token) await removeIfExists(lockPath);
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = await readLock(lockPath);
      if (attempt === 0 && isStaleLock(holder)) {
        await removeIfExists(lockPath);
        continue;
      }
      throw new SegmentIoError(
        `segment is locked by ${holder ? `pid ${holder.pid} on ${holder.host} since ${holder.startedAt}` : 'another run'}`,
        { file: lockPath },
      );
    }
  }
  throw new SegmentIoError('could not take the segment lock', { file: lockPath });
}
