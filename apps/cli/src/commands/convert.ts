import { existsSync, realpathSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { type LoadedConfig, type PipelineOptions, pipelineOptions } from '@seglift/config';
import {
  assertBackupDirOutside,
  type ConvertSettings,
  convertSegment,
  formatReportTable,
  holdLogDirLocks,
  logDirsGuarding,
  logDirsUnderRoots,
  type Placement,
  parseSegmentName,
  rewriteSettingsOf,
  type SegmentReport,
  summarize,
} from '@seglift/segment';
import { flag, parse, requirePositionals, str } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, UsageError } from '../exit-codes.js';
import { reportFailures, withLockAdvice } from '../failures.js';
import { toJsonLine } from '../io.js';
import { ProgressBar } from '../progress.js';
import {
  loadSettings,
  PIPELINE_ARG_OPTIONS,
  PIPELINE_HELP,
  pipelineSettingsHelp,
  settingsJson,
  settingsLine,
} from '../settings.js';
import { requireExistingPaths, requireWithinRoots } from '../targets.js';

const HELP = `Usage: seglift convert <segment.log>... (--out DIR | --in-place [--backup-dir DIR]) [options]

Rewrite segments: magic 0/1 entries are upconverted to v2 record batches, v2 batches are
recompressed to the target codec, .index/.timeindex are rebuilt as the broker's recovery
would, and the result is verified record by record against the original before it replaces
anything. Offsets, timestamps, keys, values, headers and producer fields never change.
Run it on stopped brokers (or on segments the broker no longer writes).

Options:
${PIPELINE_HELP}
  --out DIR                 write <base>.log/.index/.timeindex into DIR; the input is untouched.
                            A segment already in the target codec is copied there as it is
                            (indexes rebuilt, verified) and reported 'copied'; a failed
                            conversion leaves no directory of its own making behind. DIR is
                            not the segment's own directory, nor one holding an earlier
                            result for it (both refused, exit 2)
  --in-place                replace the segment crash-safely (.swap files, then rename),
                            holding its log dir's .lock as a broker does (held by a running
                            broker: refused, exit 2)
  --backup-dir DIR          with --in-place: copy the originals to DIR/<partition>/ first
                            (backupDir from the config applies to --in-place only)
  --force                   recompress even batches already in the target codec
  --accept-truncated-tail   drop a partial entry at the end of the log instead of failing
  --json                    one NDJSON report per segment, then a summary object
  -h, --help                this text

Sizes accept k/m/g suffixes. An invalid configuration (file, environment or flags) lists
every problem and exits with 2; 'seglift config print' shows the settings without the flags.
A progress bar is drawn on stderr when it is a terminal.

${pipelineSettingsHelp([
  ['roots', 'when set, every input, --out and the backup dir must lie within them (none)'],
  ['backupDir', '--backup-dir, with --in-place only (none)'],
])}

${EXIT_CODES_HELP}
`;

export interface ConvertCliOptions
  extends PipelineOptions,
    Pick<ConvertSettings, 'force' | 'acceptTruncatedTail'> {
  /** Where each segment's result goes: --out DIR, or --in-place (with the backup dir). */
  placement: Placement;
  json?: boolean;
  /** The effective settings, named in the summary (JSON `settings`, and a `settings:` line). */
  settings?: LoadedConfig;
  /** The configured roots: in place, a link to a segment's partition from a log dir in them is locked too. */
  roots?: readonly string[];
}

export const convertCommand: Command = {
  name: 'convert',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('convert', argv, {
      ...PIPELINE_ARG_OPTIONS,
      out: { type: 'string' },
      'in-place': { type: 'boolean' },
      force: { type: 'boolean' },
      'accept-truncated-tail': { type: 'boolean' },
      json: { type: 'boolean' },
    });
    const files = requirePositionals('convert', p, '<segment.log>...');
    const outDir = str(p, 'out');
    const inPlace = flag(p, 'in-place');
    if ((outDir === undefined) === !inPlace)
      throw new UsageError('give exactly one of --out DIR or --in-place', 'convert');
    if (str(p, 'backup-dir') !== undefined && !inPlace)
      throw new UsageError('--backup-dir goes with --in-place', 'convert');
    for (const f of files) {
      if (parseSegmentName(path.basename(f)) === undefined) {
        throw new UsageError(`'${f}' is not a segment (expected <20-digit base offset>.log)`, 'convert');
      }
    }
    await requireExistingPaths(files, 'convert');
    if (outDir !== undefined) {
      const names = files.map((f) => path.basename(f));
      const dup = names.find((n, i) => names.indexOf(n) !== i);
      if (dup) throw new UsageError(`two inputs named ${dup} would collide in --out ${outDir}`, 'convert');
      requireFreshOutDir(outDir, files);
    }
    const settings = await loadSettings('convert', p, ctx);
    const { config } = settings;
    await requireWithinRoots(
      [...files, outDir, inPlace ? config.backupDir : undefined],
      config.roots,
      ctx.io.cwd,
    );
    return convert(files, ctx, {
      ...pipelineOptions(config),
      // A backupDir from the config file or environment is for in-place rewrites only.
      placement:
        outDir === undefined
          ? { kind: 'inPlace', backupDir: config.backupDir }
          : { kind: 'outDir', dir: outDir },
      force: flag(p, 'force'),
      acceptTruncatedTail: flag(p, 'accept-truncated-tail'),
      json: flag(p, 'json'),
      settings,
      roots: config.roots,
    });
  },
};

/**
 * --out is a directory of its own: never an input's partition dir (the result would stand for the
 * segment beside it: --in-place is the way to rewrite there), and never one already holding an
 * input's files (an earlier result is not replaced without a word). Exit 2, nothing written.
 */
function requireFreshOutDir(outDir: string, files: readonly string[]): void {
  const real = (p: string) => (existsSync(p) ? realpathSync(p) : path.resolve(p));
  const out = real(outDir);
  for (const f of files) {
    if (real(path.dirname(f)) === out)
      throw new UsageError(
        `--out ${outDir} is the directory of ${f}: give another directory, or --in-place to rewrite it where it is`,
        'convert',
      );
    const stem = path.basename(f).slice(0, -'.log'.length);
    const held = ['.log', '.index', '.timeindex']
      .map((s) => `${stem}${s}`)
      .find((n) => existsSync(path.join(out, n)));
    if (held !== undefined)
      throw new UsageError(
        `--out ${outDir} already holds ${held} (an earlier result?): remove it, or give another directory`,
        'convert',
      );
  }
}

/** Converts the segments one after the other; returns 1 when any failed. */
export async function convert(
  files: string[],
  ctx: CommandContext,
  options: ConvertCliOptions,
): Promise<number> {
  const { json, settings, placement, roots = [] } = options;
  // The conversion settings and nothing else (the options hold the program's own too).
  const conversion = rewriteSettingsOf(options);
  const started = performance.now();
  const bar = new ProgressBar(ctx.io.stderr, ctx.io.stderrIsTTY && !json);
  bar.segmentsTotal = files.length;
  bar.bytesTotal = await totalSize(files);
  const reports: SegmentReport[] = [];
  let base = 0;
  // In place: the .lock of every log dir guarding a segment's partition (the one it is named in
  // and its real parent), all before the first write (a missing segment is reported by the
  // conversion, which refuses it).
  const logDirs =
    placement.kind === 'inPlace'
      ? await withLockAdvice('stop it first, or write the result elsewhere with --out DIR', async () => {
          const guarding: string[] = [];
          const linkedFrom = roots.length > 0 ? await logDirsUnderRoots(roots) : undefined;
          for (const f of files.filter((f) => existsSync(f))) {
            const partition = path.dirname(f);
            guarding.push(...(linkedFrom?.get(realpathSync(partition)) ?? []));
            guarding.push(...(await logDirsGuarding(partition)));
          }
          if (placement.backupDir) await assertBackupDirOutside(placement.backupDir, guarding);
          return holdLogDirLocks(guarding);
        })
      : { release() {} };
  try {
    for (const file of files) {
      const report = await convertSegment(file, conversion, placement, {
        onProgress: (done) => {
          bar.bytesDone = base + done;
          bar.update();
        },
      });
      base += report.bytesIn;
      bar.bytesDone = base;
      bar.segmentsDone++;
      if (report.result === 'failed') bar.failed++;
      bar.update(true);
      reports.push(report);
      if (json) {
        ctx.out.line(toJsonLine({ type: 'segment', ...report }));
        void ctx.out.flush();
      }
    }
  } finally {
    logDirs.release();
  }
  bar.done();
  const summary = summarize(reports, performance.now() - started);
  if (json) {
    ctx.out.line(
      toJsonLine({
        type: 'summary',
        ...summary,
        ...(settings ? { settings: settingsJson(settings) } : {}),
      }),
    );
  } else {
    ctx.out.line(formatReportTable(reports, summary));
    if (settings) ctx.out.line(settingsLine(settings));
  }
  reportFailures(ctx, reports);
  return summary.failed > 0 ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
}

async function totalSize(files: string[]): Promise<number> {
  let total = 0;
  for (const f of files)
    total += await stat(f).then(
      (s) => s.size,
      () => 0,
    );
  return total;
}
