import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';

const SEGMENT_RE = /^(\d{20})\.log$/;
const PARTITION_DIR_RE = /^(.+)-(\d+)$/;

export interface PartitionDir {
  dir: string;
  topic: string;
  partition: number;
  /** .log files in base-offset order; the last one is the active segment (ref §6.1). */
  segments: { path: string; baseOffset: bigint }[];
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

async function partitionOf(dir: string): Promise<PartitionDir | null> {
  const names = await readdir(dir);
  const segments = names
    .map((n) => SEGMENT_RE.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ path: path.join(dir, m[0]), baseOffset: BigInt(m[1]) }))
    .sort((a, b) => (a.baseOffset < b.baseOffset ? -1 : a.baseOffset > b.baseOffset ? 1 : 0));
  const m = PARTITION_DIR_RE.exec(path.basename(dir));
  if (segments.length === 0 && !m) return null;
  return {
    dir,
    topic: m ? m[1] : path.basename(dir),
    partition: m ? Number(m[2]) : -1,
    segments,
  };
}

/**
 * Partition directories under each argument: the argument itself when it holds segments, else
 * its `<topic>-<partition>` subdirectories (a broker log.dir). `-delete`/`-future` directories
 * do not match the name pattern and are left out, like the broker does.
 */
export async function findPartitions(dirs: string[]): Promise<PartitionDir[]> {
  const out: PartitionDir[] = [];
  for (const dir of dirs) {
    const own = await partitionOf(dir);
    if (own && own.segments.length > 0) {
      out.push(own);
      continue;
    }
    for (const name of (await readdir(dir)).sort()) {
      const sub = path.join(dir, name);
      if (!PARTITION_DIR_RE.test(name) || !(await isDir(sub))) continue;
      const p = await partitionOf(sub);
      if (p && p.segments.length > 0) out.push(p);
    }
  }
  return out;
}
