/**
 * The producer state Kafka keeps per partition (ProducerStateManager, ProducerAppendInfo,
 * ProducerStateEntry), replayed batch by batch in offset order as Kafka's log recovery does, so
 * that `<offset>.snapshot` can be written for a segment end Kafka never snapshotted. Pure: the
 * caller reads the batches (packages/segment, producer-snapshots.ts).
 */
import { ControlRecordType, decodeControlRecordKey, decodeEndTransactionMarker } from './control.js';
import { CorruptRecordError } from './errors.js';
import { incrementSequence } from './logical.js';
import type { ProducerSnapshotEntry } from './producer-snapshot.js';
import { decodeRecords, isControlBatch, isTransactional, type RecordBatchHeader } from './record-batch.js';

interface Entry {
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
  lastTimestamp: bigint;
  currentTxnFirstOffset: bigint;
  /** The last of ProducerStateEntry's retained batches: all a snapshot writes of them. */
  lastBatch: { lastSequence: number; lastOffset: bigint; offsetDelta: number } | undefined;
  /** Order in which Kafka's map first saw the producer (order within a HashMap bucket). */
  seq: number;
}

/** A batch that Kafka's producer state refuses (Kafka's load would fail the same way). */
export class ProducerStateError extends CorruptRecordError {}

/**
 * Producer state of one partition. Every batch with a producer id counts, in offset order;
 * legacy (magic 0/1) entries and batches without a producer id leave it unchanged, so a
 * partition of legacy data only has the empty state. Producers are never expired here: Kafka
 * drops expired ones when it loads a snapshot (isProducerExpired), so a snapshot that keeps them
 * loads to the same state.
 */
export class ProducerStateReplay {
  private readonly producers = new Map<bigint, Entry>();
  private seen = 0;

  /** Applies one v2 batch (ProducerAppendInfo.append). `batch` is the whole batch; needed for control batches only. */
  apply(h: RecordBatchHeader, batch?: Uint8Array): void {
    if (h.producerId < 0n) return; // RecordBatch.hasProducerId
    let e = this.producers.get(h.producerId);
    if (e === undefined) {
      // ProducerStateEntry.empty: even a batch that changes nothing creates the entry.
      e = {
        producerId: h.producerId,
        producerEpoch: -1,
        coordinatorEpoch: -1,
        lastTimestamp: -1n,
        currentTxnFirstOffset: -1n,
        lastBatch: undefined,
        seq: this.seen++,
      };
      this.producers.set(h.producerId, e);
    }
    if (isControlBatch(h)) {
      if (batch === undefined) throw new Error('ProducerStateReplay.apply: a control batch needs its bytes');
      const records = decodeRecords(batch);
      if (records.length === 0) return;
      const r = records[0];
      const key = decodeControlRecordKey(r.key);
      if (key.type !== ControlRecordType.ABORT && key.type !== ControlRecordType.COMMIT)
        throw new ProducerStateError(`control record type ${key.type} is not a transaction marker`, {
          offset: h.baseOffset,
        });
      const marker = decodeEndTransactionMarker(r.value);
      // Record.timestamp(): LogAppendTime batches give every record the batch's max timestamp.
      const timestamp =
        (h.attributes & 0x08) !== 0 ? h.maxTimestamp : h.baseTimestamp + BigInt(r.timestampDelta);
      // ProducerStateEntry.update(epoch, coordinatorEpoch, timestamp): no batch, txn closed.
      this.bumpEpoch(e, h.producerEpoch);
      e.coordinatorEpoch = marker.coordinatorEpoch;
      e.currentTxnFirstOffset = -1n;
      e.lastTimestamp = timestamp;
      return;
    }
    const lastOffset = h.baseOffset + BigInt(h.lastOffsetDelta);
    const lastSequence = h.baseSequence < 0 ? -1 : incrementSequence(h.baseSequence, h.lastOffsetDelta);
    this.bumpEpoch(e, h.producerEpoch);
    e.lastBatch = { lastSequence, lastOffset, offsetDelta: h.lastOffsetDelta };
    e.lastTimestamp = h.maxTimestamp;
    const transactional = isTransactional(h);
    if (e.currentTxnFirstOffset >= 0n && !transactional)
      throw new ProducerStateError(
        `non-transactional batch of producer ${h.producerId} inside its transaction started at ${e.currentTxnFirstOffset}`,
        { offset: h.baseOffset },
      );
    if (e.currentTxnFirstOffset < 0n && transactional) e.currentTxnFirstOffset = h.baseOffset;
  }

  /** ProducerStateEntry.maybeUpdateProducerEpoch: a new epoch forgets the retained batches. */
  private bumpEpoch(e: Entry, epoch: number): void {
    if (e.producerEpoch !== epoch) {
      e.lastBatch = undefined;
      e.producerEpoch = epoch;
    }
  }

  get size(): number {
    return this.producers.size;
  }

  /** The snapshot entries now, in the order Kafka's HashMap<Long, ProducerStateEntry> iterates. */
  snapshot(): ProducerSnapshotEntry[] {
    const entries = [...this.producers.values()];
    const capacity = javaHashMapCapacity(entries.length);
    const bucket = (id: bigint) => javaLongHashSpread(id) & (capacity - 1);
    entries.sort((a, b) => bucket(a.producerId) - bucket(b.producerId) || a.seq - b.seq);
    return entries.map((e) => ({
      producerId: e.producerId,
      producerEpoch: e.producerEpoch,
      lastSequence: e.lastBatch?.lastSequence ?? -1,
      lastOffset: e.lastBatch?.lastOffset ?? -1n,
      offsetDelta: e.lastBatch?.offsetDelta ?? 0,
      timestamp: e.lastTimestamp,
      coordinatorEpoch: e.coordinatorEpoch,
      currentTxnFirstOffset: e.currentTxnFirstOffset,
    }));
  }
}

/** Long.hashCode, then HashMap.hash's spread of the high bits. */
export function javaLongHashSpread(v: bigint): number {
  const u = BigInt.asUintN(64, v);
  const h = Number((u ^ (u >> 32n)) & 0xffffffffn) | 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * Table size of a java.util.HashMap that grew to `size` entries from the default 16 (it doubles
 * when size exceeds 3/4 of it). Iteration is by bucket, then insertion order within a bucket
 * (tree bins, 9+ colliding producer ids, are not modelled).
 */
export function javaHashMapCapacity(size: number): number {
  let capacity = 16;
  while (size > capacity * 0.75) capacity *= 2;
  return capacity;
}
