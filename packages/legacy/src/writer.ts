/**
 * Writers of legacy data with the exact bytes Kafka's MemoryRecordsBuilder writes
 * (docs/kafka-format.md §2.1-2.3). For tests, samples and benchmarks: seglift itself never writes v0/v1.
 */
import { type CompressionId, compress, InvalidArgumentError } from '@seglift/format';
import { encodeLegacyEntry, LEGACY_TIMESTAMP_TYPE_MASK, NO_TIMESTAMP } from './message.js';

export interface WrapperInnerMessage {
  /** Absolute offset. */
  offset: bigint;
  /** v1 only. Default: the wrapper timestamp for LogAppendTime, else -1. */
  timestamp?: bigint;
  key: Uint8Array | null;
  value: Uint8Array | null;
  /** Inner magic; default the wrapper's. A different one reproduces KAFKA-4298 data. */
  magic?: 0 | 1;
  /** Inner attributes; default the timestamp type bit, as the builder writes it. */
  attributes?: number;
}

export interface EncodeCompressedWrapperInput {
  magic: 0 | 1;
  /** gzip, snappy or lz4 (1-3); zstd is refused for magic 0/1 like MemoryRecordsBuilder does. */
  codec: CompressionId;
  level?: number;
  /** v1 only. Default CreateTime. */
  timestampType?: 'CreateTime' | 'LogAppendTime';
  /** The LogAppendTime stamped on the wrapper (required for LogAppendTime). */
  wrapperTimestamp?: bigint;
  messages: WrapperInnerMessage[];
}

/**
 * One compressed wrapper entry. v1 inner offsets are relative to the first message, v0 inner
 * offsets absolute; the wrapper offset is the last inner absolute offset; the wrapper timestamp
 * is the max inner timestamp (CreateTime) or `wrapperTimestamp` (LogAppendTime).
 */
export function encodeCompressedWrapper(input: EncodeCompressedWrapperInput): Uint8Array {
  const { magic, codec, messages } = input;
  if (codec < 1 || codec > 3) {
    throw new InvalidArgumentError(`codec ${codec} cannot compress a magic ${magic} wrapper`);
  }
  if (messages.length === 0) throw new InvalidArgumentError('a wrapper needs at least one message');
  const logAppend = magic === 1 && input.timestampType === 'LogAppendTime';
  if (logAppend && input.wrapperTimestamp === undefined) {
    throw new InvalidArgumentError('LogAppendTime wrapper needs wrapperTimestamp');
  }
  const typeBit = logAppend ? LEGACY_TIMESTAMP_TYPE_MASK : 0;
  const first = messages[0].offset;
  let maxTimestamp = NO_TIMESTAMP;
  const entries: Uint8Array[] = [];
  let total = 0;
  for (const m of messages) {
    const innerMagic = m.magic ?? magic;
    const timestamp = m.timestamp ?? (logAppend ? input.wrapperTimestamp! : NO_TIMESTAMP);
    if (innerMagic === 1 && timestamp > maxTimestamp) maxTimestamp = timestamp;
    const e = encodeLegacyEntry(magic === 1 ? m.offset - first : m.offset, {
      magic: innerMagic,
      attributes: m.attributes ?? (innerMagic === 1 ? typeBit : 0),
      timestamp,
      key: m.key,
      value: m.value,
    });
    entries.push(e);
    total += e.length;
  }
  const stream = new Uint8Array(total);
  let p = 0;
  for (const e of entries) {
    stream.set(e, p);
    p += e.length;
  }
  const compressed = compress(codec, stream, { level: input.level, magic });
  return encodeLegacyEntry(messages[messages.length - 1].offset, {
    magic,
    attributes: codec | typeBit,
    timestamp: logAppend ? input.wrapperTimestamp : maxTimestamp,
    key: null,
    value: compressed,
  });
}
