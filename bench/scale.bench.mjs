#!/usr/bin/env node
// Scaling out (issue 26, item 5): seglift-watcher + seglift-worker over a real redis-server, on
// the same data as the embedded `seglift migrate`:
//  - embedded: `seglift migrate ROOT --concurrency N`, pinned to core 0;
//  - one worker process with N threads (SEGLIFT_WORKER_CONCURRENCY=N), pinned to core 0, on
//    "host" A: a network namespace made here (ip netns add + a veth pair), reaching Redis on the
//    host's end of the veth; target >= 0.95x the embedded migrate;
//  - two worker processes, on hosts A (core 0) and B (core 1): target >= 1.8x the one.
// Redis and the watcher run on the host, unpinned. Every run converts a fresh copy
// of one generated log dir on its own queue. A distributed run's time is from the watcher's start (workers already connected) to
// the last "segment done" a worker logged; the embedded one is the whole `seglift migrate`
// process. Runs alternate E E2 W1 W2 ... (E2: the embedded migrate with 2N threads on both cores, the machine's own two-core scaling, the reference for two hosts); medians are reported. Redis's commandstats per
// run say how many round trips a job costs. Needs root (netns), redis-server, iproute2, taskset.
// The partitions are spread over BENCH_SCALE_LOG_DIRS log dirs (2, as a broker's JBOD disks or
// two brokers' dirs): everything that writes in a log dir holds its Kafka .lock, so two workers
// on one log dir take turns (docs/operator-guide.md, "The broker's lock"), as two `migrate`s do.
// Options (env): BENCH_SCALE_PARTITIONS (8), BENCH_SCALE_SEGMENTS (2 rolled per partition),
// BENCH_SEG_MB (8), BENCH_SCALE_THREADS (N, 1), BENCH_REPS (3), BENCH_DIR (os tmp),
// BENCH_SCALE_LOG_DIR (unset; a dir to keep each distributed run's worker and watcher logs in).
// Run: pnpm bench scale
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MiB, rebaseSegment, segmentLog, writeV1GzipSegment } from './data.mjs';
import { freePort, median, sh, sleep } from './helpers.mjs';

const PARTITIONS = Number(process.env.BENCH_SCALE_PARTITIONS ?? 8);
const LOG_DIRS = Number(process.env.BENCH_SCALE_LOG_DIRS ?? 2);
const ROLLED = Number(process.env.BENCH_SCALE_SEGMENTS ?? 2);
const SEG_MB = Number(process.env.BENCH_SEG_MB ?? 8);
const N = Number(process.env.BENCH_SCALE_THREADS ?? 1);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const repo = new URL('..', import.meta.url).pathname;
const SEGLIFT = join(repo, 'apps/cli/dist/seglift');
const WORKER = join(repo, 'apps/worker/dist/seglift-worker');
const WATCHER = join(repo, 'apps/watcher/dist/seglift-watcher');
const RSS_LIMIT_MIB = 200;
const LOG_DIR = process.env.BENCH_SCALE_LOG_DIR;

function need() {
  const missing = [];
  if (process.getuid?.() !== 0) missing.push('root (for ip netns)');
  for (const t of ['redis-server', 'redis-cli', 'ip', 'taskset'])
    if (spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0) missing.push(t);
  if (spawnSync('test', ['-x', '/usr/bin/time']).status !== 0) missing.push('/usr/bin/time');
  return missing;
}
const missing = need();
if (missing.length > 0) {
  console.log(`(scale: skipped, missing ${missing.join(', ')})`);
  process.exit(0);
}

const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-scale-'));
const tag = (process.pid % 10000).toString(36);
// Two "hosts": a namespace each, a veth pair each, private /30s; nothing routed beyond them.
// The /24 is the bench's pid's: two benches at once get their own addresses and routes.
const net = `10.231.${process.pid % 250}`;
const hosts = [
  { ns: `sgl-a-${tag}`, host: `sgla${tag}`, peer: `sglA${tag}`, hostIp: `${net}.1`, ip: `${net}.2`, cpu: 0 },
  { ns: `sgl-b-${tag}`, host: `sglb${tag}`, peer: `sglB${tag}`, hostIp: `${net}.5`, ip: `${net}.6`, cpu: 1 },
];
const PASS = `bench-${process.pid}-${Date.now()}`;
const procs = new Set();
let redis;

function cleanUp() {
  for (const p of procs)
    if (p.exitCode === null) {
      try {
        process.kill(p.spawnargs[0] === '/usr/bin/time' ? -p.pid : p.pid, 'SIGKILL');
      } catch {}
    }
  if (redis?.p.exitCode === null) redis.p.kill('SIGKILL');
  for (const h of hosts) {
    spawnSync('ip', ['netns', 'del', h.ns]);
    spawnSync('ip', ['link', 'del', h.host]);
  }
  rmSync(work, { recursive: true, force: true });
}
process.on('exit', cleanUp);
for (const s of ['SIGINT', 'SIGTERM'])
  process.on(s, () => {
    cleanUp();
    process.exit(130);
  });

function makeHosts() {
  for (const h of hosts) {
    sh('ip', ['netns', 'add', h.ns]);
    sh('ip', ['link', 'add', h.host, 'type', 'veth', 'peer', 'name', h.peer]);
    sh('ip', ['link', 'set', h.peer, 'netns', h.ns]);
    sh('ip', ['addr', 'add', `${h.hostIp}/30`, 'dev', h.host]);
    sh('ip', ['link', 'set', h.host, 'up']);
    sh('ip', ['-n', h.ns, 'addr', 'add', `${h.ip}/30`, 'dev', h.peer]);
    sh('ip', ['-n', h.ns, 'link', 'set', h.peer, 'up']);
    sh('ip', ['-n', h.ns, 'link', 'set', 'lo', 'up']);
  }
}

/** P partitions of ROLLED rolled v1 gzip-9 segments and a small active one each. */
function generate(root) {
  for (let p = 0; p < PARTITIONS; p++) {
    const dir = join(root, `data-${p % LOG_DIRS}`, `orders-${p}`);
    mkdirSync(dir, { recursive: true });
    for (let s = 0; s <= ROLLED; s++) {
      const base = BigInt(s) * 10_000_000n;
      const log = segmentLog(dir, base);
      writeV1GzipSegment(log, s === ROLLED ? 64 * 1024 : SEG_MB * MiB, {
        seed: 10 + p * 7 + s,
        distinct: 48,
      });
      rebaseSegment(log, base);
    }
  }
}
const copyOf = (pristine, to) => {
  // A real copy: seglift refuses to rewrite a file with a second hard link.
  sh('cp', ['-a', '--reflink=auto', pristine, to]);
  return to;
};

async function startRedis() {
  const port = await freePort();
  const p = spawn(
    'redis-server',
    // A password, not protected-mode off: Redis then takes the namespaces' connections too.
    [
      '--port',
      String(port),
      '--requirepass',
      PASS,
      '--bind',
      '127.0.0.1',
      ...hosts.map((h) => h.hostIp),
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: 'ignore' },
  );
  for (let i = 0; i < 100; i++) {
    const ping = spawnSync('redis-cli', ['-p', String(port), '-a', PASS, '--no-auth-warning', 'ping'], {
      encoding: 'utf8',
    });
    if (ping.stdout.trim() === 'PONG') return { p, port };
    await sleep(50);
  }
  throw new Error('redis-server did not answer');
}
const redisCli = (...args) =>
  sh('redis-cli', ['-p', String(redis.port), '-a', PASS, '--no-auth-warning', ...args]);
function commandStats() {
  const calls = {};
  for (const m of redisCli('INFO', 'commandstats').matchAll(/cmdstat_(\S+?):calls=(\d+)/g))
    calls[m[1]] = Number(m[2]);
  return calls;
}

const envFor = (root, queue, redisHost) => ({
  PATH: process.env.PATH,
  HOME: process.env.HOME ?? '/root',
  SEGLIFT_ROOTS: root,
  SEGLIFT_REDIS_URL: `redis://:${PASS}@${redisHost}:${redis.port}`,
  SEGLIFT_QUEUE_NAME: queue,
  SEGLIFT_CODEC: 'zstd',
  SEGLIFT_LEVEL: '3',
  SEGLIFT_WORKER_CONCURRENCY: String(N),
  SEGLIFT_METRICS_PORT: '0',
  SEGLIFT_METRICS_HOST: '127.0.0.1',
  SEGLIFT_LOG_LEVEL: 'info',
});

const vmHwmMiB = (pid) => {
  try {
    return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return Number.NaN;
  }
};

/** utime + stime of a running process (all its threads), in seconds. */
function cpuOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * Seconds a running process's threads spent runnable but waiting for a CPU (schedstat): what
 * other processes on its core took from its wall time (threads that ended meanwhile not counted).
 */
function cpuWaitOf(pid) {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[1]);
    } catch {}
  }
  return ns / 1e9;
}

/**
 * A process to its end under /usr/bin/time: wall ms, CPU s and peak RSS; not blocking this
 * process (a signal to the bench still cleans up at once).
 */
function timedAsync(cmd, args, env) {
  const rss = join(work, `time-${Date.now()}-${Math.random()}`);
  const t = performance.now();
  // Its own process group: cleanUp() ends the program under time(1) too.
  const p = spawn('/usr/bin/time', ['-f', '%U %S %M', '-o', rss, cmd, ...args], { env, detached: true });
  procs.add(p);
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => {
    out += d;
  });
  p.stderr.on('data', (d) => {
    err += d;
  });
  return new Promise((resolve, reject) =>
    p.on('close', (code) => {
      procs.delete(p);
      const ms = performance.now() - t;
      if (code !== 0) return reject(new Error(`${cmd} exited with ${code}: ${err.slice(-4000)}`));
      const [u, sys, m] = readFileSync(rss, 'utf8').trim().split('\n').pop().split(' ').map(Number);
      resolve({ ms, cpu: u + sys, rssMiB: m / 1024, out, err });
    }),
  );
}

/** `seglift migrate` on `cores` (taskset list) with `threads` conversion threads. */
function embedded(root, cores = '0', threads = N) {
  const r = timedAsync(
    'taskset',
    [
      '-c',
      cores,
      SEGLIFT,
      'migrate',
      root,
      '--codec',
      'zstd',
      '--level',
      '3',
      '--concurrency',
      String(threads),
      '--json',
    ],
    {
      ...process.env,
    },
  );
  return r;
}

/** Workers on the given hosts, the watcher --once --wait on this one; the time as above. */
async function distributed(root, queue, on) {
  const workers = on.map((h) => {
    const p = spawn('ip', ['netns', 'exec', h.ns, 'taskset', '-c', String(h.cpu), WORKER], {
      env: envFor(root, queue, h.hostIp),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    procs.add(p);
    let out = '';
    p.stdout.on('data', (d) => {
      out += d;
    });
    p.stderr.on('data', (d) => {
      out += d;
    });
    return { p, host: h, log: () => out };
  });
  for (const w of workers) {
    const end = Date.now() + 60_000;
    while (!w.log().includes('"worker started"')) {
      if (w.p.exitCode !== null || Date.now() > end) throw new Error(`worker on ${w.host.ns}: ${w.log()}`);
      await sleep(20);
    }
  }
  redisCli('CONFIG', 'RESETSTAT');
  // Every command with its client's address: the workers' (their hosts') told from the watcher's.
  const monitor = spawn('redis-cli', ['-p', String(redis.port), '-a', PASS, '--no-auth-warning', 'monitor'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  procs.add(monitor);
  const bySource = {};
  let pending = '';
  monitor.stdout.on('data', (d) => {
    const lines = (pending + d).split('\n');
    pending = lines.pop();
    for (const l of lines) {
      const m = /\[\d+ ([\d.]+):\d+\] "(\w+)"(?: "([^"]*)")?/.exec(l);
      if (!m) continue;
      const who = m[1] === '127.0.0.1' ? 'watcher' : 'worker';
      const cmd = m[2].toLowerCase();
      const key = `${who} ${cmd}`;
      bySource[key] = (bySource[key] ?? 0) + 1;
    }
  });
  const redisCpu = cpuOf(redis.p.pid);
  const waited = workers.map((w) => cpuWaitOf(w.p.pid));
  const start = Date.now();
  const watcher = await timedAsync(WATCHER, ['--once', '--wait'], envFor(root, queue, '127.0.0.1'));
  const stats = commandStats();
  await sleep(200);
  monitor.kill('SIGTERM');
  procs.delete(monitor);
  const rss = workers.map((w) => vmHwmMiB(w.p.pid));
  // The workers' CPU, whole process as the embedded migrate's (start-up included).
  const cpu = workers.map((w) => cpuOf(w.p.pid));
  const wait = workers.map((w, i) => cpuWaitOf(w.p.pid) - waited[i]);
  const redisUsed = cpuOf(redis.p.pid) - redisCpu;
  for (const w of workers) w.p.kill('SIGTERM');
  for (const w of workers) {
    if (w.p.exitCode === null) await new Promise((r) => w.p.once('exit', r));
    procs.delete(w.p);
  }
  if (LOG_DIR !== undefined) {
    mkdirSync(LOG_DIR, { recursive: true });
    writeFileSync(join(LOG_DIR, `${queue}-watcher.log`), watcher.out + watcher.err);
    for (const w of workers) writeFileSync(join(LOG_DIR, `${queue}-${w.host.ns}.log`), w.log());
  }
  let last = 0;
  const perWorker = [];
  // Each worker's own end less the time it waited for its core: its wall time on a quiet core.
  let quietMs = 0;
  for (const [i, w] of workers.entries()) {
    let n = 0;
    let own = start;
    for (const line of w.log().split('\n')) {
      if (!line.includes('"segment done"')) continue;
      const o = JSON.parse(line);
      if (o.result !== 'converted') throw new Error(`${o.segment}: ${o.result} ${o.reason}`);
      const t = typeof o.time === 'number' ? o.time : Date.parse(o.time);
      last = Math.max(last, t);
      own = Math.max(own, t);
      n++;
    }
    perWorker.push(n);
    quietMs = Math.max(quietMs, own - start - wait[i] * 1000);
  }
  const jobs = perWorker.reduce((a, b) => a + b, 0);
  if (jobs !== PARTITIONS * ROLLED)
    throw new Error(`${jobs} segments converted, expected ${PARTITIONS * ROLLED}`);
  return {
    ms: last - start,
    quietMs,
    watcherMs: watcher.ms,
    rssMiB: Math.max(...rss),
    watcherRssMiB: watcher.rssMiB,
    stats,
    bySource,
    perWorker,
    cpu,
    watcherCpu: watcher.cpu,
    redisCpu: redisUsed,
  };
}

try {
  makeHosts();
  redis = await startRedis();
  redis.p.on('exit', () => {});
  const pristine = join(work, 'pristine');
  generate(pristine);
  const segments = PARTITIONS * ROLLED;
  const times = { e: [], e2: [], w1: [], w2: [], w1Quiet: [], w2Quiet: [] };
  const cpu = { e: [], w1: [], w1Side: [], balance: [] };
  const rss = { e: 0, w1: 0, w2: 0, watcher: 0 };
  let stats1;
  let split;
  let run = 0;
  for (let rep = 0; rep < REPS; rep++) {
    const a = copyOf(pristine, join(work, `e-${rep}`));
    const e = await embedded(a);
    const sum = JSON.parse(e.out.trim().split('\n').pop());
    const converted = sum.summary?.converted ?? sum.converted;
    if (converted !== segments) throw new Error(`migrate converted ${converted}, expected ${segments}`);
    times.e.push(e.ms);
    cpu.e.push(e.cpu);
    rss.e = Math.max(rss.e, e.rssMiB);
    rmSync(a, { recursive: true });

    // The reference for two hosts: this machine's own two-core scaling of the same pipeline
    // (both cores share one disk, page cache and memory bus, as the two namespaced hosts do).
    const a2 = copyOf(pristine, join(work, `e2-${rep}`));
    const e2 = await embedded(a2, '0,1', 2 * N);
    times.e2.push(e2.ms);
    rmSync(a2, { recursive: true });

    const b = copyOf(pristine, join(work, `w1-${rep}`));
    const w1 = await distributed(b, `bench-${tag}-${run++}`, [hosts[0]]);
    times.w1.push(w1.ms);
    times.w1Quiet.push(w1.quietMs);
    cpu.w1.push(w1.cpu[0]);
    cpu.w1Side.push(w1.watcherCpu + w1.redisCpu);
    rss.w1 = Math.max(rss.w1, w1.rssMiB);
    rss.watcher = Math.max(rss.watcher, w1.watcherRssMiB);
    stats1 = w1.bySource;
    rmSync(b, { recursive: true });

    const c = copyOf(pristine, join(work, `w2-${rep}`));
    const w2 = await distributed(c, `bench-${tag}-${run++}`, hosts);
    times.w2.push(w2.ms);
    times.w2Quiet.push(w2.quietMs);
    // What two hosts would take against one, from the work each did (CPU s, so whatever else
    // this machine runs): the busier one decides.
    cpu.balance.push((w2.cpu[0] + w2.cpu[1]) / Math.max(...w2.cpu));
    rss.w2 = Math.max(rss.w2, w2.rssMiB);
    rss.watcher = Math.max(rss.watcher, w2.watcherRssMiB);
    split = w2.perWorker;
    rmSync(c, { recursive: true });
    console.log(
      `(rep ${rep + 1}: embedded ${(e.ms / 1000).toFixed(2)} s ${e.cpu.toFixed(2)} s CPU, on two cores ${(e2.ms / 1000).toFixed(2)} s; one worker ${(w1.ms / 1000).toFixed(2)} s (${(w1.quietMs / 1000).toFixed(2)} s less CPU waits) ${w1.cpu[0].toFixed(2)} s CPU (+ watcher ${w1.watcherCpu.toFixed(2)}, redis ${w1.redisCpu.toFixed(2)}); two workers ${(w2.ms / 1000).toFixed(2)} s (${(w2.quietMs / 1000).toFixed(2)} s less CPU waits), ${w2.cpu.map((c) => c.toFixed(2)).join(' + ')} s CPU, split ${w2.perWorker.join('/')})`,
    );
  }
  const E = median(times.e);
  const W1 = median(times.w1);
  const W2 = median(times.w2);
  const data = `${segments} x ${SEG_MB} MiB v1 gzip-9 -> zstd-3, ${PARTITIONS} partitions in ${LOG_DIRS} log dir(s)`;
  const row = (c, measured, target, ok) =>
    console.log(`| ${c} | ${measured} | ${target} | ${ok ? 'yes' : 'NO'} |`);
  console.log(`\n${data}; N = ${N}; medians of ${REPS} alternating runs\n`);
  console.log('| case | measured | target | ok? |');
  console.log('|---|---:|---|---|');
  row(`embedded migrate, ${N} thread(s), core 0`, `${(E / 1000).toFixed(2)} s`, 'baseline', true);
  row(
    `one worker (host A, core 0, ${N} thread(s)) vs embedded`,
    `${(W1 / 1000).toFixed(2)} s, ${(E / W1).toFixed(2)}x`,
    '>= 0.95x',
    E / W1 >= 0.95,
  );
  row(
    `two workers (hosts A, B, a core each) vs one (split ${split.join('/')})`,
    `${(W2 / 1000).toFixed(2)} s, ${(W1 / W2).toFixed(2)}x`,
    '>= 1.8x',
    W1 / W2 >= 1.8,
  );
  const E2 = median(times.e2);
  row(
    `reference: embedded migrate, ${2 * N} threads on cores 0 and 1, vs ${N} on core 0 (this machine's own two-core scaling of the pipeline)`,
    `${(E2 / 1000).toFixed(2)} s, ${(E / E2).toFixed(2)}x`,
    '(what two hosts sharing these cores can reach)',
    true,
  );
  row(
    'two workers on two hosts vs that reference (what distributing costs beyond the machine)',
    `${(E2 / W2).toFixed(2)}x`,
    '(1.00x: nothing lost)',
    true,
  );
  const [W1Q, W2Q] = [times.w1Quiet, times.w2Quiet].map(median);
  row(
    'the same less the time each worker waited for its core (schedstat, approx.: other load), two vs one',
    `${(W2Q / 1000).toFixed(2)} s vs ${(W1Q / 1000).toFixed(2)} s, ${(W1Q / W2Q).toFixed(2)}x`,
    '>= 1.8x',
    W1Q / W2Q >= 1.8,
  );
  const [EC, W1C, SIDE, BAL] = [cpu.e, cpu.w1, cpu.w1Side, cpu.balance].map(median);
  row(
    'the same in CPU s (noise-proof): one worker vs embedded (whole processes)',
    `${W1C.toFixed(2)} s vs ${EC.toFixed(2)} s, ${(EC / W1C).toFixed(2)}x; watcher + Redis ${SIDE.toFixed(2)} s more`,
    '>= 0.95x',
    EC / W1C >= 0.95,
  );
  row('the same in CPU s: two workers, total / the busier one', `${BAL.toFixed(2)}x`, '>= 1.8x', BAL >= 1.8);
  for (const [k, label] of [
    ['e', 'embedded migrate'],
    ['w1', 'one worker'],
    ['w2', 'two workers (the larger)'],
    ['watcher', 'watcher --once --wait'],
  ])
    row(`peak RSS, ${label}`, `${rss[k].toFixed(0)} MiB`, `<= ${RSS_LIMIT_MIB} MiB`, rss[k] <= RSS_LIMIT_MIB);
  for (const who of ['worker', 'watcher']) {
    const mine = Object.entries(stats1).filter(([k]) => k.startsWith(`${who} `));
    const total = mine.reduce((a, [, v]) => a + v, 0);
    const top = mine
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8)
      .map(([k, v]) => `${k.slice(who.length + 1)} ${(v / segments).toFixed(1)}`)
      .join(', ');
    console.log(
      `\nRedis commands per job, the ${who}'s (one worker, last run): ${(total / segments).toFixed(1)} (${top})`,
    );
  }
  console.log(
    `the one worker's wall time over embedded: ${((W1 - E) / segments).toFixed(0)} ms a segment; CPU: ${(((W1C - EC) / segments) * 1000).toFixed(0)} ms a segment in the worker, ${((SIDE / segments) * 1000).toFixed(0)} ms in the watcher and Redis`,
  );
} finally {
  cleanUp();
}
