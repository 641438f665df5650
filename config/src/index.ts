export { ConfigError, type ConfigProblem, PathOutsideRootsError } from './errors.js';
export {
  DONE_MARKER_TTL_SECONDS,
  doneMarkerKey,
  partitionLockKey,
  SEGMENT_JOB_NAME,
  type SegmentJobData,
  SegmentJobSchema,
  segmentJobId,
} from './job.js';
export {
  CONFIG_FILE_ENV,
  ENV_VARS,
  type LoadConfigOptions,
  type LoadedConfig,
  loadConfig,
  loadConfigWithSources,
  validateConfig,
} from './load.js';
export { type FormatConfigOptions, formatConfig, REDACTED, redactConfig, redactUrl } from './redact.js';
export { isInside, resolveWithinRoots } from './roots.js';
export {
  CODEC_LEVELS,
  CODECS,
  type Config,
  type ConfigInput,
  ConfigSchema,
  DEFAULT_COALESCE_BYTES,
  DEFAULT_MAX_BATCH_BYTES,
  LOG_LEVELS,
} from './schema.js';
