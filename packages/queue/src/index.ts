/**
 * @seglift/queue: the job contract of the distributed mode on BullMQ/Redis, owned in one place:
 * the connection, the payload schema, job ids and options, the done markers, the partition
 * lease the worker holds, and how a job ends (its result, its failure: outcome.ts).
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
  type SegmentJobData,
  SegmentJobSchema,
  segmentJobId,
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
export { createRedis, waitForRedis, waitForRedisAt } from './redis.js';
