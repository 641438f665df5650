// Deterministic segment data for the pipeline benchmark and profiling, shaped like what producers
// write (issue 13): JSON values of 0.2-2 KB, one or two headers per record, ~100 records a batch
// (~70 KB uncompressed, ~20 KB gzip-9), magic-1 gzip wrappers of ~100 such messages, and small
// (100-200 byte) uncompressed magic-1 messages. Records come from a seeded PRNG: the same bytes on
// every run. Needs the workspace built.
import { closeSync, fsyncSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

const fmt = await import(new URL('../packages/format/dist/index.js', import.meta.url).href);
const legacy = await import(new URL('../packages/legacy/dist/index.js', import.meta.url).href);
/** mulberry32, the seeded PRNG of the tests (@seglift/testkit). */
export const { prng: mulberry32 } = await import(
  new URL('../packages/testkit/dist/index.js', import.meta.url).href
);
const { CompressionType, encodeRecordBatch } = fmt;

export const MiB = 1024 * 1024;

/** `<dir>/<base offset, 20 digits>.log`, as Kafka names a segment. */
export const segmentLog = (dir, base) => join(dir, `${String(base).padStart(20, '0')}.log`);

/** Adds `base` to the offset of every entry of segment bytes `b`, in place (outside every CRC). */
export function rebaseEntries(b, base) {
  for (let q = 0; q < b.length; ) {
    b.writeBigInt64BE(b.readBigInt64BE(q) + base, q);
    q += b.readInt32BE(q + 8) + 12;
  }
  return b;
}

/** rebaseEntries on the segment file `log`. */
export function rebaseSegment(log, base) {
  writeFileSync(log, rebaseEntries(readFileSync(log), base), { flush: true });
}

const WORDS = (
  'order user price created status shipped pending sku qty eur customer address street city ' +
  'country payment card refund invoice warehouse carrier tracking delivered returned cart ' +
  'session device browser mobile desktop campaign discount coupon category brand product ' +
  'review rating comment inventory supplier region store checkout latency error retry'
).split(' ');
const STATUS = ['NEW', 'PAID', 'SHIPPED', 'DELIVERED', 'CANCELLED', 'RETURNED'];
const CITIES = ['Lisbon', 'Oslo', 'Kyoto', 'Lima', 'Accra', 'Perth', 'Quito', 'Riga', 'Austin', 'Pune'];

/** One JSON event of about `size` bytes (0.2-2 KB in the benchmark). */
export function jsonValue(rnd, id, size) {
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  const o = {
    id,
    type: pick(WORDS),
    status: pick(STATUS),
    ts: 1_700_000_000_000 + Math.floor(rnd() * 1e9),
    user: { id: Math.floor(rnd() * 1e7), city: pick(CITIES), tier: pick(['free', 'pro', 'team']) },
    amount: Math.floor(rnd() * 1e6) / 100,
    items: [],
    note: '',
  };
  let s = JSON.stringify(o);
  while (s.length < size - 60) {
    o.items.push({
      sku: `${pick(WORDS)}-${Math.floor(rnd() * 1e5)}`,
      qty: 1 + Math.floor(rnd() * 9),
      price: Math.floor(rnd() * 1e5) / 100,
      ref: Math.floor(rnd() * 2 ** 48).toString(36),
    });
    if (rnd() < 0.3) o.note += `${pick(WORDS)} ${pick(WORDS)} ${Math.floor(rnd() * 1e4).toString(36)} `;
    s = JSON.stringify(o);
  }
  return Buffer.from(s);
}

/** Value sizes skewed to the small end of 0.2-2 KB (mean ~0.65 KB). */
const valueSize = (rnd) => Math.floor(200 + 1800 * rnd() ** 3.1);

function headersOf(rnd, i) {
  const h = [
    {
      key: Buffer.from('trace-id'),
      value: Buffer.from(
        Math.floor(rnd() * 2 ** 52)
          .toString(16)
          .padStart(16, '0'),
      ),
    },
  ];
  if (i % 2 === 0) h.push({ key: Buffer.from('content-type'), value: Buffer.from('application/json') });
  return h;
}

/**
 * Streams entries into `path` until `targetBytes`; `next(offset)` returns the next entry and the
 * offset after it. Returns the bytes written and the entries' count.
 */
function writeEntries(path, targetBytes, next) {
  const fd = openSync(path, 'w');
  let written = 0;
  let offset = 0n;
  let entries = 0;
  const chunk = [];
  let chunkBytes = 0;
  while (written < targetBytes) {
    const [e, after] = next(offset);
    offset = after;
    chunk.push(e);
    chunkBytes += e.length;
    written += e.length;
    entries++;
    if (chunkBytes > 8 * MiB) {
      writeSync(fd, Buffer.concat(chunk));
      chunk.length = 0;
      chunkBytes = 0;
    }
  }
  if (chunk.length) writeSync(fd, Buffer.concat(chunk));
  // On disk before anything is measured: writeback of the data would otherwise compete with the
  // runs (and their fsyncs).
  fsyncSync(fd);
  closeSync(fd);
  return { bytes: written, entries };
}

/**
 * v2 batches as a producer with compression.type=gzip (level 9) writes them: `records` JSON
 * records a batch with headers, CreateTime, idempotent producer fields. gzip-9 is slow to
 * write, so `distinct` batches are made and written again and again at new base offsets (the
 * baseOffset field is outside the CRC; each batch is compressed on its own, so repeats give the
 * codecs nothing to exploit). `onBatch` sees each distinct batch once.
 */
export function writeV2GzipSegment(
  path,
  targetBytes,
  { seed = 1, records = 100, level = 9, distinct = 512, onBatch } = {},
) {
  const rnd = mulberry32(seed);
  const pool = [];
  let seq = 0;
  for (let b = 0; b < distinct; b++) {
    const rs = [];
    const base = 1_700_000_000_000n + BigInt(b) * 10_000n;
    for (let j = 0; j < records; j++) {
      rs.push({
        attributes: 0,
        timestampDelta: j * 10 + Math.floor(rnd() * 10),
        offsetDelta: j,
        key: Buffer.from(`user-${Math.floor(rnd() * 1e6)}`),
        value: jsonValue(rnd, b * records + j, valueSize(rnd)),
        headers: headersOf(rnd, j),
      });
    }
    const batch = encodeRecordBatch(
      {
        baseOffset: 0n,
        partitionLeaderEpoch: 7,
        attributes: 0,
        lastOffsetDelta: records - 1,
        baseTimestamp: base,
        maxTimestamp: base + BigInt(rs[records - 1].timestampDelta),
        producerId: 1234n,
        producerEpoch: 0,
        baseSequence: seq,
      },
      rs,
      CompressionType.GZIP,
      { level },
    );
    seq += records;
    onBatch?.(batch, rs);
    pool.push(Buffer.from(batch));
  }
  let i = 0;
  return writeEntries(path, targetBytes, (offset) => {
    const e = Buffer.from(pool[i++ % pool.length]);
    e.writeBigInt64BE(offset, 0);
    return [e, offset + BigInt(records)];
  });
}

/**
 * magic-1 gzip (level 9) wrappers of `messages` JSON messages each, CreateTime; `distinct`
 * wrappers written again and again (the wrapper's offset is outside its CRC and its inner
 * offsets are relative).
 */
export function writeV1GzipSegment(
  path,
  targetBytes,
  { seed = 2, messages = 100, level = 9, distinct = 512, onWrapper } = {},
) {
  const rnd = mulberry32(seed);
  const pool = [];
  for (let w = 0; w < distinct; w++) {
    const ms = [];
    for (let j = 0; j < messages; j++) {
      ms.push({
        offset: BigInt(j),
        timestamp: 1_600_000_000_000n + BigInt(w * 10_000 + j * 10),
        key: Buffer.from(`user-${Math.floor(rnd() * 1e6)}`),
        value: jsonValue(rnd, w * messages + j, valueSize(rnd)),
      });
    }
    const wrapper = legacy.encodeCompressedWrapper({
      magic: 1,
      codec: CompressionType.GZIP,
      level,
      messages: ms,
    });
    onWrapper?.(wrapper, ms);
    pool.push(Buffer.from(wrapper));
  }
  let i = 0;
  return writeEntries(path, targetBytes, (offset) => {
    const e = Buffer.from(pool[i++ % pool.length]);
    e.writeBigInt64BE(offset + BigInt(messages - 1), 0);
    return [e, offset + BigInt(messages)];
  });
}

/** Small uncompressed magic-1 messages: 100-200 bytes each, entry overhead included. */
export function writeV1TinySegment(path, targetBytes, { seed = 3, onMessage } = {}) {
  const rnd = mulberry32(seed);
  const pick = (xs) => xs[Math.floor(rnd() * xs.length)];
  return writeEntries(path, targetBytes, (offset) => {
    const key = Buffer.from(`dev-${Math.floor(rnd() * 1e5)}`);
    // 34 bytes of entry overhead + key: values of 56-156 bytes give 100-200 byte entries.
    const want = 100 + Math.floor(rnd() * 101) - 34 - key.length;
    let s = `{"t":${1_600_000_000_000 + Number(offset) * 5},"s":"${pick(STATUS)}","v":${Math.floor(rnd() * 1e6)},"m":"`;
    while (s.length < want - 2) s += `${pick(WORDS)} `;
    s = `${s.slice(0, want - 2)}"}`;
    const value = Buffer.from(s);
    const e = legacy.encodeLegacyEntry(offset, {
      magic: 1,
      timestamp: 1_600_000_000_000n + offset * 5n,
      key,
      value,
    });
    onMessage?.(key, value);
    return [e, offset + 1n];
  });
}
