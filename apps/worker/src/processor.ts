import { realpath, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Config, ConversionSettings } from '@seglift/config';
import { childLogger, type Logger, recordSegmentReport, type SegliftMetrics } from '@seglift/observability';
import {
  encodeJobResult,
  fileStateOf,
  type JobResult,
  markDone,
  type PartitionLease,
  partitionLeaseKey,
  type SegmentFileState,
  SegmentJobSchema,
  tryLease,
} from '@seglift/queue';
import {
  assertBackupDirOutside,
  assertLogDirHolds,
  type ConvertHooks,
  type ConvertSettings,
  holdLogDirLocks,
  LogDirLockedError,
  logDirsGuarding,
  openStageDir,
  type Placement,
  quietAtStart,
  type ReadinessRules,
  readinessRules,
  resolveWithinRoots,
  SegmentChangedError,
  type SegmentReport,
  segmentReadiness,
  stagePartitionDir,
  targetFormatOf,
} from '@seglift/segment';
import { DelayedError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { classifyError, InvalidJobError, toJobError } from './classify.js';

/** How the worker converts a segment: the conversion pool's convert (tests pass their own). */
export type ConvertFn = (
  logPath: string,
  settings: ConvertSettings,
  placement: Placement,
  hooks: ConvertHooks,
) => Promise<SegmentReport>;

export interface ProcessorDeps {
  config: Config;
  /** Used for partition leases and done markers (not BullMQ's own connection). */
  redis: Redis;
  convert: ConvertFn;
  logger: Logger;
  metrics?: SegliftMetrics;
  /** Aborted on shutdown after the grace period: running conversions stop and are requeued. */
  shutdown?: AbortSignal;
  /** Delay before retrying a job whose partition is leased by another worker. */
  lockedRetryMs?: number;
}

/**
 * How the file differs from the state the job was queued for (size, mtime, and the inode when
 * the job names it), or undefined when it is that file. The ctime is not compared: a chmod or a
 * chown moves it without changing a byte.
 */
export function stateChange(queued: SegmentFileState, now: SegmentFileState): string | undefined {
  const diffs: string[] = [];
  if (now.size !== queued.size) diffs.push(`size ${queued.size} -> ${now.size}`);
  if (now.mtimeMs !== queued.mtimeMs)
    diffs.push(`mtime ${new Date(queued.mtimeMs).toISOString()} -> ${new Date(now.mtimeMs).toISOString()}`);
  if (queued.ino !== undefined && now.ino !== queued.ino) diffs.push(`inode ${queued.ino} -> ${now.ino}`);
  return diffs.length === 0 ? undefined : diffs.join(', ');
}

function changedError(logPath: string, change: string): SegmentChangedError {
  return new SegmentChangedError(
    `the segment changed since it was queued (${change}): not converted, it is not the file judged ready (a copy still writing it?); the watcher queues it again once it is unchanged for readiness.quietMs`,
    { file: logPath },
  );
}

/** A job's segment to convert: validated, confined to the roots, ready by the readiness rules. */
interface JobSegment {
  logPath: string;
  size: number;
  queued: SegmentFileState;
  stageDir?: string;
  logDir: string;
  /** In place: every log dir whose .lock guards the partition (logDirsGuarding), all taken. */
  logDirs: string[];
  rules: ReadinessRules;
  /** The job's conversion settings, within the worker's limits (jobSettings). */
  settings: ConversionSettings;
}

/**
 * The settings a job converts with: the job's, planned by the watcher that queued it (never the
 * worker's own); the worker's memory is its own: a job may lower its decompression limit, never
 * raise it above limits.maxDecompressedBatchBytes.
 */
function jobSettings(job: ConversionSettings, config: Config): ConversionSettings {
  return {
    ...job,
    maxDecompressedBatchBytes: Math.min(
      job.maxDecompressedBatchBytes,
      config.limits.maxDecompressedBatchBytes,
    ),
  };
}

/**
 * Puts the job back until `until` without using an attempt (BullMQ's manual delay: moveToDelayed,
 * then DelayedError so that the worker leaves the job where it now is).
 */
async function delayUntil(job: Job, until: number, token: string | undefined): Promise<never> {
  await job.moveToDelayed(until, token);
  throw new DelayedError();
}

/**
 * The job's segment; or a finished result (nothing to do); or, for a segment not quiet yet in an
 * archive, when to ask again.
 */
async function segmentOf(
  job: Job,
  config: Config,
  redis: Redis,
): Promise<JobSegment | JobResult | { waitUntil: number }> {
  const parsed = SegmentJobSchema.safeParse(job.data);
  if (!parsed.success) {
    throw toJobError(
      new InvalidJobError(
        `invalid job payload: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
      ),
    );
  }
  if (parsed.data.settings === undefined) {
    throw toJobError(
      new InvalidJobError(
        "the job carries no conversion settings (queued by a seglift-watcher older than this worker): not converted, whatever this worker's own settings say; a run of this version's seglift-watcher queues the segment again with its settings",
        { file: parsed.data.path },
      ),
    );
  }
  const settings = jobSettings(parsed.data.settings, config);
  const finished = (path: string, result: string, reason: string, bytesIn = 0): JobResult =>
    encodeJobResult({ path, result, reason, bytesIn, bytesOut: bytesIn, durationMs: 0 });
  let logPath: string;
  let now: SegmentFileState;
  try {
    logPath = await resolveWithinRoots(parsed.data.path, config.roots);
    now = fileStateOf(logPath, await stat(logPath, { bigint: true }));
  } catch (err) {
    // Retention deleted it, or it was renamed: nothing to do.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      return finished(parsed.data.path, 'skipped', 'missing');
    throw toJobError(err);
  }
  const size = now.size;
  if (size > config.limits.maxSegmentBytes) {
    throw toJobError({
      name: 'InvalidArgumentError',
      code: 'INVALID_ARGUMENT',
      message: `segment is ${size} bytes, above limits.maxSegmentBytes ${config.limits.maxSegmentBytes}`,
    });
  }
  // A prepare job: the stage dir is written, so it is confined to the roots too.
  let stageDir: string | undefined;
  if (parsed.data.mode === 'prepare') {
    try {
      stageDir = await resolveWithinRoots(parsed.data.stageDir!, config.roots);
    } catch (err) {
      throw toJobError(err);
    }
  }
  // The log dir the stage serves (prepare), and one of those locked in place: the one the watcher
  // found the partition in, which for a partition linked in from another disk is not its real
  // path's grandparent. Not trusted: within the roots and holding the partition, or the job fails
  // (LOG_DIR_UNKNOWN).
  let logDir = dirname(dirname(logPath));
  if (parsed.data.logDir !== undefined) {
    try {
      logDir = await assertLogDirHolds(
        await resolveWithinRoots(parsed.data.logDir, config.roots),
        dirname(logPath),
      );
    } catch (err) {
      throw toJobError(err);
    }
  }
  // In place, the .lock of every log dir guarding the partition, whatever logDir the job claims:
  // the claimed one, the one its path names it in, and its real parent (a broker holds one of
  // them). A path named through a link from outside the roots is refused, never its .lock made.
  // The backup dir: inside the roots, outside those log dirs (one rule with migrate's).
  let logDirs: string[] = [];
  if (stageDir === undefined) {
    try {
      const named = dirname(dirname(parsed.data.path));
      if ((await realpath(named).catch(() => named)) !== dirname(dirname(logPath)))
        await resolveWithinRoots(named, config.roots);
      logDirs = await logDirsGuarding(dirname(logPath), [logDir, named]);
      if (config.backupDir) await assertBackupDirOutside(config.backupDir, logDirs, config.roots);
    } catch (err) {
      throw toJobError(err);
    }
  }
  // Ready as the watcher decides (readiness.ts), whoever queued the job and by whatever clock: a
  // prepare reads beside a running broker, so by a live broker's rule whatever the settings; in
  // place by the settings' (an archive's segment once unchanged for quietMs).
  const rules = readinessRules(stageDir === undefined ? config : {});
  const readiness = await segmentReadiness(now, rules);
  if (!readiness.ready) {
    if (readiness.reason === 'still-changing') return { waitUntil: readiness.recheckAt };
    throw toJobError({
      name: 'InvalidArgumentError',
      code: 'INVALID_ARGUMENT',
      message: 'refusing to convert the active segment (no newer segment in its partition)',
    });
  }
  // Only the file judged ready is converted (a copy still writing it, or a file put in its place,
  // is not that file).
  const queued = { ...parsed.data, path: logPath };
  const change = stateChange(queued, now);
  if (change !== undefined) {
    // Beside a running broker that is Kafka's cleaner or retention: the commit converts whatever
    // is there then.
    if (parsed.data.mode === 'prepare') return finished(logPath, 'skipped', 'source-changed', size);
    // The file as it is decides: one needing no rewrite (this job's own conversion, finished
    // before a crash or by an earlier run of it) is done; any other is never converted.
    // (One that cannot be read whole is not known to need nothing: it is not converted either.)
    const verdict = await targetFormatOf(logPath, settings).catch(() => undefined);
    if (!verdict?.inTarget) throw toJobError(changedError(logPath, change));
    await markDone(redis, config, now, settings);
    return finished(logPath, 'skipped', 'already-target-codec', size);
  }
  return { logPath, size, queued, stageDir, logDir, logDirs, rules, settings };
}

/** One signal aborted by any of `signals`, with the first one's reason. */
function anyOf(signals: (AbortSignal | undefined)[]): AbortSignal {
  return AbortSignal.any(signals.filter((s): s is AbortSignal => s !== undefined));
}

/**
 * The BullMQ processor: validate, confine to roots, lease the partition, convert (the swap only
 * while the lease is still held), report.
 */
export function createProcessor(deps: ProcessorDeps) {
  const { config, redis, logger } = deps;
  /** When a job whose partition or log dir another worker holds is asked for again (jittered). */
  const lockedRetryAt = () => Date.now() + (deps.lockedRetryMs ?? 500) + Math.floor(Math.random() * 250);
  return async (job: Job, token?: string, bullSignal?: AbortSignal): Promise<JobResult> => {
    const started = Date.now();
    const segment = await segmentOf(job, config, redis);
    if ('waitUntil' in segment) {
      // Back when it has been quiet for quietMs, without using an attempt (a copy may take long).
      logger.info(
        { jobId: job.id, segment: job.data?.path, until: new Date(segment.waitUntil).toISOString() },
        'segment still changing: waiting until it is quiet',
      );
      return await delayUntil(job, segment.waitUntil, token);
    }
    if ('result' in segment) {
      logger.info(
        { jobId: job.id, segment: segment.path, result: segment.result, reason: segment.reason },
        segment.reason === 'missing' ? 'segment no longer exists' : 'segment done',
      );
      return segment;
    }
    const { logPath, size, stageDir, rules, settings } = segment;
    const dir = dirname(logPath);
    const log = childLogger(logger, { jobId: job.id, segment: logPath, partition: basename(dir) });
    const lease = await tryLease(redis, partitionLeaseKey(config, dir), config.worker.lockDurationMs);
    if (lease === undefined) {
      // Another worker is rewriting this partition: come back later without using an attempt.
      return await delayUntil(job, lockedRetryAt(), token);
    }
    // Shutting down: the job goes back at once, without using an attempt. The pipeline removed
    // its temp files; the original is untouched.
    const requeueIfShuttingDown = async () => {
      if (!deps.shutdown?.aborted || lease.lost.aborted) return;
      log.warn('conversion aborted for shutdown; job requeued');
      await delayUntil(job, Date.now(), token);
    };
    try {
      let report: SegmentReport;
      try {
        report = await convert(job, segment, lease, bullSignal);
      } catch (err) {
        // The pool reports failures; a converter that throws (a test's, or a bug) is classified.
        await requeueIfShuttingDown();
        // Another seglift works in this log dir (its .lock; a broker's fails the job): come back
        // later without using an attempt, as for a leased partition.
        if (err instanceof LogDirLockedError && classifyError(err) === 'transient')
          return await delayUntil(job, lockedRetryAt(), token);
        throw toJobError(err);
      }
      // Written to again when its conversion started (a copy resumed): back once quiet, as above.
      if (report.result === 'skipped' && report.reason === 'still-changing') {
        const until = Date.now() + (quietAtStart(rules) ?? 0) + 1;
        log.info(
          { until: new Date(until).toISOString() },
          'segment still changing: waiting until it is quiet',
        );
        return await delayUntil(job, until, token);
      }
      if (report.result === 'failed') {
        if (report.aborted) await requeueIfShuttingDown();
        if (deps.metrics) recordSegmentReport(deps.metrics, report, settings.codec);
        log.warn({ reason: report.reason, err: report.error }, 'conversion failed');
        throw toJobError(report.error ?? { name: 'Error', code: 'UNKNOWN', message: report.reason });
      }
      if (deps.metrics) recordSegmentReport(deps.metrics, report, settings.codec);
      // The file state now in the target format is done: watchers do not queue it again. (Not
      // after a prepare: the segment itself is unchanged until the commit.)
      const after =
        stageDir === undefined ? await stat(logPath, { bigint: true }).catch(() => undefined) : undefined;
      if (after !== undefined) await markDone(redis, config, fileStateOf(logPath, after), settings);
      job.updateProgress({ bytesDone: size, bytesTotal: size }).catch(() => {});
      const result = encodeJobResult({
        path: logPath,
        result: report.result,
        reason: report.reason,
        bytesIn: report.bytesIn,
        bytesOut: report.bytesOut,
        durationMs: Date.now() - started,
      });
      log.info(
        { result: result.result, reason: result.reason, bytesIn: result.bytesIn, bytesOut: result.bytesOut },
        'segment done',
      );
      return result;
    } finally {
      await lease.release();
    }
  };

  async function convert(
    job: Job,
    { logPath, logDir, logDirs, size, queued, stageDir, rules, settings }: JobSegment,
    lease: PartitionLease,
    bullSignal?: AbortSignal,
  ) {
    let lastProgress = 0;
    // Prepare: into the stage dir of the log dir holding this partition (the layout a
    // `seglift migrate <log dir> --commit --stage-dir S` reads); nothing in the log dir written.
    const placement: Placement =
      stageDir === undefined
        ? {
            kind: 'inPlace',
            // Where originals go is the worker's (its disks), not the job's.
            backupDir: config.backupDir,
            // An archive's segment must still be quiet when its conversion starts (the pool may
            // have kept it waiting; a copy may have resumed).
            quietMs: quietAtStart(rules),
          }
        : {
            kind: 'stage',
            dir: stagePartitionDir(await openStageDir(stageDir, logDir, true), dirname(logPath)),
          };
    // Right before the swap (under the partition lock): a worker whose lease another worker took
    // between two renewals never swaps, and a source written to while it was converted (a copy
    // resumed) is never swapped out: those bytes would be lost with it.
    const beforeSwap = async () => {
      await lease.assertHeld();
      const change = stateChange(queued, fileStateOf(logPath, await stat(logPath, { bigint: true })));
      if (change !== undefined) throw changedError(logPath, change);
    };
    // In place: the .lock of every log dir guarding it, as a broker holds one, for the whole
    // conversion (shared by this process's jobs; a broker holding one refuses the job: classify.ts).
    const logDirLock = stageDir === undefined ? holdLogDirLocks(logDirs) : undefined;
    try {
      return await deps.convert(logPath, settings, placement, {
        beforeSwap: stageDir === undefined ? beforeSwap : undefined,
        signal: anyOf([deps.shutdown, lease.lost, bullSignal]),
        onProgress: (bytesDone, bytesTotal) => {
          const now = Date.now();
          if (now - lastProgress < 500) return;
          lastProgress = now;
          // Not awaited: during a Redis outage this would block the conversion.
          job.updateProgress({ bytesDone, bytesTotal: bytesTotal ?? size }).catch(() => {});
        },
      });
    } finally {
      logDirLock?.release();
    }
  }
}
