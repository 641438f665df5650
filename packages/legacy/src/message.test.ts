import { CorruptRecordError, CrcMismatchError, TruncatedDataError } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import {
  encodeLegacyEntry,
  encodeLegacyMessage,
  legacyCompression,
  legacyEntrySize,
  legacyTimestampType,
  readLegacyEntry,
} from './message.js';
import { thrown } from './test-support/thrown.js';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const bytes = (s: string) => new Uint8Array(Buffer.from(s));

describe('legacy message bytes', () => {
  it('writes the empty v0 message with CRC 0xA7EC6803 (docs/kafka-format.md §1.2)', () => {
    const m = encodeLegacyMessage({ magic: 0, key: null, value: null });
    expect(hex(m)).toBe('a7ec68030000ffffffffffffffff');
  });

  it('writes the empty v1 message (timestamp 0) with CRC 0xCC2F79D9 (sarama emptyV1Message)', () => {
    const m = encodeLegacyMessage({ magic: 1, timestamp: 0n, key: null, value: null });
    expect(hex(m)).toBe('cc2f79d901000000000000000000ffffffffffffffff');
  });

  it('writes and reads a v1 entry field by field', () => {
    const e = encodeLegacyEntry(42n, {
      magic: 1,
      attributes: 8,
      timestamp: 1_600_000_000_123n,
      key: bytes('k'),
      value: bytes(''),
    });
    expect(e.length).toBe(legacyEntrySize(1, bytes('k'), bytes('')));
    expect(hex(e.subarray(0, 12))).toBe(`000000000000002a${(22 + 1).toString(16).padStart(8, '0')}`);
    const m = readLegacyEntry(e);
    expect(m.offset).toBe(42n);
    expect(m.magic).toBe(1);
    expect(m.attributes).toBe(8);
    expect(m.timestamp).toBe(1_600_000_000_123n);
    expect(hex(m.key!)).toBe('6b');
    expect(m.value).toEqual(new Uint8Array(0));
    expect(m.crc).toBe(new DataView(e.buffer).getUint32(12));
    expect(legacyTimestampType(m.magic, m.attributes)).toBe('LogAppendTime');
    expect(legacyTimestampType(0, 8)).toBe('NoTimestampType');
    expect(legacyTimestampType(1, 0)).toBe('CreateTime');
    expect(legacyCompression(0x0b)).toBe(3);
  });

  it('keeps null and empty apart; v0 timestamp is -1', () => {
    const m = readLegacyEntry(encodeLegacyEntry(7n, { magic: 0, key: bytes(''), value: null }));
    expect(m.key).toEqual(new Uint8Array(0));
    expect(m.value).toBeNull();
    expect(m.timestamp).toBe(-1n);
  });

  it('reads an entry at a position inside a larger buffer', () => {
    const a = encodeLegacyEntry(1n, { magic: 0, key: null, value: bytes('a') });
    const b = encodeLegacyEntry(2n, { magic: 1, timestamp: 5n, key: null, value: bytes('bb') });
    const buf = new Uint8Array(a.length + b.length + 3);
    buf.set(a, 0);
    buf.set(b, a.length);
    const m = readLegacyEntry(buf.subarray(0, a.length + b.length), a.length);
    expect(m.offset).toBe(2n);
    expect(Buffer.from(m.value!).toString()).toBe('bb');
  });

  it('rejects a CRC mismatch with both values', () => {
    const e = encodeLegacyEntry(3n, { magic: 0, key: null, value: bytes('x') });
    e[e.length - 1] ^= 1;
    const err = thrown(() => readLegacyEntry(e));
    expect(err).toBeInstanceOf(CrcMismatchError);
    expect((err as CrcMismatchError).expected).toBe(new DataView(e.buffer).getUint32(12));
    expect((err as CrcMismatchError).offset).toBe(3n);
    expect(readLegacyEntry(e, 0, { checkCrc: false }).value![0]).toBe('x'.charCodeAt(0) ^ 1);
  });

  it('rejects size < 14 as corrupt and a short buffer as truncated', () => {
    const e = encodeLegacyEntry(3n, { magic: 0, key: null, value: null });
    const small = e.slice();
    new DataView(small.buffer).setInt32(8, 13);
    expect(thrown(() => readLegacyEntry(small))).toBeInstanceOf(CorruptRecordError);
    expect(thrown(() => readLegacyEntry(e.subarray(0, e.length - 1)))).toBeInstanceOf(TruncatedDataError);
    expect(thrown(() => readLegacyEntry(e.subarray(0, 11)))).toBeInstanceOf(TruncatedDataError);
  });

  it('checks key and value lengths against the message size', () => {
    const e = encodeLegacyEntry(0n, { magic: 0, key: bytes('abc'), value: bytes('de') });
    const longKey = e.slice();
    new DataView(longKey.buffer).setInt32(18, 100);
    expect(thrown(() => readLegacyEntry(longKey, 0, { checkCrc: false }))).toBeInstanceOf(CorruptRecordError);
    const badKey = e.slice();
    new DataView(badKey.buffer).setInt32(18, -2);
    expect(thrown(() => readLegacyEntry(badKey, 0, { checkCrc: false }))).toBeInstanceOf(CorruptRecordError);
    const shortValue = e.slice();
    new DataView(shortValue.buffer).setInt32(25, 1);
    expect(thrown(() => readLegacyEntry(shortValue, 0, { checkCrc: false }))).toBeInstanceOf(
      CorruptRecordError,
    );
    const longValue = e.slice();
    new DataView(longValue.buffer).setInt32(25, 3);
    expect(thrown(() => readLegacyEntry(longValue, 0, { checkCrc: false }))).toBeInstanceOf(
      CorruptRecordError,
    );
  });

  it('rejects magic other than 0/1 and a v1 message shorter than 22 bytes', () => {
    const e = encodeLegacyEntry(0n, { magic: 0, key: null, value: null });
    const m2 = e.slice();
    m2[16] = 2;
    expect(thrown(() => readLegacyEntry(m2, 0, { checkCrc: false }))).toBeInstanceOf(CorruptRecordError);
    const v1short = e.slice();
    v1short[16] = 1;
    expect(thrown(() => readLegacyEntry(v1short, 0, { checkCrc: false }))).toBeInstanceOf(CorruptRecordError);
  });
});
