/**
 * The README's first command ends in `pnpm demo` (scripts/demo.mjs): audit, an embedded migrate to
 * zstd, verify and audit again on a copy of samples/kafka-logs. It must keep working as the
 * pipeline changes (it once listed the log dir's .lock as a partition dir).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { built, needs } from '@seglift/testkit';
import { expect } from 'vitest';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

needs(built(path.join(repo, 'apps/cli/dist/seglift'))).it(
  'pnpm demo: converts every sample segment, verifies them and ends Kafka-4-ready',
  () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'seglift-demo-'));
    try {
      const r = spawnSync(process.execPath, [path.join(repo, 'scripts/demo.mjs')], {
        encoding: 'utf8',
        env: { ...process.env, SEGLIFT_DEMO_DIR: dir },
        timeout: 120_000,
      });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      // No warning: the demo's own SEGLIFT_DEMO_DIR is not handed to seglift.
      expect(r.stderr).not.toMatch(/warning/);
      expect(r.stdout).toMatch(/converted 11 segments, skipped 0, failed 0/);
      expect(r.stdout).toMatch(/11 of 11 segments OK/);
      expect(r.stdout).toContain('Kafka 4 readiness: ready: all 11 segments read, no magic 0/1 data found.');
      // It ends with what to run on your own data.
      expect(r.stdout.trimEnd().split('\n').slice(-9)).toEqual([
        "Next, on your own data (the broker's log.dirs; run as the broker's user):",
        '  seglift audit /var/lib/kafka/data --codec zstd --backup-dir /backup/seglift',
        '      reads only, safe beside a running broker: what is still magic 0/1, the disk it needs',
        '  systemctl stop kafka',
        '  seglift migrate /var/lib/kafka/data --codec zstd --backup-dir /backup/seglift',
        '  seglift audit /var/lib/kafka/data --codec zstd',
        '  systemctl start kafka',
        'To keep the broker up while converting: seglift migrate --prepare, then --commit',
        '(docs/operator-guide.md, "Two-phase migration").',
      ]);
      expect(readdirSync(path.join(dir, 'kafka-logs')).sort()).toEqual([
        '.lock',
        'clicks-0',
        'metrics-0',
        'orders-0',
        'payments-0',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
