#!/usr/bin/env node
// Longer run of the seeded fuzz suites (*.fuzz.test.ts): each suite loops for --seconds instead
// of its fixed CI input count, then this prints inputs tried and failures found per suite.
// Usage: pnpm fuzz [--seconds 300] [--seed N]   (seconds are per suite; seed defaults to the time)
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : dflt;
};
const seconds = Number(opt('seconds', '60'));
const seed = Number(opt('seed', String(Date.now() % 2 ** 31)));
if (!(seconds > 0) || !Number.isInteger(seed)) {
  console.error('usage: pnpm fuzz [--seconds N] [--seed N]');
  process.exit(2);
}
const stats = join(os.tmpdir(), `seglift-fuzz-${process.pid}.jsonl`);
rmSync(stats, { force: true });
console.log(`fuzz: ${seconds} s per suite, seed ${seed} (rerun with --seed ${seed})`);
const r = spawnSync(
  process.execPath,
  [
    join(root, 'node_modules/vitest/vitest.mjs'),
    'run',
    '--testTimeout',
    String((seconds + 300) * 1000),
    '.fuzz.test.ts',
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: {
      ...process.env,
      SEGLIFT_FUZZ_SECONDS: String(seconds),
      SEGLIFT_FUZZ_SEED: String(seed),
      SEGLIFT_FUZZ_STATS: stats,
    },
  },
);
let inputs = 0;
let failures = 0;
if (existsSync(stats)) {
  for (const line of readFileSync(stats, 'utf8').trim().split('\n')) {
    const s = JSON.parse(line);
    inputs += s.inputs;
    failures += s.failures;
    const { suite, inputs: n, failures: f, ...rest } = s;
    console.log(
      `${suite.padEnd(22)} inputs ${String(n).padStart(9)}  failures ${f}  ${JSON.stringify(rest)}`,
    );
  }
  rmSync(stats, { force: true });
}
console.log(`\nFuzz: ${inputs} inputs tried, ${failures} failures found (seed ${seed})`);
process.exit(r.status ?? 1);
