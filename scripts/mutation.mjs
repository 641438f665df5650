#!/usr/bin/env node
// `pnpm test:mutation [file...]`: Stryker on each file of the safety core (stryker.config.mjs) in
// its own run, niced, one test process at a time; then the score of each file and the surviving
// mutants. Exit code 1 when a file scores below the break threshold (85%).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import config, { SAFETY_CORE } from '../stryker.config.mjs';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const stryker = path.join(root, 'node_modules/.bin/stryker');
const files =
  process.argv.length > 2
    ? process.argv.slice(2).map((f) => path.relative(root, path.resolve(f)))
    : SAFETY_CORE;
const DETECTED = new Set(['Killed', 'Timeout']);
const INVALID = new Set(['CompileError', 'RuntimeError', 'Ignored']);

let failed = false;
const lines = [];
for (const file of files) {
  const name = path.basename(file, '.ts');
  const run = spawnSync('nice', ['-n', '15', stryker, 'run', 'stryker.config.mjs'], {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, SEGLIFT_MUTATE: file },
  });
  const report = path.join(root, `reports/mutation/${name}.json`);
  if (!existsSync(report)) {
    lines.push(`${file}: no report (stryker exited ${run.status})`);
    failed = true;
    continue;
  }
  const mutants = Object.values(JSON.parse(readFileSync(report, 'utf8')).files).flatMap((f) => f.mutants);
  const valid = mutants.filter((m) => !INVALID.has(m.status));
  const detected = valid.filter((m) => DETECTED.has(m.status)).length;
  const score = valid.length === 0 ? 100 : (100 * detected) / valid.length;
  if (score < config.thresholds.break) failed = true;
  lines.push(`${file}: ${score.toFixed(2)}% (${detected}/${valid.length} detected)`);
  for (const m of valid.filter((m) => !DETECTED.has(m.status)))
    lines.push(
      `  ${m.status} L${m.location.start.line}:${m.location.start.column} ${m.mutatorName}: ${m.replacement ?? ''}`.slice(
        0,
        200,
      ),
    );
}
console.log(`\nMutation scores (break below ${config.thresholds.break}%):\n${lines.join('\n')}`);
process.exit(failed ? 1 : 0);
