/**
 * kafka-dump-log output lines (docs/kafka-format.md §8.2, DumpLogSegments.printBatchLevel and dumpLog), built
 * from plain views so the wording is tested independently of the decoders.
 */

export type TimestampTypeName = 'NoTimestampType' | 'CreateTime' | 'LogAppendTime';

export interface BatchView {
  position: number;
  /** Whole entry size (Kafka's sizeInBytes). */
  size: number;
  magic: number;
  lastOffset: bigint;
  timestampType: TimestampTypeName;
  maxTimestamp: bigint;
  /** Codec name as Kafka prints it; `unknown(N)` for ids 5-7, which Kafka cannot print. */
  compresscodec: string;
  /** Stored CRC (CRC-32C for v2, CRC-32 for legacy), unsigned. */
  crc: number;
  isValid: boolean;
  /** v2 only. */
  v2?: {
    baseOffset: bigint;
    count: number;
    baseSequence: number;
    lastSequence: number;
    producerId: bigint;
    producerEpoch: number;
    partitionLeaderEpoch: number;
    isTransactional: boolean;
    isControl: boolean;
    /** baseTimestamp when the delete-horizon attribute bit is set, else null. */
    deleteHorizonMs: bigint | null;
  };
}

export interface RecordView {
  offset: bigint;
  timestamp: bigint;
  keySize: number;
  valueSize: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  /** v2 only. */
  sequence?: number;
  headerKeys?: Uint8Array[];
  /** Legacy only: the message's own CRC-32 check and stored CRC. */
  legacy?: { isValid: boolean; crc: number };
  /** Control batches: what follows the metadata, e.g. `endTxnMarker: COMMIT coordinatorEpoch: 3`. */
  control?: string;
}

const utf8 = new TextDecoder('utf-8');

/** Kafka's StringDecoder: `new String(bytes, UTF_8)`, malformed input replaced. */
export function decodeUtf8(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

/** Java's OptionalLong.toString, which is what kafka-dump-log prints for deleteHorizonMs. */
function optionalLong(value: bigint | null): string {
  return value === null ? 'OptionalLong.empty' : `OptionalLong[${value}]`;
}

export function formatBatchLine(b: BatchView): string {
  const head = b.v2
    ? `baseOffset: ${b.v2.baseOffset} lastOffset: ${b.lastOffset} count: ${b.v2.count}` +
      ` baseSequence: ${b.v2.baseSequence} lastSequence: ${b.v2.lastSequence}` +
      ` producerId: ${b.v2.producerId} producerEpoch: ${b.v2.producerEpoch}` +
      ` partitionLeaderEpoch: ${b.v2.partitionLeaderEpoch} isTransactional: ${b.v2.isTransactional}` +
      ` isControl: ${b.v2.isControl} deleteHorizonMs: ${optionalLong(b.v2.deleteHorizonMs)}`
    : `offset: ${b.lastOffset}`;
  return (
    `${head} position: ${b.position} ${b.timestampType}: ${b.maxTimestamp} size: ${b.size}` +
    ` magic: ${b.magic} compresscodec: ${b.compresscodec} crc: ${b.crc >>> 0} isvalid: ${b.isValid}`
  );
}

export interface RecordLineOptions {
  printDataLog: boolean;
  skipRecordMetadata?: boolean;
}

/** A `| offset: ...` line (DumpLogSegments.dumpLog, deep iteration). */
export function formatRecordLine(
  batch: Pick<BatchView, 'timestampType' | 'v2'>,
  r: RecordView,
  opts: RecordLineOptions,
): string {
  let out = '';
  let prefix = '| ';
  if (!opts.skipRecordMetadata) {
    out += `${prefix}offset: ${r.offset} ${batch.timestampType}: ${r.timestamp} keySize: ${r.keySize} valueSize: ${r.valueSize}`;
    prefix = ' ';
    if (r.sequence !== undefined) {
      out += ` sequence: ${r.sequence} headerKeys: [${(r.headerKeys ?? []).map(decodeUtf8).join(',')}]`;
    }
    // The stray '}' after the crc is in Kafka's format string; scripts parse it, so it stays.
    if (r.legacy) out += ` isValid: ${r.legacy.isValid} crc: ${r.legacy.crc >>> 0}}`;
    if (r.control !== undefined) out += ` ${r.control}`;
  }
  if (opts.printDataLog && !batch.v2?.isControl) {
    if (r.key !== null) {
      out += `${prefix}key: ${decodeUtf8(r.key)}`;
      prefix = ' ';
    }
    if (r.value !== null) out += ` payload: ${decodeUtf8(r.value)}`;
  }
  return out;
}

/** Control record text (DumpLogSegments: ABORT/COMMIT markers, other types by name). */
export function formatControl(
  typeId: number,
  typeName: string,
  marker?: { coordinatorEpoch: number } | null,
): string {
  if ((typeId === 0 || typeId === 1) && marker) {
    return `endTxnMarker: ${typeId === 0 ? 'ABORT' : 'COMMIT'} coordinatorEpoch: ${marker.coordinatorEpoch}`;
  }
  return `controlType: ${typeName}(${typeId})`;
}

export function batchJson(file: string, b: BatchView): Record<string, unknown> {
  const o: Record<string, unknown> = { type: 'batch', file };
  if (b.v2) {
    o.baseOffset = b.v2.baseOffset.toString();
    o.lastOffset = b.lastOffset.toString();
    o.count = b.v2.count;
    o.baseSequence = b.v2.baseSequence;
    o.lastSequence = b.v2.lastSequence;
    o.producerId = b.v2.producerId.toString();
    o.producerEpoch = b.v2.producerEpoch;
    o.partitionLeaderEpoch = b.v2.partitionLeaderEpoch;
    o.isTransactional = b.v2.isTransactional;
    o.isControl = b.v2.isControl;
    o.deleteHorizonMs = b.v2.deleteHorizonMs === null ? null : b.v2.deleteHorizonMs.toString();
  } else {
    o.offset = b.lastOffset.toString();
  }
  o.position = b.position;
  o.timestampType = b.timestampType;
  o.maxTimestamp = b.maxTimestamp.toString();
  o.size = b.size;
  o.magic = b.magic;
  o.compresscodec = b.compresscodec;
  o.crc = b.crc >>> 0;
  o.isValid = b.isValid;
  return o;
}

export function recordJson(
  file: string,
  batch: BatchView,
  r: RecordView,
  printDataLog: boolean,
): Record<string, unknown> {
  const o: Record<string, unknown> = {
    type: 'record',
    file,
    batchPosition: batch.position,
    offset: r.offset.toString(),
    timestampType: batch.timestampType,
    timestamp: r.timestamp.toString(),
    keySize: r.keySize,
    valueSize: r.valueSize,
  };
  if (r.sequence !== undefined) {
    o.sequence = r.sequence;
    o.headerKeys = (r.headerKeys ?? []).map(decodeUtf8);
  }
  if (r.legacy) {
    o.isValid = r.legacy.isValid;
    o.crc = r.legacy.crc >>> 0;
  }
  if (r.control !== undefined) o.control = r.control;
  if (printDataLog && !batch.v2?.isControl) {
    o.key = r.key === null ? null : decodeUtf8(r.key);
    o.payload = r.value === null ? null : decodeUtf8(r.value);
  }
  return o;
}
