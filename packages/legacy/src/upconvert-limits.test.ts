/**
 * Where the Upconverter splits batches for a given maxBatchBytes, pinned record by record, on
 * both of its paths: the fast one (offsets and timestamps below 2^52) and the general one (an
 * offset past 2^53 sends every record through decodeLegacyRecords and bigint offsets). And the
 * exact texts and contexts of its errors.
 */
import {
  CompressionType,
  CorruptRecordError,
  checkRecordBatchCrc,
  DecompressionLimitError,
  decodeRecords,
  InvalidArgumentError,
  readRecordBatchHeader,
} from '@seglift/format';
import { describe, expect, it, vi } from 'vitest';
import { encodeLegacyEntry } from './message.js';
import { type OversizeBatch, Upconverter, type UpconverterOptions } from './upconvert.js';
import { encodeCompressedWrapper } from './writer.js';

const { GZIP, LZ4 } = CompressionType;
const FAST = 1000n;
// Past 2^53 (the general path); 2^20 more, so that a sum of two offsets where their difference
// belongs shows in a varint's size.
const GENERAL = 2n ** 53n + 2n ** 20n;

/** Incompressible bytes (xorshift32), so compressed sizes stay close to the plain ones. */
function noise(seed: number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/**
 * One gzip wrapper of ten CreateTime messages at base, base + 1, …, timestamps 1.6e12 + i, no
 * key. Each becomes a v2 record of 7 + valueLength bytes here (length, attributes, timestamp
 * delta, offset delta, null key, value length: one byte each; the value; no headers: one byte).
 */
function wrapperOfTen(base: bigint, value: (i: number) => Uint8Array): Uint8Array {
  return encodeCompressedWrapper({
    magic: 1,
    codec: GZIP,
    messages: Array.from({ length: 10 }, (_, i) => ({
      offset: base + BigInt(i),
      timestamp: 1_600_000_000_000n + BigInt(i),
      key: null,
      value: value(i),
    })),
  });
}

/** Each batch as [baseOffset, record count, bytes], and the stats and oversize reports. */
function split(entry: Uint8Array, options: UpconverterOptions) {
  const oversize: OversizeBatch[] = [];
  const up = new Upconverter({ grouping: 'kafka', ...options, onOversizeBatch: (b) => oversize.push(b) });
  const batches = [...up.push(entry), ...up.flush()];
  const shape = batches.map((b) => {
    const h = readRecordBatchHeader(b);
    checkRecordBatchCrc(b);
    // CreateTime, the codec asked for; records at consecutive offsets, as many as the header says.
    expect(h.attributes).toBe(options.codec ?? 0);
    expect(decodeRecords(b).map((r) => r.offsetDelta)).toEqual(
      Array.from({ length: h.recordsCount }, (_, i) => i),
    );
    expect(h.lastOffsetDelta + 1).toBe(h.recordsCount);
    return [h.baseOffset, h.recordsCount, b.length] as const;
  });
  return { shape, stats: up.stats, oversize, batches };
}

/** The expected [baseOffset, count, bytes] of consecutive batches from `base` on. */
function batchesOf(base: bigint, ...counts: [number, number][]) {
  let at = base;
  return counts.map(([n, bytes]) => {
    const b = [at, n, bytes] as const;
    at += BigInt(n);
    return b;
  });
}

describe.each([
  ['fast path', FAST],
  ['general path', GENERAL],
])('Upconverter batch limits, %s', (_, base) => {
  it('codec none: a batch ends before the record that would pass maxBatchBytes; reaching it exactly fits', () => {
    // 10-byte values: 17-byte records, a batch of k records is 61 + 17k bytes.
    const entry = wrapperOfTen(base, (i) => new Uint8Array(10).fill(97 + i));
    const at = (maxBatchBytes: number) => split(entry, { maxBatchBytes });
    let r = at(231);
    expect(r.shape).toEqual(batchesOf(base, [10, 231]));
    expect(r.stats).toMatchObject({ batchesOut: 1, bytesOut: 231, splitBatches: 0, oversizeBatches: 0 });
    r = at(230);
    expect(r.shape).toEqual(batchesOf(base, [9, 214], [1, 78]));
    expect(r.stats).toMatchObject({ batchesOut: 2, bytesOut: 292, splitBatches: 1, oversizeBatches: 0 });
    r = at(112);
    expect(r.shape).toEqual(batchesOf(base, [3, 112], [3, 112], [3, 112], [1, 78]));
    expect(r.stats).toMatchObject({ batchesOut: 4, bytesOut: 414, splitBatches: 3 });
    r = at(111);
    expect(r.shape).toEqual(batchesOf(base, [2, 95], [2, 95], [2, 95], [2, 95], [2, 95]));
    expect(r.stats).toMatchObject({ batchesOut: 5, bytesOut: 475, splitBatches: 4 });
    // Below one record's batch: each record alone, each reported as oversize.
    r = at(77);
    expect(r.shape).toEqual(
      batchesOf(base, ...Array.from({ length: 10 }, () => [1, 78] as [number, number])),
    );
    expect(r.stats).toMatchObject({ batchesOut: 10, splitBatches: 9, oversizeBatches: 10 });
    expect(r.oversize[3]).toEqual({
      baseOffset: base + 3n,
      lastOffset: base + 3n,
      sizeInBytes: 78,
      maxBatchBytes: 77,
    });
  });

  it('compressed (LZ4): a batch over maxBatchBytes is cut into ceil(size / max * 1.1) parts of ceil(n / parts) records, again while a part is over', () => {
    // 100 incompressible bytes a value: the ten records in one LZ4 batch are 1166 bytes, four
    // 512, three 403, two 294, five 621.
    const entry = wrapperOfTen(base, (i) => noise(i + 1, 100));
    const at = (maxBatchBytes: number) => split(entry, { codec: LZ4, maxBatchBytes });
    expect(at(1166).shape).toEqual(batchesOf(base, [10, 1166]));
    // 1166 / 1165 * 1.1 -> 2 parts of 5.
    let r = at(1165);
    expect(r.shape).toEqual(batchesOf(base, [5, 621], [5, 621]));
    expect(r.stats).toMatchObject({ batchesOut: 2, bytesOut: 1242, splitBatches: 1, oversizeBatches: 0 });
    // 1166 / 520 * 1.1 = 2.47 -> 3 parts of 4 (the last one has 2).
    r = at(520);
    expect(r.shape).toEqual(batchesOf(base, [4, 512], [4, 512], [2, 294]));
    expect(r.stats).toMatchObject({ batchesOut: 3, splitBatches: 2 });
    // 1166 / 450 * 1.1 = 2.85 -> parts of 4, each 512 / 450 * 1.1 = 1.25 -> at least 2: of 2.
    expect(at(450).shape).toEqual(batchesOf(base, [2, 294], [2, 294], [2, 294], [2, 294], [2, 294]));
    // 1166 / 400 * 1.1 = 3.2 -> 4 parts of 3, each over 400 -> 2 + 1; the last part, 1, as it is.
    r = at(400);
    expect(r.shape).toEqual(
      batchesOf(base, [2, 294], [1, 185], [2, 294], [1, 185], [2, 294], [1, 185], [1, 185]),
    );
    expect(r.stats).toMatchObject({ batchesOut: 7, splitBatches: 6, oversizeBatches: 0 });
    // 1166 / 62 * 1.1 = 20.7 parts, at most one a record; each still over: emitted, reported.
    r = at(62);
    expect(r.shape.map(([, n]) => n)).toEqual(Array.from({ length: 10 }, () => 1));
    expect(r.stats).toMatchObject({ batchesOut: 10, splitBatches: 9, oversizeBatches: 10 });
  });

  it('coalesce: plain entries share a batch up to coalesceBytes exactly', () => {
    // 17-byte records (10-byte values), so k records are 61 + 17k bytes; CreateTime, v1.
    const entries = Array.from({ length: 7 }, (_, i) =>
      encodeLegacyEntry(base + BigInt(i), {
        magic: 1,
        timestamp: 1_600_000_000_000n + BigInt(i),
        key: null,
        value: new Uint8Array(10).fill(97 + i),
      }),
    );
    for (const [coalesceBytes, counts] of [
      [61 + 3 * 17, [3, 3, 1]],
      [61 + 3 * 17 - 1, [2, 2, 2, 1]],
      [61 + 7 * 17, [7]],
    ] as const) {
      const up = new Upconverter({ grouping: 'coalesce', coalesceBytes });
      const batches = [...entries.flatMap((e) => up.push(e)), ...up.flush()];
      expect(batches.map((b) => readRecordBatchHeader(b).recordsCount)).toEqual(counts);
      expect(batches.map((b) => b.length)).toEqual(counts.map((n) => 61 + 17 * n));
      expect(readRecordBatchHeader(batches[0]).baseOffset).toBe(base);
    }
  });

  it('a record over maxBatchBytes with no oversize listener is emitted alone all the same', () => {
    const entry = wrapperOfTen(base, (i) => noise(i + 1, 100));
    for (const codec of [0, LZ4] as const) {
      const up = new Upconverter({ grouping: 'kafka', codec, maxBatchBytes: 100 });
      const batches = [...up.push(entry), ...up.flush()];
      expect(batches.map((b) => readRecordBatchHeader(b).baseOffset)).toEqual(
        Array.from({ length: 10 }, (_, i) => base + BigInt(i)),
      );
      expect(up.stats).toMatchObject({ batchesOut: 10, oversizeBatches: 10, splitBatches: 9 });
    }
  });
});

describe('Upconverter errors', () => {
  const entry = (offset: bigint, value = 'v') =>
    encodeLegacyEntry(offset, { magic: 0, key: null, value: new Uint8Array(Buffer.from(value)) });

  it('an offset that does not increase: CorruptRecordError naming both offsets, with the offset as context', () => {
    for (const [first, next] of [
      [5n, 5n],
      [7n, 6n],
      [GENERAL, GENERAL],
      [GENERAL + 2n, GENERAL + 1n],
    ]) {
      for (const grouping of ['kafka', 'coalesce'] as const) {
        const up = new Upconverter({ grouping });
        up.push(entry(first));
        let err: unknown;
        try {
          up.push(entry(next));
        } catch (e) {
          err = e;
        }
        expect(err).toBeInstanceOf(CorruptRecordError);
        expect(err).toMatchObject({
          detail: `offset ${next} follows offset ${first}: offsets must increase`,
          offset: next,
        });
      }
    }
  });

  it('an offset that does not increase, on the record that moves the stream to the general path', () => {
    // A timestamp past 2^52 is what the fast path leaves to the general one, for the rest of the stream.
    const late = (offset: bigint) =>
      encodeLegacyEntry(offset, { magic: 1, timestamp: 2n ** 60n, key: null, value: new Uint8Array(1) });
    for (const [first, next] of [
      [10n, 10n],
      [10n, 9n],
    ]) {
      const up = new Upconverter({ grouping: 'coalesce' });
      up.push(entry(first));
      expect(() => up.push(late(next))).toThrow(
        new CorruptRecordError(`offset ${next} follows offset ${first}: offsets must increase`, {
          offset: next,
        }),
      );
    }
    const up = new Upconverter({ grouping: 'coalesce' });
    up.push(entry(10n));
    up.push(late(11n));
    expect(up.flush().map((b) => readRecordBatchHeader(b).baseOffset)).toEqual([10n]);
  });

  it('bad options: InvalidArgumentError saying which and what was given', () => {
    expect(() => new Upconverter({ grouping: 'kafka', maxBatchBytes: 61 })).toThrow(
      new InvalidArgumentError('maxBatchBytes must exceed 61, got 61'),
    );
    expect(() => new Upconverter({ grouping: 'other' as 'kafka' })).toThrow(
      new InvalidArgumentError('unknown grouping other'),
    );
    expect(new Upconverter({ grouping: 'kafka', maxBatchBytes: 62 }).maxBatchBytes).toBe(62);
    // One default for every program: the CLI's, the config's, the Upconverter's.
    expect(new Upconverter({}).grouping).toBe('coalesce');
    expect(new Upconverter({}).coalesceBytes).toBe(1_048_576);
  });
});

describe.each([
  ['fast path', FAST],
  ['general path', GENERAL],
])('Upconverter options, %s', (_, base) => {
  it('maxDecompressedBytes: a wrapper that decompresses past it fails with DecompressionLimitError; up to it, converts', () => {
    // Ten v1 inner messages of 134 bytes (34 + a 100-byte value): 1340 bytes decompressed.
    const entry = wrapperOfTen(base, (i) => new Uint8Array(100).fill(i));
    const err = (() => {
      try {
        new Upconverter({ grouping: 'kafka', maxDecompressedBytes: 1339 }).push(entry);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(DecompressionLimitError);
    expect(err).toMatchObject({ limit: 1339 });
    const batches = new Upconverter({ grouping: 'kafka', maxDecompressedBytes: 1340 }).push(entry);
    expect(batches.map((b) => readRecordBatchHeader(b).recordsCount)).toEqual([10]);
  });

  it('prove: a batch that does not read back as its records is a VerifyMismatchError; not proving, it is emitted', async () => {
    const format = await import('@seglift/format');
    const entry = wrapperOfTen(base, (i) => new Uint8Array(10).fill(97 + i));
    // A broken batch encoder (the one of batches split for maxBatchBytes, on both paths): the last
    // value byte changes.
    const real = format.encodeRecordBatch;
    const spy = vi.spyOn(format, 'encodeRecordBatch').mockImplementation((...a) => {
      const out = Buffer.from(real(...a));
      out[out.length - 2] ^= 1;
      return out;
    });
    try {
      let err: unknown;
      try {
        new Upconverter({ grouping: 'kafka', prove: true, maxBatchBytes: 200 }).push(entry);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(format.VerifyMismatchError);
      expect((err as Error).message).toMatch(
        /^verify mismatch in upconverted batch: record 7 differs from the legacy record it was made of/,
      );
      const trusting = new Upconverter({ grouping: 'kafka', maxBatchBytes: 200 });
      expect(trusting.push(entry).map((b) => readRecordBatchHeader(b).recordsCount)).toEqual([8, 2]);
    } finally {
      spy.mockRestore();
    }
  });
});

describe.each([
  ['fast path', FAST],
  ['general path', GENERAL],
])('Upconverter, more on both paths: %s', (_, base) => {
  it('level reaches the codec: zstd at level 1 and at level 19 differ, each the same batch every time', () => {
    const text = (i: number) => new Uint8Array(Buffer.from(`record ${i} `.repeat(40)));
    const entry = wrapperOfTen(base, text);
    const at = (level: number) =>
      new Upconverter({ grouping: 'kafka', codec: CompressionType.ZSTD, level }).push(entry);
    const [fast, slow] = [at(1), at(19)];
    expect(fast.length).toBe(1);
    expect(slow.length).toBe(1);
    expect(Buffer.from(fast[0]).equals(Buffer.from(slow[0]))).toBe(false);
    expect(Buffer.from(at(19)[0]).equals(Buffer.from(slow[0]))).toBe(true);
    expect(decodeRecords(slow[0]).map((r) => Buffer.from(r.value!).toString())).toEqual(
      Array.from({ length: 10 }, (_, i) => Buffer.from(text(i)).toString()),
    );
  });

  it('coalesce: an entry handed over in a buffer the caller then reuses is copied', () => {
    const up = new Upconverter({ grouping: 'coalesce' });
    const shared = Buffer.alloc(128);
    for (const [i, v] of ['aa', 'bb', 'cc'].entries()) {
      const e = encodeLegacyEntry(base + BigInt(i), {
        magic: 0,
        key: null,
        value: new Uint8Array(Buffer.from(v)),
      });
      shared.fill(0);
      shared.set(e, 0);
      expect(up.push(shared.subarray(0, e.length))).toEqual([]);
    }
    shared.fill(0x7a);
    const [batch] = up.flush();
    expect(decodeRecords(batch).map((r) => Buffer.from(r.value!).toString())).toEqual(['aa', 'bb', 'cc']);
  });

  it('an offset delta of exactly 2^31 - 1 stays in the batch; one more starts a new one', () => {
    const max = 2_147_483_647n;
    const e = (offset: bigint) =>
      encodeLegacyEntry(offset, { magic: 0, key: null, value: new Uint8Array(1) });
    const up = new Upconverter({ grouping: 'coalesce' });
    const batches = [base, base + max, base + max + 1n, base + 2n * max + 1n].flatMap((o) => up.push(e(o)));
    batches.push(...up.flush());
    expect(
      batches.map((b) => readRecordBatchHeader(b)).map((h) => [h.baseOffset, h.lastOffsetDelta]),
    ).toEqual([
      [base, 2_147_483_647],
      [base + max + 1n, 2_147_483_647],
    ]);
  });
});

describe('Upconverter fast path coverage', () => {
  it('what a broker writes (v0 and v1, plain and gzip/snappy/lz4 wrappers) never reaches the general decoder', async () => {
    const deep = await import('./deep.js');
    const spy = vi.spyOn(deep, 'decodeLegacyRecords');
    try {
      const v = (s: string | null) => (s === null ? null : new Uint8Array(Buffer.from(s)));
      const entries: Uint8Array[] = [
        encodeLegacyEntry(0n, { magic: 0, key: null, value: v('a') }),
        encodeLegacyEntry(1n, { magic: 1, timestamp: 5n, key: v('k'), value: null }),
        encodeLegacyEntry(2n, { magic: 1, attributes: 8, timestamp: 6n, key: v(''), value: v('') }),
      ];
      let offset = 3n;
      for (const codec of [1, 2, 3] as const)
        for (const magic of [0, 1] as const) {
          entries.push(
            encodeCompressedWrapper({
              magic,
              codec,
              messages: [0, 1, 2].map((i) => ({
                offset: offset + BigInt(i),
                timestamp: 100n + BigInt(i),
                key: i === 0 ? null : v(`k${i}`),
                value: v(`value ${i}`.repeat(i * 50)),
              })),
            }),
          );
          offset += 3n;
        }
      const up = new Upconverter({ grouping: 'coalesce' });
      const batches = [...entries.flatMap((e) => up.push(e)), ...up.flush()];
      expect(
        batches.flatMap((b) =>
          decodeRecords(b).map((r) => r.offsetDelta + Number(readRecordBatchHeader(b).baseOffset)),
        ),
      ).toEqual(Array.from({ length: Number(offset) }, (_, i) => i));
      expect(spy).not.toHaveBeenCalled();
      // The decoder is what the spy sees: an offset past 2^52 goes to it.
      up.push(encodeLegacyEntry(2n ** 53n, { magic: 0, key: null, value: v('x') }));
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});
