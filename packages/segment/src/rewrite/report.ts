/**
 * 'copied': written to outDir as it was (already in the target codec), with rebuilt indexes,
 * verified; in place such a segment is 'skipped'. 'not-started': an interrupted run never reached
 * it: untouched. 'rolled-back': an interrupted run stopped its conversion before the swap: its
 * temp files removed, the original untouched (one word per state: it was started).
 */
export type SegmentResult = 'converted' | 'copied' | 'skipped' | 'failed' | 'not-started' | 'rolled-back';

/** Per segment, as JSON-ready as possible (bigints never appear here). */
export interface SegmentReport {
  path: string;
  result: SegmentResult;
  /**
   * Why skipped/failed: e.g. 'already-target-codec', 'empty', 'active-segment', the error message. A
   * commit's segment whose staged copy failed its check: what failed (stage 'corrupt').
   */
  reason?: string;
  /** The typed error's toJSON() when failed. */
  error?: Record<string, unknown>;
  /** Failed because its signal was aborted (before its swap): the original is untouched. */
  aborted?: boolean;
  /** Where the result went: the segment itself (in place) or the outDir copy. */
  outPath?: string;
  bytesIn: number;
  bytesOut: number;
  batchesIn: number;
  batchesOut: number;
  recordsIn: number;
  /** Records written; a segment skipped as unchanged keeps its records: recordsIn (markUnchanged). */
  recordsOut: number;
  /** Shallow entries per `v<magic>/<codec>`, e.g. { 'v0/none': 10, 'v1/gzip': 2, 'v2/zstd': 5 }. */
  codecMixIn: Record<string, number>;
  codecOut: Record<string, number>;
  /** v2 batches kept as they were because recompression made them larger than maxBatchBytes. */
  oversizeKept: number;
  /** v2 batches kept in their codec because recompression would have made them larger (onlyIfSmaller). */
  keptSmaller: number;
  /** Upconverted batches above maxBatchBytes (a single record that alone is bigger). */
  oversizeUpconverted: number;
  /** v2 batches copied byte for byte (control, empty, already in the target codec). */
  batchesCopied: number;
  /** Bytes of a partial trailing entry dropped under acceptTruncatedTail. */
  truncatedTailBytes: number;
  backupPaths?: string[];
  /**
   * Two-phase migration. Prepare: 'staged' (verified conversion and record in the stage dir),
   * 'changed'/'gone' (the source was replaced or deleted while read: nothing staged). Commit:
   * 'committed' (the staged files swapped in), 'discarded' (the staged segment no longer matched
   * its source or the options: converted now instead), 'corrupt' (the staged files were not the
   * bytes prepare wrote, by their sha256: discarded, converted now; `reason` says which file).
   */
  stage?: 'staged' | 'changed' | 'gone' | 'committed' | 'discarded' | 'corrupt';
  durationMs: number;
  throughputMBps: number;
}

export interface RunSummary {
  segments: number;
  converted: number;
  /** Copied to outDir as they were (already in the target codec). */
  copied: number;
  skipped: number;
  failed: number;
  /** Never reached by an interrupted run. */
  notStarted: number;
  /** Stopped mid-conversion by an interrupted run, before the swap: left as they were. */
  rolledBack: number;
  /** Over every report, whatever its result (bytes read, bytes written). */
  bytesIn: number;
  bytesOut: number;
  /**
   * The segments written (converted or copied): their bytes before and after. What the summary
   * line and the table's total row show (a rolled-back or failed segment wrote nothing).
   */
  writtenBytesIn: number;
  writtenBytesOut: number;
  recordsIn: number;
  recordsOut: number;
  oversizeKept: number;
  keptSmaller: number;
  /** Converted segments that came out larger than they went in, and the bytes they grew by. */
  grew: number;
  grewBytes: number;
  truncatedTailBytes: number;
  durationMs: number;
  /** bytesIn of converted segments over the wall-clock duration given to summarize. */
  throughputMBps: number;
  /** bytesOut / bytesIn of converted segments. */
  ratio: number;
}

export function emptyReport(path: string): SegmentReport {
  return {
    path,
    result: 'failed',
    bytesIn: 0,
    bytesOut: 0,
    batchesIn: 0,
    batchesOut: 0,
    recordsIn: 0,
    recordsOut: 0,
    codecMixIn: {},
    codecOut: {},
    oversizeKept: 0,
    keptSmaller: 0,
    oversizeUpconverted: 0,
    batchesCopied: 0,
    truncatedTailBytes: 0,
    durationMs: 0,
    throughputMBps: 0,
  };
}

/**
 * A segment a rewrite would leave as it is (already in the target codec, or empty: a rolled
 * segment that never got a batch), skipped in place or copied as it is: the reason says which,
 * and a skipped one's records are counted as kept (recordsOut), so that a run's recordsIn and
 * recordsOut match when nothing was lost.
 */
export function markUnchanged(report: SegmentReport, result: 'skipped' | 'copied'): void {
  report.result = result;
  report.reason = report.batchesIn === 0 ? 'empty' : 'already-target-codec';
  if (result === 'skipped') report.recordsOut = report.recordsIn;
}

export function throughput(bytes: number, ms: number): number {
  return ms > 0 ? Math.round((bytes / 1e6 / (ms / 1000)) * 100) / 100 : 0;
}

/** Converted or copied: an output was written. */
const written = (r: SegmentReport) => r.result === 'converted' || r.result === 'copied';

export function summarize(reports: SegmentReport[], wallMs?: number): RunSummary {
  const s: RunSummary = {
    segments: reports.length,
    converted: 0,
    copied: 0,
    skipped: 0,
    failed: 0,
    notStarted: 0,
    rolledBack: 0,
    bytesIn: 0,
    bytesOut: 0,
    writtenBytesIn: 0,
    writtenBytesOut: 0,
    recordsIn: 0,
    recordsOut: 0,
    oversizeKept: 0,
    keptSmaller: 0,
    grew: 0,
    grewBytes: 0,
    truncatedTailBytes: 0,
    durationMs: 0,
    throughputMBps: 0,
    ratio: 0,
  };
  let convIn = 0;
  let convOut = 0;
  for (const r of reports) {
    if (r.result === 'not-started') s.notStarted++;
    else if (r.result === 'rolled-back') s.rolledBack++;
    else s[r.result]++;
    if (written(r)) {
      s.writtenBytesIn += r.bytesIn;
      s.writtenBytesOut += r.bytesOut;
    }
    s.bytesIn += r.bytesIn;
    s.bytesOut += r.bytesOut;
    s.recordsIn += r.recordsIn;
    s.recordsOut += r.recordsOut;
    s.oversizeKept += r.oversizeKept;
    s.keptSmaller += r.keptSmaller ?? 0;
    s.truncatedTailBytes += r.truncatedTailBytes;
    s.durationMs += r.durationMs;
    if (r.result === 'converted') {
      convIn += r.bytesIn;
      convOut += r.bytesOut;
      if (r.bytesOut > r.bytesIn) {
        s.grew++;
        s.grewBytes += r.bytesOut - r.bytesIn;
      }
    }
  }
  const ms = wallMs ?? s.durationMs;
  if (wallMs !== undefined) s.durationMs = wallMs;
  s.throughputMBps = throughput(convIn, ms);
  s.ratio = convIn > 0 ? Math.round((convOut / convIn) * 1000) / 1000 : 0;
  return s;
}

function human(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

function growth(bytesIn: number, bytesOut: number): string {
  return `+${(((bytesOut - bytesIn) / bytesIn) * 100).toFixed(1)}%`;
}

function mix(m: Record<string, number>): string {
  return Object.entries(m)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}:${v}`)
    .join(' ');
}

/** A fixed-width table for terminals, one line per segment plus a total line. */
export function formatReportTable(
  reports: SegmentReport[],
  summary: RunSummary = summarize(reports),
): string {
  const header = ['segment', 'result', 'in', 'out', 'ratio', 'records', 'codecs in', 'MB/s', 'note'];
  const rows = reports.map((r) => [
    r.path,
    r.result,
    // In and out for what was written, as the total adds them up; a skipped segment's size is
    // not bytes converted, a rolled-back one's partial output is gone.
    written(r) ? human(r.bytesIn) : '-',
    written(r) ? human(r.bytesOut) : '-',
    written(r) && r.bytesIn > 0 ? (r.bytesOut / r.bytesIn).toFixed(3) : '-',
    written(r) ? String(r.recordsIn) : '-',
    mix(r.codecMixIn),
    r.result === 'converted' ? r.throughputMBps.toFixed(1) : '-',
    [
      r.reason ?? '',
      r.result === 'converted' && r.bytesOut > r.bytesIn ? `GREW ${growth(r.bytesIn, r.bytesOut)}` : '',
      r.oversizeKept > 0 ? `oversize kept ${r.oversizeKept}` : '',
      (r.keptSmaller ?? 0) > 0 ? `kept smaller ${r.keptSmaller}` : '',
      r.truncatedTailBytes > 0 ? `dropped tail ${r.truncatedTailBytes} B` : '',
    ]
      .filter(Boolean)
      .join('; '),
  ]);
  rows.push([
    `total (${summary.segments})`,
    `${summary.converted} conv/${summary.copied ? `${summary.copied} copy/` : ''}${summary.skipped} skip/${summary.failed} fail` +
      `${summary.rolledBack ? `/${summary.rolledBack} rolled back` : ''}${summary.notStarted ? `/${summary.notStarted} not started` : ''}`,
    human(summary.writtenBytesIn),
    human(summary.writtenBytesOut),
    summary.ratio ? summary.ratio.toFixed(3) : '-',
    // The column's sum, as in and out are: records of the segments written.
    String(reports.reduce((n, r) => n + (written(r) ? r.recordsIn : 0), 0)),
    '',
    summary.throughputMBps.toFixed(1),
    '',
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]))
      .join('  ')
      .trimEnd();
  const lines = [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)];
  if (summary.grew > 0) {
    lines.push(
      `warning: ${summary.grew} of ${summary.converted} converted segments grew, by ${human(summary.grewBytes)} in all: ` +
        'the target codec and level compress these batches worse than their source did. `seglift audit` ' +
        'estimates the size before converting; --only-if-smaller keeps such batches in their codec.',
    );
  }
  return lines.join('\n');
}

/** JSON document for `--json`: every report and the summary. */
export function reportsToJSON(reports: SegmentReport[], summary: RunSummary = summarize(reports)): string {
  return JSON.stringify({ summary, segments: reports }, null, 2);
}
