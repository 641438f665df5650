#!/usr/bin/env node
// Two-phase migration (issue 15): how long the broker is down.
//  - baseline: a plain `migrate` of a log dir (4 partitions, 3 rolled segments of BENCH_SEG_MB
//    magic-1 gzip-9 wrappers each and a small active one) -> zstd-3;
//  - `migrate --commit` of the same dir fully prepared (target <= 5% of the baseline);
//  - the same with one rolled segment in twelve replaced after the prepare, as the cleaner would
//    (a new file through .cleaned and .swap: converted at commit; target <= 20%).
// Each run is a child process started as the seglift bin starts node; the time is the call's
// (migrate / commitStage), module loading excluded from both sides. Every run works on a fresh
// hard-linked copy of one generated log dir (a conversion replaces files by rename, never writes
// into one, so the copies share nothing that a run changes).
// Options (env): BENCH_SEG_MB (16), BENCH_REPS (2: best of), BENCH_DIR (os tmp).
// Run: pnpm bench two-phase
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MiB, writeV1GzipSegment } from './data.mjs';

const SEG_MB = Number(process.env.BENCH_SEG_MB ?? 16);
const REPS = Number(process.env.BENCH_REPS ?? 2);
const PARTITIONS = 4;
const ROLLED = 3;
const work = mkdtempSync(join(process.env.BENCH_DIR ?? tmpdir(), 'seglift-bench-two-phase-'));
const segmentDist = new URL('../packages/segment/dist/index.js', import.meta.url).href;

const childEnv = { ...process.env, MALLOC_ARENA_MAX: '2' };
const childFlags = [
  '--max-semi-space-size=8',
  '--single-threaded-gc',
  '--no-allocation-site-pretenuring',
  '--heap-growing-percent=50',
];

const name = (base) => String(base).padStart(20, '0');

/** The generated log dir: every segment's offsets rebased onto its base offset. */
function generate(root) {
  for (let p = 0; p < PARTITIONS; p++) {
    const dir = join(root, `orders-${p}`);
    mkdirSync(dir, { recursive: true });
    for (let s = 0; s <= ROLLED; s++) {
      const base = BigInt(s) * 10_000_000n;
      const log = join(dir, `${name(base)}.log`);
      // Fewer distinct wrappers than the pipeline bench: generation time, not codec work.
      writeV1GzipSegment(log, s === ROLLED ? 64 * 1024 : SEG_MB * MiB, {
        seed: 10 + p * 5 + s,
        distinct: 48,
      });
      const b = readFileSync(log);
      for (let q = 0; q < b.length; ) {
        b.writeBigInt64BE(b.readBigInt64BE(q) + base, q);
        q += b.readInt32BE(q + 8) + 12;
      }
      writeFileSync(log, b, { flush: true });
    }
  }
}

/** A hard-linked copy of the generated dir. */
function copyOf(pristine, to) {
  const r = spawnSync('cp', ['-al', pristine, to]);
  if (r.status !== 0) throw new Error(`cp -al failed: ${r.stderr}`);
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

try {
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
      if (replaced) replace(join(dir, 'orders-1', `${name(10_000_000n)}.log`));
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
} finally {
  rmSync(work, { recursive: true, force: true });
}
