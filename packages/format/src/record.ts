import { ByteReader, ByteWriter, sizeOfVarint, sizeOfVarlong } from './bytes.js';
import { CorruptRecordError, InvalidArgumentError } from './errors.js';
import type { Record, RecordHeader } from './types.js';

/**
 * One v2 record (ref §5.3, Kafka's DefaultRecord):
 * `length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
 *  key varint-bytes | value varint-bytes | headerCount varint | headers`.
 */

/** The most bytes a record adds besides key, value and headers (DefaultRecord.MAX_RECORD_OVERHEAD). */
export const MAX_RECORD_OVERHEAD = 21;

/**
 * Reads one record at the reader's position, with DefaultRecord.readFrom's checks: the declared
 * length fits in what is left, header count is sane, and exactly `length` bytes are consumed.
 * Key, value and header bytes are views into the reader's buffer.
 */
export function readRecord(reader: ByteReader): Record {
  const lengthAt = reader.pos;
  const length = reader.varint();
  const start = reader.pos;
  if (length < 0 || length > reader.end - start) {
    throw new CorruptRecordError(
      `invalid record size: declared ${length} bytes, ${reader.end - start} left in the record stream`,
      { position: lengthAt },
    );
  }
  const attributes = reader.int8();
  const timestampDelta = reader.varlong();
  const offsetDelta = reader.varint();
  const key = reader.nullableBytes();
  const value = reader.nullableBytes();
  const countAt = reader.pos;
  const headerCount = reader.varint();
  const recordEnd = start + length;
  if (headerCount < 0 || headerCount > recordEnd - reader.pos) {
    throw new CorruptRecordError(`invalid number of record headers: ${headerCount}`, { position: countAt });
  }
  const headers: RecordHeader[] = new Array(headerCount);
  for (let i = 0; i < headerCount; i++) {
    const keyAt = reader.pos;
    const hkey = reader.nullableBytes();
    if (hkey === null) throw new CorruptRecordError('null record header key', { position: keyAt });
    headers[i] = { key: hkey, value: reader.nullableBytes() };
  }
  if (reader.pos !== recordEnd) {
    throw new CorruptRecordError(
      `invalid record size: declared ${length} bytes, fields take ${reader.pos - start}`,
      { position: lengthAt },
    );
  }
  return { attributes, timestampDelta, offsetDelta, key, value, headers };
}

/**
 * Steps over one record with exactly readRecord's checks, keeping nothing: verify-before-swap
 * parses every rewritten record this way without allocating per record.
 */
export function skipRecord(reader: ByteReader): void {
  const lengthAt = reader.pos;
  const length = reader.varint();
  const start = reader.pos;
  if (length < 0 || length > reader.end - start) {
    throw new CorruptRecordError(
      `invalid record size: declared ${length} bytes, ${reader.end - start} left in the record stream`,
      { position: lengthAt },
    );
  }
  reader.int8();
  reader.varlong();
  reader.varint();
  reader.skipNullableBytes();
  reader.skipNullableBytes();
  const countAt = reader.pos;
  const headerCount = reader.varint();
  const recordEnd = start + length;
  if (headerCount < 0 || headerCount > recordEnd - reader.pos) {
    throw new CorruptRecordError(`invalid number of record headers: ${headerCount}`, { position: countAt });
  }
  for (let i = 0; i < headerCount; i++) {
    const keyAt = reader.pos;
    if (reader.skipNullableBytes() === -1) {
      throw new CorruptRecordError('null record header key', { position: keyAt });
    }
    reader.skipNullableBytes();
  }
  if (reader.pos !== recordEnd) {
    throw new CorruptRecordError(
      `invalid record size: declared ${length} bytes, fields take ${reader.pos - start}`,
      { position: lengthAt },
    );
  }
}

/** Size of a record's body (everything after its length varint). */
export function sizeOfRecordBody(record: Record): number {
  let size =
    1 +
    sizeOfVarlong(record.timestampDelta) +
    sizeOfVarint(record.offsetDelta) +
    sizeOfNullableBytes(record.key) +
    sizeOfNullableBytes(record.value);
  const headers = record.headers;
  size += sizeOfVarint(headers.length);
  for (let i = 0; i < headers.length; i++) {
    const h = headers[i];
    if (h.key === null || h.key === undefined)
      throw new InvalidArgumentError('record header key must not be null');
    size += sizeOfNullableBytes(h.key) + sizeOfNullableBytes(h.value);
  }
  return size;
}

/** Total bytes of an encoded record, length varint included. */
export function sizeOfRecord(record: Record): number {
  const body = sizeOfRecordBody(record);
  return sizeOfVarint(body) + body;
}

function sizeOfNullableBytes(b: Uint8Array | null): number {
  return b === null ? 1 : sizeOfVarint(b.length) + b.length;
}

/** Appends one record; `bodySize` (from sizeOfRecordBody) saves computing it twice. */
export function writeRecord(writer: ByteWriter, record: Record, bodySize = sizeOfRecordBody(record)): void {
  const body = bodySize;
  writer.ensure(body + 5);
  writer.varint(body);
  writer.int8(record.attributes);
  writer.varlong(record.timestampDelta);
  writer.varint(record.offsetDelta);
  writer.nullableBytes(record.key);
  writer.nullableBytes(record.value);
  const headers = record.headers;
  writer.varint(headers.length);
  for (let i = 0; i < headers.length; i++) {
    writer.nullableBytes(headers[i].key);
    writer.nullableBytes(headers[i].value);
  }
}

/**
 * Writes one record at `pos` of a buffer already sized for it (length varint + `bodySize`) and
 * returns the position after it. The hot path of batch encoding: no bounds growth, no per-field
 * method calls.
 */
export function writeRecordAt(buf: Uint8Array, pos: number, record: Record, bodySize: number): number {
  pos = putUnsignedVarint(buf, pos, zigzag32(bodySize));
  buf[pos++] = record.attributes & 0xff;
  const ts = record.timestampDelta;
  if (typeof ts === 'number' && (ts | 0) === ts) {
    pos = putUnsignedVarint(buf, pos, zigzag32(ts));
  } else {
    pos = putVarlongSlow(buf, pos, ts);
  }
  pos = putUnsignedVarint(buf, pos, zigzag32(record.offsetDelta));
  pos = putNullableBytes(buf, pos, record.key);
  pos = putNullableBytes(buf, pos, record.value);
  const headers = record.headers;
  pos = putUnsignedVarint(buf, pos, zigzag32(headers.length));
  for (let i = 0; i < headers.length; i++) {
    pos = putNullableBytes(buf, pos, headers[i].key);
    pos = putNullableBytes(buf, pos, headers[i].value);
  }
  return pos;
}

function zigzag32(n: number): number {
  return ((n << 1) ^ (n >> 31)) >>> 0;
}

function putUnsignedVarint(buf: Uint8Array, pos: number, u: number): number {
  while (u >= 0x80) {
    buf[pos++] = (u & 0x7f) | 0x80;
    u >>>= 7;
  }
  buf[pos++] = u;
  return pos;
}

function putVarlongSlow(buf: Uint8Array, pos: number, v: number | bigint): number {
  const w = new ByteWriter(10);
  w.varlong(v);
  const out = w.finish();
  buf.set(out, pos);
  return pos + out.length;
}

function putNullableBytes(buf: Uint8Array, pos: number, b: Uint8Array | null): number {
  if (b === null) {
    buf[pos] = 1; // zigzag(-1)
    return pos + 1;
  }
  const n = b.length;
  pos = putUnsignedVarint(buf, pos, zigzag32(n));
  if (n < 32) {
    for (let i = 0; i < n; i++) buf[pos + i] = b[i];
  } else {
    buf.set(b, pos);
  }
  return pos + n;
}

/** One record as bytes (length varint included). */
export function encodeRecord(record: Record): Uint8Array {
  const body = sizeOfRecordBody(record);
  const out = new Uint8Array(sizeOfVarint(body) + body);
  const end = writeRecordAt(out, 0, record, body);
  if (end !== out.length)
    throw new InvalidArgumentError(`record encoding wrote ${end} bytes, sized ${out.length}`);
  return out;
}

/** Decodes exactly one record filling `bytes` (length varint included). */
export function decodeRecord(bytes: Uint8Array): Record {
  const reader = new ByteReader(bytes);
  const record = readRecord(reader);
  if (reader.remaining !== 0) {
    throw new CorruptRecordError(`${reader.remaining} bytes left after the record`, { position: reader.pos });
  }
  return record;
}
