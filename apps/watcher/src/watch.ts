import { realpathSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import type { Config } from '@seglift/config';
import type { Logger } from '@seglift/observability';
import { enqueueSegments, type SegmentJobData } from '@seglift/queue';
import {
  evaluatePartition,
  findReadySegments,
  isInside,
  isKafkaInternalDir,
  type ReadySegment,
  readinessRules,
  SEGMENT_NAME_RE,
} from '@seglift/segment';
import type { Queue } from 'bullmq';
import { watch } from 'chokidar';
import type { Redis } from 'ioredis';
import { JobPlanner, type PlannedJobs } from './plan.js';

export interface WatchOptions {
  config: Config;
  queue: Queue<SegmentJobData>;
  redis: Redis;
  logger?: Logger;
  /** Quiet time after the last event in a directory before it is evaluated. */
  debounceMs?: number;
  maxDepth?: number;
  /**
   * Full readdir rescan interval (default 10 min; 0 = never): catches events missed by the file
   * watcher and jobs lost with a Redis restart. Idempotent thanks to the deterministic job ids.
   */
  rescanMs?: number;
  /** Called after each evaluation (tests). */
  onEvaluated?: (dir: string, queued: number) => void;
  /** Where each log dir's jobs go (default: a new one); the daemon keeps it for its life. */
  planner?: JobPlanner;
}

export interface WatchHandle {
  /** Resolves once the initial scan is done. */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Long-running mode: chokidar on the roots; any change to a segment .log re-evaluates its
 * partition directory (debounced), archive segments that are not quiet yet get a timer.
 */
export function startWatching(options: WatchOptions): WatchHandle {
  const { config, queue, redis, logger } = options;
  const planner = options.planner ?? new JobPlanner(config, logger);
  const rules = readinessRules(config);
  const debounceMs = options.debounceMs ?? 1000;
  // Said once per log dir and reason: an active partition is evaluated every second.
  const refusedSaid = new Map<string, string>();
  const queueReady = async (ready: readonly ReadySegment[]): Promise<PlannedJobs & { queued: number }> => {
    const plan = await planner.jobsFor(ready);
    for (const [logDir, reason] of plan.refused) {
      if (refusedSaid.get(logDir) === reason) continue;
      refusedSaid.set(logDir, reason);
      logger?.error({ logDir }, `nothing queued for this log dir: ${reason}`);
    }
    const enq = await enqueueSegments(queue, redis, config, plan.jobs);
    return { ...plan, queued: enq.jobIds.length };
  };
  // The stage dir holds converted copies laid out like partitions: never segments to queue.
  const stageDir =
    config.stageDir === undefined
      ? undefined
      : (() => {
          try {
            return realpathSync(config.stageDir);
          } catch {
            return resolve(config.stageDir);
          }
        })();
  const timers = new Map<string, NodeJS.Timeout>();
  const rechecks = new Map<string, NodeJS.Timeout>();
  let closed = false;

  const evaluate = async (dir: string): Promise<void> => {
    if (closed) return;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return; // directory removed
    }
    // The partition as chokidar names it, under the roots: its parent is the log dir.
    const verdict = await evaluatePartition(dir, names, rules, Date.now(), [dirname(dir)]);
    const enq = await queueReady(verdict.ready);
    if (enq.queued > 0)
      logger?.info({ dir, queued: enq.queued, prepare: enq.held.size > 0 }, 'queued segments');
    clearTimeout(rechecks.get(dir));
    rechecks.delete(dir);
    if (verdict.recheckAt !== undefined && !closed) {
      const t = setTimeout(() => schedule(dir, 0), Math.max(0, verdict.recheckAt - Date.now()));
      rechecks.set(dir, t);
    }
    options.onEvaluated?.(dir, enq.queued);
  };

  const schedule = (dir: string, delay = debounceMs): void => {
    if (closed) return;
    clearTimeout(timers.get(dir));
    timers.set(
      dir,
      setTimeout(() => {
        timers.delete(dir);
        evaluate(dir).catch((err) => logger?.error({ err, dir }, 'evaluating partition failed'));
      }, delay),
    );
  };

  const watcher = watch(config.roots, {
    persistent: true,
    ignoreInitial: false,
    followSymlinks: false,
    depth: options.maxDepth ?? 4,
    ignored: (path, stats) => {
      if (stageDir !== undefined && isInside(path, stageDir)) return true;
      const name = basename(path);
      if (stats?.isDirectory() && isKafkaInternalDir(name)) return true;
      return stats?.isFile() === true && !SEGMENT_NAME_RE.test(name);
    },
  });
  const onFile = (path: string): void => {
    if (SEGMENT_NAME_RE.test(basename(path))) schedule(dirname(path));
  };
  watcher.on('add', onFile).on('change', onFile).on('unlink', onFile);
  watcher.on('error', (err) => logger?.error({ err }, 'watch error'));
  const ready = new Promise<void>((resolve) => watcher.once('ready', () => resolve()));

  let rescanning = false;
  const rescanMs = options.rescanMs ?? 600_000;
  const rescan =
    rescanMs > 0
      ? setInterval(() => {
          if (rescanning || closed) return;
          rescanning = true;
          findReadySegments(config.roots, rules, { realPaths: true })
            .then((scan) => queueReady(scan.ready))
            .then((r) => {
              if (r.queued > 0) logger?.info({ queued: r.queued }, 'rescan queued segments');
            })
            .catch((err) => logger?.error({ err }, 'rescan failed'))
            .finally(() => {
              rescanning = false;
            });
        }, rescanMs)
      : undefined;

  return {
    ready,
    async close() {
      closed = true;
      clearInterval(rescan);
      for (const t of [...timers.values(), ...rechecks.values()]) clearTimeout(t);
      await watcher.close();
    },
  };
}
