/**
 * The four placements of a rewrite (Kafka's LocalLog.replaceSegments is the one swap; here the
 * swap is swap.ts). Each reads the original's owners and mtime, has the rewrite write under temp
 * names, and puts the verified files where it says:
 * - `intoOutDir`: DIR/<base>.log/.index/.timeindex; the input is never touched;
 * - `inPlace`: swapped in under the segment and partition locks (swap.ts);
 * - `intoStage` (prepare): into a stage dir with a StageRecord of the source; nothing beside the
 *   source is written, renamed or locked;
 * - `inPlaceFromStage` (commit): the staged files swapped in when they still match the source
 *   and the settings (their bytes re-checked), else converted in place as usual.
 */
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { InvalidArgumentError } from '@seglift/format';
import { LostLockError } from '../files/errors.js';
import { exists } from '../files/fs-util.js';
import { fsyncDir, mkdirp, removeIfExists, rename } from '../files/fsops.js';
import type { SegmentFiles } from '../files/names.js';
import { assertCanKeepOwnership, ownershipOf } from '../files/ownership.js';
import { assertNotInMarkedDir, assertSingleLink, requireSegment } from '../files/segment-file.js';
import { markUnchanged } from '../rewrite/report.js';
import {
  alreadyConverted,
  type NewFileAttributes,
  resetSourceCounts,
  rewrite,
  tempFiles,
} from '../rewrite/rewrite.js';
import { LocalSegmentSource } from '../rewrite/source.js';
import { assertBackupDirOutside, backupOriginals } from '../safety/backup.js';
import {
  preparePartitionForConversion,
  preparePartitionForSwap,
  recoverLeftovers,
} from '../safety/leftovers.js';
import { acquirePartitionLock, acquireSegmentLock } from '../safety/lock.js';
import { swapInPlace } from '../safety/swap.js';
import { discardStaged, type SourceIdentity, sameIdentity, sourceIdentity } from '../stage/stage.js';
import { type Conversion, type Placement, SourceMovedError } from './conversion.js';
import { adoptStaged, newStageDigests, recordStaged } from './stage-placement.js';

/** Owner, group and mode of the files a broker opens read-write: the new files get them. */
async function ownersOf(src: SegmentFiles): Promise<NewFileAttributes['owners']> {
  const log = await ownershipOf(src.log);
  return {
    log,
    index: (await ownershipOf(src.index).catch(() => undefined)) ?? log,
    timeindex: (await ownershipOf(src.timeindex).catch(() => undefined)) ?? log,
  };
}

/**
 * The new files' attributes: the originals' owners, and the .log's mtime to the nanosecond (a
 * rewrite changes no time; retention falls back to it). Also the report's bytesIn, as it is now.
 */
async function originalAttributes(c: Conversion, src: SegmentFiles, ownerBestEffort: boolean) {
  const owners = await ownersOf(src);
  if (!ownerBestEffort) for (const o of [owners.index, owners.timeindex]) assertCanKeepOwnership(o, src.log);
  const before = await stat(src.log, { bigint: true });
  c.report.bytesIn = Number(before.size);
  return { owners, mtimeNs: before.mtimeNs, ownerBestEffort };
}

/** An out dir or a stage: the directory made (and remembered) for the new files. */
async function makeDir(c: Conversion, src: SegmentFiles, dest: SegmentFiles): Promise<void> {
  c.madeOutDir = await mkdirp(dest.dir);
  if (dest.log === src.log) throw new InvalidArgumentError('outDir is the segment directory');
}

/** Plain replace of the three files in an out dir or a stage; log last, so a .log implies its indexes. */
async function renameIntoPlace(c: Conversion, dest: SegmentFiles): Promise<void> {
  const tmp = tempFiles(dest);
  for (const [from, to] of [
    [tmp.timeindex, dest.timeindex],
    [tmp.index, dest.index],
    [tmp.log, dest.log],
  ]) {
    await rename(from, to);
    c.placed.push(to);
  }
  await fsyncDir(dest.dir);
  c.report.outPath = dest.log;
}

/**
 * Into an out dir. A segment already in the target codec is copied (the same path: every batch
 * copied byte for byte, indexes rebuilt, verified), so that the out dir holds every segment given.
 */
export async function intoOutDir(c: Conversion, outDir: string): Promise<void> {
  const { settings, hooks, report } = c;
  const { files: src, size } = await requireSegment(c.logPath, 'read');
  await assertNotInMarkedDir(outDir, outDir, 'the output dir');
  report.bytesIn = size;
  const attributes = await originalAttributes(c, src, true);
  const dest = src.in(path.resolve(outDir));
  c.dest = dest;
  const source = new LocalSegmentSource(src.log, src.baseOffset);
  const copyOnly = !settings.force && (await alreadyConverted(source, settings, report, hooks));
  resetSourceCounts(report);
  await makeDir(c, src, dest);
  await rewrite(source, { settings, hooks, into: dest, attributes, report });
  await renameIntoPlace(c, dest);
  if (copyOnly) markUnchanged(report, 'copied');
  else report.result = 'converted';
}

/**
 * Prepare of a two-phase migration: the verified rewrite and a StageRecord of the source into
 * `stagePartition` (stage.ts). A source that vanished or was replaced while it was read is
 * reported skipped ('source-gone', 'source-changed'), with nothing staged.
 */
export async function intoStage(c: Conversion, stagePartition: string): Promise<void> {
  // The source as it was before the first read (every read comes after it).
  let staged: SourceIdentity | undefined;
  try {
    // A prepare is refused what its commit would refuse (a symlinked .log), while the broker runs.
    const { files: src, size } = await requireSegment(c.logPath, 'in-place');
    c.report.bytesIn = size;
    staged = await sourceIdentity(src.log);
    if (staged === undefined) throw new SourceMovedError(src.log);
    await stageRewrite(c, src, stagePartition, staged);
  } catch (err) {
    await c.removeOutputs();
    // Not a failure of a prepare: nothing is staged, and the commit converts whatever is there then.
    const now = await sourceIdentity(c.logPath).catch(() => undefined);
    if (now === undefined || (staged !== undefined && !sameIdentity(now, staged))) {
      c.skipped(now === undefined ? 'source-gone' : 'source-changed');
      c.report.stage = now === undefined ? 'gone' : 'changed';
      return;
    }
    throw err;
  }
}

async function stageRewrite(
  c: Conversion,
  src: SegmentFiles,
  stagePartition: string,
  staged: SourceIdentity,
) {
  const { settings, hooks, report } = c;
  const attributes = await originalAttributes(c, src, true);
  const dest = src.in(path.resolve(stagePartition));
  c.dest = dest;
  const digests = newStageDigests();
  const source = new LocalSegmentSource(src.log, src.baseOffset);
  const record = {
    src,
    dest,
    settings,
    source: staged,
    digests,
    report,
    mtimeNs: attributes.mtimeNs,
  };
  if (
    !settings.force &&
    (await alreadyConverted(source, settings, report, { signal: hooks.signal, digest: digests.source }))
  ) {
    markUnchanged(report, 'skipped');
    // Nothing to stage: a record saying so.
    await recordStaged({ ...record, withFiles: false });
    return;
  }
  // Only what is rewritten: a skip breaks no link. A prepare too: its commit would.
  await assertSingleLink(src);
  digests.source = createHash('sha256');
  resetSourceCounts(report);
  await makeDir(c, src, dest);
  await rewrite(source, { settings, hooks, into: dest, attributes, report, digests });
  // Staged only when the source is still the file read (a retention delete or a cleaner's
  // replacement while it was read makes a new inode or a missing file).
  if (!sameIdentity(await sourceIdentity(src.log), staged)) throw new SourceMovedError(src.log);
  // An older staged segment of this base is replaced: its record goes first.
  await removeIfExists(dest.stageRecord);
  await renameIntoPlace(c, dest);
  await recordStaged({ ...record, withFiles: true });
  report.result = 'converted';
}

/** A segment converted in place, past its locks and checks (see `openInPlace`). */
interface InPlaceSegment {
  src: SegmentFiles;
  /** The source as it was before the first read, compared again right before the swap. */
  read: SourceIdentity;
  attributes: NewFileAttributes;
}

/** Where an in-place conversion puts the originals, and what it checks before it reads. */
type InPlaceOptions = Omit<Extract<Placement, { kind: 'inPlace' }>, 'kind'>;

/** In place: rewritten beside the original and swapped in (swap.ts). */
export async function inPlace(c: Conversion, how: InPlaceOptions): Promise<void> {
  await unlessSourceMoved(c, async () => {
    const seg = await openInPlace(c, how);
    if (seg === undefined || !(await rewriteInPlace(c, seg))) return;
    await swap(c, seg, how.backupDir);
    c.report.result = 'converted';
  });
}

/**
 * Commit of a two-phase migration, in place: the segment staged in `stagePartition` is swapped
 * in (the same swap) when its record still matches the source and the settings and its files
 * their digests; otherwise the staged files are discarded and the segment converted as usual.
 */
export async function inPlaceFromStage(
  c: Conversion,
  stagePartition: string,
  backupDir: string | undefined,
): Promise<void> {
  await unlessSourceMoved(c, async () => {
    const seg = await openInPlace(c, { backupDir }, stagePartition);
    if (seg === undefined) return;
    const { src, attributes } = seg;
    const staged = await adoptStaged({
      src,
      stagePartition,
      settings: c.settings,
      report: c.report,
      attributes,
    });
    if (staged !== 'adopted') {
      // A conversion now: the partition's other swaps are not kept waiting for it.
      await c.held?.release();
      c.held = undefined;
      if (staged === 'unchanged' || !(await rewriteInPlace(c, seg))) return;
    } else await assertSingleLink(src);
    await swap(c, seg, backupDir);
    // Committed: the staged copies are the swapped-in files now (links); the record goes.
    if (staged === 'adopted') await discardStaged(stagePartition, src.baseOffset).catch(() => {});
    c.report.result = 'converted';
  });
}

/** In place, a source written meanwhile is not swapped: skipped, a later run converts it once quiet. */
async function unlessSourceMoved(c: Conversion, body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (err) {
    if (!(err instanceof SourceMovedError)) throw err;
    await c.removeOutputs();
    c.skipped('source-changed');
  }
}

/**
 * The checks and locks of a conversion in place, up to its first read; undefined when the
 * segment is skipped (still changing).
 */
async function openInPlace(
  c: Conversion,
  how: InPlaceOptions,
  stagePartition?: string,
): Promise<InPlaceSegment | undefined> {
  const { hooks, report } = c;
  const { files: src, size } = await requireSegment(c.logPath, 'in-place');
  report.bytesIn = size;
  // Refused before anything is written when the new files could not get the original's owner.
  assertCanKeepOwnership(await ownershipOf(src.log), src.log);
  if (how.backupDir) await assertBackupDirOutside(how.backupDir, [src.dir]);
  if (how.lock !== false) c.lock = await acquireSegmentLock(src.log);
  // Leftovers of a crash completed; and a broker completing Kafka's own unfinished swap deletes
  // segment files by offset range: never rewrite beside one (checked again under the partition
  // lock right before the swap).
  if (
    hooks.partitionLocks !== undefined ||
    (stagePartition !== undefined && (await exists(src.in(stagePartition).stageRecord)))
  )
    c.held = await partitionLock(c, src);
  await preparePartitionForConversion(src, c.lock?.token, hooks.signal, c.held !== undefined);
  // Read under the segment lock (another run may have been swapping this segment until now;
  // recoverLeftovers may have completed it).
  const attributes = await originalAttributes(c, src, false);
  // The source as it is before the first read: nothing is swapped in for one that changed since
  // (an archive copy still writing it would send the rest of its bytes to the replaced inode:
  // reliability §16.4).
  const read = await sourceIdentity(src.log);
  if (read === undefined) throw new SourceMovedError(src.log);
  if (how.quietMs !== undefined && Date.now() - Number(BigInt(read.mtimeNs) / 1_000_000n) < how.quietMs) {
    c.skipped('still-changing');
    return undefined;
  }
  c.dest = src.in(src.dir);
  return { src, read, attributes };
}

/** The rewrite beside the original; false when the segment is already in the target codec (skipped). */
async function rewriteInPlace(c: Conversion, seg: InPlaceSegment): Promise<boolean> {
  const { settings, hooks, report } = c;
  const source = new LocalSegmentSource(seg.src.log, seg.src.baseOffset);
  if (!settings.force && (await alreadyConverted(source, settings, report, hooks))) {
    markUnchanged(report, 'skipped');
    return false;
  }
  // Only what is rewritten: a skip breaks no link.
  await assertSingleLink(seg.src);
  resetSourceCounts(report);
  await rewrite(source, { settings, hooks, into: c.dest!, attributes: seg.attributes, report });
  return true;
}

/** The partition lock: the one the run holds over the partition's swaps (a commit), or taken now. */
function partitionLock(c: Conversion, src: SegmentFiles) {
  const { partitionLocks, signal } = c.hooks;
  return partitionLocks
    ? partitionLocks.take(src.dir, { signal })
    : acquirePartitionLock(src.dir, { signal });
}

/** The verified temp files swapped in (swap.ts), under the partition lock. */
async function swap(
  c: Conversion,
  { src, read, attributes }: InPlaceSegment,
  backupDir: string | undefined,
): Promise<void> {
  const { hooks, report } = c;
  if (backupDir) report.backupPaths = await backupOriginals(src, backupDir, attributes.mtimeNs);
  // Waiting for another segment's swap can be interrupted; the swap itself never is.
  const lock = c.held ?? (await partitionLock(c, src));
  c.held = undefined;
  let swapping = false;
  try {
    await preparePartitionForSwap(src, c.lock?.token);
    await hooks.beforeSwap?.();
    if (!sameIdentity(await sourceIdentity(src.log), read)) throw new SourceMovedError(src.log);
    hooks.signal?.throwIfAborted();
    swapping = true;
    // Both locks re-read before each rename: a run frozen past the stale time must not rename
    // files another run has taken over since.
    await swapInPlace(src, attributes.mtimeNs, async () => {
      await c.lock?.assertHeld();
      await lock.assertHeld();
    });
  } catch (err) {
    // Once the marker is written the swap is completed, by this run or the next one
    // (recoverLeftovers); before it, the conversion's failure removes the temp files. A lost
    // lock: the partition is the other run's now, so nothing is completed or removed here.
    if (swapping && !(err instanceof LostLockError))
      await recoverLeftovers(src.dir, {
        baseOffset: src.baseOffset,
        ownLockToken: c.lock?.token,
        partitionLockHeld: true,
      }).catch(() => {});
    throw err;
  } finally {
    await lock.release().catch(() => {});
  }
  report.outPath = src.log;
}
