import type { Config } from '@seglift/config';
import type { Logger, SegliftMetrics } from '@seglift/observability';
import { createRedis, decodeJobFailure, type JobResult, type SegmentJobData } from '@seglift/queue';
import { ConversionPool, setIoLimit, setPrepareNice } from '@seglift/segment';
import { type Job, type JobJson, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { InvalidJobError, toJobError } from './classify.js';
import { type ConvertFn, createProcessor } from './processor.js';

/**
 * BullMQ's Worker, failing a job whose data is not JSON (InvalidJobError, permanent) instead of
 * leaving it active for ever: BullMQ parses the data after it moved the job to active, and a parse
 * error there escapes the worker's loop with no processor run, no failure recorded and the lock
 * never renewed; every worker then takes it again, and a drain never completes.
 */
class SegmentWorker extends Worker<SegmentJobData, JobResult> {
  /** Jobs whose data did not parse, and why. */
  private readonly unparsable = new WeakMap<Job, string>();

  protected override createJob(json: JobJson, jobId: string): Job<SegmentJobData, JobResult> {
    try {
      return super.createJob(json, jobId);
    } catch (err) {
      // The job as stored, without its data: the processor is never called for it.
      const job = super.createJob({ ...json, data: 'null' }, jobId);
      this.unparsable.set(job, (err as Error).message);
      return job;
    }
  }

  protected override callProcessJob(
    job: Job<SegmentJobData, JobResult>,
    token: string,
    signal?: AbortSignal,
  ): Promise<JobResult> {
    const why = this.unparsable.get(job);
    if (why === undefined) return super.callProcessJob(job, token, signal);
    return Promise.reject(
      toJobError(new InvalidJobError(`the job's data is not JSON (${why}): not a job any seglift queued`)),
    );
  }
}

export interface StartWorkerOptions {
  config: Config;
  logger: Logger;
  metrics?: SegliftMetrics;
  /** Default: the conversion pool of @seglift/segment, config.worker.concurrency threads. */
  convert?: ConvertFn;
  lockedRetryMs?: number;
}

export interface WorkerHandle {
  worker: Worker<SegmentJobData, JobResult>;
  redis: Redis;
  /**
   * Stop taking jobs, let running conversions finish for `graceMs` (default
   * config.worker.shutdownGraceMs), then abort them (they are requeued), close connections.
   */
  shutdown(graceMs?: number): Promise<void>;
}

export async function startWorker(options: StartWorkerOptions): Promise<WorkerHandle> {
  const { config, logger } = options;
  // The process's one I/O budget and prepare rule, before the pool's threads start (they share it).
  setIoLimit(config.io.maxBytesPerSecond);
  setPrepareNice(config.prepare.nice);
  const pool =
    options.convert === undefined ? new ConversionPool({ size: config.worker.concurrency }) : undefined;
  const convert: ConvertFn = options.convert ?? ((...a) => pool!.convert(...a));
  const redis = createRedis(config.redis.url);
  redis.on('error', (err) => logger.debug({ err }, 'redis error'));
  const shutdownController = new AbortController();
  const processor = createProcessor({
    config,
    redis,
    convert,
    logger,
    metrics: options.metrics,
    shutdown: shutdownController.signal,
    lockedRetryMs: options.lockedRetryMs,
  });
  // BullMQ never closes a connection it was given: shutdown() does.
  const bullConnection = createRedis(config.redis.url);
  bullConnection.on('error', (err) => logger.debug({ err }, 'redis error'));
  const worker = new SegmentWorker(config.queue.name, processor, {
    connection: bullConnection,
    prefix: config.queue.prefix,
    concurrency: config.worker.concurrency,
    lockDuration: config.worker.lockDurationMs,
    stalledInterval: config.worker.stalledIntervalMs,
    maxStalledCount: config.worker.maxStalledCount,
    // How long an idle worker blocks before asking the queue again (BullMQ's default: 5 s). A job
    // another worker promoted from delayed (put off while its partition was leased) wakes no one:
    // with 5 s, a second worker sat idle for seconds while jobs waited (bench/scale). One
    // blocking read a second per idle worker.
    drainDelay: 1,
  });
  worker.on('error', (err) => logger.warn({ err }, 'worker error'));
  worker.on('failed', (job, err) => {
    if (job)
      logger.warn(
        { jobId: job.id, segment: job.data?.path, err: decodeJobFailure(err.message) },
        'job failed',
      );
  });
  worker.on('stalled', (jobId) => logger.warn({ jobId }, 'job stalled; it will be redone'));

  let shuttingDown: Promise<void> | undefined;
  return {
    worker,
    redis,
    shutdown(graceMs = config.worker.shutdownGraceMs) {
      shuttingDown ??= (async () => {
        const closing = worker.close();
        const timer = setTimeout(() => {
          logger.warn({ graceMs }, 'grace period over: aborting running conversions');
          shutdownController.abort(new Error('worker shutting down'));
        }, graceMs);
        try {
          await closing;
        } finally {
          clearTimeout(timer);
          await pool?.close();
          redis.disconnect();
          bullConnection.disconnect();
        }
      })();
      return shuttingDown;
    },
  };
}
