#!/usr/bin/env node
// Two-phase migration (issues 15 and 26): how long the broker is down.
//  In process (issue 15), the call's time, module loading excluded from both sides:
//  - baseline: a plain `migrate` of a log dir (4 partitions, 3 rolled segments of BENCH_SEG_MB
//    magic-1 gzip-9 wrappers each and a small active one) -> zstd-3;
//  - `migrate --commit` of the same dir fully prepared (target <= 5% of the baseline);
//  - the same with one rolled segment in twelve replaced after the prepare, as the cleaner would
//    (a new file through .cleaned and .swap: converted at commit; target <= 20%).
//  Whole process, as an operator runs it (issue 26): the seglift bin, pinned to one core
//  (taskset -c 0 when there is one), plain and commit alternating, medians:
//  - commit of 12 staged ~2 MiB segments vs a plain migrate of them (target <= 0.20x);
//  - commit of BENCH_SMALL_PARTITIONS (1000) x BENCH_SMALL_SEGMENTS (10) staged small segments
//    (target <= 60 s for 10,000).
// Each run works on a fresh copy of one generated log dir.
// Options (env): BENCH_SEG_MB (16), BENCH_REPS (2: best of), BENCH_WHOLE_REPS (3: median of),
// BENCH_SMALL_PARTITIONS (1000), BENCH_SMALL_SEGMENTS (10), BENCH_DIR (os tmp),
// BENCH_ONLY (inprocess|whole|small: one part).
// Run: pnpm bench two-phase
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MiB,
  rebaseEntries,
  rebaseSegment,
  segmentLog,
  writeV1GzipSegment,
  writeV1TinySegment,
} from './data.mjs';
import { median } from './helpers.mjs';

const SEG_MB = Number(process.env.BENCH_SEG_MB ?? 16);
const REPS = Number(process.env.BENCH_REPS ?? 2);
const PARTITIONS = 4;
const ROLLED = 3;
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-two-phase-'));
const segmentDist = new URL('../packages/segment/dist/index.js', import.meta.url).href;

const childEnv = { ...process.env, MALLOC_ARENA_MAX: '2' };
// The launcher's flags (packages/segment/src/node-flags.ts), less --enable-source-maps.
const childFlags = ['--single-threaded-gc', '--no-allocation-site-pretenuring', '--heap-growing-percent=50'];

/** The generated log dir: every segment's offsets rebased onto its base offset. */
function generate(root, segMb = SEG_MB) {
  for (let p = 0; p < PARTITIONS; p++) {
    const dir = join(root, `orders-${p}`);
    mkdirSync(dir, { recursive: true });
    for (let s = 0; s <= ROLLED; s++) {
      const base = BigInt(s) * 10_000_000n;
      const log = segmentLog(dir, base);
      // Fewer distinct wrappers than the pipeline bench: generation time, not codec work.
      writeV1GzipSegment(log, s === ROLLED ? 64 * 1024 : Math.round(segMb * MiB), {
        seed: 10 + p * 5 + s,
        distinct: 48,
      });
      rebaseSegment(log, base);
    }
  }
}

/** A copy of the generated dir. */
function copyOf(pristine, to) {
  // A real copy: a rewrite in place refuses a .log with other hard links.
  const r = spawnSync('cp', ['-a', '--reflink=auto', pristine, to]);
  if (r.status !== 0) throw new Error(`cp -a failed: ${r.stderr}`);
  return to;
}

const script = join(work, 'run.mjs');
writeFileSync(
  script,
  `
  const { migrate, prepareStage, commitStage } = await import(${JSON.stringify(segmentDist)});
  const [what, root, stageDir] = process.argv.slice(2);
  const options = { codec: 'zstd', level: 3, stageDir };
  const t = performance.now();
  const res =
    what === 'plain' ? await migrate([root], options)
    : what === 'prepare' ? await prepareStage(root, options)
    : await commitStage(root, options);
  const ms = performance.now() - t;
  console.log(JSON.stringify({ ms, summary: res.summary, counts: res.counts }));
`,
);
function run(what, root, stageDir = '') {
  // A file, not -e: worker threads inherit execArgv, and --input-type is refused there.
  const r = spawnSync(process.execPath, [...childFlags, script, what, root, stageDir], {
    encoding: 'utf8',
    env: childEnv,
    maxBuffer: 16 * MiB,
  });
  if (r.status !== 0) throw new Error(`${what} failed: ${r.stderr}`);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  if (out.summary.failed > 0) throw new Error(`${what}: ${out.summary.failed} segments failed`);
  return out;
}

/** The cleaner's replacement of a segment: the same bytes in a new file, renamed over. */
function replace(log) {
  writeFileSync(`${log}.cleaned`, readFileSync(log), { flush: true });
  renameSync(`${log}.cleaned`, `${log}.swap`);
  renameSync(`${log}.swap`, log);
}

function inProcess() {
  const pristine = join(work, 'pristine');
  generate(pristine);
  const segments = PARTITIONS * ROLLED;
  const best = { plain: Infinity, prepare: Infinity, commit: Infinity, commitReplaced: Infinity };
  const check = (what, got, want) => {
    for (const [k, v] of Object.entries(want))
      if (got[k] !== v) throw new Error(`${what}: ${k} ${got[k]}, expected ${v}`);
  };
  for (let rep = 0; rep < REPS; rep++) {
    const a = copyOf(pristine, join(work, `plain-${rep}`));
    const plain = run('plain', a);
    check('plain', plain.summary, { converted: segments });
    best.plain = Math.min(best.plain, plain.ms);
    rmSync(a, { recursive: true });

    for (const replaced of [false, true]) {
      const dir = copyOf(pristine, join(work, `two-phase-${rep}-${replaced}`));
      const stage = join(work, `stage-${rep}-${replaced}`);
      const prep = run('prepare', dir, stage);
      check('prepare', prep.counts, { staged: segments });
      best.prepare = Math.min(best.prepare, prep.ms);
      if (replaced) replace(segmentLog(join(dir, 'orders-1'), 10_000_000n));
      const commit = run('commit', dir, stage);
      check('commit', commit.counts, {
        staged: replaced ? segments - 1 : segments,
        convertedAtCommit: replaced ? 1 : 0,
      });
      if (replaced) best.commitReplaced = Math.min(best.commitReplaced, commit.ms);
      else best.commit = Math.min(best.commit, commit.ms);
      rmSync(dir, { recursive: true });
      rmSync(stage, { recursive: true });
    }
  }
  const ratio = (ms) => ms / best.plain;
  const pct = (x) => `${(x * 100).toFixed(1)}%`;
  const total = `${segments} x ${SEG_MB} MiB`;
  console.log(
    `| run (${total} magic-1 gzip-9 -> zstd-3, best of ${REPS}) | time | of plain migrate | target |`,
  );
  console.log('|---|---:|---:|---|');
  console.log(
    `| plain migrate (broker down throughout) | ${(best.plain / 1000).toFixed(2)} s | 100% | baseline |`,
  );
  console.log(
    `| migrate --prepare (broker running) | ${(best.prepare / 1000).toFixed(2)} s | ${pct(ratio(best.prepare))} | |`,
  );
  const c = ratio(best.commit);
  console.log(
    `| migrate --commit, fully prepared | ${(best.commit / 1000).toFixed(3)} s | ${pct(c)} | <= 5% ${c <= 0.05 ? 'met' : 'NOT MET'} |`,
  );
  const r = ratio(best.commitReplaced);
  console.log(
    `| migrate --commit, 1 of 12 replaced after prepare | ${(best.commitReplaced / 1000).toFixed(3)} s | ${pct(r)} | <= 20% ${r <= 0.2 ? 'met' : 'NOT MET'} |`,
  );
  rmSync(pristine, { recursive: true });
}

const bin = new URL('../apps/cli/dist/seglift', import.meta.url).pathname;
const pin = spawnSync('taskset', ['-c', '0', 'true']).status === 0 ? ['taskset', '-c', '0'] : [];
const WHOLE_REPS = Number(process.env.BENCH_WHOLE_REPS ?? 3);
const rows = [];
const row = (what, measured, target, ok) =>
  rows.push(`| ${what} | ${measured} | ${target} | ${ok ? 'ok' : 'NOT MET'} |`);

/** The seglift bin as an operator runs it, whole process, pinned; seconds. */
function seglift(args) {
  const cmd = [...pin, bin, 'migrate', ...args, '--codec', 'zstd', '--level', '3', '--quiet'];
  const t = performance.now();
  const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', maxBuffer: 16 * MiB });
  const s = (performance.now() - t) / 1000;
  if (r.status !== 0) throw new Error(`seglift ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  return { s, out: r.stdout };
}

/** "committed from stage N" of a commit's summary, checked. */
function expectCommitted(out, n) {
  const m = /committed from stage (\d+), converted at commit (\d+)/.exec(out);
  if (!m || Number(m[1]) !== n || Number(m[2]) !== 0)
    throw new Error(`commit: expected ${n} staged, got: ${out}`);
}

/** 12 staged ~2 MiB segments: commit vs plain migrate, whole process, alternating. */
function whole() {
  const pristine = join(work, 'whole-pristine');
  generate(pristine, 2);
  const segments = PARTITIONS * ROLLED;
  const plain = [];
  const commit = [];
  for (let rep = 0; rep < WHOLE_REPS; rep++) {
    const a = copyOf(pristine, join(work, 'whole-plain'));
    const b = copyOf(pristine, join(work, 'whole-two-phase'));
    const stage = join(work, 'whole-stage');
    seglift([b, '--prepare', '--stage-dir', stage]);
    plain.push(seglift([a]).s);
    const c = seglift([b, '--commit', '--stage-dir', stage]);
    expectCommitted(c.out, segments);
    commit.push(c.s);
    for (const d of [a, b, stage]) rmSync(d, { recursive: true });
  }
  const ratio = median(commit.map((c, i) => c / plain[i]));
  row(
    `two-phase commit of ${segments} staged ~2 MiB segments vs a plain migrate of them (whole process${pin.length ? ', one core' : ''}, median of ${WHOLE_REPS})`,
    `${ratio.toFixed(2)}x (${median(commit).toFixed(2)} s vs ${median(plain).toFixed(2)} s)`,
    '<= 0.20x',
    ratio <= 0.2,
  );
  rmSync(pristine, { recursive: true });
}

/** The small-segment archive: SMALL_PARTITIONS x SMALL_SEGMENTS rolled segments and an active one each. */
function generateSmall(root, partitions, rolled) {
  // One tiny segment's bytes (~40 messages), rebased onto every segment's base offset.
  const one = join(work, 'tiny.log');
  writeV1TinySegment(one, 6 * 1024, { seed: 7 });
  const bytes = readFileSync(one);
  rmSync(one);
  for (let p = 0; p < partitions; p++) {
    const dir = join(root, `events-${p}`);
    mkdirSync(dir, { recursive: true });
    for (let s = 0; s <= rolled; s++) {
      const base = BigInt(s) * 1000n;
      writeFileSync(segmentLog(dir, base), rebaseEntries(Buffer.from(bytes), base));
    }
  }
}

function small() {
  const partitions = Number(process.env.BENCH_SMALL_PARTITIONS ?? 1000);
  const rolled = Number(process.env.BENCH_SMALL_SEGMENTS ?? 10);
  const segments = partitions * rolled;
  const dir = join(work, 'small');
  const stage = join(work, 'small-stage');
  generateSmall(dir, partitions, rolled);
  seglift([dir, '--prepare', '--stage-dir', stage]);
  const c = seglift([dir, '--commit', '--stage-dir', stage]);
  expectCommitted(c.out, segments);
  const limit = (60 * segments) / 10_000;
  row(
    `two-phase commit of ${segments} staged small segments over ${partitions} partitions (whole process${pin.length ? ', one core' : ''})`,
    `${c.s.toFixed(1)} s (${((c.s * 1000) / segments).toFixed(2)} ms a segment)`,
    `<= ${limit.toFixed(0)} s`,
    c.s <= limit,
  );
  rmSync(dir, { recursive: true });
  rmSync(stage, { recursive: true });
}

try {
  const only = process.env.BENCH_ONLY;
  if (!only || only === 'inprocess') inProcess();
  if (!only || only === 'whole') whole();
  if (!only || only === 'small') small();
  if (rows.length > 0) {
    console.log('\n| case | measured | target | ok? |');
    console.log('|---|---:|---|---|');
    for (const r of rows) console.log(r);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
