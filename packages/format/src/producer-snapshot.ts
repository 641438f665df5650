/**
 * Kafka's producer state snapshot file, `<offset>.snapshot` (docs/kafka-format.md, "Producer
 * state snapshots"): ProducerStateManager.writeSnapshot/readSnapshot over the ProducerSnapshot
 * message, version 1. Big-endian: int16 version, uint32 CRC-32C of every byte after the CRC,
 * int32 entry count, then 46-byte entries.
 */
import { crc32cRange } from './crc.js';
import {
  CorruptRecordError,
  CrcMismatchError,
  TruncatedDataError,
  UnsupportedFormatError,
} from './errors.js';

export const PRODUCER_SNAPSHOT_VERSION = 1;
const CRC_OFFSET = 2;
/** PRODUCER_ENTRIES_OFFSET in Kafka: the CRC covers everything from here (the count included). */
const ENTRIES_OFFSET = 6;
const ENTRY_SIZE = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

/** One ProducerSnapshot.ProducerEntry, in Kafka's field order. */
export interface ProducerSnapshotEntry {
  producerId: bigint;
  producerEpoch: number;
  /** Last sequence of the producer's last data batch; -1 when it has none (after an epoch bump). */
  lastSequence: number;
  /** Last offset of that batch; -1 when none. */
  lastOffset: bigint;
  /** That batch's lastOffset - firstOffset; 0 when none. */
  offsetDelta: number;
  /** Max timestamp of the producer's last batch, or the timestamp of its last transaction marker. */
  timestamp: bigint;
  /** Coordinator epoch of the last transaction marker; -1 when none. */
  coordinatorEpoch: number;
  /** First offset of the producer's ongoing transaction; -1 when none. */
  currentTxnFirstOffset: bigint;
}

/** The file's bytes, entries in the given order (Kafka writes its producer map's iteration order). */
export function encodeProducerSnapshot(entries: readonly ProducerSnapshotEntry[]): Uint8Array {
  const out = new Uint8Array(ENTRIES_OFFSET + 4 + entries.length * ENTRY_SIZE);
  const v = new DataView(out.buffer);
  v.setInt16(0, PRODUCER_SNAPSHOT_VERSION);
  v.setInt32(ENTRIES_OFFSET, entries.length);
  let p = ENTRIES_OFFSET + 4;
  for (const e of entries) {
    v.setBigInt64(p, e.producerId);
    v.setInt16(p + 8, e.producerEpoch);
    v.setInt32(p + 10, e.lastSequence);
    v.setBigInt64(p + 14, e.lastOffset);
    v.setInt32(p + 22, e.offsetDelta);
    v.setBigInt64(p + 26, e.timestamp);
    v.setInt32(p + 34, e.coordinatorEpoch);
    v.setBigInt64(p + 38, e.currentTxnFirstOffset);
    p += ENTRY_SIZE;
  }
  v.setUint32(CRC_OFFSET, crc32cRange(out, ENTRIES_OFFSET, out.length));
  return out;
}

/** Bytes of a snapshot's header: version, CRC-32C and entry count. */
export const PRODUCER_SNAPSHOT_HEADER_BYTES = ENTRIES_OFFSET + 4;

/**
 * The checks decodeProducerSnapshot makes of a snapshot's header and of its length, made from the
 * header alone and the file's size: a reader refuses a file by its first 10 bytes before reading
 * it whole (a sparse file of gigabytes that is no snapshot). Returns the entry count.
 */
export function checkProducerSnapshotHeader(head: Uint8Array, size: number): number {
  if (size < PRODUCER_SNAPSHOT_HEADER_BYTES || head.length < PRODUCER_SNAPSHOT_HEADER_BYTES)
    throw new TruncatedDataError(`producer snapshot needs at least 10 bytes, found ${size}`, {
      position: 0,
    });
  const v = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const version = v.getInt16(0);
  if (version !== PRODUCER_SNAPSHOT_VERSION)
    throw new UnsupportedFormatError(`producer snapshot version ${version} (Kafka knows only 1)`, {
      position: 0,
    });
  const count = v.getInt32(ENTRIES_OFFSET);
  if (count < 0)
    throw new CorruptRecordError(`producer snapshot entry count ${count}`, { position: ENTRIES_OFFSET });
  const want = PRODUCER_SNAPSHOT_HEADER_BYTES + count * ENTRY_SIZE;
  if (size < want)
    throw new TruncatedDataError(`producer snapshot of ${count} entries needs ${want} bytes, found ${size}`, {
      position: size,
    });
  if (size > want)
    throw new CorruptRecordError(`${size - want} bytes after the last producer snapshot entry`, {
      position: want,
    });
  return count;
}

/**
 * Parses a snapshot file as readSnapshot does: unknown version -> UnsupportedFormatError, short
 * or long data -> TruncatedDataError / CorruptRecordError, CRC-32C mismatch -> CrcMismatchError.
 */
export function decodeProducerSnapshot(bytes: Uint8Array): ProducerSnapshotEntry[] {
  const count = checkProducerSnapshotHeader(bytes, bytes.length);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const stored = v.getUint32(CRC_OFFSET);
  const computed = crc32cRange(bytes, ENTRIES_OFFSET, bytes.length);
  if (stored !== computed) throw new CrcMismatchError('CRC-32C', stored, computed, { position: CRC_OFFSET });
  const entries: ProducerSnapshotEntry[] = [];
  for (let i = 0, p = ENTRIES_OFFSET + 4; i < count; i++, p += ENTRY_SIZE)
    entries.push({
      producerId: v.getBigInt64(p),
      producerEpoch: v.getInt16(p + 8),
      lastSequence: v.getInt32(p + 10),
      lastOffset: v.getBigInt64(p + 14),
      offsetDelta: v.getInt32(p + 22),
      timestamp: v.getBigInt64(p + 26),
      coordinatorEpoch: v.getInt32(p + 34),
      currentTxnFirstOffset: v.getBigInt64(p + 38),
    });
  return entries;
}
