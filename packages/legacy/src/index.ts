export {
  decodeLegacyRecords,
  iterateLegacyRecords,
  type LegacyIterationOptions,
  type LegacyRecord,
  logicalRecordsOfLegacyEntry,
  toLogicalRecord,
} from './deep.js';
export {
  type EncodeLegacyMessageInput,
  encodeLegacyEntry,
  encodeLegacyMessage,
  isLegacyCompressed,
  LEGACY_CODEC_MASK,
  LEGACY_RECORD_OVERHEAD_V0,
  LEGACY_RECORD_OVERHEAD_V1,
  LEGACY_TIMESTAMP_TYPE_MASK,
  type LegacyMessage,
  legacyCompression,
  legacyEntrySize,
  legacyMessageSize,
  legacyTimestampType,
  NO_TIMESTAMP,
  type ReadLegacyEntryOptions,
  readLegacyEntry,
} from './message.js';
export {
  DEFAULT_COALESCE_BYTES,
  DEFAULT_GROUPING,
  type Grouping,
  type OversizeBatch,
  Upconverter,
  type UpconverterOptions,
  type UpconverterStats,
} from './upconvert.js';
export {
  type EncodeCompressedWrapperInput,
  encodeCompressedWrapper,
  type WrapperInnerMessage,
} from './writer.js';
