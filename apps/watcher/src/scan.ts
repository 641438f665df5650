import type { Dirent } from 'node:fs';
import { readdir, realpath, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Config } from '@seglift/config';
import {
  BACKUP_DIR_MARKER,
  isKafkaInternalDir,
  notAPartitionLog,
  SEGMENT_NAME_RE as SEGMENT_LOG_RE,
} from '@seglift/segment';

export { isKafkaInternalDir, SEGMENT_LOG_RE };

export interface ReadySegment {
  /** Real path of the .log file. */
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

export type Readiness = Config['readiness'];

/**
 * Which segments of one partition directory are ready. A segment with a newer segment beside it
 * has been rolled: Kafka never appends to it again. The newest one is the active segment and is
 * never ready when `requireRolled`; in archive mode (`requireRolled: false`) it is ready once its
 * mtime is at least `quietMs` old. `names` are the directory's entry names (any order).
 */
export async function evaluatePartition(
  dir: string,
  names: readonly string[],
  readiness: Readiness,
  now: number = Date.now(),
): Promise<PartitionVerdict> {
  // Zero-padded names sort like their base offsets.
  const logs = names.filter((n) => SEGMENT_LOG_RE.test(n)).sort();
  const verdict: PartitionVerdict = { ready: [], notReady: 0 };
  // Only directories Kafka loads as partition logs (never the KRaft metadata log), never backups.
  if (logs.length === 0 || notAPartitionLog(basename(dir)) || names.includes(BACKUP_DIR_MARKER))
    return verdict;
  const newest = logs[logs.length - 1];
  const candidates = readiness.requireRolled ? logs.slice(0, -1) : logs;
  if (readiness.requireRolled) verdict.notReady++;
  const stats = await Promise.all(candidates.map((n) => statFile(join(dir, n))));
  candidates.forEach((name, i) => {
    const s = stats[i];
    if (s === undefined) return; // deleted meanwhile (retention)
    if (name === newest && !readiness.requireRolled && now - s.mtimeMs < readiness.quietMs) {
      verdict.notReady++;
      verdict.recheckAt = Math.trunc(s.mtimeMs) + readiness.quietMs + 1;
      return;
    }
    verdict.ready.push({ path: join(dir, name), size: s.size, mtimeMs: s.mtimeMs });
  });
  return verdict;
}

async function statFile(p: string): Promise<{ size: number; mtimeMs: number } | undefined> {
  try {
    const s = await stat(p);
    return s.isFile() ? { size: s.size, mtimeMs: s.mtimeMs } : undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export interface ScanOptions {
  now?: number;
  /** Directory levels below each root to descend (log dir -> partition dir is 1). */
  maxDepth?: number;
  /** Directories read at once. */
  parallelism?: number;
}

export interface ScanResult {
  roots: string[];
  missingRoots: string[];
  partitions: number;
  ready: ReadySegment[];
  notReady: number;
}

/**
 * Finds ready segments under the roots with plain readdir (no watchers: cheap on 10,000
 * partition directories). Symlinks are not followed, so nothing outside the (real) roots is
 * reached; Kafka's own directories (isKafkaInternalDir) and seglift's backups are skipped.
 */
export async function scanRoots(
  roots: readonly string[],
  readiness: Readiness,
  options: ScanOptions = {},
): Promise<ScanResult> {
  const now = options.now ?? Date.now();
  const maxDepth = options.maxDepth ?? 4;
  const parallelism = options.parallelism ?? 32;
  const result: ScanResult = { roots: [], missingRoots: [], partitions: 0, ready: [], notReady: 0 };
  const pending: Array<{ dir: string; depth: number }> = [];
  for (const root of roots) {
    try {
      const real = await realpath(root);
      if (!result.roots.includes(real)) {
        result.roots.push(real);
        pending.push({ dir: real, depth: 0 });
      }
    } catch {
      result.missingRoots.push(root);
    }
  }
  let active = 0;
  await new Promise<void>((resolve, reject) => {
    const pump = (): void => {
      if (pending.length === 0 && active === 0) {
        resolve();
        return;
      }
      while (active < parallelism && pending.length > 0) {
        const item = pending.pop()!;
        active++;
        visit(item.dir, item.depth)
          .then(() => {
            active--;
            pump();
          })
          .catch(reject);
      }
    };
    const visit = async (dir: string, depth: number): Promise<void> => {
      let entries: Dirent[];
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') return;
        throw err;
      }
      if (entries.some((e) => e.name === BACKUP_DIR_MARKER)) return;
      const files: string[] = [];
      for (const e of entries) {
        if (e.isFile()) files.push(e.name);
        else if (e.isDirectory() && depth < maxDepth && !isKafkaInternalDir(e.name)) {
          pending.push({ dir: join(dir, e.name), depth: depth + 1 });
        }
      }
      if (files.some((n) => SEGMENT_LOG_RE.test(n)) && !notAPartitionLog(basename(dir))) {
        result.partitions++;
        const v = await evaluatePartition(dir, files, readiness, now);
        result.ready.push(...v.ready);
        result.notReady += v.notReady;
      }
    };
    pump();
  });
  result.ready.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return result;
}
