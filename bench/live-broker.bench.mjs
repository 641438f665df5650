#!/usr/bin/env node
// Beside a live broker (issue 34): what `seglift migrate --prepare` costs the broker it runs
// beside. A Kafka 4 broker on loopback (e2e/kafka's jars, config template and broker user) holds
//  - topic `old`: BENCH_LIVE_PARTITIONS partitions of rolled segments of BENCH_SEG_MB each
//    (magic-1 gzip-9 wrappers, v2 gzip-9 batches, magic-1 again: bench/data.mjs), made cold
//    (fsync + DONTNEED, file by file) once the broker has loaded them;
//  - topic `live`: 2 partitions an idempotent producer writes at a fixed rate (Kafka's
//    ProducerPerformance, --throughput BENCH_RATE records/s of 1 KB, acks=all) while a consumer
//    reads at the tail (bench/java/TailLag.java).
// After a warm-up window (not reported), five windows of BENCH_WINDOW_S seconds, one producer run
// each (5 s of warm-up records first; its steady-state line is the one reported): a baseline;
// `seglift migrate <log dir> --prepare` with every core and no nice (what prepare did before
// issue 34); the same with the default settings (half the cores, nice 10); the same with
// --max-io-bytes-per-second BENCH_IO_LIMIT_MB; a baseline again. Prepares run back to back for
// the whole window, each into a new stage dir; every one leaves the page cache as found.
// For each: produce latency p50/p99/max (ProducerPerformance's own), the consumer's lag (records)
// and delay (now - CreateTime) at their worst and median, the prepare's read + write rate
// (/proc/<pid>/io rchar + wchar from 2 s after its start, past the loading of the program) and the page-cache residency of the `live` active
// segments before and after, and of the `old` segments after (mincore). A prepare still running
// at the window's end is stopped (SIGINT: it rolls back cleanly).
// Options (env): BENCH_SEG_MB (8), BENCH_LIVE_PARTITIONS (4), BENCH_RATE (1000),
// BENCH_WINDOW_S (30), BENCH_IO_LIMIT_MB (2), BENCH_DIR (os tmp).
// Run: pnpm bench live-broker
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MiB, rebaseSegment, segmentLog, writeV1GzipSegment, writeV2GzipSegment } from './data.mjs';
import { conditions, median, sh, sleep } from './helpers.mjs';
import { CACHE_DIR, javaClasses, javaClient, kafkaJars, LoopbackBroker } from './kafka-broker.mjs';

const SEG_MB = Number(process.env.BENCH_SEG_MB ?? 8);
const PARTITIONS = Number(process.env.BENCH_LIVE_PARTITIONS ?? 4);
const RATE = Number(process.env.BENCH_RATE ?? 1000);
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 30);
const LIMIT_MB = Number(process.env.BENCH_IO_LIMIT_MB ?? 2);
/** ProducerPerformance's --warmup-records: the JVM's first seconds are left out of its stats. */
const WARMUP_S = 5;
const repo = new URL('..', import.meta.url).pathname;
const SEGLIFT = join(repo, 'apps/cli/dist/seglift');
const { dropWrittenFile, pageCacheResidency } = await import(
  new URL('../packages/segment/dist/files/io-courtesy.js', import.meta.url).href
);

const tool = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const missing = ['java', 'javac'].filter((t) => !tool(t));
const jars = kafkaJars({ fetch: false });
if (jars === undefined) missing.push(`Kafka 4 jars in ${CACHE_DIR} (run the e2e/kafka suite once)`);
if (!existsSync(SEGLIFT)) missing.push(`${SEGLIFT} (pnpm build)`);
if (missing.length > 0) {
  console.log(`(live-broker: skipped, missing ${missing.join(', ')})`);
  process.exit(0);
}

const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-live-'));
chmodSync(work, 0o755);
const children = new Set();
const broker = new LoopbackBroker(work, jars);
const { logDir } = broker;
function cleanUp() {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  broker.kill();
  rmSync(work, { recursive: true, force: true });
}
process.on('exit', cleanUp);
for (const s of ['SIGINT', 'SIGTERM'])
  process.on(s, () => {
    cleanUp();
    process.exit(130);
  });

/** The `.log` files of `old` (rolled and active) and the active `.log` of each `live` partition. */
const logsOf = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort()
    .map((f) => join(dir, f));
const oldLogs = () => Array.from({ length: PARTITIONS }, (_, p) => logsOf(join(logDir, `old-${p}`))).flat();
const liveActive = () => [0, 1].map((p) => logsOf(join(logDir, `live-${p}`)).at(-1));
async function residency(files) {
  let resident = 0;
  let pages = 0;
  for (const f of files) {
    const r = await pageCacheResidency(f);
    resident += r.resident;
    pages += r.pages;
  }
  return { resident, pages };
}
const pct = (r) =>
  r.pages === 0 ? 'n/a' : `${((100 * r.resident) / r.pages).toFixed(0)}% of ${(r.pages * 4) >> 10} MiB`;

/** rchar + wchar of a process (bytes it read and wrote through system calls), or undefined once gone. */
function ioOf(pid) {
  try {
    const t = readFileSync(`/proc/${pid}/io`, 'utf8');
    const v = (k) => Number(new RegExp(`^${k}: (\\d+)`, 'm').exec(t)[1]);
    return v('rchar') + v('wchar');
  } catch {
    return undefined;
  }
}

/** One window: the producer for WINDOW_S, `prepare` (seglift's arguments, or none) from its steady state. */
async function window(name, prepareArgs, tail) {
  const before = await residency(liveActive());
  const t0 = Date.now() + WARMUP_S * 1000;
  const producer = spawn(
    'java',
    javaClient(`${jars}/*`, [
      'org.apache.kafka.tools.ProducerPerformance',
      '--topic',
      'live',
      '--num-records',
      String(RATE * (WARMUP_S + WINDOW_S)),
      '--warmup-records',
      String(RATE * WARMUP_S),
      '--record-size',
      '1000',
      '--throughput',
      String(RATE),
      '--producer-props',
      `bootstrap.servers=${broker.bootstrap}`,
      'acks=all',
      'enable.idempotence=true',
      'linger.ms=5',
    ]),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(producer);
  let out = '';
  producer.stdout.on('data', (b) => {
    out += b;
  });
  producer.stderr.on('data', (b) => {
    out += b;
  });
  const produced = new Promise((r) => producer.once('exit', r));
  // Prepare runs back to back for the whole window (each into a new stage dir), so that every
  // second of it is measured beside one.
  let prep;
  let windowOver = false;
  if (prepareArgs) {
    await sleep(t0 - Date.now());
    prep = { runs: 0, staged: 0, bytes: 0, seconds: 0, cut: false, summary: '', sum: { n: 0, s: 0 } };
    prep.loop = (async () => {
      while (!windowOver) {
        const stage = join(work, `stage-${name.replace(/\W+/g, '-')}-${prep.runs++}`);
        const started = performance.now();
        const child = spawn(
          SEGLIFT,
          ['migrate', logDir, '--prepare', '--stage-dir', stage, '--quiet', ...prepareArgs],
          {
            stdio: ['ignore', 'pipe', 'pipe'],
          },
        );
        children.add(child);
        prep.child = child;
        let text = '';
        child.stdout.on('data', (b) => {
          text += b;
        });
        child.stderr.on('data', (b) => {
          text += b;
        });
        let from;
        let to;
        const sample = setInterval(() => {
          const n = ioOf(child.pid);
          if (n === undefined) return;
          const at = performance.now();
          if (from === undefined && at - started >= 2000) from = { n, at };
          to = { n, at };
        }, 200);
        await new Promise((r) => child.once('exit', r));
        clearInterval(sample);
        prep.seconds += (performance.now() - started) / 1000;
        if (from !== undefined && to.at > from.at) {
          prep.sum.n += to.n - from.n;
          prep.sum.s += (to.at - from.at) / 1000;
        }
        prep.staged += Number(/stage: staged (\d+)/.exec(text)?.[1] ?? 0);
        prep.summary = text
          .split('\n')
          .filter((l) => /^(converted|io limit)/.test(l))
          .join('; ');
        rmSync(stage, { recursive: true, force: true });
      }
    })();
  }
  const code = await produced;
  const t1 = Date.now();
  windowOver = true;
  if (code !== 0) throw new Error(`ProducerPerformance exited with ${code}\n${out.slice(-3000)}`);
  if (prep) {
    // A run still going at the window's end is stopped (SIGINT: it rolls back cleanly).
    if (prep.child.exitCode === null) {
      prep.cut = true;
      prep.child.kill('SIGINT');
    }
    await prep.loop;
  }
  const after = await residency(liveActive());
  // The last line: "N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency,
  // P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
  const last =
    out
      .trim()
      .split('\n')
      .filter((l) => l.includes('99th'))
      .pop() ?? '';
  const num = (re) => Number(re.exec(last)?.[1]);
  const samples = tail.filter((s) => s.t >= t0 && s.t <= t1);
  const lags = samples.map((s) => s.lag);
  const delays = samples.map((s) => s.delayMs).filter((d) => d >= 0);
  return {
    name,
    p50: num(/(\d+) ms 50th/),
    p99: num(/(\d+) ms 99th/),
    max: num(/([\d.]+) ms max latency/),
    lagMedian: lags.length ? median(lags) : NaN,
    lagMax: lags.length ? Math.max(...lags) : NaN,
    delayMax: delays.length ? Math.max(...delays) : NaN,
    prepare: prep
      ? {
          runs: prep.runs,
          staged: prep.staged,
          seconds: prep.seconds,
          cut: prep.cut,
          rate: prep.sum.s > 0 ? prep.sum.n / prep.sum.s : NaN,
          summary: prep.summary,
        }
      : undefined,
    oldResident: await residency(oldLogs()),
    before,
    after,
  };
}

try {
  const classes = javaClasses('TailLag', jars);
  const tailLag = (...args) => javaClient(`${classes}:${jars}/*`, ['TailLag', ...args]);
  await broker.format('c2VnbGlmdC1saXZlLTAx');
  await broker.start();
  sh(
    'java',
    tailLag('create', broker.bootstrap, 'old', String(PARTITIONS), 'retention.ms=-1', 'retention.bytes=-1'),
  );
  sh('java', tailLag('create', broker.bootstrap, 'live', '2', `segment.bytes=${256 * MiB}`));
  await broker.stop();

  // The old segments move in (indexes and snapshots left for Kafka to rebuild).
  let oldBytes = 0;
  for (let p = 0; p < PARTITIONS; p++) {
    const dir = join(logDir, `old-${p}`);
    for (const f of readdirSync(dir))
      if (/\.(log|index|timeindex|snapshot|txnindex)$/.test(f)) unlinkSync(join(dir, f));
    let next = 0n;
    const kinds = [writeV1GzipSegment, writeV2GzipSegment, writeV1GzipSegment, writeV1GzipSegment];
    kinds.forEach((write, s) => {
      const log = segmentLog(dir, next);
      // The last one is the active segment: small, never read by prepare.
      const bytes = s === kinds.length - 1 ? 64 * 1024 : SEG_MB * MiB;
      const { entries } = write(log, bytes, { seed: 60 + p * 7 + s, distinct: 48 });
      rebaseSegment(log, next);
      next += BigInt(entries) * 100n;
      if (s < kinds.length - 1) oldBytes += bytes;
    });
  }
  rmSync(join(logDir, '.kafka_cleanshutdown'), { force: true });
  await broker.start();
  const tail = [];
  const consumer = spawn('java', tailLag('tail', broker.bootstrap, 'live'), {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.add(consumer);
  let buf = '';
  consumer.stdout.on('data', (b) => {
    buf += b;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.startsWith('{')) tail.push(JSON.parse(line));
    }
  });
  // The broker's recovery read them: cold again, as old segments on a busy host are.
  for (let p = 0; p < PARTITIONS; p++)
    for (const f of logsOf(join(logDir, `old-${p}`))) await dropWrittenFile(f);
  await sleep(5000);

  // The broker's and the clients' JITs warm up first (not reported).
  await window('warm-up', undefined, tail);
  const results = [];
  results.push(await window('baseline (no seglift)', undefined, tail));
  // What prepare did before issue 34: every core, the priority it was started with.
  const cores = String(os.availableParallelism());
  results.push(
    await window(`prepare, --concurrency ${cores} --no-nice`, ['--concurrency', cores, '--no-nice'], tail),
  );
  results.push(await window('prepare, default settings', [], tail));
  results.push(
    await window(
      `prepare, --max-io-bytes-per-second ${LIMIT_MB}m`,
      ['--max-io-bytes-per-second', `${LIMIT_MB}m`],
      tail,
    ),
  );
  results.push(await window('baseline again', undefined, tail));
  consumer.kill('SIGKILL');
  await broker.stop();

  console.log(`${conditions()}; ${Math.round(os.totalmem() / 2 ** 30)} GiB RAM`);
  console.log(
    `\nBroker: Kafka 4 (${jars.split('/').pop()}), \`old\`: ${PARTITIONS} partitions x 3 rolled segments of ${SEG_MB} MiB ` +
      `(${(oldBytes / MiB).toFixed(0)} MiB: magic-1 gzip-9, v2 gzip-9, magic-1 gzip-9), cold; \`live\`: 2 partitions, ` +
      `ProducerPerformance ${RATE} records/s of 1 KB, acks=all, idempotent; windows of ${WINDOW_S} s.\n`,
  );
  console.log(
    '| window | produce p50 | p99 | max | consumer lag median / max (records) | consumer delay max | prepare runs (segments staged) | prepare read+write rate | `live` active segments resident before -> after | `old` segments resident after |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const p = r.prepare;
    console.log(
      `| ${r.name} | ${r.p50} ms | ${r.p99} ms | ${r.max.toFixed(0)} ms | ${r.lagMedian} / ${r.lagMax} | ${r.delayMax} ms | ` +
        `${p ? `${p.runs}${p.cut ? ' (the last stopped at the window end)' : ''} (${p.staged})` : '-'} | ` +
        `${p ? `${(p.rate / MiB).toFixed(1)} MiB/s` : '-'} | ${pct(r.before)} -> ${pct(r.after)} | ${pct(r.oldResident)} |`,
    );
  }
  for (const r of results)
    if (r.prepare) console.log(`\n${r.name}, its last run: ${r.prepare.summary || '(stopped)'}`);
} catch (err) {
  console.error(err);
  process.exitCode = 1;
}
