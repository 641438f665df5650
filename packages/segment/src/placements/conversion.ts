/**
 * One conversion's inputs and state, shared by the placements (placements.ts) and convertSegment
 * (convert.ts): the settings (plain data), where the result goes (a `Placement`, plain data too:
 * both cross to a conversion thread as they are), and the hooks, which never leave the calling
 * thread.
 */

import { LostLockError, toSegmentError } from '../files/errors.js';
import { exists } from '../files/fs-util.js';
import { removeEmptyDirs, removeIfExists } from '../files/fsops.js';
import type { SegmentFiles } from '../files/names.js';
import { emptyReport, type SegmentReport, throughput } from '../rewrite/report.js';
import { type RewriteHooks, type RewriteSettings, tempFiles } from '../rewrite/rewrite.js';
import type { FileLock, PartitionLocks } from '../safety/lock.js';

/** What a conversion is given besides where it goes: the settings (plain data, see RewriteSettings). */
export type ConvertSettings = RewriteSettings;

/** Where a conversion's verified files go. */
export type Placement =
  /** DIR/<base>.log/.index/.timeindex; the input is never touched. */
  | { kind: 'outDir'; dir: string }
  /** Swapped in under the segment and partition locks (swap.ts). */
  | {
      kind: 'inPlace';
      /** Copy the originals to backupDir/<partition dir name>/ first. */
      backupDir?: string;
      /**
       * In an archive (readiness.requireRolled false): a source whose `.log` was written less than
       * this many ms ago when its conversion starts is skipped ('still-changing'): a copy may have
       * resumed since the plan judged it quiet.
       */
      quietMs?: number;
      /** Take `<base>.log.seglift.lock` (default true). */
      lock?: boolean;
    }
  /**
   * Prepare of a two-phase migration (stage.ts): the verified conversion into `dir` (the
   * partition's directory in a stage dir) with a StageRecord of the source. As with outDir,
   * nothing beside the source is written, renamed or locked. A source that vanished or was
   * replaced while it was read is reported skipped ('source-gone', 'source-changed').
   */
  | { kind: 'stage'; dir: string }
  /**
   * Commit of a two-phase migration, in place: the segment staged in `dir` is swapped in (the
   * same swap) when its record still matches the source and the settings; otherwise the staged
   * files are discarded and the segment is converted in place as usual.
   */
  | { kind: 'fromStage'; dir: string; backupDir?: string };

/** What only the calling thread has: signals and callbacks, never sent to a conversion thread. */
export interface ConvertHooks extends RewriteHooks {
  /**
   * In place: called right before the swap's first change, under the partition lock; throwing
   * refuses the swap (the conversion fails, the original untouched). The queue worker checks
   * here that it still holds its partition's lease.
   */
  beforeSwap?: () => Promise<void>;
  /** A commit's conversions in one thread: each partition's lock held over its run of swaps (lock.ts). */
  partitionLocks?: PartitionLocks;
}

/** A source that vanished or was replaced while it was read (reported 'skipped', not failed). */
export class SourceMovedError extends Error {
  constructor(readonly file: string) {
    super('the source changed while it was read');
  }
}

/** One conversion's state: its report, the locks it holds, the files it would remove on failure. */
export class Conversion {
  readonly report: SegmentReport;
  private readonly started = performance.now();
  /** The segment whose temp names the rewrite writes, where the result is placed. */
  dest: SegmentFiles | undefined;
  /** Final files already renamed into place (out dir, stage), removed again if a later step fails. */
  readonly placed: string[] = [];
  /** The first directory this conversion created, removed again (when empty) on failure. */
  madeOutDir: string | undefined;
  /** In place: `<base>.log.seglift.lock`. */
  lock: FileLock | undefined;
  /**
   * A commit from the stage holds the partition lock from the recovery of leftovers through the
   * swap (one lock, not two: its work in between is a few links).
   */
  held: FileLock | undefined;

  constructor(
    readonly logPath: string,
    readonly settings: ConvertSettings,
    readonly hooks: ConvertHooks,
  ) {
    this.report = emptyReport(logPath);
  }

  async run(place: (c: Conversion) => Promise<void>): Promise<SegmentReport> {
    try {
      await place(this);
      return this.finish();
    } catch (err) {
      await this.failed(err);
      return this.finish();
    } finally {
      // A lock that cannot be removed (read-only filesystem) is stale once this process exits.
      await this.held?.release().catch(() => {});
      await this.lock?.release().catch(() => {});
    }
  }

  skipped(reason: string): void {
    this.report.result = 'skipped';
    this.report.reason = reason;
  }

  /**
   * Removes what this conversion wrote (best effort: on a read-only or failing filesystem the
   * removal fails too, and recoverLeftovers removes temp files on the next run). Only temp names
   * and files placed by this run: anything with a swap marker is recoverLeftovers' to complete.
   */
  async removeOutputs(): Promise<void> {
    const dest = this.dest;
    this.dest = undefined;
    if (dest === undefined) return;
    await (async () => {
      if (await exists(dest.marker)) return;
      for (const f of Object.values(tempFiles(dest))) await removeIfExists(f);
      for (const f of this.placed) await removeIfExists(f);
    })().catch(() => {});
    if (this.madeOutDir !== undefined) await removeEmptyDirs(dest.dir, this.madeOutDir).catch(() => {});
  }

  private async failed(err: unknown): Promise<void> {
    const { report, hooks } = this;
    if (err instanceof LostLockError) {
      // The run that took the lock over owns these files now (the temp names are the same for
      // both runs) and reports the segment itself: not a failure of this run.
      this.skipped(err.detail);
      report.error = err.toJSON();
      return;
    }
    await this.removeOutputs();
    report.result = 'failed';
    if (hooks.signal?.aborted) report.aborted = true;
    const e = toSegmentError(hooks.signal?.aborted ? hooks.signal.reason : err, this.logPath);
    report.error = e.toJSON();
    report.reason = e.detail;
  }

  private finish(): SegmentReport {
    const { report } = this;
    report.durationMs = Math.round((performance.now() - this.started) * 100) / 100;
    report.throughputMBps = throughput(report.bytesIn, report.durationMs);
    return report;
  }
}
