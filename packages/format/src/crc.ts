import type * as NodeRsCrc32 from '@node-rs/crc32';
import { lazyNative } from './codecs/util.js';

/** @node-rs/crc32, dlopened at the first long input (start-up pays nothing for it). */
const nodeRs = lazyNative<typeof NodeRsCrc32>('@node-rs/crc32');

/**
 * CRC-32 and CRC-32C. Long inputs go to @node-rs/crc32 (SIMD/hardware, several GB/s); below
 * SMALL bytes a slicing-by-8 table loop here is faster, because a call into native code costs
 * about as much as checksumming 250 bytes in JS (measured in docs/benchmarks.md): a 100-byte
 * legacy message, or a small batch, is checked several times faster. Both give the same values
 * (crc.test.ts compares them over every length up to well past SMALL).
 */
const SMALL = 256;

function slicingTables(poly: number): Int32Array {
  const t = new Int32Array(256 * 8);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? poly ^ (c >>> 1) : c >>> 1;
    t[i] = c;
  }
  for (let i = 0; i < 256; i++) {
    for (let s = 1; s < 8; s++)
      t[s * 256 + i] = (t[(s - 1) * 256 + i] >>> 8) ^ t[t[(s - 1) * 256 + i] & 0xff];
  }
  return t;
}

/** Reflected polynomials: CRC-32 (IEEE 802.3, zlib) and CRC-32C (Castagnoli). */
const CRC32_TABLES = slicingTables(0xedb88320);
const CRC32C_TABLES = slicingTables(0x82f63b78);

// DataViews (over the whole ArrayBuffer) of the last two arrays checksummed: calls come over one
// or two arrays at a time (a read chunk, an output buffer). Keyed by the array itself: making a
// DataView, or even reading `.buffer` (a call into the runtime), costs more than checksumming 50
// bytes.
let arrayA: Uint8Array | undefined;
let bufferA: ArrayBufferLike = new ArrayBuffer(0);
let viewA: DataView = new DataView(bufferA);
let arrayB: Uint8Array | undefined;
let bufferB: ArrayBufferLike = bufferA;
let viewB: DataView = viewA;

function viewOf(buf: Uint8Array): DataView {
  if (buf === arrayA) return viewA;
  if (buf !== arrayB) {
    arrayB = buf;
    bufferB = buf.buffer;
    viewB = new DataView(bufferB);
  }
  const a = arrayA;
  const b = bufferA;
  const v = viewA;
  arrayA = arrayB;
  bufferA = bufferB;
  viewA = viewB;
  arrayB = a;
  bufferB = b;
  viewB = v;
  return viewA;
}

function small(t: Int32Array, buf: Uint8Array, start: number, end: number, initial: number): number {
  const v = viewOf(buf);
  let c = ~initial;
  let i = buf.byteOffset + start;
  const e = buf.byteOffset + end;
  for (; i + 8 <= e; i += 8) {
    c ^= v.getInt32(i, true);
    const d = v.getInt32(i + 4, true);
    c =
      t[1792 + (c & 0xff)] ^
      t[1536 + ((c >>> 8) & 0xff)] ^
      t[1280 + ((c >>> 16) & 0xff)] ^
      t[1024 + (c >>> 24)] ^
      t[768 + (d & 0xff)] ^
      t[512 + ((d >>> 8) & 0xff)] ^
      t[256 + ((d >>> 16) & 0xff)] ^
      t[d >>> 24];
  }
  for (; i < e; i++) c = t[(c ^ v.getUint8(i)) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32 (IEEE, zlib), the legacy message checksum (docs/kafka-format.md §1.2). Unsigned. */
export function crc32(data: Uint8Array, initial = 0): number {
  if (data.length < SMALL) return small(CRC32_TABLES, data, 0, data.length, initial);
  // @node-rs/crc32 takes any Uint8Array: no Buffer is made per call.
  return nodeRs().crc32(data, initial) >>> 0;
}

/** CRC-32C (Castagnoli), the v2 record batch checksum (docs/kafka-format.md §5.2). Unsigned. */
export function crc32c(data: Uint8Array, initial = 0): number {
  if (data.length < SMALL) return small(CRC32C_TABLES, data, 0, data.length, initial);
  return nodeRs().crc32c(data, initial) >>> 0;
}

/** A view of `buf[start, end)` for the native code (the DataView cache knows its ArrayBuffer). */
function range(buf: Uint8Array, start: number, end: number): Uint8Array {
  viewOf(buf);
  return new Uint8Array(bufferA, buf.byteOffset + start, end - start);
}

/** crc32 of `buf[start, end)`, without a subarray. */
export function crc32Range(buf: Uint8Array, start: number, end: number, initial = 0): number {
  if (end - start < SMALL) return small(CRC32_TABLES, buf, start, end, initial);
  return nodeRs().crc32(range(buf, start, end), initial) >>> 0;
}

/** crc32c of `buf[start, end)`, without a subarray. */
export function crc32cRange(buf: Uint8Array, start: number, end: number, initial = 0): number {
  if (end - start < SMALL) return small(CRC32C_TABLES, buf, start, end, initial);
  return nodeRs().crc32c(range(buf, start, end), initial) >>> 0;
}
