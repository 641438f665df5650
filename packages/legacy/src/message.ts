/**
 * One legacy (magic 0/1) log entry: `offset int64 | size int32 | message`, big-endian
 * (docs/kafka-format.md §1.1). Readers return views into the buffer they were handed, never copies.
 */
import {
  CorruptRecordError,
  CrcMismatchError,
  crc32,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  type TimestampType,
  TruncatedDataError,
} from '@seglift/format';

/** crc + magic + attributes + key length + value length (`LegacyRecord.RECORD_OVERHEAD_V0`). */
export const LEGACY_RECORD_OVERHEAD_V0 = 14;
/** v0 overhead plus the int64 timestamp (`LegacyRecord.RECORD_OVERHEAD_V1`). */
export const LEGACY_RECORD_OVERHEAD_V1 = 22;
/** `LegacyRecord.COMPRESSION_CODEC_MASK`: attribute bits 0-2. */
export const LEGACY_CODEC_MASK = 0x07;
/** `LegacyRecord.TIMESTAMP_TYPE_MASK`: attribute bit 3, v1 only (1 = LogAppendTime). */
export const LEGACY_TIMESTAMP_TYPE_MASK = 0x08;
/** `RecordBatch.NO_TIMESTAMP`. */
export const NO_TIMESTAMP = -1n;

/** A legacy message with its entry offset, as stored (a wrapper's value is still compressed). */
export interface LegacyMessage {
  /** The entry's offset: absolute for shallow entries; for inner entries of a v1 wrapper, relative. */
  offset: bigint;
  magic: 0 | 1;
  attributes: number;
  /** Stored CRC-32, unsigned. */
  crc: number;
  /** The message's own timestamp field; -1 for magic 0 (which has none). */
  timestamp: bigint;
  key: Uint8Array | null;
  value: Uint8Array | null;
}

/** Codec id of a legacy message (attribute bits 0-2): 0 none ... 3 lz4; 4-7 are invalid here. */
export function legacyCompression(attributes: number): number {
  return attributes & LEGACY_CODEC_MASK;
}

/** The timestamp type the message's own attributes declare (docs/kafka-format.md §1.3): v0 never has one. */
export function legacyTimestampType(magic: number, attributes: number): TimestampType {
  if (magic === 0) return 'NoTimestampType';
  return (attributes & LEGACY_TIMESTAMP_TYPE_MASK) === 0 ? 'CreateTime' : 'LogAppendTime';
}

export function isLegacyCompressed(message: Pick<LegacyMessage, 'attributes'>): boolean {
  return (message.attributes & LEGACY_CODEC_MASK) !== 0;
}

/** Size of the message alone (crc through value), i.e. what `message_size` holds. */
export function legacyMessageSize(magic: 0 | 1, key: Uint8Array | null, value: Uint8Array | null): number {
  return (
    (magic === 0 ? LEGACY_RECORD_OVERHEAD_V0 : LEGACY_RECORD_OVERHEAD_V1) +
    (key === null ? 0 : key.length) +
    (value === null ? 0 : value.length)
  );
}

/** Size of a whole entry (log overhead + message). */
export function legacyEntrySize(magic: 0 | 1, key: Uint8Array | null, value: Uint8Array | null): number {
  return LOG_OVERHEAD + legacyMessageSize(magic, key, value);
}

export interface ReadLegacyEntryOptions {
  /** Verify the stored CRC-32 (docs/kafka-format.md §1.2). Default true. */
  checkCrc?: boolean;
}

/**
 * Reads the legacy entry starting at `pos`. The entry must lie wholly inside `buf`.
 * Positions in errors are positions inside `buf`.
 */
export function readLegacyEntry(
  buf: Uint8Array,
  pos = 0,
  options: ReadLegacyEntryOptions = {},
): LegacyMessage {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.length - pos < LOG_OVERHEAD) {
    throw new TruncatedDataError(`legacy entry header needs 12 bytes, ${buf.length - pos} left`, {
      position: pos,
    });
  }
  const offset = view.getBigInt64(pos);
  const size = view.getInt32(pos + 8);
  if (size < LEGACY_RECORD_OVERHEAD_V0) {
    throw new CorruptRecordError(`legacy message size ${size} is smaller than the minimum 14`, {
      position: pos,
      offset,
    });
  }
  const end = pos + LOG_OVERHEAD + size;
  if (end > buf.length) {
    throw new TruncatedDataError(
      `legacy message declares ${size} bytes, ${buf.length - pos - LOG_OVERHEAD} left`,
      { position: pos, offset },
    );
  }
  return parseMessage(buf, view, pos, offset, end, options.checkCrc !== false);
}

/**
 * Parses the message of an entry whose bounds are already known to fit (`end` = entry end).
 * Shared by the shallow reader and the inner-stream reader, which report positions differently.
 */
export function parseMessage(
  buf: Uint8Array,
  view: DataView,
  pos: number,
  offset: bigint,
  end: number,
  checkCrc: boolean,
): LegacyMessage {
  const size = end - pos - LOG_OVERHEAD;
  const crc = view.getUint32(pos + 12);
  const magic = view.getInt8(pos + MAGIC_OFFSET);
  if (magic !== 0 && magic !== 1) {
    throw new CorruptRecordError(`legacy message has magic ${magic}, expected 0 or 1`, {
      position: pos,
      offset,
    });
  }
  if (size < (magic === 0 ? LEGACY_RECORD_OVERHEAD_V0 : LEGACY_RECORD_OVERHEAD_V1)) {
    throw new CorruptRecordError(`magic ${magic} message size ${size} is smaller than its fixed fields`, {
      position: pos,
      offset,
    });
  }
  if (checkCrc) {
    const actual = crc32(buf.subarray(pos + MAGIC_OFFSET, end));
    if (actual !== crc) throw new CrcMismatchError('CRC-32', crc, actual, { position: pos, offset });
  }
  const attributes = view.getUint8(pos + 17);
  let p = pos + 18;
  let timestamp = NO_TIMESTAMP;
  if (magic === 1) {
    timestamp = view.getBigInt64(p);
    p += 8;
  }
  const keyLength = view.getInt32(p);
  p += 4;
  let key: Uint8Array | null = null;
  if (keyLength >= 0) {
    // The value length field must still fit after the key.
    if (keyLength > end - p - 4) {
      throw new CorruptRecordError(`key length ${keyLength} runs past the message end`, {
        position: pos,
        offset,
      });
    }
    key = buf.subarray(p, p + keyLength);
    p += keyLength;
  } else if (keyLength !== -1) {
    throw new CorruptRecordError(`invalid key length ${keyLength}`, { position: pos, offset });
  }
  const valueLength = view.getInt32(p);
  p += 4;
  let value: Uint8Array | null = null;
  if (valueLength >= 0) {
    if (valueLength !== end - p) {
      throw new CorruptRecordError(
        `value length ${valueLength} does not match the ${end - p} bytes left in the message`,
        { position: pos, offset },
      );
    }
    value = buf.subarray(p, end);
  } else if (valueLength !== -1 || p !== end) {
    throw new CorruptRecordError(
      `invalid value length ${valueLength} (${end - p} bytes left in the message)`,
      {
        position: pos,
        offset,
      },
    );
  }
  return { offset, magic, attributes, crc, timestamp, key, value };
}

export interface EncodeLegacyMessageInput {
  magic: 0 | 1;
  attributes?: number;
  /** v1 only; ignored for v0. Default -1. */
  timestamp?: bigint;
  key: Uint8Array | null;
  value: Uint8Array | null;
}

/** Writes an entry with the given offset: offset, size, crc, then the message (exact Kafka bytes). */
export function encodeLegacyEntry(offset: bigint, message: EncodeLegacyMessageInput): Uint8Array {
  const { magic, key, value } = message;
  const size = legacyMessageSize(magic, key, value);
  const out = new Uint8Array(LOG_OVERHEAD + size);
  const view = new DataView(out.buffer);
  view.setBigInt64(0, offset);
  view.setInt32(8, size);
  out[16] = magic;
  out[17] = (message.attributes ?? 0) & 0xff;
  let p = 18;
  if (magic === 1) {
    view.setBigInt64(p, message.timestamp ?? NO_TIMESTAMP);
    p += 8;
  }
  view.setInt32(p, key === null ? -1 : key.length);
  p += 4;
  if (key !== null) {
    out.set(key, p);
    p += key.length;
  }
  view.setInt32(p, value === null ? -1 : value.length);
  p += 4;
  if (value !== null) out.set(value, p);
  view.setUint32(12, crc32(out.subarray(MAGIC_OFFSET)));
  return out;
}

/** The message alone (crc through value), without offset and size: how sarama's vectors look. */
export function encodeLegacyMessage(message: EncodeLegacyMessageInput): Uint8Array {
  return encodeLegacyEntry(0n, message).subarray(LOG_OVERHEAD);
}
