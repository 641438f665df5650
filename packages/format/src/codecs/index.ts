import { InvalidArgumentError, UnknownCodecError, UnsupportedFormatError } from '../errors.js';
import { type CodecName, type CompressionId, CompressionType } from '../types.js';
import { GZIP_DEFAULT_LEVEL, gzipCompress, gzipDecompress } from './gzip.js';
import { lz4Compress, lz4Decompress } from './lz4.js';
import { snappyCompress, snappyDecompress } from './snappy.js';
import { limitError, wrapDecompressError } from './util.js';
import {
  ZSTD_DEFAULT_LEVEL,
  ZSTD_MAX_LEVEL,
  ZSTD_MIN_LEVEL,
  zstdCompress,
  zstdCompressTransient,
  zstdDecompress,
  zstdDecompressTransient,
} from './zstd.js';

/** Default cap on one batch's decompressed bytes: a corrupt or hostile batch cannot take the heap. */
export const DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES = 64 * 1024 * 1024;

const NAMES: readonly CodecName[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

export interface CompressOptions {
  /** Codec level; codecs without levels (none, snappy) ignore it. Defaults to Kafka's default. */
  level?: number;
  /** Message format magic of the entry the payload goes into (default 2). */
  magic?: number;
}

export interface DecompressOptions {
  magic: number;
  /** More decompressed output than this -> DecompressionLimitError. */
  maxBytes: number;
}

/** Codec ids 5-7 (and anything else) throw, like Kafka's CompressionType.forId (docs/kafka-format.md §3.6). */
function checkId(id: number): CompressionId {
  if (!Number.isInteger(id) || id < 0 || id >= NAMES.length) throw new UnknownCodecError(id);
  return id as CompressionId;
}

export function codecName(id: number): CodecName {
  return NAMES[checkId(id)];
}

export function codecId(name: CodecName): CompressionId {
  const id = NAMES.indexOf(name);
  if (id < 0) throw new InvalidArgumentError(`unknown codec name ${JSON.stringify(name)}`);
  return id as CompressionId;
}

/** Kafka's level ranges (KIP-390, docs/kafka-format.md §3.2-3.4): [min, max, default], or undefined without levels. */
function levelRange(id: CompressionId): [number, number, number] | undefined {
  switch (id) {
    case CompressionType.GZIP:
      return [1, 9, GZIP_DEFAULT_LEVEL];
    case CompressionType.LZ4:
      return [1, 17, 9];
    case CompressionType.ZSTD:
      return [ZSTD_MIN_LEVEL, ZSTD_MAX_LEVEL, ZSTD_DEFAULT_LEVEL];
    default:
      return undefined;
  }
}

/** Kafka's default level for the codec; undefined for none and snappy, which have no levels. */
export function defaultLevel(codecId: number): number | undefined {
  return levelRange(checkId(codecId))?.[2];
}

/**
 * Throws InvalidArgumentError unless `level` is one Kafka accepts for the codec: gzip 1..9 or -1
 * (zlib's default), lz4 1..17, zstd -131072..22. none and snappy have no levels.
 */
export function validateLevel(codecId: number, level: number): number {
  const id = checkId(codecId);
  const range = levelRange(id);
  if (range === undefined) throw new InvalidArgumentError(`codec ${NAMES[id]} has no compression levels`);
  const ok =
    Number.isInteger(level) && ((level >= range[0] && level <= range[1]) || (id === 1 && level === -1));
  if (!ok) {
    throw new InvalidArgumentError(`invalid ${NAMES[id]} level ${level}: expected ${range[0]}..${range[1]}`);
  }
  return level;
}

function checkZstdMagic(id: CompressionId, magic: number): void {
  if (id === CompressionType.ZSTD && magic < 2) {
    throw new UnsupportedFormatError(`zstd compression requires magic 2 (got magic ${magic})`);
  }
}

/**
 * Compresses a payload the way Kafka's writer for `magic` would frame it: gzip member, xerial
 * snappy stream, Kafka LZ4 frame (broken header checksum for magic 0), single zstd frame.
 * lz4-napi has no levels: an lz4 level is validated and otherwise has no effect.
 */
export function compress(codecId: number, data: Uint8Array, opts: CompressOptions = {}): Uint8Array {
  return compressImpl(codecId, data, opts, false);
}

/**
 * compress, but the result may live in a buffer the codec reuses, valid until its next call. For
 * callers that copy it at once (the batch encoders).
 */
export function compressTransient(codecId: number, data: Uint8Array, opts: CompressOptions = {}): Uint8Array {
  return compressImpl(codecId, data, opts, true);
}

function compressImpl(
  codecId: number,
  data: Uint8Array,
  opts: CompressOptions,
  transient: boolean,
): Uint8Array {
  const id = checkId(codecId);
  const magic = opts.magic ?? 2;
  checkZstdMagic(id, magic);
  const range = levelRange(id);
  const level = range === undefined ? 0 : opts.level === undefined ? range[2] : validateLevel(id, opts.level);
  switch (id) {
    case CompressionType.NONE:
      return data;
    case CompressionType.GZIP:
      return gzipCompress(data, level);
    case CompressionType.SNAPPY:
      return snappyCompress(data);
    case CompressionType.LZ4:
      return lz4Compress(data, magic);
    case CompressionType.ZSTD:
      return transient ? zstdCompressTransient(data, level) : zstdCompress(data, level);
  }
}

/**
 * Decompresses a payload as Kafka's reader for `magic` would. Corrupt input ->
 * DecompressionError; more than `maxBytes` of output -> DecompressionLimitError, raised before
 * the output is allocated where the format declares sizes (snappy, zstd), otherwise after at
 * most one block past the limit.
 */
export function decompress(codecId: number, data: Uint8Array, opts: DecompressOptions): Uint8Array {
  return decompressImpl(codecId, data, opts, false);
}

/** decompress into a buffer that may be reused by the next call (round-trip checks). */
export function decompressTransient(codecId: number, data: Uint8Array, opts: DecompressOptions): Uint8Array {
  return decompressImpl(codecId, data, opts, true);
}

function decompressImpl(
  codecId: number,
  data: Uint8Array,
  opts: DecompressOptions,
  transient: boolean,
): Uint8Array {
  const id = checkId(codecId);
  checkZstdMagic(id, opts.magic);
  const maxBytes = opts.maxBytes;
  if (!(maxBytes >= 0)) throw new InvalidArgumentError(`invalid maxBytes ${maxBytes}`);
  try {
    switch (id) {
      case CompressionType.NONE:
        if (data.length > maxBytes) throw limitError('none', maxBytes, data.length);
        return data;
      case CompressionType.GZIP:
        return gzipDecompress(data, maxBytes);
      case CompressionType.SNAPPY:
        return snappyDecompress(data, maxBytes);
      case CompressionType.LZ4:
        return lz4Decompress(data, opts.magic, maxBytes);
      case CompressionType.ZSTD:
        return transient ? zstdDecompressTransient(data, maxBytes) : zstdDecompress(data, maxBytes);
    }
  } catch (err) {
    // Never let a raw library error out: everything is typed.
    throw wrapDecompressError(NAMES[id], err);
  }
}
