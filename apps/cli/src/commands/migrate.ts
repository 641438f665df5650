import path from 'node:path';
import { type LoadedConfig, type PipelineOptions, pipelineOptions } from '@seglift/config';
import {
  commitStage,
  defaultPrepareConcurrency,
  formatReportTable,
  ioThrottle,
  type MigrateOptions,
  type MigrateResult,
  migrate,
  prepareStage,
  type ReadinessRules,
  type RunSummary,
  type StageCounts,
  setIoLimit,
  setPrepareNice,
} from '@seglift/segment';
import { flag, intOpt, parse, requirePositionals, str } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, UsageError } from '../exit-codes.js';
import { reportFailures, withLockAdvice } from '../failures.js';
import { toJsonLine } from '../io.js';
import { ProgressBar } from '../progress.js';
import {
  archiveHelp,
  IO_LIMIT_ARG_OPTIONS,
  IO_LIMIT_HELP,
  includeActiveRules,
  ioLimitFlag,
  ioLimitLine,
  loadSettings,
  PIPELINE_ARG_OPTIONS,
  PIPELINE_HELP,
  pipelineSettingsHelp,
  settingsJson,
  settingsLine,
} from '../settings.js';
import { count, formatBytes, formatDuration } from '../table.js';
import { noSegmentsMessage, requireWithinRoots } from '../targets.js';

const HELP = `Usage: seglift migrate <dir>... [options]

Convert every closed segment under each <dir> (a broker log.dir, a parent of several, or one
partition directory) in place: magic 0/1 upconverted to v2, batches recompressed to the target
codec, indexes rebuilt, each result verified against its original before a crash-safe swap.
Embedded mode: no Redis, a worker_threads pool in this process. The active (last) segment of
each partition is left alone unless --include-active or the archive switch below. Stop the
brokers that own these directories first: seglift takes each log dir's .lock as a broker does,
all before the first write, and holds them to the end, so a running broker's dir is refused
(exit 2, nothing touched) and a broker started meanwhile fails to start. 'seglift audit' says
how much free space it needs.

Options:
${PIPELINE_HELP}
  --backup-dir DIR          copy every original to DIR/<partition>/ before replacing it
  --include-active          convert the active segments too, now (only with the broker stopped)
  --concurrency N           segments converted at the same time (worker.concurrency,
                            default: the CPUs, as many as the memory holds; with --prepare
                            half of that, so the broker keeps the other cores)
${IO_LIMIT_HELP}
  --no-nice                 with --prepare: keep this process's priority (prepare.nice false;
                            by default prepare runs at nice 10, I/O best-effort 6)
  --prepare                 two-phase, step 1, broker RUNNING: convert and verify every rolled
                            (non-active) segment of <dir> into --stage-dir; nothing in <dir> is
                            written, renamed or locked (its .lock is left to the broker); a segment deleted or replaced while it is
                            read is reported ('changed') and left for the commit. Run it again to
                            top the stage up
  --commit                  two-phase, step 2, broker STOPPED: swap in every staged segment whose
                            source is still the file it was made from and whose staged files
                            still have the sha256 prepare recorded (same crash-safe swap),
                            convert the rest now, discard what the broker deleted or replaced
  --stage-dir DIR           the stage (stageDir, SEGLIFT_STAGE_DIR): on the same filesystem as
                            <dir>, outside it; new, empty, or made by an earlier --prepare of
                            this <dir> (another <dir>'s stage is refused)
  --json                    one NDJSON report per segment, then a summary object
  --quiet                   no progress bar and no per-segment table: the summary and failures
                            only
  -h, --help                this text

Sizes accept k/m/g suffixes. An invalid configuration (file, environment or flags) lists
every problem and exits with 2; 'seglift config print' shows the settings without the flags.

${archiveHelp('migrate')}

The summary gives segments converted/skipped/failed, bytes before and after, the ratio, the
time taken, and every failure with its reason (also on stderr as error[CODE]: ...). With
--prepare or --commit one <dir> is given (one stage dir per log dir), and a 'stage:' line says
how many segments were staged (or committed from the stage), converted at commit, discarded
(and how many of those failed their check: staged files changed since the prepare, converted
from the source instead, each named on stderr with a warning).
'seglift audit' tells the stage space a prepare needs. Procedure: docs/operator-guide.md.

${pipelineSettingsHelp([
  ['roots', 'when set, every <dir>, the backup dir and the stage dir must lie within them (none)'],
  ['backupDir', '--backup-dir (none)'],
  ['stageDir', '--stage-dir (none)'],
  ['worker.concurrency', '--concurrency (CPU count; --prepare: half)'],
  ['io.maxBytesPerSecond', '--max-io-bytes-per-second (no limit)'],
  ['prepare.nice', '--no-nice: false (true)'],
  ['readiness.requireRolled', 'false: an archive, its newest segments too (above) (true)'],
  ['readiness.quietMs', 'archive: how long a newest segment must be unchanged (300000)'],
])}

Ctrl-C (or SIGTERM) stops handing out segments: the ones converting finish or roll back, the
rest are left as they were (reported converted, rolled-back, not-started), and the exit code is
130 (143). Run the same command again to
resume: converted segments are skipped (already in the target codec). A second Ctrl-C stops at
once; that is crash-safe too (the next run completes or rolls back what it finds).

${EXIT_CODES_HELP}
`;

export interface MigrateCliOptions extends PipelineOptions {
  includeActive?: boolean;
  /** The archive switch (readiness.requireRolled, readiness.quietMs); includeActive overrides it. */
  readiness?: ReadinessRules;
  concurrency?: number;
  json?: boolean;
  quiet?: boolean;
  /** The effective settings, named in the summary (JSON `settings`, and a `settings:` line). */
  settings?: LoadedConfig;
  /** Two-phase migration: this step, with `stageDir`. */
  phase?: 'prepare' | 'commit';
  stageDir?: string;
  /** The configured roots: every partition planned must lie inside one (MigrateOptions.roots). */
  roots?: readonly string[];
}

export const migrateCommand: Command = {
  name: 'migrate',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('migrate', argv, {
      ...PIPELINE_ARG_OPTIONS,
      'include-active': { type: 'boolean' },
      concurrency: { type: 'string' },
      json: { type: 'boolean' },
      quiet: { type: 'boolean' },
      prepare: { type: 'boolean' },
      commit: { type: 'boolean' },
      'stage-dir': { type: 'string' },
      ...IO_LIMIT_ARG_OPTIONS,
      'no-nice': { type: 'boolean' },
    });
    const dirs = requirePositionals('migrate', p, '<dir>... (Kafka log dirs or partition dirs)');
    const stageFlag = str(p, 'stage-dir');
    const settings = await loadSettings('migrate', p, ctx, {
      // The worker's setting: conversions in parallel in one process.
      'worker.concurrency': intOpt('migrate', p, 'concurrency', { min: 1, max: 1024 }),
      // The schema wants an absolute path; a flag is relative to where seglift was started.
      ...(stageFlag !== undefined ? { stageDir: path.resolve(ctx.io.cwd, stageFlag) } : {}),
      ...ioLimitFlag('migrate', p),
      ...(flag(p, 'no-nice') ? { 'prepare.nice': false } : {}),
    });
    const { config } = settings;
    const phase = flag(p, 'prepare') ? 'prepare' : flag(p, 'commit') ? 'commit' : undefined;
    if (flag(p, 'prepare') && flag(p, 'commit'))
      throw new UsageError('--prepare and --commit are two steps: give one of them', 'migrate');
    if (phase === undefined && stageFlag !== undefined)
      throw new UsageError('--stage-dir needs --prepare or --commit', 'migrate');
    if (phase !== undefined) {
      if (config.stageDir === undefined)
        throw new UsageError(`--${phase} needs --stage-dir (or stageDir in the settings)`, 'migrate');
      if (dirs.length !== 1)
        throw new UsageError(`--${phase} takes one <dir>: a stage dir serves one log dir`, 'migrate');
      if (phase === 'prepare' && flag(p, 'include-active'))
        throw new UsageError(
          '--prepare never reads the active segments: the broker appends to them',
          'migrate',
        );
    }
    // Every path this run may write: the dirs, the backups (never a prepare's: it only stages,
    // so a prepare beside the broker needs no backup dir), the stage.
    await requireWithinRoots(
      [
        ...dirs,
        phase === 'prepare' ? undefined : config.backupDir,
        phase !== undefined ? config.stageDir : undefined,
      ],
      config.roots,
      ctx.io.cwd,
    );
    const includeActive = flag(p, 'include-active');
    // One budget for the whole process, set before its conversion threads start (they share it).
    setIoLimit(config.io.maxBytesPerSecond);
    setPrepareNice(config.prepare.nice);
    // Beside a running broker, half the cores unless told otherwise (docs/benchmarks.md, "Beside
    // a live broker"); offline, all of them.
    const concurrency =
      phase === 'prepare' && settings.sources['worker.concurrency'] === undefined
        ? defaultPrepareConcurrency()
        : config.worker.concurrency;
    return migrateDirs(dirs, ctx, {
      ...pipelineOptions(config),
      includeActive,
      readiness: includeActive ? includeActiveRules() : config.readiness,
      concurrency,
      json: flag(p, 'json'),
      quiet: flag(p, 'quiet'),
      settings,
      phase,
      stageDir: config.stageDir,
      // A partition reached through a symlink must lead inside them too (migrate's plan).
      roots: config.roots,
    });
  },
};

/** Migrates every eligible segment under `dirs`; returns 1 when any segment failed. */
export async function migrateDirs(
  dirs: string[],
  ctx: CommandContext,
  options: MigrateCliOptions,
): Promise<number> {
  const bar = new ProgressBar(ctx.io.stderr, ctx.io.stderrIsTTY && !options.json && !options.quiet);
  bar.ioLimit = ioThrottle;
  // Ctrl-C or SIGTERM stops handing out segments; conversions in flight roll back cleanly, swaps
  // in flight complete. A second Ctrl-C kills at once (still crash-safe: a rerun completes).
  const abort = new AbortController();
  let stoppedBy: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    stoppedBy = signal;
    bar.done();
    ctx.err.line(
      `${signal === 'SIGINT' ? 'interrupted' : 'terminated'}: letting the segments in flight finish or roll back` +
        (signal === 'SIGINT' ? ' (Ctrl-C again to stop at once)' : ''),
    );
    void ctx.err.flush();
    abort.abort();
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // The run's conversions take the declared settings from these options by name (a migrate's
  // rewriteSettingsOf); the program's own fields are not sent anywhere.
  const { phase, stageDir } = options;
  const run =
    phase === undefined
      ? (o: MigrateOptions) => migrate(dirs, o)
      : phase === 'prepare'
        ? (o: MigrateOptions) => prepareStage(dirs[0], { ...o, stageDir: stageDir! })
        : // The commit swaps into the log dir: --prepare is done already, the broker must stop.
          (o: MigrateOptions) =>
            withLockAdvice('stop it first: the commit swaps in what --prepare staged', () =>
              commitStage(dirs[0], { ...o, stageDir: stageDir! }),
            );
  let result: MigrateResult & { counts?: StageCounts };
  try {
    result = await run({
      ...options,
      signal: abort.signal,
      onProgress: (p) => {
        bar.segmentsTotal = p.segmentsTotal;
        bar.segmentsDone = p.segmentsDone;
        bar.bytesTotal = p.bytesTotal;
        bar.bytesDone = p.bytesDone;
        bar.update();
      },
      onSegment: (r) => {
        if (r.result === 'failed') bar.failed++;
        // NDJSON consumers follow a long run as it goes: each report is written at once.
        if (options.json) {
          ctx.out.line(toJsonLine({ type: 'segment', ...r }));
          void ctx.out.flush();
        }
      },
    });
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    bar.done();
  }
  if (result.partitions === 0 && !result.interrupted)
    throw new UsageError(noSegmentsMessage(dirs, result.ignored), 'migrate');
  const { reports, summary } = result;
  if (options.json) {
    for (const i of result.ignored) ctx.out.line(toJsonLine({ type: 'ignored', ...i }));
    ctx.out.line(
      toJsonLine({
        type: 'summary',
        partitions: result.partitions,
        ...summary,
        interrupted: result.interrupted,
        ...(result.counts ? { phase, stage: result.counts } : {}),
        ...(options.settings ? { settings: settingsJson(options.settings) } : {}),
        ...(ioThrottle() ? { ioLimit: ioThrottle() } : {}),
      }),
    );
  } else {
    if (!options.quiet) ctx.out.line(formatReportTable(reports, summary));
    for (const i of result.ignored) ctx.out.line(`passed over ${i.dir}: ${i.reason}`);
    if (options.settings) ctx.out.line(settingsLine(options.settings));
    ctx.out.line(summaryLine(summary));
    if (result.counts) ctx.out.line(stageLine(phase!, result.counts));
    const limit = ioLimitLine();
    if (limit !== undefined) ctx.out.line(limit);
  }
  reportFailures(ctx, reports);
  // Nothing lost (converted from the source instead), but bytes in the stage changed after
  // prepare verified them: the operator should know, and look at that disk.
  for (const r of reports)
    if (r.stage === 'corrupt' && r.result !== 'failed')
      ctx.err.line(
        `warning: ${r.path}: ${r.reason}; the stage dir holds what prepare did not leave there (its disk, or someone writing there)`,
      );
  if (result.interrupted) {
    ctx.err.line(
      `${stoppedBy === 'SIGTERM' ? 'terminated' : 'interrupted'}: ${summary.converted} converted; ` +
        `${summary.rolledBack} rolled back and ${summary.notStarted} not started, left as they were; ` +
        'run the same command again to resume',
    );
    return stoppedBy === 'SIGTERM' ? ExitCode.TERMINATED : ExitCode.INTERRUPTED;
  }
  return summary.failed > 0 ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
}

/**
 * `converted 12 segments, skipped 3, failed 0: 1.2 GiB -> 310.5 MiB (ratio 0.253) in 41.0 s`, the
 * bytes of the segments written: the same numbers as the table's total row. An interrupted run
 * adds `, rolled back 1, not started 20`.
 */
export function summaryLine(s: RunSummary): string {
  return (
    `converted ${count(s.converted, 'segment')}, skipped ${s.skipped}, failed ${s.failed}` +
    `${s.rolledBack ? `, rolled back ${s.rolledBack}` : ''}${s.notStarted ? `, not started ${s.notStarted}` : ''}: ` +
    `${formatBytes(s.writtenBytesIn)} -> ${formatBytes(s.writtenBytesOut)}${s.ratio ? ` (ratio ${s.ratio.toFixed(3)})` : ''} ` +
    `in ${formatDuration(s.durationMs)}`
  );
}

/**
 * `stage: staged 40, already staged 12, changed while read 1, discarded 2` (prepare) or
 * `stage: committed from stage 52, converted at commit 3, discarded 2` (commit; with
 * `(1 failed its check)` after the discarded ones when a staged copy was not what prepare wrote).
 */
export function stageLine(phase: 'prepare' | 'commit', c: StageCounts): string {
  return phase === 'prepare'
    ? `stage: staged ${c.staged}, already staged ${c.alreadyStaged}, changed while read ${c.changed}, discarded ${c.discarded}`
    : `stage: committed from stage ${c.staged}, converted at commit ${c.convertedAtCommit}, discarded ${c.discarded}` +
        (c.failedCheck > 0 ? ` (${c.failedCheck} failed its check)` : '');
}
