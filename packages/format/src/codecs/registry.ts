/**
 * The codec registry: every codec Kafka's 3-bit compression field names, once (docs/kafka-format.md
 * §3). Its id, its name, Kafka's level range and default (KIP-390), the lowest message format that
 * may carry it, and its compress/decompress. Everything else asks here: format's compress and
 * decompress, the names the settings accept (config's CODECS), legacy's "which codecs a magic 0/1
 * wrapper may use", the CLI's "is this id a codec at all". Adding a codec is one entry below and
 * its implementation file beside this one.
 */
import { GZIP_DEFAULT_LEVEL, gzipCompress, gzipDecompress, gzipDecompressTransient } from './gzip.js';
import { lz4Compress, lz4Decompress } from './lz4.js';
import { snappyCompress, snappyDecompress } from './snappy.js';
import { limitError } from './util.js';
import {
  ZSTD_DEFAULT_LEVEL,
  ZSTD_MAX_LEVEL,
  ZSTD_MIN_LEVEL,
  zstdCompress,
  zstdCompressTransient,
  zstdDecompress,
  zstdDecompressTransient,
} from './zstd.js';

export interface Codec {
  /** The value of the attributes' compression bits. */
  readonly id: number;
  /** Kafka's name (compression.type). */
  readonly name: string;
  /** Kafka's levels (KIP-390); absent for a codec without levels. `also`: accepted besides the range. */
  readonly levels?: {
    readonly min: number;
    readonly max: number;
    readonly default: number;
    readonly also?: readonly number[];
  };
  /** The lowest message format magic that may carry it (Kafka refuses zstd below v2). */
  readonly minMagic: number;
  /** `level` is a valid one (0 for a codec without levels); `transient`: the result may be reused. */
  compress(data: Uint8Array, level: number, magic: number, transient: boolean): Uint8Array;
  /** More than `maxBytes` of output -> DecompressionLimitError. */
  decompress(data: Uint8Array, magic: number, maxBytes: number, transient: boolean): Uint8Array;
}

/** By id: CODEC_REGISTRY[id].id === id. */
export const CODEC_REGISTRY = [
  {
    id: 0,
    name: 'none',
    minMagic: 0,
    compress: (data) => data,
    decompress: (data, _magic, maxBytes) => {
      if (data.length > maxBytes) throw limitError('none', maxBytes, data.length);
      return data;
    },
  },
  {
    id: 1,
    name: 'gzip',
    // -1 is zlib's default (6), which Kafka's gzip.level also accepts.
    levels: { min: 1, max: 9, default: GZIP_DEFAULT_LEVEL, also: [-1] },
    minMagic: 0,
    compress: (data, level) => gzipCompress(data, level),
    decompress: (data, _magic, maxBytes, transient) =>
      transient ? gzipDecompressTransient(data, maxBytes) : gzipDecompress(data, maxBytes),
  },
  {
    id: 2,
    name: 'snappy',
    minMagic: 0,
    compress: (data) => snappyCompress(data),
    decompress: (data, _magic, maxBytes) => snappyDecompress(data, maxBytes),
  },
  {
    id: 3,
    name: 'lz4',
    // lz4-napi has no levels: a level is validated and otherwise has no effect.
    levels: { min: 1, max: 17, default: 9 },
    minMagic: 0,
    compress: (data, _level, magic) => lz4Compress(data, magic),
    decompress: (data, magic, maxBytes) => lz4Decompress(data, magic, maxBytes),
  },
  {
    id: 4,
    name: 'zstd',
    levels: { min: ZSTD_MIN_LEVEL, max: ZSTD_MAX_LEVEL, default: ZSTD_DEFAULT_LEVEL },
    minMagic: 2,
    compress: (data, level, _magic, transient) =>
      transient ? zstdCompressTransient(data, level) : zstdCompress(data, level),
    decompress: (data, _magic, maxBytes, transient) =>
      transient ? zstdDecompressTransient(data, maxBytes) : zstdDecompress(data, maxBytes),
  },
] as const satisfies readonly Codec[];

type Registered = (typeof CODEC_REGISTRY)[number];
export type CodecName = Registered['name'];
export type CompressionId = Registered['id'];

/** Codec ids by Kafka's constant names (CompressionType.ZSTD = 4), derived from the registry. */
export const CompressionType = Object.fromEntries(
  CODEC_REGISTRY.map((c) => [c.name.toUpperCase(), c.id]),
) as { readonly [C in Registered as Uppercase<C['name']>]: C['id'] };

/** The codec with this id, or undefined for an id Kafka refuses (5-7, like CompressionType.forId). */
export function codecById(id: number): Codec | undefined {
  return Number.isInteger(id) ? (CODEC_REGISTRY as readonly Codec[])[id] : undefined;
}

/** The codec with this name (lower case, as Kafka names them), or undefined. */
export function codecByName(name: string): Codec | undefined {
  return (CODEC_REGISTRY as readonly Codec[]).find((c) => c.name === name);
}
