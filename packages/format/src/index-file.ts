import { CorruptRecordError, InvalidArgumentError } from './errors.js';

/**
 * Offset and time index files (docs/kafka-format.md §6.2-6.5) rebuilt with LogSegment.recover's rules.
 * .index entry: int32 relative offset, int32 position. .timeindex entry: int64 timestamp,
 * int32 relative offset. Files are written trimmed: a zero-padded file would read as entries.
 */
export const OFFSET_INDEX_ENTRY_SIZE = 8;
export const TIME_INDEX_ENTRY_SIZE = 12;
export const DEFAULT_INDEX_INTERVAL_BYTES = 4096;

const INT32_MAX = 0x7fffffff;
/** RecordBatch.NO_TIMESTAMP: the time index's implicit last entry when it is empty. */
const NO_TIMESTAMP = -1n;

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
  private lastIndexedPosition = 0;
  private lastIndexedOffset = -1n;
  private maxSoFar = NO_TIMESTAMP;
  private offsetOfMaxSoFar: bigint;
  private lastTimeEntryTimestamp = NO_TIMESTAMP;
  private lastTimeEntryOffset: bigint;
  private hasOffsetEntry = false;
  private hasTimeEntry = false;
  private expectedPosition = 0;
  private finished = false;

  constructor(baseOffset: bigint, opts: { indexIntervalBytes?: number } = {}) {
    const interval = opts.indexIntervalBytes ?? DEFAULT_INDEX_INTERVAL_BYTES;
    if (!Number.isInteger(interval) || interval < 0) {
      throw new InvalidArgumentError(`bad indexIntervalBytes ${interval}`);
    }
    this.baseOffset = baseOffset;
    this.indexIntervalBytes = interval;
    this.offsetOfMaxSoFar = baseOffset;
    this.lastTimeEntryOffset = baseOffset;
  }

  private relative(offset: bigint, position: number): number {
    const rel = offset - this.baseOffset;
    if (rel < 0n || rel > BigInt(INT32_MAX)) {
      throw new CorruptRecordError(
        `offset ${offset} does not fit an index relative to base offset ${this.baseOffset}`,
        { position, offset },
      );
    }
    return Number(rel);
  }

  append(position: number, sizeInBytes: number, lastOffset: bigint, maxTimestamp: bigint): void {
    if (this.finished) throw new InvalidArgumentError('SegmentIndexBuilder already finished');
    if (position !== this.expectedPosition) {
      throw new InvalidArgumentError(
        `entries must be appended in file order: got position ${position}, expected ${this.expectedPosition}`,
      );
    }
    // LogSegment.ensureOffsetInRange: every batch's last offset must be indexable.
    this.relative(lastOffset, position);
    if (maxTimestamp > this.maxSoFar) {
      this.maxSoFar = maxTimestamp;
      this.offsetOfMaxSoFar = lastOffset;
    }
    if (position - this.lastIndexedPosition > this.indexIntervalBytes) {
      this.appendOffsetEntry(lastOffset, position);
      this.maybeAppendTime(this.maxSoFar, this.offsetOfMaxSoFar, position);
      this.lastIndexedPosition = position;
    }
    this.expectedPosition = position + sizeInBytes;
  }

  private appendOffsetEntry(offset: bigint, position: number): void {
    // OffsetIndex.append: offsets strictly increase.
    if (this.hasOffsetEntry && offset <= this.lastIndexedOffset) {
      throw new CorruptRecordError(
        `offset ${offset} is not larger than the last indexed offset ${this.lastIndexedOffset}`,
        { position, offset },
      );
    }
    const rel = this.relative(offset, position);
    const o = this.offsets;
    o.ensure(OFFSET_INDEX_ENTRY_SIZE);
    o.view.setInt32(o.length, rel);
    o.view.setInt32(o.length + 4, position);
    o.length += OFFSET_INDEX_ENTRY_SIZE;
    this.lastIndexedOffset = offset;
    this.hasOffsetEntry = true;
  }

  /** TimeIndex.maybeAppend. */
  private maybeAppendTime(timestamp: bigint, offset: bigint, position: number): void {
    if (this.hasTimeEntry && offset < this.lastTimeEntryOffset) {
      throw new CorruptRecordError(
        `time index offset ${offset} is below the last entry's offset ${this.lastTimeEntryOffset}`,
        { position, offset },
      );
    }
    if (timestamp > this.lastTimeEntryTimestamp) {
      const rel = this.relative(offset, position);
      const t = this.times;
      t.ensure(TIME_INDEX_ENTRY_SIZE);
      t.view.setBigInt64(t.length, timestamp);
      t.view.setInt32(t.length + 8, rel);
      t.length += TIME_INDEX_ENTRY_SIZE;
      this.lastTimeEntryTimestamp = timestamp;
      this.lastTimeEntryOffset = offset;
      this.hasTimeEntry = true;
    }
  }

  /** Final time index entry (as after recover's loop) and the trimmed index bytes. */
  finish(): SegmentIndexes {
    if (!this.finished) {
      this.maybeAppendTime(this.maxSoFar, this.offsetOfMaxSoFar, this.expectedPosition);
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
