export { type RunOnceOptions, type RunOnceResult, runOnce } from './once.js';
export {
  createRedis,
  type EnqueueResult,
  enqueueSegments,
  jobOptions,
  openQueue,
  waitForRedis,
} from './queue.js';
export {
  evaluatePartition,
  isKafkaInternalDir,
  type PartitionVerdict,
  type Readiness,
  type ReadySegment,
  type ScanOptions,
  type ScanResult,
  SEGMENT_LOG_RE,
  scanRoots,
} from './scan.js';
export { startWatching, type WatchHandle, type WatchOptions } from './watch.js';
