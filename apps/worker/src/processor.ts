import { readdir, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import {
  type Config,
  DONE_MARKER_TTL_SECONDS,
  doneMarkerKey,
  partitionLockKey,
  resolveWithinRoots,
  SegmentJobSchema,
  segmentJobId,
} from '@seglift/config';
import { childLogger, type Logger, recordSegmentReport, type SegliftMetrics } from '@seglift/observability';
import { DelayedError, type Job, UnrecoverableError } from 'bullmq';
import type { Redis } from 'ioredis';
import { toJobError } from './classify.js';
import { tryLock } from './lock.js';
import type { ConvertFn, ConvertOptions, SegmentReportLike } from './types.js';

const SEGMENT_LOG_RE = /^\d{20}\.log$/;

export interface ProcessorDeps {
  config: Config;
  /** Used for partition locks and done markers (not BullMQ's own connection). */
  redis: Redis;
  convert: ConvertFn;
  recoverLeftovers: (partitionDir: string) => Promise<unknown>;
  logger: Logger;
  metrics?: SegliftMetrics;
  /** Aborted on shutdown after the grace period: running conversions stop and are requeued. */
  shutdown?: AbortSignal;
  /** Delay before retrying a job whose partition is locked by another worker. */
  lockedRetryMs?: number;
}

export interface JobResult {
  path: string;
  result: string;
  reason?: string;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
}

/** The BullMQ processor: validate, confine to roots, lock the partition, clean leftovers, convert. */
export function createProcessor(deps: ProcessorDeps) {
  const { config, redis, logger } = deps;
  return async (job: Job, token?: string, bullSignal?: AbortSignal): Promise<JobResult> => {
    const started = Date.now();
    const parsed = SegmentJobSchema.safeParse(job.data);
    if (!parsed.success) {
      throw new UnrecoverableError(
        JSON.stringify({
          name: 'InvalidArgumentError',
          code: 'INVALID_ARGUMENT',
          message: `invalid job payload: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`,
        }),
      );
    }
    let logPath: string;
    try {
      logPath = await resolveWithinRoots(parsed.data.path, config.roots);
    } catch (err) {
      throw toJobError(err);
    }
    const dir = dirname(logPath);
    const log = childLogger(logger, { jobId: job.id, segment: logPath, partition: basename(dir) });

    let size: number;
    try {
      size = (await stat(logPath)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        // Retention deleted it, or it was renamed: nothing to do.
        log.info('segment no longer exists');
        return {
          path: logPath,
          result: 'skipped',
          reason: 'missing',
          bytesIn: 0,
          bytesOut: 0,
          durationMs: 0,
        };
      }
      throw toJobError(err);
    }
    if (size > config.limits.maxSegmentBytes) {
      throw toJobError({
        name: 'InvalidArgumentError',
        code: 'INVALID_ARGUMENT',
        message: `segment is ${size} bytes, above limits.maxSegmentBytes ${config.limits.maxSegmentBytes}`,
      });
    }
    if (config.readiness.requireRolled && !(await hasNewerSegment(dir, basename(logPath)))) {
      throw toJobError({
        name: 'InvalidArgumentError',
        code: 'INVALID_ARGUMENT',
        message: 'refusing to convert the active segment (no newer segment in its partition)',
      });
    }

    const lock = await tryLock(redis, partitionLockKey(config, dir), config.worker.lockDurationMs);
    if (lock === undefined) {
      // Another worker is rewriting this partition: come back later without using an attempt.
      await job.moveToDelayed(
        Date.now() + (deps.lockedRetryMs ?? 500) + Math.floor(Math.random() * 250),
        token,
      );
      throw new DelayedError();
    }
    const abort = new AbortController();
    const signals = [bullSignal, deps.shutdown, lock.lost].filter((s): s is AbortSignal => s !== undefined);
    const onAbort = (s: AbortSignal) => () => abort.abort(s.reason);
    for (const s of signals) {
      if (s.aborted) abort.abort(s.reason);
      else s.addEventListener('abort', onAbort(s), { once: true });
    }
    try {
      await deps.recoverLeftovers(dir);
      let lastProgress = 0;
      const options: ConvertOptions = {
        codec: config.codec,
        level: config.level,
        grouping: config.grouping,
        coalesceBytes: config.coalesceBytes,
        maxBatchBytes: config.maxBatchBytes,
        onlyIfSmaller: config.onlyIfSmaller,
        maxDecompressedBatchBytes: config.limits.maxDecompressedBatchBytes,
        indexIntervalBytes: config.indexIntervalBytes,
        inPlace: true,
        backupDir: config.backupDir,
        signal: abort.signal,
        onProgress: (bytesDone, bytesTotal) => {
          const now = Date.now();
          if (now - lastProgress < 500) return;
          lastProgress = now;
          // Not awaited: during a Redis outage this would block the conversion.
          job.updateProgress({ bytesDone, bytesTotal: bytesTotal ?? size }).catch(() => {});
        },
      };
      const requeueIfShuttingDown = async (): Promise<void> => {
        if (abort.signal.aborted && deps.shutdown?.aborted && !lock.lost.aborted) {
          // Shutting down: hand the job back at once, without using an attempt. The pipeline
          // has removed its temp files; recoverLeftovers cleans anything else next time.
          log.warn('conversion aborted for shutdown; job requeued');
          await job.moveToDelayed(Date.now(), token);
          throw new DelayedError();
        }
      };
      let report: SegmentReportLike;
      try {
        report = await deps.convert(logPath, options);
      } catch (err) {
        await requeueIfShuttingDown();
        deps.metrics?.errors.inc({ code: String((err as { code?: unknown })?.code ?? 'UNKNOWN') });
        log.warn({ err }, 'conversion failed');
        throw toJobError(err);
      }
      // convertSegment reports failures (an abort included) instead of throwing.
      if (report.result === 'failed') await requeueIfShuttingDown();
      if (deps.metrics)
        recordSegmentReport(deps.metrics, metricsView(report, config.codec, Date.now() - started));
      if (report.result === 'failed') {
        const error = report.error ?? {
          name: 'Error',
          code: 'UNKNOWN',
          message: report.reason ?? 'conversion failed',
        };
        log.warn({ reason: report.reason, error }, 'conversion failed');
        throw toJobError(error);
      }
      // Mark the resulting file state done so watchers do not queue it again.
      const after = await stat(logPath).catch(() => undefined);
      if (after !== undefined) {
        const id = segmentJobId({ path: logPath, size: after.size, mtimeMs: after.mtimeMs });
        await redis.set(doneMarkerKey(config, id), String(Date.now()), 'EX', DONE_MARKER_TTL_SECONDS);
      }
      job.updateProgress({ bytesDone: size, bytesTotal: size }).catch(() => {});
      const result: JobResult = {
        path: logPath,
        result: report.result,
        reason: report.reason,
        bytesIn: report.bytesIn,
        bytesOut: report.bytesOut,
        durationMs: Date.now() - started,
      };
      log.info(
        { result: result.result, reason: result.reason, bytesIn: result.bytesIn, bytesOut: result.bytesOut },
        'segment done',
      );
      return result;
    } finally {
      await lock.release();
    }
  };
}

async function hasNewerSegment(dir: string, name: string): Promise<boolean> {
  const names = await readdir(dir);
  return names.some((n) => SEGMENT_LOG_RE.test(n) && n > name);
}

function metricsView(r: SegmentReportLike, codecOut: string, durationMs: number) {
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const err = r.error as { code?: unknown } | undefined;
  return {
    result: r.result,
    bytesIn: num(r.bytesIn),
    bytesOut: num(r.bytesOut),
    batchesIn: num(r.batchesIn),
    batchesOut: num(r.batchesOut),
    recordsIn: num(r.recordsIn),
    recordsOut: num(r.recordsOut),
    codecOut: typeof r.codecOut === 'string' ? r.codecOut : codecOut,
    durationMs: typeof r.durationMs === 'number' ? r.durationMs : durationMs,
    error: err && typeof err.code === 'string' ? { code: err.code } : null,
  };
}
