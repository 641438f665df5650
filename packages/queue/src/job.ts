/**
 * The job contract between seglift-watcher (producer) and seglift-worker (consumer): payload,
 * deterministic job id, job options, the Redis keys beside BullMQ's, and enqueueing.
 */
import { createHash } from 'node:crypto';
import { isAbsolute } from 'node:path';
import {
  type Config,
  type ConversionSettings,
  ConversionSettingsSchema,
  conversionSettingsKey,
  useEnglishZodMessages,
} from '@seglift/config';
import { Job, type JobsOptions, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import * as z from 'zod/mini';
import { createRedis } from './redis.js';

// The worker's messages for a payload it refuses ("Unrecognized key", ...).
useEnglishZodMessages();

const decimal = z.string().check(z.regex(/^\d{1,30}$/, { message: 'must be a decimal integer' }));
const absolutePath = z
  .string()
  .check(z.minLength(1), z.maxLength(4096), z.refine(isAbsolute, { message: 'must be an absolute path' }));

/**
 * The payload of a segment job, shared by the watcher (producer) and the worker (consumer). The
 * worker re-validates it: queue contents are not trusted.
 */
export const SegmentJobSchema = z
  .strictObject({
    /** Real path of the `.log` file when queued (the worker re-resolves it against its roots). */
    path: absolutePath.check(z.refine((p) => p.endsWith('.log'), { message: 'must name a .log file' })),
    /**
     * Size and mtime of the file judged ready: the worker converts only that file, never one that
     * changed since (a copy still being written, a file replaced).
     */
    size: z.int().check(z.minimum(0)),
    mtimeMs: z.number().check(z.minimum(0)),
    /**
     * Inode and ctime (ns, decimal) of the file judged ready. The job id hashes them: `cp -p` of a
     * backup restores size and mtime but never the ctime, so a restored file is a new job, never
     * the completed job of the file it replaces. The worker checks the inode (a file put in its
     * place is another file). Optional: jobs queued before they existed still validate.
     */
    ino: z.optional(decimal),
    ctimeNs: z.optional(decimal),
    /**
     * 'prepare': the first step of a two-phase migration (docs/operator-guide.md): convert and
     * verify into `stageDir` while the broker runs, nothing in the log dir written. Default
     * 'convert' (in place). Prepare jobs have their own job ids (segmentJobId).
     */
    mode: z.optional(z.enum(['convert', 'prepare'])),
    /**
     * The log dir the partition was found in (absolute): whose `.lock` a broker serving it holds.
     * For a partition linked in from another disk it is not the real path's grandparent. The
     * worker checks it holds the partition; absent: dirname(dirname(real path)). Not in the job id.
     */
    logDir: z.optional(absolutePath),
    /** The stage dir of a prepare job (absolute, within the worker's roots). */
    stageDir: z.optional(absolutePath),
    /**
     * The conversion settings the job was planned with (the watcher's `conversionSettings`): the
     * worker converts with these, never its own, and the job id and done marker hash them. A job
     * of a version before them has none: the worker refuses it (INVALID_ARGUMENT, permanent);
     * that version's seglift-watcher is this one's, whose run queues the segment again.
     */
    settings: z.optional(ConversionSettingsSchema),
  })
  .check(
    z.refine((d) => d.mode !== 'prepare' || d.stageDir !== undefined, {
      message: "a 'prepare' job needs stageDir",
      path: ['stageDir'],
    }),
  );
export type SegmentJobData = z.output<typeof SegmentJobSchema>;

/** A job as this version queues it: with its conversion settings. */
export type SegmentJob = SegmentJobData & { settings: ConversionSettings };

/** The state of a segment's `.log` a job is for (what the watcher judged ready). */
export type SegmentFileState = Pick<SegmentJobData, 'path' | 'size' | 'mtimeMs' | 'ino' | 'ctimeNs'>;

/**
 * The state of `path` from its bigint stat. `mtimeMs` is computed as Node computes a plain stat's
 * (seconds * 1e3 + nanoseconds / 1e6), so that it equals what the readiness scan saw.
 */
export function fileStateOf(
  path: string,
  st: { size: bigint; ino: bigint; mtimeNs: bigint; ctimeNs: bigint },
): Required<SegmentFileState> {
  const NS = 1_000_000_000n;
  return {
    path,
    size: Number(st.size),
    mtimeMs: Number(st.mtimeNs / NS) * 1e3 + Number(st.mtimeNs % NS) / 1e6,
    ino: String(st.ino),
    ctimeNs: String(st.ctimeNs),
  };
}

/** BullMQ job name for segment conversions. */
export const SEGMENT_JOB_NAME = 'convert';

/**
 * Deterministic job id from the file state a job is for (real path, size, mtime, inode, ctime in
 * ns), what it does (a prepare, into which stage dir) and the settings it converts with (those
 * that change the bytes: `conversionSettingsKey`): a restarted or second watcher computes the same
 * id for the same file and settings, and BullMQ ignores an add whose id exists. A file restored
 * from a backup has a new ctime, and another codec or level is another conversion: a new id. BullMQ
 * ids must not be integers nor contain ':', hence the `seg-`/`prep-` prefix and hex digest.
 */
export function segmentJobId(
  job: SegmentFileState & {
    mode?: SegmentJobData['mode'];
    stageDir?: string;
    settings: ConversionSettings;
  },
): string {
  const prepare = job.mode === 'prepare';
  const h = createHash('sha256').update(
    [
      job.path,
      job.size,
      Math.trunc(job.mtimeMs),
      job.ino ?? '',
      job.ctimeNs ?? '',
      prepare ? `prepare\0${job.stageDir ?? ''}` : '',
      conversionSettingsKey(job.settings),
    ].join('\0'),
  );
  return `${prepare ? 'prep' : 'seg'}-${h.digest('hex').slice(0, 40)}`;
}

/**
 * Redis key marking a file state (same id scheme) as in the target format of the job's settings:
 * the worker sets it for the converted (or skipped) file as it left it, the watcher does not queue
 * that state for those settings again. Any change to the file (a restore, a copy) moves its ctime,
 * and other settings hash to another key: the marker no longer applies.
 */
export function doneMarkerKey(config: Pick<Config, 'queue'>, jobId: string): string {
  return `${config.queue.prefix}:${config.queue.name}:done:${jobId}`;
}

/** Redis key of the per-partition-directory lease a worker holds while converting (lease.ts). */
export function partitionLeaseKey(config: Pick<Config, 'queue'>, partitionRealPath: string): string {
  const h = createHash('sha256').update(partitionRealPath).digest('hex').slice(0, 40);
  return `${config.queue.prefix}:${config.queue.name}:lock:${h}`;
}

/** Done markers expire: Redis keeps no marker of a file state nobody asks about any more. */
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
  /**
   * Jobs of these very file states that had completed earlier without leaving them done (no done
   * marker: a marker lost with Redis, or a prepare whose stage entry was discarded since): run
   * again, since BullMQ would ignore the add.
   */
  rerun: number;
}

/** The payload of a job for `s`, without the fields it does not set. */
export function jobData(s: SegmentJob): SegmentJob {
  const d: SegmentJob = { path: s.path, size: s.size, mtimeMs: s.mtimeMs, settings: s.settings };
  if (s.ino !== undefined) d.ino = s.ino;
  if (s.ctimeNs !== undefined) d.ctimeNs = s.ctimeNs;
  if (s.mode === 'prepare') Object.assign(d, { mode: 'prepare', stageDir: s.stageDir });
  if (s.logDir !== undefined) d.logDir = s.logDir;
  return d;
}

/**
 * Queues the segments whose file state is not marked done (prepare jobs have no marker: the
 * caller asks the stage); idempotent thanks to the deterministic job ids.
 */
export async function enqueueSegments(
  queue: Queue<SegmentJobData>,
  redis: Redis,
  config: Config,
  segments: readonly SegmentJob[],
): Promise<EnqueueResult> {
  const result: EnqueueResult = { jobIds: [], alreadyDone: 0, rerun: 0 };
  const CHUNK = 500;
  for (let i = 0; i < segments.length; i += CHUNK) {
    const chunk = segments.slice(i, i + CHUNK).map((s) => ({ s, id: segmentJobId(s) }));
    const pipeline = redis.pipeline();
    for (const { id } of chunk) pipeline.exists(doneMarkerKey(config, id));
    const exists = (await pipeline.exec()) ?? [];
    const todo = chunk.filter(({ s }, j) => {
      const [err, n] = exists[j] ?? [null, 0];
      if (err) throw err;
      return n === 0 || s.mode === 'prepare';
    });
    result.alreadyDone += chunk.length - todo.length;
    if (todo.length === 0) continue;
    await queue.addBulk(
      todo.map(({ s, id }) => ({ name: SEGMENT_JOB_NAME, data: jobData(s), opts: jobOptions(config, id) })),
    );
    // A completed job of a state still not done did not leave it done: BullMQ ignored the add.
    const states = await Promise.all(todo.map(({ id }) => queue.getJobState(id)));
    for (const [j, { id }] of todo.entries()) {
      if (states[j] !== 'completed') continue;
      const job = await Job.fromId(queue, id);
      await job?.retry('completed').then(
        () => result.rerun++,
        () => {}, // moved on meanwhile (removed, or taken again): nothing to redo
      );
    }
    for (const { s, id } of todo) result.jobIds.push({ id, path: s.path });
  }
  return result;
}

/**
 * Marks a file state as done for `settings` (converted, or already in their target format): never
 * queued again with them.
 */
export async function markDone(
  redis: Redis,
  config: Config,
  file: SegmentFileState,
  settings: ConversionSettings,
): Promise<void> {
  await redis.set(
    doneMarkerKey(config, segmentJobId({ ...file, settings })),
    String(Date.now()),
    'EX',
    DONE_MARKER_TTL_SECONDS,
  );
}

/**
 * Resolves true once the queue had no waiting/delayed/active job for `idleMs` straight, false
 * when `stop` aborts first (a worker's `--exit-when-drained`), on a connection of its own.
 */
export async function waitUntilDrained(config: Config, idleMs: number, stop: AbortSignal): Promise<boolean> {
  const conn = createRedis(config.redis.url);
  conn.on('error', () => {});
  const queue = openQueue(config, conn);
  let idleSince: number | undefined;
  try {
    while (!stop.aborted) {
      const c = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
      const busy = Object.values(c).reduce((a, b) => a + b, 0);
      if (busy > 0) idleSince = undefined;
      else idleSince ??= Date.now();
      if (idleSince !== undefined && Date.now() - idleSince >= idleMs) return true;
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(1000, Math.max(50, idleMs / 4)));
        stop.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            r();
          },
          { once: true },
        );
      });
    }
    return false;
  } finally {
    await queue.close().catch(() => {});
    conn.disconnect();
  }
}
