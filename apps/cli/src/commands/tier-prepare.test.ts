import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, writeSegment } from '../test-support/segments.js';

const legacy = (o: bigint) => encodeLegacyEntry(o, { magic: 1, key: null, value: utf8('v') });

describe('seglift tier-prepare', () => {
  it('writes the snapshots; a partition with no leader epoch at all exits 1 and says what to do', async () => {
    const dir = tmpDir();
    const part = path.join(dir, 'old-0');
    for (const o of [0n, 1n, 2n]) writeSegment(part, o, [legacy(o)]);
    const r = await run(['tier-prepare', dir, '--json']);
    expect(r.code).toBe(1);
    const out = lines(r.stdout).map((l) => JSON.parse(l));
    expect(out).toEqual([
      {
        type: 'partition',
        partitionDir: part,
        closedSegments: 2,
        missingSnapshots: ['1', '2'],
        segmentsBeforeFirstEpoch: 2,
        written: ['1', '2'],
        epochsExtended: false,
        epochsMissing: true,
        verifiedAgainstKafka: 0,
      },
      { type: 'summary', written: 2, blocked: 1, mismatched: 0, dryRun: false },
    ]);
    // Legacy data has no producers: the snapshots are valid empty ones.
    expect(existsSync(path.join(part, '00000000000000000002.snapshot'))).toBe(true);
    const text = await run(['tier-prepare', dir]);
    expect(text.code).toBe(1);
    expect(lines(text.stdout)).toEqual([
      `${part}: 2 closed segments, 0 producer snapshots written, NO leader-epoch-checkpoint entry: start the broker once, stop it, run again`,
    ]);
    writeFileSync(path.join(part, 'leader-epoch-checkpoint'), '0\n1\n0 0\n');
    expect((await run(['tier-prepare', dir])).code).toBe(0);
  });

  it('is listed in the main help, with its own --help', async () => {
    expect((await run(['--help'])).stdout).toMatch(
      /^ {2}tier-prepare +write what tiered storage needs of old segments/m,
    );
    const h = await run(['tier-prepare', '--help']);
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/^Usage: seglift tier-prepare <log.dir>\.\.\. \[options\]/);
  });
});
