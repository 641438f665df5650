#!/usr/bin/env node
// Runs the whole vitest suite, then the Kafka oracle suite (e2e/kafka, real brokers: alone, so its
// JVMs do not slow the unit tests), then the Kubernetes suite (e2e/k8s, a real single-node cluster);
// lists every skipped test with its reason (and every test marked
// as an expected failure), and ends with one plain line `Tests: N passed, N failed, N skipped` over
// both that any CI can read, whatever the reporter prints above it. Exit code: 0 only if both runs
// passed. `--kafka` runs the oracle suite only, `--k8s` the Kubernetes suite only, `--unit` the unit
// suite only; other arguments go to vitest.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const vitest = join(root, 'node_modules/vitest/vitest.mjs');
const SUITES = [
  { name: 'unit', flag: '--unit', config: 'vitest.config.ts' },
  { name: 'kafka', flag: '--kafka', config: 'e2e/kafka/vitest.config.ts' },
  { name: 'k8s', flag: '--k8s', config: 'e2e/k8s/vitest.config.ts' },
];
const chosen = SUITES.filter((s) => process.argv.includes(s.flag));
const runs = chosen.length > 0 ? chosen : SUITES;
const args = process.argv.slice(2).filter((a) => !SUITES.some((s) => s.flag === a));
const total = { passed: 0, failed: 0, skipped: 0 };
const skipped = [];
const fails = [];
let status = 0;
for (const run of runs) {
  // The unit run's report stays where it always was (.gitignored); the e2e suites' go to tmp.
  const results =
    run.name === 'unit'
      ? join(root, '.vitest-results.json')
      : join(tmpdir(), `seglift-vitest-${run.name}-${process.pid}.json`);
  rmSync(results, { force: true });
  const r = spawnSync(
    process.execPath,
    [
      vitest,
      'run',
      '--config',
      run.config,
      '--passWithNoTests',
      '--reporter=default',
      '--reporter=json',
      `--outputFile=${results}`,
      ...args,
    ],
    // The skip reasons are listed here once, not printed by every test file.
    { cwd: root, stdio: 'inherit', env: { ...process.env, SEGLIFT_SKIP_SUMMARY: '1' } },
  );
  if ((r.status ?? 1) !== 0) status = r.status ?? 1;
  if (!existsSync(results)) continue;
  const j = JSON.parse(readFileSync(results, 'utf8'));
  total.passed += j.numPassedTests;
  total.failed += j.numFailedTests;
  total.skipped += (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  for (const file of j.testResults ?? []) {
    for (const t of file.assertionResults ?? []) {
      const name = `${relative(root, file.name)} > ${[...t.ancestorTitles, t.title].join(' > ')}`;
      if (t.status === 'skipped' || t.status === 'pending' || t.status === 'todo')
        skipped.push({ name, reason: t.meta?.skipReason ?? `no reason given (${t.status})` });
      if (t.meta?.knownBug) fails.push({ name, reason: t.meta.knownBug });
    }
  }
}
const list = (title, items) => {
  if (items.length === 0) return;
  const byReason = new Map();
  for (const s of items) byReason.set(s.reason, [...(byReason.get(s.reason) ?? []), s.name]);
  console.log(`\n${title} (${items.length}):`);
  for (const [reason, names] of byReason) {
    console.log(`  ${reason}`);
    for (const n of names) console.log(`    - ${n}`);
  }
};
list('Expected failures (known bugs: the test asserts the correct behaviour and fails today)', fails);
list('Skipped', skipped);
console.log(`\nTests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(status);
