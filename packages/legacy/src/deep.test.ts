import {
  CompressionType,
  CorruptRecordError,
  CrcMismatchError,
  compress,
  DecompressionLimitError,
  UnknownCodecError,
  UnsupportedFormatError,
} from '@seglift/format';
import { describe, expect, it } from 'vitest';
import { decodeLegacyRecords, iterateLegacyRecords, logicalRecordsOfLegacyEntry } from './deep.js';
import { encodeLegacyEntry, readLegacyEntry } from './message.js';
import { thrown } from './test-support/thrown.js';
import { encodeCompressedWrapper } from './writer.js';

const bytes = (s: string) => new Uint8Array(Buffer.from(s));
const str = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());
const concat = (parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));
const { GZIP, SNAPPY, LZ4 } = CompressionType;

/** A wrapper built by hand around an inner message-set stream (offsets written as given). */
function wrapper(
  offset: bigint,
  magic: 0 | 1,
  codec: number,
  stream: Uint8Array,
  timestamp = -1n,
  typeBit = 0,
) {
  return encodeLegacyEntry(offset, {
    magic,
    attributes: codec | typeBit,
    timestamp,
    key: null,
    value: compress(codec, stream, { magic }),
  });
}
const inner = (offset: bigint, magic: 0 | 1, value: string, timestamp = -1n, attributes = 0) =>
  encodeLegacyEntry(offset, { magic, attributes, timestamp, key: null, value: bytes(value) });

/** Message bodies (crc onward) from IBM/sarama message_test.go, which sarama's encoder built. */
const SARAMA = {
  bulkGzipV0: [
    139, 160, 63, 141, 0, 1, 255, 255, 255, 255, 0, 0, 0, 0x27, 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0, 99, 96,
    128, 3, 190, 202, 112, 143, 7, 12, 12, 255, 129, 0, 33, 200, 192, 136, 41, 3, 0, 199, 226, 155, 70, 52, 0,
    0, 0,
  ],
  bulkSnappyV0: [
    180, 47, 53, 209, 0, 2, 255, 255, 255, 255, 0, 0, 0, 42, 130, 83, 78, 65, 80, 80, 89, 0, 0, 0, 0, 1, 0, 0,
    0, 1, 0, 0, 0, 22, 52, 0, 0, 25, 1, 16, 14, 227, 138, 104, 118, 25, 15, 13, 1, 8, 1, 0, 0, 62, 26, 0,
  ],
  // v1 LZ4 wrapper (frame with content checksum, HC 0xB9) holding two v0 messages.
  bulkLz4V1: [
    246, 12, 188, 129, 1, 3, 255, 255, 249, 209, 212, 181, 73, 201, 255, 255, 255, 255, 0, 0, 0, 0x47, 4,
    0x22, 0x4d, 0x18, 100, 112, 185, 52, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 121, 87, 72, 224, 0,
    0, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 14, 121, 87, 72, 224, 0, 0, 255, 255,
    255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 71, 129, 23, 111,
  ],
};
function entryOf(offset: bigint, body: number[]): Uint8Array {
  const b = new Uint8Array(12 + body.length);
  const v = new DataView(b.buffer);
  v.setBigInt64(0, offset);
  v.setInt32(8, body.length);
  b.set(body, 12);
  return b;
}

describe('deep iteration of compressed wrappers', () => {
  it('v1 wrapper: relative inner offsets, wrapper offset = last absolute', () => {
    const e = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [
        { offset: 100n, timestamp: 5n, key: bytes('a'), value: bytes('x') },
        { offset: 101n, timestamp: 9n, key: null, value: null },
        { offset: 102n, timestamp: 7n, key: bytes(''), value: bytes('') },
      ],
    });
    const w = readLegacyEntry(e);
    expect(w.offset).toBe(102n);
    expect(w.timestamp).toBe(9n); // max inner timestamp
    expect(w.attributes).toBe(1);
    const rs = decodeLegacyRecords(e);
    expect(rs.map((r) => [r.offset, r.timestamp, r.timestampType, str(r.key), str(r.value)])).toEqual([
      [100n, 5n, 'CreateTime', 'a', 'x'],
      [101n, 9n, 'CreateTime', null, null],
      [102n, 7n, 'CreateTime', '', ''],
    ]);
    expect(rs.every((r) => r.magic === 1 && r.attributes === 0)).toBe(true);
    expect([...iterateLegacyRecords(e)].map((r) => r.offset)).toEqual([100n, 101n, 102n]);
  });

  it('v1 inner relative offsets are 0..n-1 on the wire', () => {
    const e = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [
        { offset: 100n, key: null, value: bytes('x') },
        { offset: 104n, key: null, value: bytes('y') },
      ],
    });
    // The same wrapper read with a different wrapper offset proves the stored inner offsets are 0 and 4.
    const moved = e.slice();
    new DataView(moved.buffer).setBigInt64(0, 10n);
    expect(decodeLegacyRecords(moved).map((r) => r.offset)).toEqual([6n, 10n]);
  });

  it('v1 wrapper offset 0 means base 0 (librdkafka produce data), even when 0 < last inner', () => {
    const s = concat([inner(3n, 1, 'a', 1n), inner(4n, 1, 'b', 2n)]);
    expect(decodeLegacyRecords(wrapper(0n, 1, GZIP, s)).map((r) => r.offset)).toEqual([3n, 4n]);
  });

  it('keeps gaps left by compaction, whatever the first relative offset', () => {
    const s = concat([inner(2n, 1, 'a', 1n), inner(5n, 1, 'b', 1n), inner(9n, 1, 'c', 1n)]);
    expect(decodeLegacyRecords(wrapper(1009n, 1, SNAPPY, s)).map((r) => r.offset)).toEqual([
      1002n,
      1005n,
      1009n,
    ]);
  });

  it('rejects a v1 wrapper offset below the last inner relative offset', () => {
    const s = concat([inner(0n, 1, 'a', 1n), inner(5n, 1, 'b', 1n)]);
    const err = thrown(() => decodeLegacyRecords(wrapper(3n, 1, GZIP, s)));
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect((err as CorruptRecordError).offset).toBe(3n);
  });

  it('v0 wrapper: absolute inner offsets used as they are', () => {
    const s = concat([inner(50n, 0, 'a'), inner(52n, 0, 'b')]);
    const rs = decodeLegacyRecords(wrapper(7n, 0, GZIP, s));
    expect(rs.map((r) => [r.offset, r.timestamp, r.timestampType])).toEqual([
      [50n, -1n, 'NoTimestampType'],
      [52n, -1n, 'NoTimestampType'],
    ]);
    const e = encodeCompressedWrapper({
      magic: 0,
      codec: LZ4,
      messages: [
        { offset: 20n, key: null, value: bytes('p') },
        { offset: 21n, key: bytes('k'), value: bytes('q') },
      ],
    });
    expect(readLegacyEntry(e).offset).toBe(21n);
    expect(decodeLegacyRecords(e).map((r) => [r.offset, str(r.key), str(r.value)])).toEqual([
      [20n, null, 'p'],
      [21n, 'k', 'q'],
    ]);
  });

  it('KAFKA-4298: v0 inner messages in a v1 wrapper get -1/NoTimestampType and relative offsets', () => {
    const s = concat([inner(0n, 0, 'a'), inner(1n, 1, 'b', 77n)]);
    const rs = decodeLegacyRecords(wrapper(11n, 1, GZIP, s, 77n));
    expect(rs.map((r) => [r.offset, r.magic, r.timestamp, r.timestampType])).toEqual([
      [10n, 0, -1n, 'NoTimestampType'],
      [11n, 1, 77n, 'CreateTime'],
    ]);
    // As upconverted: v0 becomes CreateTime -1.
    expect(
      logicalRecordsOfLegacyEntry(wrapper(11n, 1, GZIP, s, 77n)).map((r) => [r.timestamp, r.timestampType]),
    ).toEqual([
      [-1n, 'CreateTime'],
      [77n, 'CreateTime'],
    ]);
  });

  it('KAFKA-4298: v1 inner messages in a v0 wrapper keep their timestamps under NoTimestampType', () => {
    const s = concat([inner(40n, 1, 'a', 123n), inner(41n, 1, 'b', 124n, 8)]);
    const rs = decodeLegacyRecords(wrapper(41n, 0, GZIP, s));
    expect(rs.map((r) => [r.offset, r.timestamp, r.timestampType])).toEqual([
      [40n, 123n, 'NoTimestampType'],
      [41n, 124n, 'NoTimestampType'],
    ]);
  });

  it('LogAppendTime wrapper overrides inner timestamps and types (not v0 inner ones)', () => {
    const e = encodeCompressedWrapper({
      magic: 1,
      codec: SNAPPY,
      timestampType: 'LogAppendTime',
      wrapperTimestamp: 1_700_000_000_000n,
      messages: [
        { offset: 5n, timestamp: 1n, key: null, value: bytes('a') },
        { offset: 6n, timestamp: 2n, key: null, value: bytes('b') },
      ],
    });
    const w = readLegacyEntry(e);
    expect(w.attributes).toBe(0x0a);
    expect(w.timestamp).toBe(1_700_000_000_000n);
    expect(decodeLegacyRecords(e).map((r) => [r.offset, r.timestamp, r.timestampType, r.attributes])).toEqual(
      [
        [5n, 1_700_000_000_000n, 'LogAppendTime', 8],
        [6n, 1_700_000_000_000n, 'LogAppendTime', 8],
      ],
    );
    const s = concat([inner(0n, 1, 'a', 3n), inner(1n, 0, 'b')]);
    expect(
      decodeLegacyRecords(wrapper(1n, 1, GZIP, s, 50n, 8)).map((r) => [r.timestamp, r.timestampType]),
    ).toEqual([
      [50n, 'LogAppendTime'],
      [-1n, 'NoTimestampType'],
    ]);
  });

  it('CreateTime wrapper: inner LogAppendTime bits are meaningless', () => {
    const s = concat([inner(0n, 1, 'a', 3n, 8)]);
    expect(
      decodeLegacyRecords(wrapper(0n, 1, GZIP, s, 3n)).map((r) => [r.timestamp, r.timestampType]),
    ).toEqual([[3n, 'CreateTime']]);
  });

  it('rejects nested compression, unknown inner codecs, zero inner messages, null wrapper value', () => {
    const nested = concat([inner(0n, 1, 'a', 1n), inner(1n, 1, 'b', 1n, GZIP)]);
    expect(thrown(() => decodeLegacyRecords(wrapper(1n, 1, GZIP, nested)))).toBeInstanceOf(
      UnsupportedFormatError,
    );
    const unknown = concat([inner(0n, 1, 'a', 1n, 6)]);
    expect(thrown(() => decodeLegacyRecords(wrapper(0n, 1, GZIP, unknown)))).toBeInstanceOf(
      UnknownCodecError,
    );
    expect(thrown(() => decodeLegacyRecords(wrapper(0n, 1, GZIP, new Uint8Array(0))))).toBeInstanceOf(
      CorruptRecordError,
    );
    const onlyTruncated = inner(0n, 1, 'abc', 1n).subarray(0, 20);
    expect(thrown(() => decodeLegacyRecords(wrapper(0n, 1, GZIP, onlyTruncated)))).toBeInstanceOf(
      CorruptRecordError,
    );
    const nullValue = encodeLegacyEntry(0n, {
      magic: 1,
      attributes: GZIP,
      timestamp: 0n,
      key: null,
      value: null,
    });
    expect(thrown(() => decodeLegacyRecords(nullValue))).toBeInstanceOf(CorruptRecordError);
  });

  it('rejects zstd wrappers (UnsupportedFormat) and codecs 5-7 (UnknownCodec)', () => {
    for (const magic of [0, 1] as const) {
      const z = encodeLegacyEntry(0n, { magic, attributes: 4, timestamp: 0n, key: null, value: bytes('zz') });
      expect(thrown(() => decodeLegacyRecords(z))).toBeInstanceOf(UnsupportedFormatError);
      for (const codec of [5, 6, 7]) {
        const u = encodeLegacyEntry(0n, {
          magic,
          attributes: codec,
          timestamp: 0n,
          key: null,
          value: bytes('zz'),
        });
        const err = thrown(() => decodeLegacyRecords(u));
        expect(err).toBeInstanceOf(UnknownCodecError);
        expect((err as UnknownCodecError).codecId).toBe(codec);
      }
    }
  });

  it('a truncated inner tail ends quietly, an inner size < 14 throws', () => {
    const a = inner(0n, 1, 'a', 1n);
    const b = inner(1n, 1, 'b', 1n);
    const c = inner(2n, 1, 'ccc', 1n);
    for (const cut of [1, 11, 12, 20, c.length - 1]) {
      const rs = decodeLegacyRecords(wrapper(1n, 1, GZIP, concat([a, b, c.subarray(0, cut)])));
      expect(rs.map((r) => [r.offset, str(r.value)])).toEqual([
        [0n, 'a'],
        [1n, 'b'],
      ]);
    }
    const small = c.slice();
    new DataView(small.buffer).setInt32(8, 13);
    expect(thrown(() => decodeLegacyRecords(wrapper(2n, 1, GZIP, concat([a, b, small]))))).toBeInstanceOf(
      CorruptRecordError,
    );
  });

  it('checks inner CRCs unless told not to', () => {
    const bad = inner(0n, 1, 'abc', 1n);
    bad[bad.length - 1] ^= 0xff;
    const e = wrapper(0n, 1, GZIP, bad);
    expect(thrown(() => decodeLegacyRecords(e))).toBeInstanceOf(CrcMismatchError);
    expect([...decodeLegacyRecords(e, { checkInnerCrc: false })[0].value!]).toEqual([
      0x61,
      0x62,
      0x63 ^ 0xff,
    ]);
  });

  it('limits the decompressed size', () => {
    const e = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [{ offset: 0n, key: null, value: new Uint8Array(100_000) }],
    });
    expect(thrown(() => decodeLegacyRecords(e, { maxDecompressedBytes: 50_000 }))).toBeInstanceOf(
      DecompressionLimitError,
    );
    expect(decodeLegacyRecords(e, { maxDecompressedBytes: 100_034 })[0].value!.length).toBe(100_000);
  });

  it('round-trips every legacy codec for both magics; LZ4 HC is broken for v0 only (docs/kafka-format.md §3.2)', () => {
    for (const codec of [GZIP, SNAPPY, LZ4]) {
      for (const magic of [0, 1] as const) {
        const messages = Array.from({ length: 50 }, (_, i) => ({
          offset: 1000n + BigInt(i * 2),
          timestamp: magic === 1 ? 1_500_000_000_000n + BigInt(i) : undefined,
          key: i % 3 === 0 ? null : bytes(`key-${i}`),
          value: i % 7 === 0 ? null : bytes(`value-${i}`.repeat(i)),
        }));
        const e = encodeCompressedWrapper({ magic, codec, messages });
        const rs = decodeLegacyRecords(e);
        expect(rs.map((r) => [r.offset, r.timestamp, str(r.key), str(r.value)])).toEqual(
          messages.map((m) => [m.offset, m.timestamp ?? -1n, str(m.key), str(m.value)]),
        );
        if (codec === LZ4) {
          const value = readLegacyEntry(e).value!;
          expect(Buffer.from(value.subarray(0, 7)).toString('hex')).toBe(
            magic === 0 ? '04224d1860401a' : '04224d18604082',
          );
        }
      }
    }
  });

  it('reads sarama-built wrappers (gzip/snappy v0, lz4 v1 with content checksum and v0 inners)', () => {
    for (const body of [SARAMA.bulkGzipV0, SARAMA.bulkSnappyV0]) {
      const rs = decodeLegacyRecords(entryOf(9n, body));
      expect(rs.map((r) => [r.offset, r.magic, r.timestamp, r.timestampType])).toEqual([
        [0n, 0, -1n, 'NoTimestampType'],
        [1n, 0, -1n, 'NoTimestampType'],
      ]);
    }
    const gz = decodeLegacyRecords(entryOf(9n, SARAMA.bulkGzipV0));
    expect(gz.map((r) => [r.key, r.value?.length, r.crc])).toEqual([
      [null, 0, 2035763424],
      [null, 0, 2035763424],
    ]);
    const sn = decodeLegacyRecords(entryOf(9n, SARAMA.bulkSnappyV0));
    expect(sn.map((r) => [r.key?.length, r.value?.length, r.crc])).toEqual([
      [0, 0, 3817498742],
      [0, 0, 3817498742],
    ]);
    const lz = decodeLegacyRecords(entryOf(5n, SARAMA.bulkLz4V1));
    expect(lz.map((r) => [r.offset, r.magic, r.timestamp, r.timestampType, r.key, r.value?.length])).toEqual([
      [4n, 0, -1n, 'NoTimestampType', null, 0],
      [5n, 0, -1n, 'NoTimestampType', null, 0],
    ]);
    expect(decodeLegacyRecords(entryOf(0n, SARAMA.bulkLz4V1)).map((r) => r.offset)).toEqual([0n, 1n]);
  });

  it('an uncompressed entry is its own record; LogAppendTime v1 keeps its type', () => {
    const e = encodeLegacyEntry(8n, {
      magic: 1,
      attributes: 8,
      timestamp: 44n,
      key: bytes('k'),
      value: null,
    });
    expect(decodeLegacyRecords(e)).toEqual([
      {
        offset: 8n,
        timestamp: 44n,
        timestampType: 'LogAppendTime',
        key: bytes('k'),
        value: null,
        magic: 1,
        attributes: 8,
        crc: readLegacyEntry(e).crc,
      },
    ]);
    expect(
      logicalRecordsOfLegacyEntry(encodeLegacyEntry(3n, { magic: 0, key: null, value: bytes('v') })),
    ).toEqual([
      {
        offset: 3n,
        timestamp: -1n,
        timestampType: 'CreateTime',
        key: null,
        value: bytes('v'),
        headers: [],
        producerId: -1n,
        producerEpoch: -1,
        sequence: -1,
        isTransactional: false,
        isControl: false,
      },
    ]);
  });
});
