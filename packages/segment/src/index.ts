/**
 * @seglift/segment: the file side of seglift. Streaming .log reader, convert -> verify -> swap,
 * index rebuild and checks, crash recovery of our own leftovers, discovery, reports, migrate pool.
 */

export {
  type ConvertOptions,
  type ConvertTestHooks,
  convertSegment,
  DEFAULT_SEGMENT_INDEX_BYTES,
} from './convert.js';
export { type BatchSummary, describeSegment } from './describe.js';
export {
  type Discovery,
  findPartitionDirs,
  findPartitionSegments,
  type IgnoredDir,
  isActiveSegment,
  listSegments,
  type PartitionSegments,
  type SegmentFile,
} from './discovery.js';
export { codecLabel } from './entry.js';
export {
  KafkaLeftoversError,
  LockedError,
  NotASegmentError,
  OwnershipError,
  SegmentIoError,
  toSegmentError,
  VerifyMismatchError,
} from './errors.js';
export { crashFsOps, type FsOp, type FsOpKind, observeFsOps, SimulatedCrash } from './fsops.js';
export {
  kafkaLeftovers,
  type LeftoverReport,
  type RecoverLeftoversOptions,
  recoverLeftovers,
} from './leftovers.js';
export {
  acquirePartitionLock,
  acquireSegmentLock,
  type FileLock,
  lockPathFor,
  partitionLockPath,
} from './lock.js';
export {
  type MigrateOptions,
  type MigrateProgress,
  type MigrateResult,
  migrate,
  PIPELINE_THREAD_RESOURCE_LIMITS,
  workerScriptPath,
} from './migrate.js';
export {
  BACKUP_DIR_MARKER,
  formatBaseOffset,
  METADATA_TOPIC,
  notAPartitionLog,
  parsePartitionDirName,
  parseSegmentName,
  SegmentFiles,
} from './names.js';
export {
  DEFAULT_CHUNK_SIZE,
  DEFAULT_MAX_ENTRY_BYTES,
  type ReadSegmentOptions,
  readSegmentEntries,
  type SegmentEntry,
  type TruncatedTail,
} from './reader.js';
export {
  formatReportTable,
  type RunSummary,
  reportsToJSON,
  type SegmentReport,
  type SegmentResult,
  summarize,
} from './report.js';
export { requireSegment, type SegmentOnDisk } from './segment-file.js';
export { type VerifyProblem, type VerifyReport, type VerifySegmentOptions, verifySegment } from './verify.js';
