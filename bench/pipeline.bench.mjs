#!/usr/bin/env node
// Pipeline numbers for issue 3, each against a baseline measured in the same run:
//  1. peak RSS converting one big segment of magic-1 gzip wrappers -> zstd (target <= 200 MiB
//     for a 1 GiB segment);
//  2. gzip -> zstd-3 recompression throughput of v2 batches on one core vs the codec floor
//     (plain gunzip + zstd-3 of the same payload bytes with the same libraries, no Kafka parsing;
//     target >= 0.8x), for the whole pipeline (convert with its in-memory round trip, write,
//     indexes, fsync, verify from disk); also unpinned, and against the codec work a verified
//     rewrite cannot avoid (gunzip + zstd-3 + zstd -d);
//  3. `migrate` of many segments on 2 cores vs 1 core (target >= 1.7x).
// Options (env): BENCH_BIG_MB (default 1024), BENCH_V2_MB (default 256), BENCH_DIR (default os tmp),
// BENCH_PARTS (default memory,throughput,migrate), BENCH_REPS (default 3: throughput and migrate
// runs each, best kept), BENCH_PIN=0 (never pin to cores).
// Run: pnpm bench pipeline
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
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

// Children run the way the seglift programs run (PIPELINE_NODE, packages/segment/src/node-flags.ts:
// its environment and node flags) unless BENCH_MALLOC_ARENA_MAX / BENCH_NODE_FLAGS say
// otherwise ('' = node's defaults).
const { PIPELINE_NODE } = await import(
  new URL('../packages/segment/dist/node-flags.js', import.meta.url).href
);
const childEnv = {
  ...process.env,
  MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? PIPELINE_NODE.env.MALLOC_ARENA_MAX,
};
if (childEnv.MALLOC_ARENA_MAX === '') delete childEnv.MALLOC_ARENA_MAX;
const childFlags = (process.env.BENCH_NODE_FLAGS ?? PIPELINE_NODE.flags.join(' ')).split(' ').filter(Boolean);

// "Per core" and "on N cores" mean the process may run on that many CPUs: children are pinned
// with taskset (libuv's I/O threads and the kernel's work for the process then share those
// cores too, as under a CPU limit). Without taskset, or with BENCH_PIN=0, nothing is pinned and
// the rows say so.
const canPin =
  process.env.BENCH_PIN !== '0' &&
  os.availableParallelism() >= 2 &&
  spawnSync('taskset', ['-c', '0', 'true']).status === 0;
function runChild(args, cpus) {
  const pinned = canPin && cpus !== undefined;
  const r = spawnSync(
    pinned ? 'taskset' : process.execPath,
    pinned ? ['-c', cpus, process.execPath, ...args] : args,
    {
      encoding: 'utf8',
      maxBuffer: 16 * MiB,
      env: childEnv,
    },
  );
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}
const pinLabel = (cpus) =>
  canPin && cpus !== undefined ? `pinned to ${cpus.split(',').length} core(s)` : 'not pinned';

function convertInChild(logPath, outDir, extra = {}, cpus = undefined) {
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
  return runChild([...childFlags, '--input-type=module', '-e', script], cpus);
}

// roundTrip: also decompress each zstd frame again, the codec work verification adds.
function floorInChild(payloadFile, batches, cpus, roundTrip = false) {
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
      const z = compress(CompressionType.ZSTD, raw, { level: 3, magic: 2 });
      if (${roundTrip}) decompress(CompressionType.ZSTD, z, { magic: 2, maxBytes: raw.length });
    }
    console.log(JSON.stringify({ ms: performance.now() - t }));
  `;
  return runChild([...childFlags, '--input-type=module', '-e', script], cpus).ms;
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
    // like the pipeline's. All runs take turns, REPS times each, and each keeps its best: the
    // machine's neighbours slow single runs by up to 20%.
    const payloadFile = join(work, 'payloads.bin');
    writeFileSync(
      payloadFile,
      Buffer.concat(pool.flatMap((b) => [Buffer.from(Uint32Array.of(b.length - 61).buffer), b.subarray(61)])),
    );
    const best = { floor: Infinity, floorRoundTrip: Infinity, full: Infinity, fullUnpinned: Infinity };
    const out = join(work, 'v2-out');
    const pipeline = (cpus) => {
      const r = convertInChild(log, out, {}, cpus);
      if (r.result !== 'converted') throw new Error(`v2 segment not converted: ${r.reason}`);
      rmSync(out, { recursive: true });
      return r.ms;
    };
    for (let rep = 0; rep < REPS; rep++) {
      best.floor = Math.min(best.floor, floorInChild(payloadFile, batches, '0'));
      best.full = Math.min(best.full, pipeline('0'));
      best.floorRoundTrip = Math.min(best.floorRoundTrip, floorInChild(payloadFile, batches, '0', true));
      best.fullUnpinned = Math.min(best.fullUnpinned, pipeline(undefined));
    }
    const mbps = (ms) => bytes / 1e6 / (ms / 1000);
    const ratio = best.floor / best.full;
    rows.push([
      `codec floor: gunzip + zstd-3, ${pinLabel('0')} (best of ${REPS})`,
      `${(bytes / MiB).toFixed(0)} MiB of batches`,
      `${mbps(best.floor).toFixed(1)} MB/s`,
      'baseline',
      '',
    ]);
    rows.push([
      `convert + verify + swap-ready, ${pinLabel('0')}`,
      '',
      `${mbps(best.full).toFixed(1)} MB/s`,
      `${ratio.toFixed(2)}x floor`,
      ratio >= 0.8 ? 'ok' : 'MISSED',
    ]);
    rows.push([
      '  same, not pinned (I/O threads on the other core)',
      '',
      `${mbps(best.fullUnpinned).toFixed(1)} MB/s`,
      `${(best.floor / best.fullUnpinned).toFixed(2)}x floor`,
      '',
    ]);
    rows.push([
      `  codec work of a verified rewrite: gunzip + zstd-3 + zstd -d, ${pinLabel('0')}`,
      '',
      `${mbps(best.floorRoundTrip).toFixed(1)} MB/s`,
      `pipeline ${(best.floorRoundTrip / best.full).toFixed(2)}x of it`,
      '',
    ]);
    rmSync(dir, { recursive: true });
    rmSync(out, { recursive: true, force: true });
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
    // On 1 core and on 2 cores with migrate's default concurrency (os.availableParallelism(),
    // which follows the pinning), plus 1 thread on 2 cores unpinned (without taskset: 1 and 2
    // threads, unpinned); the runs take turns, REPS times each, and each keeps its best.
    const runs = canPin
      ? { '1 core': ['0', undefined], '2 cores': ['0,1', undefined], '1 thread, not pinned': [undefined, 1] }
      : { '1 core': [undefined, 1], '2 cores': [undefined, 2] };
    const times = {};
    for (let rep = 0; rep < REPS; rep++) {
      for (const [name, [cpus, threads]] of Object.entries(runs)) {
        const root = make('migrate');
        const script = `
          const { migrate } = await import(${JSON.stringify(new URL('../packages/segment/dist/index.js', import.meta.url).href)});
          const t = performance.now();
          const res = await migrate([${JSON.stringify(root)}], { codec: 'zstd', level: 3${threads ? `, concurrency: ${threads}` : ''} });
          const ms = performance.now() - t;
          console.log(JSON.stringify({ ms, converted: res.reports.filter((r) => r.result === 'converted').length }));
        `;
        // A file, not -e: worker threads inherit execArgv, and --input-type is refused there.
        const file = join(work, 'migrate.mjs');
        writeFileSync(file, script);
        const out = runChild([...childFlags, file], cpus);
        if (out.converted !== 16) throw new Error(`migrate converted ${out.converted} of 16 segments`);
        times[name] = Math.min(times[name] ?? Infinity, out.ms);
        rmSync(root, { recursive: true });
      }
    }
    const speedup = times['1 core'] / times['2 cores'];
    rows.push([
      `migrate 16 x 16 MiB, ${canPin ? '1 core' : '1 thread (not pinned)'} (best of ${REPS})`,
      '',
      `${(times['1 core'] / 1000).toFixed(1)} s`,
      'baseline',
      '',
    ]);
    rows.push([
      `migrate 16 x 16 MiB, ${canPin ? '2 cores' : '2 threads (not pinned)'}`,
      '',
      `${(times['2 cores'] / 1000).toFixed(1)} s`,
      `${speedup.toFixed(2)}x`,
      speedup >= 1.7 ? 'ok' : 'MISSED',
    ]);
    if (times['1 thread, not pinned'] !== undefined) {
      rows.push([
        '  1 thread on 2 cores, not pinned (I/O threads on the other core)',
        '',
        `${(times['1 thread, not pinned'] / 1000).toFixed(1)} s`,
        `2 cores ${(times['1 thread, not pinned'] / times['2 cores']).toFixed(2)}x of it`,
        '',
      ]);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log('| measure | data | result | vs baseline / target | |');
console.log('|---|---|---|---|---|');
for (const r of rows) console.log(`| ${r.join(' | ')} |`);
