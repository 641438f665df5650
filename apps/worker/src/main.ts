#!/usr/bin/env node
/**
 * seglift-worker: converts queued segments with @seglift/segment.
 *   seglift-worker [--config FILE] [--root DIR]... [--redis-url URL] [--concurrency N]
 * SIGTERM/SIGINT: stop taking jobs, let running conversions finish within
 * worker.shutdownGraceMs, abort (and requeue) the rest, exit 0.
 * Exit codes: 0 ok, 1 runtime error, 2 bad configuration.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '@seglift/config';
import { createLogger, createMetrics, startHttpServer } from '@seglift/observability';
import { startWorker } from './worker.js';

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      root: { type: 'string', multiple: true },
      'redis-url': { type: 'string' },
      concurrency: { type: 'string' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: seglift-worker [--config FILE] [--root DIR]... [--redis-url URL] [--concurrency N] [--log-level L]\n',
    );
    return 0;
  }
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
    return 2;
  }
  const logger = createLogger({ name: 'seglift-worker', level: config.log.level, pretty: config.log.pretty });
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
    },
    'worker started',
  );
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
  });
  logger.info({ signal }, 'stopping: no new jobs, finishing running conversions');
  // Last resort if Redis never comes back while closing.
  const hard = setTimeout(() => {
    logger.error('shutdown did not complete; exiting');
    process.exit(0);
  }, config.worker.shutdownGraceMs + 20_000);
  hard.unref();
  await handle.shutdown();
  await server.close();
  logger.info('stopped');
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`seglift-worker: ${(err as Error)?.stack ?? err}\n`);
    process.exitCode = 1;
  },
);
