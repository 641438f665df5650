/**
 * Two-phase migration (stage.ts has the stage dir and the identity rules):
 * - `prepareStage`, broker running: every ready (rolled, non-active) segment is converted and
 *   verified into the stage dir; nothing in the log dir is written, renamed or locked. A rerun
 *   tops the stage up: segments staged from the file still in place are skipped, stale ones
 *   (source replaced, deleted, other options) removed and staged again where the source exists.
 * - `commitStage`, broker stopped: every eligible segment (migrate's plan) in place, with
 *   `fromStage`: a staged segment still matching its source, whose files still hash to the
 *   record's sha256, is linked in and swapped with swap.ts's protocol (in this thread: no codec
 *   work), a stale or corrupt one is discarded and the segment converted as usual (the pool; a
 *   corrupt one found in this thread is converted here), as is every segment with nothing staged.
 *   Staged segments whose source is gone are discarded, never brought back.
 */

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { SegmentFile } from '../discovery/discovery.js';
import { findReadySegments, readinessRules } from '../discovery/readiness.js';
import { exists } from '../files/fs-util.js';
import { removeIfExists } from '../files/fsops.js';
import { lowerPriority, prepareNice } from '../files/io-courtesy.js';
import { SegmentFiles, STAGE_LOCK_NAME } from '../files/names.js';
import { emptyReport, type SegmentReport, summarize } from '../rewrite/report.js';
import { assertBackupDirOutside } from '../safety/backup.js';
import { acquireFileLock, isStaleLockTemp, PartitionLocks } from '../safety/lock.js';
import { holdLogDirLock, holdLogDirLocks } from '../safety/logdir-lock.js';
import {
  discardStaged,
  openStageDir,
  readStageRecord,
  type StageDir,
  sameIdentity,
  sourceIdentity,
  sourcePartitionDir,
  stageable,
  stagedBases,
  stageOptionsKey,
  stagePartitionDir,
  stagePartitionDirs,
  staleReason,
} from '../stage/stage.js';
import { hostLimits } from './host.js';
import { type MigrateOptions, type MigrateResult, plan, runConversions } from './migrate.js';

export interface TwoPhaseOptions extends Omit<MigrateOptions, 'backupDir'> {
  /** The stage directory (same filesystem as the log dir, outside it). */
  stageDir: string;
  /** Commit only: copy the originals to backupDir/<partition>/ before each swap. */
  backupDir?: string;
  /**
   * Prepare only: lower this process's CPU and I/O priority first (nice 10, best-effort 6:
   * io-courtesy.ts). Default: prepare.nice (setPrepareNice), true.
   */
  nice?: boolean;
}

export interface StageCounts {
  /** Prepare: staged now. Commit: swapped in from the stage. */
  staged: number;
  /** Prepare: already staged from the file still in place (skipped). */
  alreadyStaged: number;
  /** Prepare: sources replaced or deleted while they were read (nothing staged for them). */
  changed: number;
  /** Staged segments removed: source gone, replaced, staged with other options, or corrupt. */
  discarded: number;
  /**
   * Commit: staged segments whose files failed their check (not the bytes prepare wrote and
   * verified): discarded (counted there too) and converted at commit.
   */
  failedCheck: number;
  /** Commit: segments converted now (nothing staged, or a stale stage). */
  convertedAtCommit: number;
}

export interface TwoPhaseResult extends MigrateResult {
  stage: StageDir;
  counts: StageCounts;
}

/**
 * One prepare or commit per stage dir at a time: each removes staged files it finds unfinished,
 * which would be another run's work in progress.
 */
async function withStageLock<T>(stage: StageDir, run: () => Promise<T>): Promise<T> {
  const lock = await acquireFileLock(path.join(stage.root, STAGE_LOCK_NAME), 'stage dir');
  try {
    // Temp files of a dead run's lock taking (recoverLeftovers' rule for partition locks).
    for (const n of await readdir(stage.root)) {
      const p = path.join(stage.root, n);
      if (n.startsWith(`${STAGE_LOCK_NAME}.`) && (await isStaleLockTemp(p))) await removeIfExists(p);
    }
    return await run();
  } finally {
    await lock.release().catch(() => {});
  }
}

/**
 * Partitions swapped in from the stage at once, in this thread: a swap mostly waits on directory
 * fsyncs (one partition's swaps take turns at its lock), so more partitions than cores overlap
 * those waits; bounded, so that open files and the disk's queue stay small.
 */
const COMMIT_LANES = 16;

function counts(): StageCounts {
  return { staged: 0, alreadyStaged: 0, changed: 0, discarded: 0, failedCheck: 0, convertedAtCommit: 0 };
}

/**
 * Removes what the stage holds for sources that no longer exist, and unfinished staged files
 * (no record: an interrupted prepare). Returns how many staged segments were removed.
 */
async function pruneStage(stage: StageDir): Promise<number> {
  let removed = 0;
  // Partitions at once (each its own stage directory): thousands of small ones are reads mostly.
  await eachBounded(await stagePartitionDirs(stage), COMMIT_LANES, async (sp) => {
    const pdir = sourcePartitionDir(stage, sp);
    const { recorded, unrecorded } = await stagedBases(sp);
    for (const base of unrecorded) await discardStaged(sp, base);
    for (const base of recorded) {
      if (await exists(new SegmentFiles(pdir, base).log)) continue;
      // Retention deleted the source (or its partition is gone): never brought back.
      await discardStaged(sp, base);
      removed++;
    }
  });
  return removed;
}

/** `run` over `items`, at most `limit` at a time; in no particular order. */
async function eachBounded<T>(items: T[], limit: number, run: (item: T, i: number) => Promise<void>) {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      await run(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/** Converts and verifies every ready segment of `logDir` into the stage dir (broker running). */
export async function prepareStage(logDir: string, options: TwoPhaseOptions): Promise<TwoPhaseResult> {
  const stage = await openStageDir(options.stageDir, logDir, true);
  // Before the conversion threads start: they inherit it.
  if (options.nice ?? prepareNice()) lowerPriority('process');
  return withStageLock(stage, () => prepare(stage, options));
}

async function prepare(stage: StageDir, options: TwoPhaseOptions): Promise<TwoPhaseResult> {
  const started = performance.now();
  const c = counts();
  c.discarded += await pruneStage(stage);
  // The watcher's rules on a live broker's dir: rolled segments only.
  const scan = await findReadySegments([stage.logDir], readinessRules());
  const key = stageOptionsKey(options);
  const todo: SegmentFile[] = [];
  const spOf: string[] = [];
  const skipped: SegmentReport[] = [];
  const partitions = new Set<string>();
  for (const s of scan.ready) {
    const files = SegmentFiles.ofLog(s.path)!;
    partitions.add(files.dir);
    if (!stageable(stage, files.dir)) {
      // Linked in from another disk: nothing staged (stagePartitionDir), the commit converts it.
      const r = emptyReport(s.path);
      r.result = 'skipped';
      r.reason = 'linked-partition';
      r.bytesIn = s.size;
      skipped.push(r);
      options.onSegment?.(r);
      continue;
    }
    const sp = stagePartitionDir(stage, files.dir);
    const record = await readStageRecord(sp, files.baseOffset);
    if (record !== undefined) {
      const stale = await staleReason(record, s.path, key, sp);
      if (stale === undefined) {
        const r = emptyReport(s.path);
        r.result = 'skipped';
        r.reason = 'already-staged';
        r.stage = 'staged';
        r.bytesIn = s.size;
        skipped.push(r);
        c.alreadyStaged++;
        options.onSegment?.(r);
        continue;
      }
      await discardStaged(sp, files.baseOffset);
      c.discarded++;
      if (stale === 'gone') continue;
    }
    todo.push({ path: s.path, baseOffset: files.baseOffset, size: s.size, mtimeMs: s.mtimeMs });
    spOf.push(sp);
  }
  const { results, mode, interrupted } = await runConversions(
    { todo, placementOf: (i) => ({ kind: 'stage', dir: spOf[i] }) },
    options,
  );
  for (const r of results) {
    if (r.stage === 'staged') c.staged++;
    else if (r.stage === 'changed' || r.stage === 'gone') c.changed++;
  }
  const all = [...skipped, ...results];
  return {
    reports: all,
    summary: summarize(all, performance.now() - started),
    partitions: partitions.size,
    ignored: scan.ignored,
    interrupted,
    mode,
    stage,
    counts: c,
  };
}

/**
 * Swaps in what the stage holds and converts the rest (broker stopped): the same segments a plain
 * migrate of `logDir` converts, with the same crash-safe swap.
 */
export async function commitStage(logDir: string, options: TwoPhaseOptions): Promise<TwoPhaseResult> {
  const stage = await openStageDir(options.stageDir, logDir, false);
  // The broker must be stopped: its `.lock` is held from before the first write to the end (a
  // partition dir given: the parent of its name as given, never of its real path, which for a
  // linked partition is another disk's directory).
  const logDirLock = holdLogDirLock(stage.logDirIsPartition ? path.dirname(path.resolve(logDir)) : logDir);
  try {
    return await withStageLock(stage, () => commit(stage, options));
  } finally {
    logDirLock.release();
  }
}

async function commit(stage: StageDir, options: TwoPhaseOptions): Promise<TwoPhaseResult> {
  const started = performance.now();
  const c = counts();
  // Exactly what a plain migrate would convert (and leave).
  const planned = await plan([stage.logDir], options);
  // Checked as migrate checks it, before any change: inside the roots, outside the log dir given
  // and every log dir the plan guards (a partition's real parent included).
  if (options.backupDir)
    await assertBackupDirOutside(options.backupDir, [stage.logDir, ...planned.logDirs], options.roots);
  c.discarded += await pruneStage(stage);
  for (const r of planned.skipped) options.onSegment?.(r);
  const key = stageOptionsKey(options);
  const { todo, skipped } = planned;
  const spOf: (string | undefined)[] = new Array(todo.length);
  const fresh: boolean[] = new Array(todo.length);
  await eachBounded(todo, COMMIT_LANES, async (s, i) => {
    // A linked partition has nothing staged (prepare passed it over): converted as usual.
    const sp = stageable(stage, path.dirname(s.path))
      ? stagePartitionDir(stage, path.dirname(s.path))
      : undefined;
    const record = sp === undefined ? undefined : await readStageRecord(sp, s.baseOffset);
    // Only to pick the thread: convertSegment checks it all (samples too) under the locks.
    fresh[i] =
      record !== undefined &&
      sameIdentity(await sourceIdentity(s.path), record.source) &&
      JSON.stringify(record.options) === JSON.stringify(key);
    spOf[i] = sp;
  });
  const { backupDir } = options;
  // Also the log dirs the partitions were found in (a parent of log dirs given, a linked
  // partition's), all before the first write: shared with the one held above.
  const logDirs = holdLogDirLocks(planned.logDirs);
  // The main thread's swaps hold each partition's lock over the partition's run (lock.ts).
  const partitionLocks = new PartitionLocks();
  let run: Awaited<ReturnType<typeof runConversions>>;
  try {
    run = await runConversions(
      {
        todo,
        placementOf: (i) =>
          spOf[i] === undefined
            ? { kind: 'inPlace', backupDir }
            : { kind: 'fromStage', dir: spOf[i], backupDir },
        hooksOf: (i) => (fresh[i] ? { partitionLocks } : {}),
        inMain: (i) => fresh[i],
        partitionOf: (i) => spOf[i] ?? path.dirname(todo[i].path),
        mainLanes: Math.max(options.concurrency ?? hostLimits().cores, COMMIT_LANES),
        afterPartition: (is) => partitionLocks.finish(path.dirname(todo[is[0]].path)),
      },
      options,
    );
  } finally {
    await partitionLocks.finishAll();
    logDirs.release();
  }
  const { results, mode, interrupted } = run;
  for (const r of results) {
    if (r.stage === 'committed') c.staged++;
    else {
      if (r.stage === 'discarded' || r.stage === 'corrupt') c.discarded++;
      if (r.stage === 'corrupt') c.failedCheck++;
      if (r.result === 'converted') c.convertedAtCommit++;
    }
  }
  const all = [...skipped, ...results];
  return {
    reports: all,
    summary: summarize(all, performance.now() - started),
    partitions: planned.partitions,
    ignored: planned.ignored,
    interrupted,
    mode,
    stage,
    counts: c,
  };
}
