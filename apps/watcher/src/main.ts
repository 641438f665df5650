/**
 * seglift-watcher: queues finished Kafka segments for the seglift workers. Everything an operator
 * needs is in HELP (`seglift-watcher --help`); apps/watcher/README.md has the design.
 */
import { realpathSync } from 'node:fs';
import {
  type Config,
  ConfigError,
  describeSettings,
  FlagError,
  type FlagOptions,
  loadConfigWithSources,
  metricsPort,
  metricsPortInUse,
  parseFlags,
} from '@seglift/config';
import {
  createLogger,
  createMetrics,
  type HttpServerHandle,
  type Logger,
  type SegliftMetrics,
  setQueueCounts,
  startHttpServer,
} from '@seglift/observability';
import { createRedis, openQueue, waitForRedis } from '@seglift/queue';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { runOnce } from './once.js';
import { startWatching } from './watch.js';

const PROGRAM = 'seglift-watcher';
const EXIT_OK = 0;
const EXIT_SEGMENTS_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_RUNTIME = 3;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  root: { type: 'string', multiple: true },
  'redis-url': { type: 'string' },
  once: { type: 'boolean' },
  wait: { type: 'boolean' },
  'redis-timeout-ms': { type: 'string' },
  'metrics-port': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagOptions;

const HELP = `Usage: seglift-watcher [--once [--wait]] [options]

Finds the Kafka segments under the roots that are ready to convert and queues each once on Redis
(BullMQ) for seglift-worker processes. A segment is ready once Kafka has rolled it (a newer
segment exists beside it); in an archive (readiness.requireRolled: false) the newest segment of
a partition is ready too, once unchanged for readiness.quietMs. A job's id is a hash of the
segment's real path, size and mtime: several watchers, or reruns, never queue one twice, and a
segment a worker converted is not queued again.

Modes:
  (default)       a daemon: watches the roots and rescans them every 10 minutes; serves
                  /metrics (seglift_queue_jobs), /healthz and /readyz; stops on SIGTERM/SIGINT
  --once          scans the roots once, queues every ready segment, exits
  --once --wait   then waits until the workers have handled every queued segment, and exits
                  with the migration's result (a Kubernetes Job); serves /metrics meanwhile

Options:
  -c, --config FILE        YAML or JSON config file (default $SEGLIFT_CONFIG)
  --root DIR               a directory to scan: a broker log.dir, a parent of several, or one
                           partition directory (repeatable; replaces roots)
  --redis-url URL          redis://[user:password@]host:port/db (redis.url)
  --redis-timeout-ms MS    how long Redis may take to answer at start (default 60000), then exit 3
  --metrics-port N         port of /metrics, /healthz, /readyz (metrics.port; default 9465 here,
                           9464 for seglift-worker, so both run on one host; 0: any free port)
  --log-level L            fatal|error|warn|info|debug|trace|silent (log.level)
  -h, --help               this text

${describeSettings([
  ['roots', 'where segments are looked for (at least one; --root)'],
  ['readiness.requireRolled', 'true: a live log dir, the active segment waits; false: an archive'],
  ['readiness.quietMs', 'archive: how long the newest segment must be unchanged (300000)'],
  ['redis.url', 'the queue (redis://127.0.0.1:6379)'],
  ['queue.name', 'queue name (segments); the workers must use the same'],
  ['queue.prefix', 'Redis key prefix (seglift)'],
  ['worker.attempts', 'tries of a segment whose conversion failed for a passing reason (5)'],
  ['worker.backoffMs', 'first wait before a retry, doubled each time (5000)'],
  [
    'watcher.noWorkerTimeoutMs',
    '--wait: give up (exit 3) when nothing finished for this long and no worker is connected (900000)',
  ],
  ['metrics.port', '--metrics-port'],
  ['metrics.host', 'address the metrics server listens on (0.0.0.0)'],
  ['log.level', '--log-level (info)'],
  ['log.pretty', 'human-readable logs instead of JSON lines (false)'],
])}

Logs: one JSON object per line on stderr. Each segment the workers gave up on is logged with
error.code, error.file, error.position and error.offset; 'seglift inspect FILE --deep-iteration'
shows the bytes there.

Exit codes (as seglift's):
  0  ok; with --once --wait: every queued segment was converted or needed nothing
  1  --once --wait: some segments failed (each logged): bad input, a rerun will not help
  2  usage or configuration error (every problem listed), or the metrics port is in use
  3  runtime error: Redis did not answer within --redis-timeout-ms, jobs kept vanishing from
     the queue (Redis losing data), no segment finished for watcher.noWorkerTimeoutMs while no
     worker was connected (the segments still queued are logged), internal error. A rerun
     queues only what is not done yet.
`;

const usageHint = `Run '${PROGRAM} --help' for usage.\n`;

async function main(argv: string[]): Promise<number> {
  let values: ReturnType<typeof parseFlags>['values'];
  try {
    values = parseFlags(argv, OPTIONS, { allowPositionals: false }).values;
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    process.stderr.write(`${PROGRAM}: ${err.message}\n${usageHint}`);
    return EXIT_USAGE;
  }
  if (values.help) {
    process.stdout.write(HELP);
    return EXIT_OK;
  }
  if (values.wait && !values.once) {
    process.stderr.write(`${PROGRAM}: --wait goes with --once\n${usageHint}`);
    return EXIT_USAGE;
  }
  const redisTimeoutMs = Number(values['redis-timeout-ms'] ?? 60_000);
  if (!Number.isInteger(redisTimeoutMs) || redisTimeoutMs <= 0) {
    process.stderr.write(`${PROGRAM}: --redis-timeout-ms must be a positive integer\n${usageHint}`);
    return EXIT_USAGE;
  }
  const port = values['metrics-port'];
  let config: Config;
  let warnings: string[];
  try {
    ({ config, warnings } = loadConfigWithSources({
      file: values.config as string | undefined,
      flags: {
        roots: values.root,
        'redis.url': values['redis-url'],
        'log.level': values['log-level'],
        // Checked by the schema (an integer 0..65535) with every other problem.
        'metrics.port': typeof port === 'string' && /^\d+$/.test(port) ? Number(port) : port,
      },
    }));
    if (config.roots.length === 0) {
      throw new ConfigError([
        { path: 'roots', message: 'at least one root directory is required (--root DIR)' },
      ]);
    }
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return EXIT_USAGE;
  }
  const logger = createLogger({ name: PROGRAM, level: config.log.level, pretty: config.log.pretty });
  for (const w of warnings) logger.warn(w);
  const once = values.once === true;
  const wait = values.wait === true;
  // Bound before Redis is touched: a port in use is a configuration problem, said at once.
  const metrics = createMetrics();
  let server: HttpServerHandle | undefined;
  let redis: Redis | undefined;
  if (!once || wait) {
    try {
      server = await startHttpServer({
        port: metricsPort(config, PROGRAM),
        host: config.metrics.host,
        registry: metrics.registry,
        ready: async () => (await redis?.ping().catch(() => '')) === 'PONG',
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      logger.error(metricsPortInUse(PROGRAM, config.metrics.host, metricsPort(config, PROGRAM)));
      return EXIT_USAGE;
    }
  }
  redis = createRedis(config.redis.url);
  redis.on('error', (err) => logger.warn({ err }, 'redis error'));
  try {
    await waitForRedis(redis, redisTimeoutMs);
  } catch (err) {
    logger.error({ err }, 'Redis unreachable');
    redis.disconnect();
    await server?.close();
    return EXIT_RUNTIME;
  }
  const queue = openQueue(config, redis);
  queue.on('error', (err) => logger.warn({ err }, 'queue error'));
  const stopGauge = server ? queueGauge(queue, metrics) : () => {};
  try {
    if (once) {
      if (server) logger.info({ metricsPort: server.port }, 'serving /metrics, /healthz, /readyz');
      return await scanOnce(config, queue, redis, logger, wait);
    }
    // The daemon says its port with 'watching', once it listens for signals.
    return await watch(config, queue, redis, logger, server?.port);
  } finally {
    stopGauge();
    await server?.close();
    await queue.close();
    redis.disconnect();
  }
}

/** `--once [--wait]`: the migration's result as the exit code. */
async function scanOnce(
  config: Config,
  queue: ReturnType<typeof openQueue>,
  redis: Redis,
  logger: Logger,
  wait: boolean,
): Promise<number> {
  const result = await runOnce({ config, queue, redis, logger, wait });
  // The worker's log of the failure carries the error's code, file, position and offset: so
  // does this line, where the operator of a Job looks first.
  for (const f of result.failed)
    logger.error({ jobId: f.id, segment: f.path, error: jobError(f.reason) }, 'segment failed');
  for (const l of result.lost)
    logger.error({ jobId: l.id, segment: l.path }, 'job kept disappearing from the queue');
  for (const a of result.abandoned)
    logger.error({ jobId: a.id, segment: a.path }, 'segment still queued: no worker left to convert it');
  logger.info(
    {
      partitions: result.partitions,
      ready: result.ready,
      queued: result.queued,
      alreadyDone: result.alreadyDone,
      succeeded: result.succeeded,
      failed: result.failed.length,
      lost: result.lost.length,
      abandoned: result.abandoned.length,
    },
    wait ? 'run finished' : 'scan finished',
  );
  // Bad segments win over lost or abandoned jobs: a rerun would fail on them again.
  if (result.failed.length > 0) return EXIT_SEGMENTS_FAILED;
  return result.lost.length > 0 || result.abandoned.length > 0 ? EXIT_RUNTIME : EXIT_OK;
}

/** The daemon: chokidar on the roots until SIGTERM/SIGINT. */
async function watch(
  config: Config,
  queue: Queue,
  redis: Redis,
  logger: Logger,
  metricsPort: number | undefined,
): Promise<number> {
  const roots = config.roots.map((r) => {
    try {
      return realpathSync(r);
    } catch {
      logger.warn({ root: r }, 'root does not exist');
      return r;
    }
  });
  const handle = startWatching({ config: { ...config, roots }, queue, redis, logger });
  // Listening for signals before saying 'watching': a stop sent on that line must not kill us.
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await handle.ready;
  logger.info({ roots, metricsPort }, 'watching');
  await stopped;
  logger.info('shutting down');
  await handle.close();
  return EXIT_OK;
}

/** seglift_queue_jobs{state}, every 15 s (and once at start); returns the stop function. */
function queueGauge(queue: Queue, metrics: SegliftMetrics): () => void {
  const update = () =>
    queue
      .getJobCounts('waiting', 'active', 'failed', 'completed')
      .then((c) => setQueueCounts(metrics, c))
      .catch(() => {});
  void update();
  const timer = setInterval(update, 15_000);
  return () => clearInterval(timer);
}

/**
 * A failed job's reason as the error it stands for: the worker fails a job with the typed
 * error's JSON (code, message, file, position, offset); anything else is kept as its message.
 */
function jobError(reason: string): Record<string, unknown> {
  try {
    const e = JSON.parse(reason) as unknown;
    if (e !== null && typeof e === 'object' && !Array.isArray(e)) return e as Record<string, unknown>;
  } catch {
    // not JSON: a plain message
  }
  return { message: reason };
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`${PROGRAM}: ${(err as Error)?.stack ?? err}\n`);
    // exit(), not exitCode: an open Redis connection or watcher would keep the process alive.
    process.exit(EXIT_RUNTIME);
  },
);
