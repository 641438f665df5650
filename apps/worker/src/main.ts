#!/usr/bin/env node
/**
 * seglift-worker: converts queued segments with @seglift/segment.
 *   seglift-worker [--config FILE] [--root DIR]... [--redis-url URL] [--concurrency N]
 *                  [--exit-when-drained [--idle-ms MS]]
 * --exit-when-drained: exit 0 once the queue has had no waiting, delayed or active job for
 * idle-ms (default 30 s), for Kubernetes work-queue Jobs started beside `seglift-watcher --once`.
 * SIGTERM/SIGINT: stop taking jobs, let running conversions finish within
 * worker.shutdownGraceMs, abort (and requeue) the rest, exit 0.
 * Exit codes: 0 ok, 1 runtime error, 2 bad configuration.
 */
import { parseArgs } from 'node:util';
import { type Config, ConfigError, loadConfig } from '@seglift/config';
import { createLogger, createMetrics, startHttpServer } from '@seglift/observability';
import { Queue } from 'bullmq';
import { createRedis, startWorker } from './worker.js';

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string', short: 'c' },
      root: { type: 'string', multiple: true },
      'redis-url': { type: 'string' },
      concurrency: { type: 'string' },
      'log-level': { type: 'string' },
      'exit-when-drained': { type: 'boolean', default: false },
      'idle-ms': { type: 'string', default: '30000' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      'usage: seglift-worker [--config FILE] [--root DIR]... [--redis-url URL] [--concurrency N] [--log-level L]\n' +
        '                      [--exit-when-drained [--idle-ms MS]]\n',
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
  const idleMs = Number(values['idle-ms']);
  const signal = await new Promise<string>((resolve) => {
    process.once('SIGTERM', () => resolve('SIGTERM'));
    process.once('SIGINT', () => resolve('SIGINT'));
    if (values['exit-when-drained']) {
      void waitUntilDrained(config, Number.isFinite(idleMs) ? idleMs : 30_000).then(() => resolve('drained'));
    }
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

/** Resolves once the queue had no waiting/delayed/active job for `idleMs` straight. */
async function waitUntilDrained(config: Config, idleMs: number): Promise<void> {
  const conn = createRedis(config.redis.url);
  conn.on('error', () => {});
  const queue = new Queue(config.queue.name, { connection: conn, prefix: config.queue.prefix });
  let idleSince: number | undefined;
  try {
    for (;;) {
      const c = await queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
      const busy = Object.values(c).reduce((a, b) => a + b, 0);
      if (busy > 0) idleSince = undefined;
      else idleSince ??= Date.now();
      if (idleSince !== undefined && Date.now() - idleSince >= idleMs) return;
      await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(50, idleMs / 4))));
    }
  } finally {
    await queue.close();
    conn.disconnect();
  }
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
