/**
 * @seglift/segment: the file side of seglift. Streaming .log reader, convert -> verify -> swap,
 * index rebuild and checks, crash recovery of our own leftovers, discovery, reports, migrate pool.
 */

export {
  type ConvertOptions,
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
  type PartitionDirs,
  type PartitionSegments,
  type SegmentFile,
  type WalkOptions,
  type WalkResult,
  walkLogDirs,
} from './discovery.js';
export { codecLabel, type EntryInfo, formatKey, inspectEntry, needsRewrite } from './entry.js';
export {
  KafkaLeftoversError,
  LockedError,
  LogDirLockedError,
  LogDirUnknownError,
  LostLockError,
  NotASegmentError,
  OwnershipError,
  PathOutsideRootsError,
  SegmentChangedError,
  SegmentIoError,
  StageDirError,
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
  acquireLogDirLock,
  assertLogDirHolds,
  holdLogDirLock,
  holdLogDirLocks,
  type LogDirLock,
  logDirLockHolder,
  logDirLockPath,
  logDirOfSegment,
} from './logdir-lock.js';
export { type MigrateOptions, type MigrateProgress, type MigrateResult, migrate } from './migrate.js';
export {
  BACKUP_DIR_MARKER,
  formatBaseOffset,
  isKafkaInternalDir,
  METADATA_TOPIC,
  notAPartitionLog,
  parsePartitionDirName,
  parseSegmentName,
  SEGMENT_NAME_RE,
  SegmentFiles,
  STAGE_DIR_MARKER,
  STAGE_RECORD_SUFFIX,
} from './names.js';
export { PIPELINE_NODE } from './node-flags.js';
export {
  ConversionPool,
  type ConversionPoolOptions,
  conversionThreadPath,
  PIPELINE_THREAD_RESOURCE_LIMITS,
} from './pool.js';
export {
  DEFAULT_CHUNK_SIZE,
  DEFAULT_MAX_ENTRY_BYTES,
  type ReadSegmentOptions,
  readSegmentEntries,
  type SegmentEntry,
  type TruncatedTail,
} from './reader.js';
export {
  evaluatePartition,
  findReadySegments,
  newestSegmentReady,
  type PartitionVerdict,
  type ReadinessRules,
  type ReadyScan,
  type ReadySegment,
  segmentReady,
  splitReady,
} from './readiness.js';
export {
  emptyReport,
  formatReportTable,
  type RunSummary,
  reportsToJSON,
  type SegmentReport,
  type SegmentResult,
  summarize,
} from './report.js';
export { isInside, realPathWithinRoots, resolveWithinRoots } from './roots.js';
export {
  assertSingleLink,
  markedDirAbove,
  requireSegment,
  type SegmentOnDisk,
  type SegmentUse,
  statRegularFile,
  statSegmentLog,
} from './segment-file.js';
export {
  openStageDir,
  readStageRecord,
  SOURCE_SAMPLE_BYTES,
  type SourceIdentity,
  type StageDir,
  type StageRecord,
  sameIdentity,
  sourceIdentity,
  stageable,
  stageOptionsKey,
  stagePartitionDir,
} from './stage.js';
export { type TargetFormatOptions, type TargetFormatVerdict, targetFormatOf } from './target-format.js';
export {
  commitStage,
  prepareStage,
  type StageCounts,
  type TwoPhaseOptions,
  type TwoPhaseResult,
} from './two-phase.js';
export { type VerifyProblem, type VerifyReport, type VerifySegmentOptions, verifySegment } from './verify.js';
