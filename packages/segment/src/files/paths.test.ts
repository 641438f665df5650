/**
 * Symlinks and non-regular files are never skipped in silence; roots,
 * backups, stages and hard links bind every conversion (docs/reliability.md §16.5, §16.7).
 */
import { execFileSync } from 'node:child_process';
import { link, mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { readSegmentEntries } from '../rewrite/reader.js';
import { verifySegment } from '../rewrite/verify.js';
import { migrate } from '../runs/migrate.js';
import { mixedSegment, tmpDir, v2Batch, writeSegment } from '../test-support/fixtures.js';
import { PathOutsideRootsError } from './errors.js';
import { requireSegment } from './segment-file.js';

const SEG0 = '00000000000000000000.log';
/** Every refusal here is at once: a hang on a FIFO fails the test in seconds, not minutes. */
const FAST = 5_000;

async function drain(file: string): Promise<number> {
  let n = 0;
  for await (const _ of readSegmentEntries(file)) n++;
  return n;
}

/** A partition whose segment 0 is a FIFO, with a real (active) segment after it. */
async function fifoPartition(): Promise<{ dir: string; fifo: string }> {
  const root = await tmpDir();
  const later = await writeSegment(root, v2Batch(100n, [Buffer.from('x')], 0), 100n);
  const fifo = path.join(path.dirname(later), SEG0);
  execFileSync('mkfifo', [fifo]);
  return { dir: root, fifo };
}

describe('non-regular files are refused at once (16.5)', () => {
  it(
    'a FIFO named like a segment: the reader, requireSegment, verify and convert refuse it as "not a regular file" without blocking',
    async () => {
      const { dir, fifo } = await fifoPartition();
      await expect(drain(fifo)).rejects.toThrow(/not a regular file \(a FIFO\)/);
      await expect(requireSegment(fifo)).rejects.toThrow(/not a regular file/);
      await expect(requireSegment(fifo, 'in-place')).rejects.toThrow(/not a regular file/);
      const v = await verifySegment(fifo);
      expect(v.ok).toBe(false);
      expect(v.error?.code).toBe('NOT_A_SEGMENT');
      for (const o of [
        { kind: 'inPlace' } as const,
        { kind: 'outDir', dir: path.join(dir, 'out') } as const,
      ]) {
        const r = await convertSegment(fifo, { codec: 'zstd' }, o);
        expect(r.result).toBe('failed');
        expect(r.error).toMatchObject({ code: 'NOT_A_SEGMENT', file: fifo });
        expect(r.reason).toContain('not a regular file');
      }
      // Discovery lists it (a migrate names it as failed), never passes it over.
      const m = await migrate([dir], { codec: 'zstd', mode: 'inline' });
      const failed = m.reports.filter((r) => r.result === 'failed');
      expect(failed.map((r) => r.path)).toEqual([fifo]);
      expect(failed[0].reason).toContain('not a regular file');
    },
    FAST,
  );

  it(
    'a /dev/zero symlink named like a segment is refused, never read as an empty log',
    async () => {
      const root = await tmpDir();
      const dir = path.join(root, 'topic-0');
      await mkdir(dir);
      const zero = path.join(dir, SEG0);
      await symlink('/dev/zero', zero);
      await expect(drain(zero)).rejects.toThrow(/not a regular file \(a character device\)/);
      await expect(requireSegment(zero)).rejects.toThrow(/not a regular file/);
      expect((await verifySegment(zero)).ok).toBe(false);
      const r = await convertSegment(
        zero,
        { codec: 'zstd' },
        { kind: 'outDir', dir: path.join(root, 'out') },
      );
      expect(r.error?.code).toBe('NOT_A_SEGMENT');
    },
    FAST,
  );

  it('a symlinked .log is read where only read (verify, --out) and refused by name in place: a swap would replace the link, not its target', async () => {
    const root = await tmpDir();
    const target = await writeSegment(path.join(root, 'elsewhere'), mixedSegment(0n).bytes);
    const dir = path.join(root, 'logs', 'topic-0');
    await mkdir(dir, { recursive: true });
    const log = path.join(dir, SEG0);
    await symlink(target, log);
    const before = await readFile(target);
    expect((await verifySegment(log)).ok).toBe(true);
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.result).toBe('failed');
    expect(r.error?.code).toBe('NOT_A_SEGMENT');
    expect(r.reason).toContain(`a symbolic link to ${target}`);
    expect(await readlink(log)).toBe(target);
    expect(await readFile(target)).toEqual(before);
    const out = await convertSegment(log, { codec: 'zstd' }, { kind: 'outDir', dir: path.join(root, 'out') });
    expect(out.result).toBe('converted');
  });
});

/** A log dir whose partition `clicks-0` is a symlink to a directory on "another disk". */
async function linkedPartition() {
  const root = await tmpDir();
  const disk2 = path.join(root, 'disk2');
  const logs = path.join(root, 'logs');
  const seg = mixedSegment(0n);
  const real = await writeSegment(disk2, seg.bytes, 0n, 'clicks-0');
  await writeSegment(disk2, v2Batch(500n, [Buffer.from('a')], 0), 500n, 'clicks-0');
  await writeSegment(logs, mixedSegment(0n, 7).bytes, 0n, 'plain-0');
  await writeSegment(logs, v2Batch(500n, [Buffer.from('a')], 0), 500n, 'plain-0');
  await symlink(path.join(disk2, 'clicks-0'), path.join(logs, 'clicks-0'));
  return { root, logs, disk2, real, realDir: path.dirname(real) };
}

describe('a symlinked partition dir is followed as Kafka follows it (16.5)', () => {
  it('migrate converts it in its real directory, and the link stays a link', async () => {
    const { logs, real, realDir } = await linkedPartition();
    const m = await migrate([logs], { codec: 'zstd', mode: 'inline' });
    const converted = m.reports.filter((r) => r.result === 'converted').map((r) => r.path);
    expect(converted).toContain(real);
    expect(converted).toHaveLength(2);
    expect(m.partitions).toBe(2);
    expect((await stat(path.join(logs, 'clicks-0'))).isDirectory()).toBe(true);
    expect(await readlink(path.join(logs, 'clicks-0'))).toBe(realDir);
    expect((await verifySegment(real)).ok).toBe(true);
    expect((await readdir(realDir)).filter((n) => n.includes('seglift'))).toEqual([]);
  });

  it('two names for one partition (the log dir and the real dir, or a dir given twice) are converted once', async () => {
    const { logs, realDir } = await linkedPartition();
    const m = await migrate([logs, realDir, path.join(logs, 'clicks-0'), logs], {
      codec: 'zstd',
      mode: 'inline',
    });
    expect(m.partitions).toBe(2);
    expect(m.reports.filter((r) => r.result === 'converted')).toHaveLength(2);
    expect(m.reports.filter((r) => r.result === 'failed')).toEqual([]);
  });

  it('with roots, a partition linked out of them refuses the whole run before anything is converted', async () => {
    const { logs, real } = await linkedPartition();
    const plain = path.join(logs, 'plain-0', SEG0);
    const before = [await readFile(real), await readFile(plain)];
    await expect(migrate([logs], { codec: 'zstd', mode: 'inline', roots: [logs] })).rejects.toThrow(
      PathOutsideRootsError,
    );
    expect([await readFile(real), await readFile(plain)]).toEqual(before);
  });
});

describe('backup and stage dirs are never a conversion target (16.7)', () => {
  it('a segment inside a marked backup dir (at any depth) or stage dir is refused in place and for a prepare; --out into one is refused', async () => {
    const root = await tmpDir();
    const backups = path.join(root, 'backups');
    const inBackup = await writeSegment(path.join(backups, 'deeper'), mixedSegment(0n).bytes);
    await writeFile(path.join(backups, '.seglift-backup'), '');
    const stage = path.join(root, 'stage');
    const inStage = await writeSegment(stage, mixedSegment(0n).bytes);
    await writeFile(path.join(stage, '.seglift-stage'), '');
    for (const log of [inBackup, inStage]) {
      const before = await readFile(log);
      for (const o of [
        { kind: 'inPlace' } as const,
        { kind: 'stage', dir: path.join(root, 'elsewhere') } as const,
      ]) {
        const r = await convertSegment(log, { codec: 'zstd' }, o);
        expect(r.result).toBe('failed');
        expect(r.error?.code).toBe('NOT_A_SEGMENT');
        expect(r.reason).toMatch(/inside the seglift (backup|stage) dir/);
      }
      expect(await readFile(log)).toEqual(before);
    }
    // A backup read into --out is only a source (a restore); --out into a backup dir would
    // replace the rollback copies.
    expect(
      (await convertSegment(inBackup, { codec: 'zstd' }, { kind: 'outDir', dir: path.join(root, 'out') }))
        .result,
    ).toBe('converted');
    const fresh = await writeSegment(path.join(root, 'logs'), mixedSegment(0n).bytes);
    const r = await convertSegment(
      fresh,
      { codec: 'zstd' },
      { kind: 'outDir', dir: path.join(backups, 'deeper', 'topic-0') },
    );
    expect(r.result).toBe('failed');
    expect(r.reason).toContain('the output dir lies inside the seglift backup dir');
  });
});

describe('a segment with more than one hard link is never rewritten in place (16.7)', () => {
  it('refused by name, with the other name left untouched; --out converts a copy', async () => {
    const root = await tmpDir();
    const outside = await writeSegment(path.join(root, 'outside'), mixedSegment(0n).bytes);
    const dir = path.join(root, 'logs', 'topic-0');
    await mkdir(dir, { recursive: true });
    const inside = path.join(dir, SEG0);
    await link(outside, inside);
    const before = await readFile(outside);
    const r = await convertSegment(inside, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.result).toBe('failed');
    expect(r.error?.code).toBe('NOT_A_SEGMENT');
    expect(r.reason).toContain(
      'has 2 hard links: a rewrite in place would leave the other name on the old bytes',
    );
    expect(await readFile(inside)).toEqual(before);
    expect((await stat(inside)).nlink).toBe(2);
    const m = await migrate([path.join(root, 'logs')], {
      codec: 'zstd',
      mode: 'inline',
      includeActive: true,
    });
    expect(m.reports.map((x) => x.result)).toEqual(['failed']);
    expect(
      (await convertSegment(inside, { codec: 'zstd' }, { kind: 'outDir', dir: path.join(root, 'out') }))
        .result,
    ).toBe('converted');
  });

  it('an .index with another name is refused too; a hard-linked segment already in the codec is skipped (no link broken)', async () => {
    const root = await tmpDir();
    const log = await writeSegment(root, mixedSegment(0n).bytes);
    const index = log.replace(/\.log$/, '.index');
    await writeFile(index, '');
    await link(index, path.join(root, 'other.index'));
    const r = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(r.reason).toContain(`${index} has 2 hard links`);
    const done = await writeSegment(path.join(root, 'b'), v2Batch(0n, [Buffer.from('z')], 4));
    await link(done, path.join(root, 'done-link'));
    const s = await convertSegment(done, { codec: 'zstd' }, { kind: 'inPlace' });
    expect([s.result, s.reason]).toEqual(['skipped', 'already-target-codec']);
  });
});
