#!/usr/bin/env node
// Byte-identity check between two builds of seglift: every conversion below is run with each
// build's packages/segment/dist and the sha256 of the written .log/.index/.timeindex (and the
// report's counts, or the error of a failed conversion) must be the same. Speed work must not
// change a byte of output; run this after every change.
//
//   node bench/identity.mjs <base checkout> <new checkout> [--keep DIR]
//
// Inputs: the bundled samples (every segment), the real broker segments in
// ../shared/fixtures/real next to the new checkout (or $SEGLIFT_REAL_FIXTURES, when present), and a corpus generated here deterministically with the
// base build's writers: legacy edge cases (v0/v1 plain, null/empty keys and values, LogAppendTime
// plain messages with equal and different times, large offset gaps, timestamps going back,
// gzip/snappy/lz4 wrappers incl. LogAppendTime and v0-in-v1 inner messages, values near and past
// max.message.bytes), v2 batches of every codec with control and empty batches, and the bench's
// three data shapes in small. Options: every codec x both groupings, plus small batch bounds that
// force splits.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';

const [baseRoot, newRoot] = process.argv.slice(2).map((p) => resolve(p));
if (!baseRoot || !newRoot) {
  console.error('usage: node bench/identity.mjs <base checkout> <new checkout>');
  process.exit(2);
}
const keepAt = process.argv.indexOf('--keep');
const work =
  keepAt > 0 ? resolve(process.argv[keepAt + 1]) : mkdtempSync(join(tmpdir(), 'seglift-identity-'));
mkdirSync(work, { recursive: true });

// ---- corpus -------------------------------------------------------------------------------
const corpus = join(work, 'corpus');
if (!existsSync(corpus)) {
  const script = `
    const fmt = await import(${JSON.stringify(`${baseRoot}/packages/format/dist/index.js`)});
    const legacy = await import(${JSON.stringify(`${baseRoot}/packages/legacy/dist/index.js`)});
    const { mkdirSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const corpus = ${JSON.stringify(corpus)};
    let a = 20261130 >>> 0;
    const rand = () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const int = (n) => Math.floor(rand() * n);
    const words = ['order', 'user', 'price', 'created', 'status', 'shipped', 'pending', 'sku', 'qty', 'eur'];
    const text = (n) => {
      let s = '';
      while (s.length < n) s += words[int(words.length)] + (rand() < 0.5 ? ':' + int(1e6) + ',' : ' ');
      return Buffer.from(s.slice(0, n));
    };
    const json = (i) => {
      const n = 4 + int(40);
      const parts = [];
      for (let k = 0; k < n; k++) parts.push('"' + words[int(words.length)] + '":' + int(1e6));
      return Buffer.from('{"id":' + i + ',' + parts.join(',') + ',"ref":"' + int(1e12).toString(36) + '"}');
    };
    const maybe = (p, f) => (rand() < p ? null : f());
    const write = (name, entries, base = '00000000000000000000') => {
      const dir = join(corpus, name);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, base + '.log'), Buffer.concat(entries));
    };
    const fields = (baseOffset, over = {}) => ({
      baseOffset, partitionLeaderEpoch: 5, attributes: 0, lastOffsetDelta: 0,
      baseTimestamp: 1600000000000n, maxTimestamp: 1600000000000n,
      producerId: -1n, producerEpoch: -1, baseSequence: -1, ...over,
    });
    const v2 = (off, n, codec, over = {}, valueOf = (i) => text(20 + int(300))) => {
      const records = [];
      let maxTs = -1n;
      const base = over.baseTimestamp ?? 1600000000000n;
      for (let i = 0; i < n; i++) {
        const d = int(5000) - 100;
        if (base + BigInt(d) > maxTs) maxTs = base + BigInt(d);
        records.push({
          attributes: 0, timestampDelta: d, offsetDelta: i,
          key: maybe(0.2, () => text(int(20))), value: maybe(0.05, () => valueOf(i)),
          headers: rand() < 0.3 ? [{ key: Buffer.from('h' + i), value: maybe(0.3, () => text(int(10))) }] : [],
        });
      }
      return fmt.encodeRecordBatch(fields(off, { lastOffsetDelta: n - 1, maxTimestamp: maxTs, ...over }), records, codec, over.level === undefined ? {} : { level: over.level });
    };

    // 1. plain legacy edge cases.
    {
      const e = [];
      let off = 0n;
      let ts = 1500000000000n;
      for (let i = 0; i < 3000; i++) {
        const r = rand();
        off += r < 0.02 ? BigInt(2 + int(1000)) : r < 0.025 ? 100000n + BigInt(int(1000000)) : 1n;
        ts += BigInt(int(2000)) - (rand() < 0.1 ? 5000n : 0n);
        const magic = rand() < 0.15 ? 0 : 1;
        const lat = magic === 1 && rand() < 0.1;
        const key = maybe(0.2, () => (rand() < 0.1 ? Buffer.alloc(0) : text(int(30))));
        const value = maybe(0.05, () => (rand() < 0.05 ? Buffer.alloc(0) : text(int(300))));
        e.push(legacy.encodeLegacyEntry(off, {
          magic, attributes: lat ? 8 : 0,
          timestamp: lat ? (rand() < 0.5 ? 1700000000000n : 1700000000000n + BigInt(int(3))) : rand() < 0.02 ? -1n : ts,
          key, value,
        }));
      }
      write('plain-edges', e);
    }
    // 2. wrappers of every legacy codec, CreateTime and LogAppendTime, v0 and v0-in-v1.
    {
      const e = [];
      let off = 0n;
      let ts = 1500000000000n;
      for (let w = 0; w < 300; w++) {
        const codec = 1 + int(3);
        const magic = rand() < 0.2 ? 0 : 1;
        const lat = magic === 1 && rand() < 0.2;
        const n = 1 + int(60);
        const messages = [];
        for (let j = 0; j < n; j++) {
          off += rand() < 0.1 ? BigInt(2 + int(5)) : 1n;
          ts += BigInt(int(300));
          messages.push({
            offset: off,
            timestamp: rand() < 0.05 ? -1n : ts,
            key: maybe(0.2, () => text(int(30))),
            value: maybe(0.05, () => json(j)),
            magic: magic === 1 && rand() < 0.05 ? 0 : undefined,
          });
        }
        e.push(legacy.encodeCompressedWrapper({
          magic, codec, level: codec === 1 ? 1 + int(9) : undefined,
          timestampType: lat ? 'LogAppendTime' : 'CreateTime',
          wrapperTimestamp: lat ? ts + 7n : undefined, messages,
        }));
        if (rand() < 0.3) {
          off++;
          e.push(legacy.encodeLegacyEntry(off, { magic: 1, timestamp: ts, key: null, value: text(50) }));
        }
        off++;
      }
      write('wrappers', e);
    }
    // 3. big values: near and past max.message.bytes, plain and in wrappers.
    {
      const e = [];
      let off = 0n;
      for (let i = 0; i < 12; i++) {
        const size = [1000, 200000, 524288, 1048000, 1048576, 1100000][i % 6];
        e.push(legacy.encodeLegacyEntry(off++, { magic: 1, timestamp: 1500000000000n + off, key: text(10), value: text(size) }));
      }
      for (let w = 0; w < 4; w++) {
        const messages = [];
        for (let j = 0; j < 8; j++) messages.push({ offset: off++, timestamp: 1500000000000n + off, key: null, value: text(150000 + int(100000)) });
        e.push(legacy.encodeCompressedWrapper({ magic: 1, codec: 1 + (w % 3), messages }));
      }
      write('big-values', e);
    }
    // 4. legacy then v2 of every codec, control and empty batches, idempotent and transactional.
    {
      const e = [];
      let off = 0n;
      for (let i = 0; i < 200; i++) e.push(legacy.encodeLegacyEntry(off++, { magic: 1, timestamp: 1500000000000n + off, key: null, value: text(80) }));
      for (let b = 0; b < 60; b++) {
        const codec = b % 5;
        const n = 1 + int(80);
        const kind = int(4);
        const over = kind === 0 ? { producerId: 500n + BigInt(b), producerEpoch: 1, baseSequence: int(1000) }
          : kind === 1 ? { producerId: 7n, producerEpoch: 2, baseSequence: 0, attributes: 0x10 }
          : kind === 2 ? { attributes: 0x08, baseTimestamp: 1650000000000n }
          : {};
        e.push(v2(off, n, codec, over));
        off += BigInt(n);
        if (kind === 1) {
          e.push(fmt.encodeRecordBatch(fields(off, { producerId: 7n, producerEpoch: 2, attributes: 0x30 }), [
            { attributes: 0, timestampDelta: 0, offsetDelta: 0, key: fmt.encodeControlRecordKey(b % 2), value: fmt.encodeEndTransactionMarker(3), headers: [] },
          ], 0));
          off++;
        }
        if (b % 17 === 0) {
          e.push(fmt.encodeRecordBatch(fields(off, { lastOffsetDelta: 2, baseTimestamp: -1n, producerId: 9n, producerEpoch: 0, baseSequence: 4 }), [], 0));
          off += 3n;
        }
      }
      write('mixed-v2', e);
    }
    // 5. values past 2^52: offsets near 2^52 (the segment's base offset too), timestamps near the
    // int64 ends, mixed with ordinary ones; plain and in wrappers.
    {
      const e = [];
      let off = 2n ** 52n - 300n;
      const tsOf = (i) => [1500000000000n, 2n ** 62n + BigInt(i), -(2n ** 60n), -1n, 2n ** 52n + BigInt(i), 1500000000001n][i % 6];
      for (let i = 0; i < 200; i++) {
        const lat = i % 7 === 0;
        e.push(legacy.encodeLegacyEntry(off, { magic: 1, attributes: lat ? 8 : 0, timestamp: tsOf(i), key: text(5), value: text(40) }));
        off += 1n + BigInt(int(3));
        if (i % 20 === 0) {
          const messages = [];
          for (let j = 0; j < 10; j++) messages.push({ offset: off++, timestamp: tsOf(i + j), key: null, value: text(30) });
          e.push(legacy.encodeCompressedWrapper({ magic: 1, codec: 1 + (i % 3), messages }));
        }
      }
      write('wide-values', e, String(2n ** 52n - 300n).padStart(20, '0'));
    }
    // 6-8. the bench's shapes, small: v2 gzip-9 batches of ~100 JSON records with headers,
    // magic-1 gzip wrappers of ~100 such messages, tiny plain magic-1 messages.
    {
      const e = [];
      let off = 0n;
      for (let b = 0; b < 40; b++) {
        e.push(v2(off, 100, 1, { level: 9 }, (i) => json(i)));
        off += 100n;
      }
      write('bench-v2-gzip', e);
    }
    {
      const e = [];
      let off = 0n;
      for (let w = 0; w < 40; w++) {
        const messages = [];
        for (let j = 0; j < 100; j++) messages.push({ offset: off++, timestamp: 1500000000000n + off * 3n, key: text(8), value: json(j) });
        e.push(legacy.encodeCompressedWrapper({ magic: 1, codec: 1, level: 9, messages }));
      }
      write('bench-v1-gzip', e);
    }
    {
      const e = [];
      let off = 0n;
      for (let i = 0; i < 20000; i++) e.push(legacy.encodeLegacyEntry(off++, { magic: 1, timestamp: 1500000000000n + off, key: text(8 + int(8)), value: text(90 + int(100)) }));
      write('bench-v1-tiny', e);
    }
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
}

// ---- inputs x options ---------------------------------------------------------------------
const logsUnder = (dir) => {
  const out = [];
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...logsUnder(p));
    else if (/^\d{20}\.log$/.test(name)) out.push(p);
  }
  return out;
};
const codecs = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const jobs = [];
const add = (label, log, opts) => jobs.push({ id: `${label} ${JSON.stringify(opts)}`, log, opts });
for (const log of logsUnder(join(baseRoot, 'samples'))) {
  for (const codec of codecs)
    for (const grouping of ['kafka', 'coalesce'])
      add(log.slice(baseRoot.length + 1), log, { codec, grouping });
}
const real = process.env.SEGLIFT_REAL_FIXTURES ?? resolve(newRoot, '..', 'shared', 'fixtures', 'real');
for (const log of logsUnder(real)) {
  for (const codec of codecs) add(`real/${log.split('/real/')[1]}`, log, { codec, grouping: 'kafka' });
}
for (const log of logsUnder(corpus)) {
  const name = `corpus/${basename(resolve(log, '..'))}`;
  for (const codec of codecs) {
    for (const grouping of ['kafka', 'coalesce']) {
      add(name, log, { codec, grouping });
      add(name, log, { codec, grouping, maxBatchBytes: 4000, coalesceBytes: 2500 });
    }
    // coalesceBytes above maxBatchBytes: batches split to fit.
    if (codec !== 'snappy' && codec !== 'lz4')
      add(name, log, { codec, grouping: 'coalesce', maxBatchBytes: 3000 });
  }
  add(name, log, { codec: 'zstd', level: 1, grouping: 'coalesce', force: true });
  add(name, log, { codec: 'gzip', level: 9, grouping: 'kafka', force: true });
  add(name, log, { codec: 'zstd', level: 19, grouping: 'coalesce', coalesceBytes: 16384 });
}

function runWith(root, tag) {
  const out = join(work, `out-${tag}`);
  rmSync(out, { recursive: true, force: true });
  const script = `
    const { convertSegment } = await import(${JSON.stringify(`${root}/packages/segment/dist/index.js`)});
    const { createHash } = await import('node:crypto');
    const { readFileSync, existsSync, rmSync } = await import('node:fs');
    const { join } = await import('node:path');
    const jobs = ${JSON.stringify(jobs)};
    const res = {};
    for (let i = 0; i < jobs.length; i++) {
      const j = jobs[i];
      const dir = join(${JSON.stringify(out)}, String(i));
      // convertSegment(logPath, settings, placement) since issue 33; (logPath, options) before.
      const r = convertSegment.length >= 3
        ? await convertSegment(j.log, j.opts, { kind: 'outDir', dir })
        : await convertSegment(j.log, { ...j.opts, outDir: dir });
      const files = {};
      for (const ext of ['log', 'index', 'timeindex']) {
        const f = join(dir, j.log.split('/').pop().replace(/\\.log$/, '.' + ext));
        files[ext] = existsSync(f) ? createHash('sha256').update(readFileSync(f)).digest('hex') : null;
      }
      res[j.id] = {
        result: r.result, reason: r.reason, error: r.error?.code, message: r.error?.message,
        bytesOut: r.bytesOut, batchesOut: r.batchesOut, recordsOut: r.recordsOut, files,
      };
      rmSync(dir, { recursive: true, force: true });
    }
    process.stdout.write(JSON.stringify(res));
  `;
  const r = spawnSync(process.execPath, ['--single-threaded-gc', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, MALLOC_ARENA_MAX: '2' },
  });
  if (r.status !== 0) throw new Error(`${tag}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const t0 = performance.now();
const a = runWith(baseRoot, 'base');
const b = runWith(newRoot, 'new');
let same = 0;
const diffs = [];
const results = {};
for (const j of jobs) {
  const x = JSON.stringify(a[j.id]);
  const y = JSON.stringify(b[j.id]);
  results[a[j.id].result] = (results[a[j.id].result] ?? 0) + 1;
  if (x === y) same++;
  else diffs.push({ id: j.id, base: a[j.id], new: b[j.id] });
}
const digest = createHash('sha256').update(JSON.stringify(a)).digest('hex').slice(0, 16);
writeFileSync(join(work, 'identity.json'), JSON.stringify({ base: a, new: b }, null, 1));
console.log(
  `${jobs.length} conversions (${Object.entries(results)
    .map(([k, v]) => `${v} ${k}`)
    .join(
      ', ',
    )}), ${same} identical, ${diffs.length} different; digest of base results ${digest}; ${((performance.now() - t0) / 1000).toFixed(0)} s`,
);
for (const d of diffs.slice(0, 20)) console.log(JSON.stringify(d));
if (keepAt < 0) rmSync(work, { recursive: true, force: true });
process.exit(diffs.length === 0 ? 0 : 1);
