import { availableParallelism } from 'node:os';
import { isAbsolute } from 'node:path';
import { z } from 'zod';

export const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** Kafka's accepted compression.<codec>.level ranges (KIP-390); snappy and none take no level. */
export const CODEC_LEVELS: Record<string, readonly [number, number] | undefined> = {
  gzip: [1, 9],
  lz4: [1, 17],
  zstd: [-131072, 22],
};

/** Largest batch Kafka accepts by default: message.max.bytes 1048588. */
export const DEFAULT_MAX_BATCH_BYTES = 1048588;
/** `coalesce` grouping's target batch size (1 MiB), as @seglift/legacy's DEFAULT_COALESCE_BYTES. */
export const DEFAULT_COALESCE_BYTES = 1024 * 1024;

const absolutePath = z.string().min(1).refine(isAbsolute, { message: 'must be an absolute path' });
const positiveInt = z.int().min(1);
const nonNegativeInt = z.int().min(0);

const redisUrl = z.string().refine(
  (s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '';
    } catch {
      return false;
    }
  },
  { message: 'must be a redis:// or rediss:// URL like redis://user:password@host:6379/0' },
);

/** BullMQ keys are `<prefix>:<name>:...`, so neither may contain ':'. */
const redisName = z.string().regex(/^[A-Za-z0-9_.-]+$/, { message: 'letters, digits, _ . - only (no ":")' });

export const ConfigSchema = z.strictObject({
  /** Directories seglift may read and rewrite; every path is checked against them (realpath). */
  roots: z.array(absolutePath).default([]),
  codec: z.enum(CODECS).default('zstd'),
  /** Compression level; omitted = the codec's default. */
  level: z.int().optional(),
  /**
   * How legacy entries become v2 batches: coalesce packs consecutive records into batches of up
   * to coalesceBytes (and maxBatchBytes); kafka writes one batch per legacy entry, as Kafka 4's
   * cleaner does.
   */
  grouping: z.enum(['kafka', 'coalesce']).default('coalesce'),
  coalesceBytes: positiveInt.default(DEFAULT_COALESCE_BYTES),
  maxBatchBytes: positiveInt.default(DEFAULT_MAX_BATCH_BYTES),
  /** Keep a v2 batch in its codec when recompressing it would make it larger. */
  onlyIfSmaller: z.boolean().default(false),
  /** Keep the original files here before swapping (absolute); omitted = no backup. */
  backupDir: absolutePath.optional(),
  /**
   * Two-phase migration's stage dir (absolute): `migrate --prepare` converts into it while the
   * broker runs, `migrate --commit` swaps from it. Same filesystem as the log dir, outside it.
   */
  stageDir: absolutePath.optional(),
  redis: z.strictObject({ url: redisUrl.default('redis://127.0.0.1:6379') }).prefault({}),
  queue: z
    .strictObject({ name: redisName.default('segments'), prefix: redisName.default('seglift') })
    .prefault({}),
  worker: z
    .strictObject({
      /** Conversions in parallel per worker process (each runs in its own worker thread). */
      concurrency: positiveInt.default(Math.max(1, availableParallelism())),
      /** Attempts for transient (I/O) failures; format errors fail at once. */
      attempts: positiveInt.default(5),
      /** First retry delay; doubles each attempt. */
      backoffMs: nonNegativeInt.default(5_000),
      /** BullMQ job lock; a killed worker's job is redone after about this long. */
      lockDurationMs: z.int().min(1000).default(30_000),
      stalledIntervalMs: z.int().min(1000).default(30_000),
      maxStalledCount: nonNegativeInt.default(5),
      /** On SIGTERM, let running conversions finish this long before aborting them. */
      shutdownGraceMs: nonNegativeInt.default(30_000),
    })
    .prefault({}),
  watcher: z
    .strictObject({
      /**
       * `--once --wait`: stop waiting (exit 3) when no queued segment has finished for this long
       * and no worker is connected to the queue (0 = wait forever).
       */
      noWorkerTimeoutMs: nonNegativeInt.default(900_000),
    })
    .prefault({}),
  readiness: z
    .strictObject({
      /** Archive mode: the newest segment is ready once unchanged for this long. */
      quietMs: nonNegativeInt.default(300_000),
      /** Live broker dirs: only segments with a newer segment beside them are ready. */
      requireRolled: z.boolean().default(true),
    })
    .prefault({}),
  limits: z
    .strictObject({
      maxDecompressedBatchBytes: positiveInt.default(64 * 1024 * 1024),
      /** Kafka positions are int32: a segment must stay below 2 GiB. */
      maxSegmentBytes: positiveInt.max(2 ** 31 - 1).default(2 ** 31 - 1),
    })
    .prefault({}),
  indexIntervalBytes: positiveInt.default(4096),
  metrics: z
    .strictObject({
      port: z.int().min(0).max(65535).default(9464),
      host: z.string().min(1).default('0.0.0.0'),
    })
    .prefault({}),
  log: z
    .strictObject({ level: z.enum(LOG_LEVELS).default('info'), pretty: z.boolean().default(false) })
    .prefault({}),
});
// The codec/level cross-check lives in validateConfig (load.ts): zod skips object refinements
// when any field failed, and a ConfigError must list every problem at once.

export type Config = z.output<typeof ConfigSchema>;
/** What a file, the environment or flags may set: any subset of the fields. */
export type ConfigInput = z.input<typeof ConfigSchema>;
