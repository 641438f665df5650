/**
 * The one rewrite of a segment (Kafka's LogCleaner.cleanSegments reads the same way: create,
 * clean into, flush): legacy entries upconverted, v2 batches recompressed, the indexes rebuilt as
 * Kafka's recovery builds them, all under temp names; the new files then get the originals'
 * owner, mode and mtime, are fsynced and verified from disk against the source. Where the files
 * go next (an out dir, the swap, a stage) is the placements' business (placements.ts).
 */
import type { Hash } from 'node:crypto';
import {
  crc32,
  crc32Range,
  DEFAULT_INDEX_INTERVAL_BYTES,
  InvalidArgumentError,
  LENGTH_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  SegmentIndexBuilder,
} from '@seglift/format';
import { LEGACY_CODEC_MASK, type Upconverter } from '@seglift/legacy';
import { fsyncDir, fsyncFile, openForWrite, setMtime, writeWholeFile } from '../files/fsops.js';
import { dropWrittenFile, throttleIo } from '../files/io-courtesy.js';
import { INDEX_SUFFIX, LOG_SUFFIX, type SegmentFiles, TIMEINDEX_SUFFIX } from '../files/names.js';
import { applyOwnership, type Ownership } from '../files/ownership.js';
import {
  type CodecSettings,
  recompressBatch,
  type TargetCodec,
  targetCodec,
  upconverterFor,
} from './codec.js';
import { CONVERSION_SETTINGS, conversionSettingsOf } from './conversion-settings.js';
import {
  type EntryInfo,
  formatKey,
  inspectEntry,
  keptAsIs,
  needsRewrite,
  OffsetOrder,
  withEntryContext,
} from './entry.js';
import { RecompressedBatchProofs, type UpconvertedRun, UpconvertedRunProofs } from './proofs.js';
import { type EntryChunk, entrySizeAt, type ReadSegmentOptions, type SegmentEntry } from './reader.js';
import type { SegmentReport } from './report.js';
import type { SegmentSource } from './source.js';
import { firstRewritten } from './target-format.js';
import { type RewriteFiles, verifyRewrite } from './verify.js';
import { SegmentWriter } from './writer.js';

/**
 * What decides the bytes a rewrite writes and how it reads: the declared conversion settings
 * (conversion-settings.ts, each at its default when absent) and convert's own switches, which no
 * config file or environment sets (force, acceptTruncatedTail, maxEntryBytes). Plain data only.
 */
export interface RewriteSettings extends CodecSettings {
  onlyIfSmaller?: boolean;
  indexIntervalBytes?: number;
  segmentIndexBytes?: number;
  /** Recompress batches already in the target codec, and never skip. */
  force?: boolean;
  /** Drop (and report) a partial entry at the end instead of failing. */
  acceptTruncatedTail?: boolean;
  /** Largest source entry accepted by the reader (default 64 MiB). */
  maxEntryBytes?: number;
}

/** The names of RewriteSettings that no conversion setting declares. */
const CONVERT_SWITCHES = ['force', 'acceptTruncatedTail', 'maxEntryBytes'] as const;

/**
 * The settings in `given` and nothing else: what a conversion takes from a run's options (which
 * hold callbacks too), by the declared names (conversion-settings.ts) and convert's switches.
 */
export function rewriteSettingsOf(given: RewriteSettings): RewriteSettings {
  const out: Record<string, unknown> = {};
  for (const name of [...CONVERSION_SETTINGS.map((s) => s.name), ...CONVERT_SWITCHES]) {
    const v = (given as unknown as Record<string, unknown>)[name];
    if (v !== undefined) out[name] = v;
  }
  return out as unknown as RewriteSettings;
}

/** A rewrite's signal and callbacks (the calling thread's, never sent to another). */
export interface RewriteHooks {
  signal?: AbortSignal;
  onProgress?: (bytesDone: number, bytesTotal: number) => void;
  /** Called with the written files, fsynced, before they are verified from disk. */
  beforeVerify?: (files: { log: string; index: string; timeindex: string }) => void | Promise<void>;
}

/** sha256 of a staged source and of the files made from it (stage records). */
export interface StageDigests {
  source: Hash;
  log: Hash;
  index: Hash;
  timeindex: Hash;
}

/** The new files' owner and mode (per file) and mtime: the originals'. */
export interface NewFileAttributes {
  owners: { log: Ownership; index: Ownership; timeindex: Ownership };
  mtimeNs: bigint;
  /** Give the owner where this process may, without failing (an out dir: a copy, not the log). */
  ownerBestEffort: boolean;
}

export interface RewriteJob {
  settings: RewriteSettings;
  hooks: RewriteHooks;
  /** The segment whose temp names (SegmentFiles.tmp) are written. */
  into: SegmentFiles;
  attributes: NewFileAttributes;
  /** Counts and sizes are added as they are known: a failure's report keeps what was counted. */
  report: SegmentReport;
  /** Digests of the bytes read and written (a prepare's stage record). */
  digests?: StageDigests;
}

/** The new files under their temp names: written, given their attributes, fsynced and verified. */
export interface VerifiedRewrite {
  files: RewriteFiles;
  offsetIndexBytes: number;
  timeIndexBytes: number;
}

/** The temp names a rewrite writes in `into`. */
export function tempFiles(into: SegmentFiles): RewriteFiles {
  return { log: into.tmp(LOG_SUFFIX), index: into.tmp(INDEX_SUFFIX), timeindex: into.tmp(TIMEINDEX_SUFFIX) };
}

/** The reader's options of a rewrite's passes over the source. */
function sourceReadOptions(
  settings: RewriteSettings,
  report: SegmentReport,
  signal: AbortSignal | undefined,
): ReadSegmentOptions {
  return {
    acceptTruncatedTail: settings.acceptTruncatedTail,
    onTruncatedTail: (t) => {
      report.truncatedTailBytes = t.bytes;
    },
    maxEntryBytes: settings.maxEntryBytes,
    signal,
    reuseBuffers: true,
  };
}

/**
 * Whether the segment is already what a rewrite would give (target-format.ts has the one rule,
 * `firstRewritten`); CRCs and the offsets' order (OffsetOrder) are checked on the way; stops at
 * the first entry that needs work.
 * Counts what it read into the report (a skip's counts), and adds it to `digest`.
 */
export async function alreadyConverted(
  source: SegmentSource,
  settings: RewriteSettings,
  report: SegmentReport,
  { signal, digest }: { signal?: AbortSignal; digest?: Hash } = {},
): Promise<boolean> {
  const order = new OffsetOrder(source.name);
  const verdict = await firstRewritten(
    source.entries(sourceReadOptions(settings, report, signal)),
    source.name,
    settings,
    {
      checkCrcs: true,
      inspected: (entry, info) => {
        digest?.update(entry.bytes);
        order.follow(info.offset, info.lastOffset, info.position);
      },
      kept: (_entry, info) => {
        report.batchesIn++;
        report.recordsIn += info.header!.recordsCount;
        const key = formatKey(2, info.codec);
        report.codecMixIn[key] = (report.codecMixIn[key] ?? 0) + 1;
      },
    },
  );
  return verdict.inTarget;
}

/** Forgets what `alreadyConverted` counted: the rewrite counts every entry again. */
export function resetSourceCounts(report: SegmentReport): void {
  report.batchesIn = 0;
  report.recordsIn = 0;
  report.codecMixIn = {};
  report.truncatedTailBytes = 0;
}

/**
 * Rewrites the source into the temp names of `job.into` and verifies the files from disk
 * (verify.ts). Throws on a bad segment or a mismatch (the caller removes the temp files).
 */
export async function rewrite(source: SegmentSource, job: RewriteJob): Promise<VerifiedRewrite> {
  const files = tempFiles(job.into);
  const proofs = new RecompressedBatchProofs();
  const runs = new UpconvertedRunProofs();
  const sizes = await new RewritePass(source, files, job, proofs, runs).run();
  if (await source.isActive())
    assertIndexesFit(source.name, sizes.offsetIndexBytes, sizes.timeIndexBytes, job.settings);
  const { owners, mtimeNs, ownerBestEffort } = job.attributes;
  for (const [f, o] of [
    [files.log, owners.log],
    [files.index, owners.index],
    [files.timeindex, owners.timeindex],
  ] as const) {
    await applyOwnership(f, o, ownerBestEffort);
    await setMtime(f, mtimeNs);
  }
  await syncAndVerify(source, files, job, { proofs, runs });
  return { files, ...sizes };
}

/**
 * fsync runs while verify reads the files back (from the page cache, as it would after a sync);
 * nothing is renamed before both are done.
 */
async function syncAndVerify(
  source: SegmentSource,
  files: RewriteFiles,
  job: RewriteJob,
  proven: { proofs: RecompressedBatchProofs; runs: UpconvertedRunProofs },
): Promise<void> {
  const { settings, hooks } = job;
  const durable = (async () => {
    for (const f of Object.values(files)) await fsyncFile(f);
    await fsyncDir(job.into.dir);
  })();
  durable.catch(() => {});
  try {
    if (hooks.beforeVerify) {
      await durable;
      await hooks.beforeVerify(files);
    }
    await verifyRewrite(source, files, {
      baseOffset: source.baseOffset,
      indexIntervalBytes: settings.indexIntervalBytes,
      maxDecompressedBytes: settings.maxDecompressedBatchBytes,
      maxEntryBytes: settings.maxEntryBytes,
      acceptTruncatedTail: settings.acceptTruncatedTail,
      signal: hooks.signal,
      ...proven,
      sourceCrcsChecked: true,
    });
  } catch (err) {
    // No file removal while a sync of it is in flight.
    await durable.catch(() => {});
    throw err;
  }
  await durable;
  // Synced and verified: the new files leave the page cache (verify's reads of them included).
  for (const f of Object.values(files)) await dropWrittenFile(f);
  hooks.signal?.throwIfAborted();
}

/**
 * A broker resizes the last segment's indexes to segment.index.bytes when it loads the log
 * (LogLoader.load) and fails if they hold more entries than fit.
 */
export function assertIndexesFit(
  log: string,
  offsetIndexBytes: number,
  timeIndexBytes: number,
  settings: { segmentIndexBytes?: number },
): void {
  const limit = settings.segmentIndexBytes ?? conversionSettingsOf().segmentIndexBytes;
  const fits = (bytes: number, entrySize: number) => bytes <= Math.floor(limit / entrySize) * entrySize;
  if (fits(offsetIndexBytes, 8) && fits(timeIndexBytes, 12)) return;
  throw new InvalidArgumentError(
    `this is its partition's active (last) segment and its rebuilt indexes need ${offsetIndexBytes} bytes (.index) and ${timeIndexBytes} bytes (.timeindex), more than segment.index.bytes (${limit}) holds: a broker would fail to load the partition. Give the topic's value with --segment-index-bytes, a larger --index-interval-bytes, or leave the active segment out`,
    { file: log },
  );
}

/** Progress is reported at most every this many bytes read. */
const PROGRESS_STEP_BYTES = 8 * 1024 * 1024;

/**
 * One read of the source, writing the new log as it goes and rebuilding its indexes: legacy
 * entries feed the upconverter in runs (each run's source and output checksummed as they go by,
 * see UpconvertedRunProofs), v2 batches are copied or recompressed one at a time.
 */
class RewritePass {
  private readonly settings: RewriteSettings;
  private readonly hooks: RewriteHooks;
  private readonly report: SegmentReport;
  private readonly target: TargetCodec;
  private readonly index: SegmentIndexBuilder;
  private readonly up: Upconverter;
  private w!: SegmentWriter;
  /** The run of legacy entries being upconverted. */
  private openRun: UpconvertedRun | undefined;
  /** Where in the current chunk the run's bytes not yet checksummed start. */
  private runFrom = 0;
  /** Legacy entries per (magic << 3 | codec), for report.codecMixIn (added once per chunk). */
  private readonly legacyMix = new Int32Array(16);
  private nextProgress = 0;
  private readonly order: OffsetOrder;

  constructor(
    private readonly source: SegmentSource,
    private readonly files: RewriteFiles,
    private readonly job: RewriteJob,
    private readonly proofs: RecompressedBatchProofs,
    private readonly runs: UpconvertedRunProofs,
  ) {
    this.settings = job.settings;
    this.hooks = job.hooks;
    this.report = job.report;
    this.order = new OffsetOrder(source.name);
    this.target = targetCodec(this.settings);
    this.index = new SegmentIndexBuilder(source.baseOffset, {
      indexIntervalBytes: this.settings.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL_BYTES,
    });
    this.up = upconverterFor(this.target, this.settings, () => {
      this.report.oversizeUpconverted++;
    });
  }

  async run(): Promise<{ offsetIndexBytes: number; timeIndexBytes: number }> {
    const fh = await openForWrite(this.files.log);
    let closed = false;
    try {
      this.w = new SegmentWriter(fh, this.files.log, this.index, this.job.digests?.log);
      for await (const c of this.source.chunks(
        sourceReadOptions(this.settings, this.report, this.hooks.signal),
      ))
        await this.chunk(c);
      if (this.openRun !== undefined) await this.endRun();
      await this.w.finish();
      // Every output taken is written: the next segment's upconverter grows no buffers anew.
      this.up.release();
      // No fsync here: the rewrite syncs the three files while verify reads them back.
      await fh.close();
      closed = true;
      this.hooks.onProgress?.(this.report.bytesIn, this.report.bytesIn);
      return await this.writeIndexes();
    } finally {
      if (!closed) await fh.close();
    }
  }

  private async chunk(c: EntryChunk): Promise<void> {
    const b = c.bytes;
    // The staged source's digest, from the reads the conversion makes anyway.
    this.job.digests?.source.update(b.subarray(c.start, c.end));
    this.runFrom = c.start;
    const recordsBefore = this.up.stats.recordsIn;
    try {
      for (let p = c.start; p < c.end; ) {
        p = this.legacyEntries(c, p);
        if (p === c.end) break;
        const size = entrySizeAt(b, p);
        const position = c.position + (p - c.start);
        this.report.batchesIn++;
        await this.v2Batch(b, p, { position, size, magic: 2, bytes: b.subarray(p, p + size) });
        p += size;
      }
    } finally {
      this.report.recordsIn += this.up.stats.recordsIn - recordsBefore;
      this.countLegacyMix();
    }
    const done = c.position + (c.end - c.start);
    if (this.openRun !== undefined) {
      this.openRun.sourceCrc = crc32Range(b, this.runFrom, c.end, this.openRun.sourceCrc);
      this.openRun.sourceEnd = done;
      await this.writeOutput();
    }
    if (this.hooks.onProgress && done >= this.nextProgress) {
      this.hooks.onProgress(done, this.report.bytesIn);
      this.nextProgress = done + PROGRESS_STEP_BYTES;
    }
  }

  /**
   * The legacy entries of `c` from `p` on, up to its end or its next v2 batch (returned): a
   * plain loop, which V8 optimizes once, where an async function's hot loop was optimized and
   * thrown away again.
   */
  private legacyEntries(c: EntryChunk, p: number): number {
    const b = c.bytes;
    while (p < c.end && b[p + MAGIC_OFFSET] < 2) {
      const size = entrySizeAt(b, p);
      this.report.batchesIn++;
      this.legacyEntry(b, p, size, c.position + (p - c.start));
      p += size;
    }
    return p;
  }

  /** A legacy entry joins the current run (one is started at the first). */
  private legacyEntry(b: Buffer, p: number, size: number, position: number): void {
    if (this.openRun === undefined) {
      this.openRun = {
        sourceStart: position,
        sourceEnd: 0,
        sourceCrc: 0,
        outputStart: this.w.position,
        outputEnd: 0,
        outputCrc: 0,
        batches: 0,
      };
      this.runFrom = p;
    }
    this.order.followAt(b, p, position);
    try {
      // Checks the entry's CRC-32 (and a wrapper's inner ones) as inspectEntry would.
      this.up.pushEntry(b, p, p + size);
    } catch (err) {
      throw withEntryContext(err, this.source.name, { position, bytes: b.subarray(p, p + size) });
    }
    // Counted here, added to the report at the end of the chunk (a legacy entry's attributes
    // byte follows its magic byte).
    this.legacyMix[(b[p + MAGIC_OFFSET] << 3) | (b[p + MAGIC_OFFSET + 1] & LEGACY_CODEC_MASK)]++;
  }

  /** A v2 batch ends the current run, and is copied or recompressed. */
  private async v2Batch(b: Buffer, p: number, entry: SegmentEntry): Promise<void> {
    if (this.openRun !== undefined) {
      this.openRun.sourceCrc = crc32Range(b, this.runFrom, p, this.openRun.sourceCrc);
      this.openRun.sourceEnd = entry.position;
      await this.endRun();
    }
    // The stored CRC-32C is checked here once (the recompression is told so).
    const info = inspectEntry(entry, this.source.name);
    this.order.follow(info.offset, info.lastOffset, entry.position);
    const key = formatKey(2, info.codec);
    this.report.codecMixIn[key] = (this.report.codecMixIn[key] ?? 0) + 1;
    try {
      this.report.recordsIn += info.header!.recordsCount;
      await this.writeBatch(entry, info);
    } catch (err) {
      throw withEntryContext(err, this.source.name, entry);
    }
  }

  private async writeBatch(entry: SegmentEntry, info: EntryInfo): Promise<void> {
    const { report, settings } = this;
    if (!needsRewrite(info, this.target.id, settings.force)) {
      // Kafka never compresses control or empty batches (docs/kafka-format.md §5.4): copied byte for byte.
      report.batchesCopied++;
      await this.w.write(entry.bytes);
      return;
    }
    // Copied by w.write below before another batch is recompressed.
    const out = recompressBatch(entry.bytes, this.target, { roundTrip: true, crcChecked: true });
    const kept = keptAsIs(out.length, entry.bytes.length, settings);
    if (kept === undefined) {
      this.proofs.add(entry.position, out);
      await this.w.write(out);
      return;
    }
    // A batch kept as it is: the round trip just parsed its records strictly, so its own bytes
    // are proven like a recompressed batch's.
    if (kept === 'oversize') report.oversizeKept++;
    else report.keptSmaller++;
    report.batchesCopied++;
    this.proofs.add(entry.position, entry.bytes);
    await this.w.write(entry.bytes);
  }

  private async writeOutput(): Promise<void> {
    if (this.up.outputLength === 0) return;
    const out = this.up.takeOutput();
    const run = this.openRun!;
    run.outputCrc = crc32(out, run.outputCrc);
    run.batches += batchesIn(out);
    await this.w.writeBatches(out);
  }

  private async endRun(): Promise<void> {
    this.up.finishPending();
    await this.writeOutput();
    this.openRun!.outputEnd = this.w.position;
    this.runs.add(this.openRun!);
    this.openRun = undefined;
  }

  private countLegacyMix(): void {
    const { legacyMix, report } = this;
    for (let i = 0; i < 16; i++) {
      if (legacyMix[i] === 0) continue;
      const key = formatKey(i >> 3, i & 7);
      report.codecMixIn[key] = (report.codecMixIn[key] ?? 0) + legacyMix[i];
      legacyMix[i] = 0;
    }
  }

  private async writeIndexes(): Promise<{ offsetIndexBytes: number; timeIndexBytes: number }> {
    const { offsetIndex, timeIndex } = this.index.finish();
    await writeWholeFile(this.files.index, offsetIndex);
    await writeWholeFile(this.files.timeindex, timeIndex);
    await throttleIo(offsetIndex.length + timeIndex.length);
    this.job.digests?.index.update(offsetIndex);
    this.job.digests?.timeindex.update(timeIndex);
    const { report, w } = this;
    report.bytesOut = w.position;
    report.batchesOut = w.batches;
    report.recordsOut = w.records;
    report.codecOut = w.codecOut;
    return { offsetIndexBytes: offsetIndex.length, timeIndexBytes: timeIndex.length };
  }
}

/** Number of batches in `bytes` (whole batches back to back). */
function batchesIn(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let n = 0;
  for (let p = 0; p < bytes.length; n++) p += view.getInt32(p + LENGTH_OFFSET) + LOG_OVERHEAD;
  return n;
}
