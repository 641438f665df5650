import { rmSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LockedError, SegmentIoError } from '../files/errors.js';
import { foreignLock, lockableSegment } from '../test-support/lock-fixtures.js';
import { observeFsOps } from '../test-support/seams.js';
import {
  acquireFileLock,
  acquirePartitionLock,
  acquireSegmentLock,
  type FileLock,
  isStaleLock,
  isStaleLockTemp,
  LOCK_HEARTBEAT_MS,
  LOCK_STALE_AFTER_MS,
  lockPathFor,
  startHeartbeat,
} from './lock.js';

// The heartbeat's touches (utimes of the lock file) as they start, while `heartbeatTouches.on`:
// a test on a fake clock awaits the touch itself instead of guessing how long a file system takes.
const heartbeatTouches = vi.hoisted(() => ({ on: false, started: [] as Promise<void>[] }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const utimes: typeof real.utimes = (...a) => {
    const touched = real.utimes(...a);
    if (heartbeatTouches.on) heartbeatTouches.started.push(touched);
    return touched;
  };
  return { ...real, utimes, default: { ...real, utimes } };
});

const segment = () => lockableSegment('seglift-lock-');
const foreign = foreignLock;

describe('segment lock', () => {
  it('a lock of another host is live while touched and stale once not touched for LOCK_STALE_AFTER_MS', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, foreign('t-live'));
    await expect(acquireSegmentLock(log)).rejects.toThrow(
      /^segment is locked by pid 1 on worker-7f9c-other-node/,
    );

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

  it('a takeover file exactly as old as a stale lock still blocks; one millisecond older it is removed (frozen clock)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      // A whole second: utimes and stat keep the millisecond exactly.
      vi.setSystemTime(Math.floor(Date.now() / 1000) * 1000);
      const now = Date.now();
      const log = await segment();
      const lockPath = lockPathFor(log);
      await writeFile(lockPath, foreign('t-dead'));
      const old = new Date(now - LOCK_STALE_AFTER_MS - 5_000);
      await utimes(lockPath, old, old);
      const takeover = `${lockPath}.takeover-t-dead.seglift-tmp`;
      await writeFile(takeover, foreign('t-crashed'));
      const exactly = new Date(now - LOCK_STALE_AFTER_MS);
      await utimes(takeover, exactly, exactly);
      expect((await stat(takeover)).mtimeMs).toBe(now - LOCK_STALE_AFTER_MS);
      await expect(acquireSegmentLock(log)).rejects.toThrow(/^segment is locked by pid 1 on worker-7f9c/);
      expect(await readFile(takeover, 'utf8')).toBe(foreign('t-crashed'));
      const older = new Date(now - LOCK_STALE_AFTER_MS - 1);
      await utimes(takeover, older, older);
      const lock = await acquireSegmentLock(log);
      expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe(lock.token);
      await expect(stat(takeover)).rejects.toThrow(/ENOENT/);
      await lock.release();
    } finally {
      vi.useRealTimers();
    }
  });

  it('isStaleLock: this host with a dead pid, or an old mtime; never a fresh lock of another host', () => {
    const now = Date.now();
    const info = { pid: 1, host: 'elsewhere', token: 't', startedAt: '' };
    expect(isStaleLock({ ...info, mtimeMs: now - 1_000 }, now)).toBe(false);
    expect(isStaleLock({ ...info, mtimeMs: now - LOCK_STALE_AFTER_MS }, now)).toBe(false);
    // A pid of another host tells nothing here, even one that is not running on this one.
    expect(isStaleLock({ ...info, pid: 2 ** 22 + 12345, mtimeMs: now }, now)).toBe(false);
    expect(isStaleLock({ ...info, mtimeMs: now - LOCK_STALE_AFTER_MS - 1 }, now)).toBe(true);
    expect(isStaleLock({ ...info }, now)).toBe(false); // never read from a file: no age known
    expect(isStaleLock({ ...info, host: os.hostname(), pid: 2 ** 22 + 12345, mtimeMs: now }, now)).toBe(true);
    expect(isStaleLock({ ...info, host: os.hostname(), pid: process.pid, mtimeMs: now }, now)).toBe(false);
    expect(isStaleLock(undefined)).toBe(true);
  });
});

describe('lock files', () => {
  it('release removes only the lock this holder still has', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    const lock = await acquireSegmentLock(log);
    // Judged stale meanwhile (a hung holder) and taken by another run: never ours to remove.
    await writeFile(lockPath, foreign('t-next'));
    await lock.release();
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe('t-next');
  });

  it('a lock file that is not a lock (garbage, no token) is taken over; the takeover file does not stay', async () => {
    for (const content of ['{"pid":', '{"pid":1,"host":"elsewhere"}', 'null']) {
      const log = await segment();
      const lockPath = lockPathFor(log);
      await writeFile(lockPath, content);
      const lock = await acquireSegmentLock(log);
      expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe(lock.token);
      expect((await readdir(path.dirname(log))).sort()).toEqual(
        ['00000000000000000000.log', path.basename(lockPath)].sort(),
      );
      await lock.release();
    }
  });

  it('a directory where the lock belongs (an operator mistake) is an I/O error naming it, never read as released', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await mkdir(lockPath);
    const err = await acquireSegmentLock(log).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SegmentIoError);
    expect(err).toMatchObject({ file: lockPath, detail: expect.stringMatching(/^unlink failed: EISDIR/) });
    expect((await stat(lockPath)).isDirectory()).toBe(true);
    // Nothing of this run is left beside it: no pending lock, no takeover file.
    expect((await readdir(path.dirname(log))).sort()).toEqual(
      ['00000000000000000000.log', path.basename(lockPath)].sort(),
    );
  });

  it('the lock of <dir>/<base>.log is <base>.log.seglift.lock beside it, whatever the directory is called', () => {
    expect(lockPathFor('/data/app.logs/t-0/00000000000000000000.log')).toBe(
      '/data/app.logs/t-0/00000000000000000000.log.seglift.lock',
    );
  });

  it('release of a lock whose file is gone (removed by an operator) does not fail', async () => {
    const log = await segment();
    const lock = await acquireSegmentLock(log);
    await rm(lockPathFor(log));
    await expect(lock.release()).resolves.toBeUndefined();
  });

  it('an unreadable stale lock being taken over by another run (fresh takeover file) is left to it', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, '{"pid":');
    await writeFile(`${lockPath}.takeover-unreadable.seglift-tmp`, 'x');
    await expect(acquireSegmentLock(log)).rejects.toThrow(/^segment is locked by another run \(/);
    expect(await readFile(lockPath, 'utf8')).toBe('{"pid":');
  });

  it('a stale lock replaced by a live one while this run takes it over is never removed', async () => {
    for (const stale of [foreign('t-dead'), '{"pid":']) {
      const log = await segment();
      const lockPath = lockPathFor(log);
      await writeFile(lockPath, stale);
      const old = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
      await utimes(lockPath, old, old);
      // Right after this run's takeover file is in place, another run has taken the lock.
      const stop = observeFsOps((op) => {
        if (op.kind === 'link' && op.path.includes('.takeover-')) writeFileSync(lockPath, foreign('t-live'));
      });
      try {
        await expect(acquireSegmentLock(log)).rejects.toThrow(/^segment is locked by pid 1 on worker-7f9c/);
      } finally {
        stop();
      }
      expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe('t-live');
    }
  });

  it('isStaleLockTemp: a temp file is stale once its writer is gone or it is as old as a stale lock', async () => {
    const dir = path.dirname(await segment());
    const lockPath = path.join(dir, '00000000000000000000.log.seglift.lock');
    const now = Date.now();
    const old = new Date(now - LOCK_STALE_AFTER_MS - 5_000);
    const pending = (host: string, pid: number) =>
      path.join(
        dir,
        `${path.basename(lockPath)}.${host}.${pid}.0f8fad5b-d9cb-469f-a165-70867728950e.seglift-tmp`,
      );
    expect(await isStaleLockTemp(pending(os.hostname(), 2 ** 22 + 9), now)).toBe(false); // absent
    // Half written (unreadable): its name tells who writes it.
    const deadHere = pending(os.hostname(), 2 ** 22 + 9);
    await writeFile(deadHere, '{"pid":');
    expect(await isStaleLockTemp(deadHere, now)).toBe(true);
    const liveHere = pending(os.hostname(), process.pid);
    await writeFile(liveHere, '{"pid":');
    expect(await isStaleLockTemp(liveHere, now)).toBe(false);
    const elsewhere = pending('host.with.dots', 2 ** 22 + 9);
    await writeFile(elsewhere, '{"pid":');
    expect(await isStaleLockTemp(elsewhere, now)).toBe(false);
    await utimes(elsewhere, old, old);
    expect(await isStaleLockTemp(elsewhere, now)).toBe(true);
    await utimes(liveHere, old, old);
    expect(await isStaleLockTemp(liveHere, now)).toBe(true);
    // Unreadable and without a writer in its name: only its age counts.
    const takeover = `${lockPath}.takeover-unreadable.seglift-tmp`;
    await writeFile(takeover, 'x');
    expect(await isStaleLockTemp(takeover, now)).toBe(false);
    await utimes(takeover, old, old);
    expect(await isStaleLockTemp(takeover, now)).toBe(true);
    const unread = await stat(takeover);
    expect(await isStaleLockTemp(takeover, unread.mtimeMs + LOCK_STALE_AFTER_MS)).toBe(false);
    expect(await isStaleLockTemp(takeover, unread.mtimeMs + LOCK_STALE_AFTER_MS + 1)).toBe(true);
    // Whole (readable): judged as the lock it is (this host's dead pid: stale at once).
    const whole = `${lockPath}.takeover-t.seglift-tmp`;
    await writeFile(
      whole,
      JSON.stringify({ pid: 2 ** 22 + 9, host: os.hostname(), token: 't', startedAt: '' }),
    );
    expect(await isStaleLockTemp(whole, now)).toBe(true);
    await writeFile(whole, foreign('t'));
    expect(await isStaleLockTemp(whole, now)).toBe(false);
    await utimes(whole, old, old);
    expect(await isStaleLockTemp(whole, now)).toBe(true);
  });
});

describe('partition lock', () => {
  it('waits for a live holder and gets the lock once it is released', async () => {
    const dir = path.dirname(await segment());
    const first = await acquirePartitionLock(dir);
    let second: FileLock | undefined;
    const waiting = acquirePartitionLock(dir).then((l) => {
      second = l;
      return l;
    });
    // Still waiting after the holder's own reads: nothing but the release lets it through.
    await expect(acquireFileLock(first.path, 'partition')).rejects.toThrow(LockedError);
    expect(second).toBeUndefined();
    await first.release();
    const got = await waiting;
    expect(JSON.parse(await readFile(got.path, 'utf8')).token).toBe(got.token);
    await got.release();
  });

  it('a live holder past maxWaitMs: LockedError naming it; an abort stops the wait', async () => {
    const dir = path.dirname(await segment());
    const held = await acquirePartitionLock(dir);
    await expect(acquirePartitionLock(dir, { maxWaitMs: 0 })).rejects.toThrow(
      new RegExp(`partition is locked by pid ${process.pid}`),
    );
    const abort = new AbortController();
    abort.abort();
    await expect(acquirePartitionLock(dir, { signal: abort.signal })).rejects.toThrow(/abort/i);
    await held.release();
  });

  it('an unreadable partition lock is taken over at once', async () => {
    const dir = path.dirname(await segment());
    await writeFile(path.join(dir, 'seglift.partition.lock'), '{"pid":');
    const lock = await acquirePartitionLock(dir);
    expect(JSON.parse(await readFile(lock.path, 'utf8')).token).toBe(lock.token);
    await lock.release();
  });

  it('a takeover refused by another run in the middle of it is waited out, not an error', async () => {
    const dir = path.dirname(await segment());
    const lockPath = path.join(dir, 'seglift.partition.lock');
    const takeover = `${lockPath}.takeover-unreadable.seglift-tmp`;
    await writeFile(lockPath, '{"pid":');
    await writeFile(takeover, 'x');
    // The other run finishes its takeover (its file goes) once this one has tried once and
    // removed its pending lock.
    const stop = observeFsOps((op) => {
      if (op.kind === 'unlink' && op.path.startsWith(`${lockPath}.`) && op.path.endsWith('.seglift-tmp'))
        rmSync(takeover, { force: true });
    });
    try {
      const lock = await acquirePartitionLock(dir);
      expect(JSON.parse(await readFile(lock.path, 'utf8')).token).toBe(lock.token);
      await lock.release();
    } finally {
      stop();
    }
  });

  it('a stale partition lock is taken over at once', async () => {
    const dir = path.dirname(await segment());
    await writeFile(path.join(dir, 'seglift.partition.lock'), foreign('t-gone'));
    const old = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
    await utimes(path.join(dir, 'seglift.partition.lock'), old, old);
    const lock = await acquirePartitionLock(dir, { maxWaitMs: 0 });
    expect(JSON.parse(await readFile(lock.path, 'utf8')).token).toBe(lock.token);
    await lock.release();
  });
});

describe('lock heartbeat (fake clock: only intervals and Date are faked, file I/O is real)', () => {
  const touches = heartbeatTouches.started;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    touches.length = 0;
  });
  afterEach(() => {
    heartbeatTouches.on = false;
    vi.useRealTimers();
  });

  /**
   * One heartbeat period of fake time: exactly one touch starts; once it settled (awaited, no
   * wall-clock wait) the lock file's mtime is the fake now.
   */
  async function beat(lockPath: string): Promise<void> {
    const before = touches.length;
    heartbeatTouches.on = true;
    await vi.advanceTimersByTimeAsync(LOCK_HEARTBEAT_MS);
    heartbeatTouches.on = false;
    expect(touches.length).toBe(before + 1);
    await touches[before];
    expect(Math.abs((await stat(lockPath)).mtimeMs - Date.now())).toBeLessThan(1);
  }

  it('a lock of another host kept touched is never taken over, however long it is held; once its heartbeat stops it is', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, foreign('t-held'));
    const stop = startHeartbeat(lockPath);
    // Three stale times long, an acquirer tries after every beat.
    for (let t = 0; t <= 3 * LOCK_STALE_AFTER_MS; t += LOCK_HEARTBEAT_MS) {
      await beat(lockPath);
      await expect(acquireSegmentLock(log)).rejects.toThrow(/locked by pid 1 on worker-7f9c-other-node/);
    }
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe('t-held');
    // The holder dies: nothing touches the file. Stale only once LOCK_STALE_AFTER_MS have passed.
    stop();
    await vi.advanceTimersByTimeAsync(LOCK_STALE_AFTER_MS - LOCK_HEARTBEAT_MS);
    await expect(acquireSegmentLock(log)).rejects.toThrow(/locked by pid 1/);
    await vi.advanceTimersByTimeAsync(2 * LOCK_HEARTBEAT_MS);
    const lock = await acquireSegmentLock(log);
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe(lock.token);
    await lock.release();
  });

  it('acquiring a lock starts its heartbeat and releasing it stops it', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    const held = await acquireSegmentLock(log);
    // Seen from another host: the pid tells nothing there, only the heartbeat keeps it live.
    // (Rewritten in place: the same file the heartbeat touches.)
    const info = JSON.parse(await readFile(lockPath, 'utf8'));
    await writeFile(lockPath, JSON.stringify({ ...info, host: 'worker-7f9c-other-node', pid: 1 }));
    for (let t = 0; t <= 2 * LOCK_STALE_AFTER_MS; t += LOCK_HEARTBEAT_MS) {
      await beat(lockPath);
      await expect(acquireSegmentLock(log)).rejects.toThrow(/locked by pid 1 on worker-7f9c-other-node/);
    }
    await held.release();
    await expect(stat(lockPath)).rejects.toThrow(/ENOENT/);
    expect(vi.getTimerCount()).toBe(0);
  });
});
