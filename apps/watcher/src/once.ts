import type { Config } from '@seglift/config';
import type { Logger } from '@seglift/observability';
import {
  enqueueSegments,
  jobOptions,
  SEGMENT_JOB_NAME,
  type SegmentJobData,
  segmentJobId,
} from '@seglift/queue';
import { findReadySegments } from '@seglift/segment';
import { Job, type Queue } from 'bullmq';
import type { Redis } from 'ioredis';

export interface RunOnceOptions {
  config: Config;
  queue: Queue<SegmentJobData>;
  redis: Redis;
  logger?: Logger;
  /** Wait until every queued job finished. */
  wait?: boolean;
  pollMs?: number;
  now?: number;
}

export interface RunOnceResult {
  partitions: number;
  ready: number;
  notReady: number;
  alreadyDone: number;
  queued: number;
  /** Filled with `wait`. */
  succeeded: number;
  /** With `wait`: jobs the workers failed (bad segment, or a retryable error after every attempt). */
  failed: Array<{ id: string; path: string; reason: string }>;
  /** With `wait`: jobs that vanished from the queue more than 5 times (Redis keeps losing them). */
  lost: Array<{ id: string; path: string }>;
  /**
   * With `wait`: jobs still queued when the wait was given up because no job finished for
   * `watcher.noWorkerTimeoutMs` and no worker was connected.
   */
  abandoned: Array<{ id: string; path: string }>;
  /** With `wait`: every job succeeded. Without: the scan and enqueue worked. */
  ok: boolean;
}

/** `seglift-watcher --once`: scan, queue every ready segment, optionally wait for the queue. */
export async function runOnce(options: RunOnceOptions): Promise<RunOnceResult> {
  const { config, queue, redis, logger } = options;
  if (config.roots.length === 0) throw new Error('no roots configured (set roots or SEGLIFT_ROOTS)');
  const scan = await findReadySegments(config.roots, config.readiness, { now: options.now, realPaths: true });
  for (const r of scan.missingRoots) logger?.warn({ root: r }, 'root does not exist');
  const enq = await enqueueSegments(queue, redis, config, scan.ready);
  const result: RunOnceResult = {
    partitions: scan.partitions,
    ready: scan.ready.length,
    notReady: scan.notReady,
    alreadyDone: enq.alreadyDone,
    queued: enq.jobIds.length,
    succeeded: 0,
    failed: [],
    lost: [],
    abandoned: [],
    ok: true,
  };
  logger?.info(
    {
      partitions: result.partitions,
      ready: result.ready,
      notReady: result.notReady,
      alreadyDone: result.alreadyDone,
    },
    `queued ${result.queued} segments`,
  );
  if (!options.wait) return result;

  // A job that failed in an earlier run keeps its id, so the add above was a no-op: an operator
  // re-running --once wants it tried again.
  await forEachLimit(enq.jobIds, 50, async ({ id }) => {
    const job = await Job.fromId(queue, id);
    if (job !== undefined && (await job.getState()) === 'failed') await job.retry('failed');
  });

  const pending = new Map(enq.jobIds.map((j) => [j.id, j.path]));
  const byId = new Map(scan.ready.map((r) => [segmentJobId(r), r]));
  const readded = new Map<string, number>();
  const pollMs = options.pollMs ?? 500;
  let lastLog = Date.now();
  // Without workers (all exited, or never started) the queue never drains: after the timeout with
  // no job finished and nobody connected, stop and say so instead of waiting forever.
  const noWorkerTimeoutMs = config.watcher.noWorkerTimeoutMs;
  let lastProgress = Date.now();
  while (pending.size > 0) {
    const before = pending.size;
    await forEachLimit([...pending], 50, async ([id, path]) => {
      const state = await queue.getJobState(id);
      if (state === 'completed') {
        pending.delete(id);
        result.succeeded++;
      } else if (state === 'failed') {
        const job = await Job.fromId(queue, id);
        // A job retried by BullMQ is in 'delayed'/'wait', not here: 'failed' is final.
        pending.delete(id);
        result.failed.push({ id, path, reason: job?.failedReason ?? 'unknown' });
      } else if (state === 'unknown') {
        // Gone: Redis restarted without persistence (or an operator removed it). Queue it again
        // under the same id; if the segment was converted meanwhile the worker reports skipped.
        const n = (readded.get(id) ?? 0) + 1;
        readded.set(id, n);
        const seg = byId.get(id);
        if (n > 5 || seg === undefined) {
          pending.delete(id);
          result.lost.push({ id, path });
        } else {
          logger?.warn({ jobId: id, segment: path }, 'job vanished from the queue; queueing it again');
          await queue.add(
            SEGMENT_JOB_NAME,
            { path: seg.path, size: seg.size, mtimeMs: seg.mtimeMs },
            jobOptions(config, id),
          );
        }
      }
    });
    if (pending.size === 0) break;
    if (pending.size < before) lastProgress = Date.now();
    if (noWorkerTimeoutMs > 0 && Date.now() - lastProgress > noWorkerTimeoutMs) {
      if ((await connectedWorkers(queue)) === 0) {
        for (const [id, path] of pending) result.abandoned.push({ id, path });
        logger?.error(
          { pending: pending.size, noWorkerTimeoutMs },
          'no segment finished and no worker is connected to the queue: giving up the wait',
        );
        break;
      }
      lastProgress = Date.now();
    }
    if (Date.now() - lastLog > 10_000) {
      lastLog = Date.now();
      logger?.info(
        { pending: pending.size, succeeded: result.succeeded, failed: result.failed.length },
        'waiting',
      );
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  result.ok = result.failed.length === 0 && result.lost.length === 0 && result.abandoned.length === 0;
  return result;
}

/**
 * Workers connected to the queue (BullMQ names their connections). Where the server refuses
 * CLIENT LIST (some managed Redis), unknown: counted as none, so the timeout alone decides.
 */
async function connectedWorkers(queue: Queue<SegmentJobData>): Promise<number> {
  try {
    return await queue.getWorkersCount();
  } catch {
    return 0;
  }
}

async function forEachLimit<T>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const run = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, run));
}
