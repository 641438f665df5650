/**
 * The job contract between seglift-watcher (producer) and seglift-worker (consumer): payload,
 * deterministic job id, job options, the Redis keys beside BullMQ's, and enqueueing.
 */
import { createHash } from 'node:crypto';
import { isAbsolute } from 'node:path';
import type { Config } from '@seglift/config';
import { type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';

/**
 * The payload of a segment job, shared by the watcher (producer) and the worker (consumer). The
 * worker re-validates it: queue contents are not trusted.
 */
export const SegmentJobSchema = z
  .strictObject({
    /** Real path of the `.log` file when queued (the worker re-resolves it against its roots). */
    path: z
      .string()
      .min(1)
      .max(4096)
      .refine(isAbsolute, { message: 'must be an absolute path' })
      .refine((p) => p.endsWith('.log'), { message: 'must name a .log file' }),
    size: z.int().min(0),
    mtimeMs: z.number().min(0),
    /**
     * 'prepare': the first step of a two-phase migration (docs/operator-guide.md): convert and
     * verify into `stageDir` while the broker runs, nothing in the log dir written. Default
     * 'convert' (in place). Prepare jobs need their own job ids (segmentJobId is the convert's).
     */
    mode: z.enum(['convert', 'prepare']).optional(),
    /** The stage dir of a prepare job (absolute, within the worker's roots). */
    stageDir: z
      .string()
      .min(1)
      .max(4096)
      .refine(isAbsolute, { message: 'must be an absolute path' })
      .optional(),
  })
  .refine((d) => d.mode !== 'prepare' || d.stageDir !== undefined, {
    message: "a 'prepare' job needs stageDir",
    path: ['stageDir'],
  });
export type SegmentJobData = z.output<typeof SegmentJobSchema>;

/** BullMQ job name for segment conversions. */
export const SEGMENT_JOB_NAME = 'convert';

/**
 * Deterministic job id from a segment's real path, size and mtime: a restarted or second watcher
 * computes the same id for the same file state, and BullMQ ignores an add whose id exists. BullMQ
 * ids must not be integers nor contain ':', hence the `seg-` prefix and hex digest.
 */
export function segmentJobId(file: { path: string; size: number; mtimeMs: number }): string {
  const h = createHash('sha256').update(`${file.path}\0${file.size}\0${Math.trunc(file.mtimeMs)}`);
  return `seg-${h.digest('hex').slice(0, 40)}`;
}

/**
 * Redis key marking a file state (same id scheme) as already in the target format: the worker sets
 * it for the converted (or skipped) file, the watcher does not queue it again.
 */
export function doneMarkerKey(config: Pick<Config, 'queue'>, jobId: string): string {
  return `${config.queue.prefix}:${config.queue.name}:done:${jobId}`;
}

/** Redis key of the per-partition-directory lease a worker holds while converting (lease.ts). */
export function partitionLeaseKey(config: Pick<Config, 'queue'>, partitionRealPath: string): string {
  const h = createHash('sha256').update(partitionRealPath).digest('hex').slice(0, 40);
  return `${config.queue.prefix}:${config.queue.name}:lock:${h}`;
}

/** Done markers expire: a file restored from backup with the same size and mtime is converted again eventually. */
export const DONE_MARKER_TTL_SECONDS = 30 * 24 * 3600;

/** The queue of segment jobs. */
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
  segments: readonly SegmentJobData[],
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

/** Marks a file state as done (converted or already in the target format): never queued again. */
export async function markDone(
  redis: Redis,
  config: Config,
  file: { path: string; size: number; mtimeMs: number },
): Promise<void> {
  await redis.set(
    doneMarkerKey(config, segmentJobId(file)),
    String(Date.now()),
    'EX',
    DONE_MARKER_TTL_SECONDS,
  );
}
