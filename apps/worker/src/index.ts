export {
  classifyError,
  type ErrorClass,
  PERMANENT_CODES,
  PERMANENT_ERRNO,
  TRANSIENT_ERRNO,
  toJobError,
} from './classify.js';
export { type ConvertFn, createProcessor, type ProcessorDeps } from './processor.js';
export { type StartWorkerOptions, startWorker, type WorkerHandle } from './worker.js';
