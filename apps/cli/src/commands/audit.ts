import path from 'node:path';
import { pipelineOptions } from '@seglift/config';
import {
  type CodecName,
  codecId,
  DEFAULT_INDEX_INTERVAL_BYTES,
  recompressRecordBatch,
  SegliftError,
} from '@seglift/format';
import { type Grouping, Upconverter } from '@seglift/legacy';
import {
  codecLabel,
  type IgnoredDir,
  inspectEntry,
  needsRewrite,
  parsePartitionDirName,
} from '@seglift/segment';
import { flag, intOpt, parse, requirePositionals } from '../args.js';
import type { Command, CommandContext } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, formatError, isFsError, UsageError } from '../exit-codes.js';
import { toJsonLine } from '../io.js';
import { LogFileReader } from '../log-reader.js';
import { loadSettings } from '../settings.js';
import { formatBytes, renderTable } from '../table.js';
import { noSegmentsMessage, resolveTargets } from '../targets.js';

export const DEFAULT_SAMPLE_BYTES = 16 * 1024 * 1024;

const HELP = `Usage: seglift audit <dir>... [options]

Kafka 4 readiness report. <dir> is a broker log.dir (its <topic>-<partition> subdirectories are
audited) or one partition directory. Per partition: segments and bytes still in magic 0/1,
bytes per codec, the active segment, what 'seglift migrate' would change, and the estimated
size after recompression to the target codec. The estimate converts a sample of the batches
exactly (upconversion + recompression, as migrate would) and scales the rest by the sample's
ratio; with --sample-bytes at least the size of the data the estimate is exact. The summary
also gives the space 'seglift migrate --prepare' needs in its stage dir: that estimate for the
rolled (non-active) segments it would rewrite, plus their indexes (an estimate, not a bound:
recompression can grow data; the rolled segments' source size is the bound when it does not).

Options:
  --config FILE      YAML or JSON config file (default $SEGLIFT_CONFIG); the target settings
                     (codec, level, grouping, coalesceBytes, maxBatchBytes, ...) come from
                     defaults < config file < SEGLIFT_* environment < these flags, as for migrate
  --codec C          target codec: none|gzip|snappy|lz4|zstd (default zstd)
  --level N          target compression level (codec default otherwise)
  --grouping G       coalesce|kafka, how legacy entries become v2 batches (default coalesce)
  --only-if-smaller  estimate with batches kept in their codec where recompression grows them
  --sample-bytes N   bytes per partition converted exactly for the estimate (default 16m;
                     k/m/g suffixes allowed)
  --include-active   count the active (last) segment as something migrate would change
  --json             one NDJSON object per partition, then a summary object
  -h, --help         this text

An invalid configuration lists every problem and exits with 2. Audit only reads. A segment that cannot be read is reported and makes the exit code 1.

${EXIT_CODES_HELP}
`;

export interface AuditOptions {
  codec?: CodecName;
  level?: number;
  grouping?: Grouping;
  coalesceBytes?: number;
  maxBatchBytes?: number;
  onlyIfSmaller?: boolean;
  maxDecompressedBatchBytes?: number;
  sampleBytes?: number;
  includeActive?: boolean;
  json?: boolean;
}

export interface PartitionAudit {
  dir: string;
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
  /** Segments (and their bytes) a migrate to the target codec would rewrite. */
  convertSegments: number;
  convertBytes: number;
  /** Estimated bytes of those segments after conversion. */
  estimatedBytesAfter: number;
  /**
   * Space a `migrate --prepare` of this partition needs in the stage dir: the estimated output of
   * the rolled (non-active) segments it would rewrite, plus their rebuilt indexes.
   */
  stageBytes: number;
  /** Bytes converted exactly for the estimate. */
  sampledBytes: number;
  errors: string[];
}

export const auditCommand: Command = {
  name: 'audit',
  summary: 'Kafka 4 readiness: legacy data, codecs, what a migrate would change',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('audit', argv, {
      config: { type: 'string' },
      codec: { type: 'string' },
      level: { type: 'string' },
      grouping: { type: 'string' },
      'only-if-smaller': { type: 'boolean' },
      'sample-bytes': { type: 'string' },
      'include-active': { type: 'boolean' },
      json: { type: 'boolean' },
    });
    const dirs = requirePositionals('audit', p, '<dir>... (a Kafka log dir or partition dir)');
    const { config } = loadSettings('audit', p, ctx);
    return audit(dirs, ctx, {
      ...pipelineOptions(config),
      sampleBytes: intOpt('audit', p, 'sample-bytes', { sizes: true }),
      includeActive: flag(p, 'include-active'),
      json: flag(p, 'json'),
    });
  },
};

/** Reads every segment under `dirs` (or each named segment); returns the per-partition audits. */
export async function auditPartitions(
  dirs: string[],
  options: AuditOptions = {},
): Promise<{ audits: PartitionAudit[]; ignored: IgnoredDir[] }> {
  const { partitions, ignored } = await resolveTargets(dirs, 'audit');
  const audits: PartitionAudit[] = [];
  for (const p of partitions) {
    const tp = parsePartitionDirName(path.basename(p.dir));
    audits.push(
      await auditPartition(
        {
          dir: p.dir,
          topic: tp ? tp.topic : path.basename(p.dir),
          partition: tp ? tp.partition : -1,
          segments: p.segments,
          // A segment named on the command line is audited as migrate/convert would treat it.
          activePath: p.namedFile && !options.includeActive ? undefined : p.activePath,
        },
        options,
      ),
    );
  }
  return { audits, ignored };
}

interface PartitionDir {
  dir: string;
  topic: string;
  partition: number;
  /** By base offset. */
  segments: { path: string }[];
  /** The active segment, left alone unless includeActive. */
  activePath?: string;
}

async function auditPartition(p: PartitionDir, options: AuditOptions): Promise<PartitionAudit> {
  const target = codecId(options.codec ?? 'zstd');
  const sampleBudget = options.sampleBytes ?? DEFAULT_SAMPLE_BYTES;
  const perSegmentSample = Math.ceil(sampleBudget / p.segments.length);
  const a: PartitionAudit = {
    dir: p.dir,
    topic: p.topic,
    partition: p.partition,
    segments: p.segments.length,
    bytes: 0,
    legacySegments: 0,
    legacyBytes: 0,
    bytesByFormat: {},
    activeSegment: p.activePath ?? '',
    convertSegments: 0,
    convertBytes: 0,
    estimatedBytesAfter: 0,
    stageBytes: 0,
    sampledBytes: 0,
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
    active: boolean;
  }[] = [];
  for (let i = 0; i < p.segments.length; i++) {
    const seg = p.segments[i];
    const active = seg.path === p.activePath;
    let segBytes = 0;
    let legacy = 0;
    let changeable = 0;
    let segSampleIn = 0;
    let segSampleOut = 0;
    const upconverter = new Upconverter({
      grouping: options.grouping ?? 'coalesce',
      codec: target,
      level: options.level,
      coalesceBytes: options.coalesceBytes,
      maxBatchBytes: options.maxBatchBytes,
      maxDecompressedBytes: options.maxDecompressedBatchBytes,
    });
    let upconvertedIn = 0;
    const reader = new LogFileReader(seg.path);
    try {
      for await (const e of reader.entries()) {
        segBytes += e.size;
        // The decision convert makes (and every CRC checked: a corrupt segment is not "ready").
        const info = inspectEntry(e, seg.path);
        if (e.magic < 2) legacy += e.size;
        const key = `v${e.magic}/${codecLabel(info.codec)}`;
        a.bytesByFormat[key] = (a.bytesByFormat[key] ?? 0) + e.size;
        if (!needsRewrite(info, target)) continue;
        changeable += e.size;
        if (segSampleIn >= perSegmentSample) continue;
        segSampleIn += e.size;
        if (e.magic < 2) {
          upconvertedIn += e.size;
          for (const b of upconverter.push(e.bytes)) segSampleOut += b.length;
        } else {
          const n = recompressRecordBatch(e.bytes, target, { level: options.level }).length;
          // As convert: with onlyIfSmaller a batch recompression would grow is kept.
          segSampleOut += options.onlyIfSmaller && n > e.size ? e.size : n;
        }
      }
      if (upconvertedIn > 0) for (const b of upconverter.flush()) segSampleOut += b.length;
      const trailing = reader.end - reader.validEnd;
      if (trailing > 0)
        a.errors.push(`${seg.path}: ${trailing} invalid bytes at the end (position ${reader.validEnd})`);
    } catch (err) {
      if (!(err instanceof SegliftError) && !isFsError(err)) throw err;
      a.errors.push(formatError(err));
    }
    a.bytes += segBytes;
    if (legacy > 0) {
      a.legacySegments++;
      a.legacyBytes += legacy;
    }
    a.sampledBytes += segSampleIn;
    sampleIn += segSampleIn;
    sampleOut += segSampleOut;
    if (changeable > 0 && (!active || options.includeActive)) {
      a.convertSegments++;
      a.convertBytes += segBytes;
      pending.push({
        unchanged: segBytes - changeable,
        sampledOut: segSampleOut,
        unsampled: changeable - segSampleIn,
        bytes: segBytes,
        active,
      });
    }
  }
  const ratio = sampleIn === 0 ? 1 : sampleOut / sampleIn;
  for (const s of pending) {
    const after = s.unchanged + s.sampledOut + Math.round(s.unsampled * ratio);
    a.estimatedBytesAfter += after;
    // Prepare stages rolled segments only; each with its .index (8 bytes) and .timeindex (12
    // bytes) entry per index interval of the new log.
    if (!s.active) a.stageBytes += after + Math.ceil(after / DEFAULT_INDEX_INTERVAL_BYTES) * 20;
  }
  return a;
}

export async function audit(
  dirs: string[],
  ctx: CommandContext,
  options: AuditOptions = {},
): Promise<number> {
  const { audits, ignored } = await auditPartitions(dirs, options);
  if (audits.length === 0) throw new UsageError(noSegmentsMessage(dirs, ignored), 'audit');
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
    total.errors += a.errors.length;
  }
  const codec = options.codec ?? 'zstd';
  if (options.json) {
    for (const a of audits) ctx.out.line(toJsonLine({ type: 'partition', ...a }));
    for (const i of ignored) ctx.out.line(toJsonLine({ type: 'ignored', ...i }));
    ctx.out.line(toJsonLine({ type: 'summary', codec, ...total, readiness: readiness(total) }));
  } else {
    const rows = audits.map((a) => [
      `${a.topic}-${a.partition}`,
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
      formatBytes(a.estimatedBytesAfter),
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
      `${total.partitions} partitions, ${total.segments} segments, ${formatBytes(total.bytes)}; ` +
        `${total.legacySegments} segments hold magic 0/1 data (${formatBytes(total.legacyBytes)}).`,
    );
    ctx.out.line(
      `migrate --codec ${codec} would rewrite ${total.convertSegments} segments (${formatBytes(total.convertBytes)})` +
        ` to about ${formatBytes(total.estimatedBytesAfter)}` +
        (options.includeActive ? '.' : '; active segments are left alone (--include-active to count them).'),
    );
    ctx.out.line(
      `migrate --prepare needs about ${formatBytes(total.stageBytes)} in its stage dir (estimated output of the rolled segments it would rewrite, with their indexes; the same estimate as above).`,
    );
    for (const i of ignored) ctx.out.line(`passed over ${i.dir}: ${i.reason}`);
    ctx.out.line(readinessLine(total));
  }
  for (const a of audits) for (const e of a.errors) ctx.err.line(e);
  return total.errors > 0 ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
}

function readiness(t: { legacySegments: number; errors: number }): 'ready' | 'not-ready' | 'unknown' {
  return t.errors > 0 ? 'unknown' : t.legacySegments > 0 ? 'not-ready' : 'ready';
}

/**
 * The answer an operator reads before a Kafka 4 upgrade. "Ready" only when every segment was
 * read to its end: a segment that could not be read may hold magic 0/1 data.
 */
export function readinessLine(t: { segments: number; legacySegments: number; errors: number }): string {
  const r = readiness(t);
  if (r === 'unknown')
    return `Kafka 4 readiness: UNKNOWN: ${t.errors} segment${t.errors === 1 ? '' : 's'} could not be read (see the errors above); fix or remove them and audit again.`;
  if (r === 'not-ready')
    return `Kafka 4 readiness: NOT READY: ${t.legacySegments} segment${t.legacySegments === 1 ? '' : 's'} still hold magic 0/1 data; 'seglift migrate' upconverts them to v2.`;
  return `Kafka 4 readiness: ready: all ${t.segments} segment${t.segments === 1 ? '' : 's'} read, no magic 0/1 data found.`;
}
