import type * as Native from 'lz4-napi';
import { DecompressionError } from '../errors.js';
import { asBuffer, concatChunks, lazyNative, limitError, wrapDecompressError } from './util.js';
import { xxh32 } from './xxh32.js';

const native = lazyNative<typeof Native>('lz4-napi');

/**
 * Kafka's LZ4 frame subset (docs/kafka-format.md §3.2; Kafka's Lz4BlockOutputStream / Lz4BlockInputStream).
 * The frame is ours: lz4-napi only does the raw blocks. Its frame encoder picks the block size
 * from the input (BD 0x50 for 200 KB), and its decoder would reject the broken v0 header
 * checksum and has no output limit.
 */

export const LZ4_FRAME_MAGIC = 0x184d2204;
/** Version 01, independent blocks, no block checksum, no content size or checksum. */
export const LZ4_FLG = 0x60;
/** Block maximum size code 4: 64 KiB. */
export const LZ4_BD = 0x40;
const LZ4_BLOCK_SIZE = 64 * 1024;
const INCOMPRESSIBLE = 0x80000000;

/**
 * The header checksum byte: second byte of XXH32 (seed 0) of the descriptor. KAFKA-3160: the
 * original implementation hashed from the magic number on; magic 0 still writes that (docs/kafka-format.md §3.2).
 */
export function lz4HeaderChecksum(frame: Uint8Array, descriptorEnd: number, broken: boolean): number {
  return (xxh32(frame, broken ? 0 : 4, descriptorEnd, 0) >>> 8) & 0xff;
}

/** Reused across calls: the output of compress and the size-prefixed input block of decompress. */
const SCRATCH_MAX = 8 * 1024 * 1024;
let scratch = Buffer.allocUnsafe(0);
let blockScratch = Buffer.allocUnsafe(0);

export function lz4Compress(data: Uint8Array, magic: number): Buffer {
  const input = asBuffer(data);
  const blocks = Math.ceil(input.length / LZ4_BLOCK_SIZE);
  // Worst case: every block stored uncompressed.
  const bound = 7 + input.length + 4 * blocks + 4;
  let out: Buffer;
  if (bound > SCRATCH_MAX) {
    out = Buffer.allocUnsafe(bound);
  } else {
    if (scratch.length < bound)
      scratch = Buffer.allocUnsafe(Math.min(SCRATCH_MAX, Math.max(bound, 2 * scratch.length)));
    out = scratch;
  }
  out.writeUInt32LE(LZ4_FRAME_MAGIC, 0);
  out[4] = LZ4_FLG;
  out[5] = LZ4_BD;
  out[6] = lz4HeaderChecksum(out, 6, magic === 0);
  let pos = 7;
  for (let off = 0; off < input.length; off += LZ4_BLOCK_SIZE) {
    const chunk = input.subarray(off, Math.min(off + LZ4_BLOCK_SIZE, input.length));
    // lz4-napi's compressSync prepends the uncompressed size as uint32 LE: skip it.
    const compressed = native().compressSync(chunk);
    const blockLength = compressed.length - 4;
    if (blockLength <= 0 || blockLength >= chunk.length) {
      out.writeUInt32LE((chunk.length | INCOMPRESSIBLE) >>> 0, pos);
      chunk.copy(out, pos + 4);
      pos += 4 + chunk.length;
    } else {
      out.writeUInt32LE(blockLength, pos);
      compressed.copy(out, pos + 4, 4);
      pos += 4 + blockLength;
    }
  }
  out.writeUInt32LE(0, pos); // end mark; no content checksum
  pos += 4;
  return Buffer.from(out.subarray(0, pos));
}

function fail(detail: string, position: number): never {
  throw new DecompressionError(`lz4: ${detail}`, { position });
}

/** Decodes the first frame only (what Lz4BlockInputStream does); bytes after it are ignored. */
export function lz4Decompress(data: Uint8Array, magic: number, maxBytes: number): Buffer {
  const b = asBuffer(data);
  if (b.length < 6) fail('premature end of stream', 0);
  if (b.readUInt32LE(0) !== LZ4_FRAME_MAGIC) fail('stream unsupported (invalid magic bytes)', 0);
  const flg = b[4];
  const bd = b[5];
  if ((flg & 0x03) !== 0) fail('FLG reserved bits or dictionary id set', 4);
  const contentChecksum = (flg & 0x04) !== 0;
  const contentSize = (flg & 0x08) !== 0;
  const blockChecksum = (flg & 0x10) !== 0;
  if ((flg & 0x20) === 0) fail('dependent block stream is unsupported', 4);
  if (flg >>> 6 !== 1) fail(`unsupported frame version ${flg >>> 6}`, 4);
  if ((bd & 0x8f) !== 0) fail('BD reserved bits set', 5);
  const sizeCode = (bd >>> 4) & 0x07;
  if (sizeCode < 4) fail(`unsupported block size code ${sizeCode}`, 5);
  const maxBlockSize = 1 << (8 + 2 * sizeCode);
  let pos = 6;
  if (contentSize) {
    // Skipped, but part of the header checksum.
    if (b.length - pos < 8) fail('premature end of stream', pos);
    pos += 8;
  }
  if (b.length - pos < 1) fail('premature end of stream', pos);
  // Magic 0 ignores the header checksum (so both the broken and the correct one pass).
  if (magic !== 0 && lz4HeaderChecksum(b, pos, false) !== b[pos])
    fail('stream frame descriptor corrupted', pos);
  pos++;

  // lz4-napi's uncompressSync wants a uint32 LE size prefix: we give the declared maximum, so a
  // block can never decode to more than that (lz4_flex errors instead).
  if (blockScratch.length < 4 + maxBlockSize) blockScratch = Buffer.allocUnsafe(4 + maxBlockSize);
  const prefixed = blockScratch;
  prefixed.writeUInt32LE(maxBlockSize, 0);
  const chunks: Buffer[] = [];
  let total = 0;
  let anyStored = false;
  for (;;) {
    if (b.length - pos < 4) fail('premature end of stream', pos);
    const word = b.readUInt32LE(pos);
    const stored = (word & INCOMPRESSIBLE) !== 0;
    const blockSize = word & 0x7fffffff;
    if (blockSize === 0) {
      pos += 4;
      // Content checksum: read, not verified (Lz4BlockInputStream).
      if (contentChecksum && b.length - pos < 4) fail('premature end of stream', pos);
      break;
    }
    if (blockSize > maxBlockSize) fail(`block size ${blockSize} exceeded max: ${maxBlockSize}`, pos);
    const start = pos + 4;
    const end = start + blockSize;
    if (end + (blockChecksum ? 4 : 0) > b.length) fail('premature end of stream', pos);
    if (blockChecksum && xxh32(b, start, end, 0) !== b.readUInt32LE(end))
      fail('block checksum mismatch', end);
    let out: Buffer;
    if (stored) {
      if (total + blockSize > maxBytes) throw limitError('lz4', maxBytes);
      out = b.subarray(start, end);
      anyStored = true;
    } else {
      b.copy(prefixed, 4, start, end);
      try {
        out = native().uncompressSync(prefixed.subarray(0, 4 + blockSize));
      } catch (err) {
        throw wrapDecompressError('lz4', err).withContext({ position: start });
      }
      if (total + out.length > maxBytes) throw limitError('lz4', maxBytes);
    }
    chunks.push(out);
    total += out.length;
    pos = end + (blockChecksum ? 4 : 0);
  }
  // Stored blocks are views of the input: copy, so the result never aliases the caller's bytes.
  // Stored blocks are views of the input: copy them, so the result never aliases the caller's bytes.
  return anyStored ? Buffer.concat(chunks, total) : concatChunks(chunks, total);
}
