/**
 * The names the programs read and print: the SEGLIFT_* variables and the codecs. Apart from the
 * schema (zod) and the loader (yaml), so that a program's --help, which lists them, loads
 * neither (start-up: bench/startup.bench.mjs).
 */
import { CODEC_REGISTRY, type CodecName } from '@seglift/format';
import { CONVERSION_SETTINGS, type ConversionSetting } from '@seglift/segment';

/** Kafka's codec names, from @seglift/format's codec registry: none, gzip, snappy, lz4, zstd. */
export const CODECS = CODEC_REGISTRY.map((c) => c.name) as [CodecName, ...CodecName[]];

export type EnvType = 'string' | 'int' | 'bool' | 'list';

const ENV_TYPES: Record<ConversionSetting['type'], EnvType> = {
  codec: 'string',
  enum: 'string',
  level: 'int',
  int: 'int',
  bool: 'bool',
};

/**
 * Every SEGLIFT_* variable and the field it sets (the documented mapping): the conversion
 * settings' from their declarations (@seglift/segment's CONVERSION_SETTINGS), then the others.
 */
export const ENV_VARS: ReadonlyArray<{ env: string; path: string; type: EnvType }> = [
  { env: 'SEGLIFT_ROOTS', path: 'roots', type: 'list' },
  ...(CONVERSION_SETTINGS as readonly ConversionSetting[]).map((s) => ({
    env: s.env,
    path: s.path,
    type: ENV_TYPES[s.type],
  })),
  { env: 'SEGLIFT_BACKUP_DIR', path: 'backupDir', type: 'string' },
  { env: 'SEGLIFT_STAGE_DIR', path: 'stageDir', type: 'string' },
  { env: 'SEGLIFT_REDIS_URL', path: 'redis.url', type: 'string' },
  { env: 'SEGLIFT_QUEUE_NAME', path: 'queue.name', type: 'string' },
  { env: 'SEGLIFT_QUEUE_PREFIX', path: 'queue.prefix', type: 'string' },
  { env: 'SEGLIFT_WORKER_CONCURRENCY', path: 'worker.concurrency', type: 'int' },
  { env: 'SEGLIFT_WORKER_ATTEMPTS', path: 'worker.attempts', type: 'int' },
  { env: 'SEGLIFT_WORKER_BACKOFF_MS', path: 'worker.backoffMs', type: 'int' },
  { env: 'SEGLIFT_WORKER_LOCK_DURATION_MS', path: 'worker.lockDurationMs', type: 'int' },
  { env: 'SEGLIFT_WORKER_STALLED_INTERVAL_MS', path: 'worker.stalledIntervalMs', type: 'int' },
  { env: 'SEGLIFT_WORKER_MAX_STALLED_COUNT', path: 'worker.maxStalledCount', type: 'int' },
  { env: 'SEGLIFT_WORKER_SHUTDOWN_GRACE_MS', path: 'worker.shutdownGraceMs', type: 'int' },
  { env: 'SEGLIFT_WATCHER_NO_WORKER_TIMEOUT_MS', path: 'watcher.noWorkerTimeoutMs', type: 'int' },
  { env: 'SEGLIFT_IO_MAX_BYTES_PER_SECOND', path: 'io.maxBytesPerSecond', type: 'int' },
  { env: 'SEGLIFT_PREPARE_NICE', path: 'prepare.nice', type: 'bool' },
  { env: 'SEGLIFT_READINESS_QUIET_MS', path: 'readiness.quietMs', type: 'int' },
  { env: 'SEGLIFT_READINESS_REQUIRE_ROLLED', path: 'readiness.requireRolled', type: 'bool' },
  { env: 'SEGLIFT_LIMITS_MAX_SEGMENT_BYTES', path: 'limits.maxSegmentBytes', type: 'int' },
  { env: 'SEGLIFT_METRICS_PORT', path: 'metrics.port', type: 'int' },
  { env: 'SEGLIFT_METRICS_HOST', path: 'metrics.host', type: 'string' },
  { env: 'SEGLIFT_LOG_LEVEL', path: 'log.level', type: 'string' },
  { env: 'SEGLIFT_LOG_PRETTY', path: 'log.pretty', type: 'bool' },
];

/** Names the config file when `file` is not given. */
export const CONFIG_FILE_ENV = 'SEGLIFT_CONFIG';

/**
 * SEGLIFT_* variables that are not settings, read by the tools around the programs: the install
 * script (SEGLIFT_BIN_DIR) and the test harness (the rest). Never warned about.
 */
export const OTHER_ENV_VARS: readonly string[] = [
  'SEGLIFT_BIN_DIR',
  'SEGLIFT_SKIP_SUMMARY',
  'SEGLIFT_KAFKA_CACHE',
  'SEGLIFT_FUZZ_SECONDS',
  'SEGLIFT_FUZZ_SEED',
  'SEGLIFT_FUZZ_STATS',
];
