import { availableParallelism } from 'node:os';
import type { CodecName } from '@seglift/format';
import type { Grouping } from '@seglift/legacy';
import {
  convertSegment,
  findPartitionSegments,
  formatReportTable,
  type RunSummary,
  type SegmentReport,
  summarize,
} from '@seglift/segment';
import { choice, flag, intOpt, parse, requirePositionals, str } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, UsageError } from '../exit-codes.js';
import { toJsonLine } from '../io.js';
import { ProgressBar } from '../progress.js';
import { formatBytes, formatDuration } from '../table.js';
import { CODECS, GROUPINGS, reportFailures } from './convert.js';

const HELP = `Usage: seglift migrate <dir>... --codec C [options]

Convert every closed segment under each <dir> (a broker log.dir, a parent of several, or one
partition directory) in place: magic 0/1 upconverted to v2, batches recompressed to the target
codec, indexes rebuilt, each result verified against its original before a crash-safe swap.
Embedded mode: no Redis, a pool of concurrent conversions in this process. The active (last)
segment of each partition is left alone unless --include-active. Stop the brokers that own
these directories first.

Options:
  --codec C            target codec: none|gzip|snappy|lz4|zstd (required)
  --level N            compression level (codec default otherwise)
  --grouping G         kafka (default) | coalesce, see 'seglift convert --help'
  --backup-dir DIR     copy every original to DIR/<partition>/ before replacing it
  --include-active     convert the active segments too (only with the broker stopped)
  --concurrency N      segments converted at the same time (default: CPU count)
  --max-batch-bytes N  largest batch written (default 1048588)
  --json               one NDJSON report per segment, then a summary object
  --quiet              no progress bar and no per-segment table: the summary and failures only
  -h, --help           this text

The summary gives segments converted/skipped/failed, bytes before and after, the ratio, the
time taken, and every failure with its reason (also on stderr as error[CODE]: ...).

${EXIT_CODES_HELP}
`;

export interface MigrateCliOptions {
  codec: CodecName;
  level?: number;
  grouping?: Grouping;
  backupDir?: string;
  includeActive?: boolean;
  concurrency?: number;
  maxBatchBytes?: number;
  json?: boolean;
  quiet?: boolean;
}

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'convert every closed segment of log dirs in place, in parallel',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('migrate', argv, {
      codec: { type: 'string' },
      level: { type: 'string' },
      grouping: { type: 'string' },
      'backup-dir': { type: 'string' },
      'include-active': { type: 'boolean' },
      concurrency: { type: 'string' },
      'max-batch-bytes': { type: 'string' },
      json: { type: 'boolean' },
      quiet: { type: 'boolean' },
    });
    const dirs = requirePositionals('migrate', p, '<dir>... (Kafka log dirs or partition dirs)');
    const codec = choice('migrate', p, 'codec', CODECS);
    if (codec === undefined) throw new UsageError('--codec is required', 'migrate');
    return migrateDirs(dirs, ctx, {
      codec,
      level: intOpt('migrate', p, 'level', { min: -131072, max: 22 }),
      grouping: choice('migrate', p, 'grouping', GROUPINGS),
      backupDir: str(p, 'backup-dir'),
      includeActive: flag(p, 'include-active'),
      concurrency: intOpt('migrate', p, 'concurrency', { min: 1, max: 1024 }),
      maxBatchBytes: intOpt('migrate', p, 'max-batch-bytes', { min: 1, sizes: true }),
      json: flag(p, 'json'),
      quiet: flag(p, 'quiet'),
    });
  },
};

function skippedActive(path: string, size: number): SegmentReport {
  return {
    path,
    result: 'skipped',
    reason: 'active-segment',
    bytesIn: size,
    bytesOut: size,
    batchesIn: 0,
    batchesOut: 0,
    recordsIn: 0,
    recordsOut: 0,
    codecMixIn: {},
    codecOut: {},
    oversizeKept: 0,
    oversizeUpconverted: 0,
    batchesCopied: 0,
    truncatedTailBytes: 0,
    durationMs: 0,
    throughputMBps: 0,
  };
}

/** Migrates every eligible segment under `dirs`; returns 1 when any segment failed. */
export async function migrateDirs(
  dirs: string[],
  ctx: CommandContext,
  options: MigrateCliOptions,
): Promise<number> {
  const started = performance.now();
  const work: { path: string; size: number }[] = [];
  const reports: SegmentReport[] = [];
  for (const dir of dirs) {
    const partitions = await findPartitionSegments(dir, { includeActive: options.includeActive });
    if (partitions.length === 0) throw new UsageError(`no Kafka segments under ${dir}`, 'migrate');
    for (const p of partitions) {
      for (const s of p.eligible) work.push({ path: s.path, size: s.size });
      if (!options.includeActive && p.active) reports.push(skippedActive(p.active.path, p.active.size));
    }
  }
  const bar = new ProgressBar(ctx.io.stderr, ctx.io.stderrIsTTY && !options.json && !options.quiet);
  bar.segmentsTotal = work.length;
  bar.bytesTotal = work.reduce((n, w) => n + w.size, 0);
  const inFlight = new Map<string, number>();
  let finishedBytes = 0;
  const redraw = () => {
    let partial = 0;
    for (const v of inFlight.values()) partial += v;
    bar.bytesDone = finishedBytes + partial;
    bar.update();
  };
  let next = 0;
  const worker = async () => {
    while (next < work.length) {
      const w = work[next++];
      inFlight.set(w.path, 0);
      const report = await convertSegment(w.path, {
        codec: options.codec,
        level: options.level,
        grouping: options.grouping,
        maxBatchBytes: options.maxBatchBytes,
        inPlace: true,
        backupDir: options.backupDir,
        onProgress: (done) => {
          inFlight.set(w.path, done);
          redraw();
        },
      });
      inFlight.delete(w.path);
      finishedBytes += w.size;
      bar.segmentsDone++;
      if (report.result === 'failed') bar.failed++;
      redraw();
      reports.push(report);
      if (options.json) ctx.out.line(toJsonLine({ type: 'segment', ...report }));
    }
  };
  const concurrency = Math.min(options.concurrency ?? availableParallelism(), Math.max(1, work.length));
  await Promise.all(Array.from({ length: concurrency }, worker));
  bar.done();
  reports.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const summary = summarize(reports, performance.now() - started);
  if (options.json) {
    ctx.out.line(toJsonLine({ type: 'summary', ...summary }));
  } else {
    if (!options.quiet) ctx.out.line(formatReportTable(reports, summary));
    ctx.out.line(summaryLine(summary, reports));
  }
  reportFailures(ctx, reports);
  return summary.failed > 0 ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
}

/** `migrated 12 segments, skipped 3, failed 0: 1.2 GiB -> 310.5 MiB (ratio 0.253) in 41.0 s` */
export function summaryLine(s: RunSummary, reports: SegmentReport[]): string {
  let convIn = 0;
  let convOut = 0;
  for (const r of reports) {
    if (r.result !== 'converted') continue;
    convIn += r.bytesIn;
    convOut += r.bytesOut;
  }
  return (
    `converted ${s.converted} segments, skipped ${s.skipped}, failed ${s.failed}: ` +
    `${formatBytes(convIn)} -> ${formatBytes(convOut)}${s.ratio ? ` (ratio ${s.ratio.toFixed(3)})` : ''} ` +
    `in ${formatDuration(s.durationMs)}`
  );
}
