import { stat } from 'node:fs/promises';
import path from 'node:path';
import { pipelineOptions } from '@seglift/config';
import { codecId, SegliftError } from '@seglift/format';
import {
  type ConversionSettings,
  conversionSettingsOf,
  formatKey,
  type IgnoredDir,
  inspectEntry,
  needsRewrite,
  parsePartitionDirName,
  type ReadinessRules,
  readinessRules,
  splitReady,
} from '@seglift/segment';
import { flag, intOpt, parse, requirePositionals } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, formatError, isFsError, UsageError } from '../exit-codes.js';
import { toJsonLine } from '../io.js';
import { LogFileReader } from '../log-reader.js';
import { ProgressBar } from '../progress.js';
import {
  archiveHelp,
  loadSettings,
  PIPELINE_ARG_OPTIONS,
  PIPELINE_HELP,
  pipelineSettingsHelp,
} from '../settings.js';
import { count, formatBytes, renderTable } from '../table.js';
import { commonAncestor, noSegmentsMessage, resolveTargets } from '../targets.js';
import {
  kafkaLeftoverFiles,
  leftAloneLegacyLines,
  leftoversLine,
  spaceChecks,
  spaceLine,
  stageSpaceNote,
} from './audit-checks.js';
import { auditTiering, tieringLines } from './audit-tiering.js';
import {
  type CodecChoice,
  CodecSample,
  compareCodecs,
  DEFAULT_COMPARE_BYTES,
  RewrittenSize,
} from './codec-choices.js';

export const DEFAULT_SAMPLE_BYTES = 16 * 1024 * 1024;

const HELP = `Usage: seglift audit <dir|segment.log>... [options]

Kafka 4 readiness report. <dir> is a broker log.dir (its <topic>-<partition> subdirectories are
audited), a parent of several, or one partition directory; partitions are named by their path
under the directories given. Per partition: segments and bytes still in magic 0/1, bytes per
codec, what 'seglift migrate' would change, and the estimated size after recompression to the
target codec. The estimate converts a sample of the batches exactly (upconversion +
recompression, as migrate would) and scales the rest by the sample's ratio; with
--sample-bytes at least the size of the data the estimate is exact. Every CRC is checked.

Then, per filesystem: the free space a migrate needs while it runs (segments converting at once
x the largest converted segment, plus what the data grows by), and the backups' size, each
compared with the free space of the data's and the backup dir's filesystems now: NOT ENOUGH
when a migrate would run out.
And the space 'seglift migrate --prepare' needs in its stage dir: the estimate for the rolled
(non-active) segments it would rewrite, plus their indexes (an estimate, not a bound:
recompression can grow data; the rolled segments' source size bounds it when it does not).

Options (the target settings are migrate's: the estimate is for a migrate with them):
${PIPELINE_HELP}
  --sample-bytes N          bytes per partition converted exactly for the estimate (default
                            16m; k/m/g suffixes allowed)
  --compare-bytes N         of those samples, bytes rewritten again with zstd levels 1, 3 and 9,
                            lz4 and snappy, to show the size and the time of each choice
                            (default 16m; 0: off)
  --include-active          count the active (last) segment as something migrate would change
                            (the broker is stopped and migrate will get --include-active too)
  --concurrency N           segments migrate converts at once, for the free-space figure
                            (worker.concurrency, default: the CPUs the memory holds)
  --backup-dir DIR          where migrate will copy the originals (backupDir), for the backup
                            figure
  --json                    one NDJSON object per partition, the codec choices, then a summary
                            object
  -h, --help                this text

${archiveHelp('audit')}

${pipelineSettingsHelp([
  ['backupDir', '--backup-dir (none)'],
  ['worker.concurrency', '--concurrency (CPU count)'],
  ['readiness.requireRolled', 'false: an archive, its newest segments too (above) (true)'],
  ['readiness.quietMs', 'archive: how long a newest segment must be unchanged (300000)'],
])}

Magic 0/1 data that only segments migrate leaves alone hold (the active ones) is named, with what
finishes the job. Files of an interrupted Kafka operation (.cleaned, .swap) are listed with the
fix: migrate refuses to convert beside them (KAFKA_LEFTOVERS).

A progress bar is drawn on stderr when it is a terminal. An invalid configuration lists every
problem and exits with 2. Audit only reads. Exit code 1 when a migrate as audited would fail: a
segment that cannot be read, Kafka leftovers in a partition with segments to rewrite, or a
filesystem without the free space it needs (NOT ENOUGH). Magic 0/1 data alone is what migrate is
for: 0.

${EXIT_CODES_HELP}
`;

/** The conversion settings (each at its declared default when absent), and audit's own. */
export interface AuditOptions extends Partial<ConversionSettings> {
  sampleBytes?: number;
  /** Bytes of the sample rewritten with other codecs and levels to compare them (0: none). */
  compareBytes?: number;
  /** Count each partition's newest segment as migrate --include-active would. */
  includeActive?: boolean;
  /**
   * Which newest segments migrate would take (the archive switch, readiness.requireRolled and
   * readiness.quietMs); includeActive overrides it. Default: none (a live broker's log dir).
   */
  readiness?: ReadinessRules;
  /** Segments migrate converts at once (worker.concurrency), for the free-space figure. */
  concurrency?: number;
  /** Where migrate copies the originals (backupDir), for the backup figure. */
  backupDir?: string;
  json?: boolean;
  /** Called after every entry read (the progress bar). */
  onProgress?: (p: { bytesDone: number; segmentsDone: number }) => void;
}

export interface PartitionAudit {
  dir: string;
  /** The directory's path under the directories audited (`clicks-0`, `data2/clicks-0`). */
  name: string;
  topic: string;
  partition: number;
  segments: number;
  bytes: number;
  /** Segments holding any magic 0/1 entry, and the bytes of those entries. */
  legacySegments: number;
  legacyBytes: number;
  /** Entry bytes per `v<magic>/<codec>` (e.g. `v1/gzip`, `v2/none`). */
  bytesByFormat: Record<string, number>;
  activeSegment: string;
  /** Segments migrate would leave alone whatever they hold: the active one, an archive's changing one. */
  leftAloneSegments: number;
  /** Segments (and their bytes) a migrate to the target codec would rewrite. */
  convertSegments: number;
  convertBytes: number;
  /** Estimated bytes of those segments after conversion. */
  estimatedBytesAfter: number;
  /** Estimated size after conversion of each segment migrate would rewrite (the disk figures). */
  segmentsAfter: number[];
  /**
   * Space a `migrate --prepare` of this partition needs in the stage dir: the estimated output of
   * the rolled (non-active) segments it would rewrite, with their rebuilt indexes.
   */
  stageBytes: number;
  /** Bytes converted exactly for the estimate. */
  sampledBytes: number;
  /** Segments holding magic 0/1 data that migrate leaves alone (the active one, or still changing). */
  legacyLeftAlone: string[];
  /** Files of an interrupted Kafka operation (`.cleaned`, a `.swap` not seglift's): migrate refuses. */
  kafkaLeftovers: string[];
  errors: string[];
}

/**
 * What a migrate needs on one filesystem: `peakExtraBytes` free while it runs (the
 * `concurrency` largest converted segments, with their new indexes, beside their originals,
 * plus every byte by which a converted segment grows), `backupBytes` in the backup directory.
 */
export interface DiskNeed {
  /** The deepest directory holding the filesystem's partitions. */
  dir: string;
  partitions: number;
  convertBytes: number;
  estimatedBytesAfter: number;
  /** The largest segment after conversion, with its indexes. */
  largestSegmentAfter: number;
  concurrency: number;
  /** The `concurrency` largest converted segments, with their indexes, written at once. */
  inFlightBytes: number;
  /** What the segments that grow add (zero when every converted segment shrinks). */
  growthBytes: number;
  peakExtraBytes: number;
  backupBytes: number;
}

export const auditCommand: Command = {
  name: 'audit',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('audit', argv, {
      ...PIPELINE_ARG_OPTIONS,
      'sample-bytes': { type: 'string' },
      'compare-bytes': { type: 'string' },
      'include-active': { type: 'boolean' },
      concurrency: { type: 'string' },
      json: { type: 'boolean' },
    });
    const dirs = requirePositionals('audit', p, '<dir>... (a Kafka log dir or partition dir)');
    const { config } = await loadSettings('audit', p, ctx, {
      'worker.concurrency': intOpt('audit', p, 'concurrency', { min: 1, max: 1024 }),
    });
    return audit(dirs, ctx, {
      ...pipelineOptions(config),
      sampleBytes: intOpt('audit', p, 'sample-bytes', { sizes: true }),
      compareBytes: intOpt('audit', p, 'compare-bytes', { sizes: true }),
      includeActive: flag(p, 'include-active'),
      readiness: config.readiness,
      concurrency: config.worker.concurrency,
      json: flag(p, 'json'),
    });
  },
};

/** Reads every segment under `dirs` (or each named segment); returns the per-partition audits. */
export async function auditPartitions(
  dirs: string[],
  options: AuditOptions = {},
): Promise<{ audits: PartitionAudit[]; ignored: IgnoredDir[]; choices: CodecChoice[] }> {
  return auditTargets(await resolveTargets(dirs, 'audit'), options);
}

async function auditTargets(
  { partitions, ignored }: Awaited<ReturnType<typeof resolveTargets>>,
  given: AuditOptions,
): Promise<{ audits: PartitionAudit[]; ignored: IgnoredDir[]; choices: CodecChoice[] }> {
  const options = withSettings(given);
  const sample = new CodecSample(options.compareBytes ?? DEFAULT_COMPARE_BYTES);
  const rules = readinessRules({ readiness: options.readiness, includeActive: options.includeActive });
  const now = Date.now();
  const progress = { bytesDone: 0, segmentsDone: 0 };
  const audits: PartitionAudit[] = [];
  for (const p of partitions) {
    const tp = parsePartitionDirName(path.basename(p.dir));
    // A segment named on the command line is audited as convert treats it: converted. Of a
    // directory, the segments as migrate treats them (the active segment, or an archive's still
    // changing ones).
    const leftAlone = new Set(
      p.namedFile ? [] : splitReady(p.segments, rules, now).notReady.map((s) => s.path),
    );
    audits.push(
      await auditPartition(
        {
          dir: p.dir,
          name: p.name,
          topic: tp ? tp.topic : path.basename(p.dir),
          partition: tp ? tp.partition : -1,
          segments: p.segments,
          activePath: p.activePath,
          leftAlone,
        },
        options,
        progress,
        sample,
      ),
    );
  }
  const choices = sample.bytes === 0 ? [] : compareCodecs(sample, options);
  return { audits, ignored, choices };
}

/** The options with every conversion setting they lack at its declared default. */
function withSettings(options: AuditOptions): AuditOptions & ConversionSettings {
  return { ...options, ...conversionSettingsOf(options) };
}

interface PartitionDir {
  dir: string;
  name: string;
  topic: string;
  partition: number;
  /** By base offset. */
  segments: { path: string; size: number }[];
  /** The active (newest) segment. */
  activePath?: string;
  /** The segments migrate would leave alone (the active one, or an archive's still changing). */
  leftAlone: ReadonlySet<string>;
}

async function auditPartition(
  p: PartitionDir,
  options: AuditOptions & ConversionSettings,
  progress: { bytesDone: number; segmentsDone: number },
  sample: CodecSample,
): Promise<PartitionAudit> {
  const target = codecId(options.codec);
  const sampleBudget = options.sampleBytes ?? DEFAULT_SAMPLE_BYTES;
  const perSegmentSample = Math.ceil(sampleBudget / p.segments.length);
  const indexOverhead = 1 + 20 / options.indexIntervalBytes;
  const a: PartitionAudit = {
    dir: p.dir,
    name: p.name,
    topic: p.topic,
    partition: p.partition,
    segments: p.segments.length,
    bytes: 0,
    legacySegments: 0,
    legacyBytes: 0,
    bytesByFormat: {},
    activeSegment: p.activePath ?? '',
    leftAloneSegments: p.leftAlone.size,
    convertSegments: 0,
    convertBytes: 0,
    estimatedBytesAfter: 0,
    segmentsAfter: [],
    stageBytes: 0,
    sampledBytes: 0,
    legacyLeftAlone: [],
    kafkaLeftovers: await kafkaLeftoverFiles(p.dir),
    errors: [],
  };
  // Per partition: converted-sample ratio for the changeable bytes not sampled.
  let sampleIn = 0;
  let sampleOut = 0;
  const pending: {
    unchanged: number;
    sampledOut: number;
    unsampled: number;
    bytes: number;
    rolled: boolean;
  }[] = [];
  for (let i = 0; i < p.segments.length; i++) {
    const seg = p.segments[i];
    let segBytes = 0;
    let legacy = 0;
    let changeable = 0;
    let segSampleIn = 0;
    const rewritten = new RewrittenSize(options);
    const reader = new LogFileReader(seg.path);
    sample.startSegment();
    const bytesBefore = progress.bytesDone;
    try {
      for await (const e of reader.entries()) {
        segBytes += e.size;
        progress.bytesDone += e.size;
        options.onProgress?.(progress);
        // The decision convert makes (and every CRC checked: a corrupt segment is not "ready").
        const info = inspectEntry(e, seg.path);
        if (e.magic < 2) legacy += e.size;
        const key = formatKey(e.magic, info.codec);
        a.bytesByFormat[key] = (a.bytesByFormat[key] ?? 0) + e.size;
        if (!needsRewrite(info, target)) continue;
        changeable += e.size;
        if (segSampleIn >= perSegmentSample) continue;
        if (!p.leftAlone.has(seg.path)) sample.offer(e.bytes, e.magic);
        segSampleIn += e.size;
        rewritten.add(e.bytes, e.magic);
      }
      rewritten.finish();
      const trailing = reader.end - reader.validEnd;
      if (trailing > 0)
        a.errors.push(`${seg.path}: ${trailing} invalid bytes at the end (position ${reader.validEnd})`);
    } catch (err) {
      if (!(err instanceof SegliftError) && !isFsError(err)) throw err;
      a.errors.push(formatError(err));
    }
    // The bar counts the segment's size even when a bad entry stopped the reading.
    progress.bytesDone = bytesBefore + seg.size;
    progress.segmentsDone++;
    options.onProgress?.(progress);
    a.bytes += segBytes;
    if (legacy > 0) {
      a.legacySegments++;
      a.legacyBytes += legacy;
      if (p.leftAlone.has(seg.path)) a.legacyLeftAlone.push(seg.path);
    }
    const segSampleOut = rewritten.bytes;
    a.sampledBytes += segSampleIn;
    sampleIn += segSampleIn;
    sampleOut += segSampleOut;
    if (changeable > 0 && !p.leftAlone.has(seg.path)) {
      a.convertSegments++;
      a.convertBytes += segBytes;
      pending.push({
        unchanged: segBytes - changeable,
        sampledOut: segSampleOut,
        unsampled: changeable - segSampleIn,
        bytes: segBytes,
        rolled: seg.path !== p.activePath,
      });
    }
  }
  const ratio = sampleIn === 0 ? 1 : sampleOut / sampleIn;
  for (const s of pending) {
    const after = s.unchanged + s.sampledOut + Math.round(s.unsampled * ratio);
    a.estimatedBytesAfter += after;
    a.segmentsAfter.push(Math.round(after * indexOverhead));
    // Prepare stages rolled segments only (the broker appends to the active one).
    if (s.rolled) a.stageBytes += Math.round(after * indexOverhead);
  }
  return a;
}

/**
 * The free space a migrate needs on each filesystem (see DiskNeed): partitions are grouped by
 * the device their directory is on. Bound, not a forecast: the `concurrency` largest segments
 * are assumed to convert at the same moment and every segment that grows to have grown already.
 */
export async function diskNeeds(
  audits: PartitionAudit[],
  options: { concurrency: number; indexIntervalBytes?: number; backupDir?: string },
): Promise<DiskNeed[]> {
  const byDevice = new Map<number, PartitionAudit[]>();
  for (const a of audits) {
    const dev = await stat(a.dir).then(
      (st) => st.dev,
      () => -1,
    );
    byDevice.set(dev, [...(byDevice.get(dev) ?? []), a]);
  }
  const indexOverhead = 20 / (options.indexIntervalBytes ?? conversionSettingsOf().indexIntervalBytes);
  const needs: DiskNeed[] = [];
  for (const group of byDevice.values()) {
    const sizes = group.flatMap((a) => a.segmentsAfter).sort((x, y) => y - x);
    let growth = 0;
    for (const a of group) growth += Math.max(0, a.estimatedBytesAfter - a.convertBytes);
    const convertBytes = group.reduce((n, a) => n + a.convertBytes, 0);
    const inFlight = sizes.slice(0, options.concurrency).reduce((n, x) => n + x, 0);
    needs.push({
      dir: commonAncestor(group.map((a) => a.dir)),
      partitions: group.length,
      convertBytes,
      estimatedBytesAfter: group.reduce((n, a) => n + a.estimatedBytesAfter, 0),
      largestSegmentAfter: sizes[0] ?? 0,
      concurrency: options.concurrency,
      inFlightBytes: inFlight,
      growthBytes: growth,
      peakExtraBytes: inFlight + growth,
      // The originals' .log, and their indexes (20 bytes per index interval).
      backupBytes: Math.round(convertBytes * (1 + indexOverhead)),
    });
  }
  return needs.sort((x, y) => x.dir.localeCompare(y.dir));
}

export async function audit(dirs: string[], ctx: CommandContext, given: AuditOptions = {}): Promise<number> {
  const options = withSettings(given);
  const targets = await resolveTargets(dirs, 'audit');
  if (targets.partitions.length === 0)
    throw new UsageError(noSegmentsMessage(dirs, targets.ignored), 'audit');
  // Reading every byte of a large tree takes a while: a bar on a terminal says how far it got.
  const bar = new ProgressBar(ctx.io.stderr, ctx.io.stderrIsTTY && !options.json);
  for (const p of targets.partitions) {
    bar.segmentsTotal += p.segments.length;
    for (const s of p.segments) bar.bytesTotal += s.size;
  }
  bar.update(true);
  let audits: PartitionAudit[];
  let ignored: IgnoredDir[];
  let choices: CodecChoice[];
  try {
    ({ audits, ignored, choices } = await auditTargets(targets, {
      ...options,
      onProgress: (p) => {
        bar.bytesDone = p.bytesDone;
        bar.segmentsDone = p.segmentsDone;
        bar.update();
      },
    }));
  } finally {
    bar.done();
  }
  const concurrency = options.concurrency ?? 1;
  const disks = await diskNeeds(audits, {
    concurrency,
    indexIntervalBytes: options.indexIntervalBytes,
    backupDir: options.backupDir,
  });
  const total = {
    partitions: audits.length,
    segments: 0,
    bytes: 0,
    legacySegments: 0,
    legacyBytes: 0,
    convertSegments: 0,
    convertBytes: 0,
    estimatedBytesAfter: 0,
    stageBytes: 0,
    legacyLeftAlone: 0,
    kafkaLeftovers: 0,
    errors: 0,
  };
  for (const a of audits) {
    total.segments += a.segments;
    total.bytes += a.bytes;
    total.legacySegments += a.legacySegments;
    total.legacyBytes += a.legacyBytes;
    total.convertSegments += a.convertSegments;
    total.convertBytes += a.convertBytes;
    total.estimatedBytesAfter += a.estimatedBytesAfter;
    total.stageBytes += a.stageBytes;
    total.legacyLeftAlone += a.legacyLeftAlone.length;
    // Only where migrate has something to rewrite does it refuse (and fail).
    if (a.convertSegments > 0 && a.kafkaLeftovers.length > 0) total.kafkaLeftovers++;
    total.errors += a.errors.length;
  }
  // Nothing to rewrite: nothing to fit on any filesystem.
  const space = total.convertSegments > 0 ? await spaceChecks(disks, options.backupDir) : [];
  const notEnough = space.some((c) => !c.enough);
  const archive =
    !options.includeActive && options.readiness?.requireRolled === false
      ? { quietMs: options.readiness.quietMs }
      : undefined;
  const codec = options.codec;
  const tiering = await auditTiering(targets.partitions);
  if (options.json) {
    for (const a of audits) {
      const { segmentsAfter: _s, ...json } = a;
      ctx.out.line(toJsonLine({ type: 'partition', ...json, tiering: tiering.byDir.get(a.dir) }));
    }
    for (const i of ignored) ctx.out.line(toJsonLine({ type: 'ignored', ...i }));
    if (choices.length > 0) ctx.out.line(toJsonLine({ type: 'codecChoices', choices }));
    ctx.out.line(
      toJsonLine({ type: 'summary', codec, ...total, readiness: readiness(total), disk: disks, space }),
    );
  } else {
    const rows = audits.map((a) => [
      a.name,
      String(a.segments),
      formatBytes(a.bytes),
      String(a.legacySegments),
      formatBytes(a.legacyBytes),
      Object.entries(a.bytesByFormat)
        .sort()
        .map(([k, v]) => `${k}=${formatBytes(v)}`)
        .join(' '),
      String(a.convertSegments),
      formatBytes(a.convertBytes),
      // The partition after a migrate: what it keeps as it is, and the estimate of what it rewrites.
      formatBytes(a.bytes - a.convertBytes + a.estimatedBytesAfter),
    ]);
    ctx.out.write(
      renderTable(
        [
          'PARTITION',
          'SEGMENTS',
          'BYTES',
          'LEGACY SEGS',
          'LEGACY BYTES',
          'FORMATS',
          'TO CONVERT',
          'CONVERT BYTES',
          `EST. AFTER (${codec})`,
        ],
        rows,
      ),
    );
    ctx.out.line('');
    ctx.out.line(
      `${count(total.partitions, 'partition')}, ${count(total.segments, 'segment')}, ${formatBytes(total.bytes)}; ` +
        `${count(total.legacySegments, 'segment holds', 'segments hold')} magic 0/1 data (${formatBytes(total.legacyBytes)}).`,
    );
    const leftAlone = audits.reduce((n, a) => n + a.leftAloneSegments, 0);
    const noRewrite = total.segments - total.convertSegments - leftAlone;
    ctx.out.line(
      `migrate --codec ${codec}` +
        (total.convertSegments > 0
          ? ` would rewrite ${count(total.convertSegments, 'segment')} (${formatBytes(total.convertBytes)}) to about ${formatBytes(total.estimatedBytesAfter)}`
          : ': nothing to rewrite') +
        (options.includeActive
          ? '.'
          : options.readiness?.requireRolled === false
            ? `; an archive: the newest segment of each partition once unchanged for ${formatDurationMs(options.readiness.quietMs)}.`
            : '; active segments are left alone (--include-active to count them).') +
        (noRewrite > 0 ? ` ${count(noRewrite, 'segment is', 'segments are')} ${codec} v2 already.` : ''),
    );
    // Nothing to rewrite: no disk or stage figures to read.
    if (total.convertSegments > 0) {
      for (const d of disks) ctx.out.line(diskLine(d, disks.length > 1, options.backupDir));
      for (const c of space) ctx.out.line(spaceLine(c));
      ctx.out.line(
        `migrate --prepare needs about ${formatBytes(total.stageBytes)} in its stage dir (the estimate above for the rolled segments it would rewrite, with their indexes; an estimate, not a bound: recompression can grow data).` +
          stageSpaceNote(total.stageBytes, space),
      );
    }
    for (const a of audits)
      if (a.kafkaLeftovers.length > 0)
        ctx.out.line(leftoversLine(a.name, a.kafkaLeftovers, a.convertSegments > 0));
    for (const line of codecChoiceLines(choices)) ctx.out.line(line);
    for (const i of ignored) ctx.out.line(`passed over ${i.dir}: ${i.reason}`);
    for (const line of tieringLines(tiering.topics)) ctx.out.line(line);
    ctx.out.line(readinessLine(total));
    if (total.errors === 0)
      for (const line of leftAloneLegacyLines(
        audits.flatMap((a) => a.legacyLeftAlone),
        dirs,
        archive,
      ))
        ctx.out.line(line);
  }
  for (const a of audits) for (const e of a.errors) ctx.err.line(e);
  // A migrate as audited would fail: a segment it cannot read, a partition it refuses, a
  // filesystem it fills. Magic 0/1 data alone is what migrate is for: 0.
  return total.errors > 0 || total.kafkaLeftovers > 0 || notEnough ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
}

function formatDurationMs(ms: number): string {
  return ms % 60_000 === 0 && ms > 0 ? `${ms / 60_000} min` : `${ms} ms`;
}

/**
 * One line per filesystem: `disk: migrate needs 30.3 KiB free while it runs: 2 segments convert
 * at once (--concurrency), each written beside its original (the 2 largest: 26.4 KiB), + 3.9 KiB
 * by which segments grow. Afterwards the data is 504 B larger. Backups take 41.3 KiB.`
 * The formula is docs/operator-guide.md's ("Disk space").
 */
export function diskLine(d: DiskNeed, named: boolean, backupDir?: string): string {
  const change = d.estimatedBytesAfter - d.convertBytes;
  return (
    `disk${named ? ` (${d.dir})` : ''}: migrate needs ${formatBytes(d.peakExtraBytes)} free while it runs: ` +
    `${count(d.concurrency, 'segment converts', 'segments convert')} at once (--concurrency), each written ` +
    `beside its original (the ${d.concurrency === 1 ? 'largest' : `${d.concurrency} largest`}: ${formatBytes(d.inFlightBytes)})` +
    `${d.growthBytes > 0 ? `, + ${formatBytes(d.growthBytes)} by which segments grow` : ''}. ` +
    `Afterwards the data is ${formatBytes(Math.abs(change))} ${change > 0 ? 'larger' : 'smaller'}. ` +
    `Backups${backupDir ? ` (${backupDir})` : ' (with --backup-dir)'} take ${formatBytes(d.backupBytes)}.`
  );
}

function readiness(t: { legacySegments: number; errors: number }): 'ready' | 'not-ready' | 'unknown' {
  return t.errors > 0 ? 'unknown' : t.legacySegments > 0 ? 'not-ready' : 'ready';
}

/**
 * The answer an operator reads before a Kafka 4 upgrade. "Ready" only when every segment was
 * read to its end: a segment that could not be read may hold magic 0/1 data.
 */
export function readinessLine(t: {
  segments: number;
  legacySegments: number;
  /** Of those, the ones a migrate as audited leaves alone (active, or an archive's changing ones). */
  legacyLeftAlone?: number;
  errors: number;
}): string {
  const r = readiness(t);
  if (r === 'unknown')
    return `Kafka 4 readiness: UNKNOWN: ${count(t.errors, 'segment')} could not be read (see the errors above); fix or remove them and audit again.`;
  if (r === 'not-ready') {
    const alone = t.legacyLeftAlone ?? 0;
    const hold = `${count(t.legacySegments, 'segment still holds', 'segments still hold')} magic 0/1 data`;
    if (alone === 0) return `Kafka 4 readiness: NOT READY: ${hold}; 'seglift migrate' upconverts them to v2.`;
    if (alone === t.legacySegments)
      return `Kafka 4 readiness: NOT READY: ${hold}, ${t.legacySegments === 1 ? 'one' : 'all'} left alone by 'seglift migrate' as audited (below).`;
    return `Kafka 4 readiness: NOT READY: ${hold}; 'seglift migrate' upconverts ${t.legacySegments - alone} of them to v2 and leaves ${alone} alone (below).`;
  }
  return `Kafka 4 readiness: ready: ${t.segments === 1 ? '1 segment' : `all ${t.segments} segments`} read, no magic 0/1 data found.`;
}

/**
 * `codec choices on a 16.0 MiB sample of the data to rewrite (size after; rewrite speed, one core):`
 * then one line per codec and level, the chosen one marked.
 */
export function codecChoiceLines(choices: CodecChoice[]): string[] {
  if (choices.length === 0) return [];
  const label = (c: CodecChoice) => (c.level === undefined ? c.codec : `${c.codec} level ${c.level}`);
  const size = (c: CodecChoice) => {
    const change = c.bytesAfter / c.bytesIn;
    return `${formatBytes(c.bytesAfter).padStart(10)} (${change.toFixed(2)}x${change > 1 ? ', larger' : ''})`;
  };
  const labelWidth = Math.max(...choices.map((c) => label(c).length));
  const sizeWidth = Math.max(...choices.map((c) => size(c).length));
  return [
    `codec choices on a ${formatBytes(choices[0].bytesIn)} sample of the data to rewrite (size after; rewrite speed, one core):`,
    ...choices.map(
      (c) =>
        `  ${label(c).padEnd(labelWidth)}  ${size(c).padEnd(sizeWidth)}  ${c.mbPerSec.toFixed(1).padStart(6)} MB/s` +
        (c.chosen ? '  <- --codec/--level' : ''),
    ),
  ];
}
