import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { convertSegment } from './convert.js';
import { tmpDir } from './test-support/fixtures.js';
import { independentRecords, recoveryIndexes, repoRoot } from './test-support/independent.js';
import { verifySegment } from './verify.js';

const realRoot = path.resolve(repoRoot, '..', 'shared', 'fixtures', 'real');
const present = existsSync(realRoot);

async function logs(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...(await logs(p)));
    else if (/^\d{20}\.log$/.test(e.name)) out.push(p);
  }
  return out.sort();
}

describe('real broker segments (../shared/fixtures/real)', () => {
  it.skipIf(!present)(
    'convert each to zstd into a tmp outDir: verify clean, records equal, indexes by the recovery rule',
    async () => {
      const files = await logs(realRoot);
      expect(files.length).toBeGreaterThan(10);
      const metadata = files.filter((f) => f.includes('/__cluster_metadata-'));
      expect(metadata.length).toBeGreaterThan(0);
      for (const file of files) {
        const out = await tmpDir();
        if (metadata.includes(file)) {
          // The KRaft metadata log is never rewritten (Kafka reads it through the raft layer).
          const r = await convertSegment(file, { codec: 'zstd', outDir: out });
          expect(r.result).toBe('failed');
          expect(r.error).toMatchObject({ code: 'NOT_A_SEGMENT' });
          expect(await readdir(out)).toEqual([]);
          continue;
        }
        const r = await convertSegment(file, { codec: 'zstd', outDir: out });
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
    },
  );
  it.skipIf(present)('skipped: ../shared/fixtures/real is absent', () => {});
});
