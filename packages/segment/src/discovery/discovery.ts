/**
 * Finding what a broker's log dirs hold: one walker for every front door (migrate, audit,
 * verify, the watcher), so that a directory is a partition log, or passed over, by one rule
 * (names.ts).
 */
import type { Dirent } from 'node:fs';
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  BACKUP_DIR_MARKER,
  isKafkaInternalDir,
  notAPartitionLog,
  parseSegmentName,
  STAGE_DIR_MARKER,
} from '../files/names.js';

export interface SegmentFile {
  path: string;
  baseOffset: bigint;
  size: number;
  mtimeMs: number;
}

/**
 * The segments of a partition directory, by base offset: only `<20 digits>.log` names, so
 * `.swap`, `.deleted`, `.cleaned` and our temp files are never listed. A segment name that is not
 * a regular file (a symlink, a FIFO, a device) is listed all the same, never passed over in
 * silence: whoever reads or converts it refuses it by name (segment-file.ts).
 */
export async function listSegments(partitionDir: string, names?: readonly string[]): Promise<SegmentFile[]> {
  const out: SegmentFile[] = [];
  for (const name of names ?? (await readdir(partitionDir))) {
    const baseOffset = parseSegmentName(name);
    if (baseOffset === undefined) continue;
    const p = path.join(partitionDir, name);
    const st = await lstat(p).catch(() => undefined); // deleted meanwhile (retention)
    if (st === undefined || st.isDirectory()) continue;
    // A symlink's size is its target's (what a reader would read); a FIFO or device has none.
    const size = st.isSymbolicLink()
      ? ((await stat(p).catch(() => undefined))?.size ?? 0)
      : st.isFile()
        ? st.size
        : 0;
    out.push({ path: p, baseOffset, size, mtimeMs: st.mtimeMs });
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
 * deleted/moved/stray). Never descends into a partition dir, a seglift backup or stage directory,
 * Kafka's own directories (isKafkaInternalDir) or a hidden one.
 *
 * A symlink to a directory is followed, as Kafka follows one (loadLogs keeps what `isDirectory`
 * says, and java.io.File follows links: a partition moved to another disk and linked back is
 * loaded): passing it over would leave that partition unconverted while audit called the log dir
 * ready. What is found through a link is reported by its real path, so the swap's renames and
 * fsyncs, the partition lock and the job ids are those of the real directory; and a directory is
 * visited once by real path (two names for one partition, a link loop). Confining the real path
 * to configured roots is the converting caller's (migrate's plan, the worker).
 *
 * `logDirs` are the log dirs guarding the partition (`logDirsGuarding`): the directories it was
 * found in, as walked (a root that is itself a partition dir: its parent as given), and its real
 * parent. Every lock taker and probe uses them all: a broker serving the partition holds the
 * `.lock` of whichever it loads it from. `logDir` is the first, one holding it through a link when
 * there is one (where a broker loads it). Partitions are reported once the walk is done, when
 * every way to each is known.
 */
export async function walkLogDirs(
  roots: readonly string[],
  onPartition: (
    dir: string,
    names: string[],
    logDir: string,
    logDirs: readonly string[],
  ) => void | Promise<void>,
  options: WalkOptions = {},
): Promise<WalkResult> {
  const walk = new LogDirWalk(options);
  await walk.addRoots(roots);
  await walk.run();
  return walk.report(onPartition);
}

/** A directory to read: as walked, by real path, how deep, and which log dir holds its entry. */
interface PendingDir {
  dir: string;
  real: string;
  depth: number;
  logDir: string;
  /** Reached through a symlink (or a root): its log dir is listed first. */
  linked: boolean;
}

/** One walk of `walkLogDirs`: a pool of readers over a growing list of directories. */
class LogDirWalk {
  readonly result: WalkResult = { roots: [], missingRoots: [], ignored: [] };
  private readonly maxDepth: number;
  private readonly parallelism: number;
  private readonly pending: PendingDir[] = [];
  private readonly seen = new Set<string>();
  /** Every log dir each directory was reached from (by real path), links first. */
  private readonly via = new Map<string, string[]>();
  private readonly partitions: Array<{ dir: string; real: string; names: string[] }> = [];

  constructor(private readonly options: WalkOptions) {
    this.maxDepth = options.maxDepth ?? 4;
    this.parallelism = options.parallelism ?? 32;
  }

  async addRoots(roots: readonly string[]): Promise<void> {
    const { options, result } = this;
    for (const root of roots) {
      const real = await realpath(root).catch(() => undefined);
      const resolved = options.realPaths ? real : real === undefined ? undefined : path.resolve(root);
      if (resolved === undefined || real === undefined) result.missingRoots.push(root);
      else if (!result.roots.includes(resolved)) {
        result.roots.push(resolved);
        // A root that is a partition dir (maybe a link) lies in the directory of its name as given.
        const parent = path.dirname(path.resolve(root));
        const logDir = options.realPaths ? await realpath(parent).catch(() => parent) : parent;
        this.pending.push({ dir: resolved, real, depth: 0, logDir, linked: true });
      }
    }
  }

  /** Reads `parallelism` directories at a time until none is left. */
  run(): Promise<void> {
    let active = 0;
    return new Promise<void>((resolve, reject) => {
      const pump = (): void => {
        if (this.pending.length === 0 && active === 0) {
          resolve();
          return;
        }
        while (active < this.parallelism && this.pending.length > 0) {
          active++;
          this.visit(this.pending.pop()!).then(() => {
            active--;
            pump();
          }, reject);
        }
      };
      pump();
    });
  }

  /** The partitions found, each with every log dir guarding it; the result. */
  async report(
    onPartition: (
      dir: string,
      names: string[],
      logDir: string,
      logDirs: readonly string[],
    ) => void | Promise<void>,
  ): Promise<WalkResult> {
    const { partitions, parallelism } = this;
    // Log dirs by real path, each resolved once however many partitions they hold.
    const reals = new Map<string, Promise<string>>();
    const realOf = (dir: string) => {
      let r = reals.get(dir);
      if (r === undefined) {
        r = realpath(dir).catch(() => path.resolve(dir));
        reals.set(dir, r);
      }
      return r;
    };
    for (let i = 0; i < partitions.length; i += parallelism)
      await Promise.all(
        partitions.slice(i, i + parallelism).map(async ({ dir, real, names }) => {
          const logDirs = await guarding(real, this.via.get(real)!, realOf);
          await onPartition(dir, names, logDirs[0], logDirs);
        }),
      );
    this.result.ignored.sort((a, b) => a.dir.localeCompare(b.dir));
    return this.result;
  }

  private async visit({ dir, real, depth, logDir, linked }: PendingDir): Promise<void> {
    const from = this.via.get(real) ?? [];
    if (!from.includes(logDir)) linked ? from.unshift(logDir) : from.push(logDir);
    this.via.set(real, from);
    if (this.seen.has(real)) return;
    this.seen.add(real);
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') return;
      throw err;
    }
    const { ignored } = this.result;
    if (entries.some((e) => e.name === BACKUP_DIR_MARKER)) {
      ignored.push({ dir, reason: 'a seglift backup directory' });
      return;
    }
    if (entries.some((e) => e.name === STAGE_DIR_MARKER)) {
      ignored.push({ dir, reason: 'a seglift stage directory' });
      return;
    }
    // Any segment name counts, a symlink or FIFO too: listSegments lists it and it is refused by
    // name, never a partition skipped in silence.
    if (entries.some((e) => !e.isDirectory() && parseSegmentName(e.name) !== undefined)) {
      const why = notAPartitionLog(path.basename(dir));
      if (why) ignored.push({ dir, reason: why });
      else this.partitions.push({ dir, real, names: entries.map((e) => e.name) });
      return;
    }
    if (depth < this.maxDepth) for (const e of entries) await this.child(dir, real, depth, e);
  }

  /** A subdirectory (or a symlink to one) to read next, or Kafka's own, reported. */
  private async child(dir: string, real: string, depth: number, e: Dirent): Promise<void> {
    if (e.name.startsWith('.')) return;
    let child = path.join(dir, e.name);
    let childReal = path.join(real, e.name);
    const linked = e.isSymbolicLink();
    if (linked) {
      const target = await realpath(child).catch(() => undefined); // dangling: nothing to load
      if (target === undefined || !(await stat(target).catch(() => undefined))?.isDirectory()) return;
      child = target;
      childReal = target;
    } else if (!e.isDirectory()) return;
    // Kafka's own directories are named, never read: an operator sees what was passed over.
    if (isKafkaInternalDir(e.name))
      this.result.ignored.push({ dir: child, reason: notAPartitionLog(e.name)! });
    else this.pending.push({ dir: child, real: childReal, depth: depth + 1, logDir: dir, linked });
  }
}

/**
 * Every log dir whose `.lock` guards the partition directory `partitionDir`: each directory it is
 * named in (`namedIn`; by default the parent of its name as given) and the real parent of its
 * real path, each once by real path, the names first. A broker holds the `.lock` of the log dir it
 * loads the partition from, and seglift cannot tell which that is when they differ: `lk/t-0 ->
 * ld2/t-0` is ld2's partition (a broker on ld2) or lk's (a partition moved to another disk and
 * linked back, a broker on lk). So all of them are locked, or probed, before a write.
 *
 * What no path shows is a link from elsewhere to the partition: `/disk2/t-0` named by its real
 * location, linked into a broker's log dir as `ld1/t-0`, is guarded by `/disk2/.lock` only, unless
 * a walk of the configured roots finds the link (`logDirsUnderRoots`; docs/reliability.md §16.1).
 */
export async function logDirsGuarding(
  partitionDir: string,
  namedIn: readonly string[] = [path.dirname(path.resolve(partitionDir))],
): Promise<string[]> {
  const given = path.resolve(partitionDir);
  // Gone (deleted meanwhile): its name's; whoever reads it next fails on it by name.
  const real = await realpath(given).catch(() => given);
  return guarding(real, namedIn, (dir) => realpath(dir).catch(() => path.resolve(dir)));
}

/**
 * The log dirs guarding each partition under `roots` (walkLogDirs' `logDirs`, real paths), by the
 * partition's real path: what a partition named by its real location cannot show, a link to it
 * from a log dir elsewhere in the roots (a partition moved to another disk and linked back into
 * a broker's log dir), is found by walking them. One walk for a whole run.
 */
export async function logDirsUnderRoots(roots: readonly string[]): Promise<Map<string, readonly string[]>> {
  const out = new Map<string, readonly string[]>();
  await walkLogDirs(roots, (dir, _names, _logDir, logDirs) => void out.set(dir, logDirs), {
    realPaths: true,
  });
  return out;
}

async function guarding(
  realPartition: string,
  namedIn: readonly string[],
  realOf: (dir: string) => Promise<string>,
): Promise<string[]> {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const dir of [...namedIn, path.dirname(realPartition)]) {
    const key = await realOf(dir);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(dir);
  }
  return out;
}

export interface PartitionDirs {
  /** Directories Kafka loads as partition logs that hold at least one segment, sorted. */
  partitions: string[];
  /** The log dirs guarding each partition (walkLogDirs' `logDirs`), by partition dir. */
  logDirs: Map<string, readonly string[]>;
  /** Directories holding segments that Kafka never loads as a partition log, and backups. */
  ignored: IgnoredDir[];
}

/** Partition directories under `root` (itself included), by the walker's rules. */
export async function findPartitionDirs(root: string, maxDepth = 4): Promise<PartitionDirs> {
  const partitions: string[] = [];
  const logDirs = new Map<string, readonly string[]>();
  const { ignored } = await walkLogDirs(
    [root],
    (dir, _names, _logDir, all) => {
      partitions.push(dir);
      logDirs.set(dir, all);
    },
    { maxDepth },
  );
  return { partitions: partitions.sort(), logDirs, ignored };
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
  /** The log dirs guarding it (a broker's `.lock` is one of theirs): walkLogDirs' `logDirs`. */
  logDirs: readonly string[];
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
  const { partitions: dirs, logDirs, ignored } = await findPartitionDirs(root);
  const partitions: PartitionSegments[] = [];
  for (const dir of dirs) {
    const segments = await listSegments(dir);
    const active = segments[segments.length - 1];
    partitions.push({
      partitionDir: dir,
      logDirs: logDirs.get(dir)!,
      segments,
      active,
      eligible: options.includeActive ? segments : segments.slice(0, -1),
    });
  }
  return { partitions, ignored };
}
