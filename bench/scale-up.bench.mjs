#!/usr/bin/env node
// Scaling up (issue 35): `seglift migrate DIR --codec zstd --concurrency C` on one host, C = 1, 2,
// 4, 8, 12, 16 ... up to the machine's cores, beside the codec floor (bench/floor.mjs's loop: the
// codec work alone, no Kafka work, no I/O) run as C processes at once, the machine's own limit.
// The data is shaped like a broker's: P partitions (48), each one closed segment (v2: 16 MiB of
// gzip-9 batches of 100 JSON records; v1: 8 MiB of magic-1 gzip-9 wrappers) and an empty active
// one. Each migrate converts a fresh copy; the floor at C processes does the same total work (the
// P segments' codec work, split over the C processes), so the two walls compare directly.
// Per C: wall, speed-up over C = 1, CPU seconds (user + sys) per MB converted and its ratio to
// C = 1, peak RSS (GNU time's %M: the largest process), and the floor's wall at C processes.
// Targets (issue 35): speed-up >= 14x at 16 threads; CPU s/MB at 16 threads within 15% of 1
// thread; peak RSS within the bound the default --concurrency counts on (host.ts's
// memoryBoundMib: 200 MiB + 48 MiB a thread; the issue asks for 32).
// Options (env): BENCH_SCALEUP_THREADS (default "1,2,4,8,12,16", those over the machine's cores
// dropped, the cores added; a list given is run as it is, beyond the cores too), BENCH_SCALEUP_CASES ("v2,v1"), BENCH_SCALEUP_PARTITIONS (48),
// BENCH_SCALEUP_V2_MB (16), BENCH_SCALEUP_V1_MB (8), BENCH_SCALEUP_FLOOR (1: the floor at each C;
// 0: none), BENCH_SCALEUP_JSON (a file for the raw numbers), BENCH_SEGLIFT (the seglift program,
// default apps/cli/dist/seglift), BENCH_DIR (os tmp). Needs /usr/bin/time (GNU time).
// Run: pnpm bench scale-up
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { segmentLog } from './data.mjs';
import { childEnv, childFlags, floorScript, v1GzipData, v2GzipData } from './floor.mjs';
import { conditions, sh } from './helpers.mjs';

const cores = os.availableParallelism();
const THREADS = [
  ...new Set(
    (process.env.BENCH_SCALEUP_THREADS ?? '1,2,4,8,12,16')
      .split(',')
      .map(Number)
      // A list given is taken as it is: threads beyond the cores measure memory per thread and
      // contention (RSS needs no real cores); the default stops at the machine's cores.
      .filter((c) => c >= 1 && (process.env.BENCH_SCALEUP_THREADS !== undefined || c <= cores))
      .concat(process.env.BENCH_SCALEUP_THREADS ? [] : [cores]),
  ),
].sort((a, b) => a - b);
const CASES = (process.env.BENCH_SCALEUP_CASES ?? 'v2,v1').split(',');
const PARTITIONS = Number(process.env.BENCH_SCALEUP_PARTITIONS ?? 48);
const V2_MB = Number(process.env.BENCH_SCALEUP_V2_MB ?? 16);
const V1_MB = Number(process.env.BENCH_SCALEUP_V1_MB ?? 8);
const FLOOR = process.env.BENCH_SCALEUP_FLOOR !== '0';
const bin = process.env.BENCH_SEGLIFT ?? fileURLToPath(new URL('../apps/cli/dist/seglift', import.meta.url));
const MiB = 1024 * 1024;
/** The peak RSS a run of that many threads may reach (host.ts, the default --concurrency's rule). */
const { memoryBoundMib } = await import(
  new URL('../packages/segment/dist/runs/host.js', import.meta.url).href
);

if (!existsSync('/usr/bin/time')) {
  console.log('(scale-up: skipped, /usr/bin/time (GNU time) is missing)');
  process.exit(0);
}

const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-scaleup-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

/** P partitions holding a copy of `log` (base offset 0) and an empty active segment after it. */
function partitions(name, log) {
  const root = join(work, `${name}-pristine`);
  for (let p = 0; p < PARTITIONS; p++) {
    const dir = join(root, `orders-${p}`);
    mkdirSync(dir, { recursive: true });
    sh('cp', [log, segmentLog(dir, 0)]);
    // Past the closed segment's last offset (under a million in both cases).
    writeFileSync(segmentLog(dir, 10_000_000), '');
  }
  return root;
}

/** `seglift migrate` of a fresh copy of `pristine` at concurrency c: wall and CPU s, peak RSS MiB. */
function migrate(pristine, c) {
  const dir = join(work, 'run');
  rmSync(dir, { recursive: true, force: true });
  // A real copy: seglift refuses to rewrite a file with a second hard link.
  sh('cp', ['-a', pristine, dir]);
  const usage = join(work, 'usage');
  const t = performance.now();
  const r = spawnSync(
    '/usr/bin/time',
    [
      '-f',
      '%U %S %M',
      '-o',
      usage,
      bin,
      'migrate',
      dir,
      '--codec',
      'zstd',
      '--level',
      '3',
      '--concurrency',
      String(c),
      '--json',
      '--quiet',
    ],
    { encoding: 'utf8', maxBuffer: 64 * MiB },
  );
  const wall = (performance.now() - t) / 1000;
  if (r.status !== 0)
    throw new Error(`seglift migrate failed (${r.status}): ${r.stderr}${r.stdout.slice(-2000)}`);
  const converted = (r.stdout.match(/"result":"converted"/g) ?? []).length;
  if (converted !== PARTITIONS)
    throw new Error(`converted ${converted} of ${PARTITIONS}: ${r.stdout.slice(-2000)}`);
  const [user, sys, rssKiB] = readFileSync(usage, 'utf8').trim().split('\n').pop().split(' ').map(Number);
  rmSync(dir, { recursive: true, force: true });
  return { wall, cpu: user + sys, user, sys, rssMiB: rssKiB / 1024 };
}

/**
 * The floor's codec work of `segments` segments split over `n` processes, unpinned, their loops
 * started at one instant once every process has loaded: the wall to the last one's end, in s.
 */
async function floorProcesses(spec, segments, n) {
  const share = (i) => Math.floor(segments / n) + (i < segments % n ? 1 : 0);
  const startAt = Date.now() + 1000 + 50 * n;
  const runs = Array.from({ length: n }, (_, i) => {
    const s = {
      ...spec,
      gzCount: spec.gzCount * share(i),
      rawCount: (spec.rawCount ?? 0) * share(i),
      startAt,
    };
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [...childFlags, '--input-type=module', '-e', floorScript(s)], {
        env: childEnv,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      p.stdout.on('data', (d) => {
        out += d;
      });
      p.on('exit', (code) =>
        code === 0
          ? resolve(JSON.parse(out.trim().split('\n').pop()))
          : reject(new Error(`floor child: ${code}`)),
      );
    });
  });
  const all = await Promise.all(runs);
  const late = Math.max(...all.map((r) => r.start)) - startAt;
  if (late > 50) console.error(`(floor at ${n}: the last process loaded ${late.toFixed(0)} ms late)`);
  return (Math.max(...all.map((r) => r.end)) - startAt) / 1000;
}

const results = [];
for (const name of CASES) {
  const data =
    name === 'v2'
      ? (() => {
          const d = v2GzipData(work, 'v2', V2_MB);
          return { ...d, label: `${V2_MB} MiB v2 gzip-9 segments (~70 KB batches) -> zstd-3` };
        })()
      : (() => {
          const d = v1GzipData(work, V1_MB, ['coalesce']);
          return {
            ...d,
            floor: d.floors.coalesce,
            label: `${V1_MB} MiB v1 gzip-9 wrapper segments -> zstd-3`,
          };
        })();
  const pristine = partitions(name, data.log);
  const mb = (PARTITIONS * data.bytes) / 1e6;
  const rows = [];
  for (const c of THREADS) {
    const m = migrate(pristine, c);
    const floorWall = FLOOR ? await floorProcesses(data.floor, PARTITIONS, c) : Number.NaN;
    rows.push({ c, ...m, cpuPerMB: m.cpu / mb, floorWall });
    // Progress on stderr: a run cut short still says what it measured.
    console.error(`${name} c=${c}: ${JSON.stringify(rows.at(-1))}`);
  }
  rmSync(pristine, { recursive: true, force: true });
  results.push({ name, label: data.label, mb, rows });
}
if (process.env.BENCH_SCALEUP_JSON)
  writeFileSync(
    process.env.BENCH_SCALEUP_JSON,
    JSON.stringify({ conditions: conditions(), results }, null, 1),
  );

console.log(`${conditions()}; seglift migrate, ${PARTITIONS} partitions, one closed segment each\n`);
for (const { label, mb, rows } of results) {
  const one = rows.find((r) => r.c === 1) ?? rows[0];
  const floorOne = one.floorWall;
  console.log(`${label}, ${mb.toFixed(0)} MB in all\n`);
  console.log(
    '| threads | wall s | speed-up | CPU s | CPU s/MB | vs 1 thread | peak RSS MiB | RSS bound | floor wall s (C processes) | floor speed-up |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const bound = memoryBoundMib(r.c);
    console.log(
      `| ${r.c} | ${r.wall.toFixed(2)} | ${(one.wall / r.wall).toFixed(2)}x | ${r.cpu.toFixed(1)} | ${(r.cpuPerMB * 1000).toFixed(2)} ms | ${(r.cpuPerMB / one.cpuPerMB).toFixed(2)}x | ${r.rssMiB.toFixed(0)} | ${bound} ${r.rssMiB <= bound ? 'ok' : 'OVER'} | ${Number.isNaN(r.floorWall) ? 'n/a' : r.floorWall.toFixed(2)} | ${Number.isNaN(r.floorWall) ? 'n/a' : `${(floorOne / r.floorWall).toFixed(2)}x`} |`,
    );
  }
  console.log('');
}
