import { createHash } from 'node:crypto';
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import type { Config } from './schema.js';

/**
 * The payload of a segment job, shared by the watcher (producer) and the worker (consumer). The
 * worker re-validates it: queue contents are not trusted.
 */
export const SegmentJobSchema = z.strictObject({
  /** Real path of the `.log` file when queued (the worker re-resolves it against its roots). */
  path: z
    .string()
    .min(1)
    .max(4096)
    .refine(isAbsolute, { message: 'must be an absolute path' })
    .refine((p) => p.endsWith('.log'), { message: 'must name a .log file' }),
  size: z.int().min(0),
  mtimeMs: z.number().min(0),
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

/** Redis key of the per-partition-directory conversion lock (see apps/worker). */
export function partitionLockKey(config: Pick<Config, 'queue'>, partitionRealPath: string): string {
  const h = createHash('sha256').update(partitionRealPath).digest('hex').slice(0, 40);
  return `${config.queue.prefix}:${config.queue.name}:lock:${h}`;
}

/** Done markers expire: a file restored from backup with the same size and mtime is converted again eventually. */
export const DONE_MARKER_TTL_SECONDS = 30 * 24 * 3600;
