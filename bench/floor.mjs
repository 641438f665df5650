// The verified-rewrite floor (docs/benchmarks.md) and the child runner the pipeline benchmarks
// share: children start the way the seglift programs start (PIPELINE_NODE's environment and node
// flags, or BENCH_MALLOC_ARENA_MAX / BENCH_NODE_FLAGS; '' = node's defaults), pinned with taskset
// when the machine allows it (BENCH_PIN=0 never pins). Needs the workspace built.
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { MiB, writeV1GzipSegment, writeV1TinySegment, writeV2GzipSegment } from './data.mjs';

const legacy = await import(new URL('../packages/legacy/dist/index.js', import.meta.url).href);
const { PIPELINE_NODE } = await import(
  new URL('../packages/segment/dist/node-flags.js', import.meta.url).href
);
export const childEnv = {
  ...process.env,
  MALLOC_ARENA_MAX: process.env.BENCH_MALLOC_ARENA_MAX ?? PIPELINE_NODE.env.MALLOC_ARENA_MAX,
};
if (childEnv.MALLOC_ARENA_MAX === '') delete childEnv.MALLOC_ARENA_MAX;
export const childFlags = (process.env.BENCH_NODE_FLAGS ?? PIPELINE_NODE.flags.join(' '))
  .split(' ')
  .filter(Boolean);

// "On N cores": the child may run on that many CPUs (taskset): libuv's I/O threads, V8's compiler
// thread and the kernel's work for the process share them, as under a CPU limit.
export const canPin =
  process.env.BENCH_PIN !== '0' &&
  os.availableParallelism() >= 2 &&
  spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/** Runs node with `args` (pinned to `cpus` when given and possible); returns its last stdout line as JSON. */
export function runChild(args, cpus) {
  const pinned = canPin && cpus !== undefined;
  const r = spawnSync(
    pinned ? 'taskset' : process.execPath,
    pinned ? ['-c', cpus, process.execPath, ...args] : args,
    { encoding: 'utf8', maxBuffer: 16 * MiB, env: childEnv },
  );
  if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const formatDist = new URL('../packages/format/dist/index.js', import.meta.url).href;

/** Writes `buffers` as length-prefixed records, for floorInChild. */
export function writeList(file, buffers) {
  const fd = openSync(file, 'w');
  for (const b of buffers) {
    writeSync(fd, Buffer.from(Uint32Array.of(b.length).buffer));
    writeSync(fd, b);
  }
  closeSync(fd);
}

/**
 * The floor's codec work in a child pinned to one core, in ms (no Kafka parsing, no I/O): the gzip
 * payloads (`spec.gzFile`) gunzipped in turn, and the payloads written (`spec.rawFile`) through
 * zstd-3 then zstd -d, each list cycled to its count (`gzCount`, `rawCount`), the zstd work
 * interleaved with the gunzips as the pipeline does it. `fromGzip`: zstd compresses each gunzip's
 * output (v2 recompression).
 */
export function floorInChild(spec) {
  return runChild([...childFlags, '--input-type=module', '-e', floorScript(spec)], '0').ms;
}

/** floorInChild's program: prints {ms, start, end} (start and end in ms since the epoch). */
export function floorScript(spec) {
  return `
    const { readFileSync } = await import('node:fs');
    const { CompressionType, compress, decompress } = await import(${JSON.stringify(formatDist)});
    const read = (file) => {
      if (!file) return [];
      const all = readFileSync(file);
      const out = [];
      for (let p = 0; p < all.length; ) { const n = all.readUInt32LE(p); out.push(all.subarray(p + 4, p + 4 + n)); p += 4 + n; }
      return out;
    };
    const spec = ${JSON.stringify(spec)};
    const gz = read(spec.gzFile);
    const raw = read(spec.rawFile);
    const limit = { magic: 2, maxBytes: 64 * 1024 * 1024 };
    const zstd = (b) => {
      const z = compress(CompressionType.ZSTD, b, { level: 3, magic: 2 });
      decompress(CompressionType.ZSTD, z, { magic: 2, maxBytes: b.length });
    };
    // Several children at once start together (startAt, ms since the epoch): their start-up is
    // not counted, nor the order the OS happened to start them in.
    if (spec.startAt) while (Date.now() < spec.startAt) await new Promise((r) => setTimeout(r, 1));
    const t = performance.now();
    let done = 0;
    for (let i = 0; i < spec.gzCount; i++) {
      const out = decompress(CompressionType.GZIP, gz[i % gz.length], limit);
      if (spec.fromGzip) zstd(out);
      while (!spec.fromGzip && done < spec.rawCount && done * spec.gzCount <= i * spec.rawCount) zstd(raw[done++ % raw.length]);
    }
    for (; done < spec.rawCount && !spec.fromGzip; done++) zstd(raw[done % raw.length]);
    const end = performance.now();
    console.log(JSON.stringify({ ms: end - t, start: performance.timeOrigin + t, end: performance.timeOrigin + end }));
  `;
}

/** Uncompressed record bytes of `batches` (whole v2 batches, codec none). */
export const payloadsOf = (batches) => batches.map((b) => Buffer.from(b.subarray(61)));

/**
 * A v2 gzip-9 segment of `mb` MiB (`records` per batch; data.mjs's default when undefined) in
 * `work/<key>/`, and its floor: the batches' gzip payloads inflated, recompressed zstd-3.
 */
export function v2GzipData(work, key, mb, records) {
  const dir = join(work, key);
  mkdirSync(dir);
  const log = join(dir, '00000000000000000000.log');
  const gz = [];
  const { bytes, entries } = writeV2GzipSegment(log, mb * MiB, {
    ...(records === undefined ? {} : { records }),
    onBatch: (b) => gz.push(Buffer.from(b.subarray(61))),
  });
  const gzFile = join(work, `${key}.gz`);
  writeList(gzFile, gz);
  return { log, bytes, floor: { gzFile, gzCount: entries, fromGzip: true } };
}

/**
 * A magic-1 gzip-9 wrapper segment of `mb` MiB in `work/v1/`, and for each grouping its floor:
 * the wrappers inflated, and the records as that grouping batches them compressed zstd-3 (one pass
 * over the distinct wrappers, which the segment repeats, re-stamped so offsets increase).
 */
export function v1GzipData(work, mb, groupings) {
  const dir = join(work, 'v1');
  mkdirSync(dir);
  const log = join(dir, '00000000000000000000.log');
  const gz = [];
  const wrappers = [];
  const { bytes, entries } = writeV1GzipSegment(log, mb * MiB, {
    onWrapper: (w) => {
      gz.push(Buffer.from(legacy.readLegacyEntry(w).value));
      wrappers.push(w);
    },
  });
  const gzFile = join(work, 'v1.gz');
  writeList(gzFile, gz);
  const floors = {};
  for (const grouping of groupings) {
    const up = new legacy.Upconverter({ grouping, codec: 0 });
    const batches = [];
    let next = 0n;
    for (const w of wrappers) {
      const e = Buffer.from(w);
      e.writeBigInt64BE(next + 99n, 0);
      next += 100n;
      batches.push(...up.push(e));
    }
    batches.push(...up.flush());
    const rawFile = join(work, `v1-${grouping}.raw`);
    writeList(rawFile, payloadsOf(batches));
    floors[grouping] = {
      gzFile,
      rawFile,
      gzCount: entries,
      rawCount: Math.round((batches.length * entries) / wrappers.length),
    };
  }
  return { log, bytes, floors };
}

/** A segment of small plain magic-1 messages in `work/tiny/`, and its floor: the records, zstd-3. */
export function tinyData(work, mb) {
  const dir = join(work, 'tiny');
  mkdirSync(dir);
  const log = join(dir, '00000000000000000000.log');
  const chunks = [];
  let pending = [];
  let pendingBytes = 0;
  const { bytes } = writeV1TinySegment(log, mb * MiB, {
    onMessage: (key, value) => {
      pending.push(key, value);
      pendingBytes += key.length + value.length;
      if (pendingBytes >= MiB) {
        chunks.push(Buffer.concat(pending));
        pending = [];
        pendingBytes = 0;
      }
    },
  });
  if (pending.length) chunks.push(Buffer.concat(pending));
  const rawFile = join(work, 'tiny.raw');
  writeList(rawFile, chunks);
  return { log, bytes, floor: { rawFile, gzCount: 0, rawCount: chunks.length } };
}
