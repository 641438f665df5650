/**
 * Test-only access to kafkajs's own protocol decoders (MIT, node_modules/kafkajs/src/protocol).
 * kafkajs ships only gzip; snappy and lz4 are registered here with @seglift/format's codecs,
 * so these comparisons check kafkajs's message parsing, not its decompression.
 */
import { createRequire } from 'node:module';
import { CompressionType, decompress } from '@seglift/format';

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
const { Codecs } = require('kafkajs/src/protocol/message/compression') as {
  Codecs: Record<number, () => unknown>;
};

const LIMIT = 256 * 1024 * 1024;
for (const id of [CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]) {
  const codec = {
    async compress(): Promise<Buffer> {
      throw new Error('not used');
    },
    async decompress(buffer: Buffer): Promise<Buffer> {
      return Buffer.from(decompress(id, buffer, { magic: 2, maxBytes: LIMIT }));
    },
  };
  Codecs[id] = () => codec;
}

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
