import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Config } from '@seglift/config';
import type { Logger } from '@seglift/observability';
import {
  createRedis,
  decodeJobFailure,
  enqueueSegments,
  fileStateOf,
  type JobFailure,
  jobData,
  jobOptions,
  SEGMENT_JOB_NAME,
  type SegmentJob,
  type SegmentJobData,
  segmentJobId,
} from '@seglift/queue';
import { findReadySegments, readinessRules, type StageDir, targetFormatOf } from '@seglift/segment';
import { Job, type Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { JobPlanner } from './plan.js';

export interface RunOnceOptions {
  config: Config;
  queue: Queue<SegmentJobData>;
  redis: Redis;
  logger?: Logger;
  /** Wait until every queued job finished. */
  wait?: boolean;
  /** How often the wait looks for finished jobs and checks that workers are left (no Redis command unless one is due). */
  pollMs?: number;
  /** How often the wait reads every pending job's state, whatever the events said (default 10 s). */
  sweepMs?: number;
  now?: number;
  /** Where each log dir's jobs go (default: a new one for this run). */
  planner?: JobPlanner;
}

export interface RunOnceResult {
  partitions: number;
  ready: number;
  notReady: number;
  alreadyDone: number;
  queued: number;
  /** Filled with `wait`. */
  succeeded: number;
  /**
   * With `wait`: jobs the workers failed (bad segment, or a retryable error after every attempt),
   * each with its failure as the worker wrote it.
   */
  failed: Array<{ id: string; path: string; failure: JobFailure }>;
  /** With `wait`: jobs that vanished from the queue more than 5 times (Redis keeps losing them). */
  lost: Array<{ id: string; path: string }>;
  /**
   * With `wait`: jobs still queued when the wait was given up because no job finished for
   * `watcher.noWorkerTimeoutMs` and no worker was connected.
   */
  abandoned: Array<{ id: string; path: string }>;
  /** Log dirs of a running broker: their segments were queued as prepare jobs into the stage dir. */
  prepared: string[];
  /** Log dirs where nothing was queued (a running broker's without a usable stage dir), and why. */
  refused: Array<{ logDir: string; reason: string }>;
  /**
   * With `wait`: segments found ready that are not in the target format afterwards (read again
   * from disk), or, prepared, not staged for the file as it is; each with why.
   */
  unconverted: Array<{ path: string; reason: string }>;
  /** With `wait`: every job succeeded and every segment found ready is converted (or staged). */
  ok: boolean;
}

/** `seglift-watcher --once`: scan, queue every ready segment, optionally wait for the queue. */
export async function runOnce(options: RunOnceOptions): Promise<RunOnceResult> {
  const { config, queue, redis, logger } = options;
  if (config.roots.length === 0) throw new Error('no roots configured (set roots or SEGLIFT_ROOTS)');
  const scan = await findReadySegments(config.roots, readinessRules(config), {
    now: options.now,
    realPaths: true,
  });
  for (const r of scan.missingRoots) logger?.warn({ root: r }, 'root does not exist');
  const planner = options.planner ?? new JobPlanner(config, logger);
  const plan = await planner.jobsFor(scan.ready);
  const result: RunOnceResult = {
    partitions: scan.partitions,
    ready: scan.ready.length,
    notReady: scan.notReady + plan.changed,
    alreadyDone: plan.alreadyStaged,
    queued: 0,
    succeeded: 0,
    failed: [],
    lost: [],
    abandoned: [],
    prepared: [...plan.held].sort(),
    refused: [...plan.refused].map(([logDir, reason]) => ({ logDir, reason })),
    unconverted: [],
    ok: true,
  };
  // Refused before anything is queued: a run that would leave a log dir out is a setup to fix.
  if (result.refused.length > 0) {
    result.ok = false;
    return result;
  }
  const enq = await enqueueSegments(queue, redis, config, inTurnsAcrossLogDirs(plan.jobs));
  result.alreadyDone += enq.alreadyDone;
  result.queued = enq.jobIds.length;
  if (enq.rerun > 0) logger?.info({ rerun: enq.rerun }, 'jobs of segments not done yet run again');
  logger?.info(
    {
      partitions: result.partitions,
      ready: result.ready,
      notReady: result.notReady,
      alreadyDone: result.alreadyDone,
      ...(result.prepared.length > 0 ? { prepareOnly: result.prepared } : {}),
    },
    `queued ${result.queued} ${result.queued === 1 ? 'segment' : 'segments'}`,
  );
  if (!options.wait) return result;

  // A job that failed in an earlier run keeps its id, so the add above was a no-op: an operator
  // re-running --once wants it tried again.
  await forEachLimit(enq.jobIds, 50, async ({ id }) => {
    if ((await queue.getJobState(id)) !== 'failed') return;
    await (await Job.fromId(queue, id))?.retry('failed');
  });

  const pending = new Map(enq.jobIds.map((j) => [j.id, j.path]));
  const byId = new Map(plan.jobs.map((j) => [segmentJobId(j), j]));
  const readded = new Map<string, number>();
  const pollMs = options.pollMs ?? 500;
  const sweepMs = options.sweepMs ?? 10_000;
  let lastLog = Date.now();
  // Without workers (all exited, or never started) the queue never drains: after the timeout with
  // no job finished and nobody connected, stop and say so instead of waiting forever.
  const noWorkerTimeoutMs = config.watcher.noWorkerTimeoutMs;
  let lastProgress = Date.now();
  /** One job's state, acted on: done, failed (final), gone (queued again up to 5 times), or still on. */
  const settle = async ([id, path]: [string, string]) => {
    const state = await queue.getJobState(id);
    if (state === 'completed') {
      pending.delete(id);
      result.succeeded++;
    } else if (state === 'failed') {
      const job = await Job.fromId(queue, id);
      // A job retried by BullMQ is in 'delayed'/'wait', not here: 'failed' is final.
      pending.delete(id);
      result.failed.push({ id, path, failure: decodeJobFailure(job?.failedReason) });
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
        await queue.add(SEGMENT_JOB_NAME, jobData(seg), jobOptions(config, id));
      }
    }
  };
  // Which jobs finished comes from the queue's event stream (a blocking read on a connection of
  // its own), so only those are read: asking every pending job every poll cost ~70 Redis commands
  // a job (bench/scale). Every job is read at the start (the stream is read from here on), then
  // every sweepMs: a job lost with Redis, or events trimmed before they were read, still count.
  const named = new Set<string>();
  let wake: (() => void) | undefined;
  const events = await finishedEvents(
    queue,
    redis,
    config.redis.url,
    (id) => {
      if (!pending.has(id)) return;
      named.add(id);
      wake?.();
    },
    logger,
  );
  try {
    let sweepAt = 0;
    while (pending.size > 0) {
      const before = pending.size;
      const sweep = Date.now() >= sweepAt;
      if (sweep) sweepAt = Date.now() + sweepMs;
      const ids = sweep ? [...pending.keys()] : [...named].filter((id) => pending.has(id));
      named.clear();
      await forEachLimit(
        ids.map((id) => [id, pending.get(id) ?? ''] as [string, string]),
        50,
        settle,
      );
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
      if (named.size === 0)
        await new Promise<void>((r) => {
          const t = setTimeout(r, pollMs);
          wake = () => {
            clearTimeout(t);
            r();
          };
        });
      wake = undefined;
    }
  } finally {
    await events.close();
  }
  // The queue's word is not the last: every segment found ready is read again (those reported
  // failed, lost or abandoned above are not: they are named already).
  const reported = new Set([...result.failed, ...result.lost, ...result.abandoned].map((j) => j.path));
  const check = plan.segments.filter((s) => !reported.has(s.path));
  const stageOptions = planner.stageOptions();
  await forEachLimit(check, 4, async (s) => {
    const why = await notDone(planner, s, stageOptions);
    if (why !== undefined) result.unconverted.push({ path: s.path, reason: why });
  });
  result.unconverted.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  result.ok =
    result.failed.length === 0 &&
    result.lost.length === 0 &&
    result.abandoned.length === 0 &&
    result.unconverted.length === 0;
  return result;
}

/**
 * Why a segment is not done after the run, read from the file as it is: converted in place, it
 * must be in the target format; prepared, the stage must hold it for the file as it is. Gone
 * (retention) is done; a prepared segment Kafka replaced meanwhile is too (the commit converts
 * whatever is there then).
 */
async function notDone(
  planner: JobPlanner,
  s: { path: string; queued: SegmentJob; stage?: StageDir },
  stageOptions: string,
): Promise<string | undefined> {
  try {
    if (s.stage !== undefined) {
      if (await planner.isStaged(s.stage, s.path, stageOptions)) return undefined;
      const now = fileStateOf(s.path, await stat(s.path, { bigint: true }));
      if (now.ino !== s.queued.ino || now.size !== s.queued.size || now.mtimeMs !== s.queued.mtimeMs)
        return undefined;
      return `not staged in ${s.stage.root}`;
    }
    const v = await targetFormatOf(s.path, planner.settings);
    return v.inTarget ? undefined : `still holds ${v.reason} (${v.format}) at position ${v.position}`;
  } catch (err) {
    const e = err as { code?: string; cause?: { code?: string } };
    if (e.code === 'ENOENT' || e.cause?.code === 'ENOENT') return undefined;
    return `cannot be read: ${(err as Error).message}`;
  }
}

/**
 * The jobs in turns across log dirs, and within a log dir across its partitions, each partition's
 * in its order. Workers take jobs in queue order, so the next worker takes another log dir (a
 * worker holds its log dir's .lock while it converts: two on one take turns) and another
 * partition (leased), instead of finding them taken and putting its job off. Queued partition by
 * partition, two workers were 2.5x slower than one in bench/scale.
 */
function inTurnsAcrossLogDirs(jobs: readonly SegmentJob[]): SegmentJob[] {
  const byLogDir = new Map<string, SegmentJob[][]>();
  for (const partition of groupBy(jobs, (j) => dirname(j.path)).values()) {
    // The lock the worker takes: the job says which log dir holds a partition linked in.
    const logDir = partition[0].logDir ?? dirname(dirname(partition[0].path));
    const list = byLogDir.get(logDir);
    if (list === undefined) byLogDir.set(logDir, [partition]);
    else list.push(partition);
  }
  return inTurns([...byLogDir.values()].map(inTurns));
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list === undefined) groups.set(k, [item]);
    else list.push(item);
  }
  return groups;
}

/** The lists' items in turns: each list's first, then each one's second, ... */
function inTurns<T>(lists: readonly T[][]): T[] {
  const out: T[] = [];
  const total = lists.reduce((n, l) => n + l.length, 0);
  for (let turn = 0; out.length < total; turn++)
    for (const list of lists) if (turn < list.length) out.push(list[turn]);
  return out;
}

/**
 * Calls `onFinished(jobId)` for every job the queue's event stream says completed or failed from
 * now on (a failed attempt BullMQ retries too: the caller reads the state). Its connection is its
 * own (a blocking XREAD), closed by `close()`.
 */
async function finishedEvents(
  queue: Queue<SegmentJobData>,
  redis: Redis,
  url: string,
  onFinished: (jobId: string) => void,
  logger?: Logger,
): Promise<{ close(): Promise<void> }> {
  // From the stream's last entry as of now: '$' would start at the first read, later.
  const [last] = await redis.xrevrange(queue.keys.events, '+', '-', 'COUNT', 1);
  const connection = createRedis(url);
  connection.on('error', (err) => logger?.debug({ err }, 'redis error (queue events)'));
  const events = new QueueEvents(queue.name, {
    connection,
    prefix: queue.opts.prefix,
    lastEventId: last?.[0] ?? '0-0',
  });
  events.on('error', (err) => logger?.debug({ err }, 'queue events error'));
  events.on('completed', ({ jobId }) => onFinished(jobId));
  events.on('failed', ({ jobId }) => onFinished(jobId));
  return {
    async close() {
      await events.close().catch(() => {});
      connection.disconnect();
    },
  };
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
