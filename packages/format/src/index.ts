export * from './bytes.js';
export {
  CODEC_REGISTRY,
  type Codec,
  type CompressOptions,
  codecById,
  codecByName,
  codecId,
  codecName,
  compress,
  compressTransient,
  DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
  type DecompressOptions,
  decompress,
  decompressTransient,
  defaultLevel,
  validateLevel,
} from './codecs/index.js';
export * from './control.js';
export * from './crc.js';
export * from './errors.js';
export * from './index-file.js';
export * from './logical.js';
export * from './producer-snapshot.js';
export * from './producer-state.js';
export * from './record.js';
export * from './record-batch.js';
export * from './types.js';
