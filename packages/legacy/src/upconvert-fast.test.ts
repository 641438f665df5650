/**
 * The fast path of the Upconverter at the edges of what it takes: every entry here is either
 * taken by it (decodeLegacyRecords, the general path's decoder, is never called) or left to the
 * general path, which reports the error it always did. The records come back through
 * @seglift/format's v2 reader; the legacy inputs are built byte by byte (inner streams compressed
 * with node:zlib), so nothing expected comes from the code under test.
 */
import { crc32, gzipSync } from 'node:zlib';
import * as format from '@seglift/format';
import {
  CompressionType,
  CorruptRecordError,
  CrcMismatchError,
  InvalidArgumentError,
  logicalRecordsOfBatch,
  type RecordFields,
  readRecordBatchHeader,
  TruncatedDataError,
  UnsupportedFormatError,
} from '@seglift/format';
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from 'vitest';
import * as deep from './deep.js';
import { encodeLegacyEntry } from './message.js';
import { thrown } from './test-support/thrown.js';
import { Upconverter, type UpconverterOptions } from './upconvert.js';
import { encodeCompressedWrapper } from './writer.js';

const { GZIP, LZ4 } = CompressionType;
const bytes = (s: string | null) => (s === null ? null : new Uint8Array(Buffer.from(s)));
const text = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());

/** A v0 or v1 entry (v1: timestamp, default -1). */
const v0 = (offset: bigint, key: string | null, value: string | null, attributes = 0) =>
  encodeLegacyEntry(offset, { magic: 0, attributes, key: bytes(key), value: bytes(value) });
const v1 = (offset: bigint, timestamp: bigint, key: string | null, value: string | null, attributes = 0) =>
  encodeLegacyEntry(offset, { magic: 1, attributes, timestamp, key: bytes(key), value: bytes(value) });

/** A gzip wrapper whose decompressed value is exactly `stream` (whatever it holds). */
function gzipWrapper(
  offset: bigint,
  stream: Uint8Array,
  wrapper: { magic: 0 | 1; timestamp?: bigint; attributes?: number },
): Uint8Array {
  return encodeLegacyEntry(offset, {
    magic: wrapper.magic,
    attributes: GZIP | (wrapper.attributes ?? 0),
    timestamp: wrapper.timestamp ?? -1n,
    key: null,
    value: new Uint8Array(gzipSync(stream)),
  });
}

const concat = (...parts: Uint8Array[]) => new Uint8Array(Buffer.concat(parts));

type Row = [offset: bigint, timestamp: bigint, type: string, key: string | null, value: string | null];

/** Each record of the batches as a v2 consumer sees it. */
const rows = (batches: Uint8Array[]): Row[] =>
  batches.flatMap((b) =>
    [...logicalRecordsOfBatch(b)].map(
      (r): Row => [r.offset, r.timestamp, r.timestampType, text(r.key), text(r.value)],
    ),
  );

function convert(entries: Uint8Array[], options: UpconverterOptions = {}) {
  const up = new Upconverter({ grouping: 'kafka', ...options });
  const batches = [...entries.flatMap((e) => up.push(e)), ...up.flush()];
  return { up, batches, rows: rows(batches) };
}

let general: MockInstance;
beforeEach(() => {
  general = vi.spyOn(deep, 'decodeLegacyRecords');
});
afterEach(() => {
  general.mockRestore();
});

describe('Upconverter fast path: the entries it takes', () => {
  it('the smallest messages: v0 and v1 with null key and value (26 and 34 bytes), alone and inside wrappers', () => {
    const small0 = v0(3n, null, null);
    const small1 = v1(4n, 7n, null, null);
    expect([small0.length, small1.length]).toEqual([26, 34]);
    expect(convert([small0]).rows).toEqual([[3n, -1n, 'CreateTime', null, null]]);
    expect(convert([small1]).rows).toEqual([[4n, 7n, 'CreateTime', null, null]]);
    // Inner messages of 14 bytes (v0, null key and value), in a v0 and in a v1 wrapper.
    const inV0 = encodeCompressedWrapper({
      magic: 0,
      codec: GZIP,
      messages: [5n, 6n].map((offset) => ({ offset, key: null, value: null })),
    });
    expect(convert([inV0]).rows).toEqual([
      [5n, -1n, 'CreateTime', null, null],
      [6n, -1n, 'CreateTime', null, null],
    ]);
    const inV1 = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [8n, 9n].map((offset) => ({ offset, key: null, value: null, magic: 0 as const })),
    });
    expect(convert([inV1]).rows).toEqual([
      [8n, -1n, 'CreateTime', null, null],
      [9n, -1n, 'CreateTime', null, null],
    ]);
    expect(general).not.toHaveBeenCalled();
  });

  it('a batch larger than its 64 KiB starting buffers (codec none and LZ4): the buffers grow and keep every record', () => {
    const value = (i: number) => `value ${i} `.padEnd(150, '.');
    const entries = Array.from({ length: 1000 }, (_, i) =>
      v1(BigInt(i), 1_000n + BigInt(i), `k${i}`, value(i)),
    );
    for (const codec of [0, LZ4] as const) {
      const { batches, rows: got } = convert(entries, {
        codec,
        grouping: 'coalesce',
        coalesceBytes: 1024 * 1024,
        maxBatchBytes: 1024 * 1024,
      });
      expect(batches.length).toBe(1);
      // The records alone are over 64 KiB, compressed or not.
      expect(readRecordBatchHeader(batches[0], 0).recordsCount).toBe(1000);
      if (codec === 0) expect(batches[0].length).toBeGreaterThan(150_000);
      expect(got).toEqual(
        Array.from(
          { length: 1000 },
          (_, i): Row => [BigInt(i), 1_000n + BigInt(i), 'CreateTime', `k${i}`, value(i)],
        ),
      );
    }
    expect(general).not.toHaveBeenCalled();
  });

  it('v1 wrapper offsets: base 0 when the first inner message is offset 0, and inner offsets as they are at wrapper offset 0', () => {
    // The wrapper's offset (2) equals the last relative offset: base 0.
    const fromZero = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [0n, 1n, 2n].map((offset) => ({
        offset,
        timestamp: 10n + offset,
        key: null,
        value: bytes('x'),
      })),
    });
    expect(convert([fromZero]).rows.map((r) => r[0])).toEqual([0n, 1n, 2n]);
    // A wrapper at offset 0 (as clients before KIP-31 wrote them): the inner offsets are absolute.
    for (const first of [0n, 5n]) {
      const stream = concat(...[0n, 1n, 2n].map((i) => v1(first + i, 20n + i, null, `m${i}`)));
      const atZero = gzipWrapper(0n, stream, { magic: 1, timestamp: 22n });
      expect(convert([atZero]).rows).toEqual(
        [0n, 1n, 2n].map((i): Row => [first + i, 20n + i, 'CreateTime', null, `m${i}`]),
      );
    }
    expect(general).not.toHaveBeenCalled();
  });

  it('the entry ends where its size field says: bytes after it (in the caller’s buffer) are not read', () => {
    const entry = v1(40n, 1000n, 'k', 'value');
    const host = concat(new Uint8Array(5).fill(0xee), entry, new Uint8Array(9).fill(0xee));
    const up = new Upconverter({ grouping: 'kafka' });
    up.pushEntry(host, 5, host.length);
    expect(rows([up.takeOutput()])).toEqual([[40n, 1000n, 'CreateTime', 'k', 'value']]);
    expect(general).not.toHaveBeenCalled();
  });

  it('the timestamp type bit means nothing at magic 0: a v0 message, or a v0 wrapper of v1 messages, stays CreateTime', () => {
    const plain = convert([v0(3n, null, 'a', 0x08)]);
    expect(plain.rows).toEqual([[3n, -1n, 'CreateTime', null, 'a']]);
    expect(readRecordBatchHeader(plain.batches[0]).attributes).toBe(0);
    // v0 wrapper (inner offsets absolute), its LogAppendTime bit set, holding v1 messages: they
    // keep their own timestamps (KAFKA-4298 data).
    const stream = concat(v1(10n, 40n, null, 'a'), v1(11n, 41n, null, 'b'));
    const wrapped = convert([gzipWrapper(11n, stream, { magic: 0, attributes: 0x08 })]);
    expect(wrapped.rows).toEqual([
      [10n, 40n, 'CreateTime', null, 'a'],
      [11n, 41n, 'CreateTime', null, 'b'],
    ]);
    expect(readRecordBatchHeader(wrapped.batches[0]).attributes).toBe(0);
    expect(general).not.toHaveBeenCalled();
  });

  it('the end of an inner stream: up to 11 bytes after the last message, or a truncated last message, end it quietly', () => {
    const m = [v1(0n, 5n, null, 'a'), v1(1n, 6n, 'k', 'b'), v1(2n, 7n, null, 'c')];
    const expected: Row[] = [
      [100n, 5n, 'CreateTime', null, 'a'],
      [101n, 6n, 'CreateTime', 'k', 'b'],
    ];
    for (const tail of [
      new Uint8Array(11).fill(0xff),
      m[2].subarray(0, 12),
      m[2].subarray(0, m[2].length - 1),
    ]) {
      const wrapper = gzipWrapper(101n, concat(m[0], m[1], tail), { magic: 1, timestamp: 6n });
      expect(convert([wrapper]).rows).toEqual(expected);
    }
    expect(general).not.toHaveBeenCalled();
  });

  it('a wrapper of 300 inner messages (more than the fast path first makes room for)', () => {
    const messages = Array.from({ length: 300 }, (_, i) => ({
      offset: 1000n + BigInt(i),
      timestamp: 1_600_000_000_000n + BigInt(i),
      key: null,
      value: bytes(`m${i}`),
    }));
    const { rows: got, batches } = convert([encodeCompressedWrapper({ magic: 1, codec: GZIP, messages })]);
    expect(batches.length).toBe(1);
    expect(got).toEqual(messages.map((m): Row => [m.offset, m.timestamp, 'CreateTime', null, text(m.value)]));
    expect(general).not.toHaveBeenCalled();
  });

  it('a wrapper’s checks see its own messages only: nothing is left from a longer wrapper before it', () => {
    // Three messages of 35 bytes: the third starts at 70. In the next wrapper, bytes 70-77 are
    // inside its first value (0x7f bytes: not an offset the fast path could hold).
    const first = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [0n, 1n, 2n].map((offset) => ({ offset, timestamp: 1n, key: null, value: bytes('x') })),
    });
    const second = encodeCompressedWrapper({
      magic: 1,
      codec: GZIP,
      messages: [
        { offset: 3n, timestamp: 2n, key: null, value: new Uint8Array(200).fill(0x7f) },
        { offset: 4n, timestamp: 3n, key: null, value: bytes('y') },
      ],
    });
    const { rows: got } = convert([first, second]);
    expect(got.map((r) => r[0])).toEqual([0n, 1n, 2n, 3n, 4n]);
    expect(general).not.toHaveBeenCalled();
  });
});

describe('Upconverter fast path: what it leaves to the general path, reported as that path does', () => {
  it('an entry cut short before the end its size field gives, even when the caller’s buffer goes on', () => {
    const entry = v1(40n, 1000n, 'k', 'value');
    const host = concat(new Uint8Array(5).fill(0xee), entry);
    const size = entry.length - 12;
    const err = thrown(() => new Upconverter({ grouping: 'kafka' }).pushEntry(host, 5, host.length - 1));
    expect(err).toBeInstanceOf(TruncatedDataError);
    expect(err).toMatchObject({ detail: `legacy message declares ${size} bytes, ${size - 1} left` });
    expect(general).toHaveBeenCalled();
  });

  it('an inner stream: 12 bytes after the last message are a header, whose size below 14 is corrupt; no message at all; a compressed inner message', () => {
    const m = [v1(0n, 5n, null, 'a'), v1(1n, 6n, 'k', 'b')];
    const header = new Uint8Array(12);
    new DataView(header.buffer).setInt32(8, 13);
    let err = thrown(() => convert([gzipWrapper(101n, concat(m[0], m[1], header), { magic: 1 })]));
    expect(err).toBeInstanceOf(CorruptRecordError);
    expect(err).toMatchObject({
      detail: `inner message at ${m[0].length + m[1].length} of the decompressed stream has size 13, less than 14`,
    });
    for (const stream of [new Uint8Array(0), new Uint8Array(11), m[0].subarray(0, m[0].length - 1)]) {
      err = thrown(() => convert([gzipWrapper(7n, stream, { magic: 1 })]));
      expect(err).toBeInstanceOf(CorruptRecordError);
      expect(err).toMatchObject({ detail: 'compressed wrapper has no inner records' });
    }
    const nested = v1(1n, 6n, null, 'not really gzip', GZIP);
    err = thrown(() => convert([gzipWrapper(101n, concat(m[0], nested), { magic: 1 })]));
    expect(err).toBeInstanceOf(UnsupportedFormatError);
    expect(err).toMatchObject({ detail: 'inner messages must not be compressed', offset: 101n });
  });

  it('an inner message whose CRC-32 is wrong: CrcMismatchError by default and with checkInnerCrc, converted (fast) without', () => {
    const good = v1(0n, 5n, null, 'a');
    const bad = v1(1n, 6n, 'k', 'b');
    bad[15] ^= 0x01;
    const wrapper = gzipWrapper(51n, concat(good, bad), { magic: 1, timestamp: 6n });
    for (const options of [{}, { checkInnerCrc: true }]) {
      const err = thrown(() => convert([wrapper], options));
      expect(err).toBeInstanceOf(CrcMismatchError);
      expect(err).toMatchObject({ offset: 51n });
    }
    general.mockClear();
    expect(convert([wrapper], { checkInnerCrc: false }).rows).toEqual([
      [50n, 5n, 'CreateTime', null, 'a'],
      [51n, 6n, 'CreateTime', 'k', 'b'],
    ]);
    expect(general).not.toHaveBeenCalled();
  });
});

describe('Upconverter output buffer', () => {
  it('outputLength: the bytes finished and not taken yet', () => {
    const up = new Upconverter({ grouping: 'coalesce' });
    const e = v0(0n, null, 'abc');
    up.pushEntry(e, 0, e.length);
    expect(up.outputLength).toBe(0);
    up.finishPending();
    // One batch of one record: 61 + 10 bytes.
    expect(up.outputLength).toBe(71);
    expect(up.takeOutput().length).toBe(71);
    expect(up.outputLength).toBe(0);
  });

  it('drained after each entry, the output stays in one buffer however long the stream', () => {
    for (const codec of [0, LZ4] as const)
      for (const grouping of ['kafka', 'coalesce'] as const) {
        const up = new Upconverter({ grouping, codec, coalesceBytes: 5000 });
        const buffers = new Set<ArrayBufferLike>();
        const batches: Uint8Array[] = [];
        const take = () => {
          const out = up.takeOutput();
          if (out.length > 0) buffers.add(out.buffer);
          for (let p = 0; p < out.length; ) {
            const size = Buffer.from(out.buffer, out.byteOffset + p + 8, 4).readInt32BE(0) + 12;
            batches.push(out.slice(p, p + size));
            p += size;
          }
        };
        // 300 entries of about 1 KiB: 300 KiB through the converter.
        for (let i = 0; i < 300; i++) {
          const e = encodeLegacyEntry(BigInt(i), {
            magic: 0,
            key: null,
            value: new Uint8Array(1000).fill(i & 0xff),
          });
          up.pushEntry(e, 0, e.length);
          take();
        }
        up.finishPending();
        take();
        const got = batches.flatMap((b) => [...logicalRecordsOfBatch(b)]);
        expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 300 }, (_, i) => BigInt(i)));
        expect(got.every((r, i) => r.value?.length === 1000 && r.value.every((x) => x === (i & 0xff)))).toBe(
          true,
        );
        expect(buffers.size).toBe(1);
      }
  });
});

describe('Upconverter prove, fast path: a record or batch header written wrong is caught', () => {
  /**
   * Runs one v1 entry (offset 100, timestamp 1000, the key and value given) through a proving
   * Upconverter of the codec given while `fault` acts; returns what it threw.
   */
  function caught(
    fault: () => MockInstance,
    key: Uint8Array | null = bytes('key'),
    value: Uint8Array | null = bytes('value'),
    codec: 0 | 3 = 0,
  ): unknown {
    const entry = encodeLegacyEntry(100n, { magic: 1, timestamp: 1000n, key, value });
    const spy = fault();
    try {
      return thrown(() => new Upconverter({ grouping: 'kafka', prove: true, codec }).push(entry));
    } finally {
      spy.mockRestore();
    }
  }
  const mismatch = (detail: string, offset = 100n) =>
    expect.objectContaining({ detail: `verify mismatch in upconverted batch: ${detail}`, offset });
  const realParse = format.parseRecordAt;
  /** parseRecordAt reads the record written, then `change` alters what it read. */
  const readBack = (change: (f: RecordFields) => void) => () =>
    vi.spyOn(format, 'parseRecordAt').mockImplementation((buf, pos, end, f) => {
      const after = realParse(buf, pos, end, f);
      change(f);
      return after;
    });

  it('a record read back with other fields than the legacy message’s', () => {
    const boom = () =>
      vi.spyOn(format, 'parseRecordAt').mockImplementation(() => {
        throw new Error('boom');
      });
    expect(caught(boom)).toEqual(mismatch('record does not parse back: boom'));
    const longer = () =>
      vi
        .spyOn(format, 'parseRecordAt')
        .mockImplementation((buf, pos, end, f) => realParse(buf, pos, end, f) - 1);
    expect(caught(longer)).toEqual(mismatch('record length'));
    const changes: [Partial<RecordFields>, string][] = [
      [{ offsetDelta: 1 }, 'offset delta 1 vs 0'],
      [{ timestampDelta: -1 }, 'timestamp delta -1 vs 0'],
      [{ attributes: 0x10 }, 'record attributes or headers'],
      [{ headerCount: 1 }, 'record attributes or headers'],
    ];
    for (const [over, detail] of changes)
      expect(
        caught(
          readBack((f) => {
            Object.assign(f, over);
          }),
        ),
      ).toEqual(mismatch(detail));
    for (const [field, key, value] of [
      ['key', bytes('key'), bytes('value')],
      ['key', null, bytes('value')],
      ['key', new Uint8Array(0), bytes('value')],
      ['value', bytes('key'), bytes('value')],
      ['value', bytes('key'), null],
      ['value', bytes('key'), new Uint8Array(0)],
    ] as const) {
      const shorter = readBack((f) => {
        if (field === 'key') f.keyLength = f.keyLength === 0 ? -1 : f.keyLength - 1;
        else f.valueLength = f.valueLength === 0 ? -1 : f.valueLength - 1;
      });
      expect(caught(shorter, key, value)).toEqual(mismatch(field));
    }
  });

  it('a key or value byte written wrong, first, in the middle or last, short or long', () => {
    for (const n of [3, 9, 100, 300])
      for (const at of [0, n >> 1, n - 1])
        for (const field of ['key', 'value'] as const) {
          const flip = () =>
            vi.spyOn(format, 'parseRecordAt').mockImplementation((buf, pos, end, f) => {
              const after = realParse(buf, pos, end, f);
              buf[(field === 'key' ? f.keyPos : f.valuePos) + at] ^= 0x20;
              return after;
            });
          const data = new Uint8Array(Buffer.from('abcdefghij'.repeat(30).slice(0, n)));
          expect(caught(flip, data, data)).toEqual(mismatch(field));
        }
  });

  it('each field of the batch header written wrong (after the records, before the CRC)', () => {
    const realCrc = format.crc32cRange;
    for (const [byte, what] of [
      [7, 'baseOffset'],
      [11, 'batchLength'],
      [15, 'partitionLeaderEpoch or magic'],
      [16, 'partitionLeaderEpoch or magic'],
      [22, 'attributes'],
      [21, 'attributes'],
      [26, 'lastOffsetDelta'],
      [34, 'baseTimestamp'],
      [42, 'maxTimestamp'],
      [50, 'producer'],
      [52, 'producer'],
      [51, 'producer'],
      [56, 'baseSequence or count'],
      [60, 'baseSequence or count'],
    ] as const)
      for (const codec of [0, LZ4] as const) {
        // The CRC-32C of a batch covers its bytes from 21 on: the header is all written then.
        const flip = () =>
          vi.spyOn(format, 'crc32cRange').mockImplementation((buf, start, end, initial) => {
            buf[start - 21 + byte] ^= 0x01;
            return realCrc(buf, start, end, initial);
          });
        expect(caught(flip, bytes('key'), bytes('value'), codec)).toEqual(mismatch(`header ${what}`));
      }
  });

  it('compressed: record bytes that do not come back from the codec as they went in', () => {
    const realDecompress = format.decompressTransient;
    const failing = () =>
      vi.spyOn(format, 'decompressTransient').mockImplementation(() => {
        throw new Error('bad frame');
      });
    expect(caught(failing, bytes('key'), bytes('value'), LZ4)).toEqual(
      mismatch('the record bytes do not decompress: bad frame'),
    );
    const shorter = () =>
      vi
        .spyOn(format, 'decompressTransient')
        .mockImplementation((...a) => realDecompress(...a).subarray(0, -1));
    expect(caught(shorter, bytes('key'), bytes('value'), LZ4)).toEqual(
      mismatch('the record bytes differ from the ones encoded'),
    );
  });
});

describe('Upconverter: the line between the paths is 2^52', () => {
  const T = 2n ** 52n;

  it('an offset or timestamp in [-2^52, 2^52) is taken by the fast path; past it, by the general one', () => {
    for (const [offset, timestamp, viaGeneral] of [
      [T - 1n, 0n, false],
      [T, 0n, true],
      [0n, T - 1n, false],
      [0n, T, true],
      [0n, -T, false],
      [0n, -T - 1n, true],
    ] as const) {
      general.mockClear();
      const { rows: got } = convert([v1(offset, timestamp, null, 'a')]);
      expect(got).toEqual([[offset, timestamp, 'CreateTime', null, 'a']]);
      expect(general.mock.calls.length).toBe(viaGeneral ? 1 : 0);
    }
  });

  it('records the general path decodes that the fast path can hold go on in the fast batch; one value past 2^52 turns the rest of the stream general', () => {
    // A CreateTime wrapper stamped past 2^52 (the fast path declines it) around inner messages
    // whose own timestamps (the ones kept) are the test's; then a plain entry.
    for (const [timestamp, wide] of [
      [5n, false],
      [T - 1n, false],
      [-T + 1n, false],
      [T, true],
      [-T, true],
    ] as const) {
      general.mockClear();
      const stream = concat(v1(0n, 3n, null, 'a'), v1(1n, timestamp, null, 'b'));
      const wrapper = gzipWrapper(11n, stream, { magic: 1, timestamp: 2n ** 60n });
      const { rows: got, batches } = convert([wrapper, v1(12n, 7n, null, 'c')], { grouping: 'coalesce' });
      expect(got).toEqual([
        [10n, 3n, 'CreateTime', null, 'a'],
        [11n, timestamp, 'CreateTime', null, 'b'],
        [12n, 7n, 'CreateTime', null, 'c'],
      ]);
      expect(batches.length).toBe(1);
      expect(general.mock.calls.length).toBe(wide ? 2 : 1);
    }
  });

  it('timestamps 2^53 - 1 apart in one batch (a timestamp delta past 2^52)', () => {
    for (const [first, second] of [
      [-T, T - 1n],
      [T - 1n, -T],
      [0n, T - 1n],
    ]) {
      const { rows: got, batches } = convert([v1(0n, first, null, 'a'), v1(1n, second, null, 'b')], {
        grouping: 'coalesce',
      });
      expect(got.map((r) => r[1])).toEqual([first, second]);
      expect(batches.length).toBe(1);
    }
    expect(general).not.toHaveBeenCalled();
  });
});

describe('Upconverter fast path: a batch that fits is sealed where it was written', () => {
  it('up to exactly maxBatchBytes (codec none and LZ4), and a single record over it, without the general encoder; one byte less, split by it', () => {
    const encoder = vi.spyOn(format, 'encodeRecordBatch');
    try {
      // Ten records of 17 bytes (10-byte values): 61 + 170 bytes uncompressed.
      const entry = encodeCompressedWrapper({
        magic: 1,
        codec: GZIP,
        messages: Array.from({ length: 10 }, (_, i) => ({
          offset: 1000n + BigInt(i),
          timestamp: 5n,
          key: null,
          value: new Uint8Array(10).fill(97 + i),
        })),
      });
      const lz4Size = convert([entry], { codec: LZ4 }).batches[0].length;
      // Split: codec none packs by exact sizes (an encoding a part); LZ4 encodes the whole, then
      // each of its two parts.
      for (const [codec, size, encodings] of [
        [0, 231, 2],
        [LZ4, lz4Size, 3],
      ] as const) {
        encoder.mockClear();
        expect(convert([entry], { codec, maxBatchBytes: size }).batches.map((b) => b.length)).toEqual([size]);
        expect(encoder).not.toHaveBeenCalled();
        const split = convert([entry], { codec, maxBatchBytes: size - 1 }).batches;
        expect(split.length).toBe(2);
        expect(encoder).toHaveBeenCalledTimes(encodings);
      }
      encoder.mockClear();
      const one = convert([v1(7n, 5n, 'key', 'a value longer than the batch may be')], {
        codec: LZ4,
        maxBatchBytes: 62,
      });
      expect(one.batches.length).toBe(1);
      expect(one.up.stats.oversizeBatches).toBe(1);
      expect(encoder).not.toHaveBeenCalled();
      expect(general).not.toHaveBeenCalled();
    } finally {
      encoder.mockRestore();
    }
  });
});

describe('Upconverter fast path: a record sized wrong', () => {
  it('stops the conversion (InvalidArgumentError) instead of being written with a wrong length', () => {
    // Batches are cut on the sizes computed before writing: a varlong sized one byte too long.
    const real = format.sizeOfVarlong;
    const spy = vi.spyOn(format, 'sizeOfVarlong').mockImplementation((n) => real(n) + 1);
    try {
      for (const codec of [0, LZ4] as const) {
        // Eight bytes: length, attributes, timestamp and offset deltas, null key, value length,
        // 'a', no headers.
        const err = thrown(() => new Upconverter({ grouping: 'kafka', codec }).push(v0(0n, null, 'a')));
        expect(err).toBeInstanceOf(InvalidArgumentError);
        expect(err).toMatchObject({ detail: 'record encoding wrote 8 bytes, sized 9' });
      }
    } finally {
      spy.mockRestore();
    }
  });
});

describe('Upconverter fast path: messages whose lengths do not add up (their CRC-32 right)', () => {
  const i32 = (n: number) => [(n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff];
  /** A legacy entry around the message bytes after its CRC (magic on), size and CRC-32 fitting them. */
  function rawEntry(offset: bigint, message: number[]): Uint8Array {
    const m = Uint8Array.from(message);
    const out = new Uint8Array(16 + m.length);
    const view = new DataView(out.buffer);
    view.setBigInt64(0, offset);
    view.setInt32(8, 4 + m.length);
    view.setUint32(12, crc32(m));
    out.set(m, 16);
    return out;
  }

  it('are left to the general path and fail with its error', () => {
    const cases = [
      // v0, null key and value, two bytes more.
      [0, 0, ...i32(-1), ...i32(-1), 7, 7],
      // Key or value length -2.
      [0, 0, ...i32(-2), ...i32(-1)],
      [0, 0, ...i32(-1), ...i32(-2)],
      [0, 0, ...i32(-2), ...i32(1), 7],
      // A key of 5 bytes with 3 there; a value of 3 bytes with 4 there.
      [0, 0, ...i32(5), 1, 2, 3, ...i32(-1)],
      [0, 0, ...i32(-1), ...i32(3), 1, 2, 3, 4],
      // v1 of 20 bytes (22 at least); magic 2.
      [1, 0, 0, 0, 0, 0, 0, 0, 0, 5, ...i32(-1), 0, 0],
      [2, 0, ...i32(-1), ...i32(-1)],
    ];
    for (const message of cases) {
      const entry = rawEntry(9n, message);
      general.mockClear();
      const err = thrown(() => convert([entry]));
      expect(general).toHaveBeenCalled();
      expect(err).toEqual(thrown(() => deep.decodeLegacyRecords(entry)));
      expect(err).toBeInstanceOf(Error);
    }
  });
});
