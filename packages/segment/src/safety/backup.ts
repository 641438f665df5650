import { stat } from 'node:fs/promises';
import path from 'node:path';
import { InvalidArgumentError } from '@seglift/format';
import { PathOutsideRootsError, SegmentIoError } from '../files/errors.js';
import { exists, sameContent } from '../files/fs-util.js';
import {
  copyFileSynced,
  fsyncDir,
  mkdirp,
  removeIfExists,
  rename,
  setMtime,
  writeWholeFile,
} from '../files/fsops.js';
import { BACKUP_DIR_MARKER, LOG_SUFFIX, REWRITTEN, type SegmentFiles, TMP_SUFFIX } from '../files/names.js';
import { applyOwnership, ownershipOf } from '../files/ownership.js';
import { isInside as inside, realpathOfNearest as realPathOf } from './roots.js';

/**
 * Where a backup dir may be, one rule for every front door (migrate, its commit, convert
 * --in-place, a worker's in-place job): with `roots` configured, inside them, as every path
 * seglift writes (PathOutsideRootsError); and never inside a directory being migrated (its log
 * dirs, the dirs given) nor containing one (real paths, InvalidArgumentError): a later run would
 * walk into the backups and rewrite the rollback copies, an audit would count those partitions
 * twice, and a broker refuses to start beside a directory of its log dir that is not a partition.
 * Inside the roots is safe: every walk passes over a directory marked `.seglift-backup`.
 */
export async function assertBackupDirOutside(
  backupDir: string,
  migrated: readonly string[],
  roots: readonly string[] = [],
): Promise<void> {
  const backup = await realPathOf(backupDir);
  // A root not made yet (the backup dir itself, made at the first backup) by the real path it
  // will have, as the backup dir.
  const realRoots = await Promise.all(roots.map((r) => realPathOf(r)));
  if (roots.length > 0 && !realRoots.some((r) => inside(backup, r)))
    throw new PathOutsideRootsError(
      backupDir,
      roots,
      `backup dir ${backupDir} is outside the allowed roots: it is written to, so it must lie inside one (and outside every log dir)`,
    );
  for (const dir of migrated) {
    const real = await realPathOf(dir);
    if (inside(backup, real) || inside(real, backup)) {
      throw new InvalidArgumentError(
        `backup dir ${backupDir} ${inside(backup, real) ? 'is inside' : 'contains'} ${dir}, which is being migrated: choose a backup directory outside the log directories (a later run would rewrite the backups)`,
        { file: backupDir },
      );
    }
  }
}

/**
 * Copies the originals to backupDir/<partition dir>/, with their owner, mode and mtime to the
 * nanosecond (the .log's: `mtimeNs`, the one taken before the conversion). Never overwrites: an identical backup is kept (a rerun after a crash), a
 * different one refuses the rewrite (it may be the only copy of the true original).
 */
export async function backupOriginals(
  seg: SegmentFiles,
  backupDir: string,
  mtimeNs: bigint,
): Promise<string[]> {
  const dest = path.join(backupDir, path.basename(seg.dir));
  await mkdirp(dest);
  for (const d of [backupDir, dest]) {
    const marker = path.join(d, BACKUP_DIR_MARKER);
    if (!(await exists(marker)))
      await writeWholeFile(marker, 'seglift backups: never migrated, never counted\n', { sync: true });
  }
  const copies: { src: string; to: string; suffix: string }[] = [];
  const kept: string[] = [];
  for (const suffix of REWRITTEN) {
    const src = seg.file(suffix);
    if (!(await exists(src))) continue;
    const to = path.join(dest, path.basename(src));
    if (await exists(to)) {
      if (await sameContent(src, to)) {
        kept.push(to);
        continue;
      }
      throw new SegmentIoError(
        `backup ${to} already exists and differs from ${src}; refusing to overwrite it (move it away or use another --backup-dir)`,
        { file: to },
      );
    }
    copies.push({ src, to, suffix });
  }
  const written: string[] = [];
  try {
    for (const { src, to, suffix } of copies) {
      // Copied under a temporary name and renamed: a truncated copy (disk full, crash) never
      // sits under the original's name where it would pass for a backup.
      const partial = `${to}${TMP_SUFFIX}`;
      const owner = await ownershipOf(src);
      const st = await stat(src, { bigint: true });
      await copyFileSynced(src, partial, owner.mode, {
        finish: async (f) => {
          await applyOwnership(f, owner);
          await setMtime(f, suffix === LOG_SUFFIX ? mtimeNs : st.mtimeNs);
        },
      });
      written.push(to);
      await rename(partial, to);
    }
    await fsyncDir(dest);
    await fsyncDir(backupDir);
  } catch (err) {
    for (const { to } of copies) await removeIfExists(`${to}${TMP_SUFFIX}`).catch(() => {});
    for (const f of written) await removeIfExists(f).catch(() => {});
    throw err;
  }
  return [...kept, ...written];
}
