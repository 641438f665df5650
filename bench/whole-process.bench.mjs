#!/usr/bin/env node
// Issue 26's throughput rows, measured as a user runs them: the `seglift` bin (its launcher, node
// flags and all) converting one segment to an --out dir, the whole process timed from spawn to
// exit, pinned to one core, against the verified-rewrite floor (bench/floor.mjs: the codec work
// alone, in one process, no start-up, no parsing, no I/O) measured in the same run. Runs
// alternate floor / seglift, case after case, BENCH_REPS times; each keeps its best. Peak RSS of
// each seglift process comes from /usr/bin/time (GNU time's %M) when it is installed.
//   - 128 MiB v2 gzip-9 batches of 100 JSON records (~70 KB) -> zstd-3         target >= 0.90x
//   - 128 MiB magic-1 gzip-9 wrappers of 100 such messages -> zstd-3          target >= 0.85x
//   - 64 MiB 100-200 byte plain magic-1 messages, coalesce -> zstd-3           target >= 0.40x
//   - the same, --grouping kafka --codec none                                  target >= 0.20x
//   - every case: peak RSS                                                     target <= 200 MiB
// Options (env): BENCH_REPS (3), BENCH_GZ_MB (128), BENCH_TINY_MB (64), BENCH_DIR (os tmp),
// BENCH_SEGLIFT (the seglift program, default apps/cli/dist/seglift).
// Run: pnpm bench whole-process
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { canPin, childEnv, floorInChild, tinyData, v1GzipData, v2GzipData } from './floor.mjs';
import { conditions } from './helpers.mjs';

const bin = process.env.BENCH_SEGLIFT ?? fileURLToPath(new URL('../apps/cli/dist/seglift', import.meta.url));
const REPS = Number(process.env.BENCH_REPS ?? 3);
const GZ_MB = Number(process.env.BENCH_GZ_MB ?? 128);
const TINY_MB = Number(process.env.BENCH_TINY_MB ?? 64);
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-wp-'));
const gnuTime = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;

/** `seglift convert log --out … …flags`, whole process: wall ms and peak RSS in KiB (or NaN). */
function seglift(log, flags) {
  const out = join(work, 'out');
  const rss = join(work, 'rss');
  const cmd = [
    ...(gnuTime ? [gnuTime, '-f', '%M', '-o', rss] : []),
    bin,
    'convert',
    log,
    '--out',
    out,
    ...flags,
  ];
  const t = performance.now();
  const r = spawnSync(canPin ? 'taskset' : cmd[0], canPin ? ['-c', '0', ...cmd] : cmd.slice(1), {
    encoding: 'utf8',
    env: childEnv,
  });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`seglift failed (${r.status}): ${r.stderr}`);
  rmSync(out, { recursive: true, force: true });
  const maxRssKiB = gnuTime
    ? Number.parseInt(readFileSync(rss, 'utf8').trim().split('\n').pop(), 10)
    : Number.NaN;
  return { ms, maxRssKiB };
}

const cases = [];
try {
  {
    const { log, bytes, floor } = v2GzipData(work, 'v2', GZ_MB);
    cases.push({
      name: `${GZ_MB} MiB v2 gzip-9 (~70 KB batches) -> zstd-3`,
      log,
      bytes,
      flags: ['--codec', 'zstd', '--level', '3'],
      floor,
      target: 0.9,
    });
  }
  {
    const { log, bytes, floors } = v1GzipData(work, GZ_MB, ['coalesce']);
    cases.push({
      name: `${GZ_MB} MiB v1 gzip-9 wrappers -> zstd-3`,
      log,
      bytes,
      flags: ['--codec', 'zstd', '--level', '3'],
      floor: floors.coalesce,
      target: 0.85,
    });
  }
  {
    const { log, bytes, floor } = tinyData(work, TINY_MB);
    cases.push({
      name: `${TINY_MB} MiB small (100-200 B) v1 messages, coalesce -> zstd-3`,
      log,
      bytes,
      flags: ['--codec', 'zstd', '--level', '3'],
      floor,
      target: 0.4,
    });
    cases.push({
      name: 'the same, --grouping kafka --codec none',
      log,
      bytes,
      flags: ['--codec', 'none', '--grouping', 'kafka'],
      floor,
      target: 0.2,
    });
  }

  for (let rep = 0; rep < REPS; rep++) {
    for (const c of cases) {
      c.floorMs = Math.min(c.floorMs ?? Number.POSITIVE_INFINITY, floorInChild(c.floor));
      const r = seglift(c.log, c.flags);
      c.ms = Math.min(c.ms ?? Number.POSITIVE_INFINITY, r.ms);
      c.maxRssKiB = Math.max(c.maxRssKiB ?? 0, r.maxRssKiB);
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

console.log(
  `${conditions()}; whole process, ${canPin ? 'pinned to 1 core' : 'not pinned'}, best of ${REPS}\n`,
);
console.log('| case | measured | target | ok? |');
console.log('|---|---|---|---|');
for (const c of cases) {
  const ratio = c.floorMs / c.ms;
  console.log(
    `| ${c.name}: seglift ${(c.ms / 1000).toFixed(2)} s, floor ${(c.floorMs / 1000).toFixed(2)} s | ${ratio.toFixed(3)}x | >= ${c.target.toFixed(2)}x | ${ratio >= c.target ? 'ok' : 'NOT MET'} |`,
  );
  const rssMiB = c.maxRssKiB / 1024;
  console.log(
    `|   peak RSS | ${Number.isNaN(rssMiB) ? 'n/a (no /usr/bin/time)' : `${rssMiB.toFixed(0)} MiB`} | <= 200 MiB | ${Number.isNaN(rssMiB) ? '?' : rssMiB <= 200 ? 'ok' : 'NOT MET'} |`,
  );
}
