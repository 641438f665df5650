/**
 * A source that changes, in the conversion itself (docs/reliability.md §16.4): an archive copy may still
 * be writing a segment, or may resume after the plan judged it quiet. In place, the source's
 * identity (device, inode, size, mtime, ctime) is taken before the first read and compared under
 * the partition lock right before the swap: a source that changed is never swapped (its later
 * bytes would go to the replaced inode), it is reported skipped and left exactly as it is now.
 * And in an archive a segment must still be quiet when its conversion starts.
 */
import { appendFileSync, utimesSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate } from '../runs/migrate.js';
import { mixedSegment, tmpDir, writeSegment } from '../test-support/fixtures.js';
import { ls } from '../test-support/helpers.js';
import { convertSegment } from './convert.js';

const HOUR_AGO = () => new Date(Date.now() - 3_600_000);

describe('a source that changes while it is converted in place', () => {
  it('is not swapped: skipped (source-changed), every byte of it kept, no temp file left; the next run converts it', async () => {
    const dir = await tmpDir('seglift-source-changes-');
    const log = await writeSegment(dir, mixedSegment(0n, 7).bytes);
    const appended = mixedSegment(1000n, 8).bytes;
    const r = await convertSegment(
      log,
      { codec: 'zstd' },
      { kind: 'inPlace' },
      { beforeSwap: async () => appendFileSync(log, appended) },
    );
    expect(r.result).toBe('skipped');
    expect(r.reason).toBe('source-changed');
    expect(r.error).toBeUndefined();
    expect(Buffer.compare(await readFile(log), Buffer.concat([mixedSegment(0n, 7).bytes, appended]))).toBe(0);
    expect(await ls(path.dirname(log))).toEqual(['00000000000000000000.log']);
    const again = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace' });
    expect(again.result).toBe('converted');
  });

  it('with quietMs: one written less than quietMs ago is skipped (still-changing) untouched, an older one converted', async () => {
    const dir = await tmpDir('seglift-source-changes-');
    const log = await writeSegment(dir, mixedSegment(0n, 9).bytes);
    const before = await readFile(log);
    const fresh = await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', quietMs: 60_000 });
    expect([fresh.result, fresh.reason, fresh.bytesIn]).toEqual(['skipped', 'still-changing', before.length]);
    expect(Buffer.compare(await readFile(log), before)).toBe(0);
    expect(await ls(path.dirname(log))).toEqual(['00000000000000000000.log']);
    utimesSync(log, HOUR_AGO(), HOUR_AGO());
    expect((await convertSegment(log, { codec: 'zstd' }, { kind: 'inPlace', quietMs: 60_000 })).result).toBe(
      'converted',
    );
  });
});

describe('migrate of an archive', () => {
  it('re-judges each segment when its conversion starts: one written after the plan is skipped (still-changing), not converted', async () => {
    const dir = await tmpDir('seglift-source-changes-');
    const logs = [
      await writeSegment(dir, mixedSegment(0n, 3).bytes, 0n),
      await writeSegment(dir, mixedSegment(1000n, 4).bytes, 1000n),
    ];
    for (const l of logs) utimesSync(l, HOUR_AGO(), HOUR_AGO());
    const originals = await Promise.all(logs.map((l) => readFile(l)));
    let touched: string | undefined;
    const result = await migrate([dir], {
      codec: 'zstd',
      readiness: { requireRolled: false, quietMs: 60_000 },
      mode: 'inline',
      concurrency: 1,
      onSegment: (r) => {
        // The copy writes the other segment again after the plan judged both quiet.
        if (touched === undefined) {
          touched = logs.find((l) => l !== r.path)!;
          appendFileSync(touched, new Uint8Array(0));
          utimesSync(touched, new Date(), new Date());
        }
      },
    });
    const byPath = new Map(result.reports.map((r) => [r.path, r]));
    const first = logs.find((l) => l !== touched)!;
    expect(byPath.get(first)?.result).toBe('converted');
    expect([byPath.get(touched!)?.result, byPath.get(touched!)?.reason]).toEqual([
      'skipped',
      'still-changing',
    ]);
    expect(Buffer.compare(await readFile(touched!), originals[logs.indexOf(touched!)])).toBe(0);
  });
});
