import { ByteReader, ByteWriter, sizeOfVarint } from './bytes.js';
import {
  compressTransient,
  DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
  decompress,
  decompressTransient,
} from './codecs/index.js';
import { crc32c } from './crc.js';
import {
  CorruptRecordError,
  CrcMismatchError,
  InvalidArgumentError,
  SegliftError,
  TruncatedDataError,
  UnsupportedFormatError,
  VerifyMismatchError,
} from './errors.js';
import { parseRecordAt, RecordFields, readRecord, sizeOfRecordBody, writeRecordAt } from './record.js';
import type { Record, TimestampType } from './types.js';

/**
 * v2 record batches (docs/kafka-format.md §5, Kafka's DefaultRecordBatch). Batch functions take the bytes of one
 * whole batch starting at its baseOffset field; bytes beyond `LOG_OVERHEAD + batchLength` are
 * ignored. Positions in errors are relative to the start of the batch.
 */

/** baseOffset int64 + batchLength int32 (Records.LOG_OVERHEAD). */
export const LOG_OVERHEAD = 12;
/** The magic byte sits at byte 16 in every format (Records.MAGIC_OFFSET). */
export const MAGIC_OFFSET = 16;
/** Size of the v2 batch header (DefaultRecordBatch.RECORD_BATCH_OVERHEAD). */
export const RECORD_BATCH_OVERHEAD = 61;
/** Records.HEADER_SIZE_UP_TO_MAGIC: enough of any entry to read its offset, size and magic. */
export const HEADER_SIZE_UP_TO_MAGIC = 17;
/**
 * The largest batch a broker accepts by default: `message.max.bytes` 1048588 (1 MiB + LOG_OVERHEAD,
 * LogConfig.DEFAULT_MAX_MESSAGE_BYTES).
 */
export const DEFAULT_MAX_BATCH_BYTES = 1_048_588;

/** The v2 batch header's fields, by DefaultRecordBatch's names (docs/kafka-format.md §5.1). */
export const LENGTH_OFFSET = 8;
export const PARTITION_LEADER_EPOCH_OFFSET = 12;
/** The v2 batch's stored CRC-32C (DefaultRecordBatch.CRC_OFFSET). */
export const CRC_OFFSET = 17;
export const ATTRIBUTES_OFFSET = 21;
export const LAST_OFFSET_DELTA_OFFSET = 23;
export const BASE_TIMESTAMP_OFFSET = 27;
export const MAX_TIMESTAMP_OFFSET = 35;
export const PRODUCER_ID_OFFSET = 43;
export const PRODUCER_EPOCH_OFFSET = 51;
export const BASE_SEQUENCE_OFFSET = 53;
export const RECORDS_COUNT_OFFSET = 57;

/** The codec bits of the attributes (DefaultRecordBatch's COMPRESSION_CODEC_MASK). */
export const COMPRESSION_CODEC_MASK = 0x07;
const TIMESTAMP_TYPE_MASK = 0x08;
const TRANSACTIONAL_FLAG_MASK = 0x10;
const CONTROL_FLAG_MASK = 0x20;
const DELETE_HORIZON_FLAG_MASK = 0x40;

export interface RecordBatchHeader {
  baseOffset: bigint;
  /** Bytes after the batchLength field (total size - 12). */
  batchLength: number;
  partitionLeaderEpoch: number;
  magic: number;
  /** Stored CRC-32C, unsigned. */
  crc: number;
  /** The full int16, bits 7-15 included (they are covered by the CRC and kept). */
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  maxTimestamp: bigint;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
  recordsCount: number;
}

/** What an encoder needs: the header minus what is derived from the records (length, crc, magic, count). */
export type RecordBatchFields = Omit<RecordBatchHeader, 'batchLength' | 'crc' | 'magic' | 'recordsCount'>;

export interface DecodeOptions {
  /** Limit for decompressed record bytes (default DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES). */
  maxDecompressedBytes?: number;
}

function viewOf(buf: Uint8Array): DataView {
  return new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * Parses the 61-byte header at `pos`. Needs only the header bytes: no record access, no CRC check.
 * Magic other than 2 -> UnsupportedFormatError; batchLength too small -> CorruptRecordError.
 */
export function readRecordBatchHeader(buf: Uint8Array, pos = 0): RecordBatchHeader {
  if (buf.length - pos < RECORD_BATCH_OVERHEAD) {
    throw new TruncatedDataError(
      `record batch header needs ${RECORD_BATCH_OVERHEAD} bytes, ${Math.max(0, buf.length - pos)} available`,
      { position: pos },
    );
  }
  const v = viewOf(buf);
  const baseOffset = v.getBigInt64(pos);
  const magic = v.getInt8(pos + MAGIC_OFFSET);
  if (magic !== 2) {
    throw new UnsupportedFormatError(`not a v2 record batch: magic ${magic}`, {
      position: pos + MAGIC_OFFSET,
      offset: baseOffset,
    });
  }
  const batchLength = v.getInt32(pos + 8);
  if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) {
    throw new CorruptRecordError(
      `record batch length ${batchLength} is below the minimum ${RECORD_BATCH_OVERHEAD - LOG_OVERHEAD}`,
      { position: pos + 8, offset: baseOffset },
    );
  }
  return {
    baseOffset,
    batchLength,
    partitionLeaderEpoch: v.getInt32(pos + 12),
    magic,
    crc: v.getUint32(pos + CRC_OFFSET),
    attributes: v.getInt16(pos + ATTRIBUTES_OFFSET) & 0xffff,
    lastOffsetDelta: v.getInt32(pos + 23),
    baseTimestamp: v.getBigInt64(pos + 27),
    maxTimestamp: v.getBigInt64(pos + 35),
    producerId: v.getBigInt64(pos + 43),
    producerEpoch: v.getInt16(pos + 51),
    baseSequence: v.getInt32(pos + 53),
    recordsCount: v.getInt32(pos + RECORDS_COUNT_OFFSET),
  };
}

type Attrs = { attributes: number };

/** Codec id from attribute bits 0-2 (5-7 are unknown; the codec layer rejects them). */
export function batchCompression(h: Attrs): number {
  return h.attributes & COMPRESSION_CODEC_MASK;
}

export function batchTimestampType(h: Attrs): TimestampType {
  return (h.attributes & TIMESTAMP_TYPE_MASK) !== 0 ? 'LogAppendTime' : 'CreateTime';
}

export function isTransactional(h: Attrs): boolean {
  return (h.attributes & TRANSACTIONAL_FLAG_MASK) !== 0;
}

export function isControlBatch(h: Attrs): boolean {
  return (h.attributes & CONTROL_FLAG_MASK) !== 0;
}

/** Bit 6: baseTimestamp holds the delete horizon (KIP-534). */
export function hasDeleteHorizon(h: Attrs): boolean {
  return (h.attributes & DELETE_HORIZON_FLAG_MASK) !== 0;
}

export function batchLastOffset(h: { baseOffset: bigint; lastOffsetDelta: number }): bigint {
  return h.baseOffset + BigInt(h.lastOffsetDelta);
}

/** Header plus the batch's own bytes, trimmed to its declared size. */
function sliceBatch(batch: Uint8Array): { header: RecordBatchHeader; bytes: Uint8Array } {
  const header = readRecordBatchHeader(batch, 0);
  const size = LOG_OVERHEAD + header.batchLength;
  if (batch.length < size) {
    throw new TruncatedDataError(`record batch declares ${size} bytes, ${batch.length} available`, {
      position: 0,
      offset: header.baseOffset,
    });
  }
  return { header, bytes: size === batch.length ? batch : batch.subarray(0, size) };
}

/** CRC-32C over attributes..end (docs/kafka-format.md §5.2). */
export function computeRecordBatchCrc(batch: Uint8Array): number {
  const { bytes } = sliceBatch(batch);
  return crc32c(bytes.subarray(ATTRIBUTES_OFFSET));
}

/** Throws CrcMismatchError when the stored CRC-32C is wrong. */
export function checkRecordBatchCrc(batch: Uint8Array): void {
  const { header, bytes } = sliceBatch(batch);
  const actual = crc32c(bytes.subarray(ATTRIBUTES_OFFSET));
  if (actual !== header.crc) {
    throw new CrcMismatchError('CRC-32C', header.crc, actual, {
      position: CRC_OFFSET,
      offset: header.baseOffset,
    });
  }
}

/** The record bytes of a batch, decompressed when the batch is compressed. */
export function recordsPayload(batch: Uint8Array, opts: DecodeOptions = {}): Uint8Array {
  const { header, bytes } = sliceBatch(batch);
  return payloadOf(header, bytes, opts);
}

/** `transient`: the payload may live in the codec's reused buffer (valid until its next call). */
function payloadOf(
  header: RecordBatchHeader,
  bytes: Uint8Array,
  opts: DecodeOptions,
  transient = false,
): Uint8Array {
  const raw = bytes.subarray(RECORD_BATCH_OVERHEAD);
  const codec = batchCompression(header);
  if (codec === 0) return raw;
  try {
    return (transient ? decompressTransient : decompress)(codec, raw, {
      magic: 2,
      maxBytes: opts.maxDecompressedBytes ?? DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
    });
  } catch (err) {
    if (err instanceof SegliftError)
      err.withContext({ position: RECORD_BATCH_OVERHEAD, offset: header.baseOffset });
    throw err;
  }
}

/**
 * Checks DefaultRecordBatch's iterators make: negative count is corrupt; the record stream must
 * hold exactly `count` records (bytes left over, or a stream ending early, are errors).
 * A count of 0 yields nothing without touching (or decompressing) the payload.
 */
function openRecords(batch: Uint8Array, opts: DecodeOptions) {
  const { header, bytes } = sliceBatch(batch);
  const count = header.recordsCount;
  if (count < 0) {
    throw new CorruptRecordError(`negative record count ${count}`, {
      position: RECORDS_COUNT_OFFSET,
      offset: header.baseOffset,
    });
  }
  const compressed = batchCompression(header) !== 0;
  let reader: ByteReader;
  // Records are views into these bytes; plain Uint8Array views are cheaper than Buffer ones
  // (no species lookup) and compare equal whatever the caller passed in.
  if (count === 0) {
    reader = new ByteReader(bytes, RECORD_BATCH_OVERHEAD, RECORD_BATCH_OVERHEAD);
  } else if (compressed) {
    reader = new ByteReader(plain(payloadOf(header, bytes, opts)));
  } else {
    reader = new ByteReader(plain(bytes), RECORD_BATCH_OVERHEAD);
  }
  return { header, count, compressed, reader };
}

function plain(b: Uint8Array): Uint8Array {
  return Object.getPrototypeOf(b) === Uint8Array.prototype
    ? b
    : new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** Turns a position inside a decompressed stream into one the caller can use. */
function relocate(err: unknown, header: RecordBatchHeader, compressed: boolean): unknown {
  if (!(err instanceof SegliftError)) return err;
  if (compressed && err instanceof CorruptRecordError) {
    const inner = err.position;
    return new CorruptRecordError(
      `${err.detail} (at byte ${inner ?? '?'} of the decompressed records)`,
      { position: RECORD_BATCH_OVERHEAD, offset: header.baseOffset },
      { cause: err },
    );
  }
  return err.withContext({ offset: header.baseOffset });
}

function checkNoneRemaining(reader: ByteReader, count: number): void {
  if (reader.remaining !== 0) {
    throw new CorruptRecordError(
      `${reader.remaining} bytes left in the record stream after the declared ${count} records`,
      { position: reader.pos },
    );
  }
}

/**
 * Checks that decompressed record bytes hold exactly `count` well-formed records (the same strict
 * rules as decodeRecords) without keeping them. Positions in errors are inside `payload`.
 */
export function checkRecordsPayload(payload: Uint8Array, count: number): void {
  if (count < 0) throw new CorruptRecordError(`negative record count ${count}`, { position: 0 });
  const end = payload.length;
  const f = CHECK_FIELDS;
  let pos = 0;
  for (let i = 0; i < count; i++) {
    if (pos === end) {
      throw new CorruptRecordError(`record stream ended after ${i} of ${count} records`, {
        position: pos,
      });
    }
    pos = parseRecordAt(payload, pos, end, f);
  }
  if (pos !== end) {
    throw new CorruptRecordError(
      `${end - pos} bytes left in the record stream after the declared ${count} records`,
      { position: pos },
    );
  }
}

/** Scratch of checkRecordsPayload (parseRecordAt writes each record's fields here). */
const CHECK_FIELDS = new RecordFields();

/** Decodes every record of a v2 batch (no CRC check; call checkRecordBatchCrc for that). */
export function decodeRecords(batch: Uint8Array, opts: DecodeOptions = {}): Record[] {
  const { header, count, compressed, reader } = openRecords(batch, opts);
  // A record takes at least 7 bytes: a corrupt huge count must not size the array.
  const records: Record[] = new Array(Math.min(count, Math.ceil(reader.remaining / 7)));
  try {
    for (let i = 0; i < count; i++) {
      if (reader.remaining === 0) {
        throw new CorruptRecordError(`record stream ended after ${i} of ${count} records`, {
          position: reader.pos,
        });
      }
      records[i] = readRecord(reader);
    }
    if (count > 0) checkNoneRemaining(reader, count);
  } catch (err) {
    throw relocate(err, header, compressed);
  }
  return records;
}

/** Lazily decodes the records of a v2 batch, with the same checks as decodeRecords. */
export function* iterateRecords(
  batch: Uint8Array,
  opts: DecodeOptions = {},
): Generator<Record, void, undefined> {
  const { header, count, compressed, reader } = openRecords(batch, opts);
  for (let i = 0; i < count; i++) {
    let record: Record;
    try {
      if (reader.remaining === 0) {
        throw new CorruptRecordError(`record stream ended after ${i} of ${count} records`, {
          position: reader.pos,
        });
      }
      record = readRecord(reader);
      if (i === count - 1) checkNoneRemaining(reader, count);
    } catch (err) {
      throw relocate(err, header, compressed);
    }
    yield record;
  }
}

export interface EncodeOptions {
  level?: number;
}

/** Encodes records into a new batch. The codec bits of `fields.attributes` are replaced by `codecId`. */
export function encodeRecordBatch(
  fields: RecordBatchFields,
  records: readonly Record[],
  codecId: number,
  opts: EncodeOptions = {},
): Uint8Array {
  if (codecId === 0) {
    const out = writeRecords(records, RECORD_BATCH_OVERHEAD);
    const w = new ByteWriter(RECORD_BATCH_OVERHEAD);
    writeHeaderFields(w, fields, 0, records.length);
    out.set(w.finish(), 0);
    return sealBatch(out);
  }
  return encodeRecordBatchFromPayload(fields, records.length, writeRecords(records, 0), codecId, opts);
}

/**
 * The records' bytes after `headroom` reserved bytes, in one exactly sized buffer: every size is
 * computed first, so the hot loop neither grows nor bounds-checks.
 */
function writeRecords(records: readonly Record[], headroom: number): Uint8Array {
  const bodies = new Int32Array(records.length);
  let size = headroom;
  for (let i = 0; i < records.length; i++) {
    const body = sizeOfRecordBody(records[i]);
    bodies[i] = body;
    size += sizeOfVarint(body) + body;
  }
  // Not zero-filled: every byte after the headroom is written below (checked), the headroom by the caller.
  const ab = Buffer.allocUnsafeSlow(size);
  const out = new Uint8Array(ab.buffer, ab.byteOffset, size);
  let pos = headroom;
  for (let i = 0; i < records.length; i++) pos = writeRecordAt(out, pos, records[i], bodies[i]);
  if (pos !== size) throw new InvalidArgumentError(`record encoding wrote ${pos} bytes, sized ${size}`);
  return out;
}

/** Builds a batch around already-encoded record bytes, compressing them with `codecId`. */
export function encodeRecordBatchFromPayload(
  fields: RecordBatchFields,
  recordsCount: number,
  payload: Uint8Array,
  codecId: number,
  opts: EncodeOptions = {},
): Uint8Array {
  return encodeFromPayload(fields, recordsCount, payload, codecId, opts, false);
}

/** recompressRecordBatch's `transient` output: reused, grown when a batch needs more. */
let transientOut = Buffer.allocUnsafeSlow(0);

function encodeFromPayload(
  fields: RecordBatchFields,
  recordsCount: number,
  payload: Uint8Array,
  codecId: number,
  opts: EncodeOptions,
  transient: boolean,
): Uint8Array {
  // Copied into the batch right below: the codec's reused output buffer is enough.
  const body = codecId === 0 ? payload : compressTransient(codecId, payload, { level: opts.level, magic: 2 });
  const size = RECORD_BATCH_OVERHEAD + body.length;
  if (!transient) {
    const w = new ByteWriter(size);
    writeHeaderFields(w, fields, codecId, recordsCount);
    w.bytes(body);
    return sealBatch(w.finish());
  }
  const w = new ByteWriter(RECORD_BATCH_OVERHEAD);
  writeHeaderFields(w, fields, codecId, recordsCount);
  if (transientOut.length < size)
    transientOut = Buffer.allocUnsafeSlow(Math.max(size, 2 * transientOut.length));
  const out = new Uint8Array(transientOut.buffer, transientOut.byteOffset, size);
  out.set(w.finish(), 0);
  out.set(body, RECORD_BATCH_OVERHEAD);
  return sealBatch(out);
}

function writeHeaderFields(w: ByteWriter, f: RecordBatchFields, codecId: number, count: number): void {
  if (!Number.isInteger(codecId) || codecId < 0 || codecId > 7) {
    throw new InvalidArgumentError(`bad codec id ${codecId}`);
  }
  if (!Number.isInteger(count) || count < 0 || count > 0x7fffffff) {
    throw new InvalidArgumentError(`bad record count ${count}`);
  }
  w.int64(f.baseOffset);
  w.int32(0); // batchLength, set by sealBatch
  w.int32(f.partitionLeaderEpoch);
  w.int8(2);
  w.uint32(0); // crc, set by sealBatch
  w.int16((((f.attributes & ~COMPRESSION_CODEC_MASK) | codecId) << 16) >> 16);
  w.int32(f.lastOffsetDelta);
  w.int64(f.baseTimestamp);
  w.int64(f.maxTimestamp);
  w.int64(f.producerId);
  w.int16(f.producerEpoch);
  w.int32(f.baseSequence);
  w.int32(count);
}

function sealBatch(batch: Uint8Array): Uint8Array {
  const v = viewOf(batch);
  v.setInt32(8, batch.length - LOG_OVERHEAD);
  v.setUint32(CRC_OFFSET, crc32c(batch.subarray(ATTRIBUTES_OFFSET)));
  return batch;
}

export interface RecompressOptions extends EncodeOptions, DecodeOptions {
  /**
   * Prove the rewrite in memory: the source records are checked with Kafka's strict rules (as
   * decodeRecords does), and the new record bytes are decompressed again and must equal the
   * source's byte for byte (else VerifyMismatchError). With the header fields compared and the
   * new batch's CRC-32C read back from disk, this is the segment pipeline's verification of a
   * recompressed batch: neither side has to be decompressed again later.
   */
  roundTrip?: boolean;
  /** The caller has just checked the batch's stored CRC-32C (checkRecordBatchCrc): not done again. */
  crcChecked?: boolean;
  /**
   * The new batch may live in a buffer the next transient call reuses (no allocation per
   * batch): for a caller that copies it before recompressing another batch.
   */
  transient?: boolean;
}

/**
 * Recompresses a batch's record bytes with `codecId` without re-encoding the records: every header
 * field but the codec bits, length and CRC is kept. The stored CRC is checked first (unless the
 * caller says it just did) so a corrupt batch is never given a fresh, valid CRC. Empty batches (count 0) and control batches come back
 * unchanged (docs/kafka-format.md §5.4: Kafka never compresses either).
 */
export function recompressRecordBatch(
  batch: Uint8Array,
  codecId: number,
  opts: RecompressOptions = {},
): Uint8Array {
  if (!opts.crcChecked) checkRecordBatchCrc(batch);
  const { header, bytes } = sliceBatch(batch);
  if (header.recordsCount === 0 || isControlBatch(header)) return bytes;
  if (header.recordsCount < 0) {
    throw new CorruptRecordError(`negative record count ${header.recordsCount}`, {
      position: RECORDS_COUNT_OFFSET,
      offset: header.baseOffset,
    });
  }
  // Used up before this returns (compressed or copied into the new batch), so it may live in the
  // source codec's reused buffer, unless the round trip decodes with that same codec.
  const payload = payloadOf(header, bytes, opts, batchCompression(header) !== codecId);
  const compressed = batchCompression(header) !== 0;
  if (opts.roundTrip) {
    try {
      checkRecordsPayload(payload, header.recordsCount);
    } catch (err) {
      if (!compressed && err instanceof CorruptRecordError) {
        // Positions inside uncompressed record bytes are positions in the batch past its header.
        throw new CorruptRecordError(
          err.detail,
          { position: RECORD_BATCH_OVERHEAD + (err.position ?? 0), offset: header.baseOffset },
          { cause: err },
        );
      }
      throw relocate(err, header, compressed);
    }
  }
  const out = encodeFromPayload(header, header.recordsCount, payload, codecId, opts, opts.transient === true);
  if (opts.roundTrip) checkRoundTrip(header, payload, out, codecId);
  return out;
}

function checkRoundTrip(
  header: RecordBatchHeader,
  payload: Uint8Array,
  out: Uint8Array,
  codecId: number,
): void {
  const written = out.subarray(RECORD_BATCH_OVERHEAD);
  let back: Uint8Array;
  try {
    // The source's length bounds it: a codec that gives back more is as wrong as one that differs.
    back =
      codecId === 0 ? written : decompressTransient(codecId, written, { magic: 2, maxBytes: payload.length });
  } catch (err) {
    throw new VerifyMismatchError(
      'records',
      `the recompressed record bytes do not decompress: ${(err as Error).message}`,
      { position: RECORD_BATCH_OVERHEAD, offset: header.baseOffset },
    );
  }
  if (!bytesEqual(back, payload)) {
    throw new VerifyMismatchError(
      'records',
      `the recompressed record bytes decompress to different bytes (${back.length} vs ${payload.length})`,
      { position: RECORD_BATCH_OVERHEAD, offset: header.baseOffset },
    );
  }
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

/** The fields an encoder needs to reproduce a header. */
export function recordBatchFields(h: RecordBatchHeader): RecordBatchFields {
  return {
    baseOffset: h.baseOffset,
    partitionLeaderEpoch: h.partitionLeaderEpoch,
    attributes: h.attributes,
    lastOffsetDelta: h.lastOffsetDelta,
    baseTimestamp: h.baseTimestamp,
    maxTimestamp: h.maxTimestamp,
    producerId: h.producerId,
    producerEpoch: h.producerEpoch,
    baseSequence: h.baseSequence,
  };
}
