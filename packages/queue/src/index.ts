/**
 * @seglift/queue: the job contract of the distributed mode on BullMQ/Redis, owned in one place:
 * the connection, the payload schema, job ids and options, the done markers and the partition
 * lease the worker holds.
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
export { createRedis, waitForRedis, waitForRedisAt } from './redis.js';
