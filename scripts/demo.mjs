#!/usr/bin/env node
// The main job on bundled sample data: copy samples/kafka-logs (magic 0/1 message sets, gzip and
// snappy wrappers, v2 gzip batches) to .demo/, audit it, migrate it to zstd in place (embedded,
// no Redis; every segment, as for a stopped broker), verify every converted segment, and audit again. The committed samples are never
// modified.
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The `seglift` command itself: its launcher starts node with the pipeline's flags.
const cli = join(root, 'apps/cli/dist/seglift');
// SEGLIFT_DEMO_DIR: elsewhere than .demo/ (the demo's test runs it in a temp dir).
const base = process.env.SEGLIFT_DEMO_DIR ?? join(root, '.demo');
const work = join(base, 'kafka-logs');
rmSync(base, { recursive: true, force: true });
cpSync(join(root, 'samples/kafka-logs'), work, { recursive: true });

// The demo's own variable is not a seglift setting: seglift would warn that it ignores it.
const { SEGLIFT_DEMO_DIR: _demoDir, ...env } = process.env;

function seglift(...args) {
  console.log(`\n$ seglift ${args.join(' ')}`);
  const r = spawnSync(cli, args, { stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error(`seglift ${args[0]} exited with ${r.status ?? r.signal}`);
    process.exit(r.status ?? 1);
  }
}

seglift('audit', work);
// A copy, not a live broker's directory: the newest segment of each partition is migrated too
// (--include-active), as for a stopped broker before a Kafka 4 upgrade.
seglift('migrate', work, '--codec', 'zstd', '--include-active', '--backup-dir', join(base, 'backup'));
const converted = [];
// Partition dirs only: migrate leaves Kafka's .lock in the log dir, as a broker does.
for (const dir of readdirSync(work, { withFileTypes: true })) {
  if (!dir.isDirectory()) continue;
  for (const f of readdirSync(join(work, dir.name)))
    if (f.endsWith('.log')) converted.push(join(work, dir.name, f));
}
seglift('verify', ...converted.sort());
seglift('audit', work);
console.log(`\nDone: converted copies in ${work}, originals backed up in ${join(base, 'backup')}.`);
// What an operator runs next, on a real log dir (docs/operator-guide.md, sections 1 and 3).
console.log(`
Next, on your own data (the broker's log.dirs; run as the broker's user):
  seglift audit /var/lib/kafka/data --codec zstd --backup-dir /backup/seglift
      reads only, safe beside a running broker: what is still magic 0/1, the disk it needs
  systemctl stop kafka
  seglift migrate /var/lib/kafka/data --codec zstd --backup-dir /backup/seglift
  seglift audit /var/lib/kafka/data --codec zstd
  systemctl start kafka
To keep the broker up while converting: seglift migrate --prepare, then --commit
(docs/operator-guide.md, "Two-phase migration").`);
