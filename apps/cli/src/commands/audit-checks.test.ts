/**
 * audit warns before a migrate fails or leaves the job unfinished: magic 0/1 data only active
 * segments hold (named, with what finishes the job), Kafka leftovers migrate refuses, and a
 * filesystem without the free space migrate needs (a real small tmpfs: root only).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { needs, requirement } from '@seglift/testkit';
import { afterAll, describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, v2Batch, writeSegment } from '../test-support/segments.js';
import { type SpaceCheck, spaceLine } from './audit-checks.js';

const v0 = (offset: bigint, value = 'hello') =>
  encodeLegacyEntry(offset, { magic: 0, key: utf8('a'), value: utf8(value) });

/** One partition: a closed segment of v0 messages and an active one holding a v0 message too. */
function partition(dir: string, name = 'orders-0'): string {
  const p = path.join(dir, name);
  writeSegment(p, 0n, [v0(0n), v0(1n)]);
  writeSegment(p, 2n, [v0(2n)]);
  return p;
}

describe('audit after a plain migrate: the active segments are named, with what finishes the job', () => {
  it('nothing to rewrite; NOT READY names the active segment; --include-active makes it ready', async () => {
    const dir = tmpDir();
    const p = partition(dir);
    expect((await run(['migrate', dir, '--codec', 'zstd', '--quiet'])).code).toBe(0);
    const r = await run(['audit', dir, '--compare-bytes', '0']);
    expect(r.code).toBe(0);
    // The tiered storage lines (audit-tiering.test.ts) are not this test's subject.
    const shown = lines(r.stdout).filter(
      (l) => !l.startsWith('tiered storage:') && !/^ {2}\S+: of \d+ closed/.test(l),
    );
    expect(shown.slice(-6)).toEqual([
      '1 partition, 2 segments, 125 B; 1 segment holds magic 0/1 data (32 B).',
      'migrate --codec zstd: nothing to rewrite; active segments are left alone (--include-active to count them). 1 segment is zstd v2 already.',
      "Kafka 4 readiness: NOT READY: 1 segment still holds magic 0/1 data, one left alone by 'seglift migrate' as audited (below).",
      '1 active segment holds magic 0/1 data; migrate leaves it alone (a running broker appends to it):',
      `  ${path.join(p, '00000000000000000002.log')}`,
      `To finish: with the broker stopped, 'seglift migrate ${dir} --include-active'; or, once the broker has rolled it (segment.ms, segment.bytes), 'seglift migrate' again (or --prepare/--commit).`,
    ]);
    expect((await run(['migrate', dir, '--codec', 'zstd', '--include-active', '--quiet'])).code).toBe(0);
    const after = await run(['audit', dir, '--compare-bytes', '0']);
    expect(after.code).toBe(0);
    expect(lines(after.stdout).at(-1)).toBe(
      'Kafka 4 readiness: ready: all 2 segments read, no magic 0/1 data found.',
    );
  });
});

describe('audit flags Kafka leftovers migrate refuses (KAFKA_LEFTOVERS)', () => {
  it('a .cleaned and a .swap beside segments to rewrite: listed with the fix, exit 1; migrate then refuses', async () => {
    const dir = tmpDir();
    const p = partition(dir);
    writeFileSync(path.join(p, '00000000000000000000.log.cleaned'), '');
    writeFileSync(path.join(p, '00000000000000000000.index.swap'), '');
    // Already v2 in the target codec: nothing to rewrite, a note only.
    writeSegment(path.join(dir, 'done-0'), 0n, [v2Batch(0n, 1)]);
    writeFileSync(path.join(dir, 'done-0', '00000000000000000000.log.cleaned'), '');
    const r = await run(['audit', dir, '--codec', 'none', '--compare-bytes', '0']);
    expect(r.code).toBe(1);
    const out = lines(r.stdout);
    expect(out.filter((l) => /^(KAFKA_LEFTOVERS|note): /.test(l))).toEqual([
      'note: done-0 holds files of an interrupted Kafka operation (00000000000000000000.log.cleaned); migrate has nothing to rewrite there. The broker finishes them at its next start.',
      'KAFKA_LEFTOVERS: orders-0 holds files of an interrupted Kafka operation (00000000000000000000.log.cleaned, 00000000000000000000.index.swap): migrate refuses to convert its segments (error[KAFKA_LEFTOVERS]). Start the broker once and stop it cleanly: it finishes them at start-up; then audit again.',
    ]);
    const json = await run(['audit', dir, '--codec', 'none', '--compare-bytes', '0', '--json']);
    expect(
      lines(json.stdout)
        .map((l) => JSON.parse(l))
        .at(-1),
    ).toMatchObject({ kafkaLeftovers: 1 });
    const m = await run(['migrate', dir, '--codec', 'none', '--quiet']);
    expect(m.code).toBe(1);
    expect(m.stderr).toMatch(/^error\[KAFKA_LEFTOVERS\]: /m);
  });
});

describe('free space: the lines audit prints', () => {
  const check = (over: Partial<SpaceCheck>): SpaceCheck => ({
    dir: '/var/lib/kafka/data',
    holds: 'data',
    migrateBytes: 30_515_609,
    backupBytes: 0,
    needBytes: 30_515_609,
    freeBytes: 15_000_000,
    enough: false,
    ...over,
  });
  it('enough, NOT ENOUGH with how much is missing and what to do', () => {
    expect(spaceLine(check({ freeBytes: 1_288_490_189, enough: true }))).toBe(
      'free space (/var/lib/kafka/data, data): 1.2 GiB free, migrate needs 29.1 MiB: enough.',
    );
    expect(spaceLine(check({}))).toBe(
      'free space (/var/lib/kafka/data, data): NOT ENOUGH: 14.3 MiB free, migrate needs 29.1 MiB, 14.8 MiB short: free space there, lower --concurrency, or migrate fewer partitions at a time; a migrate would fail with ENOSPC part way.',
    );
    expect(
      spaceLine(check({ holds: 'data and backups', backupBytes: 1_048_576, needBytes: 31_564_185 })),
    ).toBe(
      'free space (/var/lib/kafka/data, data and backups): NOT ENOUGH: 14.3 MiB free, migrate needs 30.1 MiB (29.1 MiB while it runs + 1.0 MiB of backups), 15.8 MiB short: free space there, put --backup-dir on another filesystem, or lower --concurrency; a migrate would fail with ENOSPC part way.',
    );
    expect(
      spaceLine(
        check({
          dir: '/backup',
          holds: 'backups',
          migrateBytes: 0,
          backupBytes: 31_000_000,
          needBytes: 31_000_000,
        }),
      ),
    ).toBe(
      'free space (/backup, backups): NOT ENOUGH: 14.3 MiB free, migrate needs 29.6 MiB, 15.3 MiB short: free space there or choose another --backup-dir; a migrate would fail with ENOSPC part way.',
    );
  });
});

// ---- a real filesystem that is too small: a tmpfs mounted by the test --------------------------
let mountPoint: string | undefined;
/** Mounts the tmpfs when the tests are collected (the requirement is probed then); root only. */
function mountTmpfs(): string | undefined {
  if (process.getuid?.() !== 0) return 'not running as root';
  const dir = mkdtempSync(path.join(os.tmpdir(), 'seglift-audit-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'pipe' });
    mountPoint = dir;
    return undefined;
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    return `mount -t tmpfs failed: ${String((err as Error).message).split('\n')[0]}`;
  }
}
afterAll(() => {
  if (!mountPoint) return;
  try {
    execFileSync('umount', [mountPoint], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', mountPoint], { stdio: 'pipe' });
  }
  rmSync(mountPoint, { recursive: true, force: true });
});
const tmpfs = requirement(
  'a tmpfs mounted by the test (root)',
  'a filesystem really too small for a migrate, not a simulated free-space figure',
  mountTmpfs,
);

/** Fills `dir`'s filesystem until `leave` bytes are free (tmpfs counts whole pages). */
function fillUntil(dir: string, leave: number): void {
  const st = statfsSync(dir);
  writeFileSync(path.join(dir, 'filler'), Buffer.alloc(st.bavail * st.bsize - leave));
}

needs(tmpfs).describe('free space on a filesystem too small for the migrate (a 1 MiB tmpfs)', () => {
  it('NOT ENOUGH on the data filesystem: exit 1, and migrate would fail with ENOSPC', async () => {
    const dir = path.join(mountPoint!, 'data');
    // 40 segments of 8 KiB of distinct v0 messages: --grouping kafka to codec none grows them.
    const p = path.join(dir, 'big-0');
    for (let s = 0; s < 4; s++)
      writeSegment(
        p,
        BigInt(s * 100),
        Array.from({ length: 100 }, (_, i) => v0(BigInt(s * 100 + i), `value-${s}-${i}`.padEnd(48, '.'))),
      );
    fillUntil(mountPoint!, 8192);
    const free = statfsSync(mountPoint!).bavail * statfsSync(mountPoint!).bsize;
    const args = ['audit', dir, '--codec', 'none', '--grouping', 'kafka', '--compare-bytes', '0'];
    const r = await run([...args, '--json']);
    expect(r.code).toBe(1);
    const summary = lines(r.stdout)
      .map((l) => JSON.parse(l))
      .at(-1);
    expect(summary.space).toEqual([
      {
        dir: p,
        holds: 'data',
        migrateBytes: summary.disk[0].peakExtraBytes,
        backupBytes: 0,
        needBytes: summary.disk[0].peakExtraBytes,
        freeBytes: free,
        enough: false,
      },
    ]);
    expect(summary.disk[0].peakExtraBytes).toBeGreaterThan(free);
    const text = await run(args);
    expect(text.code).toBe(1);
    expect(lines(text.stdout).find((l) => l.startsWith('free space'))).toMatch(
      new RegExp(
        `^free space \\(${p}, data\\): NOT ENOUGH: 8\\.0 KiB free, migrate needs .*: free space there`,
      ),
    );
    // What the audit warned of.
    const m = await run(['migrate', dir, '--codec', 'none', '--grouping', 'kafka', '--quiet']);
    expect(m.code).toBe(1);
    expect(m.stderr).toMatch(/^error\[IO\]: .*ENOSPC/m);
    rmSync(path.join(mountPoint!, 'filler'));
    rmSync(dir, { recursive: true });
  });

  it('NOT ENOUGH on the backup filesystem, the data elsewhere: the backup dir named, exit 1', async () => {
    const dir = tmpDir();
    partition(dir);
    fillUntil(mountPoint!, 0);
    const backup = path.join(mountPoint!, 'backup');
    const r = await run(['audit', dir, '--backup-dir', backup, '--compare-bytes', '0']);
    expect(r.code).toBe(1);
    const space = lines(r.stdout).filter((l) => l.startsWith('free space'));
    expect(space).toHaveLength(2);
    expect(space[0]).toMatch(/^free space \(.*orders-0, data\): .* free, migrate needs \d+ B: enough\.$/);
    expect(space[1]).toMatch(
      /^free space \(.*\/backup, backups\): NOT ENOUGH: 0 B free, migrate needs \d+ B, \d+ B short: free space there or choose another --backup-dir; /,
    );
    rmSync(path.join(mountPoint!, 'filler'));
  });
});
