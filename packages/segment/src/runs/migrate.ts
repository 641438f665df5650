import { realpath } from 'node:fs/promises';
import {
  findPartitionSegments,
  type IgnoredDir,
  logDirsUnderRoots,
  type SegmentFile,
} from '../discovery/discovery.js';
import { quietAtStart, type ReadinessRules, readinessRules, splitReady } from '../discovery/readiness.js';
import type { ConvertHooks, ConvertSettings, Placement } from '../placements/conversion.js';
import { convertSegment } from '../placements/convert.js';
import { emptyReport, type RunSummary, type SegmentReport, summarize } from '../rewrite/report.js';
import { rewriteSettingsOf } from '../rewrite/rewrite.js';
import { assertBackupDirOutside } from '../safety/backup.js';
import { holdLogDirLocks } from '../safety/logdir-lock.js';
import { assertPartitionWithinRoots } from '../safety/roots.js';
import { defaultConcurrency } from './host.js';
import { ConversionPool, conversionThreadScript } from './pool.js';

export interface MigrateProgress {
  segmentsDone: number;
  segmentsTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

/**
 * A run's options: the conversion settings (each segment's conversion takes those, by their
 * declared names: rewriteSettingsOf) and the run's own.
 */
export interface MigrateOptions extends ConvertSettings {
  /** Copy each segment's originals to backupDir/<partition dir name>/ before its swap. */
  backupDir?: string;
  signal?: AbortSignal;
  /** Also convert each partition's active (highest base offset) segment. Default false. */
  includeActive?: boolean;
  /**
   * The watcher's readiness rules instead of includeActive (readiness.ts): in an archive
   * (`requireRolled: false`) each segment is converted once its .log has been unchanged for
   * `quietMs` (a copy may still be writing any of them), and otherwise reported skipped,
   * 'still-changing'.
   */
  readiness?: ReadinessRules;
  /** Parallel conversions (default: the host's cores, as many as its memory holds: host.ts). */
  concurrency?: number;
  /**
   * 'threads' (default; a build without dist/conversion-thread.js is refused before anything is
   * converted, as the pool refuses it) or 'inline' (in process, one at a time).
   */
  mode?: 'threads' | 'inline';
  onProgress?: (progress: MigrateProgress) => void;
  onSegment?: (report: SegmentReport) => void;
  /**
   * The configured roots (SEGLIFT_ROOTS): every partition planned, a symlinked one by the real
   * path it leads to, must lie inside one, or the run is refused (PathOutsideRootsError) before
   * anything is converted. Empty or absent: no confinement.
   */
  roots?: readonly string[];
}

export interface MigrateResult {
  reports: SegmentReport[];
  summary: RunSummary;
  partitions: number;
  /** Directories with segments that are not partition logs Kafka loads (metadata log, backups). */
  ignored: IgnoredDir[];
  /** The signal stopped the run: segments not reached are reported 'not-started', those stopped mid-conversion 'rolled-back'. */
  interrupted: boolean;
  /** How the run was executed. */
  mode: 'threads' | 'inline';
}

export interface Plan {
  todo: SegmentFile[];
  /** Reports decided without converting (active segments). */
  skipped: SegmentReport[];
  partitions: number;
  ignored: IgnoredDir[];
  /**
   * The log dirs guarding the planned partitions (a broker serving one holds one of their
   * `.lock`s), each once: for a linked partition, the directory holding the link and its real
   * parent (logDirsGuarding).
   */
  logDirs: string[];
}

/** What `migrate` converts under `dirs`, and the newest segments it leaves (readiness rules). */
export async function plan(dirs: string[], options: MigrateOptions): Promise<Plan> {
  const p: Plan = { todo: [], skipped: [], partitions: 0, ignored: [], logDirs: [] };
  const rules = options.readiness ?? readinessRules({ includeActive: options.includeActive });
  const now = Date.now();
  // Two names for one partition (a log dir and a symlink into it, a dir given twice) are one
  // partition: converted once, by its real path.
  const planned = new Set<string>();
  // With roots configured, a link to a partition from any log dir in them guards it too (a
  // partition named by its real location, linked into a broker's log dir).
  const roots = options.roots ?? [];
  const linkedFrom = roots.length > 0 ? await logDirsUnderRoots(roots) : undefined;
  for (const dir of dirs) {
    const found = await findPartitionSegments(dir, { includeActive: true });
    p.ignored.push(...found.ignored);
    for (const part of found.partitions) {
      // Gone since the walk (a partition deleted): its segments fail as missing, by name.
      const real = await realpath(part.partitionDir).catch(() => part.partitionDir);
      if (planned.has(real)) continue;
      planned.add(real);
      await assertPartitionWithinRoots(real, dir, roots);
      p.partitions++;
      for (const l of [...(linkedFrom?.get(real) ?? []), ...part.logDirs])
        if (!p.logDirs.includes(l)) p.logDirs.push(l);
      const { ready, notReady } = splitReady(part.segments, rules, now);
      p.todo.push(...ready);
      for (const s of notReady) {
        const r = emptyReport(s.path);
        r.result = 'skipped';
        r.reason = rules.requireRolled ? 'active-segment' : 'still-changing';
        r.bytesIn = s.size;
        p.skipped.push(r);
      }
    }
  }
  return p;
}

/** Progress across segments in flight: bytes done of the finished ones plus each running one's. */
class ProgressTracker {
  private readonly progress: MigrateProgress;
  private readonly inFlight = new Map<number, number>();
  constructor(
    todo: SegmentFile[],
    private readonly onProgress?: (p: MigrateProgress) => void,
  ) {
    this.progress = {
      segmentsDone: 0,
      segmentsTotal: todo.length,
      bytesDone: 0,
      bytesTotal: todo.reduce((a, s) => a + s.size, 0),
    };
  }
  running(i: number, bytesDone: number): void {
    this.inFlight.set(i, bytesDone);
    this.emit();
  }
  finished(i: number, size: number): void {
    this.inFlight.delete(i);
    this.progress.segmentsDone++;
    this.progress.bytesDone += size;
    this.emit();
  }
  private emit(): void {
    if (!this.onProgress) return;
    let partial = 0;
    for (const v of this.inFlight.values()) partial += v;
    this.onProgress({ ...this.progress, bytesDone: this.progress.bytesDone + partial });
  }
}

/** How `runConversions` converts each segment of its list. */
export interface ConversionPlan {
  todo: SegmentFile[];
  /** Where segment i goes. */
  placementOf: (i: number) => Placement;
  /** Segment i's hooks besides the run's signal and progress (those converted in this thread). */
  hooksOf?: (i: number) => ConvertHooks;
  /**
   * Segments converted in this thread, beside the pool's (a commit from a stage: links and
   * renames, no codec work worth a thread). They run in lanes of a partition each (`partitionOf`):
   * two lanes in one partition would only take turns at its lock.
   */
  inMain?: (i: number) => boolean;
  partitionOf?: (i: number) => string;
  /** How many partitions the main thread works on at once (default: the run's concurrency). */
  mainLanes?: number;
  /** After the main thread's last segment of a partition (its segments' indexes), even aborted. */
  afterPartition?: (indexes: number[]) => Promise<void>;
}

/**
 * Converts every segment of the plan (the pool, or inline), with progress and one report per
 * segment in plan order; segments an abort kept from starting are reported 'not-started', those it
 * stopped before their swap 'rolled-back'.
 */
export async function runConversions(
  plan: ConversionPlan,
  options: MigrateOptions,
): Promise<{ results: SegmentReport[]; mode: 'threads' | 'inline'; interrupted: boolean }> {
  const { todo } = plan;
  const { signal } = options;
  const settings = rewriteSettingsOf(options);
  const tracker = new ProgressTracker(todo, options.onProgress);
  const results: SegmentReport[] = new Array(todo.length);
  type Convert = (path: string, s: ConvertSettings, p: Placement, h: ConvertHooks) => Promise<SegmentReport>;
  const runOne = async (i: number, convert: Convert) => {
    const r = await convert(todo[i].path, settings, plan.placementOf(i), {
      ...plan.hooksOf?.(i),
      signal,
      onProgress: (d) => tracker.running(i, d),
    });
    // Labelled before anyone hears of it (the NDJSON line, the bar).
    if (r.aborted) rolledBack(r);
    results[i] = r;
    tracker.finished(i, todo[i].size);
    options.onSegment?.(r);
  };
  const all = todo.map((_, i) => i);
  const main = plan.inMain ? all.filter((i) => plan.inMain!(i)) : [];
  const rest = plan.inMain ? all.filter((i) => !plan.inMain!(i)) : all;
  const mode = options.mode === 'inline' ? 'inline' : 'threads';
  // Refused before the main thread's lanes start: nothing converted by a build without threads.
  if (mode === 'threads' && rest.length > 0) conversionThreadScript();
  const concurrency = options.concurrency ?? defaultConcurrency();
  const lanes = (order: number[], size: number, run: (i: number) => Promise<void>) =>
    inLanes(order, size, run, signal);
  // The main thread's segments by partition: each lane takes a whole partition.
  const byPartition = groupBy(main, (i) => plan.partitionOf?.(i) ?? '');
  const inMain = lanes(
    byPartition.map((_, g) => g),
    plan.mainLanes ?? concurrency,
    async (g) => {
      try {
        for (const i of byPartition[g]) if (!signal?.aborted) await runOne(i, convertSegment);
      } finally {
        await plan.afterPartition?.(byPartition[g]);
      }
    },
  );
  const inPool = (async () => {
    if (mode === 'inline') {
      // Inline: after the main thread's own, one at a time.
      await inMain;
      await lanes(rest, 1, (i) => runOne(i, convertSegment));
    } else if (rest.length > 0) {
      const size = Math.max(1, Math.min(concurrency, rest.length));
      const pool = new ConversionPool({ size });
      // Largest segments first: the run does not end with one thread converting a big segment
      // alone while the others idle (reports stay in discovery order).
      const order = [...rest].sort((a, b) => todo[b].size - todo[a].size || a - b);
      try {
        await lanes(order, size, (i) => runOne(i, (...a) => pool.convert(...a)));
      } finally {
        await pool.close();
      }
    }
  })();
  await Promise.all([inMain, inPool]);
  reportUnfinished(todo, results);
  return { results, mode, interrupted: signal?.aborted === true };
}

/** Lanes over a list of indexes: each takes the next one when it is done, until an abort. */
async function inLanes(
  order: number[],
  size: number,
  run: (i: number) => Promise<void>,
  signal: AbortSignal | undefined,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < order.length && !signal?.aborted) await run(order[next++]);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(size, order.length)) }, lane));
}

/** `items` grouped by key, groups in the order of their first item. */
function groupBy(items: number[], key: (i: number) => string): number[][] {
  const groups = new Map<string, number[]>();
  for (const i of items) groups.set(key(i), [...(groups.get(key(i)) ?? []), i]);
  return [...groups.values()];
}

/** Stopped mid-conversion: its temp files are gone and the original was never touched; never 'failed'. */
function rolledBack(r: SegmentReport): void {
  r.result = 'rolled-back';
  r.reason = 'interrupted mid-conversion: its output removed, the original left as it was';
  r.bytesOut = 0;
  delete r.error;
}

/** Segments an abort kept from starting: 'not-started'. */
function reportUnfinished(todo: SegmentFile[], results: SegmentReport[]): void {
  for (let i = 0; i < todo.length; i++) {
    const r = results[i];
    if (!r) {
      const nr = emptyReport(todo[i].path);
      nr.result = 'not-started';
      nr.reason = 'interrupted before it started';
      nr.bytesIn = todo[i].size;
      results[i] = nr;
    }
  }
}

/**
 * Converts, in place, every non-active segment under `dirs` (log dirs, partition dirs or their
 * parents) with the conversion pool, holding the `.lock` of each log dir guarding them (the
 * directories the partitions were found in and their real parents) throughout: throws `LogDirLockedError` when a broker holds one. Active segments are reported as skipped. Never throws for
 * a bad segment; every segment gets a report, in discovery order.
 */
export async function migrate(dirs: string[], options: MigrateOptions): Promise<MigrateResult> {
  const started = performance.now();
  const planned = await plan(dirs, options);
  if (options.backupDir)
    await assertBackupDirOutside(options.backupDir, [...dirs, ...planned.logDirs], options.roots);
  const { todo, skipped, partitions, ignored } = planned;
  // Every log dir the run may write in, all taken before the first write: one held by a broker
  // (or another seglift) refuses the whole run with nothing touched. Held until every conversion
  // has finished or rolled back. Those guarding the partitions: a linked partition's broker may
  // hold the .lock of the directory holding the link or of its real parent.
  const logDirs = holdLogDirLocks(planned.logDirs);
  let run: Awaited<ReturnType<typeof runConversions>>;
  try {
    for (const r of skipped) options.onSegment?.(r);
    // An archive (requireRolled false): each segment must still be quiet when its conversion
    // starts, however long after the plan that is (a copy may have resumed).
    const quietMs = options.readiness === undefined ? undefined : quietAtStart(options.readiness);
    const placement: Placement = { kind: 'inPlace', backupDir: options.backupDir, quietMs };
    run = await runConversions({ todo, placementOf: () => placement }, options);
  } finally {
    logDirs.release();
  }
  const { results, mode, interrupted } = run;
  const all = [...skipped, ...results];
  return {
    reports: all,
    summary: summarize(all, performance.now() - started),
    partitions,
    ignored,
    interrupted,
    mode,
  };
}
