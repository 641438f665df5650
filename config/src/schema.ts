import { isAbsolute } from 'node:path';
import { DEFAULT_MAX_BATCH_BYTES } from '@seglift/format';
import { DEFAULT_COALESCE_BYTES } from '@seglift/legacy';
import {
  CONVERSION_SETTINGS,
  type ConversionSetting,
  type ConversionSettings,
  defaultConcurrency,
} from '@seglift/segment';
import * as z from 'zod/mini';
import { useEnglishZodMessages } from './zod.js';

useEnglishZodMessages();

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The metrics port of each program when metrics.port is not set: different, so both run on one host. */
export const METRICS_PORTS = { 'seglift-worker': 9464, 'seglift-watcher': 9465 } as const;
export type MetricsProgram = keyof typeof METRICS_PORTS;

/** The port `program` serves /metrics on: metrics.port when set, else its own default. */
export function metricsPort(config: { metrics: { port?: number } }, program: MetricsProgram): number {
  return config.metrics.port ?? METRICS_PORTS[program];
}

// The format's and the pipeline's own defaults, named where they are defined.
export { DEFAULT_COALESCE_BYTES, DEFAULT_MAX_BATCH_BYTES };

/** The schema of one declared conversion setting (@seglift/segment's CONVERSION_SETTINGS). */
function settingSchema(s: ConversionSetting): z.ZodMiniType {
  switch (s.type) {
    case 'codec':
      // In any case (`ZSTD`, `Zstd`): a codec name copied from elsewhere is not refused for its case.
      // (The classic API's preprocess, spelt out.)
      return z._default(
        z.pipe(
          z.transform((v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v)),
          z.enum(s.values as [string, ...string[]]),
        ),
        s.default,
      );
    case 'enum':
      return z._default(z.enum(s.values as [string, ...string[]]), s.default);
    case 'level':
      // Checked against the codec in validateConfig (levelProblems).
      return z.optional(z.int());
    case 'int':
      return z._default(z.int().check(z.minimum(s.min)), s.default);
    case 'bool':
      return z._default(z.boolean(), s.default);
  }
}

/** The declared settings whose config key is `<group>.<key>` (group '': top level), by key. */
function conversionFields<G extends string>(group: G): FieldsOf<G> {
  const fields: Record<string, z.ZodMiniType> = {};
  for (const s of CONVERSION_SETTINGS as readonly ConversionSetting[]) {
    const at = s.path.lastIndexOf('.');
    if (s.path.slice(0, Math.max(at, 0)) === group) fields[s.path.slice(at + 1)] = settingSchema(s);
  }
  return fields as FieldsOf<G>;
}

type Declared = (typeof CONVERSION_SETTINGS)[number];
type ValueOf<S extends Declared> = Required<ConversionSettings>[S['name']];
/** A declared setting's schema, typed from its declaration: optional without a default. */
type FieldOf<S extends Declared> = S['default'] extends undefined
  ? z.ZodMiniOptional<z.ZodMiniType<ValueOf<S>, ValueOf<S>>>
  : z.ZodMiniDefault<z.ZodMiniType<ValueOf<S>, S['type'] extends 'codec' ? unknown : ValueOf<S>>>;
type KeyIn<P extends string, G extends string> = G extends ''
  ? P extends `${string}.${string}`
    ? never
    : P
  : P extends `${G}.${infer K}`
    ? K
    : never;
type FieldsOf<G extends string> = { [S in Declared as KeyIn<S['path'], G>]: FieldOf<S> };

/**
 * The declared conversion settings by option name (`ConversionSettings`), as a segment job carries
 * them (@seglift/queue's SegmentJobSchema): each checked as the config checks it, one a job lacks
 * at its declared default, one this version does not declare refused.
 */
export const ConversionSettingsSchema = z.strictObject(
  Object.fromEntries(
    (CONVERSION_SETTINGS as readonly ConversionSetting[]).map((s) => [s.name, settingSchema(s)]),
  ) as { [S in Declared as S['name']]: FieldOf<S> },
);

const absolutePath = z
  .string()
  .check(z.minLength(1), z.refine(isAbsolute, { message: 'must be an absolute path' }));
const positiveInt = z.int().check(z.minimum(1));
const nonNegativeInt = z.int().check(z.minimum(0));

const redisUrl = z.string().check(
  z.refine(
    (s) => {
      try {
        const u = new URL(s);
        return (u.protocol === 'redis:' || u.protocol === 'rediss:') && u.hostname !== '';
      } catch {
        return false;
      }
    },
    { message: 'must be a redis:// or rediss:// URL like redis://user:password@host:6379/0' },
  ),
);

/** BullMQ keys are `<prefix>:<name>:...`, so neither may contain ':'. */
const redisName = z
  .string()
  .check(z.regex(/^[A-Za-z0-9_.-]+$/, { message: 'letters, digits, _ . - only (no ":")' }));

export const ConfigSchema = z.strictObject({
  /**
   * Directories seglift may rewrite: every job path (worker) and every path the CLI writes or
   * converts is checked against them by real path; inspect, verify and audit only read.
   */
  roots: z._default(z.array(absolutePath), []),
  /**
   * codec, level, grouping, coalesceBytes, maxBatchBytes, indexIntervalBytes, onlyIfSmaller,
   * segmentIndexBytes: declared in @seglift/segment's conversion-settings.ts (type, default, env
   * var, flag, help), as limits.maxDecompressedBatchBytes.
   */
  ...conversionFields(''),
  /** Keep the original files here before swapping (absolute); omitted = no backup. */
  backupDir: z.optional(absolutePath),
  /**
   * Two-phase migration's stage dir (absolute): `migrate --prepare` converts into it while the
   * broker runs, `migrate --commit` swaps from it. Same filesystem as the log dir, outside it.
   */
  stageDir: z.optional(absolutePath),
  redis: z.prefault(z.strictObject({ url: z._default(redisUrl, 'redis://127.0.0.1:6379') }), {}),
  queue: z.prefault(
    z.strictObject({ name: z._default(redisName, 'segments'), prefix: z._default(redisName, 'seglift') }),
    {},
  ),
  worker: z.prefault(
    z.strictObject({
      /**
       * Conversions in parallel per worker process (each runs in its own worker thread). Default:
       * the host's cores (a cgroup CPU quota counted), as many as its memory (a cgroup limit
       * counted) holds at 200 MiB + 48 MiB a thread (@seglift/segment's defaultConcurrency).
       */
      concurrency: z._default(positiveInt, defaultConcurrency()),
      /** Attempts for transient (I/O) failures; format errors fail at once. */
      attempts: z._default(positiveInt, 5),
      /** First retry delay; doubles each attempt. */
      backoffMs: z._default(nonNegativeInt, 5_000),
      /** BullMQ job lock; a killed worker's job is redone after about this long. */
      lockDurationMs: z._default(z.int().check(z.minimum(1000)), 30_000),
      stalledIntervalMs: z._default(z.int().check(z.minimum(1000)), 30_000),
      maxStalledCount: z._default(nonNegativeInt, 5),
      /** On SIGTERM, let running conversions finish this long before aborting them. */
      shutdownGraceMs: z._default(nonNegativeInt, 30_000),
    }),
    {},
  ),
  watcher: z.prefault(
    z.strictObject({
      /**
       * `--once --wait`: stop waiting (exit 3) when no queued segment has finished for this long
       * and no worker is connected to the queue (0 = wait forever).
       */
      noWorkerTimeoutMs: z._default(nonNegativeInt, 900_000),
    }),
    {},
  ),
  io: z.prefault(
    z.strictObject({
      /**
       * Bytes read and written per second by this process, all its conversion threads together
       * (Kafka's log.cleaner.io.max.bytes.per.second). Unset: no limit. A host setting, not a
       * conversion setting: it never changes the bytes written (nor a stage record's options).
       */
      maxBytesPerSecond: z.optional(positiveInt),
    }),
    {},
  ),
  prepare: z.prefault(
    z.strictObject({
      /**
       * Prepare (`migrate --prepare`, a worker's prepare jobs) runs at nice 10 and I/O priority
       * best-effort 6, below the broker it runs beside; false keeps the priority it was started with.
       */
      nice: z._default(z.boolean(), true),
    }),
    {},
  ),
  readiness: z.prefault(
    z.strictObject({
      /** Archive mode: the newest segment is ready once unchanged for this long. */
      quietMs: z._default(nonNegativeInt, 300_000),
      /** Live broker dirs: only segments with a newer segment beside them are ready. */
      requireRolled: z._default(z.boolean(), true),
    }),
    {},
  ),
  limits: z.prefault(
    z.strictObject({
      ...conversionFields('limits'),
      /** Kafka positions are int32: a segment must stay below 2 GiB. */
      maxSegmentBytes: z._default(z.int().check(z.minimum(1), z.maximum(2 ** 31 - 1)), 2 ** 31 - 1),
    }),
    {},
  ),
  metrics: z.prefault(
    z.strictObject({
      /**
       * /metrics, /healthz, /readyz. Unset: each program's own default (METRICS_PORTS), so that a
       * watcher and a worker on one host do not collide; 0 picks a free port.
       */
      port: z.optional(z.int().check(z.minimum(0), z.maximum(65535))),
      host: z._default(z.string().check(z.minLength(1)), '0.0.0.0'),
    }),
    {},
  ),
  log: z.prefault(
    z.strictObject({ level: z._default(z.enum(LOG_LEVELS), 'info'), pretty: z._default(z.boolean(), false) }),
    {},
  ),
});
// The codec/level cross-check lives in validateConfig (load.ts): zod skips object refinements
// when any field failed, and a ConfigError must list every problem at once.

export type Config = z.output<typeof ConfigSchema>;
/** What a file, the environment or flags may set: any subset of the fields. */
export type ConfigInput = z.input<typeof ConfigSchema>;
