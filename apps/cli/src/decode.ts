import {
  ATTRIBUTES_OFFSET,
  batchCompression,
  batchLastOffset,
  batchTimestampType,
  CrcMismatchError,
  codecById,
  computeRecordBatchCrc,
  controlTypeName,
  crc32,
  decodeControlRecordKey,
  decodeEndTransactionMarker,
  hasDeleteHorizon,
  incrementSequence,
  isControlBatch,
  isTransactional,
  type LogicalRecord,
  logicalRecordsOfBatch,
  MAGIC_OFFSET,
  readRecordBatchHeader,
  SegliftError,
  UnknownCodecError,
} from '@seglift/format';
import {
  decodeLegacyRecords,
  encodeLegacyEntry,
  type LegacyRecord,
  legacyCompression,
  legacyTimestampType,
  readLegacyEntry,
} from '@seglift/legacy';
import { codecLabel } from '@seglift/segment';
import { type BatchView, formatControl, type RecordView } from './dump-format.js';
import type { LogEntry } from './log-reader.js';

export interface DecodedEntry {
  batch: BatchView;
  /** The codec id cannot be decoded (5-7): records are unreadable, the batch line still prints. */
  unknownCodec: number | null;
  /** Lazily decodes the records; throws typed errors with positions relative to the entry. */
  records(): Iterable<RecordView>;
}

/** Batch-level view and record decoder of one shallow entry read from a .log. */
export function decodeEntry(entry: LogEntry, file: string): DecodedEntry {
  try {
    return entry.magic >= 2 ? decodeV2(entry) : decodeLegacy(entry);
  } catch (err) {
    if (err instanceof SegliftError) err.withContext({ file, basePosition: entry.position });
    throw err;
  }
}

function decodeV2(entry: LogEntry): DecodedEntry {
  const bytes = entry.bytes;
  const h = readRecordBatchHeader(bytes, 0);
  const codec = batchCompression(h);
  const isValid = bytes.length >= 61 && computeRecordBatchCrc(bytes) === h.crc;
  const control = isControlBatch(h);
  const batch: BatchView = {
    position: entry.position,
    size: entry.size,
    magic: h.magic,
    lastOffset: batchLastOffset(h),
    timestampType: batchTimestampType(h),
    maxTimestamp: h.maxTimestamp,
    compresscodec: codecLabel(codec),
    crc: h.crc,
    isValid,
    v2: {
      baseOffset: h.baseOffset,
      count: h.recordsCount,
      baseSequence: h.baseSequence,
      lastSequence: h.baseSequence < 0 ? -1 : incrementSequence(h.baseSequence, h.lastOffsetDelta),
      producerId: h.producerId,
      producerEpoch: h.producerEpoch,
      partitionLeaderEpoch: h.partitionLeaderEpoch,
      isTransactional: isTransactional(h),
      isControl: control,
      deleteHorizonMs: hasDeleteHorizon(h) ? h.baseTimestamp : null,
    },
  };
  const unknownCodec = codecById(codec) === undefined ? codec : null;
  return {
    batch,
    unknownCodec,
    *records() {
      if (unknownCodec !== null) throw new UnknownCodecError(unknownCodec, { position: ATTRIBUTES_OFFSET });
      for (const r of logicalRecordsOfBatch(bytes)) yield v2RecordView(r, control);
    },
  };
}

function v2RecordView(r: LogicalRecord, control: boolean): RecordView {
  const view: RecordView = {
    offset: r.offset,
    timestamp: r.timestamp,
    keySize: r.key === null ? -1 : r.key.length,
    valueSize: r.value === null ? -1 : r.value.length,
    key: r.key,
    value: r.value,
    sequence: r.sequence,
    headerKeys: r.headers.map((h) => h.key),
  };
  if (control) {
    const { type } = decodeControlRecordKey(r.key);
    const name = controlTypeName(type);
    const marker = type === 0 || type === 1 ? decodeEndTransactionMarker(r.value) : null;
    view.control = formatControl(type, name.startsWith('UNKNOWN') ? 'UNKNOWN' : name, marker);
  }
  return view;
}

function decodeLegacy(entry: LogEntry): DecodedEntry {
  const bytes = entry.bytes;
  const m = readLegacyEntry(bytes, 0, { checkCrc: false });
  const codec = legacyCompression(m.attributes);
  const timestampType = legacyTimestampType(m.magic, m.attributes);
  const batch: BatchView = {
    position: entry.position,
    size: entry.size,
    magic: m.magic,
    lastOffset: m.offset,
    timestampType,
    maxTimestamp: m.magic === 0 ? -1n : m.timestamp,
    compresscodec: codecLabel(codec),
    crc: m.crc,
    isValid: crc32(bytes.subarray(MAGIC_OFFSET)) === m.crc,
  };
  const unknownCodec = codecById(codec) === undefined ? codec : null;
  return {
    batch,
    unknownCodec,
    *records() {
      if (unknownCodec !== null) throw new UnknownCodecError(unknownCodec, { position: 17 });
      if (codec === 0) {
        yield legacyRecordView(
          { ...m, timestampType, key: m.key, value: m.value, timestamp: m.magic === 0 ? -1n : m.timestamp },
          batch.isValid,
        );
        return;
      }
      // The dump shows every inner message with its own CRC check instead of stopping at the
      // first bad one: decode with the check, and only when it fails recompute per message.
      let records: LegacyRecord[];
      let allValid = true;
      try {
        records = decodeLegacyRecords(bytes, { checkCrc: false, checkInnerCrc: true });
      } catch (err) {
        if (!(err instanceof CrcMismatchError)) throw err;
        records = decodeLegacyRecords(bytes, { checkCrc: false, checkInnerCrc: false });
        allValid = false;
      }
      for (const r of records) yield legacyRecordView(r, allValid || innerCrcMatches(r));
    },
  };
}

/**
 * Recomputes an inner message's CRC-32 from its fields. Exact except for inner messages of a
 * LogAppendTime wrapper, whose stored timestamps the reader replaces with the wrapper's.
 */
function innerCrcMatches(r: LegacyRecord): boolean {
  const encoded = encodeLegacyEntry(0n, {
    magic: r.magic,
    attributes: r.attributes,
    timestamp: r.timestamp,
    key: r.key,
    value: r.value,
  });
  return new DataView(encoded.buffer, encoded.byteOffset).getUint32(12) === r.crc;
}

function legacyRecordView(r: LegacyRecord, isValid: boolean): RecordView {
  return {
    offset: r.offset,
    timestamp: r.timestamp,
    keySize: r.key === null ? -1 : r.key.length,
    valueSize: r.value === null ? -1 : r.value.length,
    key: r.key,
    value: r.value,
    legacy: { isValid, crc: r.crc },
  };
}
