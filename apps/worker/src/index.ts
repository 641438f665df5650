export {
  classifyError,
  type ErrorClass,
  errorJson,
  PERMANENT_CODES,
  PERMANENT_ERRNO,
  TRANSIENT_ERRNO,
  toJobError,
} from './classify.js';
export { type HeldLock, tryLock } from './lock.js';
export { createProcessor, type JobResult, type ProcessorDeps } from './processor.js';
export { ThreadError, type ThreadPool, type ThreadPoolOptions, threadPool } from './run-thread.js';
export { loadSegmentApi, type SegmentApi } from './segment-api.js';
export type { CodecName, ConvertFn, ConvertOptions, SegmentReportLike } from './types.js';
export {
  createRedis,
  type StartWorkerOptions,
  startWorker,
  type WorkerHandle,
  waitForRedisAt,
} from './worker.js';
