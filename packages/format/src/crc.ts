import { crc32 as nodeRsCrc32, crc32c as nodeRsCrc32c } from '@node-rs/crc32';

/** CRC-32 (IEEE, zlib), the legacy message checksum (ref §1.2). Unsigned. */
export function crc32(data: Uint8Array, initial = 0): number {
  return nodeRsCrc32(asBuffer(data), initial) >>> 0;
}

/** CRC-32C (Castagnoli), the v2 record batch checksum (ref §5.2). Unsigned. */
export function crc32c(data: Uint8Array, initial = 0): number {
  return nodeRsCrc32c(asBuffer(data), initial) >>> 0;
}

function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}
