import { describe, expect, it } from 'vitest';
import { CorruptRecordError, InvalidArgumentError } from './errors.js';
import {
  DEFAULT_INDEX_INTERVAL_BYTES,
  decodeOffsetIndex,
  decodeTimeIndex,
  OFFSET_INDEX_ENTRY_SIZE,
  offsetIndexView,
  SegmentIndexBuilder,
  TIME_INDEX_ENTRY_SIZE,
  timeIndexView,
} from './index-file.js';
import { LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET } from './record-batch.js';

interface Entry {
  size: number;
  lastOffset: bigint;
  maxTimestamp: bigint;
}

function build(baseOffset: bigint, entries: Entry[], indexIntervalBytes?: number) {
  const b = new SegmentIndexBuilder(
    baseOffset,
    indexIntervalBytes === undefined ? {} : { indexIntervalBytes },
  );
  let position = 0;
  for (const e of entries) {
    b.append(position, e.size, e.lastOffset, e.maxTimestamp);
    position += e.size;
  }
  const { offsetIndex, timeIndex } = b.finish();
  return {
    offsetIndex,
    timeIndex,
    offsets: decodeOffsetIndex(offsetIndex, baseOffset).map((e) => [e.offset, e.position]),
    times: decodeTimeIndex(timeIndex, baseOffset).map((e) => [e.timestamp, e.offset]),
  };
}

const uniform = (n: number, size: number, ts: (i: number) => bigint = (i) => 1000n + BigInt(i)): Entry[] =>
  Array.from({ length: n }, (_, i) => ({ size, lastOffset: BigInt(i), maxTimestamp: ts(i) }));

describe('SegmentIndexBuilder (LogSegment.recover semantics)', () => {
  it('constants', () => {
    expect([OFFSET_INDEX_ENTRY_SIZE, TIME_INDEX_ENTRY_SIZE, DEFAULT_INDEX_INTERVAL_BYTES]).toEqual([
      8, 12, 4096,
    ]);
  });

  it('1000-byte batches: an entry whenever the gap since the last indexed position exceeds 4096', () => {
    const r = build(0n, uniform(12, 1000));
    // positions 0..11000; 5000 - 0 > 4096, 10000 - 5000 > 4096
    expect(r.offsets).toEqual([
      [5n, 5000],
      [10n, 10000],
    ]);
    // time entries at the same points (max so far, its batch's last offset), then the final one
    expect(r.times).toEqual([
      [1005n, 5n],
      [1010n, 10n],
      [1011n, 11n],
    ]);
    expect(r.offsetIndex.length).toBe(16);
    expect(r.timeIndex.length).toBe(36);
  });

  it('exactly 4096 bytes since the last entry is not enough; 4097 is (strict >)', () => {
    expect(build(0n, uniform(3, 4096)).offsets).toEqual([[2n, 8192]]);
    expect(build(0n, uniform(3, 4097)).offsets).toEqual([
      [1n, 4097],
      [2n, 8194],
    ]);
  });

  it('the first batch is never indexed, even with interval 0', () => {
    const r = build(0n, uniform(3, 10), 0);
    expect(r.offsets).toEqual([
      [1n, 10],
      [2n, 20],
    ]);
    expect(build(0n, uniform(1, 100_000)).offsets).toEqual([]);
  });

  it('time index: max so far, strictly increasing, entries only at index points and at the end', () => {
    const ts = [10n, 5n, 20n, 20n, 15n];
    const r = build(
      0n,
      ts.map((t, i) => ({ size: 100, lastOffset: BigInt(i), maxTimestamp: t })),
      0,
    );
    expect(r.offsets).toEqual([
      [1n, 100],
      [2n, 200],
      [3n, 300],
      [4n, 400],
    ]);
    // at 100: (10, 0); at 200: (20, 2); at 300/400 20 is not > 20; final: not > 20 either
    expect(r.times).toEqual([
      [10n, 0n],
      [20n, 2n],
    ]);
  });

  it('the offset of the max timestamp is that of the earliest batch holding it', () => {
    const ts = [7n, 9n, 9n, 3n];
    const r = build(
      0n,
      ts.map((t, i) => ({ size: 10, lastOffset: BigInt(i * 2 + 1), maxTimestamp: t })),
      1_000_000,
    );
    expect(r.offsets).toEqual([]);
    expect(r.times).toEqual([[9n, 3n]]);
  });

  it('all -1 timestamps (v0 data) give an empty time index', () => {
    const r = build(
      0n,
      uniform(20, 1000, () => -1n),
    );
    expect(r.offsets.length).toBe(3);
    expect(r.timeIndex.length).toBe(0);
  });

  it('timestamps below -1 never raise maxSoFar', () => {
    const r = build(
      0n,
      uniform(3, 10, () => -5n),
      0,
    );
    expect(r.timeIndex.length).toBe(0);
  });

  it('offsets are relative to the base offset, bytes big-endian and trimmed', () => {
    const entries: Entry[] = [
      { size: 5000, lastOffset: 1002n, maxTimestamp: 50n },
      { size: 5000, lastOffset: 1010n, maxTimestamp: 60n },
      { size: 10, lastOffset: 1011n, maxTimestamp: 70n },
    ];
    const r = build(1000n, entries);
    // at 5000: 5000 > 4096 -> (1010, 5000); at 10000: 5000 > 4096 -> (1011, 10000)
    expect(Buffer.from(r.offsetIndex).toString('hex')).toBe('0000000a00001388' + '0000000b00002710');
    expect(Buffer.from(r.timeIndex).toString('hex')).toBe(
      '000000000000003c0000000a' + '00000000000000460000000b',
    );
    expect(r.offsets).toEqual([
      [1010n, 5000],
      [1011n, 10000],
    ]);
    expect(r.times).toEqual([
      [60n, 1010n],
      [70n, 1011n],
    ]);
  });

  it('legacy entries: the entry offset and timestamp stand for lastOffset and maxTimestamp', () => {
    // v1 messages with timestamps, then v0 (-1)
    const r = build(
      0n,
      [
        { size: 3000, lastOffset: 0n, maxTimestamp: 100n },
        { size: 3000, lastOffset: 1n, maxTimestamp: -1n },
        { size: 3000, lastOffset: 2n, maxTimestamp: -1n },
      ],
      4096,
    );
    expect(r.offsets).toEqual([[2n, 6000]]);
    expect(r.times).toEqual([[100n, 0n]]);
  });

  it('relative offset overflow and offsets below the base are errors', () => {
    const b = new SegmentIndexBuilder(10n);
    expect(() => b.append(0, 100, 10n + 2n ** 31n, 0n)).toThrow(CorruptRecordError);
    const ok = new SegmentIndexBuilder(10n);
    ok.append(0, 100, 10n + 2n ** 31n - 1n, 0n);
    expect(() => new SegmentIndexBuilder(10n).append(0, 10, 9n, 0n)).toThrow(/does not fit an index/);
  });

  it('an indexed offset not above the previous one is an error (OffsetIndex.append)', () => {
    const b = new SegmentIndexBuilder(0n, { indexIntervalBytes: 0 });
    b.append(0, 10, 5n, 1n);
    b.append(10, 10, 6n, 1n);
    expect(() => b.append(20, 10, 6n, 1n)).toThrow(/not larger than the last indexed offset 6/);
  });

  it('entries must come in file order; finish is idempotent', () => {
    const b = new SegmentIndexBuilder(0n);
    b.append(0, 10, 0n, 5n);
    expect(() => b.append(11, 10, 1n, 5n)).toThrow(InvalidArgumentError);
    const first = b.finish();
    expect(b.finish()).toEqual(first);
    expect(() => b.append(10, 10, 1n, 5n)).toThrow(InvalidArgumentError);
  });

  it('decoders reject partial entries', () => {
    expect(() => decodeOffsetIndex(new Uint8Array(9), 0n)).toThrow(CorruptRecordError);
    expect(() => decodeTimeIndex(new Uint8Array(13), 0n)).toThrow(CorruptRecordError);
    expect(decodeOffsetIndex(new Uint8Array(0), 0n)).toEqual([]);
    expect(() => offsetIndexView(new Uint8Array(9), 0n)).toThrow(
      /offset index size 9 is not a multiple of 8/,
    );
    expect(() => timeIndexView(new Uint8Array(13), 0n)).toThrow(/time index size 13 is not a multiple of 12/);
  });

  it('views decode each entry as the decoders do, signed fields included', () => {
    const bytes = new Uint8Array(24 * 12);
    let x = 0x9e3779b9;
    for (let i = 0; i < bytes.length; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      bytes[i] = x >>> 24;
    }
    const base = 5_000_000_000n;
    const o = offsetIndexView(bytes, base);
    expect(
      Array.from({ length: o.length }, (_, i) => ({ offset: o.offset(i), position: o.position(i) })),
    ).toEqual(decodeOffsetIndex(bytes, base));
    const t = timeIndexView(bytes, base);
    expect(
      Array.from({ length: t.length }, (_, i) => ({ timestamp: t.timestamp(i), offset: t.offset(i) })),
    ).toEqual(decodeTimeIndex(bytes, base));
    expect([o.length, t.length]).toEqual([36, 24]);
  });
});

describe('SegmentIndexBuilder: limits and errors (killing mutants of index-file.ts)', () => {
  it('grows past its first buffer: hundreds of entries, every one as appended', () => {
    const b = new SegmentIndexBuilder(1000n, { indexIntervalBytes: 0 });
    const n = 300;
    for (let i = 0; i < n; i++) b.append(i * 10, 10, 1000n + BigInt(i), BigInt(i + 1));
    const { offsetIndex, timeIndex } = b.finish();
    // The first entry is at position 0, never more than 0 bytes past the last indexed one.
    const offsets = decodeOffsetIndex(offsetIndex, 1000n);
    expect(offsets.length).toBe(n - 1);
    expect(offsets.at(-1)).toEqual({ offset: 1000n + BigInt(n - 1), position: (n - 1) * 10 });
    expect(offsets.every((e, i) => e.offset === 1001n + BigInt(i) && e.position === (i + 1) * 10)).toBe(true);
    const times = decodeTimeIndex(timeIndex, 1000n);
    expect(times.length).toBe(n - 1);
    expect(times.at(-1)).toEqual({ timestamp: BigInt(n), offset: 1000n + BigInt(n - 1) });
  });

  it('refuses an interval that is not a non-negative integer', () => {
    for (const bad of [-1, 1.5, Number.NaN]) {
      expect(() => new SegmentIndexBuilder(0n, { indexIntervalBytes: bad })).toThrow(InvalidArgumentError);
      expect(() => new SegmentIndexBuilder(0n, { indexIntervalBytes: bad })).toThrow(
        /^bad indexIntervalBytes/,
      );
    }
    expect(new SegmentIndexBuilder(0n, { indexIntervalBytes: 0 }).indexIntervalBytes).toBe(0);
  });

  it('errors say what and where', () => {
    const b = new SegmentIndexBuilder(100n);
    expect(() => b.append(0, 10, 99n, 1n)).toThrow(
      expect.objectContaining({
        position: 0,
        offset: 99n,
        message: expect.stringMatching(/^offset 99 does not fit/),
      }),
    );
    b.append(0, 10, 100n, 1n);
    expect(() => b.append(5, 10, 101n, 1n)).toThrow(
      /^entries must be appended in file order: got position 5, expected 10/,
    );
    const c = new SegmentIndexBuilder(0n, { indexIntervalBytes: 0 });
    c.append(0, 10, 5n, 1n);
    c.append(10, 10, 9n, 2n);
    expect(() => c.append(20, 10, 9n, 3n)).toThrow(
      expect.objectContaining({
        position: 20,
        offset: 9n,
        message: expect.stringMatching(/^offset 9 is not larger/),
      }),
    );
    c.finish();
    expect(() => c.append(30, 10, 10n, 4n)).toThrow(/^SegmentIndexBuilder already finished/);
    expect(() => decodeOffsetIndex(new Uint8Array(13), 0n)).toThrow(
      expect.objectContaining({
        position: 8,
        message: expect.stringMatching(/^offset index size 13 is not a multiple of 8/),
      }),
    );
    expect(() => timeIndexView(new Uint8Array(25), 0n)).toThrow(
      expect.objectContaining({
        position: 24,
        message: expect.stringMatching(/^time index size 25 is not a multiple of 12/),
      }),
    );
    expect(() => offsetIndexView(new Uint8Array(9), 0n)).toThrow(CorruptRecordError);
    expect(() => decodeTimeIndex(new Uint8Array(13), 0n)).toThrow(
      /^time index size 13 is not a multiple of 12/,
    );
  });

  it("a time entry may not point below the last one's offset (an unindexed entry with a higher offset set it)", () => {
    // Interval 0: every entry but the one at position 0 is indexed.
    const b = new SegmentIndexBuilder(0n, { indexIntervalBytes: 0 });
    b.append(0, 10, 50n, 9n); // not indexed, but the largest timestamp so far: offset 50
    b.append(10, 10, 40n, 1n); // indexed: time entry (9, 50)
    expect(() => b.append(20, 10, 45n, 10n)).toThrow(
      expect.objectContaining({
        position: 20,
        offset: 45n,
        message: expect.stringMatching(/^time index offset 45 is below the last entry's offset 50/),
      }),
    );
  });

  it('views decode relative offsets as stored', () => {
    const b = new SegmentIndexBuilder(50n, { indexIntervalBytes: 0 });
    b.append(0, 10, 50n, 7n);
    b.append(10, 10, 57n, 8n);
    const { offsetIndex, timeIndex } = b.finish();
    const ov = offsetIndexView(offsetIndex, 50n);
    expect([ov.length, ov.relativeOffset(0), ov.offset(0), ov.position(0)]).toEqual([1, 7, 57n, 10]);
    const tv = timeIndexView(timeIndex, 50n);
    expect([tv.length, tv.timestamp(0), tv.relativeOffset(0), tv.offset(0)]).toEqual([1, 8n, 7, 57n]);
  });
});

describe('SegmentIndexBuilder.appendBatchAt: the same indexes and errors as append, from the batch header', () => {
  /** A 61-byte v2 header with the fields appendBatchAt reads (baseOffset, lastOffsetDelta, maxTimestamp). */
  function header(baseOffset: bigint, lastOffsetDelta: number, maxTimestamp: bigint): DataView {
    const v = new DataView(new ArrayBuffer(64));
    // At byte 3 of the buffer: the header need not start at 0.
    v.setBigInt64(3, baseOffset);
    v.setInt32(3 + LAST_OFFSET_DELTA_OFFSET, lastOffsetDelta);
    v.setBigInt64(3 + MAX_TIMESTAMP_OFFSET, maxTimestamp);
    return v;
  }
  /** Both builders over the same batches: [indexes or error of append, of appendBatchAt]. */
  function both(base: bigint, batches: [bigint, number, bigint, number][], interval: number) {
    const run = (at: boolean) => {
      const b = new SegmentIndexBuilder(base, { indexIntervalBytes: interval });
      let position = 0;
      try {
        for (const [baseOffset, delta, ts, size] of batches) {
          if (at) b.appendBatchAt(header(baseOffset, delta, ts), 3, position, size);
          else b.append(position, size, baseOffset + BigInt(delta), ts);
          position += size;
        }
        const { offsetIndex, timeIndex } = b.finish();
        return [Buffer.from(offsetIndex).toString('hex'), Buffer.from(timeIndex).toString('hex')];
      } catch (err) {
        const e = err as CorruptRecordError;
        return [e.constructor.name, e.detail, e.position, e.offset];
      }
    };
    return [run(false), run(true)];
  }
  // Timestamps of every kind: -1, negative, past 2^53, the int64 ends, equal and going back.
  const TIMES = [
    -1n,
    0n,
    1_600_000_000_000n,
    -5n,
    2n ** 53n + 1n,
    2n ** 63n - 1n,
    -(2n ** 63n),
    4n,
    2n ** 32n - 1n,
  ];
  for (const base of [0n, 1000n, 2n ** 52n - 10n, 2n ** 52n + 7n, 2n ** 62n]) {
    it(`base offset ${base}: every batch shape gives the same bytes`, () => {
      let seed = 12345;
      const rand = () => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        return seed / 0x80000000;
      };
      const batches: [bigint, number, bigint, number][] = [];
      let next = base;
      for (let i = 0; i < 400; i++) {
        const delta = Math.floor(rand() * 5);
        const ts =
          rand() < 0.5 ? TIMES[Math.floor(rand() * TIMES.length)] : 1_600_000_000_000n + BigInt(i * 7);
        batches.push([next, delta, ts, 61 + Math.floor(rand() * 300)]);
        next += BigInt(delta + 1);
      }
      const [a, b] = both(base, batches, 200);
      expect(b).toEqual(a);
      expect(a[0]).toMatch(/^[0-9a-f]+$/);
    });
  }
  it('an offset below the base, past int32 from it, or not increasing: the same error', () => {
    for (const batches of [
      [[5n, 0, 1n, 100]],
      [[999n, 0, 1n, 100]],
      [[1000n + 2n ** 31n - 1n, 0, 1n, 100]],
      [[1000n + 2n ** 31n - 1n, 1, 1n, 100]],
      [[2n ** 52n + 3n, 0, 1n, 100]],
      [[-4n, 0, 1n, 100]],
      [
        [1000n, 9, 1n, 300],
        [1005n, 0, 2n, 300],
        [1003n, 0, 3n, 300],
      ],
    ] as [bigint, number, bigint, number][][]) {
      const [a, b] = both(1000n, batches, 0);
      expect(b).toEqual(a);
    }
    expect(both(1000n, [[999n, 0, 1n, 100]], 0)[1]).toEqual([
      'CorruptRecordError',
      'offset 999 does not fit an index relative to base offset 1000',
      0,
      999n,
    ]);
  });
});
