import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { needs, realFixtures, realSegmentLogs } from '@seglift/testkit';
import { expect, it } from 'vitest';
import { convertSegment } from '../placements/convert.js';
import { tmpDir } from '../test-support/fixtures.js';
import { independentRecords, recoveryIndexes } from '../test-support/independent.js';
import { verifySegment } from './verify.js';

needs(realFixtures).describe('real broker segments (../shared/fixtures/real)', () => {
  it('convert each to zstd into a tmp outDir: verify clean, records equal, indexes by the recovery rule; the KRaft metadata log refused', async () => {
    const files = realSegmentLogs().filter((f) => /^\d{20}\.log$/.test(path.basename(f)));
    expect(files.length).toBeGreaterThan(10);
    const metadata = files.filter((f) => f.includes('/__cluster_metadata-'));
    expect(metadata.length).toBeGreaterThan(0);
    for (const file of files) {
      const out = await tmpDir();
      const r = await convertSegment(file, { codec: 'zstd' }, { kind: 'outDir', dir: out });
      if (metadata.includes(file)) {
        // Never rewritten: Kafka reads it through the raft layer, not as a partition log.
        expect(r.result).toBe('failed');
        expect(r.error).toMatchObject({ code: 'NOT_A_SEGMENT' });
        expect(await readdir(out)).toEqual([]);
        continue;
      }
      expect(r.error, file).toBeUndefined();
      expect(r.result).toBe('converted');
      const outLog = path.join(out, path.basename(file));
      const v = await verifySegment(outLog);
      expect(v.problems, file).toEqual([]);
      const src = await readFile(file);
      const dst = await readFile(outLog);
      expect(await independentRecords(dst)).toEqual(await independentRecords(src));
      const base = BigInt(path.basename(file).slice(0, 20));
      expect(await readFile(outLog.replace(/\.log$/, '.index'))).toEqual(recoveryIndexes(dst, base).index);
      expect(await readFile(outLog.replace(/\.log$/, '.timeindex'))).toEqual(
        recoveryIndexes(dst, base).timeindex,
      );
    }
  });
});
