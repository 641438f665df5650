import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
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
        epochsFromBatches: [],
        epochsMissing: true,
        verifiedAgainstKafka: 0,
      },
      { type: 'summary', written: 2, blocked: 1, mismatched: 0, failed: 0, dryRun: false },
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

  it('SEGLIFT_ROOTS confines it as migrate (exit 2, nothing written); a checkpoint Kafka refuses, or Kafka leftovers, exit 1 naming the partition', async () => {
    const dir = tmpDir();
    const part = path.join(dir, 'old-0');
    for (const o of [0n, 1n, 2n]) writeSegment(part, o, [legacy(o)]);
    writeFileSync(path.join(part, 'leader-epoch-checkpoint'), '0\n1\n2147483648 0\n');
    const outside = await run(['tier-prepare', dir], { SEGLIFT_ROOTS: tmpDir() });
    expect(outside.code).toBe(2);
    expect(outside.stderr).toMatch(/^error\[PATH_OUTSIDE_ROOTS\]: path is outside the allowed roots/m);
    expect(existsSync(path.join(part, '00000000000000000001.snapshot'))).toBe(false);
    // A log dir inside the roots whose partition is a link out of them.
    const roots = tmpDir();
    mkdirSync(path.join(roots, 'logs'));
    symlinkSync(part, path.join(roots, 'logs', 'old-0'));
    const linked = await run(['tier-prepare', path.join(roots, 'logs')], { SEGLIFT_ROOTS: roots });
    expect(linked.code).toBe(2);
    expect(linked.stderr).toMatch(
      /^error\[PATH_OUTSIDE_ROOTS\]: partition dir .*old-0, found under .*logs through a symlink, is outside the allowed roots/m,
    );
    expect(existsSync(path.join(part, '00000000000000000001.snapshot'))).toBe(false);
    const bad = await run(['tier-prepare', dir], { SEGLIFT_ROOTS: dir });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain(
      `error[CORRUPT_RECORD]: leader-epoch-checkpoint line 3: malformed entry "2147483648 0" (an int32 epoch and an int64 start offset) (Kafka refuses this file) (file ${path.join(part, 'leader-epoch-checkpoint')}): nothing written to this partition`,
    );
    expect(existsSync(path.join(part, '00000000000000000001.snapshot'))).toBe(false);
    writeFileSync(path.join(part, 'leader-epoch-checkpoint'), '0\n1\n0 0\n');
    writeFileSync(path.join(part, '00000000000000000001.log.cleaned'), '');
    const leftovers = await run(['tier-prepare', dir]);
    expect(leftovers.code).toBe(1);
    expect(leftovers.stderr).toMatch(
      /^error\[KAFKA_LEFTOVERS\]: partition holds files of an interrupted Kafka operation \(00000000000000000001\.log\.cleaned\)/m,
    );
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
