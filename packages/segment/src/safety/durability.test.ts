/**
 * Durability (docs/reliability.md): what a swap must make durable, and in which order, observed
 * through the fsops layer every filesystem change goes through. A rename is durable only once its
 * directory is fsynced, and a renamed file's bytes only once the file itself was; without the
 * fsyncs checked here a power loss could leave a name pointing at missing data, or a later step
 * on disk without an earlier one (an `.index.swap` without its `.log.swap`).
 */
import { chmod, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { stepOf } from '../test-support/crash.js';
import { mixedSegment, tmpDir, writeSegmentWithIndexes } from '../test-support/fixtures.js';
import { recordFsOps } from '../test-support/helpers.js';
import type { FsOp } from '../test-support/seams.js';

const BASE = '00000000000000000000';

async function convertObserved(backup: boolean): Promise<{ ops: FsOp[]; pdir: string; backupDir?: string }> {
  const seg = mixedSegment();
  const dir = await tmpDir();
  const log = await writeSegmentWithIndexes(dir, seg.bytes);
  const pdir = path.dirname(log);
  await writeFile(path.join(pdir, `${BASE}.txnindex`), Buffer.alloc(34, 1));
  // Group-writable, as a broker with umask 002 leaves them: a copy created under umask 022 needs a
  // chmod, which must be as durable as the copy's bytes.
  for (const s of ['.log', '.index', '.timeindex', '.txnindex'])
    await chmod(path.join(pdir, `${BASE}${s}`), 0o664);
  const backupDir = backup ? path.join(dir, 'backup') : undefined;
  const { result: r, ops } = await recordFsOps(() =>
    convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', backupDir }),
  );
  expect(r.result).toBe('converted');
  return { ops, pdir, backupDir };
}

/**
 * Follows each file through its renames and links: every create, write, chown, chmod or utimes
 * makes it dirty, its fsync clean. Renaming or linking a dirty file is a violation (the name may
 * reach the disk without the bytes, owner or mode); lock files are linked into place.
 */
function renamesOfUnsyncedFiles(ops: FsOp[]): string[] {
  const dirty = new Map<string, boolean>();
  const bad: string[] = [];
  for (const [i, op] of ops.entries()) {
    if (['create', 'write', 'chown', 'chmod', 'utimes'].includes(op.kind)) dirty.set(op.path, true);
    else if (op.kind === 'fsync') dirty.set(op.path, false);
    else if (op.kind === 'rename' || op.kind === 'link') {
      const from = op.from as string;
      if (dirty.get(from) !== false) bad.push(`#${i} ${stepOf(op)} (from ${path.basename(from)})`);
      dirty.set(op.path, dirty.get(from) ?? true);
      if (op.kind === 'rename') dirty.delete(from);
    }
  }
  return bad;
}

/** Index of the first op after `from` matching `pred`, or -1. */
function nextIndex(ops: FsOp[], from: number, pred: (op: FsOp) => boolean): number {
  for (let i = from + 1; i < ops.length; i++) if (pred(ops[i])) return i;
  return -1;
}

describe('durability of an in-place swap (fsyncs observed through fsops)', () => {
  for (const backup of [false, true]) {
    it(`every file fsynced before its rename, the directory after each step${backup ? ', backups first' : ''}`, async () => {
      const { ops, pdir, backupDir } = await convertObserved(backup);
      // Steps in the partition directory (a backup's renames have the same names elsewhere).
      const stepAt = (step: string) =>
        ops.findIndex((op) => path.dirname(op.path) === pdir && stepOf(op) === step);
      const dirSync = (dir: string) => (op: FsOp) => op.kind === 'fsync-dir' && op.path === dir;
      const changesIn = (dir: string) => (op: FsOp) =>
        op.kind !== 'fsync' && op.kind !== 'fsync-dir' && path.dirname(op.path) === dir;

      // Every new file (rewritten files, the marker, copies of kept files, backups, locks)
      // reaches the disk with its bytes and metadata before any name of it does.
      expect(renamesOfUnsyncedFiles(ops)).toEqual([]);
      expect(ops.filter((op) => op.kind === 'link').length).toBeGreaterThanOrEqual(2); // both locks

      // The marker is the commit point: its bytes are durable before its rename, and the rename
      // is durable (directory fsynced) before any other change in the partition.
      const commit = stepAt('rename .seglift-swap');
      expect(commit).toBeGreaterThan(-1);
      expect(ops[commit].from).toMatch(/\.seglift-swap\.seglift-tmp$/);
      const commitSynced = nextIndex(ops, commit, dirSync(pdir));
      expect(commitSynced).toBeGreaterThan(commit);
      const nextChange = nextIndex(ops, commit, changesIn(pdir));
      expect(commitSynced).toBeLessThan(nextChange);

      // Each step of the swap is durable before the next begins: in particular `.index.swap`
      // never reaches the disk without the `.log.swap` beside it, and the old `.index` is gone
      // on disk before the new files appear under `.swap` names. `.index.swap` and the `.log`
      // rename share one fsync (swap.ts: either alone on disk is completed right; the power-loss
      // states are in crash.test.ts).
      const ordered = [
        'unlink .index',
        'rename .timeindex.swap',
        'rename .log.swap',
        'rename .index.swap',
        'rename .log',
        'unlink .seglift-swap',
      ];
      const sharedSync = new Set(['rename .index.swap']);
      const at = ordered.map(stepAt);
      expect(at.every((i) => i > commit)).toBe(true);
      for (let k = 0; k + 1 < at.length; k++) {
        expect(at[k]).toBeLessThan(at[k + 1]);
        const synced = nextIndex(ops, at[k], dirSync(pdir));
        if (sharedSync.has(ordered[k])) {
          expect(synced, `no fsync between ${ordered[k]} and ${ordered[k + 1]}`).toBeGreaterThan(at[k + 1]);
          continue;
        }
        expect(synced, `directory fsynced between ${ordered[k]} and ${ordered[k + 1]}`).toBeGreaterThan(
          at[k],
        );
        expect(synced, `directory fsynced between ${ordered[k]} and ${ordered[k + 1]}`).toBeLessThan(
          at[k + 1],
        );
      }
      // Every rename into a final name is durable before the marker goes; the marker's removal
      // needs no fsync of its own (a marker a power loss brings back is only removed again:
      // crash.test.ts).
      const lastRename = ops.findLastIndex((op) => op.kind === 'rename' && path.dirname(op.path) === pdir);
      const unmark = stepAt('unlink .seglift-swap');
      expect(lastRename).toBeLessThan(unmark);
      const finalSync = nextIndex(ops, lastRename, dirSync(pdir));
      expect(finalSync).toBeGreaterThan(lastRename);
      expect(finalSync).toBeLessThan(unmark);
      // Seven directory fsyncs in the partition for a swap with a kept file to copy (issue 26: nine
      // before): the commit point, the copies, the old index, .timeindex.swap, .log.swap, the
      // .log, the rest. Counted from the commit point's.
      expect(ops.slice(commit).filter(dirSync(pdir)).length).toBe(7);

      // Owner and mode survive: every file in place and every backup is group-writable as before.
      for (const d of [pdir, ...(backupDir ? [path.join(backupDir, path.basename(pdir))] : [])])
        for (const n of (await readdir(d)).filter((n) => n.startsWith(BASE) && !n.includes('.lock')))
          expect(((await stat(path.join(d, n))).mode & 0o777).toString(8), n).toBe('664');

      if (backupDir) {
        // Backups are durable, names and all, before the swap's commit point.
        const dest = path.join(backupDir, path.basename(pdir));
        const backups = ops.filter((op) => op.kind === 'rename' && path.dirname(op.path) === dest);
        expect(backups.map((op) => path.basename(op.path)).sort()).toEqual(
          [`${BASE}.index`, `${BASE}.log`, `${BASE}.timeindex`].sort(),
        );
        const lastBackup = ops.lastIndexOf(backups[backups.length - 1]);
        const destSynced = nextIndex(ops, lastBackup, dirSync(dest));
        expect(destSynced).toBeGreaterThan(lastBackup);
        expect(destSynced).toBeLessThan(commit);
      }
    });
  }
});
