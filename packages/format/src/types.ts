/** Codec ids of the 3-bit compression field, same in magic 0/1 and 2 (docs/kafka-format.md §3): the registry's. */
export { type CodecName, type CompressionId, CompressionType } from './codecs/registry.js';

/** Kafka's TimestampType names, as kafka-dump-log prints them. */
export type TimestampType = 'NoTimestampType' | 'CreateTime' | 'LogAppendTime';

/** A v2 record header: key is kept as raw bytes so invalid UTF-8 survives a round trip. */
export interface RecordHeader {
  key: Uint8Array;
  value: Uint8Array | null;
}

/** A v2 record as stored (docs/kafka-format.md §5.3): deltas relative to its batch. */
export interface Record {
  /** Unused by Kafka, written as 0; kept as read. */
  attributes: number;
  /** A number when it is a safe integer, else a bigint: no bigint per record on the hot path. */
  timestampDelta: number | bigint;
  offsetDelta: number;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: RecordHeader[];
}

/**
 * A record as a consumer sees it, format-independent: what verify compares between a source
 * segment and its rewrite, and what inspect prints. Legacy records map to it as a v2 reader
 * would see them after upconversion (docs/kafka-format.md §4.2): v0 -> CreateTime, timestamp -1; producer
 * fields -1; no headers.
 */
export interface LogicalRecord {
  offset: bigint;
  timestamp: bigint;
  timestampType: TimestampType;
  key: Uint8Array | null;
  value: Uint8Array | null;
  headers: RecordHeader[];
  producerId: bigint;
  producerEpoch: number;
  /** baseSequence + offsetDelta (wrapping at int32), or -1 when the batch has none. */
  sequence: number;
  isTransactional: boolean;
  isControl: boolean;
}
