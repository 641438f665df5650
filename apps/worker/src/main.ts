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
  type Config,
  ConfigError,
  FlagError,
  loadConfigWithSources,
  metricsPort,
  metricsPortInUse,
  parseFlags,
} from '@seglift/config';
import { createLogger, createMetrics, type HttpServerHandle, startHttpServer } from '@seglift/observability';
import { createRedis, waitForRedisAt } from '@seglift/queue';
import { Queue } from 'bullmq';
import { EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, HELP, OPTIONS, PROGRAM, usageHint } from './usage.js';
import { startWorker, type WorkerHandle } from './worker.js';

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
