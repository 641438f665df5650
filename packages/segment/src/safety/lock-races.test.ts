/**
 * The lock protocol at the instants a second run can only hit by chance: a lock released between
 * two system calls, link errors other than EEXIST (a filesystem without hard links), another run
 * creating a takeover file between our unlink and link, and the partition lock's polling. Each is
 * made deterministic by wrapping node:fs/promises (readFile, open for reading, stat, link) and node:timers/promises
 * (the poll's sleep), off unless a test arms them; every other file operation is real.
 */
import { rmSync, utimesSync } from 'node:fs';
import { readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LockedError } from '../files/errors.js';
import { foreignLock, lockableSegment } from '../test-support/lock-fixtures.js';
import { type FsOp, observeFsOps } from '../test-support/seams.js';
import {
  acquirePartitionLock,
  acquireSegmentLock,
  isStaleLockTemp,
  LOCK_STALE_AFTER_MS,
  lockPathFor,
} from './lock.js';

const hook = vi.hoisted(() => ({
  /**
   * Called before each read of a file (readFile, or an open for reading: a lock file is read
   * bounded, files/bounded-read.ts) / stat / link (may throw the call's error, or change files).
   */
  readFile: undefined as undefined | ((file: string) => void),
  stat: undefined as undefined | ((file: string) => void),
  link: undefined as undefined | ((from: string, to: string) => void),
  /** Replaces the partition lock's sleep between polls. */
  sleep: undefined as undefined | ((ms: number) => void),
}));

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const readFile = (async (file: string, ...rest: unknown[]) => {
    hook.readFile?.(String(file));
    return (real.readFile as (...a: unknown[]) => unknown)(file, ...rest);
  }) as typeof real.readFile;
  const open = (async (file: string, flags?: unknown, ...rest: unknown[]) => {
    if (flags === undefined || flags === 'r' || (typeof flags === 'number' && (flags & 3) === 0))
      hook.readFile?.(String(file));
    return (real.open as (...a: unknown[]) => unknown)(file, flags, ...rest);
  }) as typeof real.open;
  const stat = (async (file: string, ...rest: unknown[]) => {
    hook.stat?.(String(file));
    return (real.stat as (...a: unknown[]) => unknown)(file, ...rest);
  }) as typeof real.stat;
  const link = async (from: string, to: string) => {
    hook.link?.(String(from), String(to));
    return real.link(from, to);
  };
  return { ...real, readFile, open, stat, link, default: { ...real, readFile, open, stat, link } };
});

vi.mock('node:timers/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:timers/promises')>();
  const setTimeout = (async (ms: number, ...rest: unknown[]) => {
    if (hook.sleep) return hook.sleep(ms);
    return (real.setTimeout as (...a: unknown[]) => unknown)(ms, ...rest);
  }) as typeof real.setTimeout;
  return { ...real, setTimeout, default: { ...real, setTimeout } };
});

afterEach(() => {
  hook.readFile = hook.stat = hook.link = hook.sleep = undefined;
  vi.useRealTimers();
});

const errno = (code: string, syscall: string, file: string) =>
  Object.assign(new Error(`${code}: ${syscall} '${file}'`), { code, syscall, path: file });

const segment = () => lockableSegment('seglift-lock-races-');
const foreign = foreignLock;

/** A lock of another host not touched for longer than LOCK_STALE_AFTER_MS. */
async function staleForeignLock(lockPath: string, token: string): Promise<void> {
  await writeFile(lockPath, foreign(token));
  const old = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
  await utimes(lockPath, old, old);
}

/** The directory holds the segment and these files only: no pending lock, no takeover file. */
async function onlyBeside(log: string, ...names: string[]): Promise<void> {
  expect((await readdir(path.dirname(log))).sort()).toEqual(
    [path.basename(log), ...names.map((n) => path.basename(n))].sort(),
  );
}

describe('segment lock, released or replaced between two system calls', () => {
  it('a lock released between its read and its stat is absent, not a live lock of unknown age: taken at once', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, foreign('t-releasing'));
    let released = false;
    hook.stat = (file) => {
      if (file === lockPath && !released) {
        released = true;
        rmSync(lockPath);
      }
    };
    const lock = await acquireSegmentLock(log);
    expect(released).toBe(true);
    expect(JSON.parse(await readFile(lockPath, 'utf8')).token).toBe(lock.token);
    await lock.release();
    await onlyBeside(log);
  });

  it("a lock whose stat fails otherwise (EIO) fails the acquisition with that error; the holder's lock stays", async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, foreign('t-held'));
    hook.stat = (file) => {
      if (file === lockPath) throw errno('EIO', 'stat', file);
    };
    await expect(acquireSegmentLock(log)).rejects.toMatchObject({ code: 'EIO', path: lockPath });
    hook.stat = undefined;
    expect(await readFile(lockPath, 'utf8')).toBe(foreign('t-held'));
    await onlyBeside(log, lockPath);
  });

  it('a lock that reads as released at each of four tries while its link keeps failing: "could not take the lock"', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await writeFile(lockPath, foreign('t-flapping'));
    let reads = 0;
    hook.readFile = (file) => {
      if (file !== lockPath) return;
      reads++;
      throw errno('ENOENT', 'open', file);
    };
    const err = await acquireSegmentLock(log).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockedError);
    expect(err).toMatchObject({ detail: 'could not take the lock of segment', file: lockPath });
    expect(reads).toBe(4);
    hook.readFile = undefined;
    expect(await readFile(lockPath, 'utf8')).toBe(foreign('t-flapping'));
    await onlyBeside(log, lockPath);
  });

  it('isStaleLockTemp: an unreadable temp file removed between its read and its stat is not stale', async () => {
    const lockPath = lockPathFor(await segment());
    const takeover = `${lockPath}.takeover-unreadable.seglift-tmp`;
    await writeFile(takeover, '{"pid":');
    const old = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
    await utimes(takeover, old, old);
    hook.stat = (file) => {
      if (file === takeover) rmSync(takeover);
    };
    expect(await isStaleLockTemp(takeover)).toBe(false);
  });
});

describe('segment lock, link errors', () => {
  it('a link error other than EEXIST (no hard links here) fails the acquisition as it is, leaving nothing', async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    hook.link = (_, to) => {
      if (to === lockPath) throw errno('EPERM', 'link', to);
    };
    await expect(acquireSegmentLock(log)).rejects.toMatchObject({ code: 'EPERM', syscall: 'link' });
    await onlyBeside(log);
  });

  it("the takeover file's link failing otherwise (EPERM) fails the takeover: the stale lock stays", async () => {
    const log = await segment();
    const lockPath = lockPathFor(log);
    await staleForeignLock(lockPath, 't-dead');
    hook.link = (_, to) => {
      if (to.includes('.takeover-')) throw errno('EPERM', 'link', to);
    };
    await expect(acquireSegmentLock(log)).rejects.toMatchObject({ code: 'EPERM', syscall: 'link' });
    expect(await readFile(lockPath, 'utf8')).toBe(foreign('t-dead'));
    await onlyBeside(log, lockPath);
  });

  it('a crashed takeover file removed, then another run links its own first: left to it (LockedError); other errors fail', async () => {
    for (const [code, expected] of [
      [
        'EEXIST',
        { code: 'LOCKED', detail: expect.stringMatching(/^segment is locked by pid 1 on worker-7f9c/) },
      ],
      ['EPERM', { code: 'EPERM', syscall: 'link' }],
    ] as const) {
      const log = await segment();
      const lockPath = lockPathFor(log);
      await staleForeignLock(lockPath, 't-dead');
      const takeover = `${lockPath}.takeover-t-dead.seglift-tmp`;
      await writeFile(takeover, foreign('t-crashed'));
      const old = new Date(Date.now() - LOCK_STALE_AFTER_MS - 5_000);
      await utimes(takeover, old, old);
      let takeoverLinks = 0;
      hook.link = (_, to) => {
        // The first link finds the crashed run's file (a real EEXIST); the second, after its
        // removal, meets the other run's.
        if (to === takeover && ++takeoverLinks === 2) throw errno(code, 'link', to);
      };
      await expect(acquireSegmentLock(log)).rejects.toMatchObject(expected);
      expect(takeoverLinks).toBe(2);
      expect(await readFile(lockPath, 'utf8')).toBe(foreign('t-dead'));
      await onlyBeside(log, lockPath);
    }
  });
});

describe('partition lock polling (frozen clock, each sleep advances it)', () => {
  /** Polls a live, touched partition lock; returns each sleep and the file changes made before it. */
  async function pollLiveLock(maxWaitMs?: number) {
    vi.useFakeTimers({ toFake: ['Date'] });
    const dir = path.dirname(await segment());
    const held = await acquirePartitionLock(dir);
    const start = Date.now();
    const sleeps: { ms: number; changesBefore: number }[] = [];
    const changes: FsOp[] = [];
    const stop = observeFsOps((op) => changes.push(op));
    hook.sleep = (ms) => {
      sleeps.push({ ms, changesBefore: changes.length });
      if (Date.now() - start > 4 * LOCK_STALE_AFTER_MS) throw new Error('still polling');
      vi.setSystemTime(Date.now() + ms);
      // The holder is live: its heartbeat keeps touching the lock in this simulated time.
      utimesSync(held.path, new Date(), new Date());
    };
    const err = await acquirePartitionLock(dir, maxWaitMs === undefined ? {} : { maxWaitMs }).catch(
      (e: unknown) => e,
    );
    stop();
    const waited = Date.now() - start;
    await held.release();
    return { err, sleeps, waited, changes, held };
  }

  it('maxWaitMs 0: one try, no sleep; LockedError naming the holder', async () => {
    const { err, sleeps, held } = await pollLiveLock(0);
    expect(err).toBeInstanceOf(LockedError);
    expect(err).toMatchObject({
      detail: expect.stringMatching(new RegExp(`^partition is locked by pid ${process.pid} on `)),
      file: held.path,
    });
    expect(sleeps).toEqual([]);
  });

  it('polls 5, 10, 20 … ms apart up to 250, only reading, and tries once at the first poll past maxWaitMs', async () => {
    const { err, sleeps, waited, changes } = await pollLiveLock(1_000);
    expect(err).toBeInstanceOf(LockedError);
    expect(sleeps.map((s) => s.ms)).toEqual([5, 10, 20, 40, 80, 160, 250, 250, 250]);
    expect(waited).toBe(1_065);
    // No file written while polling: only the last try wrote (and removed) its pending lock.
    expect(sleeps.every((s) => s.changesBefore === 0)).toBe(true);
    expect(changes.map((c) => c.kind)).toContain('unlink');
  });

  it('waits twice the stale time by default', async () => {
    const { err, sleeps, waited } = await pollLiveLock();
    expect(err).toBeInstanceOf(LockedError);
    expect(waited).toBeGreaterThanOrEqual(2 * LOCK_STALE_AFTER_MS);
    expect(waited).toBeLessThan(2 * LOCK_STALE_AFTER_MS + 250);
    expect(sleeps.at(-1)?.ms).toBe(250);
  });
});
