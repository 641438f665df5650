import { INT32_MAX } from './bytes.js';
import { CorruptRecordError, InvalidArgumentError } from './errors.js';
import { LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET } from './record-batch.js';

/**
 * Offset and time index files (docs/kafka-format.md §6.2-6.5) rebuilt with LogSegment.recover's rules.
 * .index entry: int32 relative offset, int32 position. .timeindex entry: int64 timestamp,
 * int32 relative offset. Files are written trimmed: a zero-padded file would read as entries.
 */
export const OFFSET_INDEX_ENTRY_SIZE = 8;
export const TIME_INDEX_ENTRY_SIZE = 12;
export const DEFAULT_INDEX_INTERVAL_BYTES = 4096;

const INT32_MAX_BIG = BigInt(INT32_MAX);
const TWO32 = 4294967296;
/** Below 2^52: a batch's base offset (hi word < 2^20) minus it stays exact as a number. */
const SAFE_OFFSET = 2n ** 52n;
/** RecordBatch.NO_TIMESTAMP (-1), the time index's implicit last entry when it is empty: its low word. */
const NO_TIMESTAMP_LO = 0xffffffff;

export interface OffsetIndexEntry {
  offset: bigint;
  position: number;
}

export interface TimeIndexEntry {
  timestamp: bigint;
  offset: bigint;
}

export interface SegmentIndexes {
  offsetIndex: Uint8Array;
  timeIndex: Uint8Array;
}

class GrowableBytes {
  buf = new Uint8Array(256);
  view = new DataView(this.buf.buffer);
  length = 0;
  ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
}

/**
 * Feed every batch (v2) or shallow legacy entry in file order with `append`, then `finish`.
 * Per entry, as LogSegment.recover does:
 *  1. maxTimestamp > maxSoFar (strict) -> maxSoFar = maxTimestamp, offsetOfMaxSoFar = lastOffset;
 *  2. position - lastIndexedPosition > indexIntervalBytes (strict, lastIndexedPosition starts at 0)
 *     -> offset entry (lastOffset, position) and time index maybeAppend(maxSoFar, offsetOfMaxSoFar).
 * `finish` does the final maybeAppend. The time index only grows on a strictly greater timestamp
 * than its last entry (an empty one counts as -1), so all-(-1) data gives an empty time index.
 * For legacy entries pass the entry's offset and timestamp (-1 for v0) as lastOffset/maxTimestamp.
 */
export class SegmentIndexBuilder {
  readonly baseOffset: bigint;
  readonly indexIntervalBytes: number;
  private readonly offsets = new GrowableBytes();
  private readonly times = new GrowableBytes();
  // Offsets are held relative to baseOffset (every one passed the int32 check of `relative`) and
  // timestamps as int64 halves (hi signed, lo unsigned): exact for every int64, and no BigInt is
  // made per batch (a rewrite of small messages appends hundreds of thousands).
  private lastIndexedPosition = 0;
  private lastIndexedRel = -1;
  private maxSoFarHi = -1;
  private maxSoFarLo = NO_TIMESTAMP_LO;
  private relOfMaxSoFar = 0;
  private lastTimeHi = -1;
  private lastTimeLo = NO_TIMESTAMP_LO;
  private lastTimeRel = 0;
  private hasOffsetEntry = false;
  private hasTimeEntry = false;
  private expectedPosition = 0;
  private finished = false;
  /** baseOffset as a number when batch offsets can be read as numbers against it, else NaN. */
  private readonly baseNumber: number;

  constructor(baseOffset: bigint, opts: { indexIntervalBytes?: number } = {}) {
    const interval = opts.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL_BYTES;
    if (!Number.isInteger(interval) || interval < 0) {
      throw new InvalidArgumentError(`bad indexIntervalBytes ${interval}`);
    }
    this.baseOffset = baseOffset;
    this.indexIntervalBytes = interval;
    this.baseNumber = baseOffset >= 0n && baseOffset < SAFE_OFFSET ? Number(baseOffset) : Number.NaN;
  }

  private relative(offset: bigint, position: number): number {
    const rel = offset - this.baseOffset;
    if (rel < 0n || rel > INT32_MAX_BIG) throw this.notIndexable(offset, position);
    return Number(rel);
  }

  private notIndexable(offset: bigint, position: number): CorruptRecordError {
    return new CorruptRecordError(
      `offset ${offset} does not fit an index relative to base offset ${this.baseOffset}`,
      { position, offset },
    );
  }

  private offsetOf(rel: number): bigint {
    return this.baseOffset + BigInt(rel);
  }

  append(position: number, sizeInBytes: number, lastOffset: bigint, maxTimestamp: bigint): void {
    this.checkOrder(position);
    // LogSegment.ensureOffsetInRange: every batch's last offset must be indexable.
    const rel = this.relative(lastOffset, position);
    const ts = BigInt.asIntN(64, maxTimestamp);
    this.add(position, sizeInBytes, rel, Number(ts >> 32n), Number(ts & 0xffffffffn));
  }

  /**
   * `append` for the v2 batch whose header is at `view`'s byte `p` (its last offset and
   * maxTimestamp read from the header), `sizeInBytes` long at file `position`: the same rules,
   * without a BigInt per batch when the offsets are below 2^52 (always, for a broker's data).
   */
  appendBatchAt(view: DataView, p: number, position: number, sizeInBytes: number): void {
    this.checkOrder(position);
    const hi = view.getInt32(p);
    const delta = view.getInt32(p + LAST_OFFSET_DELTA_OFFSET);
    let rel: number;
    if (hi >= 0 && hi < 0x100000 && !Number.isNaN(this.baseNumber)) {
      rel = hi * TWO32 + view.getUint32(p + 4) - this.baseNumber + delta;
      if (rel < 0 || rel > INT32_MAX) throw this.notIndexable(view.getBigInt64(p) + BigInt(delta), position);
      rel |= 0; // a small integer from here on
    } else {
      rel = this.relative(view.getBigInt64(p) + BigInt(delta), position);
    }
    this.add(
      position,
      sizeInBytes,
      rel,
      view.getInt32(p + MAX_TIMESTAMP_OFFSET),
      view.getUint32(p + MAX_TIMESTAMP_OFFSET + 4),
    );
  }

  private checkOrder(position: number): void {
    if (this.finished) throw new InvalidArgumentError('SegmentIndexBuilder already finished');
    if (position !== this.expectedPosition) {
      throw new InvalidArgumentError(
        `entries must be appended in file order: got position ${position}, expected ${this.expectedPosition}`,
      );
    }
  }

  private add(position: number, sizeInBytes: number, rel: number, tsHi: number, tsLo: number): void {
    if (tsHi > this.maxSoFarHi || (tsHi === this.maxSoFarHi && tsLo > this.maxSoFarLo)) {
      this.maxSoFarHi = tsHi;
      this.maxSoFarLo = tsLo;
      this.relOfMaxSoFar = rel;
    }
    if (position - this.lastIndexedPosition > this.indexIntervalBytes) {
      this.appendOffsetEntry(rel, position);
      this.maybeAppendTime(position);
      this.lastIndexedPosition = position;
    }
    this.expectedPosition = position + sizeInBytes;
  }

  private appendOffsetEntry(rel: number, position: number): void {
    // OffsetIndex.append: offsets strictly increase.
    if (this.hasOffsetEntry && rel <= this.lastIndexedRel) {
      const offset = this.offsetOf(rel);
      throw new CorruptRecordError(
        `offset ${offset} is not larger than the last indexed offset ${this.offsetOf(this.lastIndexedRel)}`,
        { position, offset },
      );
    }
    const o = this.offsets;
    o.ensure(OFFSET_INDEX_ENTRY_SIZE);
    o.view.setInt32(o.length, rel);
    o.view.setInt32(o.length + 4, position);
    o.length += OFFSET_INDEX_ENTRY_SIZE;
    this.lastIndexedRel = rel;
    this.hasOffsetEntry = true;
  }

  /** TimeIndex.maybeAppend of (maxSoFar, offsetOfMaxSoFar). */
  private maybeAppendTime(position: number): void {
    const rel = this.relOfMaxSoFar;
    if (this.hasTimeEntry && rel < this.lastTimeRel) {
      const offset = this.offsetOf(rel);
      throw new CorruptRecordError(
        `time index offset ${offset} is below the last entry's offset ${this.offsetOf(this.lastTimeRel)}`,
        { position, offset },
      );
    }
    const hi = this.maxSoFarHi;
    const lo = this.maxSoFarLo;
    if (hi > this.lastTimeHi || (hi === this.lastTimeHi && lo > this.lastTimeLo)) {
      const t = this.times;
      t.ensure(TIME_INDEX_ENTRY_SIZE);
      t.view.setInt32(t.length, hi);
      t.view.setUint32(t.length + 4, lo);
      t.view.setInt32(t.length + 8, rel);
      t.length += TIME_INDEX_ENTRY_SIZE;
      this.lastTimeHi = hi;
      this.lastTimeLo = lo;
      this.lastTimeRel = rel;
      this.hasTimeEntry = true;
    }
  }

  /** Final time index entry (as after recover's loop) and the trimmed index bytes. */
  finish(): SegmentIndexes {
    if (!this.finished) {
      this.maybeAppendTime(this.expectedPosition);
      this.finished = true;
    }
    return {
      offsetIndex: this.offsets.buf.slice(0, this.offsets.length),
      timeIndex: this.times.buf.slice(0, this.times.length),
    };
  }
}

function checkWhole(buf: Uint8Array, size: number, what: string): DataView {
  if (buf.length % size !== 0) {
    throw new CorruptRecordError(`${what} size ${buf.length} is not a multiple of ${size}`, {
      position: buf.length - (buf.length % size),
    });
  }
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * Read-only views of index file bytes: entry i decoded on access, nothing else kept (a decoded
 * array of a big segment's index entries costs tens of MiB of heap).
 */
export interface OffsetIndexView {
  readonly length: number;
  /** Relative offset as stored (int32). */
  relativeOffset(i: number): number;
  offset(i: number): bigint;
  position(i: number): number;
}

export interface TimeIndexView {
  readonly length: number;
  timestamp(i: number): bigint;
  relativeOffset(i: number): number;
  offset(i: number): bigint;
}

/** The whole entries of a .index, decoded on access (same checks as decodeOffsetIndex). */
export function offsetIndexView(buf: Uint8Array, baseOffset: bigint): OffsetIndexView {
  const v = checkWhole(buf, OFFSET_INDEX_ENTRY_SIZE, 'offset index');
  return {
    length: buf.length / OFFSET_INDEX_ENTRY_SIZE,
    relativeOffset: (i) => v.getInt32(i * OFFSET_INDEX_ENTRY_SIZE),
    offset: (i) => baseOffset + BigInt(v.getInt32(i * OFFSET_INDEX_ENTRY_SIZE)),
    position: (i) => v.getInt32(i * OFFSET_INDEX_ENTRY_SIZE + 4),
  };
}

/** The whole entries of a .timeindex, decoded on access (same checks as decodeTimeIndex). */
export function timeIndexView(buf: Uint8Array, baseOffset: bigint): TimeIndexView {
  const v = checkWhole(buf, TIME_INDEX_ENTRY_SIZE, 'time index');
  return {
    length: buf.length / TIME_INDEX_ENTRY_SIZE,
    timestamp: (i) => v.getBigInt64(i * TIME_INDEX_ENTRY_SIZE),
    relativeOffset: (i) => v.getInt32(i * TIME_INDEX_ENTRY_SIZE + 8),
    offset: (i) => baseOffset + BigInt(v.getInt32(i * TIME_INDEX_ENTRY_SIZE + 8)),
  };
}

/** Every whole entry of a .index (the broker assumes all of them valid, docs/kafka-format.md §6.5). */
export function decodeOffsetIndex(buf: Uint8Array, baseOffset: bigint): OffsetIndexEntry[] {
  const v = checkWhole(buf, OFFSET_INDEX_ENTRY_SIZE, 'offset index');
  const out: OffsetIndexEntry[] = [];
  for (let p = 0; p < buf.length; p += OFFSET_INDEX_ENTRY_SIZE) {
    out.push({ offset: baseOffset + BigInt(v.getInt32(p)), position: v.getInt32(p + 4) });
  }
  return out;
}

/** Every whole entry of a .timeindex. */
export function decodeTimeIndex(buf: Uint8Array, baseOffset: bigint): TimeIndexEntry[] {
  const v = checkWhole(buf, TIME_INDEX_ENTRY_SIZE, 'time index');
  const out: TimeIndexEntry[] = [];
  for (let p = 0; p < buf.length; p += TIME_INDEX_ENTRY_SIZE) {
    out.push({ timestamp: v.getBigInt64(p), offset: baseOffset + BigInt(v.getInt32(p + 8)) });
  }
  return out;
}
