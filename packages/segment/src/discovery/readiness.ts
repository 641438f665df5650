/**
 * Which segments are ready to convert: the rules the watcher queues by, and that migrate and audit
 * apply too. On a live broker's log dir a segment with a newer segment beside it has been rolled:
 * Kafka never appends to it again; the newest one is the active segment and is never ready. In an
 * archive (`requireRolled: false`) no broker appends, but a copy may still be writing any segment
 * (parallel rsync and object-store downloads write files out of order): every segment is ready
 * once its `.log` mtime is `quietMs` old (every write moves the mtime, so its size has not changed
 * either), whatever its place in the partition.
 */
import path from 'node:path';
import { BACKUP_DIR_MARKER, notAPartitionLog } from '../files/names.js';
import {
  isActiveSegment,
  listSegments,
  type WalkOptions,
  type WalkResult,
  walkLogDirs,
} from './discovery.js';

export interface ReadinessRules {
  /** Live broker dirs: only segments with a newer segment beside them are ready. */
  requireRolled: boolean;
  /** Archive mode: a segment is ready once its .log has been unchanged for this long. */
  quietMs: number;
}

/**
 * The rules a front door decides by, built once from its settings: `includeActive`
 * (`--include-active`, a stopped broker) takes every segment, the newest too, waiting for nothing;
 * else the config's `readiness` as set (a live log dir, or an archive with its quietMs); neither:
 * a live broker's log dir (rolled segments only), which is also what a prepare beside a running
 * broker always takes.
 */
export function readinessRules(
  from: { readiness?: Readonly<ReadinessRules>; includeActive?: boolean } = {},
): ReadinessRules {
  if (from.includeActive === true) return { requireRolled: false, quietMs: 0 };
  if (from.readiness !== undefined)
    return { requireRolled: from.readiness.requireRolled, quietMs: from.readiness.quietMs };
  return { requireRolled: true, quietMs: 0 };
}

/**
 * The quiet an in-place conversion checks again when it starts (the inPlace placement's quietMs): an
 * archive's, since a copy may have resumed since the segment was judged ready; none otherwise.
 */
export function quietAtStart(rules: ReadinessRules): number | undefined {
  return !rules.requireRolled && rules.quietMs > 0 ? rules.quietMs : undefined;
}

export interface ReadySegment {
  /** Path of the .log file (a real path when walked with realPaths). */
  path: string;
  size: number;
  mtimeMs: number;
  /**
   * The log dirs its partition was found in (walkLogDirs' `logDirs`, real paths with realPaths):
   * the `.lock`s to take or probe. For a linked partition not dirname(dirname(path)).
   */
  logDirs?: readonly string[];
}

export interface PartitionVerdict {
  ready: ReadySegment[];
  /** Segments seen but not ready (the active one, or an archive's segments still changing). */
  notReady: number;
  /** When the first of an archive's segments still changing becomes quiet enough to re-check (epoch ms). */
  recheckAt?: number;
}

/** Whether a `.log` last written at `mtimeMs` has been unchanged for `quietMs` at `now`. */
function quiet(mtimeMs: number, quietMs: number, now: number): boolean {
  // quietMs 0 (--include-active) waits for nothing, even for a file written this millisecond
  // (its mtime has sub-millisecond digits the clock's `now` lacks) or stamped in the future.
  return quietMs === 0 || now - mtimeMs >= quietMs;
}

/** When a `.log` last written at `mtimeMs` is worth checking again for quiet (epoch ms). */
function quietAt(mtimeMs: number, quietMs: number): number {
  return Math.trunc(mtimeMs) + quietMs + 1;
}

/**
 * Whether a partition's newest segment is ready: never on a live broker's log dir (it is the
 * active segment), in an archive once its .log has been unchanged for `quietMs`.
 */
export function newestSegmentReady(newest: { mtimeMs: number }, rules: ReadinessRules, now: number): boolean {
  return !rules.requireRolled && quiet(newest.mtimeMs, rules.quietMs, now);
}

/**
 * Whether one segment of a partition is ready (`newest`: it has the highest base offset): on a
 * live broker's log dir every rolled one; in an archive every one whose .log has been unchanged
 * for `quietMs`, older ones too (a copy writes files in any order).
 */
export function segmentReady(
  segment: { mtimeMs: number },
  newest: boolean,
  rules: ReadinessRules,
  now: number,
): boolean {
  return rules.requireRolled ? !newest : quiet(segment.mtimeMs, rules.quietMs, now);
}

/**
 * A partition's segments (by base offset) split by `segmentReady`, with when the first one not
 * ready in an archive is worth checking again. The watcher, `migrate` and `audit` all decide by it.
 */
export function splitReady<S extends { mtimeMs: number }>(
  segments: readonly S[],
  rules: ReadinessRules,
  now: number,
): { ready: S[]; notReady: S[]; recheckAt?: number } {
  const out: { ready: S[]; notReady: S[]; recheckAt?: number } = { ready: [], notReady: [] };
  segments.forEach((s, i) => {
    if (segmentReady(s, i === segments.length - 1, rules, now)) {
      out.ready.push(s);
      return;
    }
    out.notReady.push(s);
    if (!rules.requireRolled) {
      const at = quietAt(s.mtimeMs, rules.quietMs);
      out.recheckAt = Math.min(out.recheckAt ?? at, at);
    }
  });
  return out;
}

/** One segment's readiness now, and when one still changing is worth asking again. */
export type SegmentReadiness =
  | { ready: true }
  | { ready: false; reason: 'active-segment' }
  | { ready: false; reason: 'still-changing'; recheckAt: number };

/**
 * Whether the one segment at `segment.path` (its `.log` last written at `mtimeMs`) is ready now,
 * by `segmentReady` as for a whole partition: the worker asks it of the segment a job names, so
 * that a job queued by other rules (or another host's clock) waits, or is refused, as the watcher
 * would have decided.
 */
export async function segmentReadiness(
  segment: { path: string; mtimeMs: number },
  rules: ReadinessRules,
  now: number = Date.now(),
): Promise<SegmentReadiness> {
  // Only a live log dir's rule looks at the segment's place in its partition.
  const newest = rules.requireRolled && (await isActiveSegment(segment.path));
  if (segmentReady(segment, newest, rules, now)) return { ready: true };
  return rules.requireRolled
    ? { ready: false, reason: 'active-segment' }
    : { ready: false, reason: 'still-changing', recheckAt: quietAt(segment.mtimeMs, rules.quietMs) };
}

/**
 * The ready segments of one partition directory; `names` are its entries (any order), `logDirs`
 * the log dirs it was found in (given on to each ready segment).
 */
export async function evaluatePartition(
  dir: string,
  names: readonly string[],
  rules: ReadinessRules,
  now: number = Date.now(),
  logDirs?: readonly string[],
): Promise<PartitionVerdict> {
  const verdict: PartitionVerdict = { ready: [], notReady: 0 };
  // Only a partition log Kafka loads (never the KRaft metadata log), never a backup.
  if (notAPartitionLog(path.basename(dir)) || names.includes(BACKUP_DIR_MARKER)) return verdict;
  const segments = await listSegments(dir, names);
  if (segments.length === 0) return verdict;
  const split = splitReady(segments, rules, now);
  for (const s of split.ready)
    verdict.ready.push({
      path: s.path,
      size: s.size,
      mtimeMs: s.mtimeMs,
      ...(logDirs === undefined ? {} : { logDirs }),
    });
  verdict.notReady = split.notReady.length;
  if (split.recheckAt !== undefined) verdict.recheckAt = split.recheckAt;
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
    async (dir, names, _logDir, logDirs) => {
      partitions++;
      const v = await evaluatePartition(dir, names, rules, now, logDirs);
      ready.push(...v.ready);
      notReady += v.notReady;
    },
    options,
  );
  ready.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { ...walked, partitions, ready, notReady };
}
