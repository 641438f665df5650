import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { KAFKAJS_FIXTURES, kafkajsFixtures, needs } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { incrementSequence, logicalRecordsEqual, logicalRecordsOfBatch } from './logical.js';
import { encodeRecordBatch, type RecordBatchFields } from './record-batch.js';
import type { LogicalRecord, Record } from './types.js';

const require = createRequire(import.meta.url);
const enc = (s: string) => new TextEncoder().encode(s);

const fields = (over: Partial<RecordBatchFields> = {}): RecordBatchFields => ({
  baseOffset: 100n,
  partitionLeaderEpoch: 3,
  attributes: 0,
  lastOffsetDelta: 9,
  baseTimestamp: 1_000n,
  maxTimestamp: 5_000n,
  producerId: 77n,
  producerEpoch: 4,
  baseSequence: 10,
  ...over,
});

const rec = (offsetDelta: number, timestampDelta: number | bigint, extra: Partial<Record> = {}): Record => ({
  attributes: 0,
  timestampDelta,
  offsetDelta,
  key: enc(`k${offsetDelta}`),
  value: enc(`v${offsetDelta}`),
  headers: [],
  ...extra,
});

describe('logicalRecordsOfBatch', () => {
  it('CreateTime: offset = base + delta, timestamp = base + delta, sequence = base + delta, producer fields', () => {
    const batch = encodeRecordBatch(fields({ attributes: 0x10 }), [rec(0, 0), rec(4, -200), rec(9, 7)], 3);
    const out = [...logicalRecordsOfBatch(batch)];
    expect(out.map((r) => [r.offset, r.timestamp, r.sequence])).toEqual([
      [100n, 1000n, 10],
      [104n, 800n, 14],
      [109n, 1007n, 19],
    ]);
    expect(out[1]).toEqual({
      offset: 104n,
      timestamp: 800n,
      timestampType: 'CreateTime',
      key: enc('k4'),
      value: enc('v4'),
      headers: [],
      producerId: 77n,
      producerEpoch: 4,
      sequence: 14,
      isTransactional: true,
      isControl: false,
    } satisfies LogicalRecord);
  });

  it('LogAppendTime: every record gets maxTimestamp (deltas ignored)', () => {
    const batch = encodeRecordBatch(fields({ attributes: 0x08 }), [rec(0, 0), rec(1, 999)], 0);
    const out = [...logicalRecordsOfBatch(batch)];
    expect(out.map((r) => [r.timestamp, r.timestampType])).toEqual([
      [5000n, 'LogAppendTime'],
      [5000n, 'LogAppendTime'],
    ]);
  });

  it('sequence -1 without a base sequence; wraps from Int.MAX to 0', () => {
    const none = encodeRecordBatch(
      fields({ baseSequence: -1, producerId: -1n, producerEpoch: -1 }),
      [rec(3, 0)],
      0,
    );
    expect([...logicalRecordsOfBatch(none)][0].sequence).toBe(-1);
    const wrap = encodeRecordBatch(
      fields({ baseSequence: 2147483646 }),
      [rec(0, 0), rec(1, 0), rec(2, 0), rec(5, 0)],
      0,
    );
    expect([...logicalRecordsOfBatch(wrap)].map((r) => r.sequence)).toEqual([2147483646, 2147483647, 0, 3]);
    expect(incrementSequence(2147483647, 1)).toBe(0);
    expect(incrementSequence(5, 3)).toBe(8);
    expect(incrementSequence(0, 2147483647)).toBe(2147483647);
  });

  it('timestamp addition wraps like a Java long; bigint deltas are exact', () => {
    const batch = encodeRecordBatch(
      fields({ baseTimestamp: 2n ** 63n - 1n }),
      [rec(0, 1), rec(1, -(2n ** 60n)), rec(2, 2n ** 53n + 1n)],
      0,
    );
    expect([...logicalRecordsOfBatch(batch)].map((r) => r.timestamp)).toEqual([
      -(2n ** 63n),
      2n ** 63n - 1n - 2n ** 60n,
      -(2n ** 63n) + 2n ** 53n,
    ]);
  });

  it('control batches are flagged', () => {
    const batch = encodeRecordBatch(fields({ attributes: 0x30 }), [rec(0, 0)], 0);
    expect([...logicalRecordsOfBatch(batch)][0]).toMatchObject({ isControl: true, isTransactional: true });
  });

  const lat = path.join(KAFKAJS_FIXTURES, 'recordBatch__v0_recordbatch.json');
  needs(kafkajsFixtures).it(
    'kafkajs gzip LogAppendTime fixture: offsets and timestamps agree with kafkajs',
    async () => {
      const batch = Uint8Array.from((JSON.parse(readFileSync(lat, 'utf8')) as { data: number[] }).data);
      const decode = require('kafkajs/src/protocol/recordBatch/v0/decoder.js');
      const Decoder = require('kafkajs/src/protocol/decoder.js');
      const theirs = (await decode(new Decoder(Buffer.from(batch)))).records as {
        offset: string;
        timestamp: string;
      }[];
      const ours = [...logicalRecordsOfBatch(batch)];
      expect(ours.map((r) => [r.offset.toString(), r.timestamp.toString(), r.timestampType])).toEqual(
        theirs.map((r) => [r.offset, r.timestamp, 'LogAppendTime']),
      );
    },
  );
});

describe('logicalRecordsEqual', () => {
  const base: LogicalRecord = {
    offset: 5n,
    timestamp: 10n,
    timestampType: 'CreateTime',
    key: enc('key'),
    value: enc('value'),
    headers: [{ key: enc('h'), value: null }],
    producerId: -1n,
    producerEpoch: -1,
    sequence: -1,
    isTransactional: false,
    isControl: false,
  };

  it('null when equal (fresh byte arrays)', () => {
    expect(
      logicalRecordsEqual(base, { ...base, key: enc('key'), headers: [{ key: enc('h'), value: null }] }),
    ).toBeNull();
  });

  it.each([
    [{ offset: 6n }, 'offset: 5 vs 6'],
    [{ timestamp: -1n }, 'timestamp: 10 vs -1'],
    [{ timestampType: 'LogAppendTime' as const }, 'timestampType: CreateTime vs LogAppendTime'],
    [{ key: null }, 'key: 3 bytes vs null'],
    [{ value: enc('valuX') }, 'value: differ at byte 4'],
    [{ value: enc('val') }, 'value: 5 bytes vs 3 bytes'],
    [{ headers: [] }, 'headers: 1 vs 0 headers'],
    [{ headers: [{ key: enc('h'), value: new Uint8Array(0) }] }, 'header 0 value: null vs 0 bytes'],
    [{ headers: [{ key: enc('g'), value: null }] }, 'header 0 key: differ at byte 0'],
    [{ producerId: 1n }, 'producerId: -1 vs 1'],
    [{ producerEpoch: 0 }, 'producerEpoch: -1 vs 0'],
    [{ sequence: 0 }, 'sequence: -1 vs 0'],
    [{ isTransactional: true }, 'isTransactional: false vs true'],
    [{ isControl: true }, 'isControl: false vs true'],
  ] as [Partial<LogicalRecord>, string][])('%o -> %s', (change, expected) => {
    expect(logicalRecordsEqual(base, { ...base, ...change })).toBe(expected);
  });
});
