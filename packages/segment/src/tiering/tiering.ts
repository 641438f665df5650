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
 *   end offset). The entries below the first one are taken from the batches themselves, as
 *   Kafka's recovery assigns them (LogSegment.recover: `assign(partitionLeaderEpoch, baseOffset)`
 *   for each batch of magic >= 2 whose epoch is above the latest; legacy batches carry none), and
 *   the earliest entry is then moved down to the first segment's base offset over batches that
 *   carry no epoch (or, with none derived, the checkpoint's own first epoch): no epoch present in
 *   the batches gets an end offset other than the one Kafka's own recovery of them gives, and the
 *   checkpoint's epochs keep theirs (LeaderEpochFileCache.endOffsetFor; e2e/kafka proves it).
 *
 * Everything read is checked first, as migrate does: every batch replayed is CRC-checked (a
 * snapshot or an epoch from bytes that are not the producer's would be an invention), the
 * checkpoint is parsed as Kafka's CheckpointFile reads it and refused where Kafka refuses it, a
 * partition with Kafka's unfinished operations (`.cleaned`, foreign `.swap`) is left alone, and
 * every file is opened as a regular file of bounded size (files/bounded-read.ts). A problem stops
 * its partition (`error`), not the others.
 *
 * Files only with the broker stopped: callers hold `<log.dir>/.lock` (prepareTiering does).
 */
import { readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import {
  CorruptRecordError,
  decodeProducerSnapshot,
  encodeProducerSnapshot,
  type ProducerSnapshotEntry,
  ProducerStateReplay,
  type RecordBatchHeader,
  SegliftError,
} from '@seglift/format';
import { findPartitionSegments, type PartitionSegments } from '../discovery/discovery.js';
import { readBounded, readBoundedText } from '../files/bounded-read.js';
import { KafkaLeftoversError, SegmentIoError } from '../files/errors.js';
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
import { inspectEntry } from '../rewrite/entry.js';
import { readSegmentEntries } from '../rewrite/reader.js';
import { kafkaLeftovers } from '../safety/leftovers.js';
import { holdLogDirLocks } from '../safety/logdir-lock.js';
import { assertPartitionWithinRoots } from '../safety/roots.js';

export const LEADER_EPOCH_CHECKPOINT = 'leader-epoch-checkpoint';

export interface EpochEntry {
  epoch: number;
  startOffset: bigint;
}

/**
 * The largest leader-epoch-checkpoint read: Kafka writes `<epoch> <startOffset>` lines of at most
 * 31 bytes, one per leader election; 16 MiB is over half a million of them (an election a minute
 * for a year). A larger file is refused unread.
 */
export const MAX_CHECKPOINT_BYTES = 16 * 1024 * 1024;

const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Java's Integer.parseInt / Long.parseLong (ASCII digits, optional sign), or undefined. */
function javaInteger(s: string, min: bigint, max: bigint): bigint | undefined {
  if (!/^[+-]?\d+$/.test(s)) return undefined;
  const v = BigInt(s);
  return v < min || v > max ? undefined : v;
}

/**
 * leader-epoch-checkpoint as Kafka reads it (CheckpointFile.CheckpointReadBuffer.read, then
 * LeaderEpochCheckpointFile.Formatter and LeaderEpochFileCache.assign), and refused (typed
 * CorruptRecordError naming the file and line) wherever Kafka refuses it:
 * - lines end at `\n`, `\r` or `\r\n` (BufferedReader.readLine); no first line: no entries (Kafka
 *   3.9 leaves an empty file beside magic 0/1 data);
 * - the version line is an int32 and 0; no second line: no entries;
 * - the count line is an int32 >= 0, and exactly that many entry lines follow (a blank line is a
 *   malformed entry, not nothing);
 * - an entry is two fields split at whitespace (a leading blank makes three): an int32 epoch and
 *   an int64 start offset, neither negative (assign's IllegalArgumentException);
 * - epochs and start offsets strictly increasing: Kafka would drop the entries that are not
 *   (maybeTruncateNonMonotonicEntries); seglift refuses to rewrite a file Kafka would not keep as
 *   it is.
 */
export function parseLeaderEpochCheckpoint(text: string, file?: string): EpochEntry[] {
  const lines = text.split(/\r\n|\r|\n/);
  // A terminator ends the last line; it does not start another.
  if (lines[lines.length - 1] === '') lines.pop();
  const refuse = (line: number, why: string) =>
    new CorruptRecordError(`leader-epoch-checkpoint line ${line}: ${why} (Kafka refuses this file)`, {
      file,
    });
  const show = (l: string) => JSON.stringify(l.length > 40 ? `${l.slice(0, 40)}...` : l);
  if (lines.length === 0) return [];
  const version = javaInteger(lines[0], INT32_MIN, INT32_MAX);
  if (version === undefined) throw refuse(1, `malformed version ${show(lines[0])}`);
  if (version !== 0n) throw refuse(1, `version ${version}, expected 0`);
  if (lines.length === 1) return [];
  const count = javaInteger(lines[1], INT32_MIN, INT32_MAX);
  if (count === undefined) throw refuse(2, `malformed entry count ${show(lines[1])}`);
  if (count < 0n) throw refuse(2, `entry count ${count}`);
  const entries: EpochEntry[] = [];
  for (let i = 2; i < lines.length; i++) {
    // Pattern.split: a leading separator gives an empty first field, trailing ones nothing.
    const fields = lines[i].replace(/[ \t\n\v\f\r]+$/, '').split(/[ \t\n\v\f\r]+/);
    const epoch = fields.length === 2 ? javaInteger(fields[0], INT32_MIN, INT32_MAX) : undefined;
    const startOffset = fields.length === 2 ? javaInteger(fields[1], INT64_MIN, INT64_MAX) : undefined;
    if (epoch === undefined || startOffset === undefined)
      throw refuse(i + 1, `malformed entry ${show(lines[i])} (an int32 epoch and an int64 start offset)`);
    if (epoch < 0n || startOffset < 0n)
      throw refuse(i + 1, `negative epoch or start offset ${show(lines[i])}`);
    const prev = entries[entries.length - 1];
    if (prev !== undefined && (Number(epoch) <= prev.epoch || startOffset <= prev.startOffset))
      throw refuse(
        i + 1,
        `epoch ${epoch} at ${startOffset} does not follow epoch ${prev.epoch} at ${prev.startOffset} (Kafka would drop entries)`,
      );
    entries.push({ epoch: Number(epoch), startOffset });
  }
  if (BigInt(entries.length) !== count) throw refuse(2, `says ${count} entries, holds ${entries.length}`);
  return entries;
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
  /**
   * leader-epoch-checkpoint cannot be read as Kafka reads it (malformed, not a regular file, too
   * large): why. Its epochs count as none; tier-prepare leaves the partition alone.
   */
  checkpointError?: string;
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
  let epochs: EpochEntry[] = [];
  let checkpointError: string | undefined;
  try {
    epochs = await readEpochs(p.partitionDir);
  } catch (err) {
    if (!(err instanceof SegliftError)) throw err;
    checkpointError = err.message;
  }
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
    epochsMissing: firstEpoch === undefined && checkpointError === undefined && closed.length > 0,
    ...(checkpointError !== undefined ? { checkpointError } : {}),
  };
}

async function readEpochs(partitionDir: string): Promise<EpochEntry[]> {
  const file = path.join(partitionDir, LEADER_EPOCH_CHECKPOINT);
  const text = await readBoundedText(file, MAX_CHECKPOINT_BYTES, LEADER_EPOCH_CHECKPOINT).catch(
    (e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    },
  );
  return text === undefined ? [] : parseLeaderEpochCheckpoint(text, file);
}

export interface PartitionTieringResult extends TieringState {
  /** Snapshot files written, by offset. */
  written: bigint[];
  /** leader-epoch-checkpoint was rewritten to cover every segment (epochs below its first entry). */
  epochsExtended: boolean;
  /** Of them, the entries taken from the batches below the checkpoint's first entry. */
  epochsFromBatches: EpochEntry[];
  /** A partition whose epochs could not be made to cover its segments (no checkpoint entry at all). */
  epochsMissing: boolean;
  /** Snapshots Kafka wrote that the replay was checked against (every entry equal). */
  verifiedAgainstKafka: number;
  /**
   * A snapshot Kafka wrote disagrees with the replay (or does not decode): nothing more is
   * written for this partition, and this says where and how.
   */
  mismatch?: string;
  /**
   * What stopped this partition before anything (more) was written to it: a batch that fails its
   * CRC or framing, a checkpoint Kafka would refuse, Kafka's unfinished operations, batches that
   * contradict the checkpoint. Snapshots written before it (from batches already checked) stay.
   */
  error?: SegliftError;
}

export interface PrepareTieringOptions {
  /** Report what would be written, write nothing (no lock taken). */
  dryRun?: boolean;
  /**
   * The configured roots (SEGLIFT_ROOTS): every partition, a symlinked one by the real path it
   * leads to, must lie inside one, or nothing at all is written (PathOutsideRootsError).
   */
  roots?: readonly string[];
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
  // Every partition before the first write: migrate's confinement (a dry run reads only).
  if (!options.dryRun && (options.roots?.length ?? 0) > 0)
    for (const p of partitions)
      await assertPartitionWithinRoots(await realpath(p.partitionDir), root, options.roots!);
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
    epochsFromBatches: [],
    epochsMissing: false,
    verifiedAgainstKafka: 0,
  };
  if (state.checkpointError !== undefined) {
    result.error = new CorruptRecordError(`${state.checkpointError}: nothing written to this partition`, {
      file: path.join(p.partitionDir, LEADER_EPOCH_CHECKPOINT),
    });
    return result;
  }
  // migrate's rule: a broker completing these deletes segment files by offset range.
  const kafka = await kafkaLeftovers(p.partitionDir);
  if (kafka.cleaned.length > 0 || kafka.foreignSwaps.length > 0) {
    result.error = new KafkaLeftoversError(
      `partition holds files of an interrupted Kafka operation (${[...kafka.cleaned, ...kafka.foreignSwaps].join(', ')}): its segments are not what the broker will load; start the broker once and stop it cleanly to let it finish them, then run seglift again`,
      { file: p.partitionDir },
    );
    return result;
  }
  if (dryRun) {
    result.epochsMissing = state.epochsMissing;
    return result;
  }
  try {
    await replayPartition(p, state, result);
  } catch (err) {
    if (!(err instanceof SegliftError)) throw err;
    result.error = err;
  }
  return result;
}

/**
 * The one read of the partition's batches that both steps need, each batch CRC-checked: the
 * producer state at each closed segment's end (missing snapshots written, Kafka's checked) and
 * the leader epochs below the checkpoint's first entry; then the checkpoint rewritten when its
 * first entry does not reach down to the first segment.
 */
async function replayPartition(
  p: PartitionSegments,
  state: TieringState,
  result: PartitionTieringResult,
): Promise<void> {
  const first = state.firstEpoch;
  const firstBase = p.segments[0].baseOffset;
  const extend = state.closedSegments > 0 && first !== undefined && first.startOffset > firstBase;
  if (state.missingSnapshots.length === 0 && !extend) {
    if (state.closedSegments > 0 && first === undefined) result.epochsMissing = true;
    return;
  }
  if (state.missingSnapshots.length > 0)
    // Refused before any write: the snapshots get the owner of the broker's segment files.
    assertCanKeepOwnership(await ownershipOf(p.segments[0].path), p.segments[0].path);
  const missing = new Set(state.missingSnapshots);
  const lastMissing = state.missingSnapshots[state.missingSnapshots.length - 1] ?? -1n;
  const epochs = new EpochsFromBatches(first?.startOffset ?? -1n);
  let snapshotsDone = state.missingSnapshots.length === 0;
  for await (const { offset, entries } of snapshotsAtSegmentEnds(p, {
    onBatch: extend ? (h, baseOffset) => epochs.batch(h, baseOffset) : undefined,
    // Segments after the last missing snapshot and above the first epoch are not read: Kafka's
    // own snapshots and epochs cover them.
    upTo: (nextBase) =>
      (snapshotsDone || nextBase > lastMissing) && (!extend || nextBase >= first!.startOffset),
  })) {
    if (snapshotsDone) continue;
    const target = path.join(p.partitionDir, formatBaseOffset(offset) + SNAPSHOT_SUFFIX);
    if (!missing.has(offset)) {
      result.mismatch = await disagreement(target, entries);
      if (result.mismatch !== undefined) break;
      result.verifiedAgainstKafka++;
      continue;
    }
    if (await writeSnapshotIfAbsent(target, encodeProducerSnapshot(entries), p.segments[0].path))
      result.written.push(offset);
    if (offset === lastMissing) snapshotsDone = true;
  }
  if (result.written.length > 0) await fsyncDir(p.partitionDir);
  if (result.mismatch !== undefined || state.closedSegments === 0) return;
  if (first === undefined) {
    result.epochsMissing = true;
    return;
  }
  if (!extend) return;
  const all = await readEpochs(p.partitionDir);
  const below = epochs.entriesBelow(all, firstBase, path.join(p.partitionDir, LEADER_EPOCH_CHECKPOINT));
  await writeEpochs(p, below.entries);
  result.epochsExtended = true;
  result.epochsFromBatches = below.derived;
}

/**
 * Kafka's recovery of the batches below the checkpoint's first entry (LogSegment.recover): for a
 * batch of magic >= 2 with a partitionLeaderEpoch >= 0 above the latest assigned,
 * `assign(epoch, baseOffset)`. Legacy batches carry no epoch.
 */
class EpochsFromBatches {
  readonly assigned: EpochEntry[] = [];
  constructor(private readonly below: bigint) {}

  batch(h: RecordBatchHeader, baseOffset: bigint): void {
    if (baseOffset >= this.below || h.partitionLeaderEpoch < 0) return;
    const latest = this.assigned[this.assigned.length - 1];
    if (latest === undefined || h.partitionLeaderEpoch > latest.epoch)
      this.assigned.push({ epoch: h.partitionLeaderEpoch, startOffset: baseOffset });
  }

  /**
   * The checkpoint's entries with those assigned below its first one before them: an assigned
   * epoch equal to the first entry's moves that entry down to where its batches start (it is that
   * epoch's start), one above it contradicts the checkpoint (refused, nothing written). The earliest
   * entry then starts at `firstBase`: the batches below it carry no epoch.
   */
  entriesBelow(
    checkpoint: EpochEntry[],
    firstBase: bigint,
    file: string,
  ): { entries: EpochEntry[]; derived: EpochEntry[] } {
    const [first, ...rest] = checkpoint;
    const derived = [...this.assigned];
    const above = derived.find((e) => e.epoch > first.epoch);
    if (above !== undefined)
      throw new CorruptRecordError(
        `batches from offset ${above.startOffset} carry leader epoch ${above.epoch}, below the checkpoint's first entry (epoch ${first.epoch} from ${first.startOffset}): the log and leader-epoch-checkpoint disagree; nothing written`,
        { file, offset: above.startOffset },
      );
    let head = first;
    if (derived[derived.length - 1]?.epoch === first.epoch)
      head = { ...first, startOffset: derived.pop()!.startOffset };
    const entries = [...derived, head, ...rest];
    if (entries[0].startOffset > firstBase) entries[0] = { ...entries[0], startOffset: firstBase };
    return { entries, derived };
  }
}

/**
 * Why the snapshot Kafka wrote at `file` contradicts the replay, or undefined when each of its
 * entries is the replay's for that producer. Kafka's may lack producers (it drops expired ones,
 * and writes empty snapshots for a log it loads without any), never hold other values: so it is
 * never larger than the replay's own snapshot, which bounds what is read.
 */
async function disagreement(file: string, replayed: ProducerSnapshotEntry[]): Promise<string | undefined> {
  let kafka: ProducerSnapshotEntry[];
  try {
    const most = encodeProducerSnapshot(replayed).length;
    kafka = decodeProducerSnapshot(
      await readBounded(file, most, `a snapshot of at most ${replayed.length} producers`),
    );
  } catch (err) {
    if (!(err instanceof SegliftError)) throw err;
    return `${file}: ${err instanceof SegmentIoError ? err.detail : err.message}`;
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

export interface ReplayOptions {
  /** Every v2 batch, CRC-checked, in offset order. */
  onBatch?: (h: RecordBatchHeader, baseOffset: bigint) => void;
  /** Stop after the segment whose end (the next segment's base offset) makes this true. */
  upTo?: (nextBase: bigint) => boolean;
}

/**
 * The producer state at the end of every closed segment, in offset order: what Kafka's
 * `takeSnapshot` at that segment's roll would have written. Reads every batch of every segment
 * once, each CRC-checked (as LogSegment.recover does): a batch that fails is a typed error naming
 * the file, its position and offset, never replayed.
 */
export async function* snapshotsAtSegmentEnds(
  p: PartitionSegments,
  options: ReplayOptions = {},
): AsyncGenerator<{ offset: bigint; entries: ProducerSnapshotEntry[] }> {
  const replay = new ProducerStateReplay();
  for (let i = 0; i < p.segments.length; i++) {
    const active = i === p.segments.length - 1;
    // The active segment only for its batches (a first leader epoch entry inside it).
    if (active && options.onBatch === undefined) return;
    const file = p.segments[i].path;
    // Its tail may be partial (an unclean stop): what Kafka's recovery truncates is not read.
    for await (const e of readSegmentEntries(file, { reuseBuffers: true, acceptTruncatedTail: active })) {
      // CRC and framing (typed errors with the file, the position and the offset).
      const info = inspectEntry(e, file);
      if (info.magic < 2) continue; // no producer ids, no leader epochs before v2
      if (!active)
        try {
          replay.apply(info.header!, e.bytes);
        } catch (err) {
          if (err instanceof SegliftError)
            throw err.withContext({ file, basePosition: e.position, offset: info.offset });
          throw err;
        }
      options.onBatch?.(info.header!, info.offset);
    }
    if (active) return;
    const next = p.segments[i + 1].baseOffset;
    yield { offset: next, entries: replay.snapshot() };
    if (options.upTo?.(next)) return;
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

/** Rewrites leader-epoch-checkpoint as Kafka does (temp file, fsync, rename), with these entries. */
async function writeEpochs(p: PartitionSegments, entries: EpochEntry[]): Promise<void> {
  const file = path.join(p.partitionDir, LEADER_EPOCH_CHECKPOINT);
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
