#!/usr/bin/env node
// Codec throughput of @seglift/format (built: pnpm --filter @seglift/format build), plus
// node:zlib vs fflate for gzip. Data: ~32 MiB of deterministic semi-compressible JSON-ish
// records, cut into batch-sized chunks (--chunk=N bytes, default 1 MiB) as the rewriter does.
// MB/s are of uncompressed bytes, best of --repeat=N (default 3) runs; --bytes=N for the total.
// Run: node --expose-gc bench/codecs.bench.mjs
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

const formatDist = new URL('../packages/format/dist/index.js', import.meta.url);
const { compress, decompress } = await import(formatDist.href);
const { prng: mulberry32 } = await import(new URL('../packages/testkit/dist/index.js', import.meta.url).href);
const requireFromFormat = createRequire(
  fileURLToPath(new URL('../packages/format/package.json', import.meta.url)),
);
const fflate = requireFromFormat('fflate');

const arg = (name, fallback) => {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit === undefined ? fallback : Number(hit.slice(name.length + 3));
};
const TOTAL = arg('bytes', 32 * 1024 * 1024);
const CHUNK = arg('chunk', 1024 * 1024);
const REPEAT = arg('repeat', 3);

function semiCompressible(size) {
  const rnd = mulberry32(1);
  const words = ['order', 'user', 'price', 'created', 'status', 'shipped', 'pending', 'sku', 'qty', 'eur'];
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  while (pos < size) {
    const w = words[Math.floor(rnd() * words.length)];
    const s = `{"${w}":${Math.floor(rnd() * 100000)},"id":"${Math.floor(rnd() * 1e9).toString(36)}","ts":${1700000000000 + pos}}`;
    pos += out.write(s, pos, 'latin1');
  }
  return out;
}

const data = semiCompressible(TOTAL);
const chunks = [];
for (let off = 0; off < data.length; off += CHUNK) chunks.push(data.subarray(off, off + CHUNK));

function best(fn) {
  let t = Infinity;
  for (let i = 0; i < REPEAT; i++) {
    globalThis.gc?.();
    const start = performance.now();
    fn();
    t = Math.min(t, performance.now() - start);
  }
  return t;
}

const mbps = (ms) => (TOTAL / (1024 * 1024) / (ms / 1000)).toFixed(0);

const cases = [
  { name: 'gzip (node:zlib)', id: 1, level: 6 },
  { name: 'gzip (node:zlib)', id: 1, level: 1 },
  {
    name: 'gzip (fflate)',
    level: 6,
    enc: (c) => fflate.gzipSync(c, { level: 6 }),
    dec: (c) => fflate.gunzipSync(c),
  },
  {
    name: 'gzip (fflate)',
    level: 1,
    enc: (c) => fflate.gzipSync(c, { level: 1 }),
    dec: (c) => fflate.gunzipSync(c),
  },
  { name: 'snappy (xerial)', id: 2 },
  { name: 'lz4 (Kafka frame)', id: 3, level: 9 },
  { name: 'zstd', id: 4, level: 3 },
  { name: 'zstd', id: 4, level: 1 },
  { name: 'zstd', id: 4, level: 9 },
];

console.log(
  `Data: ${(TOTAL / 1048576).toFixed(0)} MiB semi-compressible, ${chunks.length} chunks of ${CHUNK} bytes, best of ${REPEAT}, node ${process.version}\n`,
);
console.log('| codec | level | ratio | compress MB/s | decompress MB/s |');
console.log('|---|---|---|---|---|');
for (const c of cases) {
  const enc = c.enc ?? ((x) => compress(c.id, x, { level: c.level, magic: 2 }));
  const dec = c.dec ?? ((x) => decompress(c.id, x, { magic: 2, maxBytes: 64 * 1024 * 1024 }));
  let compressed = [];
  const tc = best(() => {
    compressed = chunks.map(enc);
  });
  let size = 0;
  for (const x of compressed) size += x.length;
  const td = best(() => {
    for (const x of compressed) dec(x);
  });
  // Sanity: the round trip is exact.
  const back = Buffer.concat(compressed.map((x) => Buffer.from(dec(x))));
  if (!back.equals(data)) throw new Error(`${c.name}: round trip mismatch`);
  console.log(`| ${c.name} | ${c.level ?? '-'} | ${(TOTAL / size).toFixed(2)} | ${mbps(tc)} | ${mbps(td)} |`);
}
