/**
 * seglift-watcher: queues finished Kafka segments for the seglift workers. Everything an operator
 * needs is in HELP (`seglift-watcher --help`); apps/watcher/README.md has the design. The skeleton
 * (flags, config, logger, metrics server, Redis at start, exit codes) is @seglift/queue's
 * runQueueProgram.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '@seglift/config';
import type { Logger, SegliftMetrics } from '@seglift/observability';
import { type openQueue, runQueueProgram, type StopSignal } from '@seglift/queue';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { JobPlanner } from './plan.js';
import { EXIT_OK, EXIT_RUNTIME, EXIT_SEGMENTS_FAILED, EXIT_USAGE, HELP, OPTIONS, PROGRAM } from './usage.js';

/** What a run needs beyond its flags: loaded once flags are read (--help needs none of it). */
const loadRun = () =>
  Promise.all([
    import('@seglift/observability'),
    import('@seglift/queue'),
    import('./once.js'),
    import('./plan.js'),
    import('./watch.js'),
  ]).then(([observability, queue, once, plan, watch]) => ({
    sampleQueueOnScrape: observability.sampleQueueOnScrape,
    createRedis: queue.createRedis,
    openQueue: queue.openQueue,
    runOnce: once.runOnce,
    JobPlanner: plan.JobPlanner,
    startWatching: watch.startWatching,
  }));
type Run = Awaited<ReturnType<typeof loadRun>>;

runQueueProgram({
  name: PROGRAM,
  help: HELP,
  // package.json sits one level above src/ and dist/ (main.js, the entry, never a chunk).
  version: () =>
    (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
      .version,
  options: OPTIONS,
  checkFlags: (values) => (values.wait && !values.once ? '--wait goes with --once' : undefined),
  configFlags: (values) => ({
    // The schema wants an absolute path; a flag is relative to where the watcher was started.
    stageDir: typeof values['stage-dir'] === 'string' ? resolve(values['stage-dir']) : undefined,
  }),
  // --once alone is done in moments: nothing to scrape.
  serves: (values) => values.once !== true || values.wait === true,
  async run({ values, config, logger, metrics, server, setReady, stopSignal }) {
    const run = await loadRun();
    const { createRedis, openQueue, JobPlanner } = run;
    const redis = createRedis(config.redis.url);
    redis.on('error', (err) => logger.warn({ err }, 'redis error'));
    setReady(async () => (await redis.ping().catch(() => '')) === 'PONG');
    try {
      // Every log dir's placement before anything is queued: one of a running broker without a
      // usable stage dir is a setup to fix, said at once (exit 2), not a log dir silently left out.
      const planner = new JobPlanner(config, logger);
      const refused = await refusals(planner);
      if (refused.length > 0) {
        for (const r of refused) logger.error({ logDir: r.logDir }, `refusing to start: ${r.reason}`);
        return EXIT_USAGE;
      }
      const queue = openQueue(config, redis);
      queue.on('error', (err) => logger.warn({ err }, 'queue error'));
      const stopGauge = server ? queueGauge(run, queue, metrics) : () => {};
      try {
        if (values.once === true) {
          if (server) logger.info({ metricsPort: server.port }, 'serving /metrics, /healthz, /readyz');
          return await scanOnce(run, config, queue, redis, logger, values.wait === true, planner);
        }
        // The daemon says its port with 'watching', once it listens for signals.
        return await watch(run, config, queue, redis, logger, server?.port, planner, stopSignal);
      } finally {
        stopGauge();
        await queue.close();
      }
    } finally {
      redis.disconnect();
    }
  },
});

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
  { runOnce }: Run,
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
  // Said only of what is so: queued (no wait), or prepared (some job done or staged before).
  const preparedSome = !wait || result.succeeded + result.alreadyDone > 0;
  if (preparedSome)
    for (const p of result.prepared)
      logger.info(
        { logDir: p, stageDir: config.stageDir },
        wait
          ? "a running broker's log dir: its segments were prepared into the stage dir; commit with the broker stopped: seglift migrate <log dir> --commit --stage-dir <stage dir>"
          : "a running broker's log dir: its segments are queued to be prepared into the stage dir; once done, commit with the broker stopped: seglift migrate <log dir> --commit --stage-dir <stage dir>",
      );
  // As the worker logs the failure (err: code, message, file, position, offset): this line is
  // where the operator of a Job looks first. An error naming no file is about the job's segment.
  for (const f of result.failed)
    logger.error(
      { jobId: f.id, segment: f.path, err: { ...f.failure, file: f.failure.file ?? f.path } },
      'segment failed',
    );
  for (const l of result.lost)
    logger.error({ jobId: l.id, segment: l.path }, 'job kept disappearing from the queue');
  for (const a of result.abandoned)
    logger.error({ jobId: a.id, segment: a.path }, 'segment still queued: no worker left to convert it');
  for (const u of result.unconverted)
    logger.error({ segment: u.path, reason: u.reason }, `segment not done after the run: ${u.reason}`);
  // The failures by cause (their code), each with its first message: the summary names them.
  const failedBy = new Map<string, number>();
  const firstMessage = new Map<string, string>();
  for (const f of result.failed) {
    const code = f.failure.code ?? f.failure.name ?? 'ERROR';
    failedBy.set(code, (failedBy.get(code) ?? 0) + 1);
    if (!firstMessage.has(code)) firstMessage.set(code, f.failure.message);
  }
  const causes = (failed: number, by: Map<string, number>) => {
    if (failed === 0) return '';
    const total = result.succeeded + failed;
    const which =
      failed < total
        ? `${failed} of ${total} segments`
        : total === 1
          ? 'its one segment'
          : `all ${total} segments`;
    return `: ${which} failed: ${[...by].map(([code, n]) => `${code} (${n}): ${firstMessage.get(code)}`).join('; ')}`;
  };
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
      ...(result.failed.length > 0 ? { failedBy: Object.fromEntries(failedBy) } : {}),
    },
    wait ? `run finished${causes(result.failed.length, failedBy)}` : 'scan finished',
  );
  // Bad segments win over lost or abandoned jobs: a rerun would fail on them again. A segment the
  // run left unconverted while its job said done is named and fails the run too.
  if (result.failed.length > 0 || result.unconverted.length > 0) return EXIT_SEGMENTS_FAILED;
  return result.lost.length > 0 || result.abandoned.length > 0 ? EXIT_RUNTIME : EXIT_OK;
}

/** The daemon: chokidar on the roots until SIGTERM/SIGINT. */
async function watch(
  { startWatching }: Run,
  config: Config,
  queue: Queue,
  redis: Redis,
  logger: Logger,
  metricsPort: number | undefined,
  planner: JobPlanner,
  stopSignal: () => Promise<StopSignal>,
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
  const stopped = stopSignal();
  await handle.ready;
  logger.info({ roots, metricsPort }, 'watching');
  await stopped;
  logger.info('shutting down');
  await handle.close();
  return EXIT_OK;
}

/** seglift_queue_jobs{state}, read from the queue at each scrape; returns the stop function. */
function queueGauge({ sampleQueueOnScrape }: Run, queue: Queue, metrics: SegliftMetrics): () => void {
  return sampleQueueOnScrape(metrics, () => queue.getJobCounts('waiting', 'active', 'failed', 'completed'));
}
