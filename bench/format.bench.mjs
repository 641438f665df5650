#!/usr/bin/env node
// v2 RecordBatch decode/encode throughput of @seglift/format (built: pnpm --filter @seglift/format
// build) against kafkajs on the same bytes. Data: ~64 MiB (--bytes=N) of deterministic
// uncompressed batches of 1000 records (--records=N), values 100-1000 bytes, keys ~12 bytes,
// a third of the records with one header. MB/s are of batch bytes, best of --repeat=N (default 3).
// Target: decode+encode at least 3x kafkajs.
// Run: node --expose-gc bench/format.bench.mjs
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const { prng: mulberry32 } = await import(new URL('../packages/testkit/dist/index.js', import.meta.url).href);

const formatDist = new URL('../packages/format/dist/index.js', import.meta.url);
const { checkRecordBatchCrc, decodeRecords, encodeRecordBatch, iterateRecords, logicalRecordsOfBatch } =
  await import(formatDist.href);
const require = createRequire(import.meta.url);
const { RecordBatch: KafkajsRecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js');
const KafkajsRecord = require('kafkajs/src/protocol/recordBatch/record/v0/index.js');
const kafkajsDecodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js');
const KafkajsDecoder = require('kafkajs/src/protocol/decoder.js');
const Long = require('kafkajs/src/utils/long.js');

const arg = (name, fallback) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit === undefined ? fallback : Number(hit.slice(name.length + 3));
};
const TOTAL = arg('bytes', 64 * 1024 * 1024);
const RECORDS = arg('records', 1000);
const REPEAT = arg('repeat', 3);

const rnd = mulberry32(7);
const words = ['order', 'user', 'price', 'created', 'status', 'shipped', 'pending', 'sku', 'qty', 'eur'];
function value() {
  const size = 100 + Math.floor(rnd() * 900);
  let s = '';
  while (s.length < size) s += `{"${words[Math.floor(rnd() * 10)]}":${Math.floor(rnd() * 1e6)}},`;
  return Buffer.from(s.slice(0, size), 'latin1');
}

// Build the input with kafkajs so both sides read bytes neither of them wrote for itself.
const batches = [];
const sourceRecords = [];
let total = 0;
let offset = 0n;
while (total < TOTAL) {
  const records = [];
  for (let i = 0; i < RECORDS; i++) {
    records.push({
      attributes: 0,
      timestampDelta: i * 3,
      offsetDelta: i,
      key: Buffer.from(`key-${Math.floor(rnd() * 1e6)}`),
      value: value(),
      headers: i % 3 === 0 ? [{ key: Buffer.from('trace-id'), value: Buffer.from(`t${i}`) }] : [],
    });
  }
  const encoder = await KafkajsRecordBatch({
    compression: 0,
    firstOffset: Long.fromString(offset.toString()),
    firstTimestamp: 1_700_000_000_000,
    maxTimestamp: 1_700_000_000_000 + (RECORDS - 1) * 3,
    partitionLeaderEpoch: 5,
    lastOffsetDelta: RECORDS - 1,
    producerId: Long.fromValue(-1),
    producerEpoch: -1,
    firstSequence: -1,
    records: records.map((r) =>
      KafkajsRecord({
        offsetDelta: r.offsetDelta,
        timestampDelta: r.timestampDelta,
        key: r.key,
        value: r.value,
        headers: Object.fromEntries(r.headers.map((h) => [h.key.toString(), h.value])),
      }),
    ),
  });
  const bytes = Buffer.from(encoder.buffer);
  batches.push(bytes);
  sourceRecords.push(records);
  total += bytes.length;
  offset += BigInt(RECORDS);
}
const fieldsOf = (b) => ({
  baseOffset: b.readBigInt64BE(0),
  partitionLeaderEpoch: 5,
  attributes: 0,
  lastOffsetDelta: RECORDS - 1,
  baseTimestamp: 1_700_000_000_000n,
  maxTimestamp: BigInt(1_700_000_000_000 + (RECORDS - 1) * 3),
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
});
const fields = batches.map(fieldsOf);

// Sanity: our encoding of our decoding is byte-identical to the kafkajs bytes.
for (let i = 0; i < batches.length; i++) {
  const again = encodeRecordBatch(fields[i], decodeRecords(batches[i]), 0);
  if (Buffer.compare(Buffer.from(again), batches[i]) !== 0) throw new Error(`batch ${i} did not round-trip`);
}

async function best(fn) {
  let t = Number.POSITIVE_INFINITY;
  for (let i = 0; i < REPEAT; i++) {
    globalThis.gc?.();
    const start = performance.now();
    await fn();
    t = Math.min(t, performance.now() - start);
  }
  return t;
}

const mbs = (ms) => (total / (1024 * 1024) / (ms / 1000)).toFixed(0);
let sink = 0;

const oursDecoded = batches.map((b) => decodeRecords(b));
const kjsRecordsFor = (records) =>
  records.map((r) =>
    KafkajsRecord({
      offsetDelta: r.offsetDelta,
      timestampDelta: r.timestampDelta,
      key: r.key,
      value: r.value,
      headers:
        r.headers.length === 0 ? {} : { [Buffer.from(r.headers[0].key).toString()]: r.headers[0].value },
    }),
  );

const rows = [];
const oursDecode = await best(() => {
  for (const b of batches) sink += decodeRecords(b).length;
});
const oursDecodeCrc = await best(() => {
  for (const b of batches) {
    checkRecordBatchCrc(b);
    sink += decodeRecords(b).length;
  }
});
const oursIterate = await best(() => {
  for (const b of batches) for (const r of iterateRecords(b)) sink += r.offsetDelta;
});
const oursLogical = await best(() => {
  for (const b of batches) for (const r of logicalRecordsOfBatch(b)) sink += r.sequence;
});
const oursEncode = await best(() => {
  for (let i = 0; i < batches.length; i++) sink += encodeRecordBatch(fields[i], oursDecoded[i], 0).length;
});
const kjsDecode = await best(async () => {
  for (const b of batches) sink += (await kafkajsDecodeBatch(new KafkajsDecoder(b))).records.length;
});
const kjsEncode = await best(async () => {
  for (let i = 0; i < batches.length; i++) {
    const f = fields[i];
    const enc = await KafkajsRecordBatch({
      compression: 0,
      firstOffset: Long.fromString(f.baseOffset.toString()),
      firstTimestamp: 1_700_000_000_000,
      maxTimestamp: 1_700_000_000_000 + (RECORDS - 1) * 3,
      partitionLeaderEpoch: 5,
      lastOffsetDelta: RECORDS - 1,
      producerId: Long.fromValue(-1),
      producerEpoch: -1,
      firstSequence: -1,
      records: kjsRecordsFor(oursDecoded[i]),
    });
    sink += enc.buffer.length;
  }
});

rows.push(['ours decodeRecords', oursDecode]);
rows.push(['ours checkRecordBatchCrc + decodeRecords', oursDecodeCrc]);
rows.push(['ours iterateRecords (generator)', oursIterate]);
rows.push(['ours logicalRecordsOfBatch', oursLogical]);
rows.push(['ours encodeRecordBatch', oursEncode]);
rows.push(['kafkajs decode', kjsDecode]);
rows.push(['kafkajs encode', kjsEncode]);

console.log(
  `${batches.length} batches x ${RECORDS} records, ${(total / 1024 / 1024).toFixed(1)} MiB, best of ${REPEAT}\n`,
);
console.log('| operation | ms | MB/s |');
console.log('|---|---:|---:|');
for (const [name, ms] of rows) console.log(`| ${name} | ${ms.toFixed(0)} | ${mbs(ms)} |`);
const ratioDecode = kjsDecode / oursDecode;
const ratioEncode = kjsEncode / oursEncode;
const ratioBoth = (kjsDecode + kjsEncode) / (oursDecode + oursEncode);
console.log(
  `\ndecode ${ratioDecode.toFixed(1)}x, encode ${ratioEncode.toFixed(1)}x, decode+encode ${ratioBoth.toFixed(1)}x kafkajs (target >= 3x)`,
);
if (sink === 42) console.log('');
