import { describe, expect, it } from 'vitest';
import { emptyReport, formatReportTable, type SegmentReport, summarize } from './report.js';

function report(path: string, over: Partial<SegmentReport>): SegmentReport {
  return { ...emptyReport(path), codecMixIn: { 'v1/gzip': 1 }, ...over };
}

// An interrupted migrate: two segments converted, one stopped mid-conversion (its partial output
// removed), one never reached, one skipped as active.
const reports = [
  report('a.log', { result: 'converted', bytesIn: 10_240, bytesOut: 2_048, recordsIn: 10 }),
  report('b.log', { result: 'converted', bytesIn: 20_480, bytesOut: 4_096, recordsIn: 20 }),
  report('c.log', {
    result: 'rolled-back',
    reason: 'interrupted mid-conversion: its output removed, the original left as it was',
    bytesIn: 307_200,
    recordsIn: 300,
  }),
  report('d.log', { result: 'not-started', reason: 'interrupted before it started', bytesIn: 51_200 }),
  report('e.log', { result: 'skipped', reason: 'active-segment', bytesIn: 1_024 }),
];

describe('the report table and the summary say the same thing', () => {
  it('one word per state, and the total row adds up the segments written, as the summary does', () => {
    const s = summarize(reports, 1000);
    expect(s).toMatchObject({
      segments: 5,
      converted: 2,
      skipped: 1,
      failed: 0,
      rolledBack: 1,
      notStarted: 1,
      writtenBytesIn: 30_720,
      writtenBytesOut: 6_144,
      ratio: 0.2,
    });
    const rows = formatReportTable(reports, s)
      .split('\n')
      .map((l) => l.split(/ {2,}/));
    expect(rows.slice(2).map((r) => r.slice(0, 6))).toEqual([
      ['a.log', 'converted', '10.0 KiB', '2.0 KiB', '0.200', '10'],
      ['b.log', 'converted', '20.0 KiB', '4.0 KiB', '0.200', '20'],
      ['c.log', 'rolled-back', '-', '-', '-', '-'],
      ['d.log', 'not-started', '-', '-', '-', '-'],
      ['e.log', 'skipped', '-', '-', '-', '-'],
      ['total (5)', '2 conv/1 skip/0 fail/1 rolled back/1 not started', '30.0 KiB', '6.0 KiB', '0.200', '30'],
    ]);
    expect(rows[4].at(-1)).toBe(
      'interrupted mid-conversion: its output removed, the original left as it was',
    );
  });
});
