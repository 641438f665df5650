import { mkdtemp, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireSegmentLock, isStaleLock, LOCK_STALE_AFTER_MS, lockPathFor } from './lock.js';

async function segment() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'seglift-lock-'));
  const log = path.join(dir, '00000000000000000000.log');
  await writeFile(log, '');
  return log;
}

const foreign = (token: string) =>
  JSON.stringify({ pid: 1, host: 'worker-7f9c-other-node', token, startedAt: '2026-01-01T00:00:00.000Z' });

describe('segment lock', () => {
  it('a lock of another host is live while touched and stale once not touched for LOCK_STALE_AFTER_MS', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, foreign('t-live'));
    await expect(acquireSegmentLock(log)).rejects.toThrow(/locked by pid 1 on worker-7f9c-other-node/);

    // The holder died on its node (SIGKILL): nobody touches the file any more.
    const old = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
    await utimes(lockPath, old, old);
    const lock = await acquireSegmentLock(log);
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe(lock.token);
    await lock.release();
    await expect(stat(lockPath)).rejects.toThrow(/ENOENT/);
  });

  it('a takeover file left by a run that crashed mid-takeover blocks only until it is as old as a stale lock', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, foreign('t-dead'));
    const old = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
    await utimes(lockPath, old, old);
    const takeover = `${lockPath}.takeover-t-dead.seglift-tmp`;
    // Fresh: another run may be in the middle of its takeover, so this one backs off.
    await writeFile(takeover, foreign('t-crashed'));
    await expect(acquireSegmentLock(log)).rejects.toThrow(/locked by pid 1/);
    // As old as a stale lock: nobody holds a takeover that long; it is removed and the lock taken.
    await utimes(takeover, old, old);
    const lock = await acquireSegmentLock(log);
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe(lock.token);
    await expect(stat(takeover)).rejects.toThrow(/ENOENT/);
    await lock.release();
  });

  it('isStaleLock: this host with a dead pid, or an old mtime; never a fresh lock of another host', () => {
    const now = Date.now();
    const info = { pid: 1, host: 'elsewhere', token: 't', startedAt: '' };
    expect(isStaleLock({ ...info, mtimeMs: now - 1_000 }, now)).toBe(false);
    expect(isStaleLock({ ...info, mtimeMs: now - LOCK_STALE_AFTER_MS - 1 }, now)).toBe(true);
    expect(isStaleLock({ ...info, host: os.hostname(), pid: 2 ** 22 + 12345, mtimeMs: now }, now)).toBe(true);
    expect(isStaleLock({ ...info, host: os.hostname(), pid: process.pid, mtimeMs: now }, now)).toBe(false);
    expect(isStaleLock(undefined)).toBe(true);
  });
});
