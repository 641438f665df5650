/**
 * Two-phase migration (two-phase.ts, stage.ts): prepare while a "broker" keeps changing the log
 * dir (a writer appending to the active segment and rolling new ones, retention deleting the
 * oldest segment, the cleaner replacing one), top-up, more changes, then commit: every segment
 * holds exactly the records of its source as it was at commit time, deleted ones stay deleted,
 * the active segment is untouched, and prepare never changed anything in the log dir.
 * Crashes of a commit: two-phase-crash.test.ts.
 */
import { appendFileSync, readdirSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { StageDirError } from '../files/errors.js';
import { isInside } from '../safety/roots.js';
import { openStageDir, readStageRecord } from '../stage/stage.js';
import { mixedSegment, tmpDir, v2Batch } from '../test-support/fixtures.js';
import { ls, sha256 } from '../test-support/helpers.js';
import { independentRecords, recoveryIndexes } from '../test-support/independent.js';
import { type FsOp, observeFsOps } from '../test-support/seams.js';
import { commitStage, prepareStage } from './two-phase.js';

const prefix = (base: bigint) => base.toString().padStart(20, '0');

/** A partition the test plays the broker of: rolled segments and an active one it appends to. */
class Partition {
  next = 0n;
  active = 0n;
  constructor(readonly dir: string) {}

  static async create(dir: string, rolled: number, seed: number): Promise<Partition> {
    await mkdir(dir, { recursive: true });
    const p = new Partition(dir);
    for (let s = 0; s < rolled; s++) {
      const seg = mixedSegment(p.next, seed + s);
      p.writeSegment(p.next, seg.bytes);
      p.next = seg.lastOffset + 1n;
    }
    p.roll();
    p.append(3);
    return p;
  }

  log(base: bigint): string {
    return path.join(this.dir, `${prefix(base)}.log`);
  }

  /** A segment with the indexes Kafka's recovery builds. */
  writeSegment(base: bigint, bytes: Uint8Array): void {
    const idx = recoveryIndexes(Buffer.from(bytes), base);
    writeFileSync(this.log(base), bytes);
    writeFileSync(path.join(this.dir, `${prefix(base)}.index`), idx.index);
    writeFileSync(path.join(this.dir, `${prefix(base)}.timeindex`), idx.timeindex);
  }

  /** The writer: records appended to the active segment. */
  append(n: number): void {
    const values = Array.from({ length: n }, (_, i) => Buffer.from(`live ${this.next + BigInt(i)}`));
    appendFileSync(this.log(this.active), v2Batch(this.next, values, 0));
    this.next += BigInt(n);
  }

  /** A new active segment (LocalLog.roll): the old one is never appended to again. */
  roll(): void {
    this.active = this.next;
    writeFileSync(this.log(this.active), '');
  }

  /** Retention: the oldest segment's files renamed `.deleted`, then removed. */
  deleteOldest(): bigint {
    const bases = this.bases();
    const base = bases[0];
    for (const s of ['.log', '.index', '.timeindex']) {
      const f = path.join(this.dir, prefix(base) + s);
      renameSync(f, `${f}.deleted`);
      unlinkSync(`${f}.deleted`);
    }
    return base;
  }

  /** The cleaner: a new file of the same base offset, through `.cleaned` and `.swap`. */
  compact(base: bigint, seed: number): void {
    const seg = mixedSegment(base, seed);
    const idx = recoveryIndexes(seg.bytes, base);
    for (const [s, bytes] of [
      ['.log', seg.bytes],
      ['.index', idx.index],
      ['.timeindex', idx.timeindex],
    ] as const) {
      const f = path.join(this.dir, prefix(base) + s);
      writeFileSync(`${f}.cleaned`, bytes);
      renameSync(`${f}.cleaned`, `${f}.swap`);
      renameSync(`${f}.swap`, f);
    }
  }

  bases(): bigint[] {
    return readdirSync(this.dir)
      .filter((n) => /^\d{20}\.log$/.test(n))
      .map((n) => BigInt(n.slice(0, 20)))
      .sort((a, b) => (a < b ? -1 : 1));
  }
}

/** The records each segment of the partitions holds now. */
async function recordsNow(parts: Partition[]) {
  const out = new Map<string, Awaited<ReturnType<typeof independentRecords>>>();
  for (const p of parts) {
    for (const base of p.bases()) out.set(p.log(base), await independentRecords(await readFile(p.log(base))));
  }
  return out;
}

describe('two-phase migration', () => {
  it('prepare beside a live writer, retention and the cleaner; top-up; commit as of commit time', async () => {
    const root = await tmpDir('seglift-two-phase-');
    const logDir = path.join(root, 'kafka-logs');
    const stageDir = path.join(root, 'stage');
    const p0 = await Partition.create(path.join(logDir, 'orders-0'), 4, 10);
    const p1 = await Partition.create(path.join(logDir, 'orders-1'), 2, 20);
    const [s0, s1, s2, s3] = p0.bases();
    // The active segment now: the writer rolls during prepare, so it is staged only by the top-up.
    const s4 = p0.active;
    const options = { codec: 'zstd' as const, stageDir, mode: 'inline' as const };

    // Prepare 1, while the "broker" acts at chosen instants of it.
    const ops: FsOp[] = [];
    let tmpLogs = 0;
    let replacedMidRead = false;
    const stop = observeFsOps((op) => {
      ops.push(op);
      if (op.kind !== 'create' || !op.path.endsWith('.log.seglift-tmp')) return;
      tmpLogs++;
      // Each staging: the writer appends; at the second it rolls a new segment.
      p0.append(2);
      if (tmpLogs === 2) p0.roll();
      // Segment 1 is replaced by the cleaner while it is read.
      if (path.basename(op.path).startsWith(prefix(s1))) {
        replacedMidRead = true;
        p0.compact(s1, 99);
      }
    });
    let first: Awaited<ReturnType<typeof prepareStage>>;
    try {
      first = await prepareStage(logDir, options);
    } finally {
      stop();
    }
    expect(replacedMidRead).toBe(true);
    // Nothing in the log dir was changed by prepare.
    expect(ops.filter((o) => isInside(o.path, logDir) || (o.from && isInside(o.from, logDir)))).toEqual([]);
    expect((await ls(path.join(logDir, 'orders-0'))).filter((n) => n.includes('seglift'))).toEqual([]);
    const byPath = new Map(first.reports.map((r) => [r.path, r]));
    expect(byPath.get(p0.log(s1))?.stage).toBe('changed');
    expect(await readStageRecord(path.join(stageDir, 'orders-0'), s1)).toBeUndefined();
    expect(byPath.get(p0.log(s0))?.stage).toBe('staged');
    expect(first.counts).toMatchObject({ staged: 5, changed: 1, alreadyStaged: 0 });
    // The record names the source and its full digest.
    const rec = (await readStageRecord(path.join(stageDir, 'orders-0'), s0))!;
    expect(rec.source.sha256).toBe(await sha256(p0.log(s0)));
    expect(rec.source.ino).toBe(String((await stat(p0.log(s0), { bigint: true })).ino));
    expect(rec.files?.['.log'].sha256).toBe(
      await sha256(path.join(stageDir, 'orders-0', `${prefix(s0)}.log`)),
    );

    // Between the runs: retention takes segment 0, the cleaner rewrites segment 2.
    expect(p0.deleteOldest()).toBe(s0);
    p0.compact(s2, 77);
    const second = await prepareStage(logDir, options);
    const again = new Map(second.reports.map((r) => [r.path, r]));
    expect(again.get(p0.log(s3))?.reason).toBe('already-staged');
    expect(again.get(p0.log(s1))?.stage).toBe('staged');
    expect(again.get(p0.log(s2))?.stage).toBe('staged');
    expect(again.get(p0.log(s4))?.stage).toBe('staged');
    // Segment 0's record (source gone) and segment 2's (replaced) were removed.
    expect(second.counts).toMatchObject({ staged: 3, alreadyStaged: 3, discarded: 2 });
    expect(await readStageRecord(path.join(stageDir, 'orders-0'), s0)).toBeUndefined();

    // After the top-up: retention takes segment 1, the cleaner rewrites segment 3, and the writer
    // rolls once more (segment 5 was never staged). Then the broker stops.
    expect(p0.deleteOldest()).toBe(s1);
    p0.compact(s3, 55);
    const s5 = p0.active;
    p0.append(4);
    p0.roll();
    p0.append(1);
    const expected = await recordsNow([p0, p1]);
    const activeSha = await sha256(p0.log(p0.active));

    const commit = await commitStage(logDir, { codec: 'zstd', stageDir, mode: 'inline' });
    expect(commit.counts).toEqual({
      staged: 4,
      convertedAtCommit: 2,
      discarded: 2,
      failedCheck: 0,
      alreadyStaged: 0,
      changed: 0,
    });
    const done = new Map(commit.reports.map((r) => [r.path, r]));
    expect(done.get(p0.log(s3))?.stage).toBe('discarded');
    expect(done.get(p0.log(s3))?.result).toBe('converted');
    expect(done.get(p0.log(s5))?.result).toBe('converted');
    expect(done.get(p0.log(s2))?.stage).toBe('committed');
    expect(commit.summary.failed).toBe(0);
    // Exactly the records of each source as it was at commit time; deleted ones stay deleted.
    expect(await recordsNow([p0, p1])).toEqual(expected);
    expect(p0.bases()).toEqual([s2, s3, s4, s5, p0.active]);
    expect(await sha256(p0.log(p0.active))).toBe(activeSha);
    for (const p of [p0, p1]) {
      for (const base of p.bases().slice(0, -1)) {
        const log = await readFile(p.log(base));
        expect(log[16]).toBe(2);
        const idx = recoveryIndexes(log, base);
        expect(await readFile(path.join(p.dir, `${prefix(base)}.index`))).toEqual(idx.index);
        expect(await readFile(path.join(p.dir, `${prefix(base)}.timeindex`))).toEqual(idx.timeindex);
      }
      expect((await ls(p.dir)).filter((n) => !/^\d{20}\.(log|index|timeindex)$/.test(n))).toEqual([]);
    }
    // The stage holds nothing but its marker and empty partition dirs.
    const left: string[] = [];
    for (const d of await readdir(stageDir, { recursive: true, withFileTypes: true }))
      if (d.isFile()) left.push(d.name);
    expect(left).toEqual(['.seglift-stage']);

    // A second commit has nothing to do.
    const rerun = await commitStage(logDir, { codec: 'zstd', stageDir, mode: 'inline' });
    expect(rerun.summary.converted).toBe(0);
    expect(rerun.summary.failed).toBe(0);
    expect(await recordsNow([p0, p1])).toEqual(expected);
  }, 60_000);

  it("commit: each partition's lock taken once over its run of swaps, which never overlap", async () => {
    const root = await tmpDir('seglift-two-phase-locks-');
    const logDir = path.join(root, 'logs');
    const stageDir = path.join(root, 'stage');
    const parts = [
      await Partition.create(path.join(logDir, 'orders-0'), 3, 10),
      await Partition.create(path.join(logDir, 'orders-1'), 3, 20),
    ];
    const expected = await recordsNow(parts);
    await prepareStage(logDir, { codec: 'zstd', stageDir, mode: 'inline' });
    const ops: FsOp[] = [];
    const stop = observeFsOps((op) => ops.push(op));
    let commit: Awaited<ReturnType<typeof commitStage>>;
    try {
      commit = await commitStage(logDir, { codec: 'zstd', stageDir });
    } finally {
      stop();
    }
    expect(commit.counts.staged).toBe(6);
    expect(commit.summary.failed).toBe(0);
    expect(await recordsNow(parts)).toEqual(expected);
    for (const p of parts) {
      const lockTaken = ops.filter(
        (o) => o.kind === 'link' && o.path === path.join(p.dir, 'seglift.partition.lock'),
      );
      expect(lockTaken).toHaveLength(1);
      // One segment mid-swap at a time: a marker is removed before the next one is written.
      let swapping = 0;
      for (const o of ops) {
        if (path.dirname(o.path) !== p.dir || !o.path.endsWith('.seglift-swap')) continue;
        swapping += o.kind === 'rename' ? 1 : o.kind === 'unlink' ? -1 : 0;
        expect(swapping).toBeLessThanOrEqual(1);
      }
      expect(swapping).toBe(0);
      expect((await ls(p.dir)).filter((n) => !/^\d{20}\.(log|index|timeindex)$/.test(n))).toEqual([]);
    }
  }, 60_000);

  it('stage dir: same filesystem, outside the log dir, empty or marked', async () => {
    const root = await tmpDir('seglift-stage-dir-');
    const logDir = path.join(root, 'kafka-logs');
    await mkdir(path.join(logDir, 'orders-0'), { recursive: true });
    await expect(openStageDir(path.join(logDir, 'stage'), logDir, true)).rejects.toThrow(StageDirError);
    await expect(openStageDir(root, logDir, true)).rejects.toThrow(/contains the log dir/);
    const other = path.join(root, 'other');
    await mkdir(other);
    await writeFile(path.join(other, 'x'), 'x');
    await expect(openStageDir(other, logDir, true)).rejects.toThrow(/not a seglift stage dir/);
    await expect(openStageDir(path.join(root, 'none'), logDir, false)).rejects.toThrow(/run --prepare first/);
    const ok = await openStageDir(path.join(root, 'stage'), logDir, true);
    expect(await ls(ok.root)).toEqual(['.seglift-stage']);
    // Reused: marked.
    await openStageDir(path.join(root, 'stage'), logDir, true);
    // Another filesystem, where this machine has one (/dev/shm is a tmpfs on Linux).
    const shm = '/dev/shm';
    const otherFs = await stat(shm).then(
      async (st) => st.dev !== (await stat(os.tmpdir())).dev,
      () => false,
    );
    if (otherFs) {
      await expect(
        openStageDir(path.join(shm, `seglift-stage-${process.pid}`), logDir, true),
      ).rejects.toThrow(/another filesystem/);
    }
  });
});
