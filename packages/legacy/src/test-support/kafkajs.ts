/**
 * Test-only access to kafkajs's own protocol decoders (MIT, node_modules/kafkajs/src/protocol),
 * with the codecs of @seglift/testkit's reference implementations (see registerReferenceCodecs).
 */
import { createRequire } from 'node:module';
import { CompressionType, decompress } from '@seglift/format';
import { type KafkajsCompression, registerReferenceCodecs } from '@seglift/testkit';

const require = createRequire(import.meta.url);

export interface KafkajsDecoder {
  offset: number;
}
type DecoderCtor = new (buffer: Buffer) => KafkajsDecoder;

export interface KafkajsMessage {
  offset: string;
  size: number;
  crc: number;
  magicByte: number;
  attributes: number;
  timestamp?: string;
  key: Buffer | null;
  value: Buffer | null;
}

export interface KafkajsRecord {
  offset: string;
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, unknown>;
  attributes: number;
}

export interface KafkajsBatch {
  firstOffset: string;
  firstTimestamp: string;
  partitionLeaderEpoch: number;
  inTransaction: boolean;
  isControlBatch: boolean;
  lastOffsetDelta: number;
  producerId: string;
  producerEpoch: number;
  firstSequence: number;
  maxTimestamp: string;
  timestampType: number;
  records: KafkajsRecord[];
}

const Decoder = require('kafkajs/src/protocol/decoder') as DecoderCtor;
const messageSetDecoder = require('kafkajs/src/protocol/messageSet/decoder') as (
  d: KafkajsDecoder,
  size?: number,
) => Promise<KafkajsMessage[]>;
const recordBatchDecoder = require('kafkajs/src/protocol/recordBatch/v0/decoder') as (
  d: KafkajsDecoder,
) => Promise<KafkajsBatch>;
const compression = require('kafkajs/src/protocol/message/compression') as KafkajsCompression;

// Every payload kafkajs decompresses here is checked against the reference implementations
// (Debian's gzip, lz4 and zstd tools, python3-snappy) after each test: a kafkajs decode then
// checks our compression too, and expectations from legacy input do not rest on our codecs.
const LIMIT = 256 * 1024 * 1024;
registerReferenceCodecs(compression, (id, buffer) => {
  try {
    return Buffer.from(decompress(id, buffer, { magic: 2, maxBytes: LIMIT }));
  } catch (err) {
    // Kafka before 0.10 wrote LZ4 frames with a wrong header checksum (magic 0 wrappers).
    if (id !== CompressionType.LZ4) throw err;
    return Buffer.from(decompress(id, buffer, { magic: 0, maxBytes: LIMIT }));
  }
});

/** kafkajs's MessageSetDecoder over a legacy message set (deep: wrappers are decompressed). */
export function kafkajsDecodeMessageSet(bytes: Uint8Array): Promise<KafkajsMessage[]> {
  return messageSetDecoder(new Decoder(Buffer.from(bytes)), bytes.length);
}

/** kafkajs's v2 RecordBatch decoder over one batch. */
export function kafkajsDecodeRecordBatch(batch: Uint8Array): Promise<KafkajsBatch> {
  return recordBatchDecoder(new Decoder(Buffer.from(batch)));
}

/** kafkajs TimestampTypes: 0 CreateTime, 1 LogAppendTime. */
export const KAFKAJS_LOG_APPEND_TIME = 1;
