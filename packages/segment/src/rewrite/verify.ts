import { readFile } from 'node:fs/promises';
import {
  ATTRIBUTES_OFFSET,
  COMPRESSION_CODEC_MASK,
  CRC_OFFSET,
  crc32cRange,
  crc32Range,
  type LogicalRecord,
  logicalRecordsEqual,
  logicalRecordsOfBatch,
  MAGIC_OFFSET,
  type RecordBatchHeader,
  SegmentIndexBuilder,
} from '@seglift/format';
import { logicalRecordsOfLegacyEntry } from '@seglift/legacy';
import { MAX_INDEX_FILE_BYTES, readBounded } from '../files/bounded-read.js';
import { toSegmentError, VerifyMismatchError } from '../files/errors.js';
import { exists } from '../files/fs-util.js';
import type { SegmentFiles } from '../files/names.js';
import { requireSegment } from '../files/segment-file.js';
import { type EntryInfo, inspectEntry, withEntryContext } from './entry.js';
import { IndexChecker, type IndexProblem } from './index-check.js';
import type { RecompressedBatchProofs, UpconvertedRun, UpconvertedRunProofs } from './proofs.js';
import {
  type EntryChunk,
  entrySizeAt,
  readSegmentChunks,
  readSegmentEntries,
  type SegmentEntry,
} from './reader.js';
import { LocalSegmentSource, type SegmentSource } from './source.js';

/**
 * One shallow entry. `records` is decoded on first use: a source batch with a proof from convert
 * is never decoded, and neither is the rewritten batch it is checked against.
 */
interface CheckedEntry {
  position: number;
  header?: RecordBatchHeader;
  bytes: Uint8Array;
  records(): LogicalRecord[];
}

interface CheckedEntryOptions {
  maxDecompressedBytes?: number;
  /** Output side: every entry must be a v2 batch. */
  v2Only?: boolean;
  /** Source side: convert read it moments ago and checked every outer and inner CRC. */
  sourceCrcsChecked?: boolean;
  /**
   * Source side: batches convert proved in memory after checking their CRC moments before; only
   * their header fields are used here, so their CRC is not computed a second time.
   */
  proven?: (position: number) => boolean;
  onEntry?: (info: EntryInfo) => void;
}

/** The entry checked: its CRC checked (unless proven), its records decoded when first asked. */
function checkedEntryOf(entry: SegmentEntry, file: string, opts: CheckedEntryOptions): CheckedEntry {
  const decode = { maxDecompressedBytes: opts.maxDecompressedBytes };
  const info = inspectEntry(entry, file, !opts.proven?.(entry.position));
  opts.onEntry?.(info);
  if (opts.v2Only && entry.magic !== 2) {
    throw new VerifyMismatchError('magic', `rewritten entry has magic ${entry.magic}`, {
      file,
      position: entry.position,
      offset: info.offset,
    });
  }
  let records: LogicalRecord[] | undefined;
  return {
    position: entry.position,
    header: info.header,
    bytes: entry.bytes,
    records: () => {
      if (records === undefined) {
        try {
          records =
            entry.magic === 2
              ? [...logicalRecordsOfBatch(entry.bytes, decode)]
              : // The outer CRC was checked just above (inspectEntry); inner ones when convert read it.
                logicalRecordsOfLegacyEntry(entry.bytes, {
                  ...decode,
                  checkCrc: false,
                  checkInnerCrc: !opts.sourceCrcsChecked,
                });
        } catch (err) {
          throw withEntryContext(err, file, entry);
        }
      }
      return records;
    },
  };
}

/**
 * Walks a file's entries a chunk at a time (readSegmentChunks): entries of a proven run are
 * checked without an await or an object each. The current entry's bytes stay valid until the
 * cursor is moved past the chunk's last entry and `ready` is called again.
 */
class EntryCursor {
  private readonly it: AsyncGenerator<EntryChunk, void, undefined>;
  bytes: Buffer = Buffer.alloc(0);
  p = 0;
  end = 0;
  /** File position of bytes[0]. */
  private origin = 0;

  /** `chunks` read with reuseBuffers: one chunk's bytes are needed only until the next. */
  constructor(chunks: AsyncGenerator<EntryChunk, void, undefined>) {
    this.it = chunks;
  }

  /** Whether an entry is at the cursor (false at the end of the file). */
  async ready(): Promise<boolean> {
    while (this.p >= this.end) {
      const r = await this.it.next();
      if (r.done) return false;
      const c = r.value;
      this.bytes = c.bytes;
      this.p = c.start;
      this.end = c.end;
      this.origin = c.position - c.start;
    }
    return true;
  }

  get position(): number {
    return this.origin + this.p;
  }

  /** Takes the entry at the cursor (call `ready` first). */
  take(): SegmentEntry {
    const p = this.p;
    const size = entrySizeAt(this.bytes, p);
    this.p += size;
    return {
      position: this.origin + p,
      size,
      magic: this.bytes[p + MAGIC_OFFSET],
      bytes: this.bytes.subarray(p, p + size),
    };
  }

  async close(): Promise<void> {
    await this.it.return(undefined);
  }
}

/** Where the output's batches go as verify reads them: the index rebuild and the index check. */
interface OutputBatchSink {
  batch(position: number, size: number, lastOffset: bigint, maxTimestamp: bigint): void;
  /** The same for the v2 batch whose header is at `view`'s byte `p` (no BigInt per batch). */
  batchAt(view: DataView, p: number, position: number, size: number): void;
}

/** Header fields a recompressed or copied batch keeps (all but length, CRC and the codec bits). */
function headerDiff(a: RecordBatchHeader, b: RecordBatchHeader): string | null {
  const fields = [
    'baseOffset',
    'partitionLeaderEpoch',
    'lastOffsetDelta',
    'baseTimestamp',
    'maxTimestamp',
    'producerId',
    'producerEpoch',
    'baseSequence',
    'recordsCount',
  ] as const;
  for (const f of fields) if (a[f] !== b[f]) return f;
  if ((a.attributes & ~COMPRESSION_CODEC_MASK) !== (b.attributes & ~COMPRESSION_CODEC_MASK))
    return 'attributes';
  return null;
}

export interface RewriteFiles {
  log: string;
  index: string;
  timeindex: string;
}

export interface VerifyRewriteOptions {
  baseOffset: bigint;
  indexIntervalBytes?: number;
  maxDecompressedBytes?: number;
  maxEntryBytes?: number;
  acceptTruncatedTail?: boolean;
  signal?: AbortSignal;
  /** What convert proved in memory about the batches it recompressed (see proofs.ts). */
  proofs?: RecompressedBatchProofs;
  /** What convert proved in memory about the runs of legacy entries it upconverted (see proofs.ts). */
  runs?: UpconvertedRunProofs;
  /**
   * Convert read the source in this run and checked every CRC in it (outer and, for legacy
   * wrappers, inner): decoding the source again here skips recomputing the inner ones.
   */
  sourceCrcsChecked?: boolean;
}

/**
 * Verify-before-swap: re-reads the written files from disk. Every CRC of the new log is checked;
 * the logical record streams are compared in lockstep (offset, timestamp and its type, key, value,
 * headers, producer fields, sequence, flags); every v2 source batch must map to exactly one
 * output batch with the same header fields; the index files must equal what the recovery rule
 * gives for the new log and pass the kafka-dump-log consistency checks.
 *
 * What convert proved in memory is checked by identity instead of record by record:
 * - a batch recompressed with its round trip proof (`proofs`): header fields compared with the
 *   source's, and its stored CRC and size must be the proven ones;
 * - a run of legacy entries upconverted with proofs (`runs`): the run's source bytes and its
 *   output bytes, both re-read here, must have the CRC-32s convert recorded, at the same
 *   positions (the records in them were compared in memory by the Upconverter).
 * Every other source entry has its CRC checked and is decoded and compared record by record.
 */
export async function verifyRewrite(
  source: SegmentSource | string,
  out: RewriteFiles,
  opts: VerifyRewriteOptions,
): Promise<void> {
  if (typeof source === 'string') source = new LocalSegmentSource(source, opts.baseOffset);
  const indexBytes = await readFile(out.index);
  const timeIndexBytes = await readFile(out.timeindex);
  const checker = new IndexChecker(out.index, indexBytes, out.timeindex, timeIndexBytes, opts.baseOffset);
  const builder = new SegmentIndexBuilder(opts.baseOffset, { indexIntervalBytes: opts.indexIntervalBytes });
  const onOutputBatch: OutputBatchSink = {
    batch(position, size, lastOffset, maxTimestamp) {
      builder.append(position, size, lastOffset, maxTimestamp);
      checker.batch(position, lastOffset, maxTimestamp);
    },
    batchAt(view, p, position, size) {
      builder.appendBatchAt(view, p, position, size);
      checker.batchAt(view, p, position);
    },
  };
  const lockstep = new Lockstep(source, out.log, opts, onOutputBatch);
  try {
    await lockstep.run();
  } finally {
    await lockstep.close();
  }
  checkIndexes(out, builder, checker, indexBytes, timeIndexBytes);
}

/** The index files must be the recovery rule's for the new log and pass kafka-dump-log's checks. */
function checkIndexes(
  out: RewriteFiles,
  builder: SegmentIndexBuilder,
  checker: IndexChecker,
  indexBytes: Buffer,
  timeIndexBytes: Buffer,
): void {
  const expected = builder.finish();
  if (!Buffer.from(expected.offsetIndex).equals(indexBytes)) {
    throw new VerifyMismatchError('.index', 'offset index differs from the one the new log gives', {
      file: out.index,
    });
  }
  if (!Buffer.from(expected.timeIndex).equals(timeIndexBytes)) {
    throw new VerifyMismatchError('.timeindex', 'time index differs from the one the new log gives', {
      file: out.timeindex,
    });
  }
  const problems = checker.finish();
  if (problems.length > 0) {
    const p = problems[0];
    throw new VerifyMismatchError(
      `${p.file.endsWith('.timeindex') ? '.timeindex' : '.index'} entry ${p.entry}`,
      p.message,
      { file: p.file, offset: p.offset },
    );
  }
}

/**
 * The source and the rewritten log walked side by side. The output side is always a v2 batch and
 * the records in it not yet matched; the source side moves one entry (or one proven run) a step.
 */
class Lockstep {
  private readonly src: EntryCursor;
  private readonly dst: EntryCursor;
  private readonly srcOpts: CheckedEntryOptions;
  private readonly outOpts: CheckedEntryOptions;
  /** The output batch being matched, its records, and the next of them to match. */
  private outBatch: CheckedEntry | null = null;
  private outRecords: LogicalRecord[] = [];
  private nextRecord = 0;

  private readonly source: string;

  constructor(
    source: SegmentSource,
    private readonly outLog: string,
    private readonly opts: VerifyRewriteOptions,
    private readonly onOutputBatch: OutputBatchSink,
  ) {
    this.source = source.name;
    const common = { maxEntryBytes: opts.maxEntryBytes, signal: opts.signal, reuseBuffers: true };
    this.src = new EntryCursor(source.chunks({ ...common, acceptTruncatedTail: opts.acceptTruncatedTail }));
    this.dst = new EntryCursor(readSegmentChunks(outLog, common));
    const proofs = opts.proofs;
    this.srcOpts = {
      maxDecompressedBytes: opts.maxDecompressedBytes,
      sourceCrcsChecked: opts.sourceCrcsChecked,
      proven: proofs && ((position) => proofs.has(position)),
    };
    this.outOpts = {
      maxDecompressedBytes: opts.maxDecompressedBytes,
      v2Only: true,
      onEntry: (info) => onOutputBatch.batch(info.position, info.size, info.lastOffset, info.maxTimestamp),
    };
  }

  async run(): Promise<void> {
    const { src, opts } = this;
    while (await src.ready()) {
      const run = src.bytes[src.p + MAGIC_OFFSET] < 2 ? opts.runs?.take(src.position) : undefined;
      if (run) {
        this.endOfSourceBatch();
        await this.checkRun(run);
        continue;
      }
      const sourceEntry = checkedEntryOf(src.take(), this.source, this.srcOpts);
      if (sourceEntry.header) await this.checkBatch(sourceEntry, sourceEntry.header);
      else await this.checkLegacyEntry(sourceEntry);
    }
    const { outBatch, outRecords, nextRecord } = this;
    if (outBatch && nextRecord < outRecords.length)
      throw this.mismatch('record', 'extra record', outBatch.position, outRecords[nextRecord].offset);
    const extra = await this.nextOut();
    if (extra) throw this.mismatch('batch', 'extra batch', extra.position, extra.header?.baseOffset);
  }

  async close(): Promise<void> {
    await this.src.close();
    await this.dst.close();
  }

  private mismatch(field: string, detail: string, position?: number, offset?: bigint): VerifyMismatchError {
    return new VerifyMismatchError(field, detail, { file: this.outLog, position, offset });
  }

  private async nextOut(): Promise<CheckedEntry | null> {
    if (!(await this.dst.ready())) return null;
    return checkedEntryOf(this.dst.take(), this.outLog, this.outOpts);
  }

  /** A source batch boundary: the output batch must end here too. */
  private endOfSourceBatch(): void {
    const { outBatch, outRecords, nextRecord } = this;
    if (outBatch && nextRecord < outRecords.length) {
      throw this.mismatch(
        'batch boundary',
        'rewritten batch continues past a source batch boundary',
        outBatch.position,
        outRecords[nextRecord].offset,
      );
    }
    this.outBatch = null;
    this.outRecords = [];
    this.nextRecord = 0;
  }

  /** A v2 source batch maps to exactly one output batch with the same header fields. */
  private async checkBatch(sourceEntry: CheckedEntry, header: RecordBatchHeader): Promise<void> {
    this.endOfSourceBatch();
    const outBatch = await this.nextOut();
    this.outBatch = outBatch;
    if (!outBatch)
      throw this.mismatch(
        'batch',
        `source batch at ${sourceEntry.position} is missing`,
        undefined,
        header.baseOffset,
      );
    if (!outBatch.header)
      throw this.mismatch('magic', 'rewritten entry is not a v2 batch', outBatch.position);
    const f = headerDiff(header, outBatch.header);
    if (f !== null) {
      throw this.mismatch(
        f,
        `${String(header[f as keyof RecordBatchHeader])} vs ${String(outBatch.header[f as keyof RecordBatchHeader])}`,
        outBatch.position,
        header.baseOffset,
      );
    }
    const proof = this.opts.proofs?.take(sourceEntry.position);
    if (proof) {
      // Same header fields as the source, and the bytes convert proved hold the source's
      // records (their CRC was just checked over the bytes read back): the same records.
      if (outBatch.header.crc !== proof.crc || outBatch.bytes.length !== proof.size) {
        throw this.mismatch(
          'batch',
          `rewritten batch is not the one written (CRC ${outBatch.header.crc} vs ${proof.crc}, ${outBatch.bytes.length} vs ${proof.size} bytes)`,
          outBatch.position,
          header.baseOffset,
        );
      }
      return;
    }
    const sourceRecords = sourceEntry.records();
    this.outRecords = outBatch.records();
    if (sourceRecords.length !== this.outRecords.length) {
      throw this.mismatch(
        'records',
        `${sourceRecords.length} vs ${this.outRecords.length} records`,
        outBatch.position,
        header.baseOffset,
      );
    }
    for (let k = 0; k < sourceRecords.length; k++) {
      const d = logicalRecordsEqual(sourceRecords[k], this.outRecords[k]);
      if (d !== null) throw this.mismatch(d.split(':')[0], d, outBatch.position, sourceRecords[k].offset);
    }
    this.nextRecord = this.outRecords.length;
  }

  /** A legacy entry's records continue the output's record stream (batches may span entries). */
  private async checkLegacyEntry(sourceEntry: CheckedEntry): Promise<void> {
    for (const r of sourceEntry.records()) {
      while (!this.outBatch || this.nextRecord >= this.outRecords.length) {
        this.outBatch = await this.nextOut();
        this.nextRecord = 0;
        if (!this.outBatch)
          throw this.mismatch('record', `record at offset ${r.offset} is missing`, undefined, r.offset);
        this.outRecords = this.outBatch.records();
      }
      const d = logicalRecordsEqual(r, this.outRecords[this.nextRecord]);
      if (d !== null) throw this.mismatch(d.split(':')[0], d, this.outBatch.position, r.offset);
      this.nextRecord++;
    }
  }

  /** A proven run of legacy entries starting at the source cursor (see UpconvertedRunProofs). */
  private async checkRun(run: UpconvertedRun): Promise<void> {
    await this.checkRunSource(run);
    const { dst } = this;
    if (!(await dst.ready()) || dst.position !== run.outputStart) {
      throw this.mismatch(
        'batch',
        `batches of the legacy entries at ${run.sourceStart} are missing`,
        run.outputStart,
      );
    }
    let outCrc = 0;
    let batches = 0;
    while (dst.position < run.outputEnd) {
      if (!(await dst.ready())) break;
      const from = dst.p;
      const b = dst.bytes;
      const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
      while (dst.p < dst.end && dst.position < run.outputEnd) {
        const p = dst.p;
        const size = entrySizeAt(b, p);
        const position = dst.position;
        if (
          b[p + MAGIC_OFFSET] !== 2 ||
          crc32cRange(b, p + ATTRIBUTES_OFFSET, p + size) !== b.readUInt32BE(p + CRC_OFFSET)
        ) {
          // Not a v2 batch, or a wrong CRC: the usual checks say which, with the usual error.
          checkedEntryOf(dst.take(), this.outLog, this.outOpts);
          throw this.mismatch('batch', 'rewritten batch failed its checks', position);
        }
        this.onOutputBatch.batchAt(view, p, position, size);
        batches++;
        dst.p += size;
      }
      outCrc = crc32Range(b, from, dst.p, outCrc);
    }
    if (dst.position !== run.outputEnd || outCrc !== run.outputCrc || batches !== run.batches) {
      throw this.mismatch(
        'batch',
        `batches [${run.outputStart}, ${run.outputEnd}) are not the ones written and proven for the legacy entries at ${run.sourceStart}`,
        run.outputStart,
      );
    }
  }

  /**
   * The run's source bytes are checksummed a chunk at a time, not walked entry by entry: with the
   * CRC-32 equal they are the entries convert read (all legacy, ending where the run ends), and
   * the reader has checked their framing.
   */
  private async checkRunSource(run: UpconvertedRun): Promise<void> {
    const { src } = this;
    let crc = 0;
    while (src.position < run.sourceEnd) {
      if (!(await src.ready())) break;
      const from = src.p;
      src.p = Math.min(src.end, src.p + (run.sourceEnd - src.position));
      crc = crc32Range(src.bytes, from, src.p, crc);
    }
    if (src.position !== run.sourceEnd || crc !== run.sourceCrc) {
      throw new VerifyMismatchError(
        'source',
        `legacy entries [${run.sourceStart}, ${run.sourceEnd}) are not the bytes converted (read back to ${src.position})`,
        { file: this.source, position: run.sourceStart },
      );
    }
  }
}

export interface VerifyProblem {
  kind: 'structure' | 'offsets' | 'index' | 'timeindex';
  message: string;
  file: string;
  position?: number;
  offset?: string;
}

export interface VerifyReport {
  path: string;
  ok: boolean;
  entries: number;
  records: number;
  bytes: number;
  firstOffset?: string;
  lastOffset?: string;
  indexEntries: number;
  timeIndexEntries: number;
  /** Whether .index/.timeindex exist (a missing one is reported, not an error: Kafka rebuilds/creates it). */
  hasIndex: boolean;
  hasTimeIndex: boolean;
  problems: VerifyProblem[];
  /** The typed error that stopped the scan, in toJSON form. */
  error?: Record<string, unknown>;
  /** Reading stopped at `error`: entries, records and offsets count what came before it. */
  stoppedAtError?: boolean;
  durationMs: number;
}

export interface VerifySegmentOptions {
  maxDecompressedBytes?: number;
  maxEntryBytes?: number;
  acceptTruncatedTail?: boolean;
  /** Skip the deep record decode (CRCs, sizes and offsets only). */
  shallow?: boolean;
  signal?: AbortSignal;
}

/**
 * Checks a segment on disk: every CRC (v2 CRC-32C, legacy outer and inner CRC-32), structure
 * (every record decodes, counts and lengths agree), offsets strictly increasing and >= the base
 * offset, and .index/.timeindex consistent with the log (docs/kafka-format.md §8.2's dump-log checks).
 */
export async function verifySegment(
  logPath: string,
  options: VerifySegmentOptions = {},
): Promise<VerifyReport> {
  const start = performance.now();
  let p: SegmentFiles;
  try {
    p = (await requireSegment(logPath)).files;
  } catch (err) {
    const e = toSegmentError(err, logPath);
    return {
      ...emptyVerifyReport(logPath),
      ok: false,
      error: e.toJSON(),
      problems: [{ kind: 'structure', message: e.detail, file: logPath }],
      durationMs: performance.now() - start,
    };
  }
  const hasIndex = await exists(p.index);
  const hasTimeIndex = await exists(p.timeindex);
  const checker = new IndexChecker(
    p.index,
    // Bounded, regular files only: a FIFO named like an index must not hang verify.
    hasIndex ? await readBounded(p.index, MAX_INDEX_FILE_BYTES, 'offset index') : undefined,
    p.timeindex,
    hasTimeIndex ? await readBounded(p.timeindex, MAX_INDEX_FILE_BYTES, 'time index') : undefined,
    p.baseOffset,
  );
  const report: VerifyReport = {
    ...emptyVerifyReport(logPath),
    indexEntries: checker.offsetEntries,
    timeIndexEntries: checker.timeEntries,
    hasIndex,
    hasTimeIndex,
  };
  await scanEntries(logPath, p.baseOffset, checker, report, options);
  for (const ip of checker.finish()) report.problems.push(indexProblem(ip));
  if (report.problems.length > 0) report.ok = false;
  report.durationMs = performance.now() - start;
  return report;
}

/** The offsets of an entry's records (shallow: its first offset), counted into the report. */
function entryOffsets(
  entry: SegmentEntry,
  info: EntryInfo,
  logPath: string,
  report: VerifyReport,
  options: VerifySegmentOptions,
): bigint[] {
  const offsets: bigint[] = [];
  if (options.shallow) {
    if (info.header) report.records += info.header.recordsCount;
    offsets.push(info.offset);
    return offsets;
  }
  try {
    const records =
      entry.magic === 2
        ? logicalRecordsOfBatch(entry.bytes, options)
        : logicalRecordsOfLegacyEntry(entry.bytes, options);
    for (const r of records) {
      report.records++;
      offsets.push(r.offset);
    }
  } catch (err) {
    throw withEntryContext(err, logPath, entry);
  }
  return offsets;
}

/** Every entry of the log: its CRC, its records, its offsets in order; the first error stops it. */
async function scanEntries(
  logPath: string,
  baseOffset: bigint,
  checker: IndexChecker,
  report: VerifyReport,
  options: VerifySegmentOptions,
): Promise<void> {
  let last: bigint | undefined;
  const addOffsetProblem = (message: string, position: number, offset: bigint) => {
    if (report.problems.length < 100)
      report.problems.push({ kind: 'offsets', message, file: logPath, position, offset: offset.toString() });
  };
  try {
    for await (const entry of readSegmentEntries(logPath, options)) {
      const info = inspectEntry(entry, logPath);
      report.entries++;
      report.bytes = entry.position + entry.size;
      checker.batch(info.position, info.lastOffset, info.maxTimestamp);
      for (const off of entryOffsets(entry, info, logPath, report, options)) {
        if (off < baseOffset)
          addOffsetProblem(
            `offset ${off} is below the segment base offset ${baseOffset}`,
            entry.position,
            off,
          );
        if (last !== undefined && off <= last)
          addOffsetProblem(`offset ${off} does not follow ${last}`, entry.position, off);
        last = off;
        if (report.firstOffset === undefined) report.firstOffset = off.toString();
      }
      if (info.lastOffset < (last ?? info.lastOffset)) {
        addOffsetProblem(
          `batch last offset ${info.lastOffset} is below its records' ${last}`,
          entry.position,
          info.lastOffset,
        );
      }
      if (last === undefined || info.lastOffset > last) last = info.lastOffset;
    }
    report.lastOffset = last?.toString();
  } catch (err) {
    report.ok = false;
    // What was read before the error, so the operator sees how far the segment is good.
    report.lastOffset = last?.toString();
    report.stoppedAtError = true;
    const e = toSegmentError(err, logPath);
    report.error = e.toJSON();
    report.problems.push({
      kind: 'structure',
      // The problem carries position and offset as fields: the detail, not the rendered message.
      message: e.detail,
      file: logPath,
      position: e.position,
      offset: e.offset?.toString(),
    });
  }
}

function emptyVerifyReport(logPath: string): VerifyReport {
  return {
    path: logPath,
    ok: true,
    entries: 0,
    records: 0,
    bytes: 0,
    indexEntries: 0,
    timeIndexEntries: 0,
    hasIndex: false,
    hasTimeIndex: false,
    problems: [],
    durationMs: 0,
  };
}

function indexProblem(p: IndexProblem): VerifyProblem {
  return {
    kind: p.file.endsWith('.timeindex') ? 'timeindex' : 'index',
    message: p.entry >= 0 ? `entry ${p.entry}: ${p.message}` : p.message,
    file: p.file,
    position: p.position,
    offset: p.offset?.toString(),
  };
}
