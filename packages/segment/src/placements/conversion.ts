/** One conversion's state, shared by the placements (placements.ts) and convertSegment. */

import { LostLockError, toSegmentError } from '../files/errors.js';
import { exists } from '../files/fs-util.js';
import { removeEmptyDirs, removeIfExists } from '../files/fsops.js';
import type { SegmentFiles } from '../files/names.js';
import { emptyReport, type SegmentReport, throughput } from '../rewrite/report.js';
import { tempFiles } from '../rewrite/rewrite.js';
import type { FileLock } from '../safety/lock.js';
import type { ConversionOptions } from './convert.js';

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
    readonly options: ConversionOptions,
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
    const { report, options } = this;
    if (err instanceof LostLockError) {
      // The run that took the lock over owns these files now (the temp names are the same for
      // both runs) and reports the segment itself: not a failure of this run.
      this.skipped(err.detail);
      report.error = err.toJSON();
      return;
    }
    await this.removeOutputs();
    report.result = 'failed';
    if (options.signal?.aborted) report.aborted = true;
    const e = toSegmentError(options.signal?.aborted ? options.signal.reason : err, this.logPath);
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
