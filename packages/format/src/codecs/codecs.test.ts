import zlib from 'node:zlib';
import { trackAllocations } from '@seglift/testkit';
import fc from 'fast-check';
import { compressSync as snappyRawCompress } from 'snappy';
import { describe, expect, it } from 'vitest';
import zstd from 'zstd-napi/binding.js';
import {
  DecompressionError,
  DecompressionLimitError,
  InvalidArgumentError,
  SegliftError,
  UnknownCodecError,
  UnsupportedFormatError,
} from '../errors.js';
import {
  codecId,
  codecName,
  compress,
  DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES,
  decompress,
  decompressTransient,
  defaultLevel,
  validateLevel,
} from './index.js';
import { lz4HeaderChecksum } from './lz4.js';
import { XERIAL_HEADER } from './snappy.js';
import { randomBytes, semiCompressible } from './test-support/data.js';
import { compressBound } from './zstd.js';

const MAX = DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES;
const MiB = 1024 * 1024;
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const dec = (id: number, data: Uint8Array, magic = 2, maxBytes = MAX) =>
  Buffer.from(decompress(id, data, { magic, maxBytes }));

describe('codec ids, names and levels', () => {
  it('maps ids and names both ways', () => {
    expect([0, 1, 2, 3, 4].map(codecName)).toEqual(['none', 'gzip', 'snappy', 'lz4', 'zstd']);
    expect(['none', 'gzip', 'snappy', 'lz4', 'zstd'].map((n) => codecId(n as never))).toEqual([
      0, 1, 2, 3, 4,
    ]);
    expect(() => codecId('brotli' as never)).toThrow(InvalidArgumentError);
    expect(DEFAULT_MAX_DECOMPRESSED_BATCH_BYTES).toBe(67108864);
  });

  it.each([5, 6, 7, 8, -1])('codec id %i -> UnknownCodecError everywhere', (id) => {
    expect(() => codecName(id)).toThrow(UnknownCodecError);
    expect(() => compress(id, Buffer.from('x'))).toThrow(UnknownCodecError);
    expect(() => decompress(id, Buffer.from('x'), { magic: 2, maxBytes: MAX })).toThrow(UnknownCodecError);
    expect(() => defaultLevel(id)).toThrow(UnknownCodecError);
  });

  it('has Kafka default levels and ranges', () => {
    expect([0, 1, 2, 3, 4].map(defaultLevel)).toEqual([undefined, 6, undefined, 9, 3]);
    expect(validateLevel(1, -1)).toBe(-1);
    expect(validateLevel(1, 9)).toBe(9);
    expect(validateLevel(3, 17)).toBe(17);
    expect(validateLevel(4, -131072)).toBe(-131072);
    expect(validateLevel(4, 22)).toBe(22);
    for (const [id, level] of [
      [1, 0],
      [1, 10],
      [3, 0],
      [3, 18],
      [4, 23],
      [4, -131073],
      [4, 1.5],
      [0, 1],
      [2, 1],
    ]) {
      expect(() => validateLevel(id, level), `${id}/${level}`).toThrow(InvalidArgumentError);
    }
    expect(() => compress(1, Buffer.from('x'), { level: 10 })).toThrow(InvalidArgumentError);
  });

  it('identity is codec 0, limited by maxBytes', () => {
    const data = Buffer.from('abc');
    expect(compress(0, data)).toBe(data);
    expect(decompress(0, data, { magic: 2, maxBytes: 3 })).toBe(data);
    expect(() => decompress(0, data, { magic: 2, maxBytes: 2 })).toThrow(DecompressionLimitError);
  });
});

describe('zstd needs magic 2', () => {
  it.each([0, 1])('magic %i -> UnsupportedFormatError', (magic) => {
    const good = compress(4, Buffer.from('hello'));
    expect(() => compress(4, Buffer.from('hello'), { magic })).toThrow(UnsupportedFormatError);
    expect(() => decompress(4, good, { magic, maxBytes: MAX })).toThrow(UnsupportedFormatError);
  });
});

describe('garbage and corruption give DecompressionError', () => {
  const garbage = Buffer.from('this is definitely not compressed data, not at all!');
  it.each([1, 2, 3, 4])('codec %i rejects garbage', (id) => {
    expect(() => dec(id, garbage)).toThrow(DecompressionError);
  });
  it.each([1, 3, 4])('codec %i rejects empty input', (id) => {
    expect(() => dec(id, Buffer.alloc(0))).toThrow(DecompressionError);
  });
  it.each([1, 2, 3, 4])('codec %i rejects truncated output of its own', (id) => {
    const c = Buffer.from(compress(id, semiCompressible(100_000)));
    expect(() => dec(id, c.subarray(0, c.length - 7))).toThrow(DecompressionError);
  });
  it('random corruption of valid payloads never escapes as an untyped error', () => {
    const payloads = [1, 2, 3, 4].map(
      (id) => [id, Buffer.from(compress(id, semiCompressible(20_000, id)))] as const,
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        (which, flips) => {
          const [id, original] = payloads[which];
          const c = Buffer.from(original);
          for (const [at, v] of flips) c[at % c.length] = v;
          try {
            dec(id, c, 2, 1 * MiB);
          } catch (err) {
            expect(err).toBeInstanceOf(SegliftError);
          }
        },
      ),
      { numRuns: 400, seed: 42 },
    );
  });
});

describe('decompression bombs -> DecompressionLimitError', () => {
  const zeros = Buffer.alloc(16 * MiB);
  it.each([1, 2, 3, 4])('codec %i: 16 MiB of zeros with a 1 MiB limit', (id) => {
    const c = compress(id, zeros, { level: id === 4 ? 1 : undefined });
    expect(c.length).toBeLessThan(1 * MiB);
    expect(() => dec(id, c, 2, 1 * MiB)).toThrow(DecompressionLimitError);
    // Exactly at the limit is fine.
    expect(dec(id, c, 2, 16 * MiB).length).toBe(16 * MiB);
  });
  it('snappy: a raw block declaring 4 GiB is refused from its varint alone', () => {
    const bomb = Buffer.from('ffffffff0f00000000', 'hex');
    expect(() => dec(2, bomb, 2, 1 * MiB)).toThrow(DecompressionLimitError);
  });
  it('zstd: a frame declaring more than the limit is refused before decoding', () => {
    const c = compress(4, Buffer.alloc(2 * MiB), { level: 1 });
    expect(zstd.getFrameContentSize(c)).toBe(2 * MiB);
    expect(() => dec(4, c, 2, 2 * MiB - 1)).toThrow(/2097152 bytes, more than the limit/);
  });
  it('zstd: a frame without content size is limited while streaming', () => {
    const c = zstdWithoutContentSize(Buffer.alloc(8 * MiB));
    expect(zstd.getFrameContentSize(c)).toBeNull();
    expect(() => dec(4, c, 2, 1 * MiB)).toThrow(DecompressionLimitError);
    expect(dec(4, c, 2, 8 * MiB).length).toBe(8 * MiB);
  });
  it('gzip: the limit also holds on the member-by-member path (trailing garbage)', () => {
    const c = Buffer.concat([zlib.gzipSync(Buffer.alloc(4 * MiB)), Buffer.from('junk')]);
    expect(() => dec(1, c, 2, 1 * MiB)).toThrow(DecompressionLimitError);
    expect(dec(1, c, 2, 4 * MiB).length).toBe(4 * MiB);
  });
});

function zstdWithoutContentSize(data: Buffer): Buffer {
  const cctx = new zstd.CCtx();
  cctx.setParameter(zstd.CParameter.contentSizeFlag, 0);
  const dst = Buffer.alloc(zstd.compressBound(data.length) + 64);
  const [ret, produced] = cctx.compressStream2(dst, data, zstd.EndDirective.end);
  expect(ret).toBe(0);
  return dst.subarray(0, produced);
}

describe('gzip (JDK GZIPInputStream semantics)', () => {
  const a = zlib.gzipSync(Buffer.from('hello'));
  const b = zlib.gzipSync(Buffer.from(' world'));
  it('reads concatenated members', () => {
    expect(dec(1, Buffer.concat([a, b])).toString()).toBe('hello world');
  });
  it('ignores trailing bytes that are not a member header', () => {
    expect(dec(1, Buffer.concat([a, Buffer.from('xyzxyzxyz')])).toString()).toBe('hello');
    expect(dec(1, Buffer.concat([a, b, Buffer.from([0x1f])])).toString()).toBe('hello world');
    expect(dec(1, Buffer.concat([a, Buffer.alloc(100)])).toString()).toBe('hello');
  });
  it('verifies the trailer CRC32', () => {
    const bad = Buffer.from(a);
    bad[bad.length - 8] ^= 1;
    expect(() => dec(1, bad)).toThrow(DecompressionError);
    expect(() => dec(1, Buffer.concat([bad, Buffer.from('junk')]))).toThrow(/CRC32 or ISIZE/);
  });
  it('sizes its output by the trailer ISIZE only as a bounded hint', () => {
    const data = semiCompressible(200_000);
    const gz = zlib.gzipSync(data);
    // One member: the exact bytes (read in one output chunk).
    expect(dec(1, gz).equals(Buffer.from(data))).toBe(true);
    // Two members: ISIZE is the last member's only, the whole stream still comes out.
    const two = Buffer.concat([gz, zlib.gzipSync(Buffer.from('tail'))]);
    expect(dec(1, two).equals(Buffer.concat([Buffer.from(data), Buffer.from('tail')]))).toBe(true);
    // A trailer declaring 4 GiB - 1 is a corrupt member, not a 4 GiB allocation.
    const lying = Buffer.from(a);
    lying.writeUInt32LE(0xffffffff, lying.length - 4);
    const { result, largest } = trackAllocations(() => {
      try {
        dec(1, lying);
      } catch (err) {
        return err;
      }
    });
    expect(result).toBeInstanceOf(DecompressionError);
    expect(largest).toBeLessThanOrEqual(a.length * 1032 + 1);
    // The limit still holds when the trailer declares less than the stream makes.
    const small = Buffer.from(gz);
    small.writeUInt32LE(10, small.length - 4);
    expect(() => dec(1, small, 2, 1000)).toThrow(DecompressionLimitError);
  });
  it('reads members with FNAME/FCOMMENT/FEXTRA/FHCRC headers', () => {
    const deflated = zlib.deflateRawSync(Buffer.from('named'));
    const header = Buffer.concat([
      Buffer.from([0x1f, 0x8b, 8, 0x04 | 0x08 | 0x10 | 0x02, 0, 0, 0, 0, 0, 255]),
      Buffer.from([3, 0, 1, 2, 3]),
      Buffer.from('file.txt\0comment\0', 'latin1'),
    ]);
    const hcrc = Buffer.alloc(2);
    hcrc.writeUInt16LE(zlib.crc32(header) & 0xffff);
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(zlib.crc32(Buffer.from('named')), 0);
    trailer.writeUInt32LE(5, 4);
    const member = Buffer.concat([header, hcrc, deflated, trailer]);
    expect(dec(1, Buffer.concat([member, Buffer.from('!!')])).toString()).toBe('named');
  });
  it('level -1 is zlib default 6', () => {
    const data = semiCompressible(50_000);
    expect(hex(compress(1, data, { level: -1 }))).toBe(hex(compress(1, data, { level: 6 })));
    expect(hex(compress(1, data))).toBe(hex(compress(1, data, { level: 6 })));
  });
});

describe('gzip on the kept zlib handle', () => {
  const data = Buffer.from(semiCompressible(200_000));
  const gz = zlib.gzipSync(data);
  const tr = (c: Uint8Array, maxBytes = MAX) => decompressTransient(1, c, { magic: 2, maxBytes });
  it("gives gunzipSync's bytes, one buffer reused from call to call", () => {
    const first = tr(gz);
    expect(Buffer.from(first).equals(data)).toBe(true);
    const second = tr(zlib.gzipSync(Buffer.from('hello')));
    expect(Buffer.from(second).toString()).toBe('hello');
    expect(second.buffer).toBe(first.buffer);
    // The same bytes as node's own gunzip for members, zero padding and a trailer that lies.
    const lying = Buffer.from(gz);
    lying.writeUInt32LE(10, lying.length - 4);
    for (const c of [
      Buffer.concat([gz, zlib.gzipSync(Buffer.from('tail'))]),
      Buffer.concat([gz, Buffer.alloc(100)]),
      zlib.gzipSync(Buffer.alloc(0)),
    ]) {
      expect(Buffer.from(tr(c)).equals(zlib.gunzipSync(c))).toBe(true);
      expect(dec(1, c).equals(zlib.gunzipSync(c))).toBe(true);
    }
    // ISIZE too small: the output grows until the stream ends, then the CRC32/ISIZE check fails.
    expect(() => tr(lying)).toThrow(/CRC32 or ISIZE|incorrect|unexpected end/);
  });
  it('an owned result is not overwritten by the next call', () => {
    const a = decompress(1, gz, { magic: 2, maxBytes: MAX });
    decompress(1, zlib.gzipSync(Buffer.from('other')), { magic: 2, maxBytes: MAX });
    tr(zlib.gzipSync(Buffer.from('other')));
    expect(Buffer.from(a).equals(data)).toBe(true);
  });
  it('holds the limit exactly, and decodes as before after zlib refused an input', () => {
    const zeros = zlib.gzipSync(Buffer.alloc(4 * MiB));
    expect(() => tr(zeros, 4 * MiB - 1)).toThrow(DecompressionLimitError);
    expect(tr(zeros, 4 * MiB).length).toBe(4 * MiB);
    const truncated = gz.subarray(0, gz.length - 20);
    expect(() => tr(truncated)).toThrow(DecompressionError);
    expect(Buffer.from(tr(gz)).equals(data)).toBe(true);
    expect(Buffer.from(tr(Buffer.concat([gz, Buffer.from('junk')]))).equals(data)).toBe(true);
    expect(Buffer.from(tr(gz)).equals(data)).toBe(true);
  });
});

describe('snappy (xerial framing)', () => {
  it('writes the 16-byte header and 32 KiB input blocks', () => {
    const data = semiCompressible(70_000);
    const c = Buffer.from(compress(2, data));
    expect(hex(c.subarray(0, 16))).toBe('82534e415050590000000001' + '00000001');
    let pos = 16;
    const declared: number[] = [];
    while (pos < c.length) {
      const len = c.readInt32BE(pos);
      declared.push(varint(c, pos + 4));
      pos += 4 + len;
    }
    expect(pos).toBe(c.length);
    expect(declared).toEqual([32768, 32768, 4464]);
    expect(hex(compress(2, Buffer.alloc(0)))).toBe(hex(XERIAL_HEADER));
    expect(dec(2, XERIAL_HEADER).length).toBe(0);
  });
  it('reads raw unframed snappy, also shorter than a header', () => {
    const data = semiCompressible(100_000);
    expect(dec(2, snappyRawCompress(data)).equals(data)).toBe(true);
    expect(dec(2, snappyRawCompress(Buffer.from('tiny'))).toString()).toBe('tiny');
  });
  it('reads concatenated xerial streams', () => {
    const x = compress(2, Buffer.from('one,'));
    const y = compress(2, Buffer.from('two'));
    expect(dec(2, Buffer.concat([x, y])).toString()).toBe('one,two');
  });
  it('ignores the version ints, ends on an invalid second header and on 1-3 trailing bytes', () => {
    const x = Buffer.from(compress(2, Buffer.from('abc')));
    x.writeInt32LE(1, 8); // little-endian versions, as RedPanda writes them
    expect(dec(2, x).toString()).toBe('abc');
    const bogus = Buffer.from(XERIAL_HEADER);
    bogus[5] = 0; // first 4 bytes still the magic head
    expect(dec(2, Buffer.concat([x, bogus, Buffer.from('whatever')])).toString()).toBe('abc');
    expect(dec(2, Buffer.concat([x, Buffer.from([1, 2, 3])])).toString()).toBe('abc');
  });
  it('rejects empty input, negative and truncated chunk lengths', () => {
    expect(() => dec(2, Buffer.alloc(0))).toThrow(DecompressionError);
    const neg = Buffer.concat([XERIAL_HEADER, Buffer.from('fffffff0', 'hex')]);
    expect(() => dec(2, neg)).toThrow(/negative chunk size/);
    const trunc = Buffer.concat([XERIAL_HEADER, Buffer.from('0000ffff00', 'hex')]);
    expect(() => dec(2, trunc)).toThrow(/truncated chunk/);
    const shortHeader = Buffer.concat([XERIAL_HEADER, XERIAL_HEADER.subarray(0, 10)]);
    expect(() => dec(2, shortHeader)).toThrow(/insufficient header/);
  });
  it('checks each block against the remaining budget', () => {
    const c = compress(2, Buffer.alloc(100_000));
    expect(() => dec(2, c, 2, 99_999)).toThrow(DecompressionLimitError);
    expect(dec(2, c, 2, 100_000).length).toBe(100_000);
  });
});

function varint(b: Uint8Array, pos: number): number {
  let r = 0;
  for (let i = 0; ; i++) {
    const x = b[pos + i];
    r += (x & 0x7f) * 2 ** (7 * i);
    if ((x & 0x80) === 0) return r;
  }
}

/** Builds an LZ4 frame by hand: header (with a fresh correct HC) + blocks + end mark. */
function lz4Frame(
  flg: number,
  bd: number,
  blocks: Buffer[],
  opts: { hc?: number; contentSize?: boolean } = {},
) {
  const header = Buffer.from([
    0x04,
    0x22,
    0x4d,
    0x18,
    flg,
    bd,
    ...(opts.contentSize ? [0, 0, 0, 0, 0, 0, 0, 0] : []),
  ]);
  const hc = opts.hc ?? lz4HeaderChecksum(header, header.length, false);
  return Buffer.concat([header, Buffer.from([hc]), ...blocks, Buffer.alloc(4)]);
}
function storedBlock(data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32LE((data.length | 0x80000000) >>> 0);
  return Buffer.concat([len, data]);
}

describe('lz4 (Kafka frame subset)', () => {
  it('computes the header checksums of docs/kafka-format.md §3.2/§9', () => {
    const d = Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x60, 0x40]);
    expect(lz4HeaderChecksum(d, 6, false)).toBe(0x82);
    expect(lz4HeaderChecksum(d, 6, true)).toBe(0x1a);
    expect(lz4HeaderChecksum(Buffer.from([0x04, 0x22, 0x4d, 0x18, 0x64, 0x70]), 6, false)).toBe(0xb9);
  });
  it('writes 04 22 4D 18 60 40 82 (magic 1/2) or ... 1A (magic 0), end mark, no checksum', () => {
    for (const magic of [1, 2]) {
      expect(hex(compress(3, Buffer.alloc(0), { magic }))).toBe('04224d1860408200000000');
    }
    expect(hex(compress(3, Buffer.alloc(0), { magic: 0 }))).toBe('04224d1860401a00000000');
    expect(hex(compress(3, Buffer.alloc(0)))).toBe('04224d1860408200000000');
    expect(hex(compress(3, Buffer.from('a'), { magic: 2 }))).toBe(
      '04224d1860408201000080' + '61' + '00000000',
    );
  });
  it('writes 64 KiB blocks, stored uncompressed when compression does not shrink them', () => {
    const data = randomBytes(150_000);
    const c = Buffer.from(compress(3, data));
    const lengths: string[] = [];
    let pos = 7;
    for (;;) {
      const w = c.readUInt32LE(pos);
      lengths.push(w.toString(16));
      if (w === 0) break;
      pos += 4 + (w & 0x7fffffff);
    }
    expect(lengths).toEqual(['80010000', '80010000', '800049f0', '0']);
    expect(pos + 4).toBe(c.length);
    expect(dec(3, c).equals(data)).toBe(true);
  });
  it('magic 0 accepts both the broken and the correct HC; magic 1/2 only the correct one', () => {
    const data = semiCompressible(10_000);
    const v0 = Buffer.from(compress(3, data, { magic: 0 }));
    const v2 = Buffer.from(compress(3, data, { magic: 2 }));
    expect(dec(3, v0, 0).equals(data)).toBe(true);
    expect(dec(3, v2, 0).equals(data)).toBe(true);
    expect(() => dec(3, v0, 1)).toThrow(/stream frame descriptor corrupted/);
    expect(() => dec(3, v0, 2)).toThrow(DecompressionError);
    const garbled = Buffer.from(v2);
    garbled[6] ^= 0xff;
    expect(dec(3, garbled, 0).equals(data)).toBe(true);
  });
  it.each([
    ['version 00', 0x20, 0x40, /unsupported frame version 0/],
    ['version 10', 0xa0, 0x40, /unsupported frame version 2/],
    ['dictionary id', 0x61, 0x40, /dictionary id/],
    ['reserved FLG bit', 0x62, 0x40, /reserved/],
    ['dependent blocks', 0x40, 0x40, /dependent block stream/],
    ['block size code 3', 0x60, 0x30, /block size code 3/],
    ['BD reserved bit', 0x60, 0x41, /BD reserved/],
    ['BD high bit', 0x60, 0xc0, /BD reserved/],
  ])('rejects %s', (_name, flg, bd, message) => {
    expect(() => dec(3, lz4Frame(flg, bd, [storedBlock(Buffer.from('x'))]))).toThrow(message);
  });
  it.each([
    ['40', 65536],
    ['50', 262144],
    ['60', 1048576],
    ['70', 4194304],
  ])('BD 0x%s: blocks up to %i bytes, longer ones rejected', (bdHex, max) => {
    const bd = Number.parseInt(bdHex, 16);
    const full = randomBytes(max);
    expect(dec(3, lz4Frame(0x60, bd, [storedBlock(full)])).equals(full)).toBe(true);
    const tooLong = Buffer.concat([storedBlock(full), Buffer.from('z')]);
    tooLong.writeUInt32LE(((max + 1) | 0x80000000) >>> 0, 0);
    expect(() => dec(3, lz4Frame(0x60, bd, [tooLong]))).toThrow(`block size ${max + 1} exceeded max: ${max}`);
  });
  it('skips the content size (inside the HC), verifies block checksums, reads the content checksum unverified', () => {
    const block = storedBlock(Buffer.from('payload'));
    expect(dec(3, lz4Frame(0x68, 0x40, [block], { contentSize: true })).toString()).toBe('payload');
    expect(() => dec(3, lz4Frame(0x68, 0x40, [block], { contentSize: true, hc: 0x82 }))).toThrow(/corrupted/);
    const sum = Buffer.alloc(4);
    sum.writeUInt32LE(0x48b5301a); // xxh32('payload'), python3-xxhash
    expect(dec(3, lz4Frame(0x70, 0x40, [Buffer.concat([block, sum])])).toString()).toBe('payload');
    sum[0] ^= 1;
    expect(() => dec(3, lz4Frame(0x70, 0x40, [Buffer.concat([block, sum])]))).toThrow(/block checksum/);
    const withContentChecksum = Buffer.concat([lz4Frame(0x64, 0x40, [block]), Buffer.from('dead', 'latin1')]);
    expect(dec(3, withContentChecksum).toString()).toBe('payload');
    expect(() => dec(3, lz4Frame(0x64, 0x40, [block]))).toThrow(/premature end/);
  });
  it('reads only the first frame; a frame without an end mark is an error', () => {
    const x = compress(3, Buffer.from('first'));
    const y = compress(3, Buffer.from('second'));
    expect(dec(3, Buffer.concat([x, y])).toString()).toBe('first');
    expect(() => dec(3, x.subarray(0, x.length - 4))).toThrow(/premature end/);
    expect(() => dec(3, x.subarray(0, 5))).toThrow(/premature end/);
  });
  it('stored-block output does not alias the input', () => {
    const c = Buffer.from(compress(3, Buffer.from('a')));
    const out = decompress(3, c, { magic: 2, maxBytes: MAX });
    c[11] = 0x62;
    expect(Buffer.from(out).toString()).toBe('a');
  });
});

describe('zstd', () => {
  it('writes one standard frame with its content size', () => {
    const data = semiCompressible(300_000);
    const c = compress(4, data);
    expect(hex(c.subarray(0, 4))).toBe('28b52ffd');
    expect(zstd.getFrameContentSize(c)).toBe(300_000);
    expect(zstd.findFrameCompressedSize(c)).toBe(c.length);
  });
  it('the reused context gives the bytes of a fresh one whatever level came before', () => {
    const data = semiCompressible(50_000);
    const fresh = (level: number) => {
      const c = new zstd.CCtx();
      c.setParameter(zstd.CParameter.compressionLevel, level);
      const out = Buffer.alloc(zstd.compressBound(data.length));
      return hex(out.subarray(0, c.compress2(out, data)));
    };
    for (const level of [1, 3, 19, 3, -5, 3, 3, 1])
      expect(hex(compress(4, data, { level }))).toBe(fresh(level));
  });
  it('computes ZSTD_COMPRESSBOUND as the library does', () => {
    for (const n of [0, 1, 100, 255, 256, 2047, 2048, 131071, 131072, 131073, 1 << 20, 64 << 20])
      expect(compressBound(n)).toBe(zstd.compressBound(n));
  });
  it('reads frames without content size and concatenated frames, rejects trailing garbage', () => {
    const data = semiCompressible(300_000);
    const unsized = zstdWithoutContentSize(data);
    expect(dec(4, unsized).equals(data)).toBe(true);
    const two = Buffer.concat([compress(4, Buffer.from('ab')), zstdWithoutContentSize(Buffer.from('cd'))]);
    expect(dec(4, two).toString()).toBe('abcd');
    const sized2 = Buffer.concat([compress(4, Buffer.from('ab')), compress(4, Buffer.from('cd'))]);
    expect(dec(4, sized2).toString()).toBe('abcd');
    expect(() => dec(4, Buffer.concat([compress(4, Buffer.from('ab')), Buffer.from('junk')]))).toThrow(
      DecompressionError,
    );
    expect(() => dec(4, Buffer.concat([unsized, Buffer.from('junk')]))).toThrow(DecompressionError);
    expect(() => dec(4, unsized.subarray(0, unsized.length - 3))).toThrow(DecompressionError);
  });
  it('the reused contexts recover after an error', () => {
    const c = compress(4, Buffer.from('still fine'), { level: 19 });
    const unsized = zstdWithoutContentSize(semiCompressible(200_000));
    expect(() => dec(4, unsized.subarray(0, 5000))).toThrow(DecompressionError);
    expect(dec(4, c).toString()).toBe('still fine');
    expect(dec(4, unsized).length).toBe(200_000);
  });
});

describe('round trip (property)', () => {
  const data = fc.oneof(
    fc.uint8Array({ maxLength: 3000 }),
    fc
      .tuple(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 5000 }))
      .map(([unit, n]) => Buffer.concat(Array.from({ length: n }, () => unit))),
  );
  const cases: [number, fc.Arbitrary<number | undefined>, number[]][] = [
    [0, fc.constant(undefined), [0, 1, 2]],
    [1, fc.oneof(fc.constant(undefined), fc.constant(-1), fc.integer({ min: 1, max: 9 })), [0, 1, 2]],
    [2, fc.constant(undefined), [0, 1, 2]],
    [3, fc.oneof(fc.constant(undefined), fc.integer({ min: 1, max: 17 })), [0, 1, 2]],
    [4, fc.oneof(fc.constant(undefined), fc.constant(-131072), fc.integer({ min: -20, max: 22 })), [2]],
  ];
  it.each(cases)('codec %i', (id, level, magics) => {
    fc.assert(
      fc.property(data, level, fc.constantFrom(...magics), (bytes, lvl, magic) => {
        const c = compress(id, bytes, { level: lvl, magic });
        const out = decompress(id, c, { magic, maxBytes: bytes.length });
        expect(Buffer.from(out).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 150, seed: id },
    );
  });
});
