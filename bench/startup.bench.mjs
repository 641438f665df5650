#!/usr/bin/env node
// Start-up (issue 26 item 1): each program as a user runs it (its launcher, dist/<program>: node
// with the pipeline's flags, the bundle of scripts/bundle.mjs), whole process, pinned to one core
// (taskset, when there is one), its CPU time (user + system), against the floor `node -e 0` measured in the same run,
// alternating floor and case so that what else runs on the machine hits both alike. Target:
// each case within 60 ms of the floor.
// The conversion thread: a process starting the program's conversion-thread.js, against one
// starting a thread that answers at once.
// Options (env): BENCH_RUNS (15: median of), BENCH_REPO (the checkout whose build is measured).
// Run: pnpm bench startup
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './helpers.mjs';

// BENCH_REPO: another checkout's build (e.g. the base branch's) measured by this same bench.
const repo = process.env.BENCH_REPO ?? fileURLToPath(new URL('..', import.meta.url));
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const BUDGET_MS = 60;
const SMALL_SEGMENT = join(repo, 'samples/kafka-logs/orders-0/00000000000000000120.log');
const bin = (app, program) => join(repo, 'apps', app, 'dist', program);
const pinned = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const work = mkdtempSync(join(tmpdir(), 'seglift-bench-startup-'));

// CPU time (user + system) of the child, to the microsecond, from wait4's rusage: on a shared
// machine it moves less than wall time. python3 starts the child because node cannot say it.
const RUSAGE = `
import os, sys, time
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execvp(sys.argv[1], sys.argv[1:])
t = time.perf_counter()
_, status, ru = os.wait4(pid, 0)
print((ru.ru_utime + ru.ru_stime) * 1000, (time.perf_counter() - t) * 1000, os.waitstatus_to_exitcode(status))
`;
const hasPython = spawnSync('python3', ['-c', 'import os; os.wait4']).status === 0;

/** CPU milliseconds of one run of argv (pinned; wall when there is no python3), checking its exit code. */
function once(argv) {
  const cmd = pinned ? ['taskset', '-c', '0', ...argv] : argv;
  if (hasPython) {
    const r = spawnSync('python3', ['-c', RUSAGE, ...cmd], { encoding: 'utf8' });
    const [cpu, , code] = r.stdout.trim().split(' ').map(Number);
    if (r.status !== 0 || code !== 0) throw new Error(`${argv.join(' ')}: exit ${code}\n${r.stderr}`);
    return cpu;
  }
  const t = process.hrtime.bigint();
  const r = spawnSync(cmd[0], cmd.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status ?? r.signal}\n${r.stderr}`);
  return Number(process.hrtime.bigint() - t) / 1e6;
}

/** Median of the case and of the floor, run alternately. */
function paired(caseArgv, floorArgv) {
  const c = [];
  const f = [];
  once(caseArgv); // the page cache, not the first run, is what an operator's second call sees
  for (let i = 0; i < RUNS; i++) {
    f.push(once(floorArgv));
    c.push(once(caseArgv));
  }
  return { ms: median(c), floor: median(f) };
}

const FLOOR = [process.execPath, '-e', '0'];
const rows = [];
const row = (name, { ms, floor }) => {
  const over = ms - floor;
  rows.push(
    `| ${name} | ${ms.toFixed(0)} ms (floor ${floor.toFixed(0)} ms, +${over.toFixed(0)} ms) | floor + ${BUDGET_MS} ms | ${over <= BUDGET_MS ? 'ok' : 'NO'} |`,
  );
};

row('`seglift --version`', paired([bin('cli', 'seglift'), '--version'], FLOOR));
row('`seglift inspect` of a small segment', paired([bin('cli', 'seglift'), 'inspect', SMALL_SEGMENT], FLOOR));
row('`seglift-worker --help`', paired([bin('worker', 'seglift-worker'), '--help'], FLOOR));
row('`seglift-watcher --help`', paired([bin('watcher', 'seglift-watcher'), '--help'], FLOOR));

// The thread: a process that starts one and waits for its first answer, as the pool does; the
// conversion asked for is of a file that does not exist (answered at once, no I/O to wait for),
// so what is measured is the thread's start-up. The floor: the same with a thread answering at
// once (an eval'd one-liner).
const threadScript = `
import { Worker } from 'node:worker_threads';
const [script] = process.argv.slice(2);
const w = script === 'floor'
  ? new Worker("const p = require('node:worker_threads').parentPort; p.on('message', (m) => p.postMessage(m))", { eval: true, execArgv: [] })
  : new Worker(script);
w.on('message', (m) => { if (m.type !== 'progress') w.terminate(); });
w.postMessage({ type: 'convert', id: 1, logPath: '/nonexistent/00000000000000000000.log', gated: false,
  options: { codec: 'zstd', outDir: '/nonexistent/out' } });
`;
const threadFile = join(work, 'thread.mjs');
// The bundle's thread beside the CLI; a build before bundling has only the package's own.
const threadEntry = [
  bin('cli', 'conversion-thread.js'),
  join(repo, 'packages/segment/dist/conversion-thread.js'),
].find((f) => existsSync(f));
writeFileSync(threadFile, threadScript);
row(
  'a conversion thread ready (to its first answer)',
  paired([process.execPath, threadFile, threadEntry], [process.execPath, threadFile, 'floor']),
);
rmSync(work, { recursive: true, force: true });

const what = hasPython ? 'CPU time (user + system)' : 'wall time';
console.log(
  `Start-up: ${what}, median of ${RUNS}${pinned ? ', pinned to one core' : ''}; floor: \`node -e 0\` (for the thread: a process whose thread answers at once)\n`,
);
console.log('| case | measured | target | ok? |');
console.log('|---|---|---|---|');
for (const r of rows) console.log(r);
