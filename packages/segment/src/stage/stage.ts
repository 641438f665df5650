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
 * So device, inode, size and mtime (ns) tell every change Kafka makes. ctime (ns) tells the
 * changes of anybody else: a write in place with the size and mtime put back, or a file deleted
 * and recreated under a reused inode number, sets it, and no utime call can set it back. The
 * digest of the first and last 64 KiB (SOURCE_SAMPLE_BYTES) is one more check on the same file.
 * A full digest would read the whole log dir while the broker is down, which is what two-phase
 * migration exists to avoid (commit <= 5% of a plain migrate, bench/two-phase). The full sha256
 * is recorded (computed while prepare read the source for its conversion) for an operator's
 * audit.
 *
 * The staged files, by contrast, are read whole at commit (`stagedFileMismatch`): they are what
 * the swap puts in the partition, no conversion will check them again, and they may sit for days
 * on a disk shared with other work. Their sha256 (taken by prepare's writer, before verify read
 * them back) must still be theirs; one that is not is discarded and its segment converted from
 * the source. They are the converted bytes (smaller than the source, as a rule), read
 * sequentially: docs/operator-guide.md gives the measured cost. A sha256 proves whose bytes they
 * are not: a record (in a directory others may write) can name another segment's staged files, so
 * they must also be this segment's rewrite by their own headers and indexes, against the source's
 * ends (`stagedSegmentMismatch`), and a record is read bounded and checked field by field.
 */
import { createHash, type Hash } from 'node:crypto';
import { open, readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  LAST_OFFSET_DELTA_OFFSET,
  offsetIndexView,
  RECORDS_COUNT_OFFSET,
  SegliftError,
  SegmentIndexBuilder,
} from '@seglift/format';
import { MAX_INDEX_FILE_BYTES, readBounded, readBoundedText } from '../files/bounded-read.js';
import { StageDirError } from '../files/errors.js';
import { exists, statNow, statOrUndefined } from '../files/fs-util.js';
import { fsyncDir, mkdirp, removeIfExists, rename, writeWholeFile } from '../files/fsops.js';
import { ReadCourtesy, throttleIo } from '../files/io-courtesy.js';
import {
  offsetOfFileName,
  parseSegmentName,
  REWRITTEN,
  SegmentFiles,
  STAGE_DIR_MARKER,
  STAGE_RECORD_SUFFIX,
  TMP_SUFFIX,
} from '../files/names.js';
import {
  CONVERSION_SETTINGS,
  type ConversionSetting,
  type ConversionSettingName,
  conversionSetting,
} from '../rewrite/conversion-settings.js';
import { inspectEntry } from '../rewrite/entry.js';
import { readSegmentEntries } from '../rewrite/reader.js';
import { isInside, realpathOfNearest } from '../safety/roots.js';

/** Head and tail bytes of a source digested again at commit (see the header). */
export const SOURCE_SAMPLE_BYTES = 64 * 1024;

/** The staged files, by suffix: the ones a rewrite replaces. */
export const STAGED = REWRITTEN;

/** Who a file is: nanosecond mtime and ctime, 64-bit device/inode numbers, as decimal strings. */
export interface SourceIdentity {
  dev: string;
  ino: string;
  size: number;
  mtimeNs: string;
  /** Any change to the file, its data or its inode, sets it; nothing sets it back (see the header). */
  ctimeNs: string;
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
  /** 2: the source identity has ctimeNs. A version 1 record never matches (see readStageRecord). */
  version: 1 | 2;
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
  // The settings that change the bytes written (conversion-settings.ts), each at its declared
  // default when unset (null: none, the codec's level), or null when it is not read.
  const given = o as Record<string, unknown>;
  const current = (s: ConversionSetting) => given[s.name] ?? s.default ?? null;
  const key: Record<string, unknown> = {};
  for (const s of CONVERSION_SETTINGS as readonly ConversionSetting[]) {
    if (!s.changesBytes) continue;
    // force is convert's flag, not a setting: stage records (compared as JSON text) have always
    // had it before onlyIfSmaller.
    if (s.name === 'onlyIfSmaller') key.force = o.force ?? false;
    const read =
      s.onlyWhen === undefined ||
      current(conversionSetting(s.onlyWhen.setting as ConversionSettingName)) === s.onlyWhen.is;
    key[s.name] = read ? current(s) : null;
  }
  return key as unknown as StageOptionsKey;
}

/** The file's identity, or undefined when it is gone. */
export async function sourceIdentity(file: string): Promise<SourceIdentity | undefined> {
  try {
    // Synchronous: a metadata read (fs-util.ts).
    const st = statNow(file, { bigint: true });
    return {
      dev: String(st.dev),
      ino: String(st.ino),
      size: Number(st.size),
      mtimeNs: String(st.mtimeNs),
      ctimeNs: String(st.ctimeNs),
    };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Same file, unchanged. An identity without a ctime (an older record's) matches nothing. */
export function sameIdentity(a: SourceIdentity | undefined, b: SourceIdentity): boolean {
  return (
    a !== undefined &&
    typeof b.ctimeNs === 'string' &&
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.size === b.size &&
    a.mtimeNs === b.mtimeNs &&
    a.ctimeNs === b.ctimeNs
  );
}

/**
 * Read size of fileSha256: two buffers of it are all the memory a staged file's check takes (a
 * commit checks three files a segment in up to 16 partitions at once: at most 24 MiB).
 */
const HASH_READ_BYTES = 256 * 1024;

/**
 * sha256 of a whole file, streamed: the next read is under way while a chunk is hashed. `size`
 * (when known) sizes the buffers: a small file's check allocates no MiB buffers (a commit of
 * thousands of small segments would spend its time collecting them).
 */
export async function fileSha256(file: string, size = HASH_READ_BYTES): Promise<string> {
  const h: Hash = createHash('sha256');
  const fh = await open(file, 'r');
  const courtesy = ReadCourtesy.open(fh.fd, size);
  try {
    // One byte more than the size: the read that finds the end comes without another buffer.
    const n = Math.min(HASH_READ_BYTES, Math.max(size + 1, 1));
    const bufs = [Buffer.allocUnsafe(n), Buffer.allocUnsafe(n)];
    let pos = 0;
    let i = 0;
    let pending = fh.read(bufs[0], 0, n, 0);
    for (;;) {
      const { bytesRead } = await pending;
      if (bytesRead === 0) break;
      pos += bytesRead;
      const chunk = bufs[i].subarray(0, bytesRead);
      i ^= 1;
      courtesy?.released(pos - bytesRead, bytesRead);
      await throttleIo(bytesRead);
      pending = fh.read(bufs[i], 0, n, pos);
      h.update(chunk);
    }
  } finally {
    courtesy?.close();
    await fh.close();
  }
  return h.digest('hex');
}

/**
 * The first staged file (by suffix) that is not the file prepare wrote: another inode or size, or
 * other bytes than the sha256 in the record. `files` names each suffix's file (the commit's links
 * to the staged files: exactly what the swap would rename in). undefined: all three are.
 */
export async function stagedFileMismatch(
  record: StageRecord,
  files: Record<string, string>,
): Promise<{ suffix: string; what: 'inode' | 'size' | 'sha256' } | undefined> {
  // The three files at once (their reads overlap); the first mismatch in STAGED order is reported.
  const found = await Promise.all(
    STAGED.map(async (s) => {
      const want = record.files?.[s];
      const st = statOrUndefined(files[s], { bigint: true });
      if (!want || !st || String(st.ino) !== want.ino) return 'inode';
      if (Number(st.size) !== want.size) return 'size';
      if ((await fileSha256(files[s], want.size)) !== want.sha256) return 'sha256';
      return undefined;
    }),
  );
  const k = found.findIndex((w) => w !== undefined);
  return k < 0 ? undefined : { suffix: STAGED[k], what: found[k]! };
}

/** sha256 of the size and the first and last SOURCE_SAMPLE_BYTES of `file` (all of a small one). */
export async function sampleDigest(file: string, size: number): Promise<string> {
  const h = createHash('sha256').update(`${size}\n`);
  const fh = await open(file, 'r');
  const courtesy = ReadCourtesy.open(fh.fd, size);
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
    // The read-ahead past both samples too.
    courtesy?.close();
    await fh.close();
  }
  return h.digest('hex');
}

/**
 * The largest stage record read: one is a few hundred bytes of JSON plus the codec mix of the
 * segment (at most 3 magics x 8 codecs, twice); 64 KiB is far above any prepare's. A larger file,
 * a FIFO or a device in its place is not a record (files/bounded-read.ts).
 */
export const MAX_STAGE_RECORD_BYTES = 64 * 1024;
/** The stage dir's marker: a log dir's real path (PATH_MAX 4096) in a line of JSON. */
const MAX_MARKER_BYTES = 64 * 1024;

/**
 * The record of `prefix` in a stage partition directory: the record; undefined when there is
 * none; `{ invalid }` saying why when the file there is not a record of this shape (not a regular
 * file, too large, not JSON, a field missing or of another type, another segment's prefix).
 */
export async function readStageRecordOrProblem(
  stagePartition: string,
  baseOffset: bigint,
): Promise<StageRecord | { invalid: string } | undefined> {
  const seg = new SegmentFiles(stagePartition, baseOffset);
  let r: unknown;
  try {
    r = JSON.parse(await readBoundedText(seg.stageRecord, MAX_STAGE_RECORD_BYTES, 'stage record'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (err instanceof SegliftError) return { invalid: err.detail };
    return { invalid: `stage record unreadable: ${(err as Error).message}` };
  }
  const problem = stageRecordProblem(r, seg.prefix);
  return problem === undefined ? (r as StageRecord) : { invalid: `stage record ${problem}` };
}

/** The record of `prefix` in a stage partition directory, or undefined (absent, unreadable, not a valid record). */
export async function readStageRecord(
  stagePartition: string,
  baseOffset: bigint,
): Promise<StageRecord | undefined> {
  const r = await readStageRecordOrProblem(stagePartition, baseOffset);
  return r === undefined || 'invalid' in r ? undefined : r;
}

const DECIMAL = /^\d+$/;
const SHA256 = /^[0-9a-f]{64}$/;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * Why `r` is not a StageRecord of the segment `prefix` (every field of the shape prepare writes),
 * or undefined. A record is read from a directory others can write to: the commit trusts none of
 * it before this, and the staged files' identity (stagedSegmentMismatch) after.
 */
function stageRecordProblem(r: unknown, prefix: string): string | undefined {
  if (!isObject(r) || r.tool !== 'seglift' || r.kind !== 'stage') return 'is not a seglift stage record';
  // Version 1 (before ctimeNs) is still read, so that it is discarded with its files as stale.
  if (r.version !== 1 && r.version !== 2) return `has version ${JSON.stringify(r.version)}`;
  if (r.prefix !== prefix) return `names segment ${JSON.stringify(r.prefix)}, not ${prefix}`;
  const src = r.source;
  if (!isObject(src)) return 'has no source';
  for (const k of ['dev', 'ino', 'mtimeNs'])
    if (typeof src[k] !== 'string' || !DECIMAL.test(src[k] as string)) return `has a bad source.${k}`;
  if (r.version === 2 && (typeof src.ctimeNs !== 'string' || !DECIMAL.test(src.ctimeNs)))
    return 'has a bad source.ctimeNs';
  if (!isCount(src.size) || typeof src.mtimeMs !== 'number') return 'has a bad source size or mtime';
  for (const k of ['sha256', 'sampleSha256'])
    if (typeof src[k] !== 'string' || !SHA256.test(src[k] as string)) return `has a bad source.${k}`;
  if (!isObject(r.options)) return 'has no options';
  if (r.files !== null) {
    if (!isObject(r.files)) return 'has files that are neither null nor an object';
    const names = Object.keys(r.files).sort();
    if (JSON.stringify(names) !== JSON.stringify([...STAGED].sort()))
      return `has files ${JSON.stringify(names)}, not ${STAGED.join(', ')}`;
    for (const s of STAGED) {
      const f = r.files[s];
      if (!isObject(f) || !isCount(f.size) || typeof f.ino !== 'string' || !DECIMAL.test(f.ino))
        return `has a bad files["${s}"]`;
      if (typeof f.sha256 !== 'string' || !SHA256.test(f.sha256)) return `has a bad files["${s}"].sha256`;
    }
  }
  const c = r.counts;
  if (!isObject(c)) return 'has no counts';
  for (const k of ['batchesIn', 'batchesOut', 'recordsIn', 'recordsOut'])
    if (!isCount(c[k])) return `has a bad counts.${k}`;
  for (const k of ['codecMixIn', 'codecOut'])
    if (!isObject(c[k]) || !Object.values(c[k] as object).every(isCount)) return `has a bad counts.${k}`;
  if (typeof r.stagedAt !== 'string') return 'has no stagedAt';
  return undefined;
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
  if (stagedFilesProblem(record, stagePartition) !== undefined) return 'staged-files';
  if ((await sampleDigest(logPath, now.size)) !== record.source.sampleSha256) return 'changed';
  return undefined;
}

/**
 * Which staged file is not where, or not the size or inode, the record says (the cheap check,
 * by stat), or undefined; a record without files has nothing staged to check.
 */
export function stagedFilesProblem(record: StageRecord, stagePartition: string): string | undefined {
  if (record.files === null) return undefined;
  const seg = new SegmentFiles(stagePartition, BigInt(record.prefix));
  for (const s of STAGED) {
    const want = record.files[s];
    const st = statOrUndefined(seg.file(s), { bigint: true });
    if (!st) return `staged ${seg.prefix}${s} is missing`;
    if (Number(st.size) !== want.size)
      return `staged ${seg.prefix}${s} is ${st.size} bytes, the stage record says ${want.size}`;
    if (String(st.ino) !== want.ino)
      return `staged ${seg.prefix}${s} is inode ${st.ino}, the stage record says ${want.ino}`;
  }
  return undefined;
}

/** What the first and last entries of a segment's .log say about its offsets. */
interface OffsetSpan {
  /** The first entry's offset field: baseOffset (v2), the (last inner) offset of a legacy entry. */
  first: bigint;
  firstMagic: number;
  /** The last whole entry's last offset. */
  last: bigint;
}

/**
 * The source's offset span, read at its ends only: its first entry, and its last from the last
 * entry of its .index on (a batch start whose last offset is that entry's, as Kafka indexes);
 * from the start when the index does not lead to one. A partial entry at the end (what a
 * conversion may drop, Kafka's recovery truncates) is not counted. undefined: an empty log.
 */
async function sourceSpan(log: string, index: string, baseOffset: bigint): Promise<OffsetSpan | undefined> {
  let first: { offset: bigint; magic: number } | undefined;
  for await (const e of readSegmentEntries(log, { acceptTruncatedTail: true, chunkSize: 64 * 1024 })) {
    const info = inspectEntry(e, log, false);
    first = { offset: info.offset, magic: info.magic };
    break;
  }
  if (first === undefined) return undefined;
  let from: { position: number; lastOffset: bigint } | undefined;
  try {
    const bytes = await readBounded(index, MAX_INDEX_FILE_BYTES, 'offset index');
    const v = offsetIndexView(bytes.subarray(0, bytes.length - (bytes.length % 8)), baseOffset);
    // A preallocated tail (an active segment's) is zeros: the last entry with a larger offset.
    let i = v.length - 1;
    while (i > 0 && v.relativeOffset(i) <= v.relativeOffset(i - 1)) i--;
    if (i >= 0) from = { position: v.position(i), lastOffset: v.offset(i) };
  } catch {
    // No usable index: read from the start.
  }
  const lastFrom = async (startPosition: number, check?: bigint): Promise<bigint | undefined> => {
    let last: bigint | undefined;
    for await (const e of readSegmentEntries(log, {
      startPosition,
      acceptTruncatedTail: true,
      reuseBuffers: true,
    })) {
      const info = inspectEntry(e, log, false);
      if (last === undefined && check !== undefined && info.lastOffset !== check) return undefined;
      last = info.lastOffset;
    }
    return last;
  };
  let last: bigint | undefined;
  if (from !== undefined && from.position > 0)
    last = await lastFrom(from.position, from.lastOffset).catch(() => undefined);
  last ??= await lastFrom(0);
  return { first: first.offset, firstMagic: first.magic, last: last! };
}

/**
 * Why the staged files (`files`: by suffix, the links the commit would swap in) are not the
 * rewrite of the segment `source`, or undefined. The sha256 proves they are bytes prepare wrote,
 * not whose: a record pointed at another segment's staged files would swap that segment's data in.
 * So, from the staged files' own headers: v2 batches only (a conversion writes nothing else), in
 * increasing offsets, the first at the source's first offset (a legacy source: between the
 * segment's base offset and its first entry's), the last ending at the source's last offset, as
 * many records as the record's counts say in and out; and the .index and .timeindex exactly the
 * ones these batches give (Kafka's rule, with these settings' index interval).
 */
export async function stagedSegmentMismatch(
  record: StageRecord,
  files: Record<string, string>,
  source: { log: string; index: string; baseOffset: bigint },
  indexIntervalBytes: number | undefined,
): Promise<string | undefined> {
  const log = files[STAGED[0]];
  // Named as staged (the files may be the commit's links under temp names).
  const name = (suffix: string) => `${record.prefix}${suffix}`;
  const builder = new SegmentIndexBuilder(source.baseOffset, { indexIntervalBytes });
  let first: bigint | undefined;
  let last: bigint | undefined;
  let records = 0;
  try {
    for await (const e of readSegmentEntries(log, { reuseBuffers: true })) {
      if (e.magic !== 2) return `staged ${name(STAGED[0])} holds a magic ${e.magic} entry at ${e.position}`;
      const v = new DataView(e.bytes.buffer, e.bytes.byteOffset, e.bytes.byteLength);
      const base = v.getBigInt64(0);
      if (last !== undefined && base <= last)
        return `staged ${name(STAGED[0])}: offset ${base} at ${e.position} does not follow ${last}`;
      first ??= base;
      last = base + BigInt(v.getInt32(LAST_OFFSET_DELTA_OFFSET));
      records += v.getInt32(RECORDS_COUNT_OFFSET);
      builder.appendBatchAt(v, 0, e.position, e.size);
    }
  } catch (err) {
    if (err instanceof SegliftError) return `staged ${name(STAGED[0])}: ${err.detail}`;
    throw err;
  }
  const span = await sourceSpan(source.log, source.index, source.baseOffset);
  const what = `the staged ${name(STAGED[0])}`;
  if (span === undefined || first === undefined) {
    if (span === undefined && first === undefined) return undefined;
    return span === undefined
      ? `${what} holds batches, the source none`
      : `${what} is empty, the source is not`;
  }
  if (first < source.baseOffset || (span.firstMagic === 2 ? first !== span.first : first > span.first))
    return `${what} starts at offset ${first}, the source at ${span.first} (segment ${source.baseOffset})`;
  if (last !== span.last) return `${what} ends at offset ${last}, the source at ${span.last}`;
  if (records !== record.counts.recordsOut || records !== record.counts.recordsIn)
    return `${what} holds ${records} records, the stage record says ${record.counts.recordsIn} in and ${record.counts.recordsOut} out`;
  const want = builder.finish();
  for (const [s, bytes] of [
    [STAGED[1], want.offsetIndex],
    [STAGED[2], want.timeIndex],
  ] as const) {
    const have = await readBounded(files[s], MAX_INDEX_FILE_BYTES, `staged ${name(s)}`);
    if (!Buffer.from(bytes).equals(have))
      return `the staged ${name(s)} is not the index of the staged ${name(STAGED[0])}`;
  }
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

/** The marker's text: which log dir (real path) the stage dir serves. */
function markerText(logDir: string): string {
  return `${JSON.stringify({ tool: 'seglift', kind: 'stage-dir', logDir })}\n`;
}

/**
 * The log dir a marker names, or undefined when it names none: JSON since it is compared, the
 * first versions' one line `seglift stage dir for <real path>` too.
 */
function markedLogDir(text: string): string | undefined {
  try {
    const m = JSON.parse(text) as { tool?: unknown; kind?: unknown; logDir?: unknown };
    if (m?.tool === 'seglift' && m.kind === 'stage-dir' && typeof m.logDir === 'string') return m.logDir;
  } catch {}
  return /^seglift stage dir for (\/.*)\n$/.exec(text)?.[1];
}

/**
 * Checks (and with `create`, makes) a stage directory for `logDir`: on the same filesystem (the
 * commit links staged files into the partition directories), neither inside nor containing it
 * (a walk of the log dir would find the staged segments, and Kafka would try to load the
 * directory: docs/kafka-format.md §11.1), and either new, empty, or marked `.seglift-stage` for
 * this very log dir (the same real path): staged segments are found by their partition's path
 * relative to it, so another log dir's prepare or commit would take them for its own (and
 * discard those of partitions it lacks).
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
  // An empty stage dir, or one holding nothing but a marker that names no log dir, is (re)marked
  // by a prepare.
  let mark = false;
  if (await exists(stage)) {
    if (!(await stat(stage)).isDirectory())
      throw new StageDirError(`stage dir ${stageDir} is not a directory`, { file: stageDir });
    const others = (await readdir(stage)).filter((n) => n !== STAGE_DIR_MARKER);
    if (!(await exists(marker))) {
      if (others.length > 0)
        throw new StageDirError(
          `stage dir ${stageDir} is not empty and is not a seglift stage dir (no ${STAGE_DIR_MARKER}): refusing to write into it`,
          { file: stageDir },
        );
      mark = true;
    } else {
      const marked = markedLogDir(
        await readBoundedText(marker, MAX_MARKER_BYTES, `stage dir marker ${STAGE_DIR_MARKER}`),
      );
      if (marked === undefined) {
        // Nothing but such a marker: a prepare that died while writing it (it is written in
        // place), nothing staged yet, so nobody's work is at stake. With staged segments beside
        // it we cannot tell whose they are, and guessing would let one log dir's commit take
        // (or discard) another's: the operator decides.
        if (others.length > 0)
          throw new StageDirError(
            `stage dir ${stageDir}: its ${STAGE_DIR_MARKER} does not say which log dir it was prepared for, and it holds staged files: if they are ${log}'s, write ${JSON.stringify(markerText(log).trim())} into ${marker}; else use another stage dir`,
            { file: marker },
          );
        mark = true;
      } else if (marked !== log) {
        throw new StageDirError(
          `stage dir ${stageDir} was prepared for the log dir ${marked}, not ${log} (${logDir}): one stage dir serves one log dir; give each its own`,
          { file: stageDir },
        );
      }
    }
  } else if (!create) {
    throw new StageDirError(`stage dir ${stageDir} does not exist: run --prepare first`, { file: stageDir });
  } else mark = true;
  if (mark && create) {
    await mkdirp(stage);
    await writeWholeFile(marker, markerText(log), { sync: true });
    await fsyncDir(stage);
  }
  const logDirIsPartition = (await readdir(log)).some((n) => parseSegmentName(n) !== undefined);
  return { root: stage, logDir: log, logDirIsPartition };
}

/**
 * Where a partition directory's segments are staged: its path relative to the log dir (a
 * partition dir given itself as the log dir keeps its name). A partition whose real path is not
 * inside the log dir (linked in from another disk) has no place: StageDirError. Its relative path
 * would lead out of the stage dir, and the commit's link(2) from the stage would cross filesystems;
 * it is converted at the commit instead.
 */
export function stagePartitionDir(stage: StageDir, partitionDir: string): string {
  if (stage.logDirIsPartition) return path.join(stage.root, path.basename(partitionDir));
  const rel = path.relative(stage.logDir, partitionDir);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel))
    throw new StageDirError(
      `partition dir ${partitionDir} is not inside the log dir ${stage.logDir} (a partition linked in from elsewhere): it cannot be staged; the commit converts it with the broker stopped`,
      { file: partitionDir },
    );
  return path.join(stage.root, rel);
}

/** Whether `partitionDir` (a real path) can be staged in `stage` (stagePartitionDir does not throw). */
export function stageable(stage: StageDir, partitionDir: string): boolean {
  if (stage.logDirIsPartition) return true;
  const rel = path.relative(stage.logDir, partitionDir);
  return !(rel === '' || rel.startsWith('..') || path.isAbsolute(rel));
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
