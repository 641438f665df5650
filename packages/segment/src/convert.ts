import { createHash, type Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import {
  batchLastOffset,
  type CodecName,
  CorruptRecordError,
  codecId,
  crc32,
  crc32Range,
  DEFAULT_INDEX_INTERVAL_BYTES,
  DEFAULT_MAX_BATCH_BYTES,
  InvalidArgumentError,
  readRecordBatchHeader,
  recompressRecordBatch,
  SegmentIndexBuilder,
} from '@seglift/format';
import { type Grouping, Upconverter } from '@seglift/legacy';
import { assertBackupDirOutside, backupOriginals } from './backup.js';
import { isActiveSegment } from './discovery.js';
import { formatKey, inspectEntry, keptAsIs, needsRewrite, withEntryContext } from './entry.js';
import { LostLockError, toSegmentError } from './errors.js';
import { exists } from './fs-util.js';
import {
  fsyncDir,
  fsyncFile,
  link,
  mkdirp,
  openForWrite,
  removeEmptyDirs,
  removeIfExists,
  rename,
  SimulatedCrash,
  setMtime,
  writeAll,
  writeWholeFile,
} from './fsops.js';
import { preparePartitionForConversion, preparePartitionForSwap, recoverLeftovers } from './leftovers.js';
import { acquirePartitionLock, acquireSegmentLock, type FileLock } from './lock.js';
import { INDEX_SUFFIX, LOG_SUFFIX, SegmentFiles, TIMEINDEX_SUFFIX } from './names.js';
import { applyOwnership, assertCanKeepOwnership, type Ownership, ownershipOf } from './ownership.js';
import { RecompressedBatchProofs, type UpconvertedRun, UpconvertedRunProofs } from './proofs.js';
import { entrySizeAt, readSegmentChunks, readSegmentEntries } from './reader.js';
import { emptyReport, type SegmentReport, throughput } from './report.js';
import { assertNotInMarkedDir, assertSingleLink, requireSegment } from './segment-file.js';
import {
  discardStaged,
  readStageRecord,
  type SourceIdentity,
  STAGED,
  type StageRecord,
  sameIdentity,
  sampleDigest,
  sourceIdentity,
  stagedFileMismatch,
  stageOptionsKey,
  staleReason,
  writeStageRecord,
} from './stage.js';
import { swapInPlace } from './swap.js';
import { verifyRewrite } from './verify.js';

export interface ConvertTestHooks {
  /** Called with the written (fsynced) files before they are verified: tests corrupt them here. */
  beforeVerify?: (files: { log: string; index: string; timeindex: string }) => void | Promise<void>;
}

export interface ConvertOptions {
  codec: CodecName;
  level?: number;
  /** How legacy entries become v2 batches (default coalesce; see @seglift/legacy's Upconverter). */
  grouping?: Grouping;
  coalesceBytes?: number;
  /** Largest batch written (default 1048588, Kafka's max.message.bytes default). */
  maxBatchBytes?: number;
  /**
   * Keep a v2 batch in its codec (byte for byte) when recompressing it would make it larger.
   * Off by default: a target codec is also chosen for consumers' CPU, and a segment where every
   * batch is kept is left as it is (see docs/benchmarks.md, "Recompression that grows data").
   */
  onlyIfSmaller?: boolean;
  maxDecompressedBatchBytes?: number;
  /** Largest source entry accepted by the reader (default 64 MiB). */
  maxEntryBytes?: number;
  indexIntervalBytes?: number;
  /** Recompress batches already in the target codec, and never skip. */
  force?: boolean;
  acceptTruncatedTail?: boolean;
  /** Write DIR/<base>.log/.index/.timeindex; the input is never touched. */
  outDir?: string;
  inPlace?: boolean;
  /**
   * Prepare of a two-phase migration (stage.ts): write the verified conversion into this
   * directory (the partition's directory in a stage dir) and a StageRecord of the source. As with
   * outDir, nothing beside the source is written, renamed or locked. A source that vanished or
   * was replaced while it was read is reported skipped ('source-gone', 'source-changed'), with
   * nothing staged.
   */
  stageDir?: string;
  /**
   * Commit of a two-phase migration, in place: the segment staged in this directory is swapped in
   * (the same swap) when its record still matches the source and these options; otherwise the
   * staged files are discarded and the segment is converted as usual.
   */
  fromStage?: string;
  /** In place only: copy the originals to backupDir/<partition dir name>/ first. */
  backupDir?: string;
  /** In place only: take `<base>.log.seglift.lock` (default true). */
  lock?: boolean;
  /**
   * The topic's segment.index.bytes (default 10 MiB): a broker resizes the active (last)
   * segment's indexes to it when it loads a log, and fails when they hold more entries.
   */
  segmentIndexBytes?: number;
  signal?: AbortSignal;
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
  /**
   * In place: called right before the swap's first change, under the partition lock; throwing
   * refuses the swap (the conversion fails, the original untouched). The queue worker checks
   * here that it still holds its partition's lease.
   */
  beforeSwap?: () => Promise<void>;
  /**
   * In place, in an archive (readiness.requireRolled false): a source whose `.log` was written
   * less than this many ms ago when its conversion starts is skipped ('still-changing'): a copy
   * may have resumed since the plan judged it quiet.
   */
  quietMs?: number;
  testHooks?: ConvertTestHooks;
}

const WRITE_BUFFER_BYTES = 1024 * 1024;
/** A segment's positions are int32 (OffsetIndex, FileRecords): its size limit. */
export const MAX_SEGMENT_BYTES = 0x7fffffff;

/**
 * Buffered writer of the new log that feeds the index builder with the new positions. Batches are
 * copied into one of two reused buffers (no references kept to the reader's or codec's buffers, no
 * garbage per write); while one buffer's write runs on libuv's pool the other fills, so the
 * codecs never wait on a write. A batch larger than a buffer is written on its own. Exported for
 * its tests only (not part of the package's API).
 */
export class SegmentWriter {
  position = 0;
  batches = 0;
  records = 0;
  readonly codecOut: Record<string, number> = {};
  private readonly buffers = [
    Buffer.allocUnsafeSlow(WRITE_BUFFER_BYTES),
    Buffer.allocUnsafeSlow(WRITE_BUFFER_BYTES),
  ];
  private active = 0;
  private used = 0;
  private filePos = 0;
  /** The write in flight (at most one), of the buffer not active. */
  private pending: Promise<void> | undefined;
  constructor(
    private readonly fh: FileHandle,
    private readonly file: string,
    private readonly index: SegmentIndexBuilder,
    /** sha256 of the bytes written, in file order (a stage record's). */
    private readonly digest?: Hash,
  ) {}

  async write(batch: Uint8Array): Promise<void> {
    const h = readRecordBatchHeader(batch, 0);
    if (this.position + batch.length > MAX_SEGMENT_BYTES) {
      throw new CorruptRecordError('rewritten segment would exceed 2 GiB (positions are int32)', {
        file: this.file,
        position: this.position,
        offset: h.baseOffset,
      });
    }
    this.index.append(this.position, batch.length, batchLastOffset(h), h.maxTimestamp);
    const key = formatKey(2, h.attributes & 0x07);
    this.codecOut[key] = (this.codecOut[key] ?? 0) + 1;
    this.batches++;
    this.records += h.recordsCount;
    this.position += batch.length;
    const buffer = this.buffers[this.active];
    if (this.used + batch.length > buffer.length) await this.flush();
    if (batch.length > buffer.length) {
      // The batch may live in the reader's reused buffer: written before the reader moves on.
      await this.drain();
      const at = this.filePos;
      this.filePos += batch.length;
      await this.writeFully(batch, at);
    } else {
      this.buffers[this.active].set(batch, this.used);
      this.used += batch.length;
    }
  }

  /**
   * Writes `bytes`, whole v2 batches back to back (the upconverter's output), without a header
   * object per batch; copied before the promise resolves.
   */
  async writeBatches(bytes: Uint8Array): Promise<void> {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let p = 0; p < bytes.length; ) {
      const size = view.getInt32(p + 8) + 12;
      const baseOffset = view.getBigInt64(p);
      if (this.position + size > MAX_SEGMENT_BYTES) {
        throw new CorruptRecordError('rewritten segment would exceed 2 GiB (positions are int32)', {
          file: this.file,
          position: this.position,
          offset: baseOffset,
        });
      }
      this.index.append(
        this.position,
        size,
        baseOffset + BigInt(view.getInt32(p + 23)),
        view.getBigInt64(p + 35),
      );
      const key = formatKey(2, bytes[p + 22] & 0x07);
      this.codecOut[key] = (this.codecOut[key] ?? 0) + 1;
      this.batches++;
      this.records += view.getInt32(p + 57);
      this.position += size;
      p += size;
    }
    let done = 0;
    while (done < bytes.length) {
      const buffer = this.buffers[this.active];
      const n = Math.min(bytes.length - done, buffer.length - this.used);
      buffer.set(bytes.subarray(done, done + n), this.used);
      this.used += n;
      done += n;
      if (this.used === buffer.length) await this.flush();
    }
  }

  /** Starts writing the active buffer and switches to the other one. */
  async flush(): Promise<void> {
    if (this.used === 0) return;
    await this.drain();
    const bytes = this.buffers[this.active].subarray(0, this.used);
    const at = this.filePos;
    this.filePos += this.used;
    this.used = 0;
    this.active ^= 1;
    const p = this.writeFully(bytes, at);
    // Rejections are handled where the write is awaited (drain).
    p.catch(() => {});
    this.pending = p;
  }

  /** Waits for the write in flight; its failure is thrown here. */
  async drain(): Promise<void> {
    const p = this.pending;
    this.pending = undefined;
    await p;
  }

  /** Everything written: flush and wait. */
  async finish(): Promise<void> {
    await this.flush();
    await this.drain();
  }

  private writeFully(bytes: Uint8Array, at: number): Promise<void> {
    // Called in file order (one write in flight at a time).
    this.digest?.update(bytes);
    return writeAll(this.fh, this.file, bytes, at);
  }
}

function validate(options: ConvertOptions): void {
  if ([options.outDir, options.stageDir, options.inPlace].filter(Boolean).length !== 1) {
    throw new InvalidArgumentError('convertSegment needs exactly one of outDir, stageDir or inPlace: true');
  }
  if (options.backupDir && !options.inPlace) throw new InvalidArgumentError('backupDir needs inPlace');
  if (options.fromStage && !options.inPlace) throw new InvalidArgumentError('fromStage needs inPlace');
  codecId(options.codec);
}

/**
 * Whether the segment is already what a conversion would give: only v2 batches, each in the
 * target codec or never compressed by Kafka (control, empty). CRCs are checked on the way; stops
 * at the first entry that needs work.
 */
async function alreadyConverted(
  logPath: string,
  codec: number,
  options: ConvertOptions,
  report: SegmentReport,
  digest?: Hash,
) {
  for await (const entry of readSegmentEntries(logPath, {
    acceptTruncatedTail: options.acceptTruncatedTail,
    onTruncatedTail: (t) => {
      report.truncatedTailBytes = t.bytes;
    },
    maxEntryBytes: options.maxEntryBytes,
    signal: options.signal,
    reuseBuffers: true,
  })) {
    digest?.update(entry.bytes);
    const info = inspectEntry(entry, logPath);
    const h = info.header!;
    if (needsRewrite(info, codec)) {
      // With onlyIfSmaller a v2 batch that recompression would grow stays as it is.
      if (info.magic < 2 || !options.onlyIfSmaller) return false;
      const out = recompressRecordBatch(entry.bytes, codec, {
        level: options.level,
        maxDecompressedBytes: options.maxDecompressedBatchBytes,
        crcChecked: true,
        transient: true,
      });
      if (out.length <= entry.bytes.length) return false;
    }
    report.batchesIn++;
    report.recordsIn += h.recordsCount;
    const key = formatKey(2, info.codec);
    report.codecMixIn[key] = (report.codecMixIn[key] ?? 0) + 1;
  }
  return true;
}

/** segment.index.bytes' default (LogConfig.DEFAULT_SEGMENT_INDEX_BYTES). */
export const DEFAULT_SEGMENT_INDEX_BYTES = 10 * 1024 * 1024;

/**
 * Rewrites one segment: legacy entries are upconverted, v2 batches recompressed, then the written
 * files are verified from disk before anything replaces the original (see swap.ts for the order
 * of renames). Never throws for a bad segment: the report says 'failed' with the typed error.
 */
export async function convertSegment(logPath: string, options: ConvertOptions): Promise<SegmentReport> {
  const started = performance.now();
  const report = emptyReport(logPath);
  let lock: FileLock | undefined;
  // A commit from the stage holds the partition lock from the recovery of leftovers through the
  // swap (one lock, not two: its work in between is a few links).
  let held: FileLock | undefined;
  let dest: SegmentFiles | undefined;
  // outDir: final files already renamed into place, removed again if a later step fails.
  const placed: string[] = [];
  // stageDir: the source as it was before the first read (every read comes after it).
  let staged: SourceIdentity | undefined;
  // inPlace: the same, compared again right before the swap.
  let read: SourceIdentity | undefined;
  // outDir: the first directory this call created, removed again (when empty) on failure.
  let madeOutDir: string | undefined;
  try {
    validate(options);
    options.signal?.throwIfAborted();
    const codec = codecId(options.codec);
    // A prepare is refused what its commit would refuse (a symlinked .log), while the broker runs.
    const { files: src, size } = await requireSegment(logPath, options.outDir ? 'read' : 'in-place');
    if (options.outDir) await assertNotInMarkedDir(options.outDir, options.outDir, 'the output dir');
    report.bytesIn = size;
    if (options.stageDir) {
      staged = await sourceIdentity(src.log);
      if (staged === undefined) throw new SourceMovedError(src.log);
    }
    if (options.inPlace) {
      // Refused before anything is written when the new files could not get the original's owner.
      assertCanKeepOwnership(await ownershipOf(src.log), src.log);
      if (options.backupDir) await assertBackupDirOutside(options.backupDir, [src.dir]);
      if (options.lock !== false) lock = await acquireSegmentLock(src.log);
      // Leftovers of a crash completed; and a broker completing Kafka's own unfinished swap
      // deletes segment files by offset range: never rewrite beside one (checked again under the
      // partition lock right before the swap).
      if (options.fromStage && (await exists(src.in(options.fromStage).stageRecord)))
        held = await acquirePartitionLock(src.dir, { signal: options.signal });
      await preparePartitionForConversion(src, lock?.token, options.signal, held !== undefined);
    }
    // Owner, group and mode of the files a broker opens read-write: the new files get them. Read
    // under the segment lock (another run may have been swapping this segment until now).
    const logOwner = await ownershipOf(src.log);
    const indexOwner = {
      [INDEX_SUFFIX]: (await ownershipOf(src.index).catch(() => undefined)) ?? logOwner,
      [TIMEINDEX_SUFFIX]: (await ownershipOf(src.timeindex).catch(() => undefined)) ?? logOwner,
    };
    if (options.inPlace) for (const o of Object.values(indexOwner)) assertCanKeepOwnership(o, src.log);
    // recoverLeftovers may have completed an earlier swap of this very segment.
    const before = await stat(src.log, { bigint: true });
    if (options.inPlace) {
      // The source as it is before the first read: nothing is swapped in for one that changed
      // since (an archive copy still writing it would send the rest of its bytes to the replaced
      // inode: reliability §16.4).
      read = await sourceIdentity(src.log);
      if (read === undefined) throw new SourceMovedError(src.log);
      if (
        options.quietMs !== undefined &&
        Date.now() - Number(BigInt(read.mtimeNs) / 1_000_000n) < options.quietMs
      ) {
        report.result = 'skipped';
        report.reason = 'still-changing';
        report.bytesIn = Number(before.size);
        return finish(report, started);
      }
    }
    // To the nanosecond: the new files get exactly the original's (a rewrite changes no time).
    const mtimeNs = before.mtimeNs;
    report.bytesIn = Number(before.size);
    const outDir = options.inPlace ? src.dir : path.resolve(options.outDir ?? options.stageDir!);
    dest = src.in(outDir);
    const tmp = {
      log: dest.tmp('.log'),
      index: dest.tmp(INDEX_SUFFIX),
      timeindex: dest.tmp(TIMEINDEX_SUFFIX),
    };
    // The new files carry the original .log mtime from birth (retention falls back to it) and the
    // originals' owner and mode (outDir: the owner where this process may give it).
    const owners: [string, Ownership][] = [
      [tmp.log, logOwner],
      [tmp.index, indexOwner[INDEX_SUFFIX]],
      [tmp.timeindex, indexOwner[TIMEINDEX_SUFFIX]],
    ];
    // Commit of a two-phase migration: the staged files, when still the source's conversion.
    const fromStage = options.fromStage
      ? await adoptStaged(src, options.fromStage, options, report, owners, mtimeNs)
      : 'absent';
    if (fromStage !== 'adopted') {
      // A conversion now: the partition's other swaps are not kept waiting for it.
      await held?.release();
      held = undefined;
    }
    if (fromStage === 'unchanged') return finish(report, started);
    const digests: StageDigests | undefined = options.stageDir
      ? {
          source: createHash('sha256'),
          log: createHash('sha256'),
          index: createHash('sha256'),
          timeindex: createHash('sha256'),
        }
      : undefined;
    // In place (and into a stage), a segment already in the target codec is left alone; into
    // outDir it is copied (the same path: every batch copied byte for byte, indexes rebuilt,
    // verified), so that outDir holds every segment it was given.
    let copyOnly = false;
    if (fromStage !== 'adopted') {
      if (!options.force && (await alreadyConverted(src.log, codec, options, report, digests?.source))) {
        if (options.inPlace || options.stageDir) {
          report.result = 'skipped';
          report.reason = 'already-target-codec';
          if (options.stageDir)
            await recordStaged(src, dest, options, staged!, digests!, report, mtimeNs, false);
          return finish(report, started);
        }
        copyOnly = true;
      }
      // Only what is rewritten: a skip breaks no link. A prepare too: its commit would.
      if (!options.outDir) await assertSingleLink(src);
      if (digests) digests.source = createHash('sha256');
      report.batchesIn = 0;
      report.recordsIn = 0;
      report.codecMixIn = {};
      report.truncatedTailBytes = 0;
      if (!options.inPlace) madeOutDir = await mkdirp(outDir);
      if (!options.inPlace && dest.log === src.log)
        throw new InvalidArgumentError('outDir is the segment directory');
      await produce(src, tmp, outDir, owners, mtimeNs, codec, options, report, digests);
      if (options.stageDir) {
        // Staged only when the source is still the file read (a retention delete or a cleaner's
        // replacement while it was read makes a new inode or a missing file).
        if (!sameIdentity(await sourceIdentity(src.log), staged!)) throw new SourceMovedError(src.log);
        // An older staged segment of this base is replaced: its record goes first.
        await removeIfExists(dest.stageRecord);
      }
    }
    if (options.inPlace) {
      if (fromStage === 'adopted') await assertSingleLink(src);
      if (options.backupDir) report.backupPaths = await backupOriginals(src, options.backupDir, mtimeNs);
      // Waiting for another segment's swap can be interrupted; the swap itself never is.
      const partitionLock = held ?? (await acquirePartitionLock(src.dir, { signal: options.signal }));
      held = undefined;
      let swapping = false;
      try {
        await preparePartitionForSwap(src, lock?.token);
        await options.beforeSwap?.();
        if (!sameIdentity(await sourceIdentity(src.log), read!)) throw new SourceMovedError(src.log);
        options.signal?.throwIfAborted();
        swapping = true;
        // Both locks re-read before each rename: a run frozen past the stale time must not rename
        // files another run has taken over since.
        await swapInPlace(src, mtimeNs, async () => {
          await lock?.assertHeld();
          await partitionLock.assertHeld();
        });
      } catch (err) {
        // Once the marker is written the swap is completed, by this run or the next one
        // (recoverLeftovers); before it, the catch below removes the temp files. A lost lock:
        // the partition is the other run's now, so nothing is completed or removed here.
        if (swapping && !(err instanceof SimulatedCrash) && !(err instanceof LostLockError))
          await recoverLeftovers(src.dir, {
            baseOffset: src.baseOffset,
            ownLockToken: lock?.token,
            partitionLockHeld: true,
          }).catch(() => {});
        throw err;
      } finally {
        await partitionLock.release().catch(() => {});
      }
      report.outPath = src.log;
    } else {
      // outDir: plain replace of the three files; log last so a complete .log implies its indexes.
      for (const [from, to] of [
        [tmp.timeindex, dest.timeindex],
        [tmp.index, dest.index],
        [tmp.log, dest.log],
      ]) {
        await rename(from, to);
        placed.push(to);
      }
      await fsyncDir(outDir);
      report.outPath = dest.log;
      if (options.stageDir) await recordStaged(src, dest, options, staged!, digests!, report, mtimeNs, true);
    }
    // Committed: the staged copies are the swapped-in files now (links); the record goes.
    if (fromStage === 'adopted') await discardStaged(options.fromStage!, src.baseOffset).catch(rethrowCrash);
    if (copyOnly) {
      report.result = 'copied';
      report.reason = 'already-target-codec';
    } else report.result = 'converted';
    return finish(report, started);
  } catch (err) {
    if (err instanceof SimulatedCrash) {
      // A dead process releases nothing: its locks stay until they are judged stale.
      lock = undefined;
      held = undefined;
      throw err;
    }
    if (err instanceof SourceMovedError && options.inPlace) {
      // Not swapped: the original stays as it is now, and a later run converts it once quiet.
      if (dest) await cleanup(dest, placed).catch(() => {});
      report.result = 'skipped';
      report.reason = 'source-changed';
      return finish(report, started);
    }
    if (err instanceof LostLockError) {
      // The run that took the lock over owns these files now (the temp names are the same for
      // both runs) and reports the segment itself: not a failure of this run.
      report.result = 'skipped';
      report.reason = err.detail;
      report.error = err.toJSON();
      return finish(report, started);
    }
    // Best effort: on a read-only or failing filesystem the removal fails too, and the typed
    // error below must still be reported (recoverLeftovers removes temp files on the next run).
    if (dest) await cleanup(dest, placed).catch(() => {});
    if (dest && madeOutDir !== undefined) await removeEmptyDirs(dest.dir, madeOutDir).catch(() => {});
    if (options.stageDir) {
      // A source that vanished or was replaced while it was read is no failure of a prepare: it
      // is not staged, and the commit converts whatever is there then.
      const now = await sourceIdentity(logPath).catch(() => undefined);
      if (now === undefined || (staged !== undefined && !sameIdentity(now, staged))) {
        report.result = 'skipped';
        report.reason = now === undefined ? 'source-gone' : 'source-changed';
        report.stage = now === undefined ? 'gone' : 'changed';
        return finish(report, started);
      }
    }
    report.result = 'failed';
    if (options.signal?.aborted) report.aborted = true;
    const e = toSegmentError(options.signal?.aborted ? options.signal.reason : err, logPath);
    report.error = e.toJSON();
    report.reason = e.detail;
    return finish(report, started);
  } finally {
    // A lock that cannot be removed (read-only filesystem) is stale once this process exits.
    await held?.release().catch(() => {});
    await lock?.release().catch(() => {});
  }
}

/** sha256 of a staged source and of the files made from it (stage records). */
interface StageDigests {
  source: Hash;
  log: Hash;
  index: Hash;
  timeindex: Hash;
}

/** A source that vanished or was replaced while prepare read it (reported 'skipped', not failed). */
class SourceMovedError extends Error {
  constructor(readonly file: string) {
    super('the source changed while it was read');
  }
}

function rethrowCrash(err: unknown): void {
  if (err instanceof SimulatedCrash) throw err;
}

/**
 * Writes the conversion under the temp names, gives them the owners and mtime, fsyncs them and
 * verifies them from disk against the source.
 */
async function produce(
  src: SegmentFiles,
  tmp: { log: string; index: string; timeindex: string },
  outDir: string,
  owners: [string, Ownership][],
  mtimeNs: bigint,
  codec: number,
  options: ConvertOptions,
  report: SegmentReport,
  digests: StageDigests | undefined,
): Promise<void> {
  const proofs = new RecompressedBatchProofs();
  const runs = new UpconvertedRunProofs();
  const { offsetIndexBytes, timeIndexBytes } = await writeConverted(
    src.log,
    tmp,
    src.baseOffset,
    codec,
    options,
    report,
    proofs,
    runs,
    digests,
  );
  if (await isActiveSegment(src.log)) assertIndexesFit(src, offsetIndexBytes, timeIndexBytes, options);
  for (const [f, o] of owners) {
    await applyOwnership(f, o, !options.inPlace);
    await setMtime(f, mtimeNs);
  }
  // fsync runs while verify reads the files back (from the page cache, as it would after a
  // sync); nothing is renamed before both are done.
  const durable = (async () => {
    for (const f of Object.values(tmp)) await fsyncFile(f);
    await fsyncDir(outDir);
  })();
  durable.catch(() => {});
  try {
    if (options.testHooks?.beforeVerify) {
      await durable;
      await options.testHooks.beforeVerify(tmp);
    }
    await verifyRewrite(src.log, tmp, {
      baseOffset: src.baseOffset,
      indexIntervalBytes: options.indexIntervalBytes,
      maxDecompressedBytes: options.maxDecompressedBatchBytes,
      maxEntryBytes: options.maxEntryBytes,
      acceptTruncatedTail: options.acceptTruncatedTail,
      signal: options.signal,
      proofs,
      runs,
      sourceCrcsChecked: true,
    });
  } catch (err) {
    // No file removal while a sync of it is in flight.
    await durable.catch(() => {});
    throw err;
  }
  await durable;
  options.signal?.throwIfAborted();
}

/**
 * Prepare: the record that makes the files just placed in the stage dir a staged segment (or,
 * `withFiles` false, says the source is already in the target codec). The source is sampled
 * and must still be the file read.
 */
async function recordStaged(
  src: SegmentFiles,
  dest: SegmentFiles,
  options: ConvertOptions,
  source: SourceIdentity,
  digests: StageDigests,
  report: SegmentReport,
  mtimeNs: bigint,
  withFiles: boolean,
): Promise<void> {
  let files: StageRecord['files'] = null;
  if (withFiles) {
    files = {};
    const hashes: Record<string, Hash> = {
      [LOG_SUFFIX]: digests.log,
      [INDEX_SUFFIX]: digests.index,
      [TIMEINDEX_SUFFIX]: digests.timeindex,
    };
    for (const s of STAGED) {
      const st = await stat(dest.file(s), { bigint: true });
      files[s] = { size: Number(st.size), ino: String(st.ino), sha256: hashes[s].digest('hex') };
    }
  } else {
    // Nothing to stage: whatever an earlier prepare staged for this base goes.
    await mkdirp(dest.dir);
    await discardStaged(dest.dir, src.baseOffset);
  }
  const sampleSha256 = await sampleDigest(src.log, source.size);
  if (!sameIdentity(await sourceIdentity(src.log), source)) throw new SourceMovedError(src.log);
  await writeStageRecord(dest.dir, {
    tool: 'seglift',
    kind: 'stage',
    version: 2,
    prefix: src.prefix,
    source: {
      ...source,
      sha256: digests.source.digest('hex'),
      sampleSha256,
      mtimeMs: Number(mtimeNs / 1_000_000n),
    },
    options: stageOptionsKey(options),
    files,
    counts: {
      batchesIn: report.batchesIn,
      batchesOut: report.batchesOut,
      recordsIn: report.recordsIn,
      recordsOut: report.recordsOut,
      codecMixIn: report.codecMixIn,
      codecOut: report.codecOut,
    },
    stagedAt: new Date().toISOString(),
  });
  report.stage = 'staged';
  report.outPath = withFiles ? dest.log : undefined;
}

/**
 * Commit, in place, under the segment lock: links the staged files to the temp names the swap
 * expects when the record still matches the source and the options, and the linked files are
 * still the bytes prepare wrote and verified ('adopted'); a record saying the source is already in
 * the target codec makes the report a skip ('unchanged'); a stale record, or staged files that
 * fail their check, are discarded ('stale'), and the segment is converted as usual.
 */
async function adoptStaged(
  src: SegmentFiles,
  stagePartition: string,
  options: ConvertOptions,
  report: SegmentReport,
  owners: [string, Ownership][],
  mtimeNs: bigint,
): Promise<'absent' | 'stale' | 'unchanged' | 'adopted'> {
  const record = await readStageRecord(stagePartition, src.baseOffset);
  if (record === undefined) return 'absent';
  if ((await staleReason(record, src.log, stageOptionsKey(options), stagePartition)) !== undefined) {
    await discardStaged(stagePartition, src.baseOffset);
    report.stage = 'discarded';
    return 'stale';
  }
  if (record.files === null) {
    Object.assign(report, record.counts);
    report.stage = 'committed';
    await discardStaged(stagePartition, src.baseOffset);
    report.result = 'skipped';
    report.reason = 'already-target-codec';
    return 'unchanged';
  }
  const files = record.files;
  if (await isActiveSegment(src.log))
    assertIndexesFit(src, files[INDEX_SUFFIX].size, files[TIMEINDEX_SUFFIX].size, options);
  // Links, not renames: a crash before the swap's marker leaves the stage whole for a rerun
  // (recoverLeftovers deletes unmarked temp files; they are only the second names).
  const staged = new SegmentFiles(stagePartition, src.baseOffset);
  for (const s of STAGED) {
    await removeIfExists(src.tmp(s));
    await link(staged.file(s), src.tmp(s));
  }
  // Checked through the links: the very inodes the swap renames in. Nothing else checks these
  // bytes again (verify read them in prepare, maybe days ago).
  const bad = await stagedFileMismatch(record, {
    [LOG_SUFFIX]: src.tmp(LOG_SUFFIX),
    [INDEX_SUFFIX]: src.tmp(INDEX_SUFFIX),
    [TIMEINDEX_SUFFIX]: src.tmp(TIMEINDEX_SUFFIX),
  });
  if (bad !== undefined) {
    for (const s of STAGED) await removeIfExists(src.tmp(s));
    await discardStaged(stagePartition, src.baseOffset);
    report.stage = 'corrupt';
    report.reason = `staged copy failed its check (${bad.what} of ${src.prefix}${bad.suffix} differs from the stage record): converted at commit`;
    return 'stale';
  }
  Object.assign(report, record.counts);
  report.stage = 'committed';
  report.bytesOut = files[LOG_SUFFIX].size;
  // Prepare gave them the owners and mtime where it could; anything else is set now (and synced).
  for (const [f, o] of owners) {
    const st = await stat(f, { bigint: true });
    let changed = false;
    if (Number(st.uid) !== o.uid || Number(st.gid) !== o.gid || (Number(st.mode) & 0o7777) !== o.mode) {
      await applyOwnership(f, o);
      changed = true;
    }
    if (st.mtimeNs !== mtimeNs) {
      await setMtime(f, mtimeNs);
      changed = true;
    }
    if (changed) await fsyncFile(f);
  }
  // No fsync of the directory here: unmarked temp names are nothing to a crash (deleted), and
  // the swap's marker is fsynced with the directory before anything depends on these links.
  return 'adopted';
}

/**
 * A broker resizes the last segment's indexes to segment.index.bytes when it loads the log
 * (LogLoader.load) and fails if they hold more entries than fit.
 */
function assertIndexesFit(
  seg: SegmentFiles,
  offsetIndexBytes: number,
  timeIndexBytes: number,
  options: ConvertOptions,
): void {
  const limit = options.segmentIndexBytes ?? DEFAULT_SEGMENT_INDEX_BYTES;
  const fits = (bytes: number, entrySize: number) => bytes <= Math.floor(limit / entrySize) * entrySize;
  if (fits(offsetIndexBytes, 8) && fits(timeIndexBytes, 12)) return;
  throw new InvalidArgumentError(
    `this is its partition's active (last) segment and its rebuilt indexes need ${offsetIndexBytes} bytes (.index) and ${timeIndexBytes} bytes (.timeindex), more than segment.index.bytes (${limit}) holds: a broker would fail to load the partition. Give the topic's value with --segment-index-bytes, a larger --index-interval-bytes, or leave the active segment out`,
    { file: seg.log },
  );
}

async function cleanup(dest: SegmentFiles, placed: string[]): Promise<void> {
  // Only temp names: anything with a marker is recoverLeftovers' to complete.
  if (await exists(dest.marker)) return;
  for (const s of ['.log', INDEX_SUFFIX, TIMEINDEX_SUFFIX]) await removeIfExists(dest.tmp(s));
  for (const f of placed) await removeIfExists(f);
}

function finish(report: SegmentReport, started: number): SegmentReport {
  report.durationMs = Math.round((performance.now() - started) * 100) / 100;
  report.throughputMBps = throughput(report.bytesIn, report.durationMs);
  return report;
}

async function writeConverted(
  source: string,
  tmp: { log: string; index: string; timeindex: string },
  baseOffset: bigint,
  codec: number,
  options: ConvertOptions,
  report: SegmentReport,
  proofs: RecompressedBatchProofs,
  runs: UpconvertedRunProofs,
  digests?: StageDigests,
): Promise<{ offsetIndexBytes: number; timeIndexBytes: number }> {
  const maxBatchBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
  const level = options.level;
  const index = new SegmentIndexBuilder(baseOffset, {
    indexIntervalBytes: options.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL_BYTES,
  });
  const up = new Upconverter({
    grouping: options.grouping ?? 'coalesce',
    codec: codec as 0 | 1 | 2 | 3 | 4,
    level,
    maxBatchBytes,
    coalesceBytes: options.coalesceBytes,
    maxDecompressedBytes: options.maxDecompressedBatchBytes,
    prove: true,
    onOversizeBatch: () => {
      report.oversizeUpconverted++;
    },
  });
  const fh = await openForWrite(tmp.log);
  let closed = false;
  try {
    const w = new SegmentWriter(fh, tmp.log, index, digests?.log);
    const total = report.bytesIn;
    let nextProgress = 0;
    // The run of legacy entries being upconverted: its source bytes and its output are
    // checksummed as they go by (see UpconvertedRunProofs).
    let run: UpconvertedRun | undefined;
    // Legacy entries per (magic << 3 | codec), for report.codecMixIn.
    const legacyMix = new Int32Array(16);
    const countLegacyMix = () => {
      for (let i = 0; i < 16; i++) {
        if (legacyMix[i] === 0) continue;
        const key = formatKey(i >> 3, i & 7);
        report.codecMixIn[key] = (report.codecMixIn[key] ?? 0) + legacyMix[i];
        legacyMix[i] = 0;
      }
    };
    /** Where in the current chunk the run's bytes not yet checksummed start. */
    let runFrom = 0;
    const writeOutput = async () => {
      if (up.outputLength === 0) return;
      const out = up.takeOutput();
      run!.outputCrc = crc32(out, run!.outputCrc);
      run!.batches += batchesIn(out);
      await w.writeBatches(out);
    };
    const endRun = async () => {
      up.finishPending();
      await writeOutput();
      run!.outputEnd = w.position;
      runs.add(run!);
      run = undefined;
    };
    for await (const c of readSegmentChunks(source, {
      acceptTruncatedTail: options.acceptTruncatedTail,
      onTruncatedTail: (t) => {
        report.truncatedTailBytes = t.bytes;
      },
      maxEntryBytes: options.maxEntryBytes,
      signal: options.signal,
      reuseBuffers: true,
    })) {
      const b = c.bytes;
      // The staged source's digest, from the reads the conversion makes anyway.
      digests?.source.update(b.subarray(c.start, c.end));
      runFrom = c.start;
      const recordsBefore = up.stats.recordsIn;
      try {
        for (let p = c.start; p < c.end; ) {
          const size = entrySizeAt(b, p);
          const magic = b[p + 16];
          const position = c.position + (p - c.start);
          report.batchesIn++;
          if (magic < 2) {
            if (run === undefined) {
              run = {
                sourceStart: position,
                sourceEnd: 0,
                sourceCrc: 0,
                outputStart: w.position,
                outputEnd: 0,
                outputCrc: 0,
                batches: 0,
              };
              runFrom = p;
            }
            try {
              // Checks the entry's CRC-32 (and a wrapper's inner ones) as inspectEntry would.
              up.pushEntry(b, p, p + size);
            } catch (err) {
              throw withEntryContext(err, source, { position, bytes: b.subarray(p, p + size) });
            }
            // Counted here, added to the report at the end of the chunk.
            legacyMix[(magic << 3) | (b[p + 17] & 0x07)]++;
            p += size;
            continue;
          }
          const entry = { position, size, magic, bytes: b.subarray(p, p + size) };
          if (run !== undefined) {
            run.sourceCrc = crc32Range(b, runFrom, p, run.sourceCrc);
            run.sourceEnd = position;
            await endRun();
          }
          // The stored CRC-32C is checked here once (recompressRecordBatch is told so).
          const info = inspectEntry(entry, source);
          const key = formatKey(2, info.codec);
          report.codecMixIn[key] = (report.codecMixIn[key] ?? 0) + 1;
          try {
            const h = info.header!;
            report.recordsIn += h.recordsCount;
            if (!needsRewrite(info, codec, options.force)) {
              // Kafka never compresses control or empty batches (docs/kafka-format.md §5.4): copy them byte for byte.
              report.batchesCopied++;
              await w.write(entry.bytes);
            } else {
              const out = recompressRecordBatch(entry.bytes, codec, {
                level,
                maxDecompressedBytes: options.maxDecompressedBatchBytes,
                roundTrip: true,
                crcChecked: true,
                // Copied by w.write below before another batch is recompressed.
                transient: true,
              });
              // A batch kept as it is: the round trip just parsed its records strictly, so its own
              // bytes are proven like a recompressed batch's.
              const kept = keptAsIs(out.length, entry.bytes.length, {
                maxBatchBytes,
                onlyIfSmaller: options.onlyIfSmaller,
              });
              if (kept === 'oversize') {
                report.oversizeKept++;
                report.batchesCopied++;
                proofs.add(entry.position, entry.bytes);
                await w.write(entry.bytes);
              } else if (kept === 'larger') {
                report.keptSmaller++;
                report.batchesCopied++;
                proofs.add(entry.position, entry.bytes);
                await w.write(entry.bytes);
              } else {
                proofs.add(entry.position, out);
                await w.write(out);
              }
            }
          } catch (err) {
            throw withEntryContext(err, source, entry);
          }
          p += size;
        }
      } finally {
        report.recordsIn += up.stats.recordsIn - recordsBefore;
        countLegacyMix();
      }
      if (run !== undefined) {
        run.sourceCrc = crc32Range(b, runFrom, c.end, run.sourceCrc);
        run.sourceEnd = c.position + (c.end - c.start);
        await writeOutput();
      }
      const done = c.position + (c.end - c.start);
      if (options.onProgress && done >= nextProgress) {
        options.onProgress(done, total);
        nextProgress = done + 8 * 1024 * 1024;
      }
    }
    if (run !== undefined) await endRun();
    await w.finish();
    // No fsync here: convertSegment syncs the three files while verify reads them back.
    await fh.close();
    closed = true;
    options.onProgress?.(total, total);
    const { offsetIndex, timeIndex } = index.finish();
    await writeWholeFile(tmp.index, offsetIndex);
    await writeWholeFile(tmp.timeindex, timeIndex);
    digests?.index.update(offsetIndex);
    digests?.timeindex.update(timeIndex);
    report.bytesOut = w.position;
    report.batchesOut = w.batches;
    report.recordsOut = w.records;
    report.codecOut = w.codecOut;
    return { offsetIndexBytes: offsetIndex.length, timeIndexBytes: timeIndex.length };
  } finally {
    if (!closed) await fh.close();
  }
}

/** Number of batches in `bytes` (whole batches back to back). */
function batchesIn(bytes: Uint8Array): number {
  let n = 0;
  for (let p = 0; p < bytes.length; n++)
    p += ((bytes[p + 8] << 24) | (bytes[p + 9] << 16) | (bytes[p + 10] << 8) | bytes[p + 11]) + 12;
  return n;
}
