/**
 * recoverLeftovers and the partition checks before a swap: what is ours is completed, what is
 * Kafka's (or anybody else's) is never touched and stops the swap. The crash matrix is in
 * crash.test.ts; these are the states a crash alone does not make.
 */
import { readFile, rename, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from './convert.js';
import { recoverLeftovers } from './leftovers.js';
import { acquireSegmentLock } from './lock.js';
import { crashAfterOp, killLocks, stepOf } from './test-support/crash.js';
import { mixedSegment, tmpDir, writeSegment } from './test-support/fixtures.js';
import { ls, mtime, sha256 } from './test-support/helpers.js';
import { recoveryIndexes } from './test-support/independent.js';

const OLD = new Date('2018-01-02T03:04:05.000Z');
const BASE = '00000000000000000000';
const TXN = Buffer.alloc(34, 1);

async function setup() {
  const seg = mixedSegment();
  const dir = await tmpDir();
  const log = await writeSegment(dir, seg.bytes);
  const pdir = path.dirname(log);
  const idx = recoveryIndexes(seg.bytes, 0n);
  await writeFile(path.join(pdir, `${BASE}.index`), idx.index);
  await writeFile(path.join(pdir, `${BASE}.timeindex`), idx.timeindex);
  await writeFile(path.join(pdir, `${BASE}.txnindex`), TXN);
  await utimes(log, OLD, OLD);
  return { seg, dir, log, pdir };
}

/** Converts in place and crashes right after the named change (see stepOf). */
async function crashAt(log: string, step: string): Promise<void> {
  const run = await crashAfterOp(
    (op) => stepOf(op) === step,
    () => [convertSegment(log, { codec: 'zstd', inPlace: true })],
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
    const c = await convertSegment(log, { codec: 'zstd', inPlace: true });
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
    const c = await convertSegment(log, { codec: 'zstd', inPlace: true });
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
    const c = await convertSegment(log, { codec: 'zstd', inPlace: true });
    expect(c.error?.code).toBe('KAFKA_LEFTOVERS');
    expect((await recoverLeftovers(pdir)).foreignSwaps).toEqual(['00000000000000000300.index.swap']);
  });

  it('a lock held by a live run blocks a second conversion; a stale one is taken over', async () => {
    const { log } = await setup();
    const lock = await acquireSegmentLock(log);
    const r = await convertSegment(log, { codec: 'zstd', inPlace: true });
    expect(r.error?.code).toBe('LOCKED');
    expect(r.reason).toContain(`pid ${process.pid}`);
    await lock.release();
    await writeFile(
      `${log.slice(0, -4)}.log.seglift.lock`,
      JSON.stringify({ pid: 2 ** 22 + 7, host: os.hostname(), token: 't', startedAt: 'x' }),
    );
    expect((await convertSegment(log, { codec: 'zstd', inPlace: true })).result).toBe('converted');
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
    expect((await convertSegment(log, { codec: 'zstd', inPlace: true })).error?.code).toBe('KAFKA_LEFTOVERS');
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
