import { LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET, SegmentIndexBuilder } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import { IndexChecker } from './index-check.js';

/** A 61-byte v2 header at byte 5 of its buffer with the fields the checker reads. */
function header(baseOffset: bigint, lastOffsetDelta: number, maxTimestamp: bigint): DataView {
  const v = new DataView(new ArrayBuffer(70));
  v.setBigInt64(5, baseOffset);
  v.setInt32(5 + LAST_OFFSET_DELTA_OFFSET, lastOffsetDelta);
  v.setBigInt64(5 + MAX_TIMESTAMP_OFFSET, maxTimestamp);
  return v;
}

type Batch = [baseOffset: bigint, delta: number, maxTimestamp: bigint, size: number];

/** The problems found by `batch` and by `batchAt` over the same batches and index bytes. */
function both(base: bigint, batches: Batch[], index: Uint8Array, timeIndex: Uint8Array) {
  const run = (at: boolean) => {
    const c = new IndexChecker('x.index', index, 'x.timeindex', timeIndex, base);
    let position = 0;
    for (const [baseOffset, delta, ts, size] of batches) {
      if (at) c.batchAt(header(baseOffset, delta, ts), 5, position);
      else c.batch(position, baseOffset + BigInt(delta), ts);
      position += size;
    }
    return c.finish();
  };
  return [run(false), run(true)];
}

function indexesOf(base: bigint, batches: Batch[]) {
  const b = new SegmentIndexBuilder(base, { indexIntervalBytes: 150 });
  let position = 0;
  for (const [baseOffset, delta, ts, size] of batches) {
    b.append(position, size, baseOffset + BigInt(delta), ts);
    position += size;
  }
  return b.finish();
}

describe('IndexChecker.batchAt: the same problems as batch, from the batch header', () => {
  for (const base of [0n, 77n, 2n ** 52n + 1n]) {
    it(`base offset ${base}: right indexes, then each entry changed, give the same problems`, () => {
      const batches: Batch[] = [];
      let next = base;
      for (let i = 0; i < 60; i++) {
        const delta = i % 4;
        const ts =
          i % 7 === 3 ? -1n : i % 11 === 5 ? 2n ** 60n + BigInt(i) : 1_600_000_000_000n + BigInt(i * 3);
        batches.push([next, delta, ts, 61 + ((i * 37) % 200)]);
        next += BigInt(delta + 1);
      }
      const { offsetIndex, timeIndex } = indexesOf(base, batches);
      const [a, b] = both(base, batches, offsetIndex, timeIndex);
      expect(a).toEqual([]);
      expect(b).toEqual(a);
      // Every byte of each file flipped in turn: whatever is wrong, both say it the same way.
      let seen = 0;
      for (const [file, which] of [
        [offsetIndex, 0],
        [timeIndex, 1],
      ] as const) {
        for (let k = 0; k < file.length; k++) {
          const bad = Buffer.from(file);
          bad[k] ^= 0x41;
          const [x, y] =
            which === 0 ? both(base, batches, bad, timeIndex) : both(base, batches, offsetIndex, bad);
          expect(y).toEqual(x);
          seen += x.length;
        }
      }
      expect(seen).toBeGreaterThan(0);
    });
  }
  it('a last offset past int32 from the base, or below it: the same problems', () => {
    const base = 1000n;
    const good: Batch[] = [
      [1000n, 0, 5n, 200],
      [1001n, 0, 6n, 200],
    ];
    const { offsetIndex, timeIndex } = indexesOf(base, good);
    for (const odd of [
      [1000n + 2n ** 31n, 0, 6n, 200],
      [999n - 2n ** 31n, 0, 6n, 200],
      [2n ** 62n, 0, 6n, 200],
    ] as Batch[]) {
      const [a, b] = both(base, [good[0], odd], offsetIndex, timeIndex);
      expect(a.length).toBeGreaterThan(0);
      expect(b).toEqual(a);
    }
  });
});
