/**
 * What the watcher queues for each ready segment, by its log dir: a log dir whose Kafka `.lock` is
 * held is a running broker's, and a swap under a running broker is exactly what seglift must never
 * do. So there the watcher only prepares (a two-phase migration's first step, into the stage dir:
 * nothing in the log dir written), and the commit is the operator's, with the broker stopped
 * (`seglift migrate <log dir> --commit`). Without a stage dir nothing is queued there.
 */
import { realpath, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type Config,
  type ConversionSettings,
  conversionSettings,
  conversionSettingsKey,
} from '@seglift/config';
import type { Logger } from '@seglift/observability';
import { fileStateOf, type SegmentJob } from '@seglift/queue';
import {
  logDirLockHolder,
  openStageDir,
  type ReadySegment,
  readStageRecord,
  resolveWithinRoots,
  SegmentFiles,
  type StageDir,
  sameIdentity,
  sourceIdentity,
  stageable,
  stagePartitionDir,
  walkLogDirs,
} from '@seglift/segment';

/** Where a log dir's jobs go. */
export type Placement =
  | { kind: 'in-place' }
  | { kind: 'prepare'; stage: StageDir }
  | { kind: 'refused'; reason: string };

export interface PlannedJobs {
  jobs: SegmentJob[];
  /** Prepare: segments the stage already holds for the file as it is. */
  alreadyStaged: number;
  /** Changed or gone since the readiness scan saw them: judged again at the next one. */
  changed: number;
  /** Log dirs where nothing was queued, and why. */
  refused: Map<string, string>;
  /** Log dirs of a running broker (prepare only). */
  held: Set<string>;
  /** Every segment planned (queued or already done), and its stage when it is prepared. */
  segments: Array<{ path: string; queued: SegmentJob; stage?: StageDir }>;
}

/**
 * The log dirs of a segment, where Kafka keeps `.lock`: those its partition was found in (a walked
 * segment's `logDirs`: for a partition linked in from another disk not its real path's parent),
 * else its partition directory's parent as named.
 */
export function logDirsOf(segment: { path: string; logDirs?: readonly string[] }): readonly string[] {
  return segment.logDirs?.length ? segment.logDirs : [dirname(dirname(segment.path))];
}

export class JobPlanner {
  /**
   * Log dirs seen held. A daemon keeps them prepare-only for its life: a broker restarted in a
   * rolling restart frees `.lock` for a minute, and converting in place then would keep it from
   * starting (the worker holds `.lock` while it swaps) and throw the stage's work away.
   */
  private readonly held = new Set<string>();
  /** The one log dir the stage dir serves (a stage dir's layout is one log dir's). */
  private stageServes: string | undefined;
  private stage: StageDir | undefined;
  /** Segments seen staged, by path: the identity they were staged from (saves re-reading records). */
  private readonly staged = new Map<string, string>();
  /** The conversion settings every job carries: the worker converts with these, not its own. */
  readonly settings: ConversionSettings;

  constructor(
    private readonly config: Config,
    private readonly logger?: Logger,
  ) {
    this.settings = conversionSettings(config);
  }

  /** Where the jobs of `logDir` go now. */
  async placement(logDir: string): Promise<Placement> {
    let holder: { pid: number } | undefined;
    try {
      holder = logDirLockHolder(logDir);
    } catch (err) {
      // Cannot tell (an unreadable .lock): treated as a running broker's, the side that writes nothing there.
      this.logger?.warn({ err, logDir }, 'cannot probe the log dir lock: treating it as a running broker');
      holder = { pid: 0 };
    }
    if (holder === undefined && !this.held.has(logDir)) return { kind: 'in-place' };
    this.held.add(logDir);
    const by = holder !== undefined && holder.pid > 0 ? ` by pid ${holder.pid}` : '';
    const running = `log dir ${logDir} belongs to a running Kafka broker (its .lock is held${by})`;
    const stageDir = this.config.stageDir;
    if (stageDir === undefined) {
      return {
        kind: 'refused',
        reason: `${running}: nothing is converted in place beside it; set stageDir (--stage-dir, SEGLIFT_STAGE_DIR) to prepare its segments into a stage dir, or stop the broker`,
      };
    }
    if (this.stageServes !== undefined && this.stageServes !== logDir) {
      return {
        kind: 'refused',
        reason: `${running}: the stage dir ${stageDir} serves the log dir ${this.stageServes} (a stage dir serves one log dir): run one watcher per log dir of a running broker, each with its own --stage-dir`,
      };
    }
    let stage: StageDir;
    try {
      stage = this.stage ?? (await openStageDir(stageDir, logDir, true));
      // The workers write it: within their roots (the watcher's, the same settings), or every
      // prepare job would fail there.
      await resolveWithinRoots(stage.root, this.config.roots);
    } catch (err) {
      return { kind: 'refused', reason: `${running}: ${(err as Error).message}` };
    }
    this.stage = stage;
    this.stageServes = logDir;
    return { kind: 'prepare', stage };
  }

  /** Log dirs holding partitions under the roots (for the check at start). */
  async logDirs(): Promise<string[]> {
    const found = new Set<string>();
    await walkLogDirs(
      this.config.roots,
      async (_dir, _names, _logDir, logDirs) => {
        for (const l of logDirs) found.add(l);
      },
      { realPaths: true },
    );
    return [...found].sort();
  }

  /** The stage options key of these settings (what a staged segment must have been made with). */
  stageOptions(): string {
    return conversionSettingsKey(this.settings);
  }

  /** The jobs for `ready` (one readiness scan's), each naming the file as it is now. */
  async jobsFor(ready: readonly ReadySegment[]): Promise<PlannedJobs> {
    const out: PlannedJobs = {
      jobs: [],
      alreadyStaged: 0,
      changed: 0,
      refused: new Map(),
      held: new Set(),
      segments: [],
    };
    const placements = new Map<string, Placement>();
    const options = this.stageOptions();
    for (const r of ready) {
      const st = await stat(r.path, { bigint: true }).catch(() => undefined);
      const state = st === undefined ? undefined : fileStateOf(r.path, st);
      // The scan judged the file it saw: one written since is judged again (and quiet) first.
      if (state === undefined || state.size !== r.size || state.mtimeMs !== r.mtimeMs) {
        out.changed++;
        continue;
      }
      // Where the partition was found (a linked one's real parent is another disk's directory,
      // whose .lock no broker holds), by real path: one key per log dir, however it was named.
      // Found under several: any held one decides (refused first, then prepare).
      let logDir = '';
      let p: Placement | undefined;
      for (const named of logDirsOf(r)) {
        const l = await realpath(named).catch(() => named);
        let q = placements.get(l);
        if (q === undefined) {
          q = await this.placement(l);
          placements.set(l, q);
        }
        const rank = (x: Placement) => (x.kind === 'refused' ? 2 : x.kind === 'prepare' ? 1 : 0);
        if (p === undefined || rank(q) > rank(p)) [p, logDir] = [q, l];
      }
      if (p === undefined) continue;
      if (p.kind === 'refused') {
        out.refused.set(logDir, p.reason);
        continue;
      }
      if (p.kind === 'in-place') {
        const job: SegmentJob = { ...state, logDir, settings: this.settings };
        out.jobs.push(job);
        out.segments.push({ path: r.path, queued: job });
        continue;
      }
      out.held.add(logDir);
      if (!stageable(p.stage, dirname(r.path))) {
        // Linked in from another disk: it cannot be staged (stagePartitionDir); the commit, with
        // the broker stopped, converts it.
        out.refused.set(
          dirname(r.path),
          `partition ${dirname(r.path)} is linked into the running broker's log dir ${logDir} from outside it: it cannot be prepared in the stage dir; \`seglift migrate ${logDir} --commit\` converts it with the broker stopped`,
        );
        continue;
      }
      const job: SegmentJob = {
        ...state,
        mode: 'prepare',
        stageDir: p.stage.root,
        logDir,
        settings: this.settings,
      };
      out.segments.push({ path: r.path, queued: job, stage: p.stage });
      if (await this.isStaged(p.stage, r.path, options)) out.alreadyStaged++;
      else out.jobs.push(job);
    }
    return out;
  }

  /**
   * Whether the stage holds `logPath` converted from the file as it is now (device, inode, size,
   * mtime and ctime in ns) with these options. The commit checks again, samples too, before it swaps.
   */
  async isStaged(stage: StageDir, logPath: string, options: string): Promise<boolean> {
    const files = SegmentFiles.ofLog(logPath);
    const now = await sourceIdentity(logPath).catch(() => undefined);
    if (files === undefined || now === undefined) return false;
    const key = `${now.dev}:${now.ino}:${now.size}:${now.mtimeNs}:${now.ctimeNs}:${options}`;
    if (this.staged.get(logPath) === key) return true;
    const record = await readStageRecord(stagePartitionDir(stage, files.dir), files.baseOffset);
    // The commit's own identity rule (ctime too): what it would discard is not staged.
    const staged =
      record !== undefined && sameIdentity(now, record.source) && JSON.stringify(record.options) === options;
    if (staged) this.staged.set(logPath, key);
    else this.staged.delete(logPath);
    return staged;
  }
}
