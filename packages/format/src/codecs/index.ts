import { InvalidArgumentError, UnknownCodecError, UnsupportedFormatError } from '../errors.js';
import { type Codec, type CodecName, type CompressionId, codecById, codecByName } from './registry.js';
import { wrapDecompressError } from './util.js';

export { CODEC_REGISTRY, type Codec, codecById, codecByName } from './registry.js';

/** Default cap on one batch's decompressed bytes: a corrupt or hostile batch cannot take the heap. */
export const DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES = 64 * 1024 * 1024;

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
function checkId(id: number): Codec {
  const codec = codecById(id);
  if (codec === undefined) throw new UnknownCodecError(id);
  return codec;
}

export function codecName(id: number): CodecName {
  return checkId(id).name as CodecName;
}

export function codecId(name: CodecName): CompressionId {
  const codec = codecByName(name);
  if (codec === undefined) throw new InvalidArgumentError(`unknown codec name ${JSON.stringify(name)}`);
  return codec.id as CompressionId;
}

/** Kafka's default level for the codec; undefined for none and snappy, which have no levels. */
export function defaultLevel(codecId: number): number | undefined {
  return checkId(codecId).levels?.default;
}

/**
 * Throws InvalidArgumentError unless `level` is one Kafka accepts for the codec: gzip 1..9 or -1
 * (zlib's default), lz4 1..17, zstd -131072..22. none and snappy have no levels.
 */
export function validateLevel(codecId: number, level: number): number {
  const codec = checkId(codecId);
  const range = codec.levels;
  if (range === undefined) throw new InvalidArgumentError(`codec ${codec.name} has no compression levels`);
  const ok =
    Number.isInteger(level) &&
    ((level >= range.min && level <= range.max) || range.also?.includes(level) === true);
  if (!ok) {
    throw new InvalidArgumentError(
      `invalid ${codec.name} level ${level}: expected ${range.min}..${range.max}`,
    );
  }
  return level;
}

function checkMagic(codec: Codec, magic: number): void {
  if (magic < codec.minMagic) {
    throw new UnsupportedFormatError(
      `${codec.name} compression requires magic ${codec.minMagic} (got magic ${magic})`,
    );
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
  const codec = checkId(codecId);
  const magic = opts.magic ?? 2;
  checkMagic(codec, magic);
  const range = codec.levels;
  const level =
    range === undefined ? 0 : opts.level === undefined ? range.default : validateLevel(codec.id, opts.level);
  return codec.compress(data, level, magic, transient);
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
  const codec = checkId(codecId);
  checkMagic(codec, opts.magic);
  const maxBytes = opts.maxBytes;
  if (!(maxBytes >= 0)) throw new InvalidArgumentError(`invalid maxBytes ${maxBytes}`);
  try {
    return codec.decompress(data, opts.magic, maxBytes, transient);
  } catch (err) {
    // Never let a raw library error out: everything is typed.
    throw wrapDecompressError(codec.name, err);
  }
}
