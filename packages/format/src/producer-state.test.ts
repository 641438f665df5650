import { describe, expect, it } from 'vitest';
import { ControlRecordType, encodeControlRecordKey, encodeEndTransactionMarker } from './control.js';
import {
  javaHashMapCapacity,
  javaLongHashSpread,
  ProducerStateError,
  ProducerStateReplay,
} from './producer-state.js';
import { encodeRecordBatch, readRecordBatchHeader } from './record-batch.js';
import type { Record } from './types.js';

const TXN = 0x10;
const CONTROL = 0x20;

function batch(o: {
  baseOffset: bigint;
  count?: number;
  producerId: bigint;
  epoch: number;
  baseSequence: number;
  attributes?: number;
  maxTimestamp?: bigint;
  records?: Record[];
}): Uint8Array {
  const n = o.count ?? 1;
  const records: Record[] =
    o.records ??
    Array.from({ length: n }, (_, i) => ({
      attributes: 0,
      timestampDelta: i,
      offsetDelta: i,
      key: null,
      value: new Uint8Array([i]),
      headers: [],
    }));
  return encodeRecordBatch(
    {
      baseOffset: o.baseOffset,
      partitionLeaderEpoch: 0,
      attributes: o.attributes ?? 0,
      lastOffsetDelta: records.length - 1,
      baseTimestamp: 1_000n,
      maxTimestamp: o.maxTimestamp ?? 1_000n + BigInt(records.length - 1),
      producerId: o.producerId,
      producerEpoch: o.epoch,
      baseSequence: o.baseSequence,
    },
    records,
    0,
  );
}

function marker(
  baseOffset: bigint,
  producerId: bigint,
  epoch: number,
  type: number,
  coordinatorEpoch: number,
) {
  return batch({
    baseOffset,
    producerId,
    epoch,
    baseSequence: -1,
    attributes: TXN | CONTROL,
    maxTimestamp: 1_050n,
    records: [
      {
        attributes: 0,
        timestampDelta: 50,
        offsetDelta: 0,
        key: encodeControlRecordKey(type),
        value: encodeEndTransactionMarker(coordinatorEpoch),
        headers: [],
      },
    ],
  });
}

const apply = (r: ProducerStateReplay, b: Uint8Array) => r.apply(readRecordBatchHeader(b), b);

describe('ProducerStateReplay (ProducerAppendInfo/ProducerStateEntry as Kafka applies them)', () => {
  it('no producer id (legacy-like, non-idempotent v2): the state stays empty', () => {
    const r = new ProducerStateReplay();
    apply(r, batch({ baseOffset: 0n, count: 3, producerId: -1n, epoch: -1, baseSequence: -1 }));
    expect(r.snapshot()).toEqual([]);
  });

  it('idempotent batches: last sequence, last offset, offset delta and max timestamp of the last batch', () => {
    const r = new ProducerStateReplay();
    apply(r, batch({ baseOffset: 0n, count: 3, producerId: 7n, epoch: 0, baseSequence: 0 }));
    apply(
      r,
      batch({ baseOffset: 3n, count: 2, producerId: 7n, epoch: 0, baseSequence: 3, maxTimestamp: 999n }),
    );
    expect(r.snapshot()).toEqual([
      {
        producerId: 7n,
        producerEpoch: 0,
        lastSequence: 4,
        lastOffset: 4n,
        offsetDelta: 1,
        timestamp: 999n,
        coordinatorEpoch: -1,
        currentTxnFirstOffset: -1n,
      },
    ]);
  });

  it('sequences wrap at Integer.MAX_VALUE (DefaultRecordBatch.incrementSequence)', () => {
    const r = new ProducerStateReplay();
    apply(r, batch({ baseOffset: 0n, count: 3, producerId: 1n, epoch: 2, baseSequence: 0x7fffffff - 1 }));
    expect(r.snapshot()[0].lastSequence).toBe(0);
  });

  it('a transaction open at a segment end, then its COMMIT marker: coordinator epoch, marker timestamp, epoch bump keeps nothing', () => {
    const r = new ProducerStateReplay();
    apply(
      r,
      batch({ baseOffset: 10n, count: 2, producerId: 5n, epoch: 3, baseSequence: 0, attributes: TXN }),
    );
    // What a snapshot at a roll here holds: the ongoing transaction's first offset.
    expect(r.snapshot()[0]).toMatchObject({
      currentTxnFirstOffset: 10n,
      lastOffset: 11n,
      coordinatorEpoch: -1,
    });
    apply(
      r,
      batch({ baseOffset: 12n, count: 1, producerId: 5n, epoch: 3, baseSequence: 2, attributes: TXN }),
    );
    expect(r.snapshot()[0]).toMatchObject({ currentTxnFirstOffset: 10n, lastOffset: 12n, lastSequence: 2 });
    apply(r, marker(13n, 5n, 3, ControlRecordType.COMMIT, 4));
    expect(r.snapshot()[0]).toEqual({
      producerId: 5n,
      producerEpoch: 3,
      lastSequence: 2,
      lastOffset: 12n,
      offsetDelta: 0,
      timestamp: 1_050n,
      coordinatorEpoch: 4,
      currentTxnFirstOffset: -1n,
    });
    // A marker with a new epoch (an abort by a fenced producer's successor) forgets the batches.
    apply(r, marker(14n, 5n, 4, ControlRecordType.ABORT, 4));
    expect(r.snapshot()[0]).toMatchObject({
      producerEpoch: 4,
      lastSequence: -1,
      lastOffset: -1n,
      offsetDelta: 0,
    });
  });

  it('a non-transactional batch inside a transaction is refused, as Kafka refuses it', () => {
    const r = new ProducerStateReplay();
    apply(r, batch({ baseOffset: 0n, producerId: 5n, epoch: 0, baseSequence: 0, attributes: TXN }));
    expect(() => apply(r, batch({ baseOffset: 1n, producerId: 5n, epoch: 0, baseSequence: 1 }))).toThrow(
      ProducerStateError,
    );
  });

  it("entries come in java.util.HashMap's iteration order: by bucket, then insertion", () => {
    expect(javaLongHashSpread(0x1_0000_0001n)).toBe(0);
    expect(javaLongHashSpread(-1n)).toBe(0);
    expect(javaLongHashSpread(0x12345n)).toBe((0x12345 ^ 0x1) >>> 0);
    expect([12, 13, 24, 25].map(javaHashMapCapacity)).toEqual([16, 32, 32, 64]);
    const r = new ProducerStateReplay();
    for (const [i, id] of [33n, 2n, 17n, 1n].entries())
      apply(r, batch({ baseOffset: BigInt(i), producerId: id, epoch: 0, baseSequence: 0 }));
    // Capacity 16: buckets 1 (33, 17, 1 in insertion order) and 2.
    expect(r.snapshot().map((e) => e.producerId)).toEqual([33n, 17n, 1n, 2n]);
  });
});
