import { ByteReader, type ByteWriter, putVarint, putVarlong, sizeOfVarint, sizeOfVarlong } from './bytes.js';
import { CorruptRecordError, InvalidArgumentError } from './errors.js';
import type { Record, RecordHeader } from './types.js';

/**
 * One v2 record (docs/kafka-format.md §5.3, Kafka's DefaultRecord):
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
  pos = putVarint(buf, pos, bodySize);
  buf[pos++] = record.attributes & 0xff;
  pos = putVarlong(buf, pos, record.timestampDelta);
  pos = putVarint(buf, pos, record.offsetDelta);
  pos = putNullableBytes(buf, pos, record.key);
  pos = putNullableBytes(buf, pos, record.value);
  const headers = record.headers;
  pos = putVarint(buf, pos, headers.length);
  for (let i = 0; i < headers.length; i++) {
    pos = putNullableBytes(buf, pos, headers[i].key);
    pos = putNullableBytes(buf, pos, headers[i].value);
  }
  return pos;
}

function putNullableBytes(buf: Uint8Array, pos: number, b: Uint8Array | null): number {
  if (b === null) {
    buf[pos] = 1; // zigzag(-1)
    return pos + 1;
  }
  const n = b.length;
  pos = putVarint(buf, pos, n);
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

/**
 * One record's fields as `parseRecordAt` leaves them: positions into the parsed buffer instead
 * of views, so a caller that reuses one instance parses any number of records without
 * allocating (the in-memory proofs and verify walk millions of small records).
 */
export class RecordFields {
  /** Position just past the record. */
  end = 0;
  attributes = 0;
  /** A number when it is a safe integer, else a bigint (as Record). */
  timestampDelta: number | bigint = 0;
  offsetDelta = 0;
  keyPos = 0;
  /** -1 for a null key. */
  keyLength = -1;
  valuePos = 0;
  /** -1 for a null value. */
  valueLength = -1;
  headerCount = 0;
  /** Position of the first header (headers are checked, not kept). */
  headersPos = 0;
}

/** Position after the last varint read by the helpers below (one module slot: no allocation). */
let after = 0;

function varintAt(buf: Uint8Array, pos: number, end: number): number {
  if (pos < end) {
    const b = buf[pos];
    if (b < 0x80) {
      after = pos + 1;
      return (b >>> 1) ^ -(b & 1);
    }
  }
  const start = pos;
  let value = 0;
  let shift = 0;
  for (;;) {
    if (pos >= end) throw new CorruptRecordError('unexpected end of data in varint', { position: start });
    const b = buf[pos++];
    if ((b & 0x80) === 0) {
      value |= b << shift;
      break;
    }
    value |= (b & 0x7f) << shift;
    shift += 7;
    if (shift > 28) throw new CorruptRecordError('varint longer than 5 bytes', { position: start });
  }
  after = pos;
  return (value >>> 1) ^ -(value & 1);
}

/** A nullable bytes field: returns its length (-1 null) with `after` at its first byte. */
function bytesFieldAt(buf: Uint8Array, pos: number, end: number): number {
  const n = varintAt(buf, pos, end);
  if (n === -1) return -1;
  if (n < 0) throw new CorruptRecordError(`invalid length ${n}`, { position: pos });
  if (end - after < n) {
    throw new CorruptRecordError(`length ${n} runs past the end (${end - after} bytes left)`, {
      position: pos,
    });
  }
  return n;
}

/**
 * Parses the record at `pos` (stream ending at `end`) with readRecord's checks into `out`;
 * returns the position after it. Errors are readRecord's, positions inside `buf`.
 */
export function parseRecordAt(buf: Uint8Array, pos: number, end: number, out: RecordFields): number {
  const lengthAt = pos;
  const length = varintAt(buf, pos, end);
  const start = after;
  if (length < 0 || length > end - start) {
    throw new CorruptRecordError(
      `invalid record size: declared ${length} bytes, ${end - start} left in the record stream`,
      { position: lengthAt },
    );
  }
  const recordEnd = start + length;
  if (start >= end) {
    throw new CorruptRecordError('unexpected end of data reading int8: need 1 bytes, 0 left', {
      position: start,
    });
  }
  out.attributes = (buf[start] << 24) >> 24;
  let p = start + 1;
  // timestampDelta: up to 4 bytes (|delta| < 2^27) inline, longer ones through ByteReader's exact varlong.
  let z = 0;
  let q = p;
  let done = false;
  for (let shift = 0; shift < 28 && q < end; shift += 7) {
    const b = buf[q++];
    z |= (b & 0x7f) << shift;
    if (b < 0x80) {
      done = true;
      break;
    }
  }
  if (done) {
    out.timestampDelta = (z >>> 1) ^ -(z & 1);
    p = q;
  } else {
    const r = new ByteReader(buf, p, end);
    out.timestampDelta = r.varlong();
    p = r.pos;
  }
  out.offsetDelta = varintAt(buf, p, end);
  p = after;
  const k = bytesFieldAt(buf, p, end);
  out.keyLength = k;
  out.keyPos = after;
  p = k === -1 ? after : after + k;
  const v = bytesFieldAt(buf, p, end);
  out.valueLength = v;
  out.valuePos = after;
  p = v === -1 ? after : after + v;
  const countAt = p;
  const headerCount = varintAt(buf, p, end);
  p = after;
  if (headerCount < 0 || headerCount > recordEnd - p) {
    throw new CorruptRecordError(`invalid number of record headers: ${headerCount}`, { position: countAt });
  }
  out.headerCount = headerCount;
  out.headersPos = p;
  for (let i = 0; i < headerCount; i++) {
    const keyAt = p;
    const hk = bytesFieldAt(buf, p, end);
    if (hk === -1) throw new CorruptRecordError('null record header key', { position: keyAt });
    p = after + hk;
    const hv = bytesFieldAt(buf, p, end);
    p = hv === -1 ? after : after + hv;
  }
  if (p !== recordEnd) {
    throw new CorruptRecordError(`invalid record size: declared ${length} bytes, fields take ${p - start}`, {
      position: lengthAt,
    });
  }
  out.end = p;
  return p;
}
