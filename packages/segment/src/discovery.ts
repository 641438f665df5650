import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { parseSegmentName } from './names.js';

export interface SegmentFile {
  path: string;
  baseOffset: bigint;
  size: number;
  mtimeMs: number;
}

/** Kafka's temporary directories (ref §6.1): a partition being deleted or moved between log dirs. */
function isTemporaryDir(name: string): boolean {
  return name.endsWith('-delete') || name.endsWith('-future') || name.endsWith('-stray');
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
    const st = await stat(p);
    if (!st.isFile()) continue;
    out.push({ path: p, baseOffset, size: st.size, mtimeMs: st.mtimeMs });
  }
  return out.sort((a, b) => (a.baseOffset < b.baseOffset ? -1 : a.baseOffset > b.baseOffset ? 1 : 0));
}

/**
 * Partition directories under `root` (itself included): directories holding at least one segment.
 * Descends into log dirs and their parents, never into a partition dir, skips `-delete`/`-future`
 * dirs and hidden entries. Sorted by path.
 */
export async function findPartitionDirs(root: string, maxDepth = 4): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number) => {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch {
      return;
    }
    if (entries.some((e) => e.isFile() && parseSegmentName(e.name) !== undefined)) {
      found.push(dir);
      return;
    }
    if (depth >= maxDepth) return;
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.') || isTemporaryDir(e.name)) continue;
      await walk(path.join(dir, e.name), depth + 1);
    }
  };
  const base = path.basename(path.resolve(root));
  if (!isTemporaryDir(base)) await walk(path.resolve(root), 0);
  return found.sort();
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

export async function findPartitionSegments(
  root: string,
  options: { includeActive?: boolean } = {},
): Promise<PartitionSegments[]> {
  const out: PartitionSegments[] = [];
  for (const dir of await findPartitionDirs(root)) {
    const segments = await listSegments(dir);
    const active = segments[segments.length - 1];
    out.push({
      partitionDir: dir,
      segments,
      active,
      eligible: options.includeActive ? segments : segments.slice(0, -1),
    });
  }
  return out;
}
