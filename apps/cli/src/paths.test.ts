/**
 * Issue 21 items 5 and 7 in the CLI: non-regular files and symlinks are never skipped in
 * silence; configured roots, backup and stage dirs and hard links bind every command that writes
 * (docs/reliability.md §16.5, §16.7).
 */
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CompressionType } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import { lines, run } from './test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, v2Batch, writeSegment } from './test-support/segments.js';

const FAST = 10_000;

function legacy(from: number, n: number) {
  return Array.from({ length: n }, (_, i) =>
    encodeLegacyEntry(BigInt(from + i), { magic: 0, key: utf8(`k${from + i}`), value: utf8('v'.repeat(50)) }),
  );
}

/** A partition dir with a FIFO as segment 0 and a v2 segment after it. */
function fifoPartition(): { dir: string; fifo: string } {
  const dir = tmpDir();
  const p = path.join(dir, 'f-0');
  writeSegment(p, 10n, [v2Batch(10n, 1)]);
  const fifo = path.join(p, '00000000000000000000.log');
  execFileSync('mkfifo', [fifo]);
  return { dir, fifo };
}

describe('non-regular segment files are refused at once, exit 1 (16.5)', () => {
  it(
    'a FIFO named like a segment: inspect, verify, convert and migrate refuse it by name; audit says UNKNOWN',
    async () => {
      const { dir, fifo } = fifoPartition();
      for (const argv of [
        ['inspect', fifo],
        ['verify', fifo],
        ['convert', '--in-place', fifo],
        ['convert', '--out', path.join(dir, 'out'), fifo],
        ['migrate', dir],
      ]) {
        const r = await run(argv);
        expect([argv[0], r.code]).toEqual([argv[0], 1]);
        expect(r.stderr).toContain('not a regular file (a FIFO)');
        expect(r.stderr).toContain(fifo);
        expect(r.stdout).not.toContain(`Dumping ${fifo}`);
      }
      const a = await run(['audit', dir]);
      expect(a.code).toBe(1);
      expect(`${a.stdout}${a.stderr}`).toContain(fifo);
      expect(lines(a.stdout).at(-1)).toMatch(/^Kafka 4 readiness: UNKNOWN: 1 segment could not be read/);
    },
    FAST,
  );

  it(
    'a /dev/zero symlink named like a segment: refused, never an empty dump with exit 0',
    async () => {
      const dir = tmpDir();
      const zero = path.join(dir, '00000000000000000000.log');
      symlinkSync('/dev/zero', zero);
      for (const argv of [
        ['inspect', zero],
        ['verify', zero],
        ['convert', '--out', path.join(dir, 'o'), zero],
      ]) {
        const r = await run(argv);
        expect([argv[0], r.code]).toEqual([argv[0], 1]);
        expect(r.stderr).toContain('not a regular file (a character device)');
      }
      const idx = path.join(dir, '00000000000000000000.index');
      symlinkSync('/dev/zero', idx);
      const i = await run(['inspect', idx]);
      expect(i.code).toBe(1);
      expect(i.stderr).toContain('not a regular file');
    },
    FAST,
  );
});

/** A log dir whose t-0 is linked from another disk and holds magic 0 data; u-0 is v2 already. */
function linkedLogDir() {
  const root = tmpDir();
  const logs = path.join(root, 'logs');
  const real = path.join(root, 'disk2', 't-0');
  writeSegment(real, 0n, legacy(0, 5));
  writeSegment(real, 5n, [v2Batch(5n, 1)]);
  writeSegment(path.join(logs, 'u-0'), 0n, [v2Batch(0n, 1, CompressionType.ZSTD)]);
  symlinkSync(real, path.join(logs, 't-0'));
  return { root, logs, real };
}

describe('a symlinked partition dir is followed, as Kafka follows it (16.5)', () => {
  it('audit reads it (NOT READY, never "ready" while it holds magic 0) and migrate converts it in its real dir', async () => {
    const { logs, real } = linkedLogDir();
    const a = await run(['audit', logs]);
    expect(lines(a.stdout).at(-1)).toMatch(
      /^Kafka 4 readiness: NOT READY: 1 segment still holds magic 0\/1 data/,
    );
    const m = await run(['migrate', logs, '--codec', 'zstd', '--json']);
    expect(m.code).toBe(0);
    const converted = lines(m.stdout)
      .map((l) => JSON.parse(l))
      .filter((j) => j.type === 'segment' && j.result === 'converted');
    expect(converted.map((j) => j.path)).toEqual([path.join(real, '00000000000000000000.log')]);
    expect(readlinkSync(path.join(logs, 't-0'))).toBe(real);
    const after = await run(['audit', logs]);
    expect(lines(after.stdout).at(-1)).toMatch(/^Kafka 4 readiness: ready/);
  });

  it('two names for one partition on one command line are converted once', async () => {
    const { logs, real } = linkedLogDir();
    const m = await run(['migrate', logs, real, path.join(logs, 't-0'), '--codec', 'zstd', '--json']);
    expect(m.code).toBe(0);
    const segs = lines(m.stdout)
      .map((l) => JSON.parse(l))
      .filter((j) => j.type === 'segment');
    expect(segs.filter((j) => j.result === 'converted')).toHaveLength(1);
    expect(segs.filter((j) => j.result === 'failed')).toEqual([]);
    expect(JSON.parse(lines(m.stdout).at(-1)!).partitions).toBe(2);
  });
});

describe('configured roots bind the CLI as they bind the worker: exit 2 before anything is written (16.7)', () => {
  it('SEGLIFT_ROOTS=/a seglift migrate /b, and --backup-dir, --stage-dir, convert inputs and --out outside them', async () => {
    const a = tmpDir();
    const b = tmpDir();
    const seg = writeSegment(path.join(b, 't-0'), 0n, legacy(0, 5));
    writeSegment(path.join(b, 't-0'), 5n, [v2Batch(5n, 1)]);
    const inA = writeSegment(path.join(a, 't-0'), 0n, legacy(0, 5));
    writeSegment(path.join(a, 't-0'), 5n, [v2Batch(5n, 1)]);
    const before = [readFileSync(seg), readFileSync(inA)];
    const env = { SEGLIFT_ROOTS: a };
    for (const argv of [
      ['migrate', b],
      ['migrate', a, '--backup-dir', path.join(b, 'backups')],
      ['migrate', a, '--prepare', '--stage-dir', path.join(b, 'stage')],
      ['migrate', a, '--commit', '--stage-dir', path.join(b, 'stage')],
      ['convert', '--in-place', seg],
      ['convert', '--out', path.join(b, 'out'), inA],
      ['convert', '--in-place', '--backup-dir', path.join(b, 'backups'), inA],
    ]) {
      const r = await run(argv, env);
      expect([argv.join(' '), r.code]).toEqual([argv.join(' '), 2]);
      expect(r.stderr).toContain('error[PATH_OUTSIDE_ROOTS]');
      expect(r.stderr).toContain(`allowed roots: ${a}`);
    }
    expect([readFileSync(seg), readFileSync(inA)]).toEqual(before);
    // Inside the roots it works; a partition symlinked out of them refuses the run.
    symlinkSync(path.join(b, 't-0'), path.join(a, 'linked-0'));
    const out = await run(['migrate', a], env);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(
      `partition dir ${path.join(b, 't-0')}, found under ${a} through a symlink, is outside the allowed roots`,
    );
    expect([readFileSync(seg), readFileSync(inA)]).toEqual(before);
    expect((await run(['convert', '--in-place', inA], env)).code).toBe(0);
  });

  it('one rule for the backup dir: inside the roots (it is written to), outside every log dir migrated; exit 2 otherwise', async () => {
    const a = tmpDir();
    const data = path.join(a, 'data');
    const seg = writeSegment(path.join(data, 't-0'), 0n, legacy(0, 5));
    writeSegment(path.join(data, 't-0'), 5n, [v2Batch(5n, 1)]);
    const before = readFileSync(seg);
    const env = { SEGLIFT_ROOTS: a };
    // Inside the log dir of the partition given (a broker refuses to start beside it), with or
    // without roots.
    const inLogDir = path.join(data, 'backups');
    for (const argv of [
      ['migrate', path.join(data, 't-0'), '--backup-dir', inLogDir],
      ['convert', '--in-place', seg, '--backup-dir', inLogDir],
    ])
      for (const e of [env, {}]) {
        const r = await run(argv, e);
        expect([argv.join(' '), r.code]).toEqual([argv.join(' '), 2]);
        expect(r.stderr).toBe(
          `error[INVALID_ARGUMENT]: backup dir ${inLogDir} is inside ${data}, which is being migrated: choose a backup directory outside the log directories (a later run would rewrite the backups) (file ${inLogDir})\n`,
        );
      }
    expect(readFileSync(seg)).toEqual(before);
    // Inside the roots, outside the log dir: taken, and passed over by the walks of the roots.
    const backups = path.join(a, 'backups');
    const m = await run(['migrate', data, '--backup-dir', backups, '--json'], env);
    expect(m.code, m.stderr).toBe(0);
    expect(JSON.parse(lines(m.stdout).at(-1)!)).toMatchObject({ partitions: 1, converted: 1, failed: 0 });
    expect(readFileSync(path.join(backups, 't-0', path.basename(seg)))).toEqual(before);
    const audit = await run(['audit', a, '--json'], env);
    expect(JSON.parse(lines(audit.stdout).at(-1)!)).toMatchObject({ partitions: 1 });
  });

  it('a prepare writes no backup: a backup dir outside the roots (the shared config of a commit) does not refuse it', async () => {
    const a = tmpDir();
    writeSegment(path.join(a, 'data', 't-0'), 0n, legacy(0, 5));
    writeSegment(path.join(a, 'data', 't-0'), 5n, [v2Batch(5n, 1)]);
    const stage = path.join(a, 'stage');
    const backups = path.join(tmpDir(), 'backups');
    const r = await run(
      ['migrate', path.join(a, 'data'), '--prepare', '--stage-dir', stage, '--backup-dir', backups],
      {
        SEGLIFT_ROOTS: a,
      },
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('stage: staged 1,');
  });
});

describe('a backup or stage dir is never a conversion target (16.7)', () => {
  it('convert --in-place and migrate refuse a segment inside a marked backup dir or a stage dir, exit 1', async () => {
    const { logs } = linkedLogDir();
    const backups = path.join(path.dirname(logs), 'backups');
    const m = await run([
      'migrate',
      path.join(logs, 'u-0'),
      '--codec',
      'lz4',
      '--include-active',
      '--backup-dir',
      backups,
    ]);
    expect(m.code).toBe(0);
    const backup = path.join(backups, 'u-0', '00000000000000000000.log');
    const bytes = readFileSync(backup);
    const c = await run(['convert', '--in-place', backup, '--codec', 'gzip']);
    expect(c.code).toBe(1);
    expect(c.stderr).toMatch(/error\[NOT_A_SEGMENT\]: the segment lies inside the seglift backup dir/);
    expect(readFileSync(backup)).toEqual(bytes);
    const stage = path.join(path.dirname(logs), 'stage');
    mkdirSync(path.join(stage, 'x-0'), { recursive: true });
    writeFileSync(path.join(stage, '.seglift-stage'), '');
    const staged = writeSegment(path.join(stage, 'x-0'), 0n, legacy(0, 3));
    writeSegment(path.join(stage, 'x-0'), 3n, [v2Batch(3n, 1)]);
    const s = await run(['migrate', path.join(stage, 'x-0')]);
    expect(s.code).toBe(1);
    expect(s.stderr).toContain('inside the seglift stage dir');
    expect(readFileSync(staged)).toEqual(Buffer.concat(legacy(0, 3)));
  });

  it('a segment with a second hard link is refused in place with the reason; --out converts a copy', async () => {
    const dir = tmpDir();
    const outside = writeSegment(path.join(dir, 'outside'), 0n, legacy(0, 5));
    mkdirSync(path.join(dir, 'logs', 't-0'), { recursive: true });
    const inside = path.join(dir, 'logs', 't-0', '00000000000000000000.log');
    linkSync(outside, inside);
    writeSegment(path.join(dir, 'logs', 't-0'), 5n, [v2Batch(5n, 1)]);
    const r = await run(['migrate', path.join(dir, 'logs')]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      `${inside} has 2 hard links: a rewrite in place would leave the other name on the old bytes`,
    );
    expect(readFileSync(outside)).toEqual(Buffer.concat(legacy(0, 5)));
    expect((await run(['convert', '--out', path.join(dir, 'out'), inside])).code).toBe(0);
  });
});
