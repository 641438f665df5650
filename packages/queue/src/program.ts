/**
 * The skeleton both programs of the distributed mode (seglift-watcher, seglift-worker) run in,
 * once: flags and --help, the config (defaults < file < SEGLIFT_* < flags; at least one root),
 * the logger, the metrics server (a port in use is a configuration error, said before Redis is
 * touched), Redis answering within --redis-timeout-ms, SIGTERM/SIGINT, and the exit codes they
 * share. Each program's main.ts says only what differs: its own flags and what it runs.
 */
import { constants } from 'node:os';
import {
  type Config,
  FlagError,
  type FlagOptions,
  type MetricsProgram,
  type ParsedFlags,
  parseFlags,
} from '@seglift/config';
import type { HttpServerHandle, Logger, SegliftMetrics } from '@seglift/observability';

export const EXIT_OK = 0;
/** Usage or configuration error (every problem listed), or the metrics port in use. */
export const EXIT_USAGE = 2;
/** Runtime error: Redis did not answer at start, an internal error (a stack trace follows). */
export const EXIT_RUNTIME = 3;

/** The flags every queue program takes (each lists them in its own --help). */
export const QUEUE_PROGRAM_OPTIONS = {
  config: { type: 'string', short: 'c' },
  root: { type: 'string', multiple: true },
  'redis-url': { type: 'string' },
  'redis-timeout-ms': { type: 'string' },
  'metrics-port': { type: 'string' },
  'log-level': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const satisfies FlagOptions;

export type StopSignal = 'SIGTERM' | 'SIGINT';

/** The exit code of a process a signal ended, as a shell reports it (128 + its number). */
export function signalExitCode(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

export type FlagValues = ParsedFlags['values'];

/** A flag's text as a number when it is one; anything else goes to the schema, which says why. */
export const asInt = (v: unknown) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v);

export interface QueueProgramContext {
  values: FlagValues;
  config: Config;
  logger: Logger;
  metrics: SegliftMetrics;
  /** The metrics server, when this run serves one (`serves`). */
  server?: HttpServerHandle;
  /** What /readyz asks (not ready until set). */
  setReady(probe: () => Promise<boolean>): void;
  /**
   * The first SIGTERM or SIGINT from the first call on: listen before saying 'started', so that a
   * stop sent on that line does not kill the process. Not called: the signals' defaults apply.
   */
  stopSignal(): Promise<StopSignal>;
}

export interface QueueProgram {
  name: MetricsProgram;
  help: string;
  /** Its version (its package.json's), for --version. */
  version(): string;
  /** Its flags (QUEUE_PROGRAM_OPTIONS and its own). */
  options: FlagOptions;
  /** A problem with its own flags (said as `<name>: <problem>`, exit 2), checked first. */
  checkFlags?(values: FlagValues): string | undefined;
  /** The config keys its own flags set (roots, redis.url, log.level and metrics.port are set here). */
  configFlags?(values: FlagValues): Record<string, unknown>;
  /** Whether this run serves /metrics, /healthz and /readyz (default: yes). */
  serves?(values: FlagValues): boolean;
  /** The program once Redis answers; returns its exit code (the metrics server is closed after). */
  run(ctx: QueueProgramContext): Promise<number>;
}

/** Runs `program` on `argv` and sets the exit code; an internal error exits 3 with its stack. */
export function runQueueProgram(
  program: QueueProgram,
  argv: readonly string[] = process.argv.slice(2),
): void {
  main(program, argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`${program.name}: ${(err as Error)?.stack ?? err}\n`);
      // exit(), not exitCode: open connections, watchers or threads would keep the process alive.
      process.exit(EXIT_RUNTIME);
    },
  );
}

async function main(program: QueueProgram, argv: readonly string[]): Promise<number> {
  const { name } = program;
  const usageHint = `Run '${name} --help' for usage.\n`;
  const usage = (problem: string) => {
    process.stderr.write(`${name}: ${problem}\n${usageHint}`);
    return EXIT_USAGE;
  };
  let values: FlagValues;
  try {
    values = parseFlags(argv, program.options, { allowPositionals: false }).values;
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    return usage(err.message);
  }
  if (values.help) {
    process.stdout.write(program.help);
    return EXIT_OK;
  }
  if (values.version) {
    process.stdout.write(`${program.version()}\n`);
    return EXIT_OK;
  }
  const problem = program.checkFlags?.(values);
  if (problem !== undefined) return usage(problem);
  const redisTimeoutMs = Number(values['redis-timeout-ms'] ?? 60_000);
  if (!Number.isInteger(redisTimeoutMs) || redisTimeoutMs <= 0)
    return usage('--redis-timeout-ms must be a positive integer');
  // Loaded for a run only: --help and a usage error need none of the config schema, the logger,
  // the metrics or Redis (start-up: bench/startup.bench.mjs).
  const [
    { ConfigError, loadConfigWithSources, metricsPort, metricsPortInUse },
    observability,
    { waitForRedisAt },
  ] = await Promise.all([import('@seglift/config'), import('@seglift/observability'), import('./redis.js')]);
  const { createLogger, createMetrics, startHttpServer } = observability;
  let config: Config;
  let warnings: string[];
  try {
    ({ config, warnings } = await loadConfigWithSources({
      file: values.config as string | undefined,
      flags: {
        roots: values.root,
        'redis.url': values['redis-url'],
        'log.level': values['log-level'],
        // Checked by the schema (an integer 0..65535) with every other problem.
        'metrics.port': asInt(values['metrics-port']),
        ...program.configFlags?.(values),
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
  const logger = createLogger({ name, level: config.log.level, pretty: config.log.pretty });
  for (const w of warnings) logger.warn(w);
  // The metrics port first: a port in use is a configuration problem, said at once (never after a
  // job was taken or queued).
  const metrics = createMetrics();
  let ready: (() => Promise<boolean>) | undefined;
  let server: HttpServerHandle | undefined;
  if (program.serves?.(values) ?? true) {
    try {
      server = await startHttpServer({
        port: metricsPort(config, name),
        host: config.metrics.host,
        registry: metrics.registry,
        ready: async () => (ready === undefined ? false : await ready()),
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      logger.error(metricsPortInUse(name, config.metrics.host, metricsPort(config, name)));
      return EXIT_USAGE;
    }
  }
  try {
    // Before anything else: BullMQ's connections would otherwise wait for Redis forever.
    try {
      await waitForRedisAt(config.redis.url, redisTimeoutMs);
    } catch (err) {
      logger.error({ err }, 'Redis unreachable');
      return EXIT_RUNTIME;
    }
    let stop: Promise<StopSignal> | undefined;
    return await program.run({
      values,
      config,
      logger,
      metrics,
      server,
      setReady: (probe) => {
        ready = probe;
      },
      stopSignal: () => {
        stop ??= new Promise((resolve) => {
          process.once('SIGTERM', () => resolve('SIGTERM'));
          process.once('SIGINT', () => resolve('SIGINT'));
        });
        return stop;
      },
    });
  } finally {
    await server?.close();
  }
}
