/**
 * seglift-watcher: queues finished Kafka segments for the seglift workers. Everything an operator
 * needs is in HELP (`seglift-watcher --help`); apps/watcher/README.md has the design.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  type Config,
  ConfigError,
  FlagError,
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
import { JobPlanner } from './plan.js';
import {
  EXIT_OK,
  EXIT_RUNTIME,
  EXIT_SEGMENTS_FAILED,
  EXIT_USAGE,
  HELP,
  OPTIONS,
  PROGRAM,
  usageHint,
} from './usage.js';
import { startWatching } from './watch.js';

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
        // The schema wants an absolute path; a flag is relative to where the watcher was started.
        stageDir: typeof values['stage-dir'] === 'string' ? resolve(values['stage-dir']) : undefined,
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
  // Every log dir's placement before anything is queued: one of a running broker without a usable
  // stage dir is a setup to fix, said at once (exit 2), not a log dir silently left out.
  const planner = new JobPlanner(config, logger);
  const refused = await refusals(planner);
  if (refused.length > 0) {
    for (const r of refused) logger.error({ logDir: r.logDir }, `refusing to start: ${r.reason}`);
    redis.disconnect();
    await server?.close();
    return EXIT_USAGE;
  }
  const queue = openQueue(config, redis);
  queue.on('error', (err) => logger.warn({ err }, 'queue error'));
  const stopGauge = server ? queueGauge(queue, metrics) : () => {};
  try {
    if (once) {
      if (server) logger.info({ metricsPort: server.port }, 'serving /metrics, /healthz, /readyz');
      return await scanOnce(config, queue, redis, logger, wait, planner);
    }
    // The daemon says its port with 'watching', once it listens for signals.
    return await watch(config, queue, redis, logger, server?.port, planner);
  } finally {
    stopGauge();
    await server?.close();
    await queue.close();
    redis.disconnect();
  }
}

/** Log dirs under the roots where nothing could be queued (a running broker's, no usable stage dir). */
async function refusals(planner: JobPlanner): Promise<Array<{ logDir: string; reason: string }>> {
  const out: Array<{ logDir: string; reason: string }> = [];
  for (const logDir of await planner.logDirs()) {
    const p = await planner.placement(logDir);
    if (p.kind === 'refused') out.push({ logDir, reason: p.reason });
  }
  return out;
}

/** `--once [--wait]`: the migration's result as the exit code. */
async function scanOnce(
  config: Config,
  queue: ReturnType<typeof openQueue>,
  redis: Redis,
  logger: Logger,
  wait: boolean,
  planner: JobPlanner,
): Promise<number> {
  const result = await runOnce({ config, queue, redis, logger, wait, planner });
  if (result.refused.length > 0) {
    for (const r of result.refused) logger.error({ logDir: r.logDir }, `nothing queued: ${r.reason}`);
    return EXIT_USAGE;
  }
  for (const p of result.prepared)
    logger.info(
      { logDir: p, stageDir: config.stageDir },
      "a running broker's log dir: its segments were prepared into the stage dir; commit with the broker stopped: seglift migrate <log dir> --commit --stage-dir <stage dir>",
    );
  // The worker's log of the failure carries the error's code, file, position and offset: so
  // does this line, where the operator of a Job looks first.
  for (const f of result.failed)
    logger.error({ jobId: f.id, segment: f.path, error: jobError(f.reason) }, 'segment failed');
  for (const l of result.lost)
    logger.error({ jobId: l.id, segment: l.path }, 'job kept disappearing from the queue');
  for (const a of result.abandoned)
    logger.error({ jobId: a.id, segment: a.path }, 'segment still queued: no worker left to convert it');
  for (const u of result.unconverted)
    logger.error({ segment: u.path, reason: u.reason }, `segment not done after the run: ${u.reason}`);
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
      ...(wait ? { notDone: result.unconverted.length } : {}),
    },
    wait ? 'run finished' : 'scan finished',
  );
  // Bad segments win over lost or abandoned jobs: a rerun would fail on them again. A segment the
  // run left unconverted while its job said done is named and fails the run too.
  if (result.failed.length > 0 || result.unconverted.length > 0) return EXIT_SEGMENTS_FAILED;
  return result.lost.length > 0 || result.abandoned.length > 0 ? EXIT_RUNTIME : EXIT_OK;
}

/** The daemon: chokidar on the roots until SIGTERM/SIGINT. */
async function watch(
  config: Config,
  queue: Queue,
  redis: Redis,
  logger: Logger,
  metricsPort: number | undefined,
  planner: JobPlanner,
): Promise<number> {
  const roots = config.roots.map((r) => {
    try {
      return realpathSync(r);
    } catch {
      logger.warn({ root: r }, 'root does not exist');
      return r;
    }
  });
  const handle = startWatching({ config: { ...config, roots }, queue, redis, logger, planner });
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
