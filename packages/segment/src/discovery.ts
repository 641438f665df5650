import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { BACKUP_DIR_MARKER, notAPartitionLog, parseSegmentName } from './names.js';

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
export async function listSegments(partitionDir: string): Promise<SegmentFile[]> {
  const out: SegmentFile[] = [];
  for (const name of await readdir(partitionDir)) {
    const baseOffset = parseSegmentName(name);
    if (baseOffset === undefined) continue;
    const p = path.join(partitionDir, name);
    const st = await stat(p).catch(() => undefined);
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

export interface PartitionDirs {
  /** Directories Kafka loads as partition logs that hold at least one segment, sorted. */
  partitions: string[];
  /** Directories holding segments that Kafka never loads as a partition log, and backups. */
  ignored: IgnoredDir[];
}

const isBackupDir = (entries: Dirent[]) => entries.some((e) => e.name === BACKUP_DIR_MARKER);

/**
 * Partition directories under `root` (itself included): directories holding at least one
 * segment that Kafka would load as a partition log (LogManager.loadLogs: named
 * `<topic>-<partition>`, not the KRaft metadata log, not being deleted/moved/stray). Descends
 * into log dirs and their parents (up to `maxDepth`), never into a partition dir, a seglift
 * backup directory or a hidden one.
 */
export async function findPartitionDirs(root: string, maxDepth = 4): Promise<PartitionDirs> {
  const partitions: string[] = [];
  const ignored: IgnoredDir[] = [];
  const walk = async (dir: string, depth: number) => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    if (isBackupDir(entries)) {
      ignored.push({ dir, reason: 'a seglift backup directory' });
      return;
    }
    const name = path.basename(dir);
    const why = notAPartitionLog(name);
    if (entries.some((e) => e.isFile() && parseSegmentName(e.name) !== undefined)) {
      if (why) ignored.push({ dir, reason: why });
      else partitions.push(dir);
      return;
    }
    if (depth >= maxDepth) return;
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue;
      await walk(path.join(dir, e.name), depth + 1);
    }
  };
  await walk(path.resolve(root), 0);
  return { partitions: partitions.sort(), ignored: ignored.sort((a, b) => a.dir.localeCompare(b.dir)) };
}

/** The active segment is the one with the highest base offset: the broker appends to it. */
export async function isActiveSegment(logPath: string): Promise<boolean> {
  const segments = await listSegments(path.dirname(logPath));
  const last = segments[segments.length - 1];
  return last !== undefined && path.resolve(last.path) === path.resolve(logPath);
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
