/**
 * @seglift/segment: the file side of seglift. Streaming .log reader, convert -> verify -> swap,
 * index rebuild and checks, crash recovery of our own leftovers, discovery, reports, migrate pool.
 */

export { type ConvertOptions, type ConvertTestHooks, convertSegment } from './convert.js';
export { type BatchSummary, describeSegment } from './describe.js';
export {
  findPartitionDirs,
  findPartitionSegments,
  isActiveSegment,
  listSegments,
  type PartitionSegments,
  type SegmentFile,
} from './discovery.js';
export { codecLabel } from './entry.js';
export { SegmentIoError, VerifyMismatchError } from './errors.js';
export { type LeftoverReport, type RecoverLeftoversOptions, recoverLeftovers } from './leftovers.js';
export { acquireSegmentLock, lockPathFor, type SegmentLock } from './lock.js';
export {
  type MigrateOptions,
  type MigrateProgress,
  type MigrateResult,
  migrate,
  PIPELINE_THREAD_RESOURCE_LIMITS,
  workerScriptPath,
} from './migrate.js';
export { formatBaseOffset, parseSegmentName } from './names.js';
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
export { SimulatedCrash, type SwapStep } from './swap.js';
export { type VerifyProblem, type VerifyReport, type VerifySegmentOptions, verifySegment } from './verify.js';
