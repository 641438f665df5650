import { stat } from 'node:fs/promises';
import path from 'node:path';
import { findPartitionSegments, type IgnoredDir, listSegments } from '@seglift/segment';
import { UsageError } from './exit-codes.js';

/** A partition as a command sees it: its directory and the segments the operator named. */
export interface TargetPartition {
  dir: string;
  /** Every segment named or found, by base offset. */
  segments: { path: string; size: number }[];
  /** The partition's highest base offset segment (what the broker appends to). */
  activePath?: string;
  /** A single .log was named: it is audited/verified as that segment, active or not. */
  namedFile: boolean;
}

export interface Targets {
  partitions: TargetPartition[];
  ignored: IgnoredDir[];
}

/**
 * The segments behind a command's positional arguments: a `.log` file is that segment, a
 * directory is searched like migrate searches it (log dirs, partition dirs, their parents). A
 * path that does not exist is a usage error, never an empty (and "ready") result.
 */
export async function resolveTargets(args: string[], command: string): Promise<Targets> {
  const out: Targets = { partitions: [], ignored: [] };
  // Each partition directory is listed once: a shell glob names every segment of it (4,800 files
  // of 48 partitions were 480,000 stats without this).
  const activeOf = new Map<string, Promise<string | undefined>>();
  for (const arg of args) {
    const st = await stat(arg).catch(() => undefined);
    if (!st) throw new UsageError(`${arg}: no such file or directory`, command);
    if (st.isFile()) {
      const dir = path.dirname(path.resolve(arg));
      if (!activeOf.has(dir))
        activeOf.set(
          dir,
          listSegments(dir).then((all) => all.at(-1)?.path),
        );
      out.partitions.push({
        dir,
        segments: [{ path: arg, size: st.size }],
        activePath: await activeOf.get(dir),
        namedFile: true,
      });
      continue;
    }
    const found = await findPartitionSegments(arg, { includeActive: true });
    out.ignored.push(...found.ignored);
    for (const p of found.partitions) {
      out.partitions.push({
        dir: p.partitionDir,
        segments: p.segments.map((s) => ({ path: s.path, size: s.size })),
        activePath: p.active?.path,
        namedFile: false,
      });
    }
  }
  return out;
}

/** `no Kafka segments under X` with what was passed over, for an empty result. */
export function noSegmentsMessage(args: string[], ignored: IgnoredDir[]): string {
  const why = ignored.length
    ? `; passed over: ${ignored.map((i) => `${i.dir} (${i.reason})`).join('; ')}`
    : '';
  return `no Kafka segments under ${args.join(', ')}${why}`;
}
