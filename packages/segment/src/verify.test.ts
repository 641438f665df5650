import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from './convert.js';
import { describeSegment } from './describe.js';
import { formatReportTable, reportsToJSON, summarize } from './report.js';
import { mixedSegment, tmpDir, writeSegment } from './test-support/fixtures.js';
import { shallowEntries } from './test-support/independent.js';
import { verifySegment } from './verify.js';

describe('verifySegment', () => {
  it('accepts a legacy segment with recovery-rule indexes and reports index problems', async () => {
    const seg = mixedSegment();
    const dir = await tmpDir();
    const log = await writeSegment(dir, seg.bytes);
    const ok = await verifySegment(log);
    expect(ok).toMatchObject({
      ok: true,
      entries: 67,
      records: 274,
      hasIndex: false,
      hasTimeIndex: false,
      problems: [],
    });
    const out = path.join(dir, 'o');
    await convertSegment(log, { codec: 'lz4', grouping: 'kafka', outDir: out });
    const outLog = path.join(out, path.basename(log));
    expect((await verifySegment(outLog)).ok).toBe(true);
    const entries = shallowEntries(await readFile(outLog));
    // An index entry that names the wrong batch, a time index entry with a wrong timestamp.
    const idx = Buffer.alloc(16);
    idx.writeInt32BE(Number(entries[5].lastOffset), 0);
    idx.writeInt32BE(entries[5].position, 4);
    idx.writeInt32BE(Number(entries[9].lastOffset) + 1, 8);
    idx.writeInt32BE(entries[9].position, 12);
    await writeFile(outLog.replace(/\.log$/, '.index'), idx);
    const tix = Buffer.alloc(12);
    tix.writeBigInt64BE(123n, 0);
    tix.writeInt32BE(Number(entries[40].lastOffset), 8);
    await writeFile(outLog.replace(/\.log$/, '.timeindex'), tix);
    const bad = await verifySegment(outLog);
    expect(bad.ok).toBe(false);
    expect(bad.problems.map((p) => [p.kind, p.message])).toEqual([
      ['index', `entry 1: index offset ${entries[9].lastOffset + 1n}, log offset ${entries[9].lastOffset}`],
      ['timeindex', `entry 0: index timestamp 123, log timestamp ${entries[40].maxTimestamp}`],
    ]);
  });

  it('reports a CRC error as a structure problem with position and offset', async () => {
    const seg = Buffer.from(mixedSegment().bytes);
    const e = shallowEntries(seg).find((x) => x.magic === 2)!;
    seg[e.position + 80] ^= 1;
    const dir = await tmpDir();
    const r = await verifySegment(await writeSegment(dir, seg));
    expect(r.ok).toBe(false);
    expect(r.error).toMatchObject({
      code: 'CRC_MISMATCH',
      position: e.position + 17,
      offset: e.bytes.readBigInt64BE(0).toString(),
    });
  });
});

describe('describeSegment and reports', () => {
  it('summarizes every batch with header fields and codec', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, mixedSegment().bytes);
    const all = [];
    for await (const b of describeSegment(log)) all.push(b);
    expect(all.length).toBe(67);
    expect(all[0]).toMatchObject({
      position: 0,
      magic: 0,
      codec: 'none',
      baseOffset: '0',
      timestampType: 'NoTimestampType',
      isValid: true,
    });
    const control = all.find((b) => b.isControl)!;
    expect(control).toMatchObject({
      magic: 2,
      codec: 'none',
      count: 1,
      isTransactional: true,
      producerId: '78',
    });
    const idem = all.find((b) => b.producerId === '77')!;
    expect(idem).toMatchObject({
      codec: 'gzip',
      baseSequence: 30,
      lastSequence: 44,
      partitionLeaderEpoch: 3,
    });
  });

  it('formats a table and JSON', async () => {
    const dir = await tmpDir();
    const log = await writeSegment(dir, mixedSegment().bytes);
    const r = await convertSegment(log, { codec: 'zstd', grouping: 'kafka', outDir: path.join(dir, 'o') });
    const skipped = { ...r, path: 'b.log', result: 'skipped' as const, reason: 'active-segment' };
    const s = summarize([r, skipped]);
    expect(s).toMatchObject({ segments: 2, converted: 1, skipped: 1, failed: 0, recordsIn: 548 });
    const table = formatReportTable([r, skipped], s);
    const lines = table.split('\n');
    expect(lines.length).toBe(5);
    expect(lines[0]).toMatch(/^segment\s+result\s+in\s+out\s+ratio\s+records\s+codecs in\s+MB\/s\s+note$/);
    expect(lines[3]).toContain('active-segment');
    expect(lines[4]).toContain('1 conv/1 skip/0 fail');
    const json = JSON.parse(reportsToJSON([r], summarize([r])));
    expect(json.segments[0].codecOut).toEqual({ 'v2/none': 2, 'v2/zstd': 65 });
  });
});
