import type Zstd from 'zstd-napi/binding.js';
import { DecompressionError } from '../errors.js';
import { asBuffer, concatChunks, lazyNative, limitError, wrapDecompressError } from './util.js';

const native = lazyNative<typeof Zstd>('zstd-napi/binding.js');

/**
 * Zstd (docs/kafka-format.md §3.3): a standard frame, as zstd-jni's ZstdOutputStream writes and
 * ZstdInputStream reads (which also takes frames without a content size and concatenated
 * frames). Contexts are created once and reused: one per batch is measurably slow.
 */

export const ZSTD_MIN_LEVEL = -131072;
export const ZSTD_MAX_LEVEL = 22;
export const ZSTD_DEFAULT_LEVEL = 3;

let cctx: InstanceType<typeof Zstd.CCtx> | undefined;
/** The level the context holds: parameters survive compress2, so it is set only when it changes. */
let cctxLevel: number | undefined;
let dctx: InstanceType<typeof Zstd.DCtx> | undefined;
const SCRATCH_MAX = 8 * 1024 * 1024;
let scratch = Buffer.allocUnsafe(0);
/** Output chunk of the streaming path (grown up to this, never past the limit + 1). */
const STREAM_CHUNK = 1024 * 1024;

export function zstdCompress(data: Uint8Array, level: number): Buffer {
  return Buffer.from(zstdCompressTransient(data, level));
}

/** The frame in a reused buffer: valid until the next call (callers copy it where it goes). */
export function zstdCompressTransient(data: Uint8Array, level: number): Buffer {
  cctx ??= new (native().CCtx)();
  const bound = compressBound(data.length);
  let dst: Buffer;
  if (bound > SCRATCH_MAX) {
    dst = Buffer.allocUnsafe(bound);
  } else {
    if (scratch.length < bound)
      scratch = Buffer.allocUnsafe(Math.min(SCRATCH_MAX, Math.max(bound, 2 * scratch.length)));
    dst = scratch;
  }
  // Per call to native code ~0.2 us, a third of the cost of compressing a 100-byte batch: no
  // session reset (compress2 always starts a new frame, forgetting any unfinished one) and the
  // level set only when it changes.
  if (cctxLevel !== level) {
    cctxLevel = undefined;
    cctx.setParameter(native().CParameter.compressionLevel, level);
    cctxLevel = level;
  }
  // compress2 writes one frame with the content size in its header.
  const n = cctx.compress2(dst, data);
  return dst.subarray(0, n);
}

/** ZSTD_COMPRESSBOUND (zstd.h), in JS: one native call less per batch. */
export function compressBound(srcSize: number): number {
  const KB128 = 128 << 10;
  return srcSize + (srcSize >>> 8) + (srcSize < KB128 ? (KB128 - srcSize) >>> 11 : 0);
}

/** Sum of the declared content sizes of all frames, or null if any frame does not declare one. */
function declaredSize(input: Buffer): number | null {
  let total = 0;
  let frame = input;
  while (frame.length > 0) {
    const size = native().getFrameContentSize(frame);
    if (size === null) return null;
    total += size;
    frame = frame.subarray(native().findFrameCompressedSize(frame));
  }
  return total;
}

export function zstdDecompress(data: Uint8Array, maxBytes: number): Buffer {
  return zstdDecompressMaybeInto(data, maxBytes, false);
}

let decodeScratch = Buffer.allocUnsafe(0);

/** Like zstdDecompress, into a reused buffer when the frames declare their size: valid until the next call. */
export function zstdDecompressTransient(data: Uint8Array, maxBytes: number): Buffer {
  return zstdDecompressMaybeInto(data, maxBytes, true);
}

function zstdDecompressMaybeInto(data: Uint8Array, maxBytes: number, transient: boolean): Buffer {
  const input = asBuffer(data);
  if (input.length === 0) throw new DecompressionError('zstd: empty input', { position: 0 });
  dctx ??= new (native().DCtx)();
  let declared: number | null;
  try {
    declared = declaredSize(input);
  } catch (err) {
    throw wrapDecompressError('zstd', err);
  }
  if (declared !== null) {
    if (declared > maxBytes) throw limitError('zstd', maxBytes, declared);
    let out: Buffer;
    if (transient && declared <= SCRATCH_MAX) {
      if (decodeScratch.length < declared)
        decodeScratch = Buffer.allocUnsafe(
          Math.min(SCRATCH_MAX, Math.max(declared, 2 * decodeScratch.length)),
        );
      out = decodeScratch.subarray(0, declared);
    } else {
      out = Buffer.allocUnsafe(declared);
    }
    let n: number;
    try {
      n = dctx.decompress(out, input);
    } catch (err) {
      throw wrapDecompressError('zstd', err);
    }
    if (n !== declared) throw new DecompressionError(`zstd: decoded ${n} bytes, frames declare ${declared}`);
    return out;
  }
  // The one-shot path above starts every frame afresh; the streaming one continues a session,
  // which a previous failure may have left mid-frame.
  dctx.reset(native().ResetDirective.sessionOnly);
  return zstdDecompressStreaming(dctx, input, maxBytes);
}

/** Frames without a content size: decode in chunks with a running count against the limit. */
function zstdDecompressStreaming(d: InstanceType<typeof Zstd.DCtx>, input: Buffer, maxBytes: number): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  let src = input;
  let chunkSize = Math.max(native().dStreamOutSize(), Math.min(STREAM_CHUNK, input.length * 4));
  let hint = 1;
  for (;;) {
    // Room for one byte past the limit, so reaching it is told apart from exceeding it.
    const room = Math.min(chunkSize, maxBytes - total + 1);
    const dst = Buffer.allocUnsafe(room);
    let ret: number;
    let produced: number;
    let consumed: number;
    try {
      [ret, produced, consumed] = d.decompressStream(dst, src);
    } catch (err) {
      throw wrapDecompressError('zstd', err);
    }
    total += produced;
    if (total > maxBytes) throw limitError('zstd', maxBytes);
    if (produced > 0) chunks.push(produced === dst.length ? dst : dst.subarray(0, produced));
    src = src.subarray(consumed);
    hint = ret;
    if (src.length === 0 && produced < dst.length) break; // all input used, output drained
    if (produced === 0 && consumed === 0) break; // no progress possible
    chunkSize = Math.min(STREAM_CHUNK, chunkSize * 2);
  }
  if (hint !== 0 || src.length > 0) {
    throw new DecompressionError('zstd: truncated or trailing data after the last frame', {
      position: input.length - src.length,
    });
  }
  return concatChunks(chunks, total);
}
