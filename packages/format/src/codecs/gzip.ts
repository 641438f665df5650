import zlib from 'node:zlib';
import { DecompressionError, SegliftError } from '../errors.js';
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
  return gzipDecompressMaybeInto(data, maxBytes, false);
}

/** Like gzipDecompress, into a reused buffer: valid until the next call. */
export function gzipDecompressTransient(data: Uint8Array, maxBytes: number): Buffer {
  return gzipDecompressMaybeInto(data, maxBytes, true);
}

function gzipDecompressMaybeInto(data: Uint8Array, maxBytes: number, transient: boolean): Buffer {
  const input = asBuffer(data);
  // Fast path: zlib decodes single and concatenated members, stopping once the limit is passed.
  const e = gunzipEngine();
  if (e !== undefined) {
    let out: Buffer | undefined;
    try {
      out = gunzipWith(e, input, maxBytes, transient);
    } catch (err) {
      if (err instanceof SegliftError) throw err;
      // A handle that throws rather than report (another Node): dropped, decoded as below.
      dropEngine(e);
    }
    if (out !== undefined) return out;
  } else {
    try {
      return zlib.gunzipSync(input, {
        maxOutputLength: Math.max(1, maxBytes),
        chunkSize: outputChunkSize(input, maxBytes),
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') throw limitError('gzip', maxBytes);
    }
  }
  // zlib rejects trailing garbage that the JDK ignores: decode member by member.
  return gzipDecompressMembers(input, maxBytes);
}

/**
 * node:zlib's native gunzip handle, as gunzipSync drives it, kept for every call: gunzipSync
 * builds a Transform stream, a zlib state (inflateInit and its 32 KiB window) and an output
 * buffer per call, which per batch is garbage a conversion thread's heap holds by tens of MiB
 * before a GC frees it (docs/benchmarks.md, "Scaling up"), and CPU. The handle and its write
 * state are node's own (`_handle`, `_writeState`: what gunzipSync itself uses); where a Node lacks
 * them this is undefined and gunzipSync runs as before.
 */
interface ZlibHandle {
  writeSync(
    flush: number,
    input: Uint8Array,
    inOff: number,
    inLen: number,
    out: Uint8Array,
    outOff: number,
    outLen: number,
  ): void;
  reset(): void;
  close(): void;
  onerror: (message: string, errno: number) => void;
}
interface GunzipEngine {
  handle: ZlibHandle;
  /** [avail_out, avail_in] after a write. */
  state: Uint32Array;
  /** Set by the handle's error callback during a write. */
  failed: boolean;
}

let engine: GunzipEngine | null | undefined;

function gunzipEngine(): GunzipEngine | undefined {
  if (engine === undefined) {
    const z = zlib.createGunzip() as unknown as { _handle?: Partial<ZlibHandle>; _writeState?: unknown };
    const handle = z._handle;
    const state = z._writeState;
    engine =
      typeof handle?.writeSync === 'function' &&
      typeof handle.reset === 'function' &&
      typeof handle.close === 'function' &&
      state instanceof Uint32Array &&
      state.length === 2
        ? { handle: handle as ZlibHandle, state, failed: false }
        : null;
    if (engine !== null) {
      const e = engine;
      // Called synchronously inside writeSync: the error itself is what the member-by-member
      // path reports (or it decodes what zlib refused).
      e.handle.onerror = () => {
        e.failed = true;
      };
    }
  }
  return engine ?? undefined;
}

/** A handle whose state is unknown after an error: closed, and a new one made at the next call. */
function dropEngine(e: GunzipEngine): void {
  if (engine === e) engine = undefined;
  try {
    e.handle.close();
  } catch {}
}

/** gunzipWith's transient output: reused, grown up to this (larger outputs get their own buffer). */
const SCRATCH_MAX = 8 * 1024 * 1024;
let scratch = Buffer.allocUnsafeSlow(0);

/** An output buffer of `size` bytes holding `keep` bytes of `from` (when given) at its start. */
function outputBuffer(size: number, transient: boolean, from?: Buffer, keep = 0): Buffer {
  let out: Buffer;
  if (transient && size <= SCRATCH_MAX) {
    if (scratch.length < size || (from !== undefined && from.buffer === scratch.buffer)) {
      const next = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX, Math.max(size, 2 * scratch.length)));
      if (from !== undefined) from.copy(next, 0, 0, keep);
      scratch = next;
      return next;
    }
    out = scratch;
  } else {
    out = Buffer.allocUnsafe(size);
  }
  if (from !== undefined) from.copy(out, 0, 0, keep);
  return out;
}

/**
 * One gunzip on the kept handle, as gunzipSync does it (Z_FINISH, output grown while zlib fills
 * it), or undefined where zlib refused the input: the handle is then dropped and the caller
 * decodes member by member.
 */
function gunzipWith(
  e: GunzipEngine,
  input: Buffer,
  maxBytes: number,
  transient: boolean,
): Buffer | undefined {
  // gunzipSync's maxOutputLength: at least 1.
  const limit = Math.max(1, maxBytes);
  let out = outputBuffer(outputChunkSize(input, maxBytes), transient);
  let produced = 0;
  let inOff = 0;
  let inLen = input.length;
  e.handle.reset();
  for (;;) {
    e.handle.writeSync(zlib.constants.Z_FINISH, input, inOff, inLen, out, produced, out.length - produced);
    if (e.failed) {
      dropEngine(e);
      return undefined;
    }
    const availOut = e.state[0];
    const availIn = e.state[1];
    produced = out.length - availOut;
    if (produced > limit) throw limitError('gzip', maxBytes);
    // Room left: zlib is done (the stream's end, or what it could decode of it).
    if (availOut !== 0) return out.subarray(0, produced);
    inOff += inLen - availIn;
    inLen = availIn;
    out = outputBuffer(Math.min(2 * out.length, limit + 1), transient, out, produced);
  }
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
