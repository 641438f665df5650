/**
 * seglift-worker: converts queued segments with @seglift/segment. Everything an operator needs is
 * in HELP (`seglift-worker --help`); apps/worker/README.md has the design. The skeleton (flags,
 * config, logger, metrics server, Redis at start, exit codes) is @seglift/queue's runQueueProgram.
 * SIGTERM/SIGINT: stop taking jobs, let running conversions finish within
 * worker.shutdownGraceMs, abort (and requeue) the rest, then exit 0 as a daemon, or, in Job mode,
 * 143 (SIGTERM) / 130 (SIGINT): the queue was not drained, so a parallel Job must not count this
 * pod as a success (one succeeded pod ends a Job without completions) and must replace it.
 */
import { readFileSync } from 'node:fs';
import { asInt, runQueueProgram, type StopSignal, signalExitCode } from '@seglift/queue';
import { EXIT_OK, HELP, OPTIONS, PROGRAM } from './usage.js';

runQueueProgram({
  name: PROGRAM,
  help: HELP,
  // package.json sits one level above src/ and dist/ (main.js, the entry, never a chunk).
  version: () =>
    (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
      .version,
  options: OPTIONS,
  checkFlags: (values) => {
    const idleMs = Number(values['idle-ms'] ?? 30_000);
    return Number.isInteger(idleMs) && idleMs > 0 ? undefined : '--idle-ms must be a positive integer';
  },
  configFlags: (values) => ({
    'worker.concurrency': asInt(values.concurrency),
    'io.maxBytesPerSecond': asInt(values['max-io-bytes-per-second']),
  }),
  async run({ values, config, logger, metrics, server, setReady, stopSignal }) {
    const jobMode = values['exit-when-drained'] === true;
    const idleMs = Number(values['idle-ms'] ?? 30_000);
    // Loaded here, not at start: --help and a usage error need neither BullMQ nor the pipeline.
    const [{ waitUntilDrained }, { startWorker }] = await Promise.all([
      import('@seglift/queue'),
      import('./worker.js'),
    ]);
    const handle = await startWorker({ config, logger, metrics });
    setReady(async () => handle.worker.isRunning() && (await handle.redis.ping().catch(() => '')) === 'PONG');
    const stopDrainWatch = new AbortController();
    const stopped = new Promise<StopSignal | 'drained'>((resolve) => {
      stopSignal().then(resolve);
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
        metricsPort: server?.port,
        exitWhenDrained: jobMode,
      },
      'worker started',
    );
    const signal = await stopped;
    stopDrainWatch.abort();
    // Job mode: only a drained queue is a success; a signal is a stop, reported like any process
    // that a signal ended, so that the Job replaces this pod.
    const code = signal === 'drained' || !jobMode ? EXIT_OK : signalExitCode(signal);
    logger.info({ signal, exitCode: code }, 'stopping: no new jobs, finishing running conversions');
    // Last resort if Redis never comes back while closing.
    const hard = setTimeout(() => {
      logger.error('shutdown did not complete; exiting');
      process.exit(code);
    }, config.worker.shutdownGraceMs + 20_000);
    hard.unref();
    await handle.shutdown();
    logger.info({ exitCode: code }, 'stopped');
    return code;
  },
});
