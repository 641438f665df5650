/**
 * Kafka's names for the things in a log dir, and seglift's own names beside them: the one place
 * where a file or directory name is interpreted (docs/kafka-format.md, "Files of a log dir").
 */
import path from 'node:path';

/** Kafka names segment files by base offset, zero-padded to 20 digits (LogFileUtils.filenamePrefixFromOffset). */
export const SEGMENT_NAME_RE = /^(\d{20})\.log$/;
/** The offset prefix Kafka reads from any file name (LogFileUtils.offsetFromFileName: up to the first dot). */
const OFFSET_PREFIX_RE = /^(\d+)\./;

/** The files of one segment that seglift knows (LogFileUtils' suffixes). */
export const LOG_SUFFIX = '.log';
export const INDEX_SUFFIX = '.index';
export const TIMEINDEX_SUFFIX = '.timeindex';
export const TXNINDEX_SUFFIX = '.txnindex';
/** The files a rewrite replaces. */
export const REWRITTEN = [LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX] as const;
/** A producer-state snapshot named by an offset; `<base>.snapshot` falls in the segment's range. */
export const SNAPSHOT_SUFFIX = '.snapshot';
/** Kafka's swap suffix (LogFileUtils.SWAP_FILE_SUFFIX): LogLoader completes these at start-up. */
export const SWAP_SUFFIX = '.swap';
/** The log cleaner's output before its swap (LogFileUtils.CLEANED_FILE_SUFFIX). */
export const CLEANED_SUFFIX = '.cleaned';
/** Files awaiting asynchronous deletion (LogFileUtils.DELETED_FILE_SUFFIX). */
export const DELETED_SUFFIX = '.deleted';

/** Our own temp suffix: ignored by Kafka's LogLoader (not .log/.index/.swap/.cleaned/.deleted). */
export const TMP_SUFFIX = '.seglift-tmp';
/** `<base>.seglift-swap`: written before the first rename of a swap; see swap.ts. */
export const MARKER_SUFFIX = '.seglift-swap';
export const LOCK_SUFFIX = '.log.seglift.lock';
/**
 * The partition's swap lock: at most one segment of a partition between its first and last
 * rename (Kafka completes all `.log.swap` files of a directory as ONE offset range). No offset
 * prefix, so Kafka's swap completion never deletes it and its loader ignores it.
 */
export const PARTITION_LOCK_NAME = 'seglift.partition.lock';
/** Kafka's own lock of a log dir, held by a running broker (`LogManager.LockFileName`). */
export const LOG_DIR_LOCK_NAME = '.lock';
/** In a backup directory and in each partition directory under it: never migrated, never counted. */
export const BACKUP_DIR_MARKER = '.seglift-backup';
/** At the root of a stage directory (two-phase migration, stage.ts): what `--stage-dir` may reuse. */
export const STAGE_DIR_MARKER = '.seglift-stage';
/**
 * `<base>.seglift-stage.json` beside a staged segment in a stage directory: the source's identity
 * and the staged files. Written last: staged files without it are unfinished.
 */
export const STAGE_RECORD_SUFFIX = '.seglift-stage.json';
/** At a stage dir's root while a prepare or commit runs: one at a time (each prunes the stage). */
export const STAGE_LOCK_NAME = 'seglift.stage.lock';

/** The KRaft metadata log (KafkaRaftServer.MetadataTopic): never loaded as a partition log. */
export const METADATA_TOPIC = '__cluster_metadata';
/** Tiered storage's index cache (RemoteIndexCache.DIR_NAME), a directory of a log dir. */
const REMOTE_INDEX_CACHE_DIR = 'remote-log-index-cache';
/** Partition directories being deleted, moved between log dirs, or found stray (LocalLog). */
const TEMPORARY_DIR_SUFFIXES = ['-delete', '-future', '-stray'] as const;

export function formatBaseOffset(offset: bigint): string {
  return offset.toString().padStart(20, '0');
}

/** The base offset named by `<20 digits>.log`, or undefined for any other name. */
export function parseSegmentName(name: string): bigint | undefined {
  const m = SEGMENT_NAME_RE.exec(name);
  return m ? BigInt(m[1]) : undefined;
}

/** The offset Kafka's LogLoader reads from a file name (its digits up to the first dot). */
export function offsetOfFileName(name: string): bigint | undefined {
  const m = OFFSET_PREFIX_RE.exec(name);
  return m ? BigInt(m[1]) : undefined;
}

export interface TopicPartitionName {
  topic: string;
  partition: number;
}

/**
 * `<topic>-<partition>` as LocalLog.parseTopicPartitionName reads a directory name; undefined
 * for names Kafka would not load as a partition log.
 */
export function parsePartitionDirName(name: string): TopicPartitionName | undefined {
  const i = name.lastIndexOf('-');
  if (i <= 0) return undefined;
  const topic = name.slice(0, i);
  const p = name.slice(i + 1);
  if (!/^\d{1,10}$/.test(p) || Number(p) > 2_147_483_647) return undefined;
  return { topic, partition: Number(p) };
}

/**
 * Directories of a log dir that are Kafka's own and never hold a partition to convert, at any
 * depth: hidden ones, partitions being deleted/moved/found stray, the KRaft metadata log,
 * tiered storage's cache. Walkers never descend into them.
 */
export function isKafkaInternalDir(name: string): boolean {
  if (name.startsWith('.') || name === REMOTE_INDEX_CACHE_DIR) return true;
  if (TEMPORARY_DIR_SUFFIXES.some((s) => name.endsWith(s))) return true;
  return parsePartitionDirName(name)?.topic === METADATA_TOPIC;
}

/** Why Kafka never loads this directory as a partition log, or undefined when it does. */
export function notAPartitionLog(name: string): string | undefined {
  if (TEMPORARY_DIR_SUFFIXES.some((s) => name.endsWith(s)))
    return 'a partition directory Kafka is deleting, moving or found stray (-delete/-future/-stray)';
  if (name === REMOTE_INDEX_CACHE_DIR) return "tiered storage's index cache";
  const tp = parsePartitionDirName(name);
  if (!tp) return 'not named <topic>-<partition>';
  if (tp.topic === METADATA_TOPIC)
    return 'the KRaft metadata log: Kafka reads it through the raft layer, never as a partition log';
  return undefined;
}

/**
 * One segment's files, as Kafka's LogSegment knows them: `<20-digit base offset><suffix>` in the
 * partition directory, plus the `.swap` and temp variants a rewrite passes through.
 */
export class SegmentFiles {
  readonly prefix: string;

  constructor(
    readonly dir: string,
    readonly baseOffset: bigint,
  ) {
    this.prefix = formatBaseOffset(baseOffset);
  }

  /** The segment of `<dir>/<20 digits>.log`; undefined for any other file name. */
  static ofLog(logPath: string): SegmentFiles | undefined {
    const base = parseSegmentName(path.basename(logPath));
    return base === undefined ? undefined : new SegmentFiles(path.dirname(path.resolve(logPath)), base);
  }

  /** `<dir>/<prefix><suffix>`, e.g. file('.index'). */
  file(suffix: string): string {
    return path.join(this.dir, this.prefix + suffix);
  }

  swap(suffix: string): string {
    return this.file(suffix + SWAP_SUFFIX);
  }

  tmp(suffix: string): string {
    return this.file(suffix + TMP_SUFFIX);
  }

  get log(): string {
    return this.file(LOG_SUFFIX);
  }
  get index(): string {
    return this.file(INDEX_SUFFIX);
  }
  get timeindex(): string {
    return this.file(TIMEINDEX_SUFFIX);
  }
  get marker(): string {
    return this.file(MARKER_SUFFIX);
  }
  get lock(): string {
    return this.file(LOCK_SUFFIX);
  }
  /** In a stage directory: the record of this staged segment. */
  get stageRecord(): string {
    return this.file(STAGE_RECORD_SUFFIX);
  }

  /** The same segment in another directory (outDir mode). */
  in(dir: string): SegmentFiles {
    return new SegmentFiles(path.resolve(dir), this.baseOffset);
  }
}
