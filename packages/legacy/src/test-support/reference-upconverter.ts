/**
 * Test-only: the Upconverter as it was before its fast path (main at bbc5e36), kept verbatim
 * but for names, as the reference the fast path must match byte for byte (upconvert.test.ts).
 *
 * Upconversion of legacy entries to v2 record batches, keeping every offset (docs/kafka-format.md §4.2).
 *
 * - `kafka` grouping mirrors Kafka 4's log cleaner (KAFKA-13093): one batch per compressed
 *   wrapper, one batch per uncompressed message.
 * - `coalesce` packs consecutive records into batches of up to `coalesceBytes`.
 *
 * In both modes a batch never mixes CreateTime and LogAppendTime records (nor LogAppendTime
 * records of different times: a LogAppendTime batch has a single timestamp), never spans an
 * offset delta beyond int32, and is split by records until it fits `maxBatchBytes`.
 */
import {
  type CompressionId,
  CorruptRecordError,
  encodeRecordBatch,
  InvalidArgumentError,
  type Record,
  type RecordHeader,
  sizeOfVarint,
  sizeOfVarlong,
} from '@seglift/format';
import { decodeLegacyRecords, type LegacyRecord } from '../deep.js';
import { LEGACY_CODEC_MASK } from '../message.js';

/** `LogConfig.DEFAULT_MAX_MESSAGE_BYTES`: 1 MiB + 12 (docs/kafka-format.md §5.4). */
const DEFAULT_MAX_BATCH_BYTES = 1_048_588;
const DEFAULT_COALESCE_BYTES = 1_048_576;
/** v2 batch header size (`DefaultRecordBatch.RECORD_BATCH_OVERHEAD`). */
const BATCH_OVERHEAD = 61;
const INT32_MAX = 2_147_483_647n;
const TIMESTAMP_TYPE_LOG_APPEND_TIME = 0x08;
const NO_HEADERS = Object.freeze([]) as unknown as RecordHeader[];

type Grouping = 'kafka' | 'coalesce';

interface OversizeBatch {
  baseOffset: bigint;
  lastOffset: bigint;
  sizeInBytes: number;
  maxBatchBytes: number;
}

interface UpconverterOptions {
  grouping?: Grouping;
  /** Target codec of the v2 batches. Default none. */
  codec?: CompressionId;
  level?: number;
  maxBatchBytes?: number;
  /** coalesce only: target size of a batch's records before compression. */
  coalesceBytes?: number;
  /** Limit on a legacy wrapper's decompressed size. */
  maxDecompressedBytes?: number;
  /** Verify inner messages' CRC-32. Default true. */
  checkInnerCrc?: boolean;
  /** Called for each batch emitted above `maxBatchBytes` (a single record that alone is bigger). */
  onOversizeBatch?: (batch: OversizeBatch) => void;
}

interface UpconverterStats {
  entriesIn: number;
  recordsIn: number;
  batchesOut: number;
  bytesOut: number;
  /** Batches emitted above maxBatchBytes (single records too big to fit). */
  oversizeBatches: number;
  /** Extra batches made by splitting to fit maxBatchBytes. */
  splitBatches: number;
}

interface Pending {
  offset: bigint;
  timestamp: bigint;
  key: Uint8Array | null;
  value: Uint8Array | null;
}

export class ReferenceUpconverter {
  readonly grouping: Grouping;
  readonly codec: CompressionId;
  readonly level: number | undefined;
  readonly maxBatchBytes: number;
  readonly coalesceBytes: number;
  readonly stats: UpconverterStats = {
    entriesIn: 0,
    recordsIn: 0,
    batchesOut: 0,
    bytesOut: 0,
    oversizeBatches: 0,
    splitBatches: 0,
  };
  private readonly decodeOptions: { maxDecompressedBytes?: number; checkInnerCrc?: boolean };
  private readonly onOversizeBatch: ((batch: OversizeBatch) => void) | undefined;

  private pending: Pending[] = [];
  private pendingLogAppend = false;
  private pendingBytes = 0;
  private lastOffset = -1n;
  private seenAny = false;

  constructor(options: UpconverterOptions = {}) {
    this.grouping = options.grouping ?? 'kafka';
    if (this.grouping !== 'kafka' && this.grouping !== 'coalesce') {
      throw new InvalidArgumentError(`unknown grouping ${String(this.grouping)}`);
    }
    this.codec = options.codec ?? 0;
    this.level = options.level;
    this.maxBatchBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
    this.coalesceBytes = options.coalesceBytes ?? DEFAULT_COALESCE_BYTES;
    if (!(this.maxBatchBytes > BATCH_OVERHEAD)) {
      throw new InvalidArgumentError(
        `maxBatchBytes must exceed ${BATCH_OVERHEAD}, got ${this.maxBatchBytes}`,
      );
    }
    this.decodeOptions = {
      maxDecompressedBytes: options.maxDecompressedBytes,
      checkInnerCrc: options.checkInnerCrc,
    };
    this.onOversizeBatch = options.onOversizeBatch;
  }

  /** Feeds one legacy entry (exactly one, as read from the log); returns the batches finished by it. */
  push(entryBytes: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    // Pending records of a plain message are views into the caller's buffer, which a reader may
    // reuse once push returns; coalescing keeps them across calls, so it works on a copy. Not
    // `entryBytes.slice()`: on a Node Buffer (what the segment reader hands over) that is a view.
    const coalesce = this.grouping === 'coalesce';
    const entry =
      coalesce && entryBytes.length > 17 && (entryBytes[17] & LEGACY_CODEC_MASK) === 0
        ? Uint8Array.prototype.slice.call(entryBytes)
        : entryBytes;
    const records = decodeLegacyRecords(entry, this.decodeOptions);
    this.stats.entriesIn++;
    this.stats.recordsIn += records.length;
    for (const r of records) this.add(r, out);
    if (!coalesce) this.finish(out);
    return out;
  }

  /** Returns the batch still being coalesced, if any. */
  flush(): Uint8Array[] {
    const out: Uint8Array[] = [];
    this.finish(out);
    return out;
  }

  private add(r: LegacyRecord, out: Uint8Array[]): void {
    if (this.seenAny && r.offset <= this.lastOffset) {
      throw new CorruptRecordError(
        `offset ${r.offset} follows offset ${this.lastOffset}: offsets must increase`,
        {
          offset: r.offset,
        },
      );
    }
    this.seenAny = true;
    this.lastOffset = r.offset;
    const logAppend = r.timestampType === 'LogAppendTime';
    if (this.pending.length > 0) {
      const first = this.pending[0];
      if (
        logAppend !== this.pendingLogAppend ||
        (logAppend && r.timestamp !== first.timestamp) ||
        r.offset - first.offset > INT32_MAX
      ) {
        this.finish(out);
      } else {
        const size = recordSize(
          Number(r.offset - first.offset),
          logAppend ? 0 : timestampDelta(r.timestamp, first.timestamp),
          r.key,
          r.value,
        );
        if (this.grouping === 'kafka' || this.pendingBytes + size <= this.coalesceBytes) {
          this.pending.push({ offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value });
          this.pendingBytes += size;
          return;
        }
        this.finish(out);
      }
    }
    this.pendingLogAppend = logAppend;
    this.pendingBytes = BATCH_OVERHEAD + recordSize(0, 0, r.key, r.value);
    this.pending.push({ offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value });
  }

  private finish(out: Uint8Array[]): void {
    const records = this.pending;
    if (records.length === 0) return;
    this.pending = [];
    const before = out.length;
    if (this.codec === 0 || this.pendingBytes <= this.maxBatchBytes) {
      this.emitPlainPacked(records, this.pendingLogAppend, out);
    } else {
      this.emitCompressed(records, this.pendingLogAppend, out);
    }
    this.stats.splitBatches += out.length - before - 1;
    this.pendingBytes = 0;
  }

  /**
   * Packs greedily by exact uncompressed size. Used for codec none (exact) and as the first
   * cut for compressed batches whose records fit uncompressed (compression rarely grows them;
   * when it does, emitCompressed splits further).
   */
  private emitPlainPacked(records: Pending[], logAppend: boolean, out: Uint8Array[]): void {
    let start = 0;
    while (start < records.length) {
      const base = records[start];
      let bytes = BATCH_OVERHEAD + recordSize(0, 0, base.key, base.value);
      let end = start + 1;
      while (end < records.length) {
        const r = records[end];
        const s = recordSize(
          Number(r.offset - base.offset),
          logAppend ? 0 : timestampDelta(r.timestamp, base.timestamp),
          r.key,
          r.value,
        );
        if (bytes + s > this.maxBatchBytes) break;
        bytes += s;
        end++;
      }
      const chunk = start === 0 && end === records.length ? records : records.slice(start, end);
      if (this.codec === 0) this.emit(this.encode(chunk, logAppend), chunk, out);
      else this.emitCompressed(chunk, logAppend, out);
      start = end;
    }
  }

  /** Encodes; when the result is too big, splits by records in proportion to its size and retries. */
  private emitCompressed(records: Pending[], logAppend: boolean, out: Uint8Array[]): void {
    const batch = this.encode(records, logAppend);
    if (batch.length <= this.maxBatchBytes || records.length === 1) {
      this.emit(batch, records, out);
      return;
    }
    const parts = Math.min(records.length, Math.max(2, Math.ceil((batch.length / this.maxBatchBytes) * 1.1)));
    const per = Math.ceil(records.length / parts);
    for (let i = 0; i < records.length; i += per) {
      this.emitCompressed(records.slice(i, i + per), logAppend, out);
    }
  }

  private emit(batch: Uint8Array, records: Pending[], out: Uint8Array[]): void {
    if (batch.length > this.maxBatchBytes) {
      this.stats.oversizeBatches++;
      this.onOversizeBatch?.({
        baseOffset: records[0].offset,
        lastOffset: records[records.length - 1].offset,
        sizeInBytes: batch.length,
        maxBatchBytes: this.maxBatchBytes,
      });
    }
    this.stats.batchesOut++;
    this.stats.bytesOut += batch.length;
    out.push(batch);
  }

  /** One v2 batch of the given records, header fields per docs/kafka-format.md §4.2. */
  private encode(records: Pending[], logAppend: boolean): Uint8Array {
    const first = records[0];
    const baseOffset = first.offset;
    const baseTimestamp = first.timestamp;
    let maxTimestamp = -1n;
    const v2: Record[] = new Array(records.length);
    for (let i = 0; i < records.length; i++) {
      const r = records[i];
      if (r.timestamp > maxTimestamp) maxTimestamp = r.timestamp;
      v2[i] = {
        attributes: 0,
        timestampDelta: logAppend ? 0 : timestampDelta(r.timestamp, baseTimestamp),
        offsetDelta: Number(r.offset - baseOffset),
        key: r.key,
        value: r.value,
        headers: NO_HEADERS,
      };
    }
    return encodeRecordBatch(
      {
        baseOffset,
        partitionLeaderEpoch: -1,
        attributes: logAppend ? TIMESTAMP_TYPE_LOG_APPEND_TIME : 0,
        lastOffsetDelta: Number(records[records.length - 1].offset - baseOffset),
        baseTimestamp,
        // LogAppendTime: all records carry the one wrapper time, so base = max = it.
        maxTimestamp: logAppend ? baseTimestamp : maxTimestamp,
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      },
      v2,
      this.codec,
      { level: this.level },
    );
  }
}

/** ts - base as a number when safe, else a bigint (the Record convention). */
function timestampDelta(ts: bigint, base: bigint): number | bigint {
  const d = ts - base;
  const n = Number(d);
  return Number.isSafeInteger(n) ? n : d;
}

/** Exact encoded size of a v2 record without headers (docs/kafka-format.md §5.3). */
function recordSize(
  offsetDelta: number,
  tsDelta: number | bigint,
  key: Uint8Array | null,
  value: Uint8Array | null,
) {
  const body =
    1 +
    sizeOfVarlong(tsDelta) +
    sizeOfVarint(offsetDelta) +
    (key === null ? 1 : sizeOfVarint(key.length) + key.length) +
    (value === null ? 1 : sizeOfVarint(value.length) + value.length) +
    1;
  return sizeOfVarint(body) + body;
}
