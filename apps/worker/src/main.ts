/**
 * seglift-worker: converts queued segments with @seglift/segment. Everything an operator needs is
 * in HELP (`seglift-worker --help`); apps/worker/README.md has the design.
 * SIGTERM/SIGINT: stop taking jobs, let running conversions finish within
 * worker.shutdownGraceMs, abort (and requeue) the rest, then exit 0 as a daemon, or, in Job mode,
 * 143 (SIGTERM) / 130 (SIGINT): the queue was not drained, so a parallel Job must not count this
 * pod as a success (one succeeded pod ends a Job without completions) and must replace it.
 */
import { constants } from 'node:os';
import {
  CODECS,
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
import { createLogger, createMetrics, type HttpServerHandle, startHttpServer } from '@seglift/observability';
import { createRedis, waitForRedisAt } from '@seglift/queue';
import { Queue } from 'bullmq';
import { startWorker, type WorkerHandle } from './worker.js';

const PROGRAM = 'seglift-worker';
const EXIT_OK = 0;
const EXIT_USAGE = 2;
const EXIT_RUNTIME = 3;

const OPTIONS = {
  config: { type: 'string', short: 'c' },
  root: { type: 'string', multiple: true },
  'redis-url': { type: 'string' },
  concurrency: { type: 'string' },
  'log-level': { type: 'string' },
  'exit-when-drained': { type: 'boolean' },
  'idle-ms': { type: 'string' },
  'redis-timeout-ms': { type: 'string' },
  'metrics-port': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagOptions;

const HELP = `Usage: seglift-worker [--exit-when-drained [--idle-ms MS]] [options]

Converts the segments seglift-watcher queued on Redis (BullMQ), in place, as 'seglift migrate'
would: magic 0/1 upconverted to v2, batches recompressed to the target codec, indexes rebuilt,
each result verified against its original before a crash-safe swap. Every path is checked
against the roots; a Redis lock per partition keeps two workers out of one partition. Start
as many as the disks and cores allow, on every host that mounts the log dirs.

Options:
  -c, --config FILE        YAML or JSON config file (default $SEGLIFT_CONFIG)
  --root DIR               a directory the worker may rewrite in (repeatable; replaces roots)
  --redis-url URL          redis://[user:password@]host:port/db (redis.url)
  --concurrency N          segments converted at once, one thread each (worker.concurrency)
  --exit-when-drained      exit 0 once the queue has had no waiting, delayed or active job for
                           --idle-ms (a Kubernetes work-queue Job); otherwise run until stopped
  --idle-ms MS             with --exit-when-drained (default 30000)
  --redis-timeout-ms MS    how long Redis may take to answer at start (default 60000), then exit 3
  --metrics-port N         port of /metrics, /healthz, /readyz (metrics.port; default 9464 here,
                           9465 for seglift-watcher, so both run on one host; 0: any free port)
  --log-level L            fatal|error|warn|info|debug|trace|silent (log.level)
  -h, --help               this text

${describeSettings([
  ['roots', 'where the worker may read and rewrite (at least one; --root)'],
  ['codec', `target codec: ${CODECS.join('|')}, any case (zstd)`],
  ['level', 'compression level (the codec default)'],
  [
    'grouping',
    'coalesce (default): consecutive legacy records share batches; kafka: one batch per legacy entry',
  ],
  ['coalesceBytes', 'with coalesce: records per batch up to this many bytes (1048576)'],
  ['maxBatchBytes', 'largest batch written (1048588)'],
  ['onlyIfSmaller', 'keep a v2 batch in its codec when recompression would grow it (false)'],
  ['indexIntervalBytes', "the topic's index.interval.bytes (4096)"],
  ['backupDir', 'copy every original here before replacing it (none)'],
  ['limits.maxDecompressedBatchBytes', 'refuse a batch that decompresses to more (64 MiB)'],
  ['limits.maxSegmentBytes', 'refuse a larger segment (2 GiB - 1)'],
  ['readiness.requireRolled', 'true: refuse an active segment; false: an archive, every segment'],
  ['redis.url', 'the queue (redis://127.0.0.1:6379)'],
  ['queue.name', 'queue name (segments); the watcher must use the same'],
  ['queue.prefix', 'Redis key prefix (seglift)'],
  ['worker.concurrency', '--concurrency (CPU count)'],
  ['worker.lockDurationMs', "a job's lock; a killed worker's job is redone after about this long (30000)"],
  ['worker.stalledIntervalMs', 'how often stalled jobs are looked for (30000)'],
  ['worker.maxStalledCount', 'stalls before a job fails (5)'],
  ['worker.shutdownGraceMs', 'on SIGTERM, how long running conversions may finish (30000)'],
  ['metrics.port', '--metrics-port'],
  ['metrics.host', 'address the metrics server listens on (0.0.0.0)'],
  ['log.level', '--log-level (info)'],
  ['log.pretty', 'human-readable logs instead of JSON lines (false)'],
])}

A bad segment fails its job (format errors at once, passing I/O errors after worker.attempts
tries) and is left exactly as it was; seglift-watcher --once --wait reports it. The worker's
log line carries error.code, error.file, error.position and error.offset.

SIGTERM/SIGINT: no new jobs; running conversions get worker.shutdownGraceMs to finish, then are
aborted (temp files removed, originals untouched) and handed back to the queue.

Exit codes (as seglift's):
  0    stopped by SIGTERM/SIGINT as a daemon; with --exit-when-drained, the queue was drained
  2    usage or configuration error (every problem listed), or the metrics port is in use
  3    runtime error: Redis did not answer within --redis-timeout-ms, internal error
  143  --exit-when-drained: stopped by SIGTERM (130: SIGINT) before the queue was drained,
       after the graceful stop above
`;

const usageHint = `Run '${PROGRAM} --help' for usage.\n`;

/** A flag's text as a number when it is one; anything else goes to the schema, which says why. */
const asInt = (v: unknown) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v);

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
  const idleMs = Number(values['idle-ms'] ?? 30_000);
  const redisTimeoutMs = Number(values['redis-timeout-ms'] ?? 60_000);
  for (const [flag, n] of [
    ['--idle-ms', idleMs],
    ['--redis-timeout-ms', redisTimeoutMs],
  ] as const) {
    if (!Number.isInteger(n) || n <= 0) {
      process.stderr.write(`${PROGRAM}: ${flag} must be a positive integer\n${usageHint}`);
      return EXIT_USAGE;
    }
  }
  const jobMode = values['exit-when-drained'] === true;
  let config: Config;
  let warnings: string[];
  try {
    ({ config, warnings } = loadConfigWithSources({
      file: values.config as string | undefined,
      flags: {
        roots: values.root,
        'redis.url': values['redis-url'],
        'worker.concurrency': asInt(values.concurrency),
        'log.level': values['log-level'],
        'metrics.port': asInt(values['metrics-port']),
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
  // The metrics port first: a port in use is a configuration problem, said before any job is
  // taken (and never after a conversion has started).
  const metrics = createMetrics();
  let handle: WorkerHandle | undefined;
  let server: HttpServerHandle;
  try {
    server = await startHttpServer({
      port: metricsPort(config, PROGRAM),
      host: config.metrics.host,
      registry: metrics.registry,
      ready: async () =>
        handle?.worker.isRunning() === true && (await handle.redis.ping().catch(() => '')) === 'PONG',
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    logger.error(metricsPortInUse(PROGRAM, config.metrics.host, metricsPort(config, PROGRAM)));
    return EXIT_USAGE;
  }
  // Before anything else: BullMQ's connections would otherwise wait for Redis forever.
  try {
    await waitForRedisAt(config.redis.url, redisTimeoutMs);
  } catch (err) {
    logger.error({ err }, 'Redis unreachable');
    await server.close();
    return EXIT_RUNTIME;
  }
  handle = await startWorker({ config, logger, metrics });
  const stopDrainWatch = new AbortController();
  // Listening for signals before saying 'started': a stop sent on that line must not kill us.
  const stopped = new Promise<'SIGTERM' | 'SIGINT' | 'drained'>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    if (jobMode) {
      waitUntilDrained(config, idleMs, stopDrainWatch.signal).then(
        (drained) => {
          if (drained) resolve('drained');
        },
        (err) => logger.warn({ err }, 'watching the queue for the drain failed'),
      );
    }
  });
  logger.info(
    {
      queue: config.queue.name,
      concurrency: config.worker.concurrency,
      roots: config.roots,
      metricsPort: server.port,
      exitWhenDrained: jobMode,
    },
    'worker started',
  );
  const signal = await stopped;
  stopDrainWatch.abort();
  // Job mode: only a drained queue is a success; a signal is a stop, reported like any process
  // that a signal ended (128 + its number), so that the Job replaces this pod.
  const code = signal === 'drained' || !jobMode ? EXIT_OK : 128 + constants.signals[signal];
  logger.info({ signal, exitCode: code }, 'stopping: no new jobs, finishing running conversions');
  // Last resort if Redis never comes back while closing.
  const hard = setTimeout(() => {
    logger.error('shutdown did not complete; exiting');
    process.exit(code);
  }, config.worker.shutdownGraceMs + 20_000);
  hard.unref();
  await handle.shutdown();
  await server.close();
  logger.info({ exitCode: code }, 'stopped');
  return code;
}

/**
 * Resolves true once the queue had no waiting/delayed/active job for `idleMs` straight, false
 * when `stop` aborts first.
 */
async function waitUntilDrained(config: Config, idleMs: number, stop: AbortSignal): Promise<boolean> {
  const conn = createRedis(config.redis.url);
  conn.on('error', () => {});
  const queue = new Queue(config.queue.name, { connection: conn, prefix: config.queue.prefix });
  let idleSince: number | undefined;
  try {
    while (!stop.aborted) {
      const c = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
      const busy = Object.values(c).reduce((a, b) => a + b, 0);
      if (busy > 0) idleSince = undefined;
      else idleSince ??= Date.now();
      if (idleSince !== undefined && Date.now() - idleSince >= idleMs) return true;
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(1000, Math.max(50, idleMs / 4)));
        stop.addEventListener(
          'abort',
          () => {
            clearTimeout(t);
            r();
          },
          { once: true },
        );
      });
    }
    return false;
  } finally {
    await queue.close().catch(() => {});
    conn.disconnect();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`${PROGRAM}: ${(err as Error)?.stack ?? err}\n`);
    // exit(), not exitCode: open connections or worker threads would keep the process alive.
    process.exit(EXIT_RUNTIME);
  },
);
