/**
 * Finding what a broker's log dirs hold: one walker for every front door (migrate, audit,
 * verify, the watcher), so that a directory is a partition log, or passed over, by one rule
 * (names.ts).
 */
import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  BACKUP_DIR_MARKER,
  isKafkaInternalDir,
  notAPartitionLog,
  parseSegmentName,
  STAGE_DIR_MARKER,
} from './names.js';

export interface SegmentFile {
  path: string;
  baseOffset: bigint;
  size: number;
  mtimeMs: number;
}

/**
 * The segments of a partition directory, by base offset: only `<20 digits>.log` files, so
 * `.swap`, `.deleted`, `.cleaned` and our temp files are never listed.
 */
export async function listSegments(partitionDir: string, names?: readonly string[]): Promise<SegmentFile[]> {
  const out: SegmentFile[] = [];
  for (const name of names ?? (await readdir(partitionDir))) {
    const baseOffset = parseSegmentName(name);
    if (baseOffset === undefined) continue;
    const p = path.join(partitionDir, name);
    const st = await stat(p).catch(() => undefined); // deleted meanwhile (retention)
    if (!st?.isFile()) continue;
    out.push({ path: p, baseOffset, size: st.size, mtimeMs: st.mtimeMs });
  }
  return out.sort((a, b) => (a.baseOffset < b.baseOffset ? -1 : a.baseOffset > b.baseOffset ? 1 : 0));
}

/** A directory discovery passed over, and why (for the front doors to say so once). */
export interface IgnoredDir {
  dir: string;
  reason: string;
}

export interface WalkOptions {
  /** Directory levels below each root to descend (log dir -> partition dir is 1). Default 4. */
  maxDepth?: number;
  /** Directories read at once (default 32: cheap on 10,000 partition directories). */
  parallelism?: number;
  /** Report roots and partitions by real path (the watcher's job ids), not as given. */
  realPaths?: boolean;
}

export interface WalkResult {
  /** The roots walked (real paths with realPaths), each once. */
  roots: string[];
  /** Roots that do not exist. */
  missingRoots: string[];
  /** Directories holding segments that Kafka never loads as a partition log, and backups. */
  ignored: IgnoredDir[];
}

/**
 * Walks log dirs and their parents (every root itself included) with plain readdir, calling
 * `onPartition` for each directory that holds a segment and that Kafka would load as a partition
 * log (LogManager.loadLogs: named `<topic>-<partition>`, not the KRaft metadata log, not being
 * deleted/moved/stray). Never descends into a partition dir, a seglift backup directory, Kafka's
 * own directories (isKafkaInternalDir) or a hidden one; never follows a symlink below a root.
 */
export async function walkLogDirs(
  roots: readonly string[],
  onPartition: (dir: string, names: string[]) => void | Promise<void>,
  options: WalkOptions = {},
): Promise<WalkResult> {
  const maxDepth = options.maxDepth ?? 4;
  const parallelism = options.parallelism ?? 32;
  const result: WalkResult = { roots: [], missingRoots: [], ignored: [] };
  const pending: Array<{ dir: string; depth: number }> = [];
  for (const root of roots) {
    const resolved = options.realPaths
      ? await realpath(root).catch(() => undefined)
      : await stat(root).then(
          () => path.resolve(root),
          () => undefined,
        );
    if (resolved === undefined) result.missingRoots.push(root);
    else if (!result.roots.includes(resolved)) {
      result.roots.push(resolved);
      pending.push({ dir: resolved, depth: 0 });
    }
  }
  const visit = async (dir: string, depth: number): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') return;
      throw err;
    }
    if (entries.some((e) => e.name === BACKUP_DIR_MARKER)) {
      result.ignored.push({ dir, reason: 'a seglift backup directory' });
      return;
    }
    if (entries.some((e) => e.name === STAGE_DIR_MARKER)) {
      result.ignored.push({ dir, reason: 'a seglift stage directory' });
      return;
    }
    const names = entries.map((e) => e.name);
    if (entries.some((e) => e.isFile() && parseSegmentName(e.name) !== undefined)) {
      const why = notAPartitionLog(path.basename(dir));
      if (why) result.ignored.push({ dir, reason: why });
      else await onPartition(dir, names);
      return;
    }
    if (depth >= maxDepth) return;
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue;
      const child = path.join(dir, e.name);
      // Kafka's own directories are named, never read: an operator sees what was passed over.
      if (isKafkaInternalDir(e.name)) result.ignored.push({ dir: child, reason: notAPartitionLog(e.name)! });
      else pending.push({ dir: child, depth: depth + 1 });
    }
  };
  // A pool of `parallelism` readers over a growing list of directories.
  let active = 0;
  await new Promise<void>((resolve, reject) => {
    const pump = (): void => {
      if (pending.length === 0 && active === 0) {
        resolve();
        return;
      }
      while (active < parallelism && pending.length > 0) {
        const { dir, depth } = pending.pop()!;
        active++;
        visit(dir, depth).then(() => {
          active--;
          pump();
        }, reject);
      }
    };
    pump();
  });
  result.ignored.sort((a, b) => a.dir.localeCompare(b.dir));
  return result;
}

export interface PartitionDirs {
  /** Directories Kafka loads as partition logs that hold at least one segment, sorted. */
  partitions: string[];
  /** Directories holding segments that Kafka never loads as a partition log, and backups. */
  ignored: IgnoredDir[];
}

/** Partition directories under `root` (itself included), by the walker's rules. */
export async function findPartitionDirs(root: string, maxDepth = 4): Promise<PartitionDirs> {
  const partitions: string[] = [];
  const { ignored } = await walkLogDirs([root], (dir) => void partitions.push(dir), { maxDepth });
  return { partitions: partitions.sort(), ignored };
}

/** The active segment is the one with the highest base offset: the broker appends to it. */
export async function isActiveSegment(logPath: string): Promise<boolean> {
  const base = parseSegmentName(path.basename(logPath));
  if (base === undefined) return false;
  for (const name of await readdir(path.dirname(logPath))) {
    const other = parseSegmentName(name);
    if (other !== undefined && other > base) return false;
  }
  return true;
}

export interface PartitionSegments {
  partitionDir: string;
  /** Every segment, by base offset. */
  segments: SegmentFile[];
  /** The highest base offset's segment. */
  active?: SegmentFile;
  /** The segments to convert: all but the active one unless includeActive. */
  eligible: SegmentFile[];
}

export interface Discovery {
  partitions: PartitionSegments[];
  ignored: IgnoredDir[];
}

export async function findPartitionSegments(
  root: string,
  options: { includeActive?: boolean } = {},
): Promise<Discovery> {
  const { partitions: dirs, ignored } = await findPartitionDirs(root);
  const partitions: PartitionSegments[] = [];
  for (const dir of dirs) {
    const segments = await listSegments(dir);
    const active = segments[segments.length - 1];
    partitions.push({
      partitionDir: dir,
      segments,
      active,
      eligible: options.includeActive ? segments : segments.slice(0, -1),
    });
  }
  return { partitions, ignored };
}
