/**
 * Test-only: runs an Upconverter over legacy entries and checks the v2 output with both
 * @seglift/format's decoder and kafkajs's, record by record against the legacy source. The
 * expected records come from kafkajs's legacy MessageSet decoder (reference codecs, see
 * kafkajs.ts) with Kafka's legacy timestamp rules applied here, never from @seglift/legacy; a
 * caller with its own vectors (kafka-python, hand-written) passes them too.
 */
import {
  batchCompression,
  batchTimestampType,
  checkRecordBatchCrc,
  decodeRecords,
  isControlBatch,
  isTransactional,
  type LogicalRecord,
  logicalRecordsOfBatch,
  readRecordBatchHeader,
} from '@seglift/format';
import { expect } from 'vitest';
import {
  type OversizeBatch,
  Upconverter,
  type UpconverterOptions,
  type UpconverterStats,
} from '../upconvert.js';
import { KAFKAJS_LOG_APPEND_TIME, kafkajsDecodeMessageSet, kafkajsDecodeRecordBatch } from './kafkajs.js';

const hex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('hex'));

export interface UpconvertResult {
  batches: Uint8Array[];
  stats: UpconverterStats;
  oversize: OversizeBatch[];
  expected: ExpectedRecord[];
}

/** The fields of a record that upconversion carries over, as plain values. */
export interface ExpectedRecord {
  offset: bigint;
  timestamp: bigint;
  timestampType: 'CreateTime' | 'LogAppendTime';
  key: string | null;
  value: string | null;
}

const view = (r: LogicalRecord): ExpectedRecord => ({
  offset: r.offset,
  timestamp: r.timestamp,
  timestampType: r.timestampType,
  key: hex(r.key),
  value: hex(r.value),
});

/**
 * What a consumer reads from one legacy entry, decoded by kafkajs, with Kafka's rules for what
 * kafkajs leaves out (LegacyRecord / AbstractLegacyRecordBatch):
 * - a magic 0 message has no timestamp: -1, and the v2 batch it becomes says CreateTime, even
 *   inside a magic 1 LogAppendTime wrapper (KAFKA-4298);
 * - otherwise the timestamp type is the outer entry's attribute bit 3 (an inner message's own
 *   bit is ignored); under LogAppendTime every inner record of a compressed wrapper takes the
 *   wrapper's timestamp;
 * - relative inner offsets of magic 1 wrappers (kafkajs applies that rule itself).
 */
export async function expectedLegacyRecords(entry: Uint8Array): Promise<ExpectedRecord[]> {
  const b = Buffer.from(entry.buffer, entry.byteOffset, entry.byteLength);
  const magic = b.readInt8(16);
  const attributes = b.readInt8(17);
  const compressed = (attributes & 7) !== 0;
  const logAppendTime = magic === 1 && (attributes & 8) !== 0;
  const wrapperTimestamp = magic === 1 ? b.readBigInt64BE(18) : -1n;
  const messages = await kafkajsDecodeMessageSet(entry);
  return messages.map((m) => ({
    offset: BigInt(m.offset),
    timestamp:
      m.magicByte === 0 ? -1n : logAppendTime && compressed ? wrapperTimestamp : BigInt(m.timestamp ?? '-1'),
    timestampType: logAppendTime && m.magicByte !== 0 ? 'LogAppendTime' : 'CreateTime',
    key: hex(m.key),
    value: hex(m.value),
  }));
}

export async function upconvertAndCheck(
  entries: Uint8Array[],
  options: UpconverterOptions,
  { kafkajs = true, vectors }: { kafkajs?: boolean; vectors?: ExpectedRecord[] } = {},
): Promise<UpconvertResult> {
  const oversize: OversizeBatch[] = [];
  const up = new Upconverter({ grouping: 'kafka', ...options, onOversizeBatch: (b) => oversize.push(b) });
  const batches: Uint8Array[] = [];
  const entryOfOffset = new Map<bigint, number>();
  const expected: ExpectedRecord[] = [];
  for (const [i, e] of entries.entries()) {
    for (const r of await expectedLegacyRecords(e)) {
      expected.push(r);
      entryOfOffset.set(r.offset, i);
    }
    batches.push(...up.push(e));
  }
  batches.push(...up.flush());
  // Vectors of a third implementation agree with kafkajs plus the rules above.
  if (vectors !== undefined) expect(expected).toEqual(vectors);

  const maxBatchBytes = options.maxBatchBytes ?? 1_048_588;
  const codec = options.codec ?? 0;
  let k = 0;
  for (const batch of batches) {
    checkRecordBatchCrc(batch);
    const h = readRecordBatchHeader(batch);
    expect(h.batchLength + 12).toBe(batch.length);
    const got = [...logicalRecordsOfBatch(batch)];
    expect(got.length).toBeGreaterThan(0);
    const want = expected.slice(k, k + got.length);
    k += got.length;
    expect(got.map(view)).toEqual(want);
    for (const r of got) {
      expect(r.headers).toEqual([]);
      expect([r.producerId, r.producerEpoch, r.sequence, r.isTransactional, r.isControl]).toEqual([
        -1n,
        -1,
        -1,
        false,
        false,
      ]);
    }

    // Header fields per docs/kafka-format.md §4.2.
    expect(h.baseOffset).toBe(want[0].offset);
    expect(BigInt(h.lastOffsetDelta)).toBe(want[want.length - 1].offset - want[0].offset);
    expect(h.partitionLeaderEpoch).toBe(-1);
    expect(h.producerId).toBe(-1n);
    expect(h.producerEpoch).toBe(-1);
    expect(h.baseSequence).toBe(-1);
    expect(isTransactional(h)).toBe(false);
    expect(isControlBatch(h)).toBe(false);
    expect(batchCompression(h)).toBe(codec);
    expect(h.recordsCount).toBe(got.length);
    const type = batchTimestampType(h);
    expect(new Set(want.map((r) => r.timestampType))).toEqual(new Set([type]));
    if (type === 'LogAppendTime') {
      expect(h.baseTimestamp).toBe(want[0].timestamp);
      expect(h.maxTimestamp).toBe(want[0].timestamp);
      expect(decodeRecords(batch).every((r) => r.timestampDelta === 0)).toBe(true);
    } else {
      expect(h.baseTimestamp).toBe(want[0].timestamp);
      // biome-ignore lint/complexity/useMathMinMax: bigint timestamps
      expect(h.maxTimestamp).toBe(want.reduce((m, r) => (r.timestamp > m ? r.timestamp : m), -1n));
    }
    if (batch.length > maxBatchBytes) expect(h.recordsCount).toBe(1);
    if (options.grouping !== 'coalesce') {
      expect(new Set(want.map((r) => entryOfOffset.get(r.offset))).size).toBe(1);
    }

    if (kafkajs) {
      const kb = await kafkajsDecodeRecordBatch(batch);
      expect(kb.firstOffset).toBe(h.baseOffset.toString());
      expect(kb.lastOffsetDelta).toBe(h.lastOffsetDelta);
      expect(kb.firstTimestamp).toBe(h.baseTimestamp.toString());
      expect(kb.maxTimestamp).toBe(h.maxTimestamp.toString());
      expect(kb.producerId).toBe('-1');
      expect(kb.producerEpoch).toBe(-1);
      expect(kb.firstSequence).toBe(-1);
      expect(kb.partitionLeaderEpoch).toBe(-1);
      expect(kb.inTransaction).toBe(false);
      expect(kb.isControlBatch).toBe(false);
      expect(kb.timestampType === KAFKAJS_LOG_APPEND_TIME).toBe(type === 'LogAppendTime');
      expect(kb.records.length).toBe(want.length);
      kb.records.forEach((r, i) => {
        expect(r.offset).toBe(want[i].offset.toString());
        expect(r.timestamp).toBe(want[i].timestamp.toString());
        expect(hex(r.key)).toBe(want[i].key);
        expect(hex(r.value)).toBe(want[i].value);
        expect(r.headers).toEqual({});
      });
    }
  }
  expect(k).toBe(expected.length);
  expect(up.stats.entriesIn).toBe(entries.length);
  expect(up.stats.recordsIn).toBe(expected.length);
  expect(up.stats.batchesOut).toBe(batches.length);
  expect(up.stats.bytesOut).toBe(batches.reduce((s, b) => s + b.length, 0));
  expect(up.stats.oversizeBatches).toBe(oversize.length);
  return { batches, stats: up.stats, oversize, expected };
}
