export {
  classifyError,
  type ErrorClass,
  errorJson,
  PERMANENT_CODES,
  PERMANENT_ERRNO,
  TRANSIENT_ERRNO,
  toJobError,
} from './classify.js';
export { type ConvertFn, createProcessor, type JobResult, type ProcessorDeps } from './processor.js';
export { type StartWorkerOptions, startWorker, type WorkerHandle } from './worker.js';
