/**
 * A run frozen (SIGSTOP, a VM pause) past LOCK_STALE_AFTER_MS stops touching its locks, and
 * another run takes them over as stale while it still lives. When it resumes it must notice
 * before it renames anything: the swap re-reads both locks' tokens before the marker and before
 * each rename. Here "another run took the lock" is the lock file rewritten with another token at
 * a chosen filesystem step of the swap.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { SegmentFiles } from '../files/names.js';
import { convertSegment } from '../placements/convert.js';
import { mixedSegment, tmpDir, writeSegment } from '../test-support/fixtures.js';
import { ls, sha256 } from '../test-support/helpers.js';
import { independentRecords } from '../test-support/independent.js';
import { foreignLock } from '../test-support/lock-fixtures.js';
import { type FsOp, observeFsOps } from '../test-support/seams.js';
import { lockPathFor, partitionLockPath } from './lock.js';

async function segment() {
  const seg = mixedSegment(0n, 11);
  const log = await writeSegment(await tmpDir('seglift-lost-lock-'), seg.bytes, 0n);
  return { log, files: SegmentFiles.ofLog(log)!, records: await independentRecords(seg.bytes) };
}

/** Converts `log` in place; right after the op `when` matches, `lockFile` gets another run's token. */
async function convertLosingLock(log: string, lockFile: string, when: (op: FsOp) => boolean) {
  const ops: FsOp[] = [];
  let lostAt = -1;
  const stop = observeFsOps((op) => {
    ops.push(op);
    if (lostAt < 0 && when(op)) {
      lostAt = ops.length;
      writeFileSync(lockFile, foreignLock('7d2c3b9e-0000-4000-8000-00000000beef'));
    }
  });
  try {
    const report = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(lostAt).toBeGreaterThan(0);
    return { report, after: ops.slice(lostAt) };
  } finally {
    stop();
  }
}

describe('a run that lost its lock to another run', () => {
  it('segment lock taken over before the marker: LockedError "lost its lock", skipped, nothing renamed', async () => {
    const { log, files } = await segment();
    const original = await sha256(log);
    const { report, after } = await convertLosingLock(
      log,
      lockPathFor(log),
      (op) => op.kind === 'fsync' && op.path === files.tmp('.seglift-swap'),
    );
    expect(report.result).toBe('skipped');
    expect(report.error).toMatchObject({ name: 'LostLockError', code: 'LOCKED', file: lockPathFor(log) });
    expect(report.reason).toMatch(
      /^lost its lock to another run \(the segment lock is held by pid 1 on worker-7f9c-other-node since /,
    );
    // Nothing renamed or removed after the takeover (but the partition lock it still held): the
    // files are the other run's now.
    expect(after.filter((op) => op.kind === 'rename' || op.kind === 'unlink').map((op) => op.path)).toEqual([
      partitionLockPath(files.dir),
    ]);
    expect(await sha256(log)).toBe(original);
    // Its temp files stay for the other run (same names); the foreign lock is not released.
    expect(await ls(files.dir)).toContain('00000000000000000000.log.seglift-tmp');
    expect(JSON.parse(await readFile(lockPathFor(log), 'utf8')).host).toBe('worker-7f9c-other-node');
  });

  it('partition lock taken over mid-swap: stops before the next rename; the run holding it completes the swap', async () => {
    const { log, files, records } = await segment();
    const { report, after } = await convertLosingLock(
      log,
      partitionLockPath(files.dir),
      (op) => op.kind === 'rename' && op.path === files.swap('.log'),
    );
    expect(report.result).toBe('skipped');
    expect(report.error).toMatchObject({ code: 'LOCKED', file: partitionLockPath(files.dir) });
    expect(report.reason).toMatch(/^lost its lock to another run \(the partition lock is held by /);
    // Only its own segment lock released.
    expect(after.filter((op) => op.kind === 'rename' || op.kind === 'unlink').map((op) => op.path)).toEqual([
      lockPathFor(log),
    ]);
    const left = await ls(files.dir);
    expect(left).toContain('00000000000000000000.seglift-swap');
    expect(left).toContain('00000000000000000000.log.swap');
    // The other run (here: the next one, once that run's locks are gone) rolls the swap forward.
    rmSync(partitionLockPath(files.dir));
    rmSync(lockPathFor(log), { force: true });
    const next = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(next).toMatchObject({ result: 'skipped', reason: 'already-target-codec' });
    expect(await independentRecords(await readFile(log))).toEqual(records);
    expect((await ls(files.dir)).filter((n) => n.includes('seglift') || n.endsWith('.swap'))).toEqual([]);
  });
});
