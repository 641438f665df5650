/**
 * Deep iteration of a legacy entry: a plain message is its own record; a compressed wrapper
 * yields its inner messages with the offset and timestamp rules of Kafka's
 * AbstractLegacyRecordBatch.DeepRecordsIterator (docs/kafka-format.md §2).
 */
import {
  CorruptRecordError,
  CrcMismatchError,
  codecById,
  crc32,
  DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
  decompress,
  LOG_OVERHEAD,
  type LogicalRecord,
  MAGIC_OFFSET,
  type RecordHeader,
  SegliftError,
  type TimestampType,
  UnknownCodecError,
  UnsupportedFormatError,
} from '@seglift/format';
import {
  LEGACY_CODEC_MASK,
  LEGACY_RECORD_OVERHEAD_V0,
  type LegacyMessage,
  legacyTimestampType,
  NO_TIMESTAMP,
  parseMessage,
  readLegacyEntry,
} from './message.js';

/** A record as a legacy reader (Java consumer, kafka-dump-log --deep-iteration) sees it. */
export interface LegacyRecord {
  /** Absolute offset. */
  offset: bigint;
  /** Effective timestamp: -1 for v0, the wrapper's for inner messages of a LogAppendTime wrapper. */
  timestamp: bigint;
  /** Effective type: the wrapper's for inner v1 messages, NoTimestampType for any v0 message. */
  timestampType: TimestampType;
  key: Uint8Array | null;
  value: Uint8Array | null;
  /** The message's own magic (inner magic may differ from the wrapper's, KAFKA-4298). */
  magic: 0 | 1;
  /** The message's own attributes byte. */
  attributes: number;
  /** The message's own stored CRC-32. */
  crc: number;
}

export interface LegacyIterationOptions {
  /** Limit on a wrapper's decompressed size. Default: @seglift/format's DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES. */
  maxDecompressedBytes?: number;
  /** Verify inner messages' CRC-32 like a consumer with check.crcs=true. Default true. */
  checkInnerCrc?: boolean;
  /** Verify the entry's own CRC-32. Default true. */
  checkCrc?: boolean;
}

/**
 * All records of one shallow entry (`entryBytes` holds exactly one entry), in order.
 * Keys and values are views into `entryBytes` or into the decompressed wrapper value.
 */
export function decodeLegacyRecords(
  entryBytes: Uint8Array,
  options: LegacyIterationOptions = {},
): LegacyRecord[] {
  const entry = readLegacyEntry(entryBytes, 0, { checkCrc: options.checkCrc });
  const codec = entry.attributes & LEGACY_CODEC_MASK;
  if (codec === 0) {
    return [
      {
        offset: entry.offset,
        timestamp: entry.timestamp,
        timestampType: legacyTimestampType(entry.magic, entry.attributes),
        key: entry.key,
        value: entry.value,
        magic: entry.magic,
        attributes: entry.attributes,
        crc: entry.crc,
      },
    ];
  }
  return innerRecords(entry, codec, options);
}

/** Iterator form of `decodeLegacyRecords` (the entry is fully validated before the first record). */
export function iterateLegacyRecords(
  entryBytes: Uint8Array,
  options: LegacyIterationOptions = {},
): IterableIterator<LegacyRecord> {
  return decodeLegacyRecords(entryBytes, options)[Symbol.iterator]();
}

function innerRecords(
  wrapper: LegacyMessage,
  codec: number,
  options: LegacyIterationOptions,
): LegacyRecord[] {
  const ctx = { position: 0, offset: wrapper.offset };
  const c = codecById(codec);
  if (c === undefined) throw new UnknownCodecError(codec, ctx);
  if (c.minMagic > wrapper.magic) {
    throw new UnsupportedFormatError(`${c.name} is not valid in a magic ${wrapper.magic} wrapper`, ctx);
  }
  if (wrapper.value === null) {
    throw new CorruptRecordError(`compressed wrapper (magic ${wrapper.magic}) has a null value`, ctx);
  }
  let stream: Uint8Array;
  try {
    stream = decompress(codec, wrapper.value, {
      magic: wrapper.magic,
      maxBytes: options.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
    });
  } catch (err) {
    if (err instanceof SegliftError) throw err.withContext(ctx);
    throw err;
  }
  const inner = readInnerStream(stream, options.checkInnerCrc !== false, wrapper.offset);
  if (inner.length === 0) {
    throw new CorruptRecordError('compressed wrapper has no inner records', ctx);
  }

  // v1: relative inner offsets (docs/kafka-format.md §2.2); v0: absolute, used as-is.
  let base = 0n;
  if (wrapper.magic === 1 && wrapper.offset !== 0n) {
    const lastInner = inner[inner.length - 1].offset;
    if (wrapper.offset < lastInner) {
      throw new CorruptRecordError(
        `wrapper offset ${wrapper.offset} is less than the last inner relative offset ${lastInner}`,
        ctx,
      );
    }
    base = wrapper.offset - lastInner;
  }

  // Timestamps (docs/kafka-format.md §2.3): a v1 wrapper's type rules every inner v1 message; LogAppendTime
  // replaces their timestamps. A v0 wrapper has NoTimestampType, so inner v1 messages keep their
  // own timestamp under NoTimestampType (LegacyRecord.timestampType/timestamp with a wrapper type).
  const wrapperType = legacyTimestampType(wrapper.magic, wrapper.attributes);
  const logAppend = wrapperType === 'LogAppendTime';
  const out: LegacyRecord[] = new Array(inner.length);
  for (let i = 0; i < inner.length; i++) {
    const m = inner[i];
    const innerCodec = m.attributes & LEGACY_CODEC_MASK;
    if (innerCodec !== 0) {
      const at = { position: 0, offset: base + m.offset };
      if (codecById(innerCodec) === undefined) throw new UnknownCodecError(innerCodec, at);
      throw new UnsupportedFormatError('inner messages must not be compressed', at);
    }
    out[i] = {
      offset: base + m.offset,
      timestamp: m.magic === 0 ? NO_TIMESTAMP : logAppend ? wrapper.timestamp : m.timestamp,
      timestampType: m.magic === 0 ? 'NoTimestampType' : wrapperType,
      key: m.key,
      value: m.value,
      magic: m.magic,
      attributes: m.attributes,
      crc: m.crc,
    };
  }
  return out;
}

/**
 * Kafka's DataLogInputStream over the decompressed stream: an inner size < 14 is corrupt, but a
 * truncated entry at the end (short header or short payload) quietly ends the stream.
 */
function readInnerStream(stream: Uint8Array, checkCrc: boolean, wrapperOffset: bigint): LegacyMessage[] {
  const view = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  const out: LegacyMessage[] = [];
  let pos = 0;
  while (stream.length - pos >= LOG_OVERHEAD) {
    const offset = view.getBigInt64(pos);
    const size = view.getInt32(pos + 8);
    if (size < LEGACY_RECORD_OVERHEAD_V0) {
      throw new CorruptRecordError(
        `inner message at ${pos} of the decompressed stream has size ${size}, less than 14`,
        { position: 0, offset: wrapperOffset },
      );
    }
    const end = pos + LOG_OVERHEAD + size;
    if (end > stream.length) break;
    try {
      out.push(parseMessage(stream, view, pos, offset, end, false));
    } catch (err) {
      if (err instanceof SegliftError) {
        throw new CorruptRecordError(`inner message at ${pos} of the decompressed stream: ${err.detail}`, {
          position: 0,
          offset: wrapperOffset,
        });
      }
      throw err;
    }
    if (checkCrc) {
      const stored = out[out.length - 1].crc;
      const actual = crc32(stream.subarray(pos + MAGIC_OFFSET, end));
      if (actual !== stored) {
        throw new CrcMismatchError('CRC-32', stored, actual, { position: 0, offset: wrapperOffset });
      }
    }
    pos = end;
  }
  return out;
}

/** Legacy records have no headers; one shared frozen array saves an allocation per record. */
const NO_HEADERS = Object.freeze([]) as unknown as RecordHeader[];

/**
 * The records of one entry as a v2 reader sees them after upconversion (docs/kafka-format.md §4.2):
 * NoTimestampType becomes CreateTime (timestamp kept, -1 for v0); no producer, no headers.
 */
export function logicalRecordsOfLegacyEntry(
  entryBytes: Uint8Array,
  options: LegacyIterationOptions = {},
): LogicalRecord[] {
  return decodeLegacyRecords(entryBytes, options).map(toLogicalRecord);
}

export function toLogicalRecord(r: LegacyRecord): LogicalRecord {
  return {
    offset: r.offset,
    timestamp: r.timestamp,
    timestampType: r.timestampType === 'NoTimestampType' ? 'CreateTime' : r.timestampType,
    key: r.key,
    value: r.value,
    headers: NO_HEADERS,
    producerId: -1n,
    producerEpoch: -1,
    sequence: -1,
    isTransactional: false,
    isControl: false,
  };
}
