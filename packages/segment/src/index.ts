/**
 * @seglift/segment: the file side of seglift. Streaming .log reader, convert -> verify -> swap,
 * index rebuild and checks, crash recovery of our own leftovers, discovery, reports, migrate pool.
 * Exported: what the programs (apps/), config and the benches use. Tests crash and observe
 * the filesystem changes through the injected FsOps (src/test-support/seams.ts, never built).
 */

export {
  findPartitionSegments,
  type IgnoredDir,
  listSegments,
  logDirsGuarding,
  logDirsUnderRoots,
  walkLogDirs,
} from './discovery/discovery.js';
export {
  evaluatePartition,
  findReadySegments,
  newestSegmentReady,
  type PartitionVerdict,
  quietAtStart,
  type ReadinessRules,
  type ReadyScan,
  type ReadySegment,
  readinessRules,
  type SegmentReadiness,
  segmentReadiness,
  segmentReady,
  splitReady,
} from './discovery/readiness.js';
export { LogDirLockedError, SegmentChangedError } from './files/errors.js';
export {
  type IoThrottle,
  ioThrottle,
  lowerPriority,
  PREPARE_IOPRIO_LEVEL,
  PREPARE_NICE,
  pageCacheResidency,
  setIoLimit,
  setPrepareNice,
} from './files/io-courtesy.js';
export {
  isKafkaInternalDir,
  parsePartitionDirName,
  parseSegmentName,
  SEGMENT_NAME_RE,
  SegmentFiles,
} from './files/names.js';
export { statRegularFile } from './files/segment-file.js';
export { PIPELINE_NODE } from './node-flags.js';
export type { ConvertHooks, ConvertSettings, Placement } from './placements/conversion.js';
export { convertSegment } from './placements/convert.js';
export {
  CONVERSION_SETTINGS,
  type ConversionSetting,
  type ConversionSettingName,
  type ConversionSettings,
  conversionSetting,
  conversionSettingsOf,
} from './rewrite/conversion-settings.js';
export { codecLabel, formatKey, inspectEntry, keptAsIs, needsRewrite } from './rewrite/entry.js';
export { readSegmentEntries, type SegmentEntry } from './rewrite/reader.js';
export {
  emptyReport,
  formatReportTable,
  type RunSummary,
  type SegmentReport,
  summarize,
} from './rewrite/report.js';
export { rewriteSettingsOf } from './rewrite/rewrite.js';
export { targetFormatOf } from './rewrite/target-format.js';
export { type VerifyReport, verifySegment } from './rewrite/verify.js';
export {
  defaultConcurrency,
  defaultPrepareConcurrency,
  type HostLimits,
  hostLimits,
  memoryBoundMib,
  PROCESS_MEMORY_MIB,
  THREAD_MEMORY_MIB,
} from './runs/host.js';
export { type MigrateOptions, type MigrateResult, migrate } from './runs/migrate.js';
export { ConversionPool } from './runs/pool.js';
export { commitStage, prepareStage, type StageCounts } from './runs/two-phase.js';
export { assertBackupDirOutside } from './safety/backup.js';
export { kafkaLeftovers } from './safety/leftovers.js';
export {
  acquireLogDirLock,
  assertLogDirHolds,
  holdLogDirLock,
  holdLogDirLocks,
  logDirLockHolder,
} from './safety/logdir-lock.js';
export { isInside, realPathWithinRoots, resolveWithinRoots } from './safety/roots.js';
export {
  openStageDir,
  readStageRecord,
  type StageDir,
  sameIdentity,
  sourceIdentity,
  stageable,
  stageOptionsKey,
  stagePartitionDir,
} from './stage/stage.js';
export { type PartitionTieringResult, prepareTiering, tieringState } from './tiering/tiering.js';
