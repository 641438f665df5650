#!/usr/bin/env node
// Runs every bench/*.bench.mjs (or the ones named on the command line) one after another, each
// in its own process so one benchmark's heap does not disturb the next. Each prints markdown.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const wanted = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
let failed = 0;
for (const f of files) {
  console.log(`\n## ${f}\n`);
  const r = spawnSync(process.execPath, ['--expose-gc', join(here, f)], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    console.log(`(${f} exited with ${r.status ?? r.signal})`);
  }
}
process.exit(failed === 0 ? 0 : 1);
