#!/usr/bin/env node
// Pipeline numbers for issue 3, each against a baseline measured in the same run:
//  1. peak RSS converting one big segment of magic-1 gzip wrappers -> zstd (target <= 200 MiB
//     for a 1 GiB segment);
//  2. gzip -> zstd-3 recompression throughput of v2 batches on one core vs the codec floor
//     (plain gunzip + zstd-3 of the same payload bytes with the same libraries, no Kafka parsing;
//     target >= 0.8x). Measured for the whole pipeline (convert + verify + indexes + fsync) and
//     for its convert phase alone;
//  3. `migrate` of many segments with 2 threads vs 1 (target >= 1.7x).
// Options (env): BENCH_BIG_MB (default 1024), BENCH_V2_MB (default 256), BENCH_DIR (default os tmp),
// BENCH_PARTS (default memory,throughput,migrate), BENCH_REPS (default 3: throughput and migrate
// runs each, best kept).
// Run: pnpm bench pipeline
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const fmt = await import(new URL('../packages/format/dist/index.js', import.meta.url).href);
const legacy = await import(new URL('../packages/legacy/dist/index.js', import.meta.url).href);
const { CompressionType, encodeRecordBatch } = fmt;

const BIG_MB = Number(process.env.BENCH_BIG_MB ?? 1024);
const V2_MB = Number(process.env.BENCH_V2_MB ?? 256);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const parts = new Set((process.env.BENCH_PARTS ?? 'memory,throughput,migrate').split(','));
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-'));
const MiB = 1024 * 1024;
const enc = new TextEncoder();

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(7);
const words = ['order', 'user', 'price', 'created', 'status', 'shipped', 'pending', 'sku', 'qty', 'eur'];
function value(i) {
  const parts = [];
  const n = 4 + Math.floor(rnd() * 12);
  for (let k = 0; k < n; k++)
    parts.push(`"${words[Math.floor(rnd() * words.length)]}":${Math.floor(rnd() * 1e6)}`);
  return enc.encode(`{"id":${i},${parts.join(',')},"ref":"${Math.floor(rnd() * 1e12).toString(36)}"}`);
}

// A pool of distinct payloads, written again and again at new offsets. The offsets a wrapper or
// batch carries outside its compressed bytes are not covered by its CRC (v1 wrappers: relative
// inner offsets; v2: baseOffset), so re-stamping them keeps every entry valid while generation
// costs only I/O.
function writeBig(path, targetBytes, pool, stamp) {
  const fd = openSync(path, 'w');
  let written = 0;
  let offset = 0n;
  let i = 0;
  const chunk = [];
  let chunkBytes = 0;
  while (written < targetBytes) {
    const e = Buffer.from(pool[i++ % pool.length]);
    offset = stamp(e, offset);
    chunk.push(e);
    chunkBytes += e.length;
    written += e.length;
    if (chunkBytes > 8 * MiB) {
      writeSync(fd, Buffer.concat(chunk));
      chunk.length = 0;
      chunkBytes = 0;
    }
  }
  if (chunk.length) writeSync(fd, Buffer.concat(chunk));
  closeSync(fd);
  return written;
}

const RECORDS_PER_BATCH = 200;
function legacyPool(n) {
  const pool = [];
  for (let w = 0; w < n; w++) {
    const messages = [];
    for (let j = 0; j < RECORDS_PER_BATCH; j++) {
      messages.push({
        offset: BigInt(j),
        timestamp: BigInt(1600000000000 + w * 1000 + j),
        key: enc.encode(`k${j}`),
        value: value(j),
      });
    }
    pool.push(legacy.encodeCompressedWrapper({ magic: 1, codec: CompressionType.GZIP, messages }));
  }
  return pool;
}
function v2Pool(n) {
  const pool = [];
  for (let b = 0; b < n; b++) {
    const records = [];
    for (let j = 0; j < RECORDS_PER_BATCH; j++) {
      records.push({
        attributes: 0,
        timestampDelta: j,
        offsetDelta: j,
        key: enc.encode(`k${j}`),
        value: value(j),
        headers: [],
      });
    }
    pool.push(
      encodeRecordBatch(
        {
          baseOffset: 0n,
          partitionLeaderEpoch: 0,
          attributes: 0,
          lastOffsetDelta: RECORDS_PER_BATCH - 1,
          baseTimestamp: 1600000000000n,
          maxTimestamp: 1600000000000n + BigInt(RECORDS_PER_BATCH - 1),
          producerId: -1n,
          producerEpoch: -1,
          baseSequence: -1,
        },
        records,
        CompressionType.GZIP,
      ),
    );
  }
  return pool;
}
const stampLegacy = (e, next) => {
  // Wrapper offset = absolute offset of its last inner message (relative offsets 0..n-1).
  const last = next + BigInt(RECORDS_PER_BATCH - 1);
  e.writeBigInt64BE(last, 0);
  return last + 1n;
};
const stampV2 = (e, next) => {
  e.writeBigInt64BE(next, 0);
  return next + BigInt(RECORDS_PER_BATCH);
};

// The seglift bin runs node with MALLOC_ARENA_MAX=2, --max-semi-space-size=8 and
// --single-threaded-gc (apps/cli/src/main.ts); children run the same way unless BENCH_MALLOC_ARENA_MAX /
// BENCH_NODE_FLAGS say otherwise ('' = the defaults).
const childEnv = { ...process.env, MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? '2' };
if (childEnv.MALLOC_ARENA_MAX === '') delete childEnv.MALLOC_ARENA_MAX;
const childFlags = (process.env.BENCH_NODE_FLAGS ?? '--max-semi-space-size=8 --single-threaded-gc')
  .split(' ')
  .filter(Boolean);

function convertInChild(logPath, outDir, extra = {}) {
  const script = `
    const { convertSegment } = await import(${JSON.stringify(new URL('../packages/segment/dist/index.js', import.meta.url).href)});
    const t = performance.now();
    let r;
    try {
      r = await convertSegment(${JSON.stringify(logPath)}, { codec: 'zstd', level: 3, outDir: ${JSON.stringify(outDir)}, ...${JSON.stringify(extra)} });
    } catch (e) {
      // testHooks.crashAfter stops the pipeline right after the written files are fsynced.
      if (e?.name !== 'SimulatedCrash') throw e;
      r = { result: 'stopped-after-write' };
    }
    const ms = performance.now() - t;
    console.log(JSON.stringify({ result: r.result, reason: r.reason, ms, bytesIn: r.bytesIn, bytesOut: r.bytesOut, maxRssKiB: process.resourceUsage().maxRSS }));
  `;
  const r = spawnSync(process.execPath, [...childFlags, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    maxBuffer: 16 * MiB,
    env: childEnv,
  });
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

function floorInChild(payloadFile, batches) {
  const script = `
    const { readFileSync } = await import('node:fs');
    const { CompressionType, compress, decompress } = await import(${JSON.stringify(new URL('../packages/format/dist/index.js', import.meta.url).href)});
    const all = readFileSync(${JSON.stringify(payloadFile)});
    const payloads = [];
    for (let p = 0; p < all.length; ) {
      const n = all.readUInt32LE(p);
      payloads.push(all.subarray(p + 4, p + 4 + n));
      p += 4 + n;
    }
    const t = performance.now();
    for (let i = 0; i < ${batches}; i++) {
      const raw = decompress(CompressionType.GZIP, payloads[i % payloads.length], { magic: 2, maxBytes: 64 * 1024 * 1024 });
      compress(CompressionType.ZSTD, raw, { level: 3, magic: 2 });
    }
    console.log(JSON.stringify({ ms: performance.now() - t }));
  `;
  const r = spawnSync(process.execPath, [...childFlags, '--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: childEnv,
  });
  if (r.status !== 0) throw new Error(`floor child failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()).ms;
}

const rows = [];
try {
  // 1. Memory.
  if (parts.has('memory')) {
    const dir = join(work, 'big');
    mkdirSync(dir);
    const log = join(dir, '00000000000000000000.log');
    const bytes = writeBig(log, BIG_MB * MiB, legacyPool(64), stampLegacy);
    const r = convertInChild(log, join(work, 'big-out'));
    if (r.result !== 'converted') throw new Error(`big segment not converted: ${r.reason}`);
    const rssMiB = r.maxRssKiB / 1024;
    rows.push([
      `peak RSS, v1 gzip -> zstd-3 (MALLOC_ARENA_MAX=${childEnv.MALLOC_ARENA_MAX ?? 'default'} ${childFlags.join(' ')})`,
      `${(bytes / MiB).toFixed(0)} MiB segment`,
      `${rssMiB.toFixed(0)} MiB`,
      '<= 200 MiB',
      rssMiB <= 200 ? 'ok' : 'MISSED',
    ]);
    rows.push([
      '  (same run) time, MB/s of input',
      '',
      `${(r.ms / 1000).toFixed(1)} s`,
      `${(bytes / 1e6 / (r.ms / 1000)).toFixed(1)} MB/s`,
      '',
    ]);
    rmSync(dir, { recursive: true });
    rmSync(join(work, 'big-out'), { recursive: true });
  }

  // 2. Throughput vs the codec floor.
  if (parts.has('throughput')) {
    const dir = join(work, 'v2');
    mkdirSync(dir);
    const log = join(dir, '00000000000000000000.log');
    const pool = v2Pool(64);
    const bytes = writeBig(log, V2_MB * MiB, pool, stampV2);
    const batches = Math.ceil(bytes / (pool.reduce((s, b) => s + b.length, 0) / pool.length));
    // Floor: the same work on the same payloads with no Kafka parsing at all, in a child started
    // like the pipeline's. Floor, full pipeline and convert phase take turns, REPS times each, and
    // each reports its best run: the machine's neighbours slow single runs by up to 20%.
    const payloadFile = join(work, 'payloads.bin');
    writeFileSync(
      payloadFile,
      Buffer.concat(pool.flatMap((b) => [Buffer.from(Uint32Array.of(b.length - 61).buffer), b.subarray(61)])),
    );
    let floorMs = Infinity;
    let fullMs = Infinity;
    let convMs = Infinity;
    let convertOnly;
    for (let rep = 0; rep < REPS; rep++) {
      floorMs = Math.min(floorMs, floorInChild(payloadFile, batches));
      const full = convertInChild(log, join(work, 'v2-out'));
      if (full.result !== 'converted') throw new Error(`v2 segment not converted: ${full.reason}`);
      fullMs = Math.min(fullMs, full.ms);
      rmSync(join(work, 'v2-out'), { recursive: true });
      convertOnly = convertInChild(log, join(work, 'v2-out'), { testHooks: { crashAfter: 'write' } });
      convMs = Math.min(convMs, convertOnly.ms);
      rmSync(join(work, 'v2-out'), { recursive: true, force: true });
    }
    const floorMBps = bytes / 1e6 / (floorMs / 1000);
    const fullMBps = bytes / 1e6 / (fullMs / 1000);
    const convMBps = bytes / 1e6 / (convMs / 1000);
    rows.push([
      `codec floor: gunzip + zstd-3, 1 core (best of ${REPS})`,
      `${(bytes / MiB).toFixed(0)} MiB of batches`,
      `${floorMBps.toFixed(1)} MB/s`,
      'baseline',
      '',
    ]);
    rows.push([
      `convert + verify + swap-ready, 1 core (best of ${REPS})`,
      '',
      `${fullMBps.toFixed(1)} MB/s`,
      `${(fullMBps / floorMBps).toFixed(2)}x floor`,
      fullMBps / floorMBps >= 0.8 ? 'ok' : 'MISSED',
    ]);
    if (convertOnly.result === 'stopped-after-write') {
      rows.push([
        '  convert phase only (no verify)',
        '',
        `${convMBps.toFixed(1)} MB/s`,
        `${(convMBps / floorMBps).toFixed(2)}x floor`,
        '',
      ]);
    }
    rmSync(dir, { recursive: true });
    rmSync(join(work, 'v2-out'), { recursive: true, force: true });
  }

  // 3. migrate scaling.
  if (parts.has('migrate')) {
    const pool = v2Pool(16);
    const make = (name) => {
      const root = join(work, name);
      for (let p = 0; p < 4; p++) {
        const dir = join(root, `topic-${p}`);
        mkdirSync(dir, { recursive: true });
        for (let s = 0; s < 5; s++) {
          // 4 finished segments of ~16 MiB and an active one per partition.
          const base = BigInt(s) * 1_000_000n;
          const bytesWanted = s === 4 ? 64 * 1024 : 16 * MiB;
          writeBig(join(dir, `${String(base).padStart(20, '0')}.log`), bytesWanted, pool, (e, next) => {
            const o = next === 0n ? base : next;
            e.writeBigInt64BE(o, 0);
            return o + BigInt(RECORDS_PER_BATCH);
          });
        }
      }
      return root;
    };
    // 1 and 2 threads take turns, REPS times each; each keeps its best run.
    const times = { 1: Infinity, 2: Infinity };
    for (let rep = 0; rep < REPS; rep++) {
      for (const threads of [1, 2]) {
        const root = make(`migrate-${threads}`);
        // In a child started the way the seglift bin starts (flags and env above).
        const script = `
          const { migrate } = await import(${JSON.stringify(new URL('../packages/segment/dist/index.js', import.meta.url).href)});
          const t = performance.now();
          const res = await migrate([${JSON.stringify(root)}], { codec: 'zstd', level: 3, concurrency: ${threads} });
          const ms = performance.now() - t;
          console.log(JSON.stringify({ ms, converted: res.reports.filter((r) => r.result === 'converted').length }));
        `;
        // A file, not -e: worker threads inherit execArgv, and --input-type is refused there.
        const file = join(work, `migrate-${threads}.mjs`);
        writeFileSync(file, script);
        const r = spawnSync(process.execPath, [...childFlags, file], { encoding: 'utf8', env: childEnv });
        if (r.status !== 0) throw new Error(`migrate child failed: ${r.stderr}`);
        const out = JSON.parse(r.stdout.trim().split('\n').pop());
        if (out.converted !== 16) throw new Error(`migrate converted ${out.converted} of 16 segments`);
        times[threads] = Math.min(times[threads], out.ms);
        rmSync(root, { recursive: true });
      }
    }
    const speedup = times[1] / times[2];
    rows.push([
      `migrate 16 x 16 MiB, 1 thread (best of ${REPS})`,
      '',
      `${(times[1] / 1000).toFixed(1)} s`,
      'baseline',
      '',
    ]);
    rows.push([
      `migrate 16 x 16 MiB, 2 threads (best of ${REPS})`,
      '',
      `${(times[2] / 1000).toFixed(1)} s`,
      `${speedup.toFixed(2)}x`,
      speedup >= 1.7 ? 'ok' : 'MISSED',
    ]);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log('| measure | data | result | vs baseline / target | |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
