import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ByteReader,
  ByteWriter,
  sizeOfUnsignedVarint,
  sizeOfVarint,
  sizeOfVarlong,
  zigzagDecode32,
  zigzagDecode64,
  zigzagEncode32,
  zigzagEncode64,
} from './bytes.js';
import { CorruptRecordError, SegliftError } from './errors.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const bytes = (...b: number[]) => Uint8Array.from(b);

// Vectors from Kafka's ByteUtilsTest (clients/src/test/java/org/apache/kafka/common/utils).
const UNSIGNED_VARINTS: [number, number[]][] = [
  [0, [0x00]],
  [-1, [0xff, 0xff, 0xff, 0xff, 0x0f]],
  [1, [0x01]],
  [63, [0x3f]],
  [-64, [0xc0, 0xff, 0xff, 0xff, 0x0f]],
  [64, [0x40]],
  [8191, [0xff, 0x3f]],
  [-8192, [0x80, 0xc0, 0xff, 0xff, 0x0f]],
  [8192, [0x80, 0x40]],
  [-8193, [0xff, 0xbf, 0xff, 0xff, 0x0f]],
  [1048575, [0xff, 0xff, 0x3f]],
  [1048576, [0x80, 0x80, 0x40]],
  [2147483647, [0xff, 0xff, 0xff, 0xff, 0x07]],
  [-2147483648, [0x80, 0x80, 0x80, 0x80, 0x08]],
];

const VARINTS: [number, number[]][] = [
  [0, [0x00]],
  [-1, [0x01]],
  [1, [0x02]],
  [63, [0x7e]],
  [-64, [0x7f]],
  [64, [0x80, 0x01]],
  [-65, [0x81, 0x01]],
  [8191, [0xfe, 0x7f]],
  [-8192, [0xff, 0x7f]],
  [8192, [0x80, 0x80, 0x01]],
  [-8193, [0x81, 0x80, 0x01]],
  [1048575, [0xfe, 0xff, 0x7f]],
  [-1048576, [0xff, 0xff, 0x7f]],
  [1048576, [0x80, 0x80, 0x80, 0x01]],
  [-1048577, [0x81, 0x80, 0x80, 0x01]],
  [134217727, [0xfe, 0xff, 0xff, 0x7f]],
  [-134217728, [0xff, 0xff, 0xff, 0x7f]],
  [134217728, [0x80, 0x80, 0x80, 0x80, 0x01]],
  [-134217729, [0x81, 0x80, 0x80, 0x80, 0x01]],
  [2147483647, [0xfe, 0xff, 0xff, 0xff, 0x0f]],
  [-2147483648, [0xff, 0xff, 0xff, 0xff, 0x0f]],
];

const VARLONGS: [number | bigint, number[]][] = [
  [0, [0x00]],
  [-1, [0x01]],
  [1, [0x02]],
  [63, [0x7e]],
  [-64, [0x7f]],
  [64, [0x80, 0x01]],
  [-65, [0x81, 0x01]],
  [8191, [0xfe, 0x7f]],
  [-8192, [0xff, 0x7f]],
  [8192, [0x80, 0x80, 0x01]],
  [-8193, [0x81, 0x80, 0x01]],
  [1048575, [0xfe, 0xff, 0x7f]],
  [-1048576, [0xff, 0xff, 0x7f]],
  [1048576, [0x80, 0x80, 0x80, 0x01]],
  [-1048577, [0x81, 0x80, 0x80, 0x01]],
  [134217727, [0xfe, 0xff, 0xff, 0x7f]],
  [-134217728, [0xff, 0xff, 0xff, 0x7f]],
  [134217728, [0x80, 0x80, 0x80, 0x80, 0x01]],
  [-134217729, [0x81, 0x80, 0x80, 0x80, 0x01]],
  [2147483647, [0xfe, 0xff, 0xff, 0xff, 0x0f]],
  [-2147483648, [0xff, 0xff, 0xff, 0xff, 0x0f]],
  [17179869183, [0xfe, 0xff, 0xff, 0xff, 0x7f]],
  [-17179869184, [0xff, 0xff, 0xff, 0xff, 0x7f]],
  [17179869184, [0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [-17179869185, [0x81, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [2199023255551, [0xfe, 0xff, 0xff, 0xff, 0xff, 0x7f]],
  [-2199023255552, [0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]],
  [2199023255552, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [-2199023255553, [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [281474976710655, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]],
  [-281474976710656, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]],
  [281474976710656, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [-281474976710657, [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [36028797018963967n, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]],
  [-36028797018963968n, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]],
  [36028797018963968n, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [-36028797018963969n, [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]],
  [9223372036854775807n, [0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
  [-9223372036854775808n, [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]],
];

describe('varints (Kafka ByteUtilsTest vectors)', () => {
  it.each(UNSIGNED_VARINTS)('unsigned varint %d', (value, expected) => {
    const w = new ByteWriter();
    w.unsignedVarint(value);
    expect(hex(w.finish())).toBe(hex(bytes(...expected)));
    expect(sizeOfUnsignedVarint(value)).toBe(expected.length);
    const r = new ByteReader(bytes(...expected));
    expect(r.unsignedVarint()).toBe(value);
    expect(r.remaining).toBe(0);
  });

  it.each(VARINTS)('varint %d', (value, expected) => {
    const w = new ByteWriter();
    w.varint(value);
    expect(hex(w.finish())).toBe(hex(bytes(...expected)));
    expect(sizeOfVarint(value)).toBe(expected.length);
    const r = new ByteReader(bytes(...expected));
    expect(r.varint()).toBe(value);
    expect(r.pos).toBe(expected.length);
  });

  it.each(VARLONGS)('varlong %s', (value, expected) => {
    const w = new ByteWriter();
    w.varlong(value);
    expect(hex(w.finish())).toBe(hex(bytes(...expected)));
    expect(sizeOfVarlong(value)).toBe(expected.length);
    const r = new ByteReader(bytes(...expected));
    const back = r.varlong();
    // Safe integers come back as numbers, the rest as bigints.
    expect(back).toStrictEqual(
      typeof value === 'bigint' &&
        value >= BigInt(Number.MIN_SAFE_INTEGER) &&
        value <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(value)
        : value,
    );
    expect(r.pos).toBe(expected.length);
  });

  it('varlong is exact over int64: -2^63, 2^63-1, 2^53+1, 2^53, -(2^53+1)', () => {
    for (const v of [-(2n ** 63n), 2n ** 63n - 1n, 2n ** 53n + 1n, -(2n ** 53n) - 1n]) {
      const w = new ByteWriter();
      w.varlong(v);
      const r = new ByteReader(w.finish());
      expect(r.varlong()).toBe(v);
    }
    for (const v of [2 ** 53 - 1, -(2 ** 53 - 1)]) {
      const w = new ByteWriter();
      w.varlong(v);
      expect(new ByteReader(w.finish()).varlong()).toBe(v);
      const w2 = new ByteWriter();
      w2.varlong(BigInt(v));
      expect(hex(w2.finish())).toBe(hex(w.finish()));
    }
  });

  it('a number varlong and a bigint varlong write the same bytes', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (v) => {
        const a = new ByteWriter();
        a.varlong(v);
        const out = a.finish();
        expect(sizeOfVarlong(v)).toBe(out.length);
        const back = new ByteReader(out).varlong();
        expect(BigInt(back)).toBe(v);
        if (Number.isSafeInteger(Number(v)) && BigInt(Number(v)) === v) {
          const b = new ByteWriter();
          b.varlong(Number(v));
          expect(hex(b.finish())).toBe(hex(out));
          expect(sizeOfVarlong(Number(v))).toBe(out.length);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('varint round-trips every int32', () => {
    fc.assert(
      fc.property(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), (v) => {
        const w = new ByteWriter(1);
        w.varint(v);
        const out = w.finish();
        expect(out.length).toBe(sizeOfVarint(v));
        expect(new ByteReader(out).varint()).toBe(v);
      }),
      { numRuns: 2000 },
    );
  });

  it('zigzag helpers', () => {
    expect(zigzagEncode32(-1)).toBe(1);
    expect(zigzagEncode32(2147483647)).toBe(4294967294);
    expect(zigzagEncode32(-2147483648)).toBe(4294967295);
    expect(zigzagDecode32(4294967295)).toBe(-2147483648);
    expect(zigzagDecode32(4294967295 | 0)).toBe(-2147483648);
    expect(zigzagEncode64(-(2n ** 63n))).toBe(2n ** 64n - 1n);
    expect(zigzagDecode64(2n ** 64n - 2n)).toBe(2n ** 63n - 1n);
  });

  it('rejects a 6-byte varint and an 11-byte varlong (ByteUtilsTest invalid cases)', () => {
    const r = new ByteReader(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0x01));
    expect(() => r.varint()).toThrow(CorruptRecordError);
    const r2 = new ByteReader(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01));
    expect(() => r2.varlong()).toThrow(/varlong longer than 10 bytes/);
  });
});

describe('ByteReader bounds', () => {
  it('reading past the end is a CorruptRecordError with the position, never a RangeError', () => {
    const buf = bytes(1, 2, 3, 4, 5, 6, 7);
    const cases: [string, () => unknown][] = [
      ['int64', () => new ByteReader(buf).int64()],
      ['int32', () => new ByteReader(buf, 4).int32()],
      ['uint32', () => new ByteReader(buf, 5).uint32()],
      ['int16', () => new ByteReader(buf, 6).int16()],
      ['int8', () => new ByteReader(buf, 7).int8()],
      ['bytes', () => new ByteReader(buf, 2).bytes(6)],
      ['varint', () => new ByteReader(bytes(0x80, 0x80)).varint()],
      ['varlong', () => new ByteReader(bytes(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80)).varlong()],
      ['nullableBytes', () => new ByteReader(bytes(0x08, 1, 2)).nullableBytes()],
    ];
    for (const [name, f] of cases) {
      let err: unknown;
      try {
        f();
      } catch (e) {
        err = e;
      }
      expect(err, name).toBeInstanceOf(CorruptRecordError);
      expect((err as SegliftError).position, name).toBeTypeOf('number');
    }
    const r = new ByteReader(buf);
    r.skip(4);
    expect(() => r.int32()).toThrow(expect.objectContaining({ position: 4 }));
  });

  it('respects a sub-range end', () => {
    const r = new ByteReader(bytes(0, 0, 0, 1, 0, 0, 0, 2), 0, 4);
    expect(r.int32()).toBe(1);
    expect(() => r.int32()).toThrow(CorruptRecordError);
  });

  it('reads the typed integers big-endian; bytes are views; null vs empty', () => {
    const w = new ByteWriter(1);
    w.int8(-2)
      .int16(-300)
      .int32(-5)
      .uint32(0xfffffffe)
      .int64(-(2n ** 63n))
      .int64(2n ** 63n - 1n);
    w.nullableBytes(null).nullableBytes(new Uint8Array(0)).nullableBytes(bytes(9, 8));
    const out = w.finish();
    expect(hex(out.subarray(0, 11))).toBe('fefed4fffffffbfffffffe');
    const r = new ByteReader(out);
    expect([r.int8(), r.int16(), r.int32(), r.uint32(), r.int64(), r.int64()]).toEqual([
      -2,
      -300,
      -5,
      0xfffffffe,
      -(2n ** 63n),
      2n ** 63n - 1n,
    ]);
    expect(r.nullableBytes()).toBeNull();
    expect(r.nullableBytes()).toEqual(new Uint8Array(0));
    const v = r.nullableBytes()!;
    expect([...v]).toEqual([9, 8]);
    expect(v.buffer).toBe(out.buffer);
    expect(r.remaining).toBe(0);
  });

  it('rejects negative lengths other than -1', () => {
    expect(() => new ByteReader(bytes(0x03)).nullableBytes()).toThrow(/invalid length -2/);
  });

  it('ByteWriter rejects int64 out of range', () => {
    expect(() => new ByteWriter().int64(2n ** 63n)).toThrow(SegliftError);
    expect(() => new ByteWriter().varlong(2n ** 63n)).toThrow(SegliftError);
  });
});
