#!/usr/bin/env node
// Against what operators do instead (issue 26, item 6): without seglift, a topic is upconverted
// or recompressed by copying it through a broker with a consumer and a producer, as MirrorMaker
// does (offsets not kept). This runs that with Kafka's own Java client (bench/java/Copier.java)
// against a real Kafka 4 broker on loopback, and seglift on the same segments, in one run:
//  - topic src-v1: magic-1 gzip-9 wrappers (bench/data.mjs) moved into the broker's log dir;
//  - topic src-v2: the same records copied through the broker by Kafka's producer with gzip-9
//    (segment.bytes BENCH_SEG_MB), so v2 gzip batches as the Java producer writes them;
//  - both copied to new topics with compression.type=zstd (level 3), and both partition dirs (a
//    copy of them, the broker stopped meanwhile) migrated by `seglift migrate --codec zstd
//    --level 3 --include-active --concurrency 1`, pinned to core 0.
// The copy's CPU is the copier JVM's plus the broker's during it (/proc/<pid>/stat); seglift's is
// its process's: their ratio is "per core". Disk written: the allocated bytes of the new topic's
// partition dir against those of seglift's rewritten partition dir.
// Reuses e2e/kafka's pom.xml (the kafka4 profile's jars, fetched once by Maven into the same cache
// as the oracle suite), its config templates and its broker user (nobody when root).
// Options (env): BENCH_SEG_MB (16), BENCH_MIRROR_SEGMENTS (3), BENCH_REPS (2), BENCH_DIR (os tmp).
// Run: pnpm bench mirror
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { MiB, rebaseSegment, segmentLog, writeV1GzipSegment } from './data.mjs';
import { sh } from './helpers.mjs';
import { javaClasses, javaClient, kafkaJars, LoopbackBroker } from './kafka-broker.mjs';

const SEG_MB = Number(process.env.BENCH_SEG_MB ?? 16);
const SEGMENTS = Number(process.env.BENCH_MIRROR_SEGMENTS ?? 3);
const REPS = Number(process.env.BENCH_REPS ?? 2);
const repo = new URL('..', import.meta.url).pathname;
const SEGLIFT = join(repo, 'apps/cli/dist/seglift');
const RSS_LIMIT_MIB = 200;

const tool = (cmd, args) => spawnSync(cmd, args, { encoding: 'utf8' }).status === 0;
const missing = ['java', 'javac', 'mvn', 'taskset'].filter((t) => !tool('sh', ['-c', `command -v ${t}`]));
if (!existsSync('/usr/bin/time')) missing.push('/usr/bin/time');
if (missing.length > 0) {
  console.log(`(mirror: skipped, missing ${missing.join(', ')})`);
  process.exit(0);
}

const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-mirror-'));
chmodSync(work, 0o755);
let broker;
function cleanUp() {
  broker?.kill();
  rmSync(work, { recursive: true, force: true });
}
process.on('exit', cleanUp);
for (const s of ['SIGINT', 'SIGTERM'])
  process.on(s, () => {
    cleanUp();
    process.exit(130);
  });

/** utime + stime of a process (all its threads), in seconds. */
function cpuOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
/** A command to its end under /usr/bin/time: wall s, CPU s, peak RSS MiB, stdout. */
function timed(cmd, args) {
  const out = join(work, `time-${Math.random()}`);
  const t = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', '-o', out, cmd, ...args], {
    encoding: 'utf8',
    maxBuffer: 64 * MiB,
  });
  const wall = (performance.now() - t) / 1000;
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited with ${r.status}\n${r.stderr.slice(-4000)}`);
  const [u, s, m] = readFileSync(out, 'utf8').trim().split('\n').pop().split(' ').map(Number);
  return { wall, cpu: u + s, rssMiB: m / 1024, stdout: r.stdout };
}
/** Allocated bytes of the files in a partition dir (indexes are sparse until written). */
function allocated(dir) {
  let n = 0;
  for (const f of readdirSync(dir))
    if (/\.(log|index|timeindex)$/.test(f)) n += statSync(join(dir, f)).blocks * 512;
  return n;
}
const logBytes = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .reduce((a, f) => a + statSync(join(dir, f)).size, 0);

try {
  const jars = kafkaJars({ fetch: true });
  const classes = javaClasses('Copier', jars);
  const copier = (...args) => javaClient(`${classes}:${jars}/*`, ['Copier', ...args]);
  broker = new LoopbackBroker(work, jars);
  const { logDir } = broker;

  // Kafka 4 formats its log dir and creates the topics (so its metadata log has their ids).
  await broker.format('c2VnbGlmdC1taXJyb3ItMQ');
  await broker.start();
  const keep = ['retention.ms=-1', 'retention.bytes=-1'];
  const seg = [`segment.bytes=${SEG_MB * MiB}`];
  const topics = [
    ['src-v1', []],
    ['src-v2', seg],
  ];
  for (let r = 0; r < REPS; r++) topics.push([`dst-v1-${r}`, seg], [`dst-v2-${r}`, seg]);
  for (const [t, extra] of topics) sh('java', copier('create', broker.bootstrap, t, ...keep, ...extra));
  await broker.stop({ clean: true });

  // The legacy segments move in (indexes and snapshots left for Kafka to rebuild).
  const v1Dir = join(logDir, 'src-v1-0');
  for (const f of readdirSync(v1Dir))
    if (/\.(log|index|timeindex|snapshot|txnindex)$/.test(f)) unlinkSync(join(v1Dir, f));
  let next = 0n;
  for (let s = 0; s < SEGMENTS; s++) {
    const log = segmentLog(v1Dir, next);
    const { entries } = writeV1GzipSegment(log, SEG_MB * MiB, { seed: 40 + s, distinct: 48 });
    rebaseSegment(log, next);
    next += BigInt(entries) * 100n;
  }
  rmSync(join(logDir, '.kafka_cleanshutdown'), { force: true });
  await broker.start();
  // src-v2: the same records through Kafka's producer with gzip-9 (setup, not timed).
  sh('java', copier('copy', broker.bootstrap, 'src-v1', 'src-v2', 'gzip', '9'));
  // seglift's input: both partition dirs as the broker leaves them at a clean shutdown.
  await broker.stop({ clean: true });
  const sources = join(work, 'sources');
  mkdirSync(sources);
  for (const v of ['v1', 'v2']) sh('cp', ['-a', join(logDir, `src-${v}-0`), join(sources, `src-${v}-0`)]);
  await broker.start();

  // Alternating: copy v1, seglift v1, copy v2, seglift v2, then again.
  const runs = { v1: [], v2: [] };
  for (let rep = 0; rep < REPS; rep++)
    for (const v of ['v1', 'v2']) {
      const before = cpuOf(broker.process.pid);
      const copy = timed('taskset', [
        '-c',
        '0',
        'java',
        ...copier('copy', broker.bootstrap, `src-${v}`, `dst-${v}-${rep}`, 'zstd', '3'),
      ]);
      const brokerCpu = cpuOf(broker.process.pid) - before;
      const records = JSON.parse(copy.stdout.trim().split('\n').pop()).records;
      const dir = join(work, `seglift-${v}-${rep}`, `src-${v}-0`);
      mkdirSync(dirname(dir));
      sh('cp', ['-a', join(sources, `src-${v}-0`), dir]);
      const inBytes = logBytes(dir);
      const seglift = timed('taskset', [
        '-c',
        '0',
        SEGLIFT,
        'migrate',
        dir,
        '--codec',
        'zstd',
        '--level',
        '3',
        '--include-active',
        '--concurrency',
        '1',
        '--json',
      ]);
      const summary = JSON.parse(seglift.stdout.trim().split('\n').pop());
      runs[v].push({
        copy,
        brokerCpu,
        copyCpu: copy.cpu + brokerCpu,
        records,
        seglift,
        converted: summary.summary?.converted ?? summary.converted,
        inBytes,
        dstDisk: allocated(join(logDir, `dst-${v}-${rep}-0`)),
        segDisk: allocated(dir),
      });
      rmSync(dirname(dir), { recursive: true });
      console.log(
        `(${v} rep ${rep + 1}: copy ${copy.wall.toFixed(2)} s, ${copy.cpu.toFixed(2)} + broker ${brokerCpu.toFixed(2)} s CPU; seglift ${seglift.wall.toFixed(2)} s, ${seglift.cpu.toFixed(2)} s CPU)`,
      );
    }

  const mb = (n) => `${(n / MiB).toFixed(1)} MiB`;
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  console.log(
    `\n${SEGMENTS} segments of ${SEG_MB} MiB magic-1 gzip-9 (src-v1) and the same records as Kafka's producer writes them with gzip-9 (src-v2) -> zstd-3; ${jars.split('/').pop()}; medians of ${REPS} alternating runs\n`,
  );
  console.log('| case | measured | target | ok? |');
  console.log('|---|---:|---|---|');
  for (const v of ['v1', 'v2']) {
    const rs = runs[v];
    const last = rs[rs.length - 1];
    const copyCpu = median(rs.map((r) => r.copyCpu));
    const segCpu = median(rs.map((r) => r.seglift.cpu));
    const ratio = median(rs.map((r) => r.copyCpu / r.seglift.cpu));
    const label = v === 'v1' ? 'legacy v1 gzip' : 'v2 gzip';
    const rss = Math.max(...rs.map((r) => r.seglift.rssMiB));
    console.log(
      `| ${label} (${mb(last.inBytes)}, ${last.records} records): CPU s, consumer+producer copy (copier + broker) / seglift (${last.converted} segments) | ${copyCpu.toFixed(2)} s (${median(rs.map((r) => r.copy.cpu)).toFixed(2)} + ${median(rs.map((r) => r.brokerCpu)).toFixed(2)}) / ${segCpu.toFixed(2)} s = ${ratio.toFixed(1)}x | >= 3x | ${ratio >= 3 ? 'yes' : 'NO'} |`,
    );
    console.log(
      `| ${label}: wall, copy (copier on core 0) / seglift (core 0) | ${median(rs.map((r) => r.copy.wall)).toFixed(2)} s / ${median(rs.map((r) => r.seglift.wall)).toFixed(2)} s = ${median(rs.map((r) => r.copy.wall / r.seglift.wall)).toFixed(1)}x | | |`,
    );
    console.log(
      `| ${label}: disk written, the copy's new topic / seglift's rewrite | ${mb(last.dstDisk)} / ${mb(last.segDisk)} | | |`,
    );
    console.log(
      `| ${label}: peak RSS, seglift (the copier's JVM) | ${rss.toFixed(0)} MiB (${Math.max(...rs.map((r) => r.copy.rssMiB)).toFixed(0)} MiB) | <= ${RSS_LIMIT_MIB} MiB | ${rss <= RSS_LIMIT_MIB ? 'yes' : 'NO'} |`,
    );
  }
} finally {
  if (broker?.process?.exitCode === null) await broker.stop().catch(() => broker.kill());
  cleanUp();
}
