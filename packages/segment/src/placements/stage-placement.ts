/**
 * The stage's side of two placements (placements.ts): what a prepare records beside the files it
 * staged, and what a commit checks before it swaps staged files in (stage.ts has the records and
 * the identity rules).
 */
import { createHash, type Hash } from 'node:crypto';
import { statNow } from '../files/fs-util.js';
import { fsyncFile, link, mkdirp, removeIfExists, setMtime } from '../files/fsops.js';
import { INDEX_SUFFIX, LOG_SUFFIX, SegmentFiles, TIMEINDEX_SUFFIX } from '../files/names.js';
import { applyOwnership, type Ownership } from '../files/ownership.js';
import { markUnchanged, type SegmentReport } from '../rewrite/report.js';
import {
  alreadyConverted,
  assertIndexesFit,
  type NewFileAttributes,
  type RewriteSettings,
  resetSourceCounts,
  type StageDigests,
  tempFiles,
} from '../rewrite/rewrite.js';
import { LocalSegmentSource } from '../rewrite/source.js';
import {
  discardStaged,
  readStageRecordOrProblem,
  type SourceIdentity,
  STAGED,
  type StageRecord,
  sameIdentity,
  sampleDigest,
  sourceIdentity,
  stagedFileMismatch,
  stagedFilesProblem,
  stagedSegmentMismatch,
  stageOptionsKey,
  staleReason,
  writeStageRecord,
} from '../stage/stage.js';
import { SourceMovedError } from './conversion.js';

export function newStageDigests(): StageDigests {
  return {
    source: createHash('sha256'),
    log: createHash('sha256'),
    index: createHash('sha256'),
    timeindex: createHash('sha256'),
  };
}

/** What a prepare records (see `recordStaged`). */
export interface StagedConversion {
  src: SegmentFiles;
  /** The segment in the stage partition directory. */
  dest: SegmentFiles;
  settings: RewriteSettings;
  /** The source as it was before the first read. */
  source: SourceIdentity;
  digests: StageDigests;
  report: SegmentReport;
  mtimeNs: bigint;
  /** false: the source is already in the target codec, nothing staged but the record saying so. */
  withFiles: boolean;
}

/**
 * Prepare: the record that makes the files just placed in the stage dir a staged segment (or,
 * `withFiles` false, says the source is already in the target codec). The source is sampled and
 * must still be the file read.
 */
export async function recordStaged(s: StagedConversion): Promise<void> {
  const { src, dest, report } = s;
  let files: StageRecord['files'] = null;
  if (s.withFiles) files = await stagedFiles(dest, s.digests);
  else {
    // Nothing to stage: whatever an earlier prepare staged for this base goes.
    await mkdirp(dest.dir);
    await discardStaged(dest.dir, src.baseOffset);
  }
  const sampleSha256 = await sampleDigest(src.log, s.source.size);
  if (!sameIdentity(await sourceIdentity(src.log), s.source)) throw new SourceMovedError(src.log);
  await writeStageRecord(dest.dir, {
    tool: 'seglift',
    kind: 'stage',
    version: 2,
    prefix: src.prefix,
    source: {
      ...s.source,
      sha256: s.digests.source.digest('hex'),
      sampleSha256,
      mtimeMs: Number(s.mtimeNs / 1_000_000n),
    },
    options: stageOptionsKey(s.settings),
    files,
    counts: {
      batchesIn: report.batchesIn,
      batchesOut: report.batchesOut,
      recordsIn: report.recordsIn,
      recordsOut: report.recordsOut,
      codecMixIn: report.codecMixIn,
      codecOut: report.codecOut,
    },
    stagedAt: new Date().toISOString(),
  });
  report.stage = 'staged';
  report.outPath = s.withFiles ? dest.log : undefined;
}

/** The staged files as the record gives them: size, inode, and the sha256 of what was written. */
async function stagedFiles(
  dest: SegmentFiles,
  digests: StageDigests,
): Promise<Record<string, StagedFileRecord>> {
  const files: Record<string, StagedFileRecord> = {};
  const hashes: Record<string, Hash> = {
    [LOG_SUFFIX]: digests.log,
    [INDEX_SUFFIX]: digests.index,
    [TIMEINDEX_SUFFIX]: digests.timeindex,
  };
  for (const s of STAGED) {
    const st = statNow(dest.file(s), { bigint: true });
    files[s] = { size: Number(st.size), ino: String(st.ino), sha256: hashes[s].digest('hex') };
  }
  return files;
}

type StagedFileRecord = NonNullable<StageRecord['files']>[string];

/** What a commit adopts from (see `adoptStaged`). */
export interface StagedCommit {
  src: SegmentFiles;
  stagePartition: string;
  settings: RewriteSettings;
  report: SegmentReport;
  attributes: NewFileAttributes;
}

/**
 * Commit, in place, under the segment lock: links the staged files to the temp names the swap
 * expects when the record still matches the source and the settings, and the linked files are
 * still the bytes prepare wrote and verified, and this segment's rewrite ('adopted'); a record
 * saying the source is already in the target codec makes the report a skip once the source is
 * read and found so ('unchanged'); a stale record is discarded ('stale'), and the segment is
 * converted as usual. What the stage holds that prepare did not leave so (a record that is not
 * one, staged files of another size, inode or content, another segment's, a false claim of the
 * target codec) is discarded the same way and reported (stage 'corrupt', a reason: a warning).
 */
export async function adoptStaged(s: StagedCommit): Promise<'absent' | 'stale' | 'unchanged' | 'adopted'> {
  const { src, stagePartition, report } = s;
  const read = await readStageRecordOrProblem(stagePartition, src.baseOffset);
  if (read === undefined) return 'absent';
  if ('invalid' in read) {
    await discardStaged(stagePartition, src.baseOffset);
    corrupt(report, src, read.invalid);
    return 'stale';
  }
  const record = read;
  const stale = await staleReason(record, src.log, stageOptionsKey(s.settings), stagePartition);
  if (stale !== undefined) {
    const problem = stale === 'staged-files' ? stagedFilesProblem(record, stagePartition) : undefined;
    await discardStaged(stagePartition, src.baseOffset);
    if (problem !== undefined) corrupt(report, src, problem);
    else report.stage = 'discarded';
    return 'stale';
  }
  if (record.files === null) {
    // A claim about the source, which nothing staged can prove: the source is read (no write).
    await discardStaged(stagePartition, src.baseOffset);
    if (await alreadyConverted(new LocalSegmentSource(src.log, src.baseOffset), s.settings, report)) {
      report.stage = 'committed';
      markUnchanged(report, 'skipped');
      return 'unchanged';
    }
    resetSourceCounts(report);
    corrupt(report, src, 'stage record says the source is already in the target codec, and it is not');
    return 'stale';
  }
  const files = record.files;
  if (await new LocalSegmentSource(src.log, src.baseOffset).isActive())
    assertIndexesFit(src.log, files[INDEX_SUFFIX].size, files[TIMEINDEX_SUFFIX].size, s.settings);
  if (!(await linkStaged(s, record))) return 'stale';
  Object.assign(report, record.counts);
  report.stage = 'committed';
  report.bytesOut = files[LOG_SUFFIX].size;
  await giveAttributes(s);
  // No fsync of the directory here: unmarked temp names are nothing to a crash (deleted), and
  // the swap's marker is fsynced with the directory before anything depends on these links.
  return 'adopted';
}

/** A staged segment discarded because the stage held what prepare did not leave so: reported. */
function corrupt(report: SegmentReport, src: SegmentFiles, why: string): void {
  report.stage = 'corrupt';
  report.reason = `staged copy of ${src.prefix} discarded (${why}): converted at commit`;
}

/**
 * Links the staged files to the swap's temp names and checks them there; false (and everything
 * staged discarded) when one is not the file prepare wrote, or they are not this segment's.
 */
async function linkStaged(
  { src, stagePartition, report, settings }: StagedCommit,
  record: StageRecord,
): Promise<boolean> {
  // Links, not renames: a crash before the swap's marker leaves the stage whole for a rerun
  // (recoverLeftovers deletes unmarked temp files; they are only the second names).
  const staged = new SegmentFiles(stagePartition, src.baseOffset);
  for (const s of STAGED) {
    await removeIfExists(src.tmp(s));
    await link(staged.file(s), src.tmp(s));
  }
  // Checked through the links: the very inodes the swap renames in. Nothing else checks these
  // bytes again (verify read them in prepare, maybe days ago).
  const links = {
    [LOG_SUFFIX]: src.tmp(LOG_SUFFIX),
    [INDEX_SUFFIX]: src.tmp(INDEX_SUFFIX),
    [TIMEINDEX_SUFFIX]: src.tmp(TIMEINDEX_SUFFIX),
  };
  const bad = await stagedFileMismatch(record, links);
  // The bytes prepare wrote; and this segment's rewrite (a record can point at any staged files).
  const notOurs =
    bad === undefined
      ? await stagedSegmentMismatch(
          record,
          links,
          { log: src.log, index: src.index, baseOffset: src.baseOffset },
          settings.indexIntervalBytes,
        )
      : undefined;
  if (bad === undefined && notOurs === undefined) return true;
  for (const s of STAGED) await removeIfExists(src.tmp(s));
  await discardStaged(stagePartition, src.baseOffset);
  if (bad !== undefined) {
    report.stage = 'corrupt';
    report.reason = `staged copy failed its check (${bad.what} of ${src.prefix}${bad.suffix} differs from the stage record): converted at commit`;
  } else corrupt(report, src, `not this segment's rewrite: ${notOurs}`);
  return false;
}

/** Prepare gave the staged files the owners and mtime where it could; anything else is set now (and synced). */
async function giveAttributes({ src, attributes }: StagedCommit): Promise<void> {
  const tmp = tempFiles(src.in(src.dir));
  const { owners, mtimeNs } = attributes;
  const wanted: [string, Ownership][] = [
    [tmp.log, owners.log],
    [tmp.index, owners.index],
    [tmp.timeindex, owners.timeindex],
  ];
  for (const [f, o] of wanted) {
    const st = statNow(f, { bigint: true });
    let changed = false;
    if (Number(st.uid) !== o.uid || Number(st.gid) !== o.gid || (Number(st.mode) & 0o7777) !== o.mode) {
      await applyOwnership(f, o);
      changed = true;
    }
    if (st.mtimeNs !== mtimeNs) {
      await setMtime(f, mtimeNs);
      changed = true;
    }
    if (changed) await fsyncFile(f);
  }
}
