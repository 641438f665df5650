import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { findPartitionSegments, type IgnoredDir, listSegments, realPathWithinRoots } from '@seglift/segment';
import { UsageError } from './exit-codes.js';

/** A partition as a command sees it: its directory and the segments the operator named. */
export interface TargetPartition {
  dir: string;
  /**
   * The directory's path under the roots given (`clicks-0`; `data1/clicks-0` and `data2/clicks-0`
   * when two log dirs each hold a clicks-0): what a person reads in a table.
   */
  name: string;
  /** Every segment named or found, by base offset. */
  segments: { path: string; size: number; mtimeMs: number }[];
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
 * Every path given must exist before a command reads or writes anything: a missing one is a usage
 * error (exit 2) for every command alike, named as the shell would (`X: no such file or
 * directory`). One that vanishes later (retention deleted it meanwhile) fails as its segment (1).
 */
export async function requireExistingPaths(args: readonly string[], command: string): Promise<void> {
  for (const arg of args) {
    // stat follows a symlink: a dangling one is missing too.
    const exists = await stat(arg).then(
      () => true,
      () => false,
    );
    if (!exists) throw new UsageError(`${arg}: no such file or directory`, command);
  }
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
  await requireExistingPaths(args, command);
  for (const arg of args) {
    const st = await stat(arg).catch(() => undefined);
    if (!st) throw new UsageError(`${arg}: no such file or directory`, command);
    // Anything but a directory is a named segment: a FIFO or device too, refused by name when it
    // is read (never searched as a directory and reported as "no segments").
    if (!st.isDirectory()) {
      const dir = path.dirname(path.resolve(arg));
      if (!activeOf.has(dir))
        activeOf.set(
          dir,
          listSegments(dir).then((all) => all.at(-1)?.path),
        );
      out.partitions.push({
        dir,
        name: '',
        segments: [{ path: arg, size: st.size, mtimeMs: st.mtimeMs }],
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
        name: '',
        segments: p.segments.map((s) => ({ path: s.path, size: s.size, mtimeMs: s.mtimeMs })),
        activePath: p.active?.path,
        namedFile: false,
      });
    }
  }
  const base = commonAncestor(out.partitions.map((p) => p.dir));
  for (const p of out.partitions) p.name = path.relative(base, p.dir) || path.basename(p.dir);
  return out;
}

/**
 * With roots configured (SEGLIFT_ROOTS, `roots:`), every path a command writes or converts
 * (migrate's dirs, convert's inputs and --out, --backup-dir, --stage-dir) must resolve, by real
 * path, inside one of them, as every job path must in the worker: PathOutsideRootsError, exit 2,
 * before anything is read or written. No roots: no confinement (one operator, one machine).
 */
export async function requireWithinRoots(
  paths: readonly (string | undefined)[],
  roots: readonly string[],
  cwd: string,
): Promise<void> {
  if (roots.length === 0) return;
  for (const p of paths) {
    if (p === undefined) continue;
    await realPathWithinRoots(path.isAbsolute(p) ? p : `${cwd}${path.sep}${p}`, roots);
  }
}

/** The deepest directory holding every one of `dirs` (absolute paths). */
export function commonAncestor(dirs: string[]): string {
  if (dirs.length === 0) return '/';
  let parts = dirs[0].split(path.sep);
  for (const d of dirs.slice(1)) {
    const other = d.split(path.sep);
    let i = 0;
    while (i < parts.length && i < other.length && parts[i] === other[i]) i++;
    parts = parts.slice(0, i);
  }
  return parts.join(path.sep) || path.sep;
}

/** `no Kafka segments under X` with what was passed over, for an empty result. */
export function noSegmentsMessage(args: string[], ignored: IgnoredDir[]): string {
  const why = ignored.length
    ? `; passed over: ${ignored.map((i) => `${i.dir} (${i.reason})`).join('; ')}`
    : '';
  const missing = args.filter((a) => !existsSync(a));
  if (missing.length > 0) return `${missing.join(', ')}: no such file or directory${why}`;
  return `no Kafka segments under ${args.join(', ')}${why}`;
}
