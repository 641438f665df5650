/**
 * The stage directory of a two-phase migration (docs/operator-guide.md, "Two-phase migration"):
 * `prepare` converts and verifies rolled segments into it while the broker runs, never writing,
 * renaming or locking anything in the log dir; `commit`, with the broker stopped, links each
 * staged segment whose source is still the file it was made from into the partition directory
 * under the temp names `swapInPlace` expects, and swaps it in (convert.ts, `fromStage`).
 *
 * Layout: `S/.seglift-stage` (marker), and per partition `S/<partition dir relative to the log
 * dir>/<base>.{log,index,timeindex}` plus `<base>.seglift-stage.json` (StageRecord), written
 * last: staged files without a record are unfinished and removed.
 *
 * Why the commit does not re-read a source whole: Kafka never modifies a rolled segment in place
 * (docs/kafka-format.md §6.8): retention renames it to `.deleted` and unlinks it, the cleaner
 * writes a new file and renames it over (`.cleaned` -> `.swap` -> `.log`), a new inode each time.
 * So device, inode, size and mtime (ns) tell every change Kafka makes; the digest of the first
 * and last 64 KiB (SOURCE_SAMPLE_BYTES) also catches an inode number reused by a new file of the
 * same size and mtime. A full digest would read the whole log dir while the broker is down, which
 * is what two-phase migration exists to avoid (commit <= 5% of a plain migrate, bench/two-phase).
 * The full sha256 is recorded (computed while prepare read the source for its conversion) for
 * an operator's audit.
 */
import { createHash } from 'node:crypto';
import { open, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_INDEX_INTERVAL_BYTES, DEFAULT_MAX_BATCH_BYTES } from '@seglift/format';
import { StageDirError } from './errors.js';
import { exists } from './fs-util.js';
import { fsyncDir, mkdirp, removeIfExists, rename, writeWholeFile } from './fsops.js';
import {
  offsetOfFileName,
  parseSegmentName,
  SegmentFiles,
  STAGE_DIR_MARKER,
  STAGE_RECORD_SUFFIX,
  TMP_SUFFIX,
} from './names.js';
import { isInside, realpathOfNearest } from './roots.js';
import { REWRITTEN } from './swap.js';

/** Head and tail bytes of a source digested again at commit (see the header). */
export const SOURCE_SAMPLE_BYTES = 64 * 1024;

/** The staged files, by suffix: the ones a rewrite replaces. */
export const STAGED = REWRITTEN;

/** Who a file is: nanosecond mtime and 64-bit device/inode numbers, as decimal strings. */
export interface SourceIdentity {
  dev: string;
  ino: string;
  size: number;
  mtimeNs: string;
}

/** What decides a conversion's output: a staged segment made with other options is stale. */
export interface StageOptionsKey {
  codec: string;
  level: number | null;
  grouping: string;
  coalesceBytes: number | null;
  maxBatchBytes: number;
  indexIntervalBytes: number;
  force: boolean;
  onlyIfSmaller: boolean;
}

export interface StagedFile {
  size: number;
  ino: string;
  sha256: string;
}

export interface StageRecord {
  tool: 'seglift';
  kind: 'stage';
  version: 1;
  prefix: string;
  source: SourceIdentity & {
    /** sha256 of the bytes converted (the whole file unless a truncated tail was dropped). */
    sha256: string;
    /** sha256 of the first and last SOURCE_SAMPLE_BYTES (sampleDigest). */
    sampleSha256: string;
    /** The source .log's mtime in ms, for a reader (the new files get `mtimeNs`). */
    mtimeMs: number;
  };
  options: StageOptionsKey;
  /** The staged files by suffix; null: the source is already in the target codec (nothing to swap). */
  files: Record<string, StagedFile> | null;
  /** Counts of the conversion, for the commit's report. */
  counts: {
    batchesIn: number;
    batchesOut: number;
    recordsIn: number;
    recordsOut: number;
    codecMixIn: Record<string, number>;
    codecOut: Record<string, number>;
  };
  stagedAt: string;
}

export function stageOptionsKey(o: {
  codec: string;
  level?: number;
  grouping?: string;
  coalesceBytes?: number;
  maxBatchBytes?: number;
  indexIntervalBytes?: number;
  force?: boolean;
  onlyIfSmaller?: boolean;
}): StageOptionsKey {
  // The Upconverter's default grouping.
  const grouping = o.grouping ?? 'coalesce';
  return {
    codec: o.codec,
    level: o.level ?? null,
    grouping,
    // Only coalesce grouping reads it.
    coalesceBytes: grouping === 'coalesce' ? (o.coalesceBytes ?? null) : null,
    maxBatchBytes: o.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES,
    indexIntervalBytes: o.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL_BYTES,
    force: o.force ?? false,
    onlyIfSmaller: o.onlyIfSmaller ?? false,
  };
}

/** The file's identity, or undefined when it is gone. */
export async function sourceIdentity(file: string): Promise<SourceIdentity | undefined> {
  try {
    const st = await stat(file, { bigint: true });
    return { dev: String(st.dev), ino: String(st.ino), size: Number(st.size), mtimeNs: String(st.mtimeNs) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export function sameIdentity(a: SourceIdentity | undefined, b: SourceIdentity): boolean {
  return (
    a !== undefined && a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs
  );
}

/** sha256 of the size and the first and last SOURCE_SAMPLE_BYTES of `file` (all of a small one). */
export async function sampleDigest(file: string, size: number): Promise<string> {
  const h = createHash('sha256').update(`${size}\n`);
  const fh = await open(file, 'r');
  try {
    const ranges =
      size <= 2 * SOURCE_SAMPLE_BYTES
        ? [[0, size]]
        : [
            [0, SOURCE_SAMPLE_BYTES],
            [size - SOURCE_SAMPLE_BYTES, SOURCE_SAMPLE_BYTES],
          ];
    const buf = Buffer.allocUnsafe(Math.min(size, 2 * SOURCE_SAMPLE_BYTES));
    for (const [at, n] of ranges) {
      const { bytesRead } = await fh.read(buf, 0, n, at);
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await fh.close();
  }
  return h.digest('hex');
}

/** The record of `prefix` in a stage partition directory, or undefined (absent, unreadable, not ours). */
export async function readStageRecord(
  stagePartition: string,
  baseOffset: bigint,
): Promise<StageRecord | undefined> {
  const seg = new SegmentFiles(stagePartition, baseOffset);
  let r: StageRecord;
  try {
    r = JSON.parse(await readFile(seg.stageRecord, 'utf8')) as StageRecord;
  } catch {
    return undefined;
  }
  if (r?.tool !== 'seglift' || r.kind !== 'stage' || r.version !== 1 || r.prefix !== seg.prefix)
    return undefined;
  return r;
}

/** Written under a temp name, fsynced and renamed: a record is whole or absent. */
export async function writeStageRecord(stagePartition: string, record: StageRecord): Promise<void> {
  const seg = new SegmentFiles(stagePartition, BigInt(record.prefix));
  const pending = seg.file(STAGE_RECORD_SUFFIX + TMP_SUFFIX);
  await writeWholeFile(pending, JSON.stringify(record), { sync: true });
  await rename(pending, seg.stageRecord);
  await fsyncDir(stagePartition);
}

/** Removes a staged segment: its record first (files without a record are unfinished anyway). */
export async function discardStaged(stagePartition: string, baseOffset: bigint): Promise<void> {
  const seg = new SegmentFiles(stagePartition, baseOffset);
  await removeIfExists(seg.stageRecord);
  for (const s of STAGED) {
    await removeIfExists(seg.file(s));
    await removeIfExists(seg.tmp(s));
  }
  await removeIfExists(seg.file(STAGE_RECORD_SUFFIX + TMP_SUFFIX));
}

/** Why a record cannot be used for the source as it is now, or undefined when it can. */
export async function staleReason(
  record: StageRecord,
  logPath: string,
  options: StageOptionsKey,
  stagePartition: string,
): Promise<'gone' | 'changed' | 'options' | 'staged-files' | undefined> {
  const now = await sourceIdentity(logPath);
  if (now === undefined) return 'gone';
  if (!sameIdentity(now, record.source)) return 'changed';
  if (JSON.stringify(record.options) !== JSON.stringify(options)) return 'options';
  if (record.files !== null) {
    const seg = new SegmentFiles(stagePartition, BigInt(record.prefix));
    for (const s of STAGED) {
      const want = record.files[s];
      const st = await stat(seg.file(s), { bigint: true }).catch(() => undefined);
      if (!want || !st || Number(st.size) !== want.size || String(st.ino) !== want.ino) return 'staged-files';
    }
  }
  if ((await sampleDigest(logPath, now.size)) !== record.source.sampleSha256) return 'changed';
  return undefined;
}

/** Base offsets with anything staged (records, staged or temp files) in a stage partition dir. */
export async function stagedBases(
  stagePartition: string,
): Promise<{ recorded: bigint[]; unrecorded: bigint[] }> {
  const names = await readdir(stagePartition).catch(() => [] as string[]);
  const recorded = new Set<bigint>();
  const any = new Set<bigint>();
  for (const n of names) {
    const base = offsetOfFileName(n);
    if (base === undefined) continue;
    any.add(base);
    if (n.endsWith(STAGE_RECORD_SUFFIX)) recorded.add(base);
  }
  const sort = (xs: bigint[]) => xs.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { recorded: sort([...recorded]), unrecorded: sort([...any].filter((b) => !recorded.has(b))) };
}

export interface StageDir {
  /** Real path of the stage directory. */
  root: string;
  /** Real path of the log dir (or partition dir) it stages. */
  logDir: string;
  /** The log dir given is itself a partition directory (it holds segments). */
  logDirIsPartition: boolean;
}

/**
 * Checks (and with `create`, makes) a stage directory for `logDir`: on the same filesystem (the
 * commit links staged files into the partition directories), neither inside nor containing it
 * (a walk of the log dir would find the staged segments, and Kafka would try to load the
 * directory: docs/kafka-format.md §11.1), and either new, empty, or marked `.seglift-stage`.
 */
export async function openStageDir(stageDir: string, logDir: string, create: boolean): Promise<StageDir> {
  const log = await realpath(logDir).catch(() => {
    throw new StageDirError(`log dir ${logDir} does not exist`, { file: logDir });
  });
  const stage = await realpathOfNearest(path.resolve(stageDir));
  if (isInside(stage, log) || isInside(log, stage)) {
    throw new StageDirError(
      `stage dir ${stageDir} ${isInside(stage, log) ? 'is inside' : 'contains'} the log dir ${logDir}: choose a directory beside it on the same filesystem (a broker would try to load it as a partition, and a walk of the log dir would find the staged segments)`,
      { file: stageDir },
    );
  }
  // The nearest existing ancestor tells the filesystem of a stage dir not made yet.
  let probe = stage;
  while (!(await exists(probe))) probe = path.dirname(probe);
  const [sDev, lDev] = [(await stat(probe)).dev, (await stat(log)).dev];
  if (sDev !== lDev) {
    throw new StageDirError(
      `stage dir ${stageDir} is on another filesystem than the log dir ${logDir} (device ${sDev} vs ${lDev}): the commit moves staged files in with link(2) and rename(2), which work only within one filesystem`,
      { file: stageDir },
    );
  }
  const marker = path.join(stage, STAGE_DIR_MARKER);
  if (await exists(stage)) {
    if (!(await stat(stage)).isDirectory())
      throw new StageDirError(`stage dir ${stageDir} is not a directory`, { file: stageDir });
    if (!(await exists(marker)) && (await readdir(stage)).length > 0) {
      throw new StageDirError(
        `stage dir ${stageDir} is not empty and is not a seglift stage dir (no ${STAGE_DIR_MARKER}): refusing to write into it`,
        { file: stageDir },
      );
    }
  } else if (!create) {
    throw new StageDirError(`stage dir ${stageDir} does not exist: run --prepare first`, { file: stageDir });
  }
  if (create && !(await exists(marker))) {
    await mkdirp(stage);
    await writeWholeFile(marker, `seglift stage dir for ${log}\n`, { sync: true });
    await fsyncDir(stage);
  }
  const logDirIsPartition = (await readdir(log)).some((n) => parseSegmentName(n) !== undefined);
  return { root: stage, logDir: log, logDirIsPartition };
}

/**
 * Where a partition directory's segments are staged: its path relative to the log dir (a
 * partition dir given itself as the log dir keeps its name).
 */
export function stagePartitionDir(stage: StageDir, partitionDir: string): string {
  return path.join(
    stage.root,
    stage.logDirIsPartition ? path.basename(partitionDir) : path.relative(stage.logDir, partitionDir),
  );
}

/**
 * Every stage partition directory holding something, relative to the stage root, for the commit
 * to find staged segments whose partition or source is gone.
 */
export async function stagePartitionDirs(stage: StageDir): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, depth: number) => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    if (entries.some((e) => e.isFile() && offsetOfFileName(e.name) !== undefined)) out.push(dir);
    if (depth >= 4) return;
    for (const e of entries) if (e.isDirectory()) await walk(path.join(dir, e.name), depth + 1);
  };
  await walk(stage.root, 0);
  return out.sort();
}

/** The partition directory a stage partition directory stands for (stagePartitionDir reversed). */
export function sourcePartitionDir(stage: StageDir, stagePartition: string): string {
  return stage.logDirIsPartition
    ? stage.logDir
    : path.join(stage.logDir, path.relative(stage.root, stagePartition));
}
