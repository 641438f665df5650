import type * as Native from 'snappy';
import { DecompressionError } from '../errors.js';
import { asBuffer, concatChunks, lazyNative, limitError, wrapDecompressError } from './util.js';

const native = lazyNative<typeof Native>('snappy');

/**
 * Snappy as Kafka's Java client writes it: xerial snappy-java SnappyOutputStream framing
 * (docs/kafka-format.md §3.1), NOT Google's framing format. Reading is as lenient as SnappyInputStream: raw
 * unframed snappy (what sarama writes by default) and concatenated xerial streams are accepted.
 */

/** `82 'SNAPPY' 00`, then int32 BE version 1 and int32 BE minimum compatible version 1. */
export const XERIAL_HEADER = Uint8Array.of(
  0x82,
  0x53,
  0x4e,
  0x41,
  0x50,
  0x50,
  0x59,
  0x00,
  0,
  0,
  0,
  1,
  0,
  0,
  0,
  1,
);
const XERIAL_MAGIC_LENGTH = 8;
const XERIAL_HEADER_LENGTH = 16;
/** The first 4 magic bytes read as an int32 BE: a chunk length equal to it starts a new stream. */
const XERIAL_MAGIC_HEAD = 0x82534e41 | 0;
/** SnappyOutputStream's default block size: input bytes per raw snappy block. */
export const XERIAL_BLOCK_SIZE = 32 * 1024;

export function snappyCompress(data: Uint8Array): Buffer {
  const input = asBuffer(data);
  const parts: Buffer[] = [Buffer.from(XERIAL_HEADER)];
  let total = XERIAL_HEADER_LENGTH;
  for (let off = 0; off < input.length; off += XERIAL_BLOCK_SIZE) {
    const block = native().compressSync(input.subarray(off, Math.min(off + XERIAL_BLOCK_SIZE, input.length)));
    const len = Buffer.allocUnsafe(4);
    len.writeInt32BE(block.length, 0);
    parts.push(len, block);
    total += 4 + block.length;
  }
  return Buffer.concat(parts, total);
}

function hasXerialMagic(b: Uint8Array, pos: number): boolean {
  if (b.length - pos < XERIAL_MAGIC_LENGTH) return false;
  for (let i = 0; i < XERIAL_MAGIC_LENGTH; i++) if (b[pos + i] !== XERIAL_HEADER[i]) return false;
  return true;
}

/**
 * The uncompressed length a raw snappy block declares (its leading varint, at most 32 bits),
 * so a bomb is refused before anything is allocated.
 */
export function snappyDeclaredLength(block: Uint8Array, position = 0): number {
  let result = 0;
  for (let i = 0; i < 5; i++) {
    if (i >= block.length) break;
    const b = block[i];
    result += (b & 0x7f) * 2 ** (7 * i);
    if ((b & 0x80) === 0) {
      if (result > 0xffffffff) break;
      return result;
    }
  }
  throw new DecompressionError('snappy: invalid uncompressed length varint', { position });
}

function decodeRawBlock(block: Buffer, position: number, budget: number, maxBytes: number): Buffer {
  const declared = snappyDeclaredLength(block, position);
  if (declared > budget) throw limitError('snappy', maxBytes);
  let out: Buffer;
  try {
    out = native().uncompressSync(block) as Buffer;
  } catch (err) {
    throw wrapDecompressError('snappy', err).withContext({ position });
  }
  if (out.length !== declared) {
    throw new DecompressionError('snappy: block length differs from its declared length', { position });
  }
  return out;
}

export function snappyDecompress(data: Uint8Array, maxBytes: number): Buffer {
  const input = asBuffer(data);
  if (input.length === 0) throw new DecompressionError('snappy: empty input', { position: 0 });
  // SnappyInputStream.readHeader: shorter than a header, or no magic -> one raw block.
  if (input.length < XERIAL_HEADER_LENGTH || !hasXerialMagic(input, 0)) {
    return decodeRawBlock(input, 0, maxBytes, maxBytes);
  }
  // The version ints are not checked (RedPanda writes them little-endian and Java reads it).
  const chunks: Buffer[] = [];
  let total = 0;
  let pos = XERIAL_HEADER_LENGTH;
  // SnappyInputStream.hasNextChunk: fewer than 4 bytes left ends the stream quietly.
  while (input.length - pos >= 4) {
    const chunkLength = input.readInt32BE(pos);
    if (chunkLength === XERIAL_MAGIC_HEAD) {
      if (input.length - pos < XERIAL_HEADER_LENGTH) {
        throw new DecompressionError('snappy: insufficient header size in a concatenated block', {
          position: pos,
        });
      }
      if (!hasXerialMagic(input, pos)) break; // an invalid second header ends the stream
      pos += XERIAL_HEADER_LENGTH;
      continue;
    }
    if (chunkLength < 0) {
      throw new DecompressionError(`snappy: negative chunk size ${chunkLength}`, { position: pos });
    }
    const start = pos + 4;
    if (start + chunkLength > input.length) {
      throw new DecompressionError('snappy: truncated chunk', { position: pos });
    }
    const out = decodeRawBlock(input.subarray(start, start + chunkLength), start, maxBytes - total, maxBytes);
    total += out.length;
    chunks.push(out);
    pos = start + chunkLength;
  }
  return concatChunks(chunks, total);
}
