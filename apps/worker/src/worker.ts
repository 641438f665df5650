import type { Config } from '@seglift/config';
import type { Logger, SegliftMetrics } from '@seglift/observability';
import { createRedis, decodeJobFailure, type JobResult, type SegmentJobData } from '@seglift/queue';
import { ConversionPool } from '@seglift/segment';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { type ConvertFn, createProcessor } from './processor.js';

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
  const pool =
    options.convert === undefined ? new ConversionPool({ size: config.worker.concurrency }) : undefined;
  const convert = options.convert ?? ((logPath, o) => pool!.convert(logPath, o));
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
  const worker = new Worker<SegmentJobData, JobResult>(config.queue.name, processor, {
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
