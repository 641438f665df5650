#!/usr/bin/env node
// Runs the whole vitest suite, then the Kafka oracle suite (e2e/kafka, real brokers: alone, so its
// JVMs do not slow the unit tests), and ends with one plain line `Tests: N passed, N failed, N
// skipped` over both that any CI can read, whatever the reporter prints above it. Exit code: 0 only
// if both runs passed. `--kafka` runs the oracle suite only; other arguments go to vitest.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const vitest = join(root, 'node_modules/vitest/vitest.mjs');
const kafkaOnly = process.argv.includes('--kafka');
const args = process.argv.slice(2).filter((a) => a !== '--kafka');
const runs = [
  ...(kafkaOnly ? [] : [{ name: 'unit', config: 'vitest.config.ts' }]),
  { name: 'kafka', config: 'e2e/kafka/vitest.config.ts' },
];
const total = { passed: 0, failed: 0, skipped: 0 };
let status = 0;
for (const run of runs) {
  // The unit run's report stays where it always was (.gitignored); the oracle's goes to tmp.
  const results =
    run.name === 'unit'
      ? join(root, '.vitest-results.json')
      : join(tmpdir(), `seglift-vitest-kafka-${process.pid}.json`);
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
    { cwd: root, stdio: 'inherit' },
  );
  if ((r.status ?? 1) !== 0) status = r.status ?? 1;
  if (existsSync(results)) {
    const j = JSON.parse(readFileSync(results, 'utf8'));
    total.passed += j.numPassedTests;
    total.failed += j.numFailedTests;
    total.skipped += (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
  }
}
console.log(`\nTests: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(status);
