#!/usr/bin/env node
// Writes samples/kafka-logs: a small Kafka log directory as an old cluster mid-upgrade would have
// it (magic 0 and 1 message sets, gzip/snappy/lz4 wrappers, compaction gaps, LogAppendTime,
// then v2 gzip batches with a transaction, and a topic of small uncompressed magic-1 messages,
// where the default coalesce grouping matters most), each partition with an active last
// segment, and .index/.timeindex files as the broker would have built them. Deterministic: the
// same bytes on every run. Needs `pnpm build` first. Run: node scripts/make-samples.mjs
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CompressionType,
  ControlRecordType,
  encodeControlRecordKey,
  encodeEndTransactionMarker,
  encodeRecordBatch,
  readRecordBatchHeader,
  SegmentIndexBuilder,
} from '../packages/format/dist/index.js';
import {
  encodeCompressedWrapper,
  encodeLegacyEntry,
  readLegacyEntry,
} from '../packages/legacy/dist/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', 'samples', 'kafka-logs');
const enc = new TextEncoder();
let seed = 20261129;
const rand = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const cities = ['Lisbon', 'Oslo', 'Kyoto', 'Lima', 'Accra', 'Perth', 'Quito', 'Riga'];
const value = (i, kind) =>
  enc.encode(
    JSON.stringify({
      id: i,
      kind,
      city: pick(cities),
      amount: Math.floor(rand() * 100000) / 100,
      note: 'x'.repeat(Math.floor(rand() * 40)),
    }),
  );

function writeSegment(dir, baseOffset, entries) {
  mkdirSync(dir, { recursive: true });
  const name = String(baseOffset).padStart(20, '0');
  const index = new SegmentIndexBuilder(BigInt(baseOffset), { indexIntervalBytes: 4096 });
  let position = 0;
  for (const e of entries) {
    const magic = e[16];
    if (magic === 2) {
      const h = readRecordBatchHeader(e);
      index.append(position, e.length, h.baseOffset + BigInt(h.lastOffsetDelta), h.maxTimestamp);
    } else {
      const m = readLegacyEntry(e);
      index.append(position, e.length, m.offset, m.timestamp);
    }
    position += e.length;
  }
  const { offsetIndex, timeIndex } = index.finish();
  writeFileSync(join(dir, `${name}.log`), Buffer.concat(entries));
  writeFileSync(join(dir, `${name}.index`), offsetIndex);
  writeFileSync(join(dir, `${name}.timeindex`), timeIndex);
}

const v0 = (offset, i) =>
  encodeLegacyEntry(BigInt(offset), { magic: 0, key: enc.encode(`order-${i}`), value: value(i, 'order') });
const v1 = (offset, i, ts, val = value(i, 'click')) =>
  encodeLegacyEntry(BigInt(offset), {
    magic: 1,
    timestamp: BigInt(ts),
    key: enc.encode(`user-${i % 17}`),
    value: val,
  });

rmSync(root, { recursive: true, force: true });

// orders-0: magic 0 (0.9 era, no timestamps): plain messages, then gzip wrappers.
{
  const dir = join(root, 'orders-0');
  writeSegment(
    dir,
    0,
    Array.from({ length: 120 }, (_, i) => v0(i, i)),
  );
  const wrappers = [];
  for (let w = 0; w < 6; w++) {
    const messages = Array.from({ length: 20 }, (_, j) => {
      const o = 120 + w * 20 + j;
      return { offset: BigInt(o), key: enc.encode(`order-${o}`), value: value(o, 'order') };
    });
    wrappers.push(encodeCompressedWrapper({ magic: 0, codec: CompressionType.GZIP, messages }));
  }
  writeSegment(dir, 120, wrappers);
  writeSegment(dir, 240, [v0(240, 240), v0(241, 241)]);
}

// clicks-0: magic 1 (0.10 era): snappy wrappers with compaction gaps, lz4 LogAppendTime
// wrappers and plain messages with a tombstone.
{
  const dir = join(root, 'clicks-0');
  const t0 = 1500000000000;
  const snappy = [];
  let o = 0;
  for (let w = 0; w < 8; w++) {
    const messages = [];
    for (let j = 0; j < 25; j++, o++) {
      if (rand() < 0.2) continue; // compacted away: the wrapper keeps the survivors' offsets
      messages.push({
        offset: BigInt(o),
        timestamp: BigInt(t0 + o * 1000),
        key: enc.encode(`user-${o % 17}`),
        value: value(o, 'click'),
      });
    }
    snappy.push(encodeCompressedWrapper({ magic: 1, codec: CompressionType.SNAPPY, messages }));
  }
  writeSegment(dir, 0, snappy);
  const mixed = [];
  for (let w = 0; w < 4; w++) {
    const messages = Array.from({ length: 15 }, (_, j) => {
      const off = 200 + w * 15 + j;
      return { offset: BigInt(off), key: enc.encode(`user-${off % 17}`), value: value(off, 'click') };
    });
    mixed.push(
      encodeCompressedWrapper({
        magic: 1,
        codec: CompressionType.LZ4,
        timestampType: 'LogAppendTime',
        wrapperTimestamp: BigInt(t0 + 400000 + w),
        messages,
      }),
    );
  }
  for (let i = 260; i < 300; i++) mixed.push(v1(i, i, t0 + 500000 + i, i % 13 === 0 ? null : undefined));
  writeSegment(dir, 200, mixed);
  writeSegment(dir, 300, [v1(300, 300, t0 + 900000)]);
}

// payments-0: the upgrade happened mid-segment: magic 1 gzip wrappers, then v2 gzip batches
// from an idempotent producer and a transaction with its COMMIT marker.
{
  const dir = join(root, 'payments-0');
  const t0 = 1600000000000;
  const entries = [];
  for (let w = 0; w < 5; w++) {
    const messages = Array.from({ length: 30 }, (_, j) => {
      const off = w * 30 + j;
      return {
        offset: BigInt(off),
        timestamp: BigInt(t0 + off),
        key: enc.encode(`acct-${off % 9}`),
        value: value(off, 'payment'),
      };
    });
    entries.push(encodeCompressedWrapper({ magic: 1, codec: CompressionType.GZIP, messages }));
  }
  const batch = (base, count, extra) => {
    const records = Array.from({ length: count }, (_, j) => ({
      attributes: 0,
      timestampDelta: j * 7,
      offsetDelta: j,
      key: enc.encode(`acct-${(base + j) % 9}`),
      value: value(base + j, 'payment'),
      headers: j % 3 === 0 ? [{ key: enc.encode('trace-id'), value: enc.encode(`t-${base + j}`) }] : [],
    }));
    return encodeRecordBatch(
      {
        baseOffset: BigInt(base),
        partitionLeaderEpoch: 3,
        attributes: extra.attributes ?? 0,
        lastOffsetDelta: count - 1,
        baseTimestamp: BigInt(t0 + 100000 + base),
        maxTimestamp: BigInt(t0 + 100000 + base + (count - 1) * 7),
        producerId: extra.producerId ?? -1n,
        producerEpoch: extra.producerEpoch ?? -1,
        baseSequence: extra.baseSequence ?? -1,
      },
      records,
      CompressionType.GZIP,
    );
  };
  entries.push(batch(150, 50, { producerId: 4001n, producerEpoch: 0, baseSequence: 0 }));
  entries.push(batch(200, 40, { producerId: 4001n, producerEpoch: 0, baseSequence: 50 }));
  entries.push(batch(240, 20, { producerId: 4002n, producerEpoch: 1, baseSequence: 0, attributes: 0x10 }));
  entries.push(
    encodeRecordBatch(
      {
        baseOffset: 260n,
        partitionLeaderEpoch: 3,
        attributes: 0x30, // transactional control batch, uncompressed, as the broker writes it
        lastOffsetDelta: 0,
        baseTimestamp: BigInt(t0 + 100400),
        maxTimestamp: BigInt(t0 + 100400),
        producerId: 4002n,
        producerEpoch: 1,
        baseSequence: -1,
      },
      [
        {
          attributes: 0,
          timestampDelta: 0,
          offsetDelta: 0,
          key: encodeControlRecordKey(ControlRecordType.COMMIT),
          value: encodeEndTransactionMarker(7),
          headers: [],
        },
      ],
      CompressionType.NONE,
    ),
  );
  writeSegment(dir, 0, entries);
  writeSegment(dir, 261, [batch(261, 10, {})]);
}
// metrics-0: small uncompressed magic-1 messages (100-200 bytes, a producer with compression
// off), the data `kafka` grouping grows (a 61-byte batch header per message) and `coalesce`
// packs into a few batches. Written last: the partitions above keep their bytes.
{
  const dir = join(root, 'metrics-0');
  const t0 = 1510000000000;
  const hosts = ['web-1', 'web-2', 'db-1', 'cache-1'];
  const metrics = ['cpu', 'mem', 'disk', 'net.in', 'net.out', 'latency.p99'];
  const message = (o) =>
    encodeLegacyEntry(BigInt(o), {
      magic: 1,
      timestamp: BigInt(t0 + o * 250),
      key: enc.encode(pick(hosts)),
      value: enc.encode(
        JSON.stringify({
          metric: pick(metrics),
          value: Math.floor(rand() * 1e6) / 100,
          tags: 'x'.repeat(Math.floor(rand() * 60)),
        }),
      ),
    });
  writeSegment(
    dir,
    0,
    Array.from({ length: 600 }, (_, i) => message(i)),
  );
  writeSegment(
    dir,
    600,
    Array.from({ length: 600 }, (_, i) => message(600 + i)),
  );
  writeSegment(dir, 1200, [message(1200), message(1201)]);
}
console.log(`wrote ${root}`);
