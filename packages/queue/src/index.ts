/**
 * @seglift/queue: the job contract of the distributed mode on BullMQ/Redis, owned in one place:
 * the connection, the payload schema, job ids and options, the done markers, the partition
 * lease the worker holds, and how a job ends (its result, its failure: outcome.ts); and the
 * skeleton the watcher's and the worker's main run in (program.ts).
 */
export {
  DONE_MARKER_TTL_SECONDS,
  doneMarkerKey,
  type EnqueueResult,
  enqueueSegments,
  fileStateOf,
  jobData,
  jobOptions,
  markDone,
  openQueue,
  partitionLeaseKey,
  SEGMENT_JOB_NAME,
  type SegmentFileState,
  type SegmentJob,
  type SegmentJobData,
  SegmentJobSchema,
  segmentJobId,
  waitUntilDrained,
} from './job.js';
export { type PartitionLease, tryLease } from './lease.js';
export {
  decodeJobFailure,
  decodeJobResult,
  encodeJobFailure,
  encodeJobResult,
  type JobFailure,
  type JobResult,
  JobResultSchema,
  jobFailureOf,
} from './outcome.js';
export {
  asInt,
  EXIT_OK,
  EXIT_RUNTIME,
  EXIT_USAGE,
  type FlagValues,
  QUEUE_PROGRAM_OPTIONS,
  type QueueProgram,
  type QueueProgramContext,
  runQueueProgram,
  type StopSignal,
  signalExitCode,
} from './program.js';
export { createRedis, waitForRedis, waitForRedisAt } from './redis.js';
