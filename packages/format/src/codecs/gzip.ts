import zlib from 'node:zlib';
import { DecompressionError } from '../errors.js';
import { asBuffer, concatChunks, limitError, wrapDecompressError } from './util.js';

/**
 * Gzip as Kafka writes and reads it (docs/kafka-format.md §3.4): JDK GZIPOutputStream / GZIPInputStream, i.e.
 * RFC 1952 members with CRC32 + ISIZE trailers, concatenated members decoded, bytes after a
 * member that do not start another valid member header silently ignored.
 */

/** Kafka's default gzip level is -1, which zlib maps to 6. */
export const GZIP_DEFAULT_LEVEL = 6;

export function gzipCompress(data: Uint8Array, level: number): Buffer {
  return zlib.gzipSync(data, { level: level === -1 ? GZIP_DEFAULT_LEVEL : level });
}

export function gzipDecompress(data: Uint8Array, maxBytes: number): Buffer {
  const input = asBuffer(data);
  // Fast path: zlib decodes single and concatenated members; maxOutputLength makes it stop
  // (without allocating more) once the limit is passed.
  try {
    return zlib.gunzipSync(input, {
      maxOutputLength: Math.max(1, maxBytes),
      chunkSize: outputChunkSize(input, maxBytes),
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw limitError('gzip', maxBytes);
    // zlib rejects trailing garbage that the JDK ignores: decode member by member.
  }
  return gzipDecompressMembers(input, maxBytes);
}

/**
 * zlib's output chunk for one gunzip: the size the trailer declares (ISIZE, the last member's
 * uncompressed size mod 2^32) plus one byte, so a usual single-member payload comes out in one
 * buffer, with no 16 KiB chunks to concatenate (half the memory traffic of a batch's gunzip).
 * ISIZE is only a hint: bounded by the limit and by deflate's best ratio (1032:1), and a wrong
 * value only costs more chunks.
 */
function outputChunkSize(input: Buffer, maxBytes: number): number {
  const DEFAULT = 16 * 1024;
  if (input.length < 18) return DEFAULT;
  const isize = input.readUInt32LE(input.length - 4);
  const bound = Math.min(maxBytes, input.length * 1032);
  return Math.max(64, Math.min(isize, bound) + 1);
}

const FHCRC = 0x02;
const FEXTRA = 0x04;
const FNAME = 0x08;
const FCOMMENT = 0x10;

/** Returns the offset of the deflate data, or -1 if no valid member header starts at `pos`. */
function parseMemberHeader(b: Buffer, pos: number): number {
  if (b.length - pos < 10 || b[pos] !== 0x1f || b[pos + 1] !== 0x8b || b[pos + 2] !== 8) return -1;
  const flg = b[pos + 3];
  let p = pos + 10;
  if (flg & FEXTRA) {
    if (p + 2 > b.length) return -1;
    p += 2 + b.readUInt16LE(p);
  }
  for (const flag of [FNAME, FCOMMENT]) {
    if (flg & flag) {
      const zero = b.indexOf(0, p);
      if (zero < 0) return -1;
      p = zero + 1;
    }
  }
  if (flg & FHCRC) {
    if (p + 2 > b.length) return -1;
    // The JDK checks the header CRC16 (low half of the CRC-32 of the header bytes).
    if ((zlib.crc32(b.subarray(pos, p)) & 0xffff) !== b.readUInt16LE(p)) return -1;
    p += 2;
  }
  return p > b.length ? -1 : p;
}

function gzipDecompressMembers(b: Buffer, maxBytes: number): Buffer {
  if (b.length === 0) throw new DecompressionError('gzip: empty input', { position: 0 });
  const chunks: Buffer[] = [];
  let total = 0;
  let pos = 0;
  while (pos < b.length) {
    const body = parseMemberHeader(b, pos);
    if (body < 0) {
      if (pos === 0) throw new DecompressionError('gzip: not in gzip format', { position: 0 });
      break; // GZIPInputStream: what follows a member and is not a member header is ignored
    }
    let out: Buffer;
    let consumed: number;
    try {
      const r = zlib.inflateRawSync(b.subarray(body), {
        info: true,
        maxOutputLength: Math.max(1, maxBytes - total),
      }) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
      out = r.buffer;
      consumed = r.engine.bytesWritten;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw limitError('gzip', maxBytes);
      throw wrapDecompressError('gzip', err);
    }
    const trailer = body + consumed;
    if (trailer + 8 > b.length)
      throw new DecompressionError('gzip: truncated member trailer', { position: trailer });
    if (b.readUInt32LE(trailer) !== zlib.crc32(out) || b.readUInt32LE(trailer + 4) !== out.length % 2 ** 32) {
      throw new DecompressionError('gzip: corrupt member trailer (CRC32 or ISIZE)', { position: trailer });
    }
    total += out.length;
    if (total > maxBytes) throw limitError('gzip', maxBytes);
    chunks.push(out);
    pos = trailer + 8;
  }
  return concatChunks(chunks, total);
}
