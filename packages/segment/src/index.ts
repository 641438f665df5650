/**
 * @seglift/segment: the file side of seglift. Streaming .log reader, convert -> verify -> swap,
 * index rebuild and checks, crash recovery of our own leftovers, discovery, reports, migrate pool.
 * Exported: what the programs (apps/), config and the benches use. Test seams (fsops' crash and
 * observers, convert's testHooks) are in src/test-support/seams.ts, never built.
 */

export {
  CONVERSION_SETTINGS,
  type ConversionSetting,
  type ConversionSettingName,
  type ConversionSettings,
  conversionSetting,
  conversionSettingsOf,
} from './conversion-settings.js';
export { type ConvertOptions, convertSegment } from './convert.js';
export {
  findPartitionSegments,
  type IgnoredDir,
  listSegments,
  walkLogDirs,
} from './discovery.js';
export { codecLabel, formatKey, inspectEntry, keptAsIs, needsRewrite } from './entry.js';
export { LogDirLockedError, SegmentChangedError } from './errors.js';
export { kafkaLeftovers } from './leftovers.js';
export {
  acquireLogDirLock,
  assertLogDirHolds,
  holdLogDirLock,
  holdLogDirLocks,
  logDirLockHolder,
  logDirOfSegment,
} from './logdir-lock.js';
export { type MigrateOptions, type MigrateResult, migrate } from './migrate.js';
export {
  isKafkaInternalDir,
  parsePartitionDirName,
  parseSegmentName,
  SEGMENT_NAME_RE,
  SegmentFiles,
} from './names.js';
export { PIPELINE_NODE } from './node-flags.js';
export { ConversionPool } from './pool.js';
export { readSegmentEntries, type SegmentEntry } from './reader.js';
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
} from './readiness.js';
export {
  emptyReport,
  formatReportTable,
  type RunSummary,
  type SegmentReport,
  summarize,
} from './report.js';
export { isInside, realPathWithinRoots, resolveWithinRoots } from './roots.js';
export { statRegularFile } from './segment-file.js';
export {
  openStageDir,
  readStageRecord,
  type StageDir,
  sameIdentity,
  sourceIdentity,
  stageable,
  stageOptionsKey,
  stagePartitionDir,
} from './stage.js';
export { targetFormatOf } from './target-format.js';
export { type PartitionTieringResult, prepareTiering, tieringState } from './tiering.js';
export { commitStage, prepareStage, type StageCounts } from './two-phase.js';
export { type VerifyReport, verifySegment } from './verify.js';
