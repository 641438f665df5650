import type { SegmentReport } from '@seglift/segment';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

export { Registry } from 'prom-client';

/** Queue states exported as `seglift_queue_jobs{state}`. */
export const QUEUE_STATES = ['waiting', 'active', 'failed', 'completed'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** Seconds; one segment takes from milliseconds (small, copy-through) to minutes (1 GiB, zstd 19). */
export const CONVERSION_DURATION_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export interface SegliftMetrics {
  registry: Registry;
  /** Segments handled, by `result` (whatever the report says: converted, skipped, failed, ...). */
  segments: Counter<'result'>;
  /** `direction` in | out; `codec` of the batches: each batch read under its own codec. */
  batches: Counter<'direction' | 'codec'>;
  records: Counter<'direction'>;
  /** `codec` in: the segment's input codec, or `mixed` when its batches have several (bytes per batch are not reported). */
  bytes: Counter<'direction' | 'codec'>;
  conversionDuration: Histogram<string>;
  /** Errors by SegliftError `code` (CRC_MISMATCH, TRUNCATED, ...). */
  errors: Counter<'code'>;
  queueJobs: Gauge<'state'>;
}

/**
 * The seglift metrics on `registry` (a new one by default, never prom-client's global one, so
 * tests and several components in one process do not collide), plus Node's default process
 * metrics. Calling it twice on the same registry returns the same metric objects.
 */
export function createMetrics(registry: Registry = new Registry()): SegliftMetrics {
  if (registry.getSingleMetric('process_cpu_user_seconds_total') === undefined) {
    collectDefaultMetrics({ register: registry });
  }
  const counter = <L extends string>(name: string, help: string, labelNames: L[]) =>
    (registry.getSingleMetric(name) as Counter<L> | undefined) ??
    new Counter<L>({ name, help, labelNames, registers: [registry] });
  const metrics: SegliftMetrics = {
    registry,
    segments: counter('seglift_segments_total', 'Segments handled, by result.', ['result']),
    batches: counter(
      'seglift_batches_total',
      'Batches of the segments written: before (in) and after (out).',
      ['direction', 'codec'],
    ),
    records: counter(
      'seglift_records_total',
      'Records of the segments written: before (in) and after (out).',
      ['direction'],
    ),
    bytes: counter('seglift_bytes_total', 'Bytes of the segments written: before (in) and after (out).', [
      'direction',
      'codec',
    ]),
    conversionDuration:
      (registry.getSingleMetric('seglift_conversion_duration_seconds') as Histogram<string> | undefined) ??
      new Histogram({
        name: 'seglift_conversion_duration_seconds',
        help: 'Time to convert, verify and swap one segment.',
        buckets: CONVERSION_DURATION_BUCKETS,
        registers: [registry],
      }),
    errors: counter('seglift_errors_total', 'Errors by code.', ['code']),
    queueJobs:
      (registry.getSingleMetric('seglift_queue_jobs') as Gauge<'state'> | undefined) ??
      new Gauge({
        name: 'seglift_queue_jobs',
        help: 'Jobs in the queue, by state.',
        labelNames: ['state'],
        registers: [registry],
      }),
  };
  return metrics;
}

/** The input codec label of a report's bytes: its one codec, or `mixed` (`v1/gzip` counts as gzip). */
function codecInOf(report: SegmentReport): string {
  const codecs = new Set(Object.keys(report.codecMixIn).map((k) => k.slice(k.indexOf('/') + 1)));
  return codecs.size === 1 ? [...codecs][0] : 'mixed';
}

/**
 * Adds one segment's report (@seglift/segment's SegmentReport): every segment to
 * `seglift_segments_total{result}` (and its error code), the batches, records and bytes of the
 * segments written (converted, copied) to those series, as the CLI's table totals them: a skipped
 * segment read to the end, or a failed one read part way, would make the size ratio say less
 * than was written.
 */
export function recordSegmentReport(
  metrics: SegliftMetrics,
  report: SegmentReport,
  targetCodec: string,
): void {
  metrics.segments.inc({ result: report.result });
  if (report.error) metrics.errors.inc({ code: String(report.error.code ?? 'UNKNOWN') });
  if (Number.isFinite(report.durationMs) && report.durationMs >= 0) {
    metrics.conversionDuration.observe(report.durationMs / 1000);
  }
  if (report.result !== 'converted' && report.result !== 'copied') return;
  const codecIn = codecInOf(report);
  // Batches are counted per codec (`codecMixIn`, one count per batch read): a segment of gzip
  // and snappy wrappers adds to both, never to a `mixed` series.
  for (const [codec, n] of batchesByCodec(report))
    addIfPositive(metrics.batches, { direction: 'in', codec }, n);
  addIfPositive(metrics.batches, { direction: 'out', codec: targetCodec }, report.batchesOut);
  addIfPositive(metrics.records, { direction: 'in' }, report.recordsIn);
  addIfPositive(metrics.records, { direction: 'out' }, report.recordsOut);
  addIfPositive(metrics.bytes, { direction: 'in', codec: codecIn }, report.bytesIn);
  addIfPositive(metrics.bytes, { direction: 'out', codec: targetCodec }, report.bytesOut);
}

/** Batches read per codec, over the magics (`v1/gzip` and `v2/gzip` are both gzip). */
function batchesByCodec(report: SegmentReport): Map<string, number> {
  const out = new Map<string, number>();
  for (const [key, n] of Object.entries(report.codecMixIn)) {
    const codec = key.slice(key.indexOf('/') + 1);
    out.set(codec, (out.get(codec) ?? 0) + n);
  }
  return out;
}

/**
 * `seglift_queue_jobs{state}` read from `counts` at every scrape (prom-client's collect), so that
 * what Prometheus stores is the queue at that moment: a timer's sample was up to 15 s old, the
 * first one taken before anything was queued. A count that fails or takes longer than
 * `timeoutMs` leaves the last values (a scrape never hangs on Redis). Returns the stop function.
 */
export function sampleQueueOnScrape(
  metrics: SegliftMetrics,
  counts: () => Promise<Partial<Record<string, number>>>,
  timeoutMs = 2000,
): () => void {
  const gauge = metrics.queueJobs as Gauge<'state'> & { collect?: () => Promise<void> };
  gauge.collect = async () => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs);
    });
    try {
      const c = await Promise.race([counts(), late]);
      if (c !== undefined) setQueueCounts(metrics, c);
    } catch {
      // Redis unavailable: the last values stay; the watcher logs Redis errors itself.
    } finally {
      clearTimeout(timer);
    }
  };
  return () => {
    gauge.collect = undefined;
  };
}

/** Sets `seglift_queue_jobs{state}` from counts such as BullMQ's `queue.getJobCounts()`. */
export function setQueueCounts(metrics: SegliftMetrics, counts: Partial<Record<string, number>>): void {
  for (const state of QUEUE_STATES) metrics.queueJobs.set({ state }, counts[state] ?? 0);
}

function addIfPositive<L extends string>(c: Counter<L>, labels: Partial<Record<L, string>>, n: number): void {
  // Counters only go up; a missing or negative count in a report must not throw mid-job.
  if (Number.isFinite(n) && n > 0) c.inc(labels, n);
}

/**
 * The `seglift_*` series of `registry` in the Prometheus text format (no process metrics), for
 * the final report of a short-lived `--once` Job or a Pushgateway `PUT /metrics/job/<job>`.
 */
export async function reportToPushText(registry: Registry): Promise<string> {
  const parts: string[] = [];
  for (const metric of registry.getMetricsAsArray()) {
    const name = (metric as unknown as { name: string }).name;
    if (name.startsWith('seglift_')) parts.push(await registry.getSingleMetricAsString(name));
  }
  return parts.length === 0 ? '' : `${parts.join('\n')}\n`;
}

/**
 * The `seglift_*` series as `{ 'seglift_segments_total{result="converted"}': 3, ... }`, for JSON
 * reports. Histograms contribute `_sum` and `_count` only; zero series are kept.
 */
export async function metricsSnapshot(registry: Registry): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const metric of await registry.getMetricsAsJSON()) {
    if (!metric.name.startsWith('seglift_')) continue;
    for (const v of metric.values) {
      const name = (v as { metricName?: string }).metricName ?? metric.name;
      if (name.endsWith('_bucket')) continue;
      const labels = Object.entries(v.labels)
        .map(([k, l]) => `${k}=${JSON.stringify(String(l))}`)
        .join(',');
      out[labels ? `${name}{${labels}}` : name] = v.value;
    }
  }
  return out;
}
