#!/usr/bin/env node
// Writes a program's launcher, `dist/<program>` next to `dist/main.js` (the package's `bin`):
// a POSIX sh script that starts node with the pipeline's environment and flags, read from the
// one place that defines them, PIPELINE_NODE (packages/segment/src/node-flags.ts, built first:
// turbo builds dependencies before the apps). Run by each app's build from its directory:
//   node ../../scripts/stamp-bin.mjs seglift
// Why a launcher and not a `#!/usr/bin/env -S ...` line: Linux before 5.1 (RHEL 8, Debian 10)
// cuts `#!` lines at 127 bytes and the flags need more.
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const FLAGS_MODULE = new URL('../packages/segment/dist/node-flags.js', import.meta.url);

/** Words that need no quoting in sh: anything else in PIPELINE_NODE is refused, not escaped. */
const PLAIN = /^[A-Za-z0-9_=.,:+/-]+$/;

/** The launcher text for `program` from PIPELINE_NODE ({ env, flags }). */
export function launcherScript(program, { env, flags }) {
  for (const [k, v] of Object.entries(env)) {
    if (!/^[A-Z_][A-Z0-9_]*$/.test(k) || !PLAIN.test(v)) throw new Error(`unsafe env ${k}=${v}`);
  }
  for (const f of flags) if (!PLAIN.test(f)) throw new Error(`unsafe node flag ${f}`);
  const names = Object.keys(env);
  return [
    '#!/bin/sh',
    `# ${program}: runs main.js (beside this file) in node with the pipeline's settings. Generated`,
    '# at build by scripts/stamp-bin.mjs from PIPELINE_NODE (packages/segment/src/node-flags.ts);',
    '# why each one: docs/operator-guide.md, "Memory and CPU: how the programs start node".',
    '# Usually reached through a symlink on PATH (npm, scripts/bootstrap.sh): follow it.',
    'self=$(readlink -f -- "$0" 2>/dev/null) || self=$0',
    ...names.map((k) => `${k}=${env[k]}`),
    ...(names.length > 0 ? [`export ${names.join(' ')}`] : []),
    `exec node ${flags.join(' ')} "\${self%/*}/main.js" "$@"`,
    '',
  ].join('\n');
}

/** Writes `<distDir>/<program>` (mode 0755) for `<distDir>/main.js`; returns its path. */
export async function stampBin(program, distDir = 'dist') {
  if (!existsSync(join(distDir, 'main.js'))) throw new Error(`${distDir}/main.js is missing: build first`);
  if (!existsSync(FLAGS_MODULE)) {
    throw new Error('packages/segment/dist/node-flags.js is missing: build @seglift/segment first');
  }
  const { PIPELINE_NODE } = await import(FLAGS_MODULE.href);
  const file = join(distDir, program);
  writeFileSync(file, launcherScript(program, PIPELINE_NODE));
  chmodSync(file, 0o755);
  return file;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const program = process.argv[2];
  if (!program || !/^[a-z][a-z0-9-]*$/.test(program)) {
    console.error('usage: node scripts/stamp-bin.mjs <program>   (from the app directory)');
    process.exit(2);
  }
  await stampBin(program);
}
