import {
  type Config,
  DONE_MARKER_TTL_SECONDS,
  doneMarkerKey,
  SEGMENT_JOB_NAME,
  type SegmentJobData,
  segmentJobId,
} from '@seglift/config';
import { createRedis, waitForRedis } from '@seglift/queue';
import { type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { ReadySegment } from './scan.js';

export { createRedis, waitForRedis };

export function openQueue(config: Config, connection: Redis): Queue<SegmentJobData> {
  return new Queue<SegmentJobData>(config.queue.name, { connection, prefix: config.queue.prefix });
}

export function jobOptions(config: Config, jobId: string): JobsOptions {
  return {
    jobId,
    attempts: config.worker.attempts,
    backoff: { type: 'exponential', delay: config.worker.backoffMs },
    // Finished jobs are kept so that their ids keep deduplicating adds for a while.
    removeOnComplete: { age: 7 * 24 * 3600 },
    removeOnFail: { age: DONE_MARKER_TTL_SECONDS },
  };
}

export interface EnqueueResult {
  /** Job ids of the segments handed to BullMQ (new or already queued under the same id). */
  jobIds: Array<{ id: string; path: string }>;
  /** Segments whose current state a worker already converted (done marker). */
  alreadyDone: number;
}

/** Queues the segments not already marked done; idempotent thanks to the deterministic job ids. */
export async function enqueueSegments(
  queue: Queue<SegmentJobData>,
  redis: Redis,
  config: Config,
  segments: readonly ReadySegment[],
): Promise<EnqueueResult> {
  const result: EnqueueResult = { jobIds: [], alreadyDone: 0 };
  const CHUNK = 500;
  for (let i = 0; i < segments.length; i += CHUNK) {
    const chunk = segments.slice(i, i + CHUNK).map((s) => ({ s, id: segmentJobId(s) }));
    const pipeline = redis.pipeline();
    for (const { id } of chunk) pipeline.exists(doneMarkerKey(config, id));
    const exists = (await pipeline.exec()) ?? [];
    const todo = chunk.filter((_, j) => {
      const [err, n] = exists[j] ?? [null, 0];
      if (err) throw err;
      return n === 0;
    });
    result.alreadyDone += chunk.length - todo.length;
    if (todo.length === 0) continue;
    await queue.addBulk(
      todo.map(({ s, id }) => ({
        name: SEGMENT_JOB_NAME,
        data: { path: s.path, size: s.size, mtimeMs: s.mtimeMs },
        opts: jobOptions(config, id),
      })),
    );
    for (const { s, id } of todo) result.jobIds.push({ id, path: s.path });
  }
  return result;
}
