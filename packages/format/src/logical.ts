import { INT32_MAX } from './bytes.js';
import {
  batchTimestampType,
  type DecodeOptions,
  isControlBatch,
  isTransactional,
  iterateRecords,
  readRecordBatchHeader,
} from './record-batch.js';
import type { LogicalRecord, RecordHeader } from './types.js';

/**
 * DefaultRecordBatch.incrementSequence: sequences wrap from Int.MAX to 0, computed in Java int
 * arithmetic (so an odd negative delta behaves as Kafka's does).
 */
export function incrementSequence(sequence: number, increment: number): number {
  if (sequence > ((INT32_MAX - increment) | 0)) return (increment - (INT32_MAX - sequence) - 1) | 0;
  return (sequence + increment) | 0;
}

/**
 * The records of a v2 batch as a consumer sees them (docs/kafka-format.md §5.3): offset = baseOffset + offsetDelta;
 * timestamp = maxTimestamp for LogAppendTime batches, else baseTimestamp + timestampDelta (int64
 * wrap, as Java's long addition); sequence = baseSequence + offsetDelta wrapping at Int.MAX, or
 * -1 when the batch has no base sequence.
 */
export function* logicalRecordsOfBatch(
  batch: Uint8Array,
  opts: DecodeOptions = {},
): Generator<LogicalRecord, void, undefined> {
  const h = readRecordBatchHeader(batch, 0);
  const timestampType = batchTimestampType(h);
  const logAppendTime = timestampType === 'LogAppendTime';
  const transactional = isTransactional(h);
  const control = isControlBatch(h);
  for (const r of iterateRecords(batch, opts)) {
    const timestamp = logAppendTime
      ? h.maxTimestamp
      : BigInt.asIntN(64, h.baseTimestamp + BigInt(r.timestampDelta));
    yield {
      offset: h.baseOffset + BigInt(r.offsetDelta),
      timestamp,
      timestampType,
      key: r.key,
      value: r.value,
      headers: r.headers,
      producerId: h.producerId,
      producerEpoch: h.producerEpoch,
      sequence: h.baseSequence >= 0 ? incrementSequence(h.baseSequence, r.offsetDelta) : -1,
      isTransactional: transactional,
      isControl: control,
    };
  }
}

function bytesEqual(a: Uint8Array | null, b: Uint8Array | null): boolean {
  if (a === b) return true;
  if (a === null || b === null || a.length !== b.length) return false;
  // Long fields that are Buffers already (views of a decoded Buffer): memcmp, no allocation.
  if (a.length >= 48) {
    if (Buffer.isBuffer(a)) return a.equals(b);
    if (Buffer.isBuffer(b)) return b.equals(a);
  }
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function describeBytes(a: Uint8Array | null, b: Uint8Array | null): string {
  if (a === null || b === null)
    return `${a === null ? 'null' : `${a.length} bytes`} vs ${b === null ? 'null' : `${b.length} bytes`}`;
  if (a.length !== b.length) return `${a.length} bytes vs ${b.length} bytes`;
  let i = 0;
  while (a[i] === b[i]) i++;
  return `differ at byte ${i}`;
}

function headersDiff(a: RecordHeader[], b: RecordHeader[]): string | null {
  if (a.length !== b.length) return `headers: ${a.length} vs ${b.length} headers`;
  for (let i = 0; i < a.length; i++) {
    if (!bytesEqual(a[i].key, b[i].key)) return `header ${i} key: ${describeBytes(a[i].key, b[i].key)}`;
    if (!bytesEqual(a[i].value, b[i].value))
      return `header ${i} value: ${describeBytes(a[i].value, b[i].value)}`;
  }
  return null;
}

/** null when equal, else a short description of the first differing field. */
export function logicalRecordsEqual(a: LogicalRecord, b: LogicalRecord): string | null {
  if (a.offset !== b.offset) return `offset: ${a.offset} vs ${b.offset}`;
  if (a.timestamp !== b.timestamp) return `timestamp: ${a.timestamp} vs ${b.timestamp}`;
  if (a.timestampType !== b.timestampType) return `timestampType: ${a.timestampType} vs ${b.timestampType}`;
  if (!bytesEqual(a.key, b.key)) return `key: ${describeBytes(a.key, b.key)}`;
  if (!bytesEqual(a.value, b.value)) return `value: ${describeBytes(a.value, b.value)}`;
  const h = headersDiff(a.headers, b.headers);
  if (h !== null) return h;
  if (a.producerId !== b.producerId) return `producerId: ${a.producerId} vs ${b.producerId}`;
  if (a.producerEpoch !== b.producerEpoch) return `producerEpoch: ${a.producerEpoch} vs ${b.producerEpoch}`;
  if (a.sequence !== b.sequence) return `sequence: ${a.sequence} vs ${b.sequence}`;
  if (a.isTransactional !== b.isTransactional)
    return `isTransactional: ${a.isTransactional} vs ${b.isTransactional}`;
  if (a.isControl !== b.isControl) return `isControl: ${a.isControl} vs ${b.isControl}`;
  return null;
}
