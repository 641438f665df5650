/**
 * seglift-watcher: queues finished Kafka segments for the seglift workers.
 *   seglift-watcher [--config FILE] [--root DIR]... [--redis-url URL] [--once [--wait]]
 *                   [--redis-timeout-ms MS]
 * Exit codes, as the seglift CLI's: 0 ok (with --once --wait: every job succeeded), 1 some
 * segments failed (the workers gave up on them: retrying the Job will not help), 2 usage or
 * configuration error, 3 runtime error (Redis unreachable at start, jobs lost by Redis, no worker
 * connected and nothing finished for watcher.noWorkerTimeoutMs, internal).
 */
import { realpathSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '@seglift/config';
import { createLogger, createMetrics, setQueueCounts, startHttpServer } from '@seglift/observability';
import { createRedis, openQueue, waitForRedis } from '@seglift/queue';
import { runOnce } from './once.js';
import { startWatching } from './watch.js';

const EXIT_OK = 0;
const EXIT_SEGMENTS_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_RUNTIME = 3;

const USAGE =
  'usage: seglift-watcher [--config FILE] [--root DIR]... [--redis-url URL] [--once [--wait]]\n' +
  '                       [--redis-timeout-ms MS] [--log-level L]\n';

async function main(argv: string[]): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    process.stderr.write(`seglift-watcher: ${(err as Error).message}\n${USAGE}`);
    return EXIT_USAGE;
  }
  const { values } = parsed;
  if (values.help) {
    process.stdout.write(USAGE);
    return EXIT_OK;
  }
  const redisTimeoutMs = Number(values['redis-timeout-ms']);
  if (!Number.isInteger(redisTimeoutMs) || redisTimeoutMs <= 0) {
    process.stderr.write(`seglift-watcher: --redis-timeout-ms must be a positive integer\n${USAGE}`);
    return EXIT_USAGE;
  }
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig({
      file: values.config,
      flags: { roots: values.root, 'redis.url': values['redis-url'], 'log.level': values['log-level'] },
    });
    if (config.roots.length === 0) {
      throw new ConfigError([{ path: 'roots', message: 'at least one root directory is required' }]);
    }
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    return EXIT_USAGE;
  }
  const logger = createLogger({
    name: 'seglift-watcher',
    level: config.log.level,
    pretty: config.log.pretty,
  });
  const redis = createRedis(config.redis.url);
  redis.on('error', (err) => logger.warn({ err }, 'redis error'));
  try {
    await waitForRedis(redis, redisTimeoutMs);
  } catch (err) {
    logger.error({ err }, 'Redis unreachable');
    redis.disconnect();
    return EXIT_RUNTIME;
  }
  const queue = openQueue(config, redis);
  queue.on('error', (err) => logger.warn({ err }, 'queue error'));

  if (values.once) {
    try {
      const result = await runOnce({ config, queue, redis, logger, wait: values.wait });
      for (const f of result.failed)
        logger.error({ jobId: f.id, segment: f.path, reason: f.reason }, 'job failed');
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
        values.wait ? 'run finished' : 'scan finished',
      );
      // Bad segments win over lost or abandoned jobs: a rerun would fail on them again.
      if (result.failed.length > 0) return EXIT_SEGMENTS_FAILED;
      return result.lost.length > 0 || result.abandoned.length > 0 ? EXIT_RUNTIME : EXIT_OK;
    } finally {
      await queue.close();
      redis.disconnect();
    }
  }

  // Long-running mode: chokidar, plus /metrics /healthz /readyz.
  const metrics = createMetrics();
  const server = await startHttpServer({
    port: config.metrics.port,
    host: config.metrics.host,
    registry: metrics.registry,
    ready: async () => (await redis.ping().catch(() => '')) === 'PONG',
  });
  const roots = config.roots.map((r) => {
    try {
      return realpathSync(r);
    } catch {
      logger.warn({ root: r }, 'root does not exist');
      return r;
    }
  });
  const handle = startWatching({ config: { ...config, roots }, queue, redis, logger });
  const gauge = setInterval(() => {
    queue
      .getJobCounts('waiting', 'active', 'failed', 'completed')
      .then((c) => setQueueCounts(metrics, c))
      .catch(() => {});
  }, 15_000);
  await handle.ready;
  logger.info({ roots, port: server.port }, 'watching');
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  logger.info('shutting down');
  clearInterval(gauge);
  await handle.close();
  await server.close();
  await queue.close();
  redis.disconnect();
  return EXIT_OK;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      root: { type: 'string', multiple: true },
      'redis-url': { type: 'string' },
      once: { type: 'boolean', default: false },
      wait: { type: 'boolean', default: false },
      'redis-timeout-ms': { type: 'string', default: '60000' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`seglift-watcher: ${(err as Error)?.stack ?? err}\n`);
    // exit(), not exitCode: an open Redis connection or watcher would keep the process alive.
    process.exit(EXIT_RUNTIME);
  },
);
