/**
 * recoverLeftovers and the partition checks before a swap: what is ours is completed, what is
 * Kafka's (or anybody else's) is never touched and stops the swap. The crash matrix is in
 * crash.test.ts; these are the states a crash alone does not make.
 */
import { execFileSync } from 'node:child_process';
import { appendFile, readFile, rename, rm, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { setMtimeNs } from '../files/libc.js';
import { convertSegment } from '../placements/convert.js';
import { crashAfterOp, killLocks, stepOf } from '../test-support/crash.js';
import { partition } from '../test-support/crash-partition.js';
import { mixedSegment, tmpDir, writeSegmentWithIndexes } from '../test-support/fixtures.js';
import { ls, mtime, recordFsOps, sha256 } from '../test-support/helpers.js';
import { type FsOp, observeFsOps } from '../test-support/seams.js';
import { recoverLeftovers } from './leftovers.js';
import { acquireSegmentLock, lockPathFor } from './lock.js';

const OLD = new Date('2018-01-02T03:04:05.000Z');
/** With a sub-millisecond part: recovery re-applies the mtime to the nanosecond. */
const OLD_NS = BigInt(OLD.getTime()) * 1_000_000n + 987_654n;
const BASE = '00000000000000000000';
const TXN = Buffer.alloc(34, 1);

async function setup() {
  const seg = mixedSegment();
  const dir = await tmpDir();
  const log = await writeSegmentWithIndexes(dir, seg.bytes);
  const pdir = path.dirname(log);
  await writeFile(path.join(pdir, `${BASE}.txnindex`), TXN);
  await utimes(log, OLD, OLD);
  setMtimeNs(log, OLD_NS);
  return { seg, dir, log, pdir };
}

/** Converts in place and crashes right after the named change (see stepOf). */
async function crashAt(log: string, step: string): Promise<void> {
  const run = await crashAfterOp(
    (op) => stepOf(op) === step,
    () => [convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' })],
  );
  expect(run.crashed).toBe(true);
  await killLocks(path.dirname(log));
}

describe('recoverLeftovers', () => {
  it('leaves foreign .swap files and locked segments alone, removes stale temp files', async () => {
    const { log, pdir } = await setup();
    await writeFile(path.join(pdir, `${BASE}.log.seglift-tmp`), 'x');
    await writeFile(path.join(pdir, '00000000000000000100.log.swap'), 'kafka');
    const lock = await acquireSegmentLock(path.join(pdir, '00000000000000000200.log'));
    await writeFile(path.join(pdir, '00000000000000000200.index.seglift-tmp'), 'y');
    const r = await recoverLeftovers(pdir);
    expect(r).toMatchObject({
      removed: [`${BASE}.log.seglift-tmp`],
      foreignSwaps: ['00000000000000000100.log.swap'],
      locked: ['00000000000000000200'],
    });
    await lock.release();
    expect((await recoverLeftovers(pdir)).removed).toEqual(['00000000000000000200.index.seglift-tmp']);
    // convertSegment refuses a partition with a Kafka swap in progress.
    const c = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(c.result).toBe('failed');
    expect(c.error?.code).toBe('KAFKA_LEFTOVERS');
    expect(c.reason).toContain('00000000000000000100.log.swap');
    expect(c.reason).toMatch(/start the broker once/);
  });

  it("a lock being written by a live run (its temp file half written) is not another run's to remove", async () => {
    const { pdir } = await setup();
    // Another process between writing its pending lock and linking it into place.
    const token = (n: number) => `0000000${n}-0000-4000-8000-000000000000`;
    const host = (await import('node:os')).hostname();
    const pending = path.join(
      pdir,
      `${BASE}.log.seglift.lock.${host}.${process.pid}.${token(1)}.seglift-tmp`,
    );
    const partitionPending = path.join(
      pdir,
      `seglift.partition.lock.${host}.${process.pid}.${token(2)}.seglift-tmp`,
    );
    for (const f of [pending, partitionPending]) await writeFile(f, '{"pid":');
    await recoverLeftovers(pdir);
    expect(await ls(pdir)).toEqual(
      expect.arrayContaining([path.basename(pending), path.basename(partitionPending)]),
    );
    // As old as a stale lock: nobody writes a lock that long; they go.
    const old = new Date(Date.now() - 3 * 60_000);
    for (const f of [pending, partitionPending]) await utimes(f, old, old);
    const r = await recoverLeftovers(pdir);
    expect(r.removed).toEqual(
      expect.arrayContaining([path.basename(pending), path.basename(partitionPending)]),
    );
  });

  it("a partition with Kafka's .cleaned files (an interrupted cleaner) is not swapped into", async () => {
    const { log, pdir } = await setup();
    const before = await sha256(log);
    await writeFile(path.join(pdir, `${BASE}.log.cleaned`), 'cleaner');
    const c = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(c.error?.code).toBe('KAFKA_LEFTOVERS');
    expect(c.reason).toContain(`${BASE}.log.cleaned`);
    expect(await sha256(log)).toBe(before);
    expect(await ls(pdir)).toEqual([
      `${BASE}.index`,
      `${BASE}.log`,
      `${BASE}.log.cleaned`,
      `${BASE}.timeindex`,
      `${BASE}.txnindex`,
    ]);
  });

  it('an orphan .index.swap (no marker) is foreign: the swap is refused', async () => {
    const { log, pdir } = await setup();
    await writeFile(path.join(pdir, '00000000000000000300.index.swap'), Buffer.alloc(8));
    const c = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(c.error?.code).toBe('KAFKA_LEFTOVERS');
    expect((await recoverLeftovers(pdir)).foreignSwaps).toEqual(['00000000000000000300.index.swap']);
  });

  it('a lock held by a live run blocks a second conversion; a stale one is taken over', async () => {
    const { log } = await setup();
    const lock = await acquireSegmentLock(log);
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.error?.code).toBe('LOCKED');
    expect(r.reason).toContain(`pid ${process.pid}`);
    await lock.release();
    await writeFile(
      `${log.slice(0, -4)}.log.seglift.lock`,
      JSON.stringify({ pid: 2 ** 22 + 7, host: os.hostname(), token: 't', startedAt: 'x' }),
    );
    expect((await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' })).result).toBe('converted');
  });

  it('a marker half written (under its temp name) is a temp file: removed, the original kept', async () => {
    const { log, pdir } = await setup();
    const before = await sha256(log);
    await crashAt(log, 'create .seglift-swap.seglift-tmp');
    const r = await recoverLeftovers(pdir);
    expect(r.completed).toEqual([]);
    expect(r.removed).toEqual(
      expect.arrayContaining([`${BASE}.seglift-swap.seglift-tmp`, `${BASE}.log.seglift-tmp`]),
    );
    expect(await sha256(log)).toBe(before);
    expect((await ls(pdir)).filter((n) => n.includes('seglift') && !n.endsWith('.lock'))).toEqual([]);
  });

  it('a corrupt marker is no marker: temp files go, swap files stay as foreign (the broker completes them)', async () => {
    const { log, pdir } = await setup();
    await crashAt(log, 'rename .log.swap');
    await writeFile(path.join(pdir, `${BASE}.seglift-swap`), '{"tool":"segl');
    const r = await recoverLeftovers(pdir);
    expect(r.completed).toEqual([]);
    expect(r.foreignSwaps).toEqual([`${BASE}.log.swap`, `${BASE}.timeindex.swap`, `${BASE}.txnindex.swap`]);
    expect(r.removed).toContain(`${BASE}.seglift-swap`);
    expect((await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' })).error?.code).toBe(
      'KAFKA_LEFTOVERS',
    );
  });

  it('a swap file of ours with another size than verified is left for an operator', async () => {
    const { log, pdir } = await setup();
    await crashAt(log, 'rename .log.swap');
    const swap = path.join(pdir, `${BASE}.log.swap`);
    await truncate(swap, (await stat(swap)).size - 10);
    await expect(recoverLeftovers(pdir)).rejects.toThrow(
      /bytes where .* were verified; everything is left as it is/,
    );
    expect(await ls(pdir)).toContain(`${BASE}.seglift-swap`);
    expect(await ls(pdir)).toContain(`${BASE}.log.swap`);
  });

  // The same check for each name a verified file of ours has before it is in place: under its temp
  // name (the original still in place) and as `.index.swap` (the new log beside it).
  for (const [step, file, change] of [
    ['rename .timeindex.swap', `${BASE}.log.seglift-tmp`, 'truncated'],
    ['rename .index.swap', `${BASE}.index.swap`, 'appended to'],
  ] as const) {
    it(`our ${file.slice(BASE.length)} ${change} after the marker: left for an operator, nothing renamed or deleted`, async () => {
      const { log, pdir } = await setup();
      await crashAt(log, step);
      const f = path.join(pdir, file);
      if (change === 'truncated') await truncate(f, (await stat(f)).size - 1);
      else await appendFile(f, Buffer.alloc(8));
      // (The crashed run's stale locks are taken over and go; everything else stays.)
      const files = async () => (await ls(pdir)).filter((n) => !n.includes('.lock'));
      const before = await files();
      const hashes = await Promise.all(before.map((n) => sha256(path.join(pdir, n))));
      await expect(recoverLeftovers(pdir)).rejects.toMatchObject({ file: f });
      await expect(recoverLeftovers(pdir)).rejects.toThrow(
        new RegExp(
          `${file.slice(BASE.length).replaceAll('.', '\\.')} of an interrupted swap has \\d+ bytes where \\d+ were verified`,
        ),
      );
      expect(await files()).toEqual(before);
      expect(await Promise.all(before.map((n) => sha256(path.join(pdir, n))))).toEqual(hashes);
      // A conversion refuses too, before touching anything.
      expect((await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' })).result).not.toBe(
        'converted',
      );
      expect(await files()).toEqual(before);
    });
  }

  it("converting one segment first completes another segment's crashed swap, whose lock is gone", async () => {
    const part = await partition();
    const [a, b] = part.prefixes.map((p) => path.join(part.pdir, `${p}.log`));
    await crashAt(b, 'rename .log.swap');
    // The crashed run's segment lock went too (an operator removed it): no lock, no holder.
    await rm(lockPathFor(b));
    const r = await convertSegment(a, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.result).toBe('converted');
    const names = await ls(part.pdir);
    expect(names.filter((n) => n.endsWith('.swap') || n.includes('seglift-'))).toEqual([]);
    expect((await convertSegment(b, { codec: 'zstd' }, { kind: 'inPlace' })).reason).toMatch(/already/);
  });

  it('a crash right after each step of the swap: recovery ends with the verified conversion in place', async () => {
    // What an uncrashed conversion of the same segment leaves.
    const clean = await setup();
    expect((await convertSegment(clean.log, { codec: 'zstd' }, { kind: 'inPlace' })).result).toBe(
      'converted',
    );
    const expected = Object.fromEntries(
      await Promise.all(
        (await ls(clean.pdir)).map(async (n) => [n, await sha256(path.join(clean.pdir, n))] as const),
      ),
    );
    const steps = [
      'rename .seglift-swap',
      'rename .txnindex.swap',
      'unlink .index',
      'rename .timeindex.swap',
      'rename .log.swap',
      'rename .index.swap',
      'rename .log',
      'rename .timeindex',
      'rename .index',
      'rename .txnindex',
    ];
    for (const step of steps) {
      const { log, pdir } = await setup();
      await crashAt(log, step);
      const r = await recoverLeftovers(pdir);
      expect(r, step).toMatchObject({ completed: [BASE], abandoned: [], foreignSwaps: [] });
      const now = Object.fromEntries(
        await Promise.all(
          (await ls(pdir))
            .filter((n) => !n.endsWith('.lock'))
            .map(async (n) => [n, await sha256(path.join(pdir, n))] as const),
        ),
      );
      // (The crashed run's stale segment lock stays until the next run takes it over.)
      expect(now, step).toEqual(expected);
      expect(await mtime(log), step).toBe(OLD_NS);
    }
  });

  it('a swap under temp names is given up when the original changed, an index of ours is gone, or a copy is not ours', async () => {
    const cases: [string, (pdir: string, log: string) => Promise<void>][] = [
      [
        'the original log rewritten (a cleaner)',
        async (_, log) => {
          await writeFile(`${log}.cleaner`, await readFile(log));
          await rename(`${log}.cleaner`, log);
        },
      ],
      ['our .index gone', (pdir) => rm(path.join(pdir, `${BASE}.index.seglift-tmp`))],
      ['our .timeindex gone', (pdir) => rm(path.join(pdir, `${BASE}.timeindex.seglift-tmp`))],
      [
        'a .txnindex.swap that is not our copy',
        (pdir) => writeFile(path.join(pdir, `${BASE}.txnindex.swap`), Buffer.alloc(68, 7)),
      ],
    ];
    for (const [what, change] of cases) {
      const { log, pdir } = await setup();
      const before = await sha256(log);
      await crashAt(log, 'rename .txnindex.swap');
      await change(pdir, log);
      const logNow = await sha256(log);
      const r = await recoverLeftovers(pdir);
      expect(r, what).toMatchObject({ completed: [], abandoned: [BASE] });
      expect(await sha256(log), what).toBe(logNow);
      const left = (await ls(pdir)).filter((n) => n.includes('seglift') && !n.includes('.lock'));
      expect(left, what).toEqual([]);
      if (what.startsWith('our')) expect(logNow).toBe(before);
    }
  });

  it("a .swap file under one of our names with another inode is somebody else's: not checked, renamed or deleted", async () => {
    const { log, pdir } = await setup();
    await crashAt(log, 'rename .txnindex');
    const theirs = Buffer.alloc(24, 9);
    await writeFile(path.join(pdir, `${BASE}.index.swap`), theirs);
    const r = await recoverLeftovers(pdir);
    expect(r).toMatchObject({ completed: [BASE], foreignSwaps: [`${BASE}.index.swap`] });
    expect(await readFile(path.join(pdir, `${BASE}.index.swap`))).toEqual(theirs);
  });

  it('a marker left after the renames re-applies the mtime only while the .log is the file seglift wrote', async () => {
    const { log, pdir } = await setup();
    // Crash after the last rename, before the marker is removed: a broker started then ignores
    // the marker, and its cleaner may rewrite the segment (a new file under the same name).
    await crashAt(log, 'rename .txnindex');
    const cleaned = Buffer.from(await readFile(log));
    await writeFile(`${log}.cleaner`, cleaned);
    await rename(`${log}.cleaner`, log);
    const now = await mtime(log);
    const r = await recoverLeftovers(pdir);
    expect(r.abandoned).toEqual([BASE]);
    expect(await mtime(log)).toBe(now);
    expect(await ls(pdir)).not.toContain(`${BASE}.seglift-swap`);
  });

  it("a .txnindex.swap of Kafka's cleaner under a name the marker lists is not ours: never deleted", async () => {
    const { log, pdir } = await setup();
    // Crash with our swap under temp names (before step 5): the original is still in place.
    await crashAt(log, 'rename .timeindex.swap');
    // Our copy of the .txnindex was renamed by a broker start; its cleaner then left its own.
    const kafkas = Buffer.alloc(68, 7);
    await writeFile(path.join(pdir, `${BASE}.txnindex.swap`), kafkas);
    const r = await recoverLeftovers(pdir);
    expect(r.foreignSwaps).toContain(`${BASE}.txnindex.swap`);
    expect(await readFile(path.join(pdir, `${BASE}.txnindex.swap`))).toEqual(kafkas);
  });
});

describe('recoverLeftovers: locks, scope, durability', () => {
  const live = () => JSON.stringify({ pid: process.pid, host: os.hostname(), token: 'live', startedAt: '' });

  it('takes the partition lock only with a swap to complete (or a stale partition lock to clear)', async () => {
    const { log, pdir } = await setup();
    const partitionLock = path.join(pdir, 'seglift.partition.lock');
    const aborted = AbortSignal.abort();
    // Another run swaps right now: recovery with nothing to complete does not wait for it.
    await writeFile(partitionLock, live());
    await writeFile(path.join(pdir, `${BASE}.log.seglift-tmp`), 'x');
    expect((await recoverLeftovers(pdir, { signal: aborted })).removed).toEqual([`${BASE}.log.seglift-tmp`]);
    // A swap to complete: it waits for the partition lock (here: until aborted), touching nothing.
    await rm(partitionLock);
    await crashAt(log, 'rename .log.swap');
    await writeFile(partitionLock, live());
    const before = await ls(pdir);
    await expect(recoverLeftovers(pdir, { signal: aborted })).rejects.toThrow(/abort/i);
    expect(await ls(pdir)).toEqual(before);
    // ... unless the swap is another segment's and only this one is asked for.
    expect((await recoverLeftovers(pdir, { signal: aborted, baseOffset: 100n })).completed).toEqual([]);
    expect(await ls(pdir)).toEqual(before);
    // A stale partition lock (a dead run on this host) is cleared even with nothing else to do.
    await rm(partitionLock);
    const done = await recoverLeftovers(pdir);
    expect(done.completed).toEqual([BASE]);
    await writeFile(
      partitionLock,
      JSON.stringify({ pid: 2 ** 22 + 11, host: os.hostname(), token: 'd', startedAt: '' }),
    );
    await recoverLeftovers(pdir);
    expect(await ls(pdir)).not.toContain('seglift.partition.lock');
  });

  it('only the segment asked for; a live lock temp of the partition and unlocked segments without leftovers are not touched', async () => {
    const { pdir } = await setup();
    await writeFile(path.join(pdir, `${BASE}.log.seglift-tmp`), 'x');
    await writeFile(path.join(pdir, '00000000000000000100.log.seglift-tmp'), 'y');
    const pending = `seglift.partition.lock.${os.hostname()}.${process.pid}.0f8fad5b-d9cb-469f-a165-70867728950e.seglift-tmp`;
    await writeFile(path.join(pdir, pending), '{"pid":');
    const held = await acquireSegmentLock(path.join(pdir, '00000000000000000200.log'));
    const r = await recoverLeftovers(pdir, { baseOffset: 100n });
    expect(r).toMatchObject({ removed: ['00000000000000000100.log.seglift-tmp'], locked: [] });
    expect(await ls(pdir)).toEqual(expect.arrayContaining([`${BASE}.log.seglift-tmp`, pending]));
    await held.release();
  });

  it("a locked segment's swap files are its own, not foreign", async () => {
    const { log, pdir } = await setup();
    const run = await crashAfterOp(
      (op) => stepOf(op) === 'rename .log.swap',
      () => [convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' })],
    );
    expect(run.crashed).toBe(true);
    // The segment lock names this (live) process: the run that holds it is still going (between
    // two swaps: it holds no partition lock).
    await rm(path.join(pdir, 'seglift.partition.lock'));
    const r = await recoverLeftovers(pdir);
    expect(r).toMatchObject({ locked: [BASE], foreignSwaps: [], completed: [] });
  });

  it('a recovery that changed the directory fsyncs it last; one with nothing to do changes nothing', async () => {
    const { pdir } = await setup();
    const ops: FsOp[] = [];
    const stop = observeFsOps((op) => ops.push(op));
    try {
      await recoverLeftovers(pdir);
      expect(ops).toEqual([]);
      await writeFile(path.join(pdir, `${BASE}.log.seglift-tmp`), 'x');
      await recoverLeftovers(pdir);
      expect(ops.map((op) => op.kind)).toEqual(['unlink', 'fsync-dir']);
    } finally {
      stop();
    }
  });

  it('Kafka leftovers stop a conversion before any work; one appearing before the swap stops the swap', async () => {
    const { log, pdir } = await setup();
    const cleaned = path.join(pdir, `${BASE}.log.cleaned`);
    await writeFile(cleaned, 'kafka');
    const { result: r, ops } = await recordFsOps(() =>
      convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' }),
    );
    expect(r.error?.code).toBe('KAFKA_LEFTOVERS');
    expect(r.reason).toMatch(/start the broker once and stop it cleanly/);
    expect(ops.filter((op) => /\.(log|index|timeindex)\.seglift-tmp$/.test(op.path))).toEqual([]);
    await rm(cleaned);
    const late = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace' },
      { beforeVerify: () => writeFile(cleaned, 'kafka') },
    );
    expect(late.error?.code).toBe('KAFKA_LEFTOVERS');
    expect(late.reason).toMatch(/deletes segment files by offset range/);
    expect((await ls(pdir)).filter((n) => n.includes('seglift') && !n.endsWith('.lock'))).toEqual([]);
  });

  it("another segment's unfinished swap (its run alive) stops this swap", async () => {
    const { log, pdir } = await setup();
    const other = path.join(pdir, '00000000000000000100.log');
    let held: Awaited<ReturnType<typeof acquireSegmentLock>> | undefined;
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace' },
      {
        beforeVerify: async () => {
          held = await acquireSegmentLock(other);
          await writeFile(path.join(pdir, '00000000000000000100.seglift-swap'), '{}');
        },
      },
    );
    expect(r.error?.code).toBe('LOCKED');
    expect(r.reason).toMatch(
      /another run's swap in this partition is unfinished \(00000000000000000100\.seglift-swap\)/,
    );
    await held?.release();
  });

  it('a conversion waiting for the partition lock stops when aborted', async () => {
    const { log, pdir } = await setup();
    await writeFile(path.join(pdir, 'seglift.partition.lock'), live());
    const abort = new AbortController();
    // Aborted once the segment lock is taken: the wait for the partition lock is what it stops.
    const stop = observeFsOps((op) => {
      if (op.kind === 'link' && op.path.endsWith('.log.seglift.lock')) abort.abort();
    });
    try {
      const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' }, { signal: abort.signal });
      expect(r.aborted).toBe(true);
    } finally {
      stop();
    }
  });
});

describe('the refusals of a partition a broker would still have to complete, word for word', () => {
  const P100 = '00000000000000000100';
  const P300 = '00000000000000000300';
  const refusal = (files: string, atSwap: boolean) =>
    atSwap
      ? `partition holds files of an interrupted Kafka operation (${files}): a broker completing them deletes segment files by offset range, so nothing is swapped in beside them; start the broker once and stop it cleanly to let it finish them, then run seglift again`
      : `partition holds files of an interrupted Kafka operation (${files}); start the broker once and stop it cleanly to let it finish them, then run seglift again`;

  /** Converts in place with `appear` run after the conversion is written, before it is verified and swapped. */
  async function convertWith(appear?: (pdir: string) => Promise<unknown>) {
    const { log, pdir } = await setup();
    const before = await sha256(log);
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace' },
      { beforeVerify: appear ? () => appear(pdir).then(() => undefined) : undefined },
    );
    expect(await sha256(log)).toBe(before);
    // Nothing of this segment's conversion is left (another run's files are its own).
    expect((await ls(pdir)).filter((n) => n.startsWith(BASE) && n.includes('seglift'))).toEqual([]);
    return { r, pdir };
  }

  it("before converting: other segments' Kafka .swap files alone are refused, each named", async () => {
    const { log, pdir } = await setup();
    await writeFile(path.join(pdir, `${P300}.index.swap`), Buffer.alloc(8));
    await writeFile(path.join(pdir, `${P100}.index.swap`), Buffer.alloc(8));
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.error).toEqual({
      name: 'KafkaLeftoversError',
      code: 'KAFKA_LEFTOVERS',
      message: refusal(`${P100}.index.swap, ${P300}.index.swap`, false),
      file: pdir,
      position: undefined,
      offset: undefined,
    });
  });

  it('right before the swap: a .cleaned file and a .swap file that appeared during the conversion are refused, both named', async () => {
    const { r, pdir } = await convertWith(async (d) => {
      await writeFile(path.join(d, `${P100}.log.swap`), 'kafka');
      await writeFile(path.join(d, `${BASE}.log.cleaned`), 'kafka');
    });
    expect(r.error).toMatchObject({
      code: 'KAFKA_LEFTOVERS',
      message: refusal(`${BASE}.log.cleaned, ${P100}.log.swap`, true),
      file: pdir,
    });
  });

  it('right before the swap: a lone .swap file of another segment is refused too', async () => {
    const { r } = await convertWith((d) => writeFile(path.join(d, `${P100}.log.swap`), 'kafka'));
    expect(r.error).toMatchObject({ code: 'KAFKA_LEFTOVERS', message: refusal(`${P100}.log.swap`, true) });
  });

  it("right before the swap: other runs' unfinished swaps in the partition (their segments locked) are refused", async () => {
    const others: Awaited<ReturnType<typeof acquireSegmentLock>>[] = [];
    const { r, pdir } = await convertWith(async (d) => {
      for (const p of [P300, P100]) {
        others.push(await acquireSegmentLock(path.join(d, `${p}.log`)));
        await writeFile(path.join(d, `${p}.seglift-swap`), '{}');
      }
    });
    for (const o of others) await o.release();
    expect(r.error).toMatchObject({
      code: 'LOCKED',
      message: `another run's swap in this partition is unfinished (${P100}.seglift-swap, ${P300}.seglift-swap); retry when it is done`,
      file: pdir,
    });
  });
});

describe('hostile files where seglift keeps its own (issue 32)', () => {
  it('a FIFO in place of a swap marker or a segment lock never hangs a conversion in place', async () => {
    const { log, pdir } = await setup();
    execFileSync('mkfifo', [path.join(pdir, `${BASE}.seglift-swap`)]);
    // The marker is unreadable, so not ours: nothing of it is acted on, and recovery ends.
    const report = await recoverLeftovers(pdir);
    expect(report.completed).toEqual([]);
    await rm(path.join(pdir, `${BASE}.seglift-swap`), { force: true });
    execFileSync('mkfifo', [lockPathFor(log)]);
    const started = Date.now();
    await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' }).catch(() => undefined);
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 20_000);
});
