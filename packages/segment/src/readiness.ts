/**
 * Which segments are ready to convert: the rules the watcher queues by (and that decide what an
 * archive's newest segment is). A segment with a newer segment beside it has been rolled: Kafka
 * never appends to it again. The newest one is the active segment and is never ready on a live
 * broker's log dir; in an archive (`requireRolled: false`) it is ready once its mtime is
 * `quietMs` old.
 */
import path from 'node:path';
import { listSegments, type WalkOptions, type WalkResult, walkLogDirs } from './discovery.js';
import { BACKUP_DIR_MARKER, notAPartitionLog } from './names.js';

export interface ReadinessRules {
  /** Live broker dirs: only segments with a newer segment beside them are ready. */
  requireRolled: boolean;
  /** Archive mode: the newest segment is ready once unchanged for this long. */
  quietMs: number;
}

export interface ReadySegment {
  /** Path of the .log file (a real path when walked with realPaths). */
  path: string;
  size: number;
  mtimeMs: number;
}

export interface PartitionVerdict {
  ready: ReadySegment[];
  /** Segments seen but not ready (the active one, or an archive's newest one still changing). */
  notReady: number;
  /** When the newest segment of an archive becomes quiet enough to re-check (epoch ms). */
  recheckAt?: number;
}

/**
 * Whether a partition's newest segment is ready: never on a live broker's log dir (it is the
 * active segment), in an archive once its .log has been unchanged for `quietMs` (a copy may still
 * be writing it). Every older segment is always ready. The watcher and `migrate` both decide by it.
 */
export function newestSegmentReady(newest: { mtimeMs: number }, rules: ReadinessRules, now: number): boolean {
  if (rules.requireRolled) return false;
  // quietMs 0 (--include-active) waits for nothing, even for a file written this millisecond
  // (its mtime has sub-millisecond digits the clock's `now` lacks) or stamped in the future.
  return rules.quietMs === 0 || now - newest.mtimeMs >= rules.quietMs;
}

/** The ready segments of one partition directory; `names` are its entries (any order). */
export async function evaluatePartition(
  dir: string,
  names: readonly string[],
  rules: ReadinessRules,
  now: number = Date.now(),
): Promise<PartitionVerdict> {
  const verdict: PartitionVerdict = { ready: [], notReady: 0 };
  // Only a partition log Kafka loads (never the KRaft metadata log), never a backup.
  if (notAPartitionLog(path.basename(dir)) || names.includes(BACKUP_DIR_MARKER)) return verdict;
  const segments = await listSegments(dir, names);
  if (segments.length === 0) return verdict;
  const newest = segments[segments.length - 1];
  for (const s of segments.slice(0, -1))
    verdict.ready.push({ path: s.path, size: s.size, mtimeMs: s.mtimeMs });
  if (newestSegmentReady(newest, rules, now)) {
    verdict.ready.push({ path: newest.path, size: newest.size, mtimeMs: newest.mtimeMs });
  } else {
    verdict.notReady++;
    if (!rules.requireRolled) verdict.recheckAt = Math.trunc(newest.mtimeMs) + rules.quietMs + 1;
  }
  return verdict;
}

export interface ReadyScan extends WalkResult {
  partitions: number;
  ready: ReadySegment[];
  notReady: number;
}

/** Every ready segment under the roots, sorted by path. */
export async function findReadySegments(
  roots: readonly string[],
  rules: ReadinessRules,
  options: WalkOptions & { now?: number } = {},
): Promise<ReadyScan> {
  const now = options.now ?? Date.now();
  const ready: ReadySegment[] = [];
  let partitions = 0;
  let notReady = 0;
  const walked = await walkLogDirs(
    roots,
    async (dir, names) => {
      partitions++;
      const v = await evaluatePartition(dir, names, rules, now);
      ready.push(...v.ready);
      notReady += v.notReady;
    },
    options,
  );
  ready.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { ...walked, partitions, ready, notReady };
}
