import {
  batchCompression,
  batchLastOffset,
  batchTimestampType,
  CorruptRecordError,
  checkRecordBatchCrc,
  codecName,
  DEFAULT_MAX_BATCH_BYTES,
  isControlBatch,
  type RecordBatchHeader,
  readRecordBatchHeader,
  SegliftError,
  type TimestampType,
} from '@seglift/format';
import { legacyCompression, legacyTimestampType, readLegacyEntry } from '@seglift/legacy';
import type { SegmentEntry } from './reader.js';

/** A codec id as reports name it: its name, or `unknown(N)` for ids Kafka refuses. */
export function codecLabel(id: number): string {
  try {
    return codecName(id);
  } catch {
    return `unknown(${id})`;
  }
}

const FORMAT_KEYS = [0, 1, 2].map((magic) =>
  Array.from({ length: 8 }, (_, c) => `v${magic}/${codecLabel(c)}`),
);

/** `v<magic>/<codec>`, the key of report.codecMixIn/codecOut (made once, not per entry). */
export function formatKey(magic: number, codec: number): string {
  return FORMAT_KEYS[magic]?.[codec] ?? `v${magic}/${codecLabel(codec)}`;
}

/** What the index rebuild, verify and reports need to know about one shallow entry. */
export interface EntryInfo {
  position: number;
  size: number;
  magic: number;
  codec: number;
  /** v2: baseOffset + lastOffsetDelta; legacy: the entry's offset (a wrapper's is its last inner offset). */
  lastOffset: bigint;
  /** The offset field at byte 0: baseOffset (v2) or the entry offset (legacy). */
  offset: bigint;
  /** v2 maxTimestamp; legacy v1 outer timestamp; -1 for v0 (AbstractLegacyRecordBatch.maxTimestamp). */
  maxTimestamp: bigint;
  timestampType: TimestampType;
  isControl: boolean;
  /** v2 only. */
  header?: RecordBatchHeader;
  crc: number;
}

/**
 * Parses the entry's header and checks its stored CRC (CRC-32C for v2, the outer CRC-32 for
 * legacy, as LogSegment.recover does); errors get the file and the entry's position.
 */
export function inspectEntry(entry: SegmentEntry, file: string, checkCrc = true): EntryInfo {
  try {
    if (entry.magic === 2) {
      const h = readRecordBatchHeader(entry.bytes, 0);
      if (checkCrc) checkRecordBatchCrc(entry.bytes);
      return {
        position: entry.position,
        size: entry.size,
        magic: 2,
        codec: batchCompression(h),
        lastOffset: batchLastOffset(h),
        offset: h.baseOffset,
        maxTimestamp: h.maxTimestamp,
        timestampType: batchTimestampType(h),
        isControl: isControlBatch(h),
        header: h,
        crc: h.crc,
      };
    }
    const m = readLegacyEntry(entry.bytes, 0, { checkCrc });
    return {
      position: entry.position,
      size: entry.size,
      magic: m.magic,
      codec: legacyCompression(m.attributes),
      lastOffset: m.offset,
      offset: m.offset,
      maxTimestamp: m.timestamp,
      timestampType: legacyTimestampType(m.magic, m.attributes),
      isControl: false,
      crc: m.crc,
    };
  } catch (err) {
    throw withEntryContext(err, file, entry);
  }
}

/**
 * Whether converting to `codec` rewrites this entry: a legacy entry always (upconverted); a v2
 * batch unless it is in the target codec already, or a control or empty batch (Kafka never
 * compresses those: docs/kafka-format.md §5.4); with `force`, every batch that has records.
 */
export function needsRewrite(info: EntryInfo, codec: number, force = false): boolean {
  if (info.magic < 2) return true;
  if (info.isControl || info.header!.recordsCount === 0) return false;
  return force || info.codec !== codec;
}

/**
 * Why convert keeps a v2 batch's original bytes instead of its recompression, or undefined: the
 * recompression is over `maxBatchBytes` (default DEFAULT_MAX_BATCH_BYTES), or, with
 * `onlyIfSmaller`, larger than the source. One rule for convert and for the read-back that
 * judges whether a segment is in the target format (target-format.ts).
 */
export function keptAsIs(
  recompressedBytes: number,
  sourceBytes: number,
  options: { maxBatchBytes?: number; onlyIfSmaller?: boolean },
): 'oversize' | 'larger' | undefined {
  if (recompressedBytes > (options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES)) return 'oversize';
  if (options.onlyIfSmaller === true && recompressedBytes > sourceBytes) return 'larger';
  return undefined;
}

/**
 * Offsets go forward from entry to entry, as verify requires of a segment's records ("offset X
 * does not follow Y"): a segment whose offsets go backwards is refused in verify's words, never
 * converted into one that passes for good (a broker's offset index and fetches assume they
 * increase). Entry by entry: a v2 batch from its baseOffset to its last offset; a legacy entry by
 * its offset (a wrapper's is its last inner record's; the upconverter refuses inner records that
 * go backwards).
 */
export class OffsetOrder {
  /**
   * The last offset seen while it lies in [0, 2^53), as every real offset does; -1 before the
   * first. Always a number, so a legacy entry's check (followAt, once per message) neither makes
   * a BigInt nor compares against a field that may hold one.
   */
  private last = -1;
  /** The last offset seen when it lies outside [0, 2^53) (a corrupt segment's); `last` is then unused. */
  private wide: bigint | undefined;

  constructor(private readonly file: string) {}

  /** The entry at `position` holds offsets `first` to `last`; throws CorruptRecordError when it does not follow. */
  follow(first: bigint, last: bigint, position: number): void {
    const previous = this.wide ?? (this.last < 0 ? undefined : BigInt(this.last));
    if (previous !== undefined && first <= previous) throw this.backwards(first, previous, position);
    if (last >= 0n && last <= MAX_SAFE_OFFSET) {
      this.last = Number(last);
      this.wide = undefined;
    } else this.wide = last;
  }

  /** The same for an entry holding the one offset stored at b[p, p + 8) (big-endian int64). */
  followAt(b: Buffer, p: number, position: number): void {
    // The offset's top 11 bits clear: below 2^53. The bytes are read directly: with two
    // readUInt32BE calls per message the check cost ~2% of converting small messages.
    if ((b[p] | (b[p + 1] & 0xe0)) === 0 && this.wide === undefined) {
      const offset =
        ((b[p + 1] << 16) | (b[p + 2] << 8) | b[p + 3]) * 0x1_0000_0000 +
        (((b[p + 4] << 24) | (b[p + 5] << 16) | (b[p + 6] << 8) | b[p + 7]) >>> 0);
      if (offset <= this.last) throw this.backwards(BigInt(offset), BigInt(this.last), position);
      this.last = offset;
      return;
    }
    const offset = b.readBigInt64BE(p);
    this.follow(offset, offset, position);
  }

  private backwards(first: bigint, previous: bigint, position: number): CorruptRecordError {
    return new CorruptRecordError(`offset ${first} does not follow ${previous}`, {
      file: this.file,
      position,
      offset: first,
    });
  }
}

const MAX_SAFE_OFFSET = BigInt(Number.MAX_SAFE_INTEGER);

/** Adds file and position (pure functions report positions relative to the entry). */
export function withEntryContext(
  err: unknown,
  file: string,
  entry: { position: number; bytes?: Uint8Array },
): unknown {
  if (err instanceof SegliftError) {
    const offset =
      entry.bytes && entry.bytes.length >= 8
        ? new DataView(entry.bytes.buffer, entry.bytes.byteOffset, 8).getBigInt64(0)
        : undefined;
    return err.withContext({ file, basePosition: entry.position, offset });
  }
  return err;
}
