#!/usr/bin/env node
/**
 * seglift-watcher: queues finished Kafka segments for the seglift workers.
 *   seglift-watcher [--config FILE] [--root DIR]... [--redis-url URL] [--once [--wait]]
 * Exit codes: 0 ok, 1 some job failed (--once --wait) or runtime error, 2 bad configuration.
 */
import { realpathSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '@seglift/config';
import { createLogger, createMetrics, setQueueCounts, startHttpServer } from '@seglift/observability';
import { runOnce } from './once.js';
import { createRedis, openQueue } from './queue.js';
import { startWatching } from './watch.js';

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      root: { type: 'string', multiple: true },
      'redis-url': { type: 'string' },
      once: { type: 'boolean', default: false },
      wait: { type: 'boolean', default: false },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: seglift-watcher [--config FILE] [--root DIR]... [--redis-url URL] [--once [--wait]] [--log-level L]\n',
    );
    return 0;
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
    return 2;
  }
  const logger = createLogger({
    name: 'seglift-watcher',
    level: config.log.level,
    pretty: config.log.pretty,
  });
  const redis = createRedis(config.redis.url);
  redis.on('error', (err) => logger.warn({ err }, 'redis error'));
  const queue = openQueue(config, redis);
  queue.on('error', (err) => logger.warn({ err }, 'queue error'));

  if (values.once) {
    try {
      const result = await runOnce({ config, queue, redis, logger, wait: values.wait });
      for (const f of result.failed)
        logger.error({ jobId: f.id, segment: f.path, reason: f.reason }, 'job failed');
      logger.info(
        {
          partitions: result.partitions,
          ready: result.ready,
          queued: result.queued,
          alreadyDone: result.alreadyDone,
          succeeded: result.succeeded,
          failed: result.failed.length,
        },
        values.wait ? 'run finished' : 'scan finished',
      );
      return result.ok ? 0 : 1;
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
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`seglift-watcher: ${(err as Error)?.stack ?? err}\n`);
    process.exitCode = 1;
  },
);
