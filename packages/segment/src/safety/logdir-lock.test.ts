import { existsSync, mkdirSync, mkdtempSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { holdLockAsABroker, needs, python3 } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { findPartitionSegments, logDirsGuarding, walkLogDirs } from '../discovery/discovery.js';
import { LogDirLockedError, LogDirUnknownError } from '../files/errors.js';
import { migrate } from '../runs/migrate.js';
import { commitStage, prepareStage } from '../runs/two-phase.js';
import { mixedSegment, tmpDir, writeSegment } from '../test-support/fixtures.js';
import { sha256 } from '../test-support/helpers.js';
import { prepareTiering } from '../tiering/tiering.js';
import { acquireLogDirLock, assertLogDirHolds, holdLogDirLock, logDirLockHolder } from './logdir-lock.js';

function tmp(): string {
  return mkdtempSync(path.join(tmpdir(), 'seglift-logdir-lock-'));
}

describe('the log dir lock', () => {
  it('is taken, refused to a second holder while held, and free again after release', () => {
    const dir = tmp();
    expect(logDirLockHolder(dir)).toBeUndefined();
    const lock = acquireLogDirLock(dir);
    expect(statSync(path.join(dir, '.lock')).isFile()).toBe(true);
    expect(logDirLockHolder(dir)).toEqual({ pid: -1 });
    let err: unknown;
    try {
      acquireLogDirLock(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LogDirLockedError);
    expect((err as Error).message).toBe(
      `log dir ${dir} is locked: a Kafka broker (or another seglift) is running on it: stop it first, or use --prepare (file ${path.join(dir, '.lock')})`,
    );
    lock.release();
    lock.release();
    expect(logDirLockHolder(dir)).toBeUndefined();
    acquireLogDirLock(dir).release();
  });
});

// Python's fcntl.lockf is a process-associated F_SETLK, the lock a JVM's FileChannel.tryLock takes.
needs(python3).describe('against a process holding an F_SETLK lock (as a Kafka broker does)', () => {
  it('refuses while the other process holds it, naming its pid, and takes it once it exits', async () => {
    const dir = tmp();
    const holder = await holdLockAsABroker(path.join(dir, '.lock'));
    expect(logDirLockHolder(dir)).toEqual({ pid: holder.pid });
    expect(() => acquireLogDirLock(dir)).toThrow(`is locked by pid ${holder.pid}:`);
    holder.stdin.end();
    await new Promise((resolve) => holder.once('exit', resolve));
    acquireLogDirLock(dir).release();
  });
});

/** Every file under `dir` with its size, mtime and sha256: what "nothing changed" compares. */
async function listing(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const p = path.join(e.parentPath, e.name);
    const st = await stat(p);
    out.push(
      e.isFile()
        ? `${path.relative(dir, p)} ${st.size} ${st.mtimeMs} ${await sha256(p)}`
        : path.relative(dir, p),
    );
  }
  return out.sort();
}

/** A log dir with two partitions of legacy segments (each with a rolled one to convert). */
async function logDir(): Promise<string> {
  const root = await tmpDir('seglift-logdir-');
  const dir = path.join(root, 'kafka-logs');
  for (const partition of ['orders-0', 'orders-1'])
    for (const base of [0n, 2000n])
      await writeSegment(dir, mixedSegment(base, Number(base) + 7).bytes, base, partition);
  return dir;
}

/** A python3 holding `<dir>/.lock` with fcntl.lockf (the F_SETLK lock a JVM takes); call stop(). */
async function pythonHolder(dir: string): Promise<{ pid: number; stop(): Promise<void> }> {
  const lockFile = path.join(dir, '.lock');
  if (!existsSync(lockFile)) writeFileSync(lockFile, '');
  const holder = await holdLockAsABroker(lockFile);
  return {
    pid: holder.pid!,
    stop: async () => {
      holder.stdin.end();
      await new Promise((resolve) => holder.once('exit', resolve));
    },
  };
}

const refusal = (dir: string, pid?: number) =>
  `log dir ${dir} is locked${pid === undefined ? '' : ` by pid ${pid}`}: a Kafka broker (or another seglift) is running on it: stop it first, or use --prepare`;

describe('migrate and commit hold the log dir lock', () => {
  it('another seglift holding it: migrate and commitStage refuse before touching anything', async () => {
    const dir = await logDir();
    const stageDir = path.join(path.dirname(dir), 'stage');
    await prepareStage(dir, { codec: 'zstd', mode: 'inline', stageDir });
    const other = acquireLogDirLock(dir);
    try {
      const before = await listing(path.dirname(dir));
      await expect(migrate([dir], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        expect.objectContaining({ code: 'LOG_DIR_LOCKED', detail: refusal(dir) }),
      );
      await expect(commitStage(dir, { codec: 'zstd', mode: 'inline', stageDir })).rejects.toThrow(
        LogDirLockedError,
      );
      // A partition dir given: its log dir (the parent) is the one locked.
      await expect(migrate([path.join(dir, 'orders-0')], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        LogDirLockedError,
      );
      expect(await listing(path.dirname(dir))).toEqual(before);
    } finally {
      other.release();
    }
  });

  it('a parent of log dirs: one locked log dir refuses the whole run, the others untouched too', async () => {
    const a = await logDir();
    const root = path.dirname(a);
    const b = path.join(root, 'kafka-logs-2');
    await writeSegment(b, mixedSegment(0n, 3).bytes, 0n, 'audit-0');
    await writeSegment(b, mixedSegment(2000n, 4).bytes, 2000n, 'audit-0');
    const other = acquireLogDirLock(b);
    try {
      const before = await listing(root);
      await expect(migrate([root], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(refusal(b));
      expect(await listing(root)).toEqual(before);
      // The lock of the free log dir was given back.
      expect(logDirLockHolder(a)).toBeUndefined();
    } finally {
      other.release();
    }
  });

  it('is held for the whole run (every log dir, shared by its conversions), then released', async () => {
    const dir = await logDir();
    const seen: ({ pid: number } | undefined)[] = [];
    const res = await migrate([dir], {
      codec: 'zstd',
      mode: 'inline',
      concurrency: 2,
      onSegment: () => seen.push(logDirLockHolder(dir)),
    });
    expect(res.summary).toMatchObject({ converted: 2, failed: 0 });
    expect(seen).toEqual([{ pid: -1 }, { pid: -1 }, { pid: -1 }, { pid: -1 }]);
    expect(logDirLockHolder(dir)).toBeUndefined();
    // The .lock stays (an empty file, a broker opens it as it is): deleting it would race.
    expect(statSync(path.join(dir, '.lock')).size).toBe(0);
    // The commit too.
    const stageDir = path.join(path.dirname(dir), 'stage');
    await prepareStage(dir, { codec: 'lz4', mode: 'inline', stageDir });
    const during: ({ pid: number } | undefined)[] = [];
    await commitStage(dir, {
      codec: 'lz4',
      mode: 'inline',
      stageDir,
      onSegment: () => during.push(logDirLockHolder(dir)),
    });
    expect(during.length).toBeGreaterThan(0);
    expect(during.every((h) => h?.pid === -1)).toBe(true);
    expect(logDirLockHolder(dir)).toBeUndefined();
  });

  it('holdLogDirLock shares one lock within the process: released by its last holder', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'seglift-logdir-lock-'));
    const a = holdLogDirLock(dir);
    const b = holdLogDirLock(path.join(dir, '.'));
    a.release();
    a.release();
    expect(logDirLockHolder(dir)).toEqual({ pid: -1 });
    b.release();
    expect(logDirLockHolder(dir)).toBeUndefined();
  });
});

needs(python3).describe('migrate and commit beside a process holding the F_SETLK lock (a broker)', () => {
  it('migrate and commitStage refuse naming its pid; nothing changed; prepare still works', async () => {
    const dir = await logDir();
    const stageDir = path.join(path.dirname(dir), 'stage');
    const holder = await pythonHolder(dir);
    try {
      const before = await listing(dir);
      await expect(migrate([dir], { codec: 'zstd', mode: 'inline', includeActive: true })).rejects.toThrow(
        refusal(dir, holder.pid),
      );
      expect(await listing(dir)).toEqual(before);
      // Beside the running "broker": prepare writes only the stage dir.
      const prepared = await prepareStage(dir, { codec: 'zstd', mode: 'inline', stageDir });
      expect(prepared.counts.staged).toBe(2);
      expect(await listing(dir)).toEqual(before);
      await expect(commitStage(dir, { codec: 'zstd', mode: 'inline', stageDir })).rejects.toThrow(
        refusal(dir, holder.pid),
      );
      expect(await listing(dir)).toEqual(before);
    } finally {
      await holder.stop();
    }
    const committed = await commitStage(dir, { codec: 'zstd', mode: 'inline', stageDir });
    expect(committed.counts.staged).toBe(2);
  });
});

/**
 * A log dir `L` holding `t-0 -> OTHER/t-0` (a partition moved to another disk and linked back, as
 * Kafka loads it), with legacy segments: the walker reports the partition by its real path, whose
 * parent is OTHER, not the log dir whose .lock the broker holds.
 */
async function linkedLogDir(): Promise<{ logDir: string; other: string }> {
  const root = await tmpDir('seglift-linked-');
  const logDir = path.join(root, 'kafka-logs');
  const other = path.join(root, 'disk2');
  for (const base of [0n, 2000n])
    await writeSegment(other, mixedSegment(base, Number(base) + 7).bytes, base, 't-0');
  mkdirSync(logDir);
  symlinkSync(path.join(other, 't-0'), path.join(logDir, 't-0'));
  return { logDir, other };
}

describe('a partition linked into the log dir from another directory', () => {
  it('walkLogDirs reports it by its real path with the log dir it was found in', async () => {
    const { logDir, other } = await linkedLogDir();
    const seen: Array<[string, string]> = [];
    await walkLogDirs([logDir], (dir, _names, found) => void seen.push([dir, found]));
    expect(seen).toEqual([[path.join(other, 't-0'), logDir]]);
    // A root that is itself the (linked) partition dir: the parent of its name as given.
    const root: Array<[string, string]> = [];
    await walkLogDirs([path.join(logDir, 't-0')], (dir, _names, found) => void root.push([dir, found]));
    await walkLogDirs([path.join(logDir, 't-0')], (dir, _names, found) => void root.push([dir, found]), {
      realPaths: true,
    });
    expect(root).toEqual([
      [path.join(logDir, 't-0'), logDir],
      [path.join(other, 't-0'), logDir],
    ]);
    // Guarded by the log dir it was found in and by its real parent (logDirsGuarding).
    expect((await findPartitionSegments(logDir)).partitions.map((p) => p.logDirs)).toEqual([[logDir, other]]);
    // A root holding both the log dir and the directory the link leads to: both, the link's first
    // (the walk's order does not decide which .lock is taken).
    const both = await findPartitionSegments(path.dirname(logDir));
    expect(both.partitions.map((p) => [p.partitionDir, p.logDirs])).toEqual([
      [path.join(other, 't-0'), [logDir, other]],
    ]);
  });

  it("migrate holds the log dir's .lock and its real parent's while it converts it", async () => {
    const { logDir, other } = await linkedLogDir();
    const seen: Array<[{ pid: number } | undefined, { pid: number } | undefined]> = [];
    const res = await migrate([logDir], {
      codec: 'zstd',
      mode: 'inline',
      onSegment: () => seen.push([logDirLockHolder(logDir), logDirLockHolder(other)]),
    });
    expect(res.summary).toMatchObject({ converted: 1, failed: 0 });
    expect(seen).toEqual([
      [{ pid: -1 }, { pid: -1 }],
      [{ pid: -1 }, { pid: -1 }],
    ]);
    expect(logDirLockHolder(logDir)).toBeUndefined();
    expect(logDirLockHolder(other)).toBeUndefined();
  });

  it('prepare stages nothing for it, and the commit converts it under the log dir lock', async () => {
    const { logDir, other } = await linkedLogDir();
    const stageDir = path.join(path.dirname(logDir), 'stage');
    const prepared = await prepareStage(logDir, { codec: 'zstd', mode: 'inline', stageDir });
    expect(prepared.counts.staged).toBe(0);
    expect(prepared.reports.map((r) => r.reason)).toEqual(['linked-partition']);
    // Nothing written outside the stage dir (a relative path out of it would have been).
    expect(await readdir(stageDir)).toEqual(['.seglift-stage']);
    const during: Array<{ pid: number } | undefined> = [];
    const committed = await commitStage(logDir, {
      codec: 'zstd',
      mode: 'inline',
      stageDir,
      onSegment: (r) => {
        if (r.result === 'converted') during.push(logDirLockHolder(logDir));
      },
    });
    expect(committed.summary).toMatchObject({ converted: 1, failed: 0 });
    expect(during).toEqual([{ pid: -1 }]);
    expect(logDirLockHolder(path.join(other))).toBeUndefined();
  });

  it('assertLogDirHolds: the real parent or a symlink in the log dir, else LogDirUnknownError', async () => {
    const { logDir, other } = await linkedLogDir();
    const part = path.join(other, 't-0');
    await expect(assertLogDirHolds(logDir, part)).resolves.toBe(logDir);
    await expect(assertLogDirHolds(other, part)).resolves.toBe(other);
    const stranger = await tmpDir('seglift-stranger-');
    await expect(assertLogDirHolds(stranger, part)).rejects.toThrow(LogDirUnknownError);
    await expect(assertLogDirHolds(stranger, part)).rejects.toThrow(/does not hold the partition/);
  });
});

needs(python3).describe('a linked partition beside a process holding the log dir lock (a broker)', () => {
  it('migrate and commitStage refuse: nothing changed in the directory the link leads to', async () => {
    const { logDir, other } = await linkedLogDir();
    const stageDir = path.join(path.dirname(logDir), 'stage');
    await prepareStage(logDir, { codec: 'zstd', mode: 'inline', stageDir });
    // A partition dir given as the log dir (through the link): it can be staged (one partition).
    const partStage = `${stageDir}-t-0`;
    const staged = await prepareStage(path.join(logDir, 't-0'), {
      codec: 'zstd',
      mode: 'inline',
      stageDir: partStage,
    });
    expect(staged.counts.staged).toBe(1);
    const holder = await pythonHolder(logDir);
    try {
      const before = await listing(other);
      await expect(migrate([logDir], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        refusal(logDir, holder.pid),
      );
      // A parent of both the log dir and the link's target: the log dir's lock is taken too.
      await expect(migrate([path.dirname(logDir)], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        refusal(logDir, holder.pid),
      );
      // The partition dir given through the link: its name's parent is the log dir.
      await expect(migrate([path.join(logDir, 't-0')], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        refusal(logDir, holder.pid),
      );
      await expect(commitStage(logDir, { codec: 'zstd', mode: 'inline', stageDir })).rejects.toThrow(
        refusal(logDir, holder.pid),
      );
      await expect(
        commitStage(path.join(logDir, 't-0'), { codec: 'zstd', mode: 'inline', stageDir: partStage }),
      ).rejects.toThrow(refusal(logDir, holder.pid));
      expect(await listing(other)).toEqual(before);
    } finally {
      await holder.stop();
    }
    // Free: the partition's commit swaps its staged segment in.
    const committed = await commitStage(path.join(logDir, 't-0'), {
      codec: 'zstd',
      mode: 'inline',
      stageDir: partStage,
    });
    expect(committed.counts.staged).toBe(1);
  });
});

/**
 * A broker's log dir `ld2` (with two partitions of legacy segments) and the links an operator
 * may name it through: `lk/idem-0 -> ld2/idem-0`, `lk/orders-0 -> ld2/orders-0` (symlinked
 * partitions) and `lkdir -> ld2` (a symlinked log dir).
 */
async function brokerBehindLinks(): Promise<{ ld2: string; lk: string; lkdir: string }> {
  const root = await tmpDir('seglift-behind-links-');
  const ld2 = path.join(root, 'ld2');
  for (const partition of ['idem-0', 'orders-0'])
    for (const base of [0n, 2000n])
      await writeSegment(ld2, mixedSegment(base, Number(base) + 7).bytes, base, partition);
  const lk = path.join(root, 'lk');
  mkdirSync(lk);
  for (const partition of ['idem-0', 'orders-0'])
    symlinkSync(path.join(ld2, partition), path.join(lk, partition));
  const lkdir = path.join(root, 'lkdir');
  symlinkSync(ld2, lkdir);
  return { ld2, lk, lkdir };
}

describe('logDirsGuarding', () => {
  it('the log dir a partition is named in and its real parent, each once by real path', async () => {
    const { ld2, lk, lkdir } = await brokerBehindLinks();
    expect(await logDirsGuarding(path.join(lk, 'idem-0'))).toEqual([lk, ld2]);
    expect(await logDirsGuarding(path.join(ld2, 'idem-0'))).toEqual([ld2]);
    // A symlinked log dir is the log dir it leads to: one .lock.
    expect(await logDirsGuarding(path.join(lkdir, 'idem-0'))).toEqual([lkdir]);
    // Named in other log dirs too (a job's claim): those, then the real parent.
    expect(await logDirsGuarding(path.join(ld2, 'idem-0'), [lk, lkdir])).toEqual([lk, lkdir]);
    // What the walker reports: the same rule.
    const seen: Array<[string, readonly string[]]> = [];
    await walkLogDirs([path.join(lk, 'orders-0')], (dir, _n, _l, all) => void seen.push([dir, all]));
    expect(seen).toEqual([[path.join(lk, 'orders-0'), [lk, ld2]]]);
  });
});

needs(python3).describe("a broker's log dir reached through a link (issue 32: its .lock held)", () => {
  it('migrate, the commit and tier-prepare refuse through a symlinked partition or log dir; nothing changed', async () => {
    const { ld2, lk, lkdir } = await brokerBehindLinks();
    const stageDir = path.join(path.dirname(ld2), 'stage');
    await prepareStage(lk, { codec: 'zstd', mode: 'inline', stageDir });
    const holder = await pythonHolder(ld2);
    try {
      const before = await listing(ld2);
      const options = { codec: 'zstd', mode: 'inline' } as const;
      for (const dir of [path.join(lk, 'orders-0'), lk, lkdir, path.join(lkdir, 'orders-0')])
        await expect(migrate([dir], options), dir).rejects.toThrow(
          dir.startsWith(lkdir) ? refusal(lkdir, holder.pid) : refusal(ld2, holder.pid),
        );
      await expect(commitStage(lk, { ...options, stageDir })).rejects.toThrow(refusal(ld2, holder.pid));
      await expect(prepareTiering(path.join(lk, 'idem-0'))).rejects.toThrow(refusal(ld2, holder.pid));
      await expect(prepareTiering(lk)).rejects.toThrow(refusal(ld2, holder.pid));
      expect(await listing(ld2)).toEqual(before);
    } finally {
      await holder.stop();
    }
    const free = await migrate([path.join(lk, 'orders-0')], { codec: 'zstd', mode: 'inline' });
    expect(free.summary).toMatchObject({ converted: 1, failed: 0 });
  });

  it('a partition moved to another disk and linked back: named through the link, or by its real location within the roots, the log dir holding the link refuses', async () => {
    // The broker runs on ld1; its partition t-0 now lives in disk2 (`ld1/t-0 -> disk2/t-0`).
    const { logDir: ld1, other: disk2 } = await linkedLogDir();
    const holder = await pythonHolder(ld1);
    try {
      const before = await listing(disk2);
      await expect(migrate([path.join(ld1, 't-0')], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        refusal(ld1, holder.pid),
      );
      // Its real location, named with the log dir it is linked from (a root above both, or a
      // worker's job: its logDir): that log dir's .lock is taken too.
      await expect(migrate([path.dirname(ld1)], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        refusal(ld1, holder.pid),
      );
      await expect(prepareTiering(path.dirname(ld1))).rejects.toThrow(refusal(ld1, holder.pid));
      // Named by its real location alone: with roots configured, their walk finds the link.
      const roots = [path.dirname(ld1)];
      await expect(
        migrate([path.join(disk2, 't-0')], { codec: 'zstd', mode: 'inline', roots }),
      ).rejects.toThrow(refusal(ld1, holder.pid));
      await expect(migrate([disk2], { codec: 'zstd', mode: 'inline', roots })).rejects.toThrow(
        refusal(ld1, holder.pid),
      );
      expect(await listing(disk2)).toEqual(before);
    } finally {
      await holder.stop();
    }
  });

  it('the real parent held (the link named in a free directory): the lock of each is taken, the held one refuses', async () => {
    const { logDir: lk, other: held } = await linkedLogDir();
    const holder = await pythonHolder(held);
    try {
      const before = await listing(held);
      await expect(migrate([lk], { codec: 'zstd', mode: 'inline' })).rejects.toThrow(
        refusal(held, holder.pid),
      );
      // The free one was given back.
      expect(logDirLockHolder(lk)).toBeUndefined();
      expect(await listing(held)).toEqual(before);
    } finally {
      await holder.stop();
    }
  });
});
