import { crc32 as nativeCrc32, crc32c as nativeCrc32c } from '@node-rs/crc32';
import { describe, expect, it } from 'vitest';
import { crc32, crc32c, crc32cRange, crc32Range } from './crc.js';

describe('crc32 / crc32c', () => {
  it('known vectors', () => {
    const v = new TextEncoder().encode('123456789');
    expect(crc32(v)).toBe(0xcbf43926);
    expect(crc32c(v)).toBe(0xe3069283);
    expect(crc32(new Uint8Array(0))).toBe(0);
    expect(crc32c(new Uint8Array(0))).toBe(0);
  });

  it('the table loop for short inputs equals the native code, for every length, offset and seed', () => {
    const data = Buffer.alloc(4096);
    for (let i = 0; i < data.length; i++) data[i] = (i * 131 + (i >> 5) * 7 + 3) & 0xff;
    // A plain Uint8Array view at an odd byteOffset into a larger ArrayBuffer, as reader chunks are.
    const u = new Uint8Array(data.buffer, data.byteOffset + 1, data.length - 1);
    for (let len = 0; len <= 700; len++) {
      for (const start of [0, 1, 3, 8, 1001]) {
        for (const seed of [0, 0xdeadbeef]) {
          const view = u.subarray(start, start + len);
          const n32 = nativeCrc32(view, seed) >>> 0;
          const n32c = nativeCrc32c(view, seed) >>> 0;
          expect(crc32(view, seed)).toBe(n32);
          expect(crc32c(view, seed)).toBe(n32c);
          expect(crc32Range(u, start, start + len, seed)).toBe(n32);
          expect(crc32cRange(u, start, start + len, seed)).toBe(n32c);
        }
      }
    }
  });

  it('chains over split ranges like one call over the whole', () => {
    const data = Buffer.alloc(3000, 0x5a);
    for (let i = 0; i < data.length; i += 7) data[i] = i & 0xff;
    for (const cut of [0, 1, 100, 255, 256, 257, 2999, 3000]) {
      expect(crc32Range(data, cut, 3000, crc32Range(data, 0, cut))).toBe(crc32(data));
      expect(crc32cRange(data, cut, 3000, crc32cRange(data, 0, cut))).toBe(crc32c(data));
    }
  });
});
