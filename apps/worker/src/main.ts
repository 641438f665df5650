/**
 * seglift-worker: converts queued segments with @seglift/segment.
 *   seglift-worker [--config FILE] [--root DIR]... [--redis-url URL] [--concurrency N]
 *                  [--exit-when-drained [--idle-ms MS]] [--redis-timeout-ms MS]
 * --exit-when-drained (Kubernetes work-queue Job mode): exit 0 once the queue has had no waiting,
 * delayed or active job for idle-ms (default 30 s).
 * SIGTERM/SIGINT: stop taking jobs, let running conversions finish within
 * worker.shutdownGraceMs, abort (and requeue) the rest, then exit 0 as a daemon, or, in Job mode,
 * 143 (SIGTERM) / 130 (SIGINT): the queue was not drained, so a parallel Job must not count this
 * pod as a success (one succeeded pod ends a Job without completions) and must replace it.
 * Exit codes: 0 ok, 2 usage or configuration error, 3 runtime error (Redis unreachable at start,
 * internal), 128+signal stopped before the queue was drained (Job mode). A bad segment is a
 * failed queue job, reported by seglift-watcher --once --wait, never a worker exit code.
 */
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from '@seglift/config';
import { createLogger, createMetrics, startHttpServer } from '@seglift/observability';
import { createRedis, waitForRedisAt } from '@seglift/queue';
import { Queue } from 'bullmq';
import { startWorker } from './worker.js';

const EXIT_OK = 0;
const EXIT_USAGE = 2;
const EXIT_RUNTIME = 3;

const USAGE =
  'usage: seglift-worker [--config FILE] [--root DIR]... [--redis-url URL] [--concurrency N] [--log-level L]\n' +
  '                      [--exit-when-drained [--idle-ms MS]] [--redis-timeout-ms MS]\n';

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`seglift-worker: ${(err as Error).message}\n${USAGE}`);
    return EXIT_USAGE;
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return EXIT_OK;
  }
  const idleMs = Number(values['idle-ms']);
  const redisTimeoutMs = Number(values['redis-timeout-ms']);
  for (const [flag, n] of [
    ['--idle-ms', idleMs],
    ['--redis-timeout-ms', redisTimeoutMs],
  ] as const) {
    if (!Number.isInteger(n) || n <= 0) {
      process.stderr.write(`seglift-worker: ${flag} must be a positive integer\n${USAGE}`);
      return EXIT_USAGE;
    }
  }
  const jobMode = values['exit-when-drained'];
  let config: ReturnType<typeof loadConfig>;
  try {
    const concurrency = values.concurrency;
    config = loadConfig({
      file: values.config,
      flags: {
        roots: values.root,
        'redis.url': values['redis-url'],
        'worker.concurrency':
          concurrency === undefined
            ? undefined
            : /^\d+$/.test(concurrency)
              ? Number(concurrency)
              : concurrency,
        'log.level': values['log-level'],
      },
    });
    if (config.roots.length === 0) {
      throw new ConfigError([{ path: 'roots', message: 'at least one root directory is required' }]);
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return EXIT_USAGE;
  }
  const logger = createLogger({ name: 'seglift-worker', level: config.log.level, pretty: config.log.pretty });
  // Before anything else: BullMQ's connections would otherwise wait for Redis forever.
  try {
    await waitForRedisAt(config.redis.url, redisTimeoutMs);
  } catch (err) {
    logger.error({ err }, 'Redis unreachable');
    return EXIT_RUNTIME;
  }
  const metrics = createMetrics();
  const handle = await startWorker({ config, logger, metrics });
  const server = await startHttpServer({
    port: config.metrics.port,
    host: config.metrics.host,
    registry: metrics.registry,
    ready: async () => handle.worker.isRunning() && (await handle.redis.ping().catch(() => '')) === 'PONG',
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
  const stopDrainWatch = new AbortController();
  const signal = await new Promise<'SIGTERM' | 'SIGINT' | 'drained'>((resolve) => {
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

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      root: { type: 'string', multiple: true },
      'redis-url': { type: 'string' },
      concurrency: { type: 'string' },
      'log-level': { type: 'string' },
      'exit-when-drained': { type: 'boolean', default: false },
      'idle-ms': { type: 'string', default: '30000' },
      'redis-timeout-ms': { type: 'string', default: '60000' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`seglift-worker: ${(err as Error)?.stack ?? err}\n`);
    // exit(), not exitCode: open connections or worker threads would keep the process alive.
    process.exit(EXIT_RUNTIME);
  },
);
