import { emptyReport, type SegmentReport } from '@seglift/segment';
import { describe, expect, it } from 'vitest';
import {
  createMetrics,
  metricsSnapshot,
  Registry,
  recordSegmentReport,
  reportToPushText,
  sampleQueueOnScrape,
  setQueueCounts,
} from './metrics.js';

const report: SegmentReport = {
  ...emptyReport('/logs/t-0/00000000000000000000.log'),
  result: 'converted',
  bytesIn: 10_000,
  bytesOut: 4_000,
  batchesIn: 20,
  batchesOut: 5,
  recordsIn: 1000,
  recordsOut: 1000,
  codecMixIn: { 'v1/gzip': 15, 'v2/gzip': 5 },
  durationMs: 1500,
};

describe('createMetrics', () => {
  it('registers the seglift series and the default process metrics on a fresh registry', async () => {
    const m = createMetrics();
    const text = await m.registry.metrics();
    for (const name of [
      'seglift_segments_total',
      'seglift_batches_total',
      'seglift_records_total',
      'seglift_bytes_total',
      'seglift_conversion_duration_seconds',
      'seglift_errors_total',
      'seglift_queue_jobs',
      'process_cpu_user_seconds_total',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
  });

  it('returns the same metric objects when called twice on one registry', () => {
    const registry = new Registry();
    const a = createMetrics(registry);
    const b = createMetrics(registry);
    expect(b.segments).toBe(a.segments);
    expect(b.conversionDuration).toBe(a.conversionDuration);
    expect(b.queueJobs).toBe(a.queueJobs);
  });
});

describe('recordSegmentReport', () => {
  it('adds a report to every series with exact values', async () => {
    const m = createMetrics();
    recordSegmentReport(m, report, 'zstd');
    recordSegmentReport(
      m,
      {
        ...report,
        codecMixIn: { 'v2/gzip': 1 },
        bytesIn: 500,
        bytesOut: 500,
        batchesIn: 1,
        batchesOut: 1,
        recordsIn: 3,
        recordsOut: 3,
        durationMs: 20,
      },
      'zstd',
    );
    recordSegmentReport(
      m,
      {
        ...report,
        result: 'failed',
        codecMixIn: { 'v0/none': 3, 'v1/snappy': 1 },
        bytesOut: 0,
        batchesOut: 0,
        recordsOut: 0,
        recordsIn: -1,
        durationMs: 7,
        error: { code: 'CRC_MISMATCH' },
      },
      'zstd',
    );
    // Skipped (read to its end, nothing written): counted as a segment, not in the volumes.
    recordSegmentReport(
      m,
      { ...report, result: 'skipped', reason: 'already-target-codec', bytesOut: 0, durationMs: 3 },
      'zstd',
    );
    // A segment of v0 messages and a snappy wrapper: each batch under its own codec.
    recordSegmentReport(
      m,
      {
        ...report,
        codecMixIn: { 'v0/none': 3, 'v1/snappy': 1 },
        bytesIn: 300,
        bytesOut: 100,
        batchesIn: 4,
        batchesOut: 1,
        recordsIn: 5,
        recordsOut: 5,
        durationMs: 10,
      },
      'zstd',
    );
    const text = await m.registry.metrics();
    expect(text).toContain('seglift_segments_total{result="converted"} 3\n');
    expect(text).toContain('seglift_segments_total{result="failed"} 1\n');
    expect(text).toContain('seglift_segments_total{result="skipped"} 1\n');
    expect(text).toContain('seglift_batches_total{direction="in",codec="gzip"} 21\n');
    expect(text).toContain('seglift_batches_total{direction="in",codec="none"} 3\n');
    expect(text).toContain('seglift_batches_total{direction="in",codec="snappy"} 1\n');
    expect(text).not.toContain('codec="mixed"} 4');
    expect(text).toContain('seglift_batches_total{direction="out",codec="zstd"} 7\n');
    expect(text).toContain('seglift_records_total{direction="in"} 1008\n');
    expect(text).toContain('seglift_records_total{direction="out"} 1008\n');
    expect(text).toContain('seglift_bytes_total{direction="in",codec="gzip"} 10500\n');
    // Bytes per batch are not reported: a segment of several codecs is `mixed` here.
    expect(text).toContain('seglift_bytes_total{direction="in",codec="mixed"} 300\n');
    expect(text).toContain('seglift_bytes_total{direction="out",codec="zstd"} 4600\n');
    expect(text).toContain('seglift_errors_total{code="CRC_MISMATCH"} 1\n');
    expect(text).toContain('seglift_conversion_duration_seconds_count 5\n');
    // 1.5 + 0.02 + 0.007 + 0.003 + 0.01 in doubles.
    expect(text).toContain('seglift_conversion_duration_seconds_sum 1.5399999999999998\n');
    expect(text).toContain('seglift_conversion_duration_seconds_bucket{le="0.01"} 3\n');
    expect(text).toContain('seglift_conversion_duration_seconds_bucket{le="0.05"} 4\n');
    expect(text).toContain('seglift_conversion_duration_seconds_bucket{le="2.5"} 5\n');
  });

  it('sets queue gauges for the four states, zero for the missing ones', async () => {
    const m = createMetrics();
    setQueueCounts(m, { waiting: 12, active: 2, failed: 1, delayed: 9 });
    const text = await m.registry.metrics();
    expect(text).toContain('seglift_queue_jobs{state="waiting"} 12\n');
    expect(text).toContain('seglift_queue_jobs{state="active"} 2\n');
    expect(text).toContain('seglift_queue_jobs{state="failed"} 1\n');
    expect(text).toContain('seglift_queue_jobs{state="completed"} 0\n');
    expect(text).not.toContain('delayed');
  });

  it('samples the queue at every scrape; a failing or slow count keeps the last values', async () => {
    const m = createMetrics();
    let counts: () => Promise<Partial<Record<string, number>>> = async () => ({ waiting: 0, completed: 7 });
    const stop = sampleQueueOnScrape(m, () => counts(), 50);
    expect(await m.registry.metrics()).toContain('seglift_queue_jobs{state="completed"} 7\n');
    // Right after "queued 10": the next scrape says so, not a sample from before.
    counts = async () => ({ waiting: 10, completed: 7 });
    expect(await m.registry.metrics()).toContain('seglift_queue_jobs{state="waiting"} 10\n');
    counts = async () => {
      throw new Error('Connection is closed.');
    };
    expect(await m.registry.metrics()).toContain('seglift_queue_jobs{state="waiting"} 10\n');
    counts = () => new Promise(() => {});
    const started = Date.now();
    expect(await m.registry.metrics()).toContain('seglift_queue_jobs{state="waiting"} 10\n');
    expect(Date.now() - started).toBeLessThan(1000);
    stop();
    counts = async () => ({ waiting: 3 });
    expect(await m.registry.metrics()).toContain('seglift_queue_jobs{state="waiting"} 10\n');
  });
});

describe('reportToPushText / metricsSnapshot', () => {
  it('gives only the seglift series, as text and as a flat object', async () => {
    const m = createMetrics();
    recordSegmentReport(m, report, 'zstd');
    const text = await reportToPushText(m.registry);
    expect(text).toContain(
      '# TYPE seglift_segments_total counter\nseglift_segments_total{result="converted"} 1\n',
    );
    expect(text).not.toContain('process_');
    expect(text).not.toContain('nodejs_');
    expect(text.endsWith('\n')).toBe(true);
    const snap = await metricsSnapshot(m.registry);
    expect(snap['seglift_segments_total{result="converted"}']).toBe(1);
    expect(snap['seglift_bytes_total{direction="out",codec="zstd"}']).toBe(4000);
    expect(snap.seglift_conversion_duration_seconds_count).toBe(1);
    expect(snap.seglift_conversion_duration_seconds_sum).toBe(1.5);
    expect(Object.keys(snap).some((k) => k.includes('_bucket') || !k.startsWith('seglift_'))).toBe(false);
  });

  it('is empty for a registry without seglift series', async () => {
    expect(await reportToPushText(new Registry())).toBe('');
  });
});
