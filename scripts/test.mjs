#!/usr/bin/env node
// Runs the whole vitest suite, lists every skipped test with its reason (and every test marked as
// an expected failure), and ends with one plain line `Tests: N passed, N failed, N skipped` that
// any CI can read, whatever the reporter prints above it. Exit code is vitest's.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const results = join(root, '.vitest-results.json');
rmSync(results, { force: true });
const vitest = join(root, 'node_modules/vitest/vitest.mjs');
const r = spawnSync(
  process.execPath,
  [
    vitest,
    'run',
    '--reporter=default',
    '--reporter=json',
    `--outputFile=${results}`,
    ...process.argv.slice(2),
  ],
  // The skip reasons are listed here once, not printed by every test file.
  { cwd: root, stdio: 'inherit', env: { ...process.env, SEGLIFT_SKIP_SUMMARY: '1' } },
);
if (existsSync(results)) {
  const j = JSON.parse(readFileSync(results, 'utf8'));
  const skipped = [];
  const fails = [];
  for (const file of j.testResults ?? []) {
    for (const t of file.assertionResults ?? []) {
      const name = `${relative(root, file.name)} > ${[...t.ancestorTitles, t.title].join(' > ')}`;
      if (t.status === 'skipped' || t.status === 'pending' || t.status === 'todo')
        skipped.push({ name, reason: t.meta?.skipReason ?? `no reason given (${t.status})` });
      if (t.meta?.knownBug) fails.push({ name, reason: t.meta.knownBug });
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
  const nSkipped = (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  console.log(`\nTests: ${j.numPassedTests} passed, ${j.numFailedTests} failed, ${nSkipped} skipped`);
}
process.exit(r.status ?? 1);
