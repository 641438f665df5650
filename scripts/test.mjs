#!/usr/bin/env node
// Runs the whole vitest suite and ends with one plain line `Tests: N passed, N failed, N skipped`
// that any CI can read, whatever the reporter prints above it. Exit code is vitest's.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
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
  { cwd: root, stdio: 'inherit' },
);
if (existsSync(results)) {
  const j = JSON.parse(readFileSync(results, 'utf8'));
  const skipped = (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  console.log(`\nTests: ${j.numPassedTests} passed, ${j.numFailedTests} failed, ${skipped} skipped`);
}
process.exit(r.status ?? 1);
