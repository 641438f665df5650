/**
 * Upconversion of legacy entries to v2 record batches, keeping every offset (docs/kafka-format.md §4.2).
 *
 * - `kafka` grouping mirrors Kafka 4's log cleaner (KAFKA-13093): one batch per compressed
 *   wrapper, one batch per uncompressed message.
 * - `coalesce` packs consecutive records into batches of up to `coalesceBytes`.
 *
 * In both modes a batch never mixes CreateTime and LogAppendTime records (nor LogAppendTime
 * records of different times: a LogAppendTime batch has a single timestamp), never spans an
 * offset delta beyond int32, and is split by records until it fits `maxBatchBytes`.
 *
 * How it is fast: a legacy message is parsed where it lies (in the caller's buffer or in the
 * wrapper's decompressed bytes) and its record is encoded at once into the pending batch's
 * record bytes, relative to the batch's first record; finished batches are written one after
 * the other into an output buffer the caller drains (`takeOutput`). No object is made per
 * record. Offsets and timestamps are numbers while they stay below 2^52 in magnitude (always,
 * for data a broker wrote); anything else (and every error) goes through the general path, which
 * decodes with decodeLegacyRecords and keeps records as objects, as this class always did.
 */
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  type CompressionId,
  CorruptRecordError,
  CRC_OFFSET,
  codecById,
  compressTransient,
  crc32cRange,
  crc32Range,
  DEFAULT_MAX_BATCH_BYTES,
  DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
  decompress,
  decompressTransient,
  encodeRecordBatch,
  INT32_MAX,
  InvalidArgumentError,
  LAST_OFFSET_DELTA_OFFSET,
  LENGTH_OFFSET,
  LOG_OVERHEAD,
  logicalRecordsOfBatch,
  MAGIC_OFFSET,
  MAX_TIMESTAMP_OFFSET,
  PARTITION_LEADER_EPOCH_OFFSET,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  parseRecordAt,
  putVarint,
  putVarlong,
  RECORD_BATCH_OVERHEAD,
  RECORDS_COUNT_OFFSET,
  type Record,
  RecordFields,
  type RecordHeader,
  sizeOfVarint,
  sizeOfVarlong,
  VerifyMismatchError,
} from '@seglift/format';
import { decodeLegacyRecords, type LegacyRecord } from './deep.js';

export const DEFAULT_COALESCE_BYTES = 1_048_576;
const TIMESTAMP_TYPE_LOG_APPEND_TIME = 0x08;
const NO_HEADERS = Object.freeze([]) as unknown as RecordHeader[];
const EMPTY = new Uint8Array(0);
const TWO32 = 4294967296;
const LEGACY_CODEC_MASK = 0x07;

export type Grouping = 'kafka' | 'coalesce';
/** The grouping of every program (@seglift/segment's conversion settings read it from here). */
export const DEFAULT_GROUPING: Grouping = 'coalesce';

export interface OversizeBatch {
  baseOffset: bigint;
  lastOffset: bigint;
  sizeInBytes: number;
  maxBatchBytes: number;
}

export interface UpconverterOptions {
  /** Default DEFAULT_GROUPING (coalesce), as every program. */
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
  /**
   * Prove every batch in memory before it is handed out (VerifyMismatchError otherwise): each
   * record written is parsed back with the strict v2 record rules and compared with the legacy
   * message it came from (offset, timestamp, key and value bytes, no headers); each batch's
   * header is read back and compared with its records (offsets, timestamps and their type,
   * count, no producer), and its record bytes are decompressed again and must equal the ones
   * encoded. What a reader of the batch would see is then what a reader of the source saw.
   */
  prove?: boolean;
  /** Called for each batch emitted above `maxBatchBytes` (a single record that alone is bigger). */
  onOversizeBatch?: (batch: OversizeBatch) => void;
}

export interface UpconverterStats {
  entriesIn: number;
  recordsIn: number;
  batchesOut: number;
  bytesOut: number;
  /** Batches emitted above maxBatchBytes (single records too big to fit). */
  oversizeBatches: number;
  /** Extra batches made by splitting to fit maxBatchBytes. */
  splitBatches: number;
}

/** A pending record of the general path (see the file comment). */
interface Pending {
  offset: bigint;
  timestamp: bigint;
  key: Uint8Array | null;
  value: Uint8Array | null;
}

/** An int64 at `p` as a number when |v| < 2^52 (exact, and differences stay exact), else NaN. */
function smallInt64At(b: Uint8Array, p: number): number {
  const hi = (b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3];
  if (hi < -0x100000 || hi >= 0x100000) return Number.NaN;
  return hi * TWO32 + (((b[p + 4] << 24) | (b[p + 5] << 16) | (b[p + 6] << 8) | b[p + 7]) >>> 0);
}

/** An exact integer number as int64 (two's complement) at absolute DataView position `o`. */
function setInt64(v: DataView, o: number, n: number): void {
  const hi = Math.floor(n / TWO32);
  v.setInt32(o, hi);
  v.setUint32(o + 4, n - hi * TWO32);
}

function int32At(b: Uint8Array, p: number): number {
  return (b[p] << 24) | (b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3];
}

/**
 * The fields of the legacy message whose log entry is b[p, e) (offset at p, size at p + 8), as
 * the fast path's parse leaves them: module slots, no object per message.
 */
const msg = {
  magic: 0,
  attributes: 0,
  offset: 0,
  timestamp: -1,
  keyPos: 0,
  keyLength: 0,
  valuePos: 0,
  valueLength: 0,
};

/**
 * Parses the message of the entry b[p, e) in place into `msg`: false for anything the fast path
 * leaves to the general one (magic above 1, a size below the magic's minimum, key and value
 * lengths that do not fill the message exactly, an offset or timestamp past 2^53). No CRC check.
 */
function parseMessageAt(b: Uint8Array, p: number, e: number): boolean {
  const magic = b[p + 16];
  if (magic > 1 || e - p - 12 < (magic === 0 ? 14 : 22)) return false;
  let q = p + 18;
  let timestamp = -1;
  if (magic === 1) {
    timestamp = smallInt64At(b, q);
    q += 8;
  }
  const keyLength = int32At(b, q);
  q += 4;
  const keyPos = q;
  if (keyLength >= 0) {
    if (keyLength > e - q - 4) return false;
    q += keyLength;
  } else if (keyLength !== -1) {
    return false;
  }
  const valueLength = int32At(b, q);
  q += 4;
  if (valueLength >= 0 ? valueLength !== e - q : valueLength !== -1 || q !== e) return false;
  const offset = smallInt64At(b, p);
  if (Number.isNaN(offset) || Number.isNaN(timestamp)) return false;
  msg.magic = magic;
  msg.attributes = b[p + 17];
  msg.offset = offset;
  msg.timestamp = timestamp;
  msg.keyPos = keyPos;
  msg.keyLength = keyLength;
  msg.valuePos = q;
  msg.valueLength = valueLength;
  return true;
}

/**
 * Buffers an Upconverter gave back (`release`), taken by the next one. A segment's two buffers grow
 * by doubling to its largest batch (1 MiB and more when coalescing): made anew per segment they
 * were ~8 MiB of garbage each time, which a conversion thread held until V8's next scavenge
 * (docs/benchmarks.md, "Each thread's young generation ... and the upconverter's buffers"). Kept:
 * at most SPARE_COUNT, each at most SPARE_MAX.
 */
const spares: Buffer[] = [];
const SPARE_COUNT = 2;
const SPARE_MAX = 8 * 1024 * 1024;

/** A growable byte buffer (a Buffer, so the codecs take views of it as they are). */
class Bytes {
  buf: Buffer = spares.pop() ?? Buffer.allocUnsafeSlow(64 * 1024);
  /** Over `buf`'s whole ArrayBuffer (positions are buf.byteOffset + i). */
  dv = new DataView(this.buf.buffer);
  length = 0;
  ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
    this.dv = new DataView(next.buffer);
  }
  view(start: number, end: number): Uint8Array {
    return new Uint8Array(this.buf.buffer, this.buf.byteOffset + start, end - start);
  }
}

// The last source array's ArrayBuffer and offset: reading `.buffer` calls into the runtime, which
// costs more than copying or comparing a short field.
let srcArray: Uint8Array | undefined;
let srcBuffer: ArrayBufferLike = new ArrayBuffer(0);
let srcOffset = 0;
let srcView: DataView = new DataView(srcBuffer);
// The same for the array compared against (the pending batch's bytes).
let ownArray: Uint8Array | undefined;
let ownView: DataView = srcView;
let ownOffset = 0;

function source(src: Uint8Array): void {
  if (src === srcArray) return;
  srcArray = src;
  srcBuffer = src.buffer;
  srcOffset = src.byteOffset;
  srcView = new DataView(srcBuffer);
}

function own(a: Uint8Array): void {
  if (a === ownArray) return;
  ownArray = a;
  ownOffset = a.byteOffset;
  ownView = new DataView(a.buffer);
}

/**
 * dst[at, at + n) = src[from, from + n): four bytes at a time for fields under 96 bytes (faster
 * than the typed array and call a memcpy needs), memcpy for longer ones.
 */
function copyBytes(dst: Buffer, at: number, src: Uint8Array, from: number, n: number): void {
  source(src);
  if (n >= 96) {
    dst.set(new Uint8Array(srcBuffer, srcOffset + from, n), at);
    return;
  }
  own(dst);
  const vd = ownView;
  const vs = srcView;
  let i = srcOffset + from;
  let k = ownOffset + at;
  const end = i + n;
  for (; i + 4 <= end; i += 4, k += 4) vd.setInt32(k, vs.getInt32(i, true), true);
  for (; i < end; i++, k++) vd.setUint8(k, vs.getUint8(i));
}

/**
 * a[ap, ap + n) equals b[bp, bp + n): four bytes at a time for short fields, memcmp for long ones
 * (a call into native code costs about what comparing 250 bytes here does).
 */
function equalBytes(a: Buffer, ap: number, b: Uint8Array, bp: number, n: number): boolean {
  if (n >= 256) return a.compare(b, bp, bp + n, ap, ap + n) === 0;
  own(a);
  source(b);
  const va = ownView;
  const vb = srcView;
  let i = ownOffset + ap;
  let k = srcOffset + bp;
  const end = i + n;
  for (; i + 4 <= end; i += 4, k += 4) if (va.getInt32(i, true) !== vb.getInt32(k, true)) return false;
  for (; i < end; i++, k++) if (va.getUint8(i) !== vb.getUint8(k)) return false;
  return true;
}

/**
 * The error the fast path's failure on `entry` must be reported as: the general path checks an
 * entry completely (CRCs included) before adding any of its records, so an error it finds comes
 * first.
 */
function explain(
  err: unknown,
  entry: Uint8Array,
  options: { maxDecompressedBytes?: number; checkInnerCrc?: boolean },
): unknown {
  try {
    decodeLegacyRecords(entry, options);
  } catch (first) {
    return first;
  }
  return err;
}

function mismatch(detail: string, offset: number | bigint): VerifyMismatchError {
  return new VerifyMismatchError('upconverted batch', detail, { offset: BigInt(offset) });
}

/** A batch header field read back holds what it must (a function, not a closure made per batch). */
function expectHeader(base: number, ok: boolean, what: string): void {
  if (!ok) throw mismatch(`header ${what}`, base);
}

export class Upconverter {
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
  private readonly checkInnerCrc: boolean;
  private readonly prove: boolean;
  private readonly onOversizeBatch: ((batch: OversizeBatch) => void) | undefined;

  /**
   * Output: finished batches in [taken, finishedEnd); with codec none, the pending batch follows
   * them (its header space at batchStart, its records from recStart on), so its records are
   * written where the batch will be, never copied.
   */
  private readonly out = new Bytes();
  private finishedEnd = 0;
  private taken = 0;
  private batchStart = 0;

  // The pending batch of the fast path: its records encoded relative to its first one, in
  // `rec` from recStart on (`out` for codec none, else `payload`, compressed at the finish).
  private readonly payload = new Bytes();
  private readonly rec: Bytes;
  private recStart = 0;
  private count = 0;
  private baseOffset = 0;
  private baseTimestamp = 0;
  private maxTimestamp = -1;
  private lastOffsetInBatch = 0;
  private pendingLogAppend = false;
  private pendingBytes = 0;

  /**
   * General path: once a value the fast path does not hold exactly shows up, pending records
   * are objects for the rest of the stream (the code this class had before the fast path).
   */
  private wide = false;
  private pending: Pending[] = [];

  private lastOffset = -1;
  private lastOffsetBig = -1n;
  private seenAny = false;
  private batchesThisFinish = 0;

  // Scratch of the fast path.
  private readonly fields = new RecordFields();

  private innerStarts = new Int32Array(256);
  private innerEnds = new Int32Array(256);

  constructor(options: UpconverterOptions = {}) {
    this.grouping = options.grouping ?? DEFAULT_GROUPING;
    if (this.grouping !== 'kafka' && this.grouping !== 'coalesce') {
      throw new InvalidArgumentError(`unknown grouping ${String(this.grouping)}`);
    }
    this.codec = options.codec ?? 0;
    this.level = options.level;
    this.maxBatchBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
    this.coalesceBytes = options.coalesceBytes ?? DEFAULT_COALESCE_BYTES;
    if (!(this.maxBatchBytes > RECORD_BATCH_OVERHEAD)) {
      throw new InvalidArgumentError(
        `maxBatchBytes must exceed ${RECORD_BATCH_OVERHEAD}, got ${this.maxBatchBytes}`,
      );
    }
    this.decodeOptions = {
      maxDecompressedBytes: options.maxDecompressedBytes,
      checkInnerCrc: options.checkInnerCrc,
    };
    this.checkInnerCrc = options.checkInnerCrc !== false;
    this.prove = options.prove === true;
    this.onOversizeBatch = options.onOversizeBatch;
    this.rec = this.codec === 0 ? this.out : this.payload;
  }

  /** Feeds one legacy entry (exactly one, as read from the log); returns the batches finished by it. */
  push(entryBytes: Uint8Array): Uint8Array[] {
    this.pushEntry(entryBytes, 0, entryBytes.length);
    return this.splitOutput();
  }

  /** Returns the batch still being coalesced, if any. */
  flush(): Uint8Array[] {
    this.finishPending();
    return this.splitOutput();
  }

  /**
   * Feeds the legacy entry `buf[start, end)`; the batches it finishes are appended to the
   * output (`takeOutput`). Nothing of `buf` is kept after the call returns.
   */
  pushEntry(buf: Uint8Array, start: number, end: number): void {
    this.compact();
    this.stats.entriesIn++;
    let done = false;
    if (!this.wide) {
      try {
        done = this.pushFast(buf, start, end);
      } catch (err) {
        throw explain(err, buf.subarray(start, end), this.decodeOptions);
      }
    }
    if (!done) this.pushGeneral(buf.subarray(start, end));
    if (this.grouping !== 'coalesce') this.finishPending();
  }

  /** Finishes the batch being coalesced into the output. */
  finishPending(): void {
    this.compact();
    if (this.wide) this.finishWide();
    else this.finishFast();
  }

  /** Bytes of finished batches not taken yet. */
  get outputLength(): number {
    return this.finishedEnd - this.taken;
  }

  /**
   * The batches finished since the last call, back to back. The bytes are valid until the next
   * call on this object.
   */
  takeOutput(): Uint8Array {
    const v = this.out.view(this.taken, this.finishedEnd);
    this.taken = this.finishedEnd;
    return v;
  }

  /**
   * Gives this object's buffers to the next Upconverter of this thread. Call once the last output
   * taken has been written (nothing may read a view of it afterwards); the object is then unusable.
   */
  release(): void {
    for (const bytes of [this.out, this.payload]) {
      if (spares.length < SPARE_COUNT && bytes.buf.length <= SPARE_MAX && !spares.includes(bytes.buf))
        spares.push(bytes.buf);
      bytes.buf = Buffer.alloc(0);
      bytes.dv = new DataView(bytes.buf.buffer);
      bytes.length = 0;
    }
  }

  /** Drops the output taken: a pending codec-none batch moves to the front. */
  private compact(): void {
    const t = this.taken;
    if (t === 0) return;
    const out = this.out;
    if (out.length > t) out.buf.copyWithin(0, t, out.length);
    out.length -= t;
    this.finishedEnd -= t;
    this.batchStart -= t;
    if (this.codec === 0) this.recStart -= t;
    this.taken = 0;
  }

  private splitOutput(): Uint8Array[] {
    const all = this.takeOutput();
    const batches: Uint8Array[] = [];
    for (let p = 0; p < all.length; ) {
      const size = int32At(all, p + 8) + 12;
      batches.push(all.slice(p, p + size));
      p += size;
    }
    return batches;
  }

  // ---- fast path --------------------------------------------------------------------------

  /**
   * Parses the entry in place and adds its records; false (having added nothing) when the
   * entry needs the general path: anything unusual, including every error, which the general
   * path then reports exactly as it always did.
   */
  private pushFast(b: Uint8Array, p: number, entryEnd: number): boolean {
    if (entryEnd - p < 26) return false;
    const size = int32At(b, p + 8);
    // Bytes past the size field's end are not part of the entry (readLegacyEntry ignores them).
    const e = p + 12 + size;
    if (size < 14 || e > entryEnd || !parseMessageAt(b, p, e)) return false;
    const { magic, attributes, offset, timestamp, keyPos, keyLength, valuePos: q, valueLength } = msg;
    const codec = attributes & LEGACY_CODEC_MASK;
    if (crc32Range(b, p + 16, e) !== int32At(b, p + 12) >>> 0) return false;
    if (codec === 0) {
      this.stats.recordsIn++;
      const logAppend = magic === 1 && (attributes & 0x08) !== 0;
      this.add(offset, timestamp, logAppend, b, keyPos, keyLength, b, q, valueLength);
      return true;
    }
    // A codec a legacy wrapper may not carry (zstd), or no codec at all: the general path reports it.
    if ((codecById(codec)?.minMagic ?? 3) > magic || valueLength < 0) return false;
    let inner: Uint8Array;
    try {
      // Its records are copied into the pending batch as they are added, so the codec's reused
      // buffer serves, unless finishing a batch on the way decodes with that codec (the proof).
      const decode = codec === this.codec ? decompress : decompressTransient;
      inner = decode(codec, new Uint8Array(b.buffer, b.byteOffset + q, valueLength), {
        magic,
        maxBytes: this.decodeOptions.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
      });
    } catch {
      return false;
    }
    // Pass 1: the inner messages as Kafka's DataLogInputStream reads them; records are added
    // only once all of them passed, as the general path does.
    let n = 0;
    let pos = 0;
    const len = inner.length;
    while (len - pos >= 12) {
      const innerSize = int32At(inner, pos + 8);
      if (innerSize < 14) return false;
      const end = pos + 12 + innerSize;
      if (end > len) break; // a truncated last message quietly ends the stream
      if (!parseMessageAt(inner, pos, end) || (msg.attributes & LEGACY_CODEC_MASK) !== 0) return false;
      if (this.checkInnerCrc && crc32Range(inner, pos + 16, end) !== int32At(inner, pos + 12) >>> 0)
        return false;
      if (n === this.innerStarts.length) this.growInner();
      this.innerStarts[n] = pos;
      this.innerEnds[n] = end;
      n++;
      pos = end;
    }
    if (n === 0) return false;
    let base = 0;
    if (magic === 1 && offset !== 0) {
      const lastInner = smallInt64At(inner, this.innerStarts[n - 1]);
      if (offset < lastInner) return false;
      base = offset - lastInner;
      for (let i = 0; i < n; i++)
        if (!(base + smallInt64At(inner, this.innerStarts[i]) < 2 ** 52)) return false;
    }
    // Timestamps (docs/kafka-format.md §2.3): a v1 wrapper's type rules every inner v1 message; LogAppendTime
    // replaces their timestamps. Inner v0 messages have none (-1, and never LogAppendTime).
    const wrapperLogAppend = magic === 1 && (attributes & 0x08) !== 0;
    for (let i = 0; i < n; i++) {
      // Parsed and checked in pass 1: the same bytes parse the same way.
      parseMessageAt(inner, this.innerStarts[i], this.innerEnds[i]);
      const m = msg.magic;
      const ts = m === 0 ? -1 : wrapperLogAppend ? timestamp : msg.timestamp;
      this.stats.recordsIn++;
      this.add(
        base + msg.offset,
        ts,
        m === 1 && wrapperLogAppend,
        inner,
        msg.keyPos,
        msg.keyLength,
        inner,
        msg.valuePos,
        msg.valueLength,
      );
    }
    return true;
  }

  private growInner(): void {
    const starts = new Int32Array(this.innerStarts.length * 2);
    starts.set(this.innerStarts);
    const ends = new Int32Array(this.innerEnds.length * 2);
    ends.set(this.innerEnds);
    this.innerStarts = starts;
    this.innerEnds = ends;
  }

  /** One record of the fast path (the rules of the file comment, as the general path's add). */
  private add(
    offset: number,
    timestamp: number,
    logAppend: boolean,
    kb: Uint8Array,
    kp: number,
    kl: number,
    vb: Uint8Array,
    vp: number,
    vl: number,
  ): void {
    if (this.seenAny && offset <= this.lastOffset) {
      throw new CorruptRecordError(
        `offset ${offset} follows offset ${this.lastOffset}: offsets must increase`,
        { offset: BigInt(offset) },
      );
    }
    this.seenAny = true;
    this.lastOffset = offset;
    if (this.count > 0) {
      if (
        logAppend !== this.pendingLogAppend ||
        (logAppend && timestamp !== this.baseTimestamp) ||
        offset - this.baseOffset > INT32_MAX
      ) {
        this.finishFast();
      } else {
        const offsetDelta = offset - this.baseOffset;
        const timestampDelta = logAppend ? 0 : timestamp - this.baseTimestamp;
        const body = bodySize(offsetDelta, timestampDelta, kl, vl);
        const size = sizeOfVarint(body) + body;
        if (this.grouping === 'kafka' || this.pendingBytes + size <= this.coalesceBytes) {
          this.pendingBytes += size;
          this.write(body, size, offsetDelta, timestampDelta, kb, kp, kl, vb, vp, vl);
          this.count++;
          this.lastOffsetInBatch = offset;
          if (timestamp > this.maxTimestamp) this.maxTimestamp = timestamp;
          if (this.prove && logAppend && timestamp !== this.baseTimestamp)
            throw mismatch('LogAppendTime records of different times in one batch', offset);
          return;
        }
        this.finishFast();
      }
    }
    this.baseOffset = offset;
    this.baseTimestamp = timestamp;
    this.pendingLogAppend = logAppend;
    this.maxTimestamp = Math.max(timestamp, -1);
    this.lastOffsetInBatch = offset;
    if (this.codec === 0) {
      this.out.ensure(RECORD_BATCH_OVERHEAD);
      this.batchStart = this.out.length;
      this.out.length += RECORD_BATCH_OVERHEAD;
      this.recStart = this.out.length;
    } else {
      this.payload.length = 0;
      this.recStart = 0;
    }
    const body = bodySize(0, 0, kl, vl);
    const size = sizeOfVarint(body) + body;
    this.pendingBytes = RECORD_BATCH_OVERHEAD + size;
    this.write(body, size, 0, 0, kb, kp, kl, vb, vp, vl);
    this.count = 1;
  }

  private write(
    body: number,
    size: number,
    offsetDelta: number,
    timestampDelta: number,
    kb: Uint8Array,
    kp: number,
    kl: number,
    vb: Uint8Array,
    vp: number,
    vl: number,
  ): void {
    const payload = this.rec;
    payload.ensure(size);
    const buf = payload.buf;
    const at = payload.length;
    let p = putVarint(buf, at, body);
    buf[p++] = 0; // attributes
    p = putVarlong(buf, p, timestampDelta);
    p = putVarint(buf, p, offsetDelta);
    if (kl < 0) {
      buf[p++] = 1;
    } else {
      p = putVarint(buf, p, kl);
      copyBytes(buf, p, kb, kp, kl);
      p += kl;
    }
    if (vl < 0) {
      buf[p++] = 1;
    } else {
      p = putVarint(buf, p, vl);
      copyBytes(buf, p, vb, vp, vl);
      p += vl;
    }
    buf[p++] = 0; // no headers
    payload.length = p;
    if (p !== at + size)
      throw new InvalidArgumentError(`record encoding wrote ${p - at} bytes, sized ${size}`);
    if (this.prove) this.proveRecord(at, offsetDelta, timestampDelta, kb, kp, kl, vb, vp, vl);
  }

  /** The record just written at `at`, parsed back, holds the source message's fields. */
  private proveRecord(
    at: number,
    offsetDelta: number,
    timestampDelta: number,
    kb: Uint8Array,
    kp: number,
    kl: number,
    vb: Uint8Array,
    vp: number,
    vl: number,
  ): void {
    const f = this.fields;
    const buf = this.rec.buf;
    const offset = this.baseOffset + offsetDelta;
    let end: number;
    try {
      end = parseRecordAt(buf, at, this.rec.length, f);
    } catch (err) {
      throw mismatch(`record does not parse back: ${(err as Error).message}`, offset);
    }
    if (end !== this.rec.length) throw mismatch('record length', offset);
    if (f.offsetDelta !== offsetDelta)
      throw mismatch(`offset delta ${f.offsetDelta} vs ${offsetDelta}`, offset);
    if (f.timestampDelta !== timestampDelta)
      throw mismatch(`timestamp delta ${f.timestampDelta} vs ${timestampDelta}`, offset);
    if (f.attributes !== 0 || f.headerCount !== 0) throw mismatch('record attributes or headers', offset);
    if (f.keyLength !== kl || (kl > 0 && !equalBytes(buf, f.keyPos, kb, kp, kl)))
      throw mismatch('key', offset);
    if (f.valueLength !== vl || (vl > 0 && !equalBytes(buf, f.valuePos, vb, vp, vl)))
      throw mismatch('value', offset);
  }

  private finishFast(): void {
    const n = this.count;
    if (n === 0) return;
    this.count = 0;
    this.batchesThisFinish = 0;
    const codec = this.codec;
    if (codec === 0) {
      const at = this.batchStart;
      const size = this.out.length - at;
      if (this.pendingBytes <= this.maxBatchBytes) {
        this.sealFast(at, size, n);
        this.finishedEnd = this.out.length;
        this.emitted(at, size);
      } else {
        // The records move to a copy: the split batches are written where they were.
        const records = Buffer.from(this.out.buf.subarray(this.recStart, this.out.length));
        this.out.length = at;
        this.emitPlainPacked(this.materialize(records, n), this.pendingLogAppend);
      }
    } else {
      const plen = this.payload.length;
      // Copied into the output at once: the codec's reused buffer is enough.
      const body = compressTransient(codec, this.payload.view(0, plen), { level: this.level, magic: 2 });
      const size = RECORD_BATCH_OVERHEAD + body.length;
      if (size <= this.maxBatchBytes || n === 1) {
        const at = this.reserveOut(size);
        this.out.buf.set(body, at + RECORD_BATCH_OVERHEAD);
        this.sealFast(at, size, n);
        this.emitted(at, size);
      } else {
        this.emitCompressed(this.materialize(this.payload.buf, n), this.pendingLogAppend);
      }
      this.payload.length = 0;
    }
    this.stats.splitBatches += this.batchesThisFinish - 1;
    this.pendingBytes = 0;
  }

  private reserveOut(size: number): number {
    this.out.ensure(size);
    const at = this.out.length;
    this.out.length += size;
    this.finishedEnd = this.out.length;
    return at;
  }

  /** Header + CRC of the fast batch at `at` of the output (encodeRecordBatch's bytes); proves it when asked. */
  private sealFast(at: number, size: number, n: number): void {
    const logAppend = this.pendingLogAppend;
    const base = this.baseOffset;
    const lastOffsetDelta = this.lastOffsetInBatch - base;
    // LogAppendTime: all records carry the one wrapper time, so base = max = it.
    const maxTimestamp = logAppend ? this.baseTimestamp : this.maxTimestamp;
    const v = this.out.dv;
    const o = this.out.buf.byteOffset + at;
    setInt64(v, o, base);
    v.setInt32(o + LENGTH_OFFSET, size - LOG_OVERHEAD);
    v.setInt32(o + PARTITION_LEADER_EPOCH_OFFSET, -1);
    v.setInt8(o + MAGIC_OFFSET, 2);
    v.setInt16(o + ATTRIBUTES_OFFSET, (logAppend ? TIMESTAMP_TYPE_LOG_APPEND_TIME : 0) | this.codec);
    v.setInt32(o + LAST_OFFSET_DELTA_OFFSET, lastOffsetDelta);
    setInt64(v, o + BASE_TIMESTAMP_OFFSET, this.baseTimestamp);
    setInt64(v, o + MAX_TIMESTAMP_OFFSET, maxTimestamp);
    v.setInt32(o + PRODUCER_ID_OFFSET, -1); // producerId -1: int64 all ones
    v.setInt32(o + PRODUCER_ID_OFFSET + 4, -1);
    v.setInt16(o + PRODUCER_EPOCH_OFFSET, -1);
    v.setInt32(o + BASE_SEQUENCE_OFFSET, -1);
    v.setInt32(o + RECORDS_COUNT_OFFSET, n);
    v.setUint32(o + CRC_OFFSET, crc32cRange(this.out.buf, at + ATTRIBUTES_OFFSET, at + size));
    if (this.prove) this.proveBatch(at, size, n, lastOffsetDelta, maxTimestamp);
  }

  /**
   * The header read back from the written bytes says what the proven records need (their base
   * offset and timestamp, the LogAppendTime time, count, no producer, no transaction) and the
   * record bytes come back from the codec as encoded.
   */
  private proveBatch(
    at: number,
    size: number,
    n: number,
    lastOffsetDelta: number,
    maxTimestamp: number,
  ): void {
    const b = this.out.buf;
    const base = this.baseOffset;
    expectHeader(base, smallInt64At(b, at) === base, 'baseOffset');
    expectHeader(base, int32At(b, at + LENGTH_OFFSET) === size - LOG_OVERHEAD, 'batchLength');
    expectHeader(
      base,
      int32At(b, at + PARTITION_LEADER_EPOCH_OFFSET) === -1 && b[at + MAGIC_OFFSET] === 2,
      'partitionLeaderEpoch or magic',
    );
    const attributes = (b[at + ATTRIBUTES_OFFSET] << 8) | b[at + ATTRIBUTES_OFFSET + 1];
    expectHeader(
      base,
      attributes === ((this.pendingLogAppend ? TIMESTAMP_TYPE_LOG_APPEND_TIME : 0) | this.codec),
      'attributes',
    );
    expectHeader(
      base,
      int32At(b, at + LAST_OFFSET_DELTA_OFFSET) === lastOffsetDelta && lastOffsetDelta >= 0,
      'lastOffsetDelta',
    );
    expectHeader(base, smallInt64At(b, at + BASE_TIMESTAMP_OFFSET) === this.baseTimestamp, 'baseTimestamp');
    expectHeader(base, smallInt64At(b, at + MAX_TIMESTAMP_OFFSET) === maxTimestamp, 'maxTimestamp');
    expectHeader(
      base,
      smallInt64At(b, at + PRODUCER_ID_OFFSET) === -1 &&
        ((b[at + PRODUCER_EPOCH_OFFSET] << 8) | b[at + PRODUCER_EPOCH_OFFSET + 1]) === 0xffff,
      'producer',
    );
    expectHeader(
      base,
      int32At(b, at + BASE_SEQUENCE_OFFSET) === -1 && int32At(b, at + RECORDS_COUNT_OFFSET) === n,
      'baseSequence or count',
    );
    // Codec none: the records were written (and parsed back) where they are.
    if (this.codec === 0) return;
    const plen = this.payload.length;
    let back: Uint8Array;
    try {
      back = decompressTransient(this.codec, this.out.view(at + RECORD_BATCH_OVERHEAD, at + size), {
        magic: 2,
        maxBytes: plen,
      });
    } catch (err) {
      throw mismatch(`the record bytes do not decompress: ${(err as Error).message}`, base);
    }
    if (back.length !== plen || !equalBytes(this.payload.buf, 0, back, 0, plen))
      throw mismatch('the record bytes differ from the ones encoded', base);
  }

  private emitted(at: number, size: number): void {
    this.batchesThisFinish++;
    this.stats.batchesOut++;
    this.stats.bytesOut += size;
    if (size > this.maxBatchBytes) {
      this.stats.oversizeBatches++;
      const b = this.out.buf;
      const base = b.readBigInt64BE(at);
      this.onOversizeBatch?.({
        baseOffset: base,
        lastOffset: base + BigInt(int32At(b, at + LAST_OFFSET_DELTA_OFFSET)),
        sizeInBytes: size,
        maxBatchBytes: this.maxBatchBytes,
      });
    }
  }

  /**
   * The pending fast batch's records as objects, from `buf` (its record bytes from `recStart`
   * on, or a copy of them starting at 0): views into `buf`, which must stay unchanged.
   */
  private materialize(buf: Buffer, n: number): Pending[] {
    const records: Pending[] = new Array(n);
    const f = this.fields;
    const start = buf === this.rec.buf ? this.recStart : 0;
    const end = buf === this.rec.buf ? this.rec.length : buf.length;
    const view = (p: number, len: number) => new Uint8Array(buf.buffer, buf.byteOffset + p, len);
    const base = BigInt(this.baseOffset);
    const baseTs = BigInt(this.baseTimestamp);
    let p = start;
    for (let i = 0; i < n; i++) {
      p = parseRecordAt(buf, p, end, f);
      records[i] = {
        offset: base + BigInt(f.offsetDelta),
        timestamp: this.pendingLogAppend ? baseTs : baseTs + BigInt(f.timestampDelta),
        key: f.keyLength < 0 ? null : view(f.keyPos, f.keyLength),
        value: f.valueLength < 0 ? null : view(f.valuePos, f.valueLength),
      };
    }
    return records;
  }

  // ---- general path -----------------------------------------------------------------------

  private pushGeneral(entry: Uint8Array): void {
    // Keys and values are views into `entry` (or its decompressed value); pending records of the
    // general path outlive the call, so a plain message is copied (not `entry.slice()`: on a
    // Node Buffer that is a view).
    const plain = entry.length > 17 && (entry[17] & LEGACY_CODEC_MASK) === 0;
    const records = decodeLegacyRecords(
      plain ? Uint8Array.prototype.slice.call(entry) : entry,
      this.decodeOptions,
    );
    this.stats.recordsIn += records.length;
    for (const r of records) this.addGeneral(r);
  }

  private addGeneral(r: LegacyRecord): void {
    const logAppend = r.timestampType === 'LogAppendTime';
    if (!this.wide) {
      const small = (v: bigint) => v < 2n ** 52n && v > -(2n ** 52n);
      if (small(r.offset) && small(r.timestamp)) {
        const key = r.key;
        const value = r.value;
        this.add(
          Number(r.offset),
          Number(r.timestamp),
          logAppend,
          key ?? EMPTY,
          0,
          key === null ? -1 : key.length,
          value ?? EMPTY,
          0,
          value === null ? -1 : value.length,
        );
        return;
      }
      // From here on every record is an object: the pending fast batch becomes objects too (views
      // into a copy of its records).
      if (this.count > 0) {
        const records = Buffer.from(this.rec.buf.subarray(this.recStart, this.rec.length));
        if (this.codec === 0) this.out.length = this.batchStart;
        this.pending = this.materialize(records, this.count);
      } else {
        this.pending = [];
      }
      this.lastOffsetBig = this.seenAny ? BigInt(this.lastOffset) : -1n;
      this.count = 0;
      this.wide = true;
    }
    if (this.seenAny && r.offset <= this.lastOffsetBig) {
      throw new CorruptRecordError(
        `offset ${r.offset} follows offset ${this.lastOffsetBig}: offsets must increase`,
        {
          offset: r.offset,
        },
      );
    }
    this.seenAny = true;
    this.lastOffsetBig = r.offset;
    if (this.pending.length > 0) {
      const first = this.pending[0];
      if (
        logAppend !== this.pendingLogAppend ||
        (logAppend && r.timestamp !== first.timestamp) ||
        r.offset - first.offset > BigInt(INT32_MAX)
      ) {
        this.finishWide();
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
        this.finishWide();
      }
    }
    this.pendingLogAppend = logAppend;
    this.pendingBytes = RECORD_BATCH_OVERHEAD + recordSize(0, 0, r.key, r.value);
    this.pending.push({ offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value });
  }

  private finishWide(): void {
    const records = this.pending;
    if (records.length === 0) return;
    this.pending = [];
    this.batchesThisFinish = 0;
    if (this.codec === 0 || this.pendingBytes <= this.maxBatchBytes) {
      this.emitPlainPacked(records, this.pendingLogAppend);
    } else {
      this.emitCompressed(records, this.pendingLogAppend);
    }
    this.stats.splitBatches += this.batchesThisFinish - 1;
    this.pendingBytes = 0;
  }

  /**
   * Packs greedily by exact uncompressed size. Used for codec none (exact) and as the first
   * cut for compressed batches whose records fit uncompressed (compression rarely grows them;
   * when it does, emitCompressed splits further).
   */
  private emitPlainPacked(records: Pending[], logAppend: boolean): void {
    let start = 0;
    while (start < records.length) {
      const base = records[start];
      let bytes = RECORD_BATCH_OVERHEAD + recordSize(0, 0, base.key, base.value);
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
      if (this.codec === 0) this.emit(this.encode(chunk, logAppend), chunk, logAppend);
      else this.emitCompressed(chunk, logAppend);
      start = end;
    }
  }

  /** Encodes; when the result is too big, splits by records in proportion to its size and retries. */
  private emitCompressed(records: Pending[], logAppend: boolean): void {
    const batch = this.encode(records, logAppend);
    if (batch.length <= this.maxBatchBytes || records.length === 1) {
      this.emit(batch, records, logAppend);
      return;
    }
    const parts = Math.min(records.length, Math.max(2, Math.ceil((batch.length / this.maxBatchBytes) * 1.1)));
    const per = Math.ceil(records.length / parts);
    for (let i = 0; i < records.length; i += per) {
      this.emitCompressed(records.slice(i, i + per), logAppend);
    }
  }

  private emit(batch: Uint8Array, records: Pending[], logAppend: boolean): void {
    if (this.prove) proveGeneral(batch, records, logAppend);
    const at = this.reserveOut(batch.length);
    this.out.buf.set(batch, at);
    this.emitted(at, batch.length);
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

/** A batch of the general path read back as a consumer would, against the records it was made of. */
function proveGeneral(batch: Uint8Array, records: Pending[], logAppend: boolean): void {
  let i = 0;
  const offset = records[0].offset;
  try {
    for (const r of logicalRecordsOfBatch(batch)) {
      const s = records[i++];
      if (
        s === undefined ||
        r.offset !== s.offset ||
        r.timestamp !== s.timestamp ||
        r.timestampType !== (logAppend ? 'LogAppendTime' : 'CreateTime') ||
        !sameBytes(r.key, s.key) ||
        !sameBytes(r.value, s.value) ||
        r.headers.length !== 0 ||
        r.producerId !== -1n ||
        r.producerEpoch !== -1 ||
        r.sequence !== -1 ||
        r.isTransactional ||
        r.isControl
      ) {
        throw mismatch(`record ${i - 1} differs from the legacy record it was made of`, r.offset);
      }
    }
  } catch (err) {
    if (err instanceof VerifyMismatchError) throw err;
    throw mismatch(`batch does not decode: ${(err as Error).message}`, offset);
  }
  if (i !== records.length) throw mismatch(`${i} records vs ${records.length}`, offset);
}

function sameBytes(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);
}

/** Body size (after the length varint) of a record without headers. */
function bodySize(offsetDelta: number, tsDelta: number, kl: number, vl: number): number {
  return (
    1 +
    sizeOfVarlong(tsDelta) +
    sizeOfVarint(offsetDelta) +
    (kl < 0 ? 1 : sizeOfVarint(kl) + kl) +
    (vl < 0 ? 1 : sizeOfVarint(vl) + vl) +
    1
  );
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
