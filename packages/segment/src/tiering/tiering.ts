/**
 * What tiered storage (KIP-405) needs of a closed segment that an old broker did not leave
 * (issue 25, docs/operator-guide.md "Enabling tiered storage on an old topic"):
 *
 * - its segment-aligned producer snapshot, `<next segment's base offset>.snapshot`: the copy task
 *   (RemoteLogManager.copyLogSegment) passes `fetchSnapshot(nextSegmentBaseOffset).orElse(null)
 *   .toPath()` and fails with a NullPointerException without it. Brokers before 2.8 kept no
 *   snapshot per segment. Written here from a replay of every batch in offset order
 *   (ProducerStateReplay), never over a file that exists.
 * - leader epochs covering it: RemoteLogSegmentMetadata refuses an empty map of segment leader
 *   epochs (IllegalArgumentException "segmentLeaderEpochs can not be null or empty"), and a
 *   segment wholly before the first entry of `leader-epoch-checkpoint` gets one (epochEntriesInRange
 *   drops every entry at or after its end). That is data written before 0.11, or while the
 *   message format was below 0.11 (those brokers deleted the file; Kafka 4 starts it at the log
 *   end offset). The first entry's start offset is moved down to the first segment's base offset:
 *   no epoch's end offset changes (what followers truncate by), and Kafka itself moves that start
 *   offset when the log start moves (LeaderEpochFileCache.truncateFromStart).
 *
 * Files only with the broker stopped: callers hold `<log.dir>/.lock` (prepareTiering does).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  CorruptRecordError,
  decodeProducerSnapshot,
  encodeProducerSnapshot,
  type ProducerSnapshotEntry,
  ProducerStateReplay,
  readRecordBatchHeader,
  SegliftError,
} from '@seglift/format';
import { findPartitionSegments, type PartitionSegments } from '../discovery/discovery.js';
import { exists } from '../files/fs-util.js';
import {
  fsyncDir,
  link,
  openForWrite,
  removeIfExists,
  rename,
  syncHandle,
  writeAll,
} from '../files/fsops.js';
import { formatBaseOffset, SNAPSHOT_SUFFIX, TMP_SUFFIX } from '../files/names.js';
import { applyOwnership, assertCanKeepOwnership, ownershipOf } from '../files/ownership.js';
import { readSegmentEntries } from '../rewrite/reader.js';
import { holdLogDirLocks } from '../safety/logdir-lock.js';

export const LEADER_EPOCH_CHECKPOINT = 'leader-epoch-checkpoint';

export interface EpochEntry {
  epoch: number;
  startOffset: bigint;
}

/**
 * LeaderEpochCheckpointFile: `0`, the entry count, then `<epoch> <startOffset>` lines. An empty
 * file has no entries (CheckpointFile.CheckpointReadBuffer.read: no first line, an empty list):
 * Kafka 3.9 leaves one beside magic 0/1 data, which has no leader epochs.
 */
export function parseLeaderEpochCheckpoint(text: string, file?: string): EpochEntry[] {
  const lines = text.split('\n').filter((l) => l.length > 0);
  if (text.length === 0) return [];
  if (lines[0] !== '0')
    throw new CorruptRecordError(`leader epoch checkpoint version ${JSON.stringify(lines[0])}, expected 0`, {
      file,
    });
  const count = Number(lines[1]);
  if (!Number.isInteger(count) || count !== lines.length - 2)
    throw new CorruptRecordError(
      `leader epoch checkpoint says ${lines[1]} entries, holds ${lines.length - 2}`,
      { file },
    );
  return lines.slice(2).map((l) => {
    const m = /^(\d+) (\d+)$/.exec(l);
    if (!m) throw new CorruptRecordError(`leader epoch checkpoint entry ${JSON.stringify(l)}`, { file });
    return { epoch: Number(m[1]), startOffset: BigInt(m[2]) };
  });
}

export function formatLeaderEpochCheckpoint(entries: readonly EpochEntry[]): string {
  return `0\n${entries.length}\n${entries.map((e) => `${e.epoch} ${e.startOffset}\n`).join('')}`;
}

/** What a partition lacks for tiered storage, from file names and the checkpoint only (no data read). */
export interface TieringState {
  partitionDir: string;
  /** Segments but the active one. */
  closedSegments: number;
  /** Snapshot offsets (the next segment's base offset) of closed segments without one. */
  missingSnapshots: bigint[];
  /** First entry of leader-epoch-checkpoint; undefined when the file is absent or empty. */
  firstEpoch?: EpochEntry;
  /** Closed segments that end before the first leader epoch entry (or all, with no entry). */
  segmentsBeforeFirstEpoch: number;
  /**
   * Closed segments and no leader epoch entry at all: tier-prepare cannot make the partition
   * tierable until the broker has written one (audit gives that advice).
   */
  epochsMissing: boolean;
}

export async function tieringState(
  p: Pick<PartitionSegments, 'partitionDir' | 'segments'>,
): Promise<TieringState> {
  const closed = p.segments.slice(0, -1);
  const missingSnapshots: bigint[] = [];
  for (let i = 0; i < closed.length; i++) {
    const next = p.segments[i + 1].baseOffset;
    if (!(await exists(path.join(p.partitionDir, formatBaseOffset(next) + SNAPSHOT_SUFFIX))))
      missingSnapshots.push(next);
  }
  const epochs = await readEpochs(p.partitionDir);
  const firstEpoch = epochs[0];
  let segmentsBeforeFirstEpoch = 0;
  for (let i = 0; i < closed.length; i++)
    if (firstEpoch === undefined || p.segments[i + 1].baseOffset <= firstEpoch.startOffset)
      segmentsBeforeFirstEpoch++;
  return {
    partitionDir: p.partitionDir,
    closedSegments: closed.length,
    missingSnapshots,
    firstEpoch,
    segmentsBeforeFirstEpoch,
    epochsMissing: firstEpoch === undefined && closed.length > 0,
  };
}

async function readEpochs(partitionDir: string): Promise<EpochEntry[]> {
  const file = path.join(partitionDir, LEADER_EPOCH_CHECKPOINT);
  const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw e;
  });
  return text === undefined ? [] : parseLeaderEpochCheckpoint(text, file);
}

export interface PartitionTieringResult extends TieringState {
  /** Snapshot files written, by offset. */
  written: bigint[];
  /** The leader epoch checkpoint's first entry was moved down to cover every segment. */
  epochsExtended: boolean;
  /** A partition whose epochs could not be made to cover its segments (no checkpoint entry at all). */
  epochsMissing: boolean;
  /** Snapshots Kafka wrote that the replay was checked against (every entry equal). */
  verifiedAgainstKafka: number;
  /**
   * A snapshot Kafka wrote disagrees with the replay (or does not decode): nothing more is
   * written for this partition, and this says where and how.
   */
  mismatch?: string;
}

export interface PrepareTieringOptions {
  /** Report what would be written, write nothing (no lock taken). */
  dryRun?: boolean;
  onPartition?: (r: PartitionTieringResult) => void;
}

/**
 * Makes every closed segment under `root` tierable: writes the missing segment-aligned producer
 * snapshots and extends the leader epochs down to the first segment. Holds every log dir's
 * `.lock` throughout (LogDirLockedError while a broker runs).
 */
export async function prepareTiering(
  root: string,
  options: PrepareTieringOptions = {},
): Promise<PartitionTieringResult[]> {
  // Kafka's own topics (`__consumer_offsets`, `__remote_log_metadata`...) are never tiered.
  const partitions = (await findPartitionSegments(root)).partitions.filter(
    (p) => !path.basename(p.partitionDir).startsWith('__'),
  );
  const held = options.dryRun ? undefined : holdLogDirLocks(partitions.flatMap((p) => p.logDirs));
  try {
    const results: PartitionTieringResult[] = [];
    for (const p of partitions) {
      const r = await preparePartition(p, options.dryRun === true);
      results.push(r);
      options.onPartition?.(r);
    }
    return results;
  } finally {
    held?.release();
  }
}

async function preparePartition(p: PartitionSegments, dryRun: boolean): Promise<PartitionTieringResult> {
  if (!dryRun) await removeOwnLeftovers(p.partitionDir);
  const state = await tieringState(p);
  const result: PartitionTieringResult = {
    ...state,
    written: [],
    epochsExtended: false,
    epochsMissing: false,
    verifiedAgainstKafka: 0,
  };
  if (dryRun) {
    result.epochsMissing = state.firstEpoch === undefined && state.closedSegments > 0;
    return result;
  }
  if (state.missingSnapshots.length > 0) {
    // Refused before any write: the snapshots get the owner of the broker's segment files.
    assertCanKeepOwnership(await ownershipOf(p.segments[0].path), p.segments[0].path);
    const missing = new Set(state.missingSnapshots);
    // Segments after the last missing snapshot are not read: Kafka's own snapshots cover them.
    const last = state.missingSnapshots[state.missingSnapshots.length - 1];
    for await (const { offset, entries } of snapshotsAtSegmentEnds(p)) {
      const target = path.join(p.partitionDir, formatBaseOffset(offset) + SNAPSHOT_SUFFIX);
      if (!missing.has(offset)) {
        result.mismatch = await disagreement(target, entries);
        if (result.mismatch !== undefined) break;
        result.verifiedAgainstKafka++;
        continue;
      }
      if (await writeSnapshotIfAbsent(target, encodeProducerSnapshot(entries), p.segments[0].path))
        result.written.push(offset);
      if (offset === last) break;
    }
    if (result.written.length > 0) await fsyncDir(p.partitionDir);
  }
  if (state.closedSegments > 0 && result.mismatch === undefined) {
    if (state.firstEpoch === undefined) result.epochsMissing = true;
    else if (state.firstEpoch.startOffset > p.segments[0].baseOffset) {
      await extendFirstEpoch(p, p.segments[0].baseOffset);
      result.epochsExtended = true;
    }
  }
  return result;
}

/**
 * Why the snapshot Kafka wrote at `file` contradicts the replay, or undefined when each of its
 * entries is the replay's for that producer. Kafka's may lack producers (it drops expired ones,
 * and writes empty snapshots for a log it loads without any), never hold other values.
 */
async function disagreement(file: string, replayed: ProducerSnapshotEntry[]): Promise<string | undefined> {
  let kafka: ProducerSnapshotEntry[];
  try {
    kafka = decodeProducerSnapshot(await readFile(file));
  } catch (err) {
    return `${file}: ${(err as Error).message}`;
  }
  const ours = new Map(replayed.map((e) => [e.producerId, e]));
  const show = (e: ProducerSnapshotEntry | undefined) =>
    e === undefined ? 'none' : JSON.stringify(e, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
  for (const k of kafka) {
    const r = ours.get(k.producerId);
    if (r === undefined || show(r) !== show(k))
      return `${file}: producer ${k.producerId}: Kafka's snapshot has ${show(k)}, the replay ${show(r)}`;
  }
  return undefined;
}

/** Temp files of a run that died (the log dir lock is ours: no other run is writing them). */
async function removeOwnLeftovers(partitionDir: string): Promise<void> {
  for (const name of await readdir(partitionDir))
    if (name.endsWith(SNAPSHOT_SUFFIX + TMP_SUFFIX) || name === LEADER_EPOCH_CHECKPOINT + TMP_SUFFIX)
      await removeIfExists(path.join(partitionDir, name));
}

/**
 * The producer state at the end of every closed segment, in offset order: what Kafka's
 * `takeSnapshot` at that segment's roll would have written. Reads every batch of every segment once.
 */
export async function* snapshotsAtSegmentEnds(
  p: PartitionSegments,
): AsyncGenerator<{ offset: bigint; entries: ProducerSnapshotEntry[] }> {
  const replay = new ProducerStateReplay();
  for (let i = 0; i < p.segments.length - 1; i++) {
    const file = p.segments[i].path;
    for await (const e of readSegmentEntries(file, { reuseBuffers: true })) {
      if (e.magic < 2) continue; // no producer ids before v2
      try {
        replay.apply(readRecordBatchHeader(e.bytes), e.bytes);
      } catch (err) {
        if (err instanceof SegliftError) throw err.withContext({ file, basePosition: e.position });
        throw err;
      }
    }
    yield { offset: p.segments[i + 1].baseOffset, entries: replay.snapshot() };
  }
}

/**
 * temp name, fsync, the broker's owner and mode (those of `like`), then link(2) to the final
 * name: it fails when the name exists, so a snapshot Kafka (or another run) wrote meanwhile is
 * never replaced. A crash leaves at worst a `.seglift-tmp` file, which no broker reads.
 */
async function writeSnapshotIfAbsent(target: string, bytes: Uint8Array, like: string): Promise<boolean> {
  const tmp = target + TMP_SUFFIX;
  const o = await ownershipOf(like);
  await removeIfExists(tmp);
  const fh = await openForWrite(tmp, 'wx', o.mode & 0o666);
  try {
    await writeAll(fh, tmp, bytes, 0);
    await syncHandle(fh, tmp);
  } finally {
    await fh.close();
  }
  await applyOwnership(tmp, o);
  try {
    await link(tmp, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    await removeIfExists(tmp);
    return false;
  }
  await removeIfExists(tmp);
  return true;
}

/** Rewrites leader-epoch-checkpoint as Kafka does (temp file, fsync, rename), first entry moved down. */
async function extendFirstEpoch(p: PartitionSegments, startOffset: bigint): Promise<void> {
  const file = path.join(p.partitionDir, LEADER_EPOCH_CHECKPOINT);
  const entries = await readEpochs(p.partitionDir);
  entries[0] = { ...entries[0], startOffset };
  const tmp = file + TMP_SUFFIX;
  const o = await ownershipOf(file);
  await removeIfExists(tmp);
  const fh = await openForWrite(tmp, 'wx', o.mode & 0o666);
  try {
    await writeAll(fh, tmp, Buffer.from(formatLeaderEpochCheckpoint(entries)), 0);
    await syncHandle(fh, tmp);
  } finally {
    await fh.close();
  }
  await applyOwnership(tmp, o);
  await rename(tmp, file);
  await fsyncDir(p.partitionDir);
}
