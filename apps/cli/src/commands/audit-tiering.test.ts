import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, v2Batch, writeSegment } from '../test-support/segments.js';

/** old-0: three legacy segments, no snapshots, leader epochs from offset 2; new-0: as Kafka 4 leaves it. */
function logDir(): string {
  const dir = tmpDir();
  const old = path.join(dir, 'old-0');
  for (const o of [0n, 1n, 2n])
    writeSegment(old, o, [encodeLegacyEntry(o, { magic: 1, key: null, value: utf8('v') })]);
  writeFileSync(path.join(old, 'leader-epoch-checkpoint'), '0\n1\n5 2\n');
  const fresh = path.join(dir, 'new-0');
  writeSegment(fresh, 0n, [v2Batch(0n, 1)]);
  writeSegment(fresh, 1n, [v2Batch(1n, 1)]);
  writeFileSync(path.join(fresh, '00000000000000000001.snapshot'), '');
  writeFileSync(path.join(fresh, 'leader-epoch-checkpoint'), '0\n1\n0 0\n');
  return dir;
}

describe('seglift audit: tiered storage', () => {
  it('says per topic whether its closed segments can be tiered, and that tier-prepare makes them so', async () => {
    const dir = logDir();
    const json = await run(['audit', dir, '--json']);
    expect(json.code).toBe(0);
    const parts = lines(json.stdout)
      .map((l) => JSON.parse(l))
      .filter((o) => o.type === 'partition');
    expect(Object.fromEntries(parts.map((p) => [p.topic, p.tiering]))).toEqual({
      new: {
        closedSegments: 1,
        missingSnapshots: 0,
        segmentsWithoutEpoch: 0,
        epochsMissing: false,
        tierable: true,
      },
      old: {
        closedSegments: 2,
        missingSnapshots: 2,
        segmentsWithoutEpoch: 2,
        epochsMissing: false,
        tierable: false,
      },
    });
    const text = await run(['audit', dir]);
    const shown = lines(text.stdout);
    const at = shown.findIndex((l) => l.startsWith('tiered storage:'));
    expect(shown.slice(at, at + 2)).toEqual([
      "tiered storage: 1 of 2 topics cannot be tiered as they are (remote.storage.enable=true would copy none of their old segments): with the broker stopped, run 'seglift tier-prepare <log.dir>' first.",
      '  old: of 2 closed segments, 2 lack their producer snapshot, 2 have no leader epoch',
    ]);
    const prepared = await run(['tier-prepare', dir]);
    expect(prepared.code).toBe(0);
    expect(lines(prepared.stdout)).toEqual([
      `${path.join(dir, 'new-0')}: 1 closed segment, 0 producer snapshots written`,
      `${path.join(dir, 'old-0')}: 2 closed segments, 2 producer snapshots written, leader epoch 5 extended down to the first segment`,
    ]);
    const after = await run(['audit', dir]);
    expect(lines(after.stdout).filter((l) => l.startsWith('tiered storage:'))).toEqual([
      'tiered storage: the closed segments of every topic (2) can be tiered as they are.',
    ]);
  });

  it('only active segments: nothing to tier (not "every topic can be tiered")', async () => {
    const dir = tmpDir();
    for (const t of ['a-0', 'b-0']) writeSegment(path.join(dir, t), 0n, [v2Batch(0n, 1)]);
    const r = await run(['audit', dir]);
    expect(lines(r.stdout).filter((l) => l.startsWith('tiered storage:'))).toEqual([
      'tiered storage: no closed segments yet (only active ones): nothing to tier.',
    ]);
  });

  it('no leader-epoch-checkpoint entry: the advice tier-prepare will accept (start the broker once first)', async () => {
    const dir = tmpDir();
    const p = path.join(dir, 'legacy-0');
    for (const o of [0n, 1n])
      writeSegment(p, o, [encodeLegacyEntry(o, { magic: 1, key: null, value: utf8('v') })]);
    const r = await run(['audit', dir]);
    const shown = lines(r.stdout);
    const at = shown.findIndex((l) => l.startsWith('tiered storage:'));
    expect(shown.slice(at, at + 2)).toEqual([
      "tiered storage: 1 of 1 topic cannot be tiered as they are (remote.storage.enable=true would copy none of their old segments): 1 partition has no leader-epoch-checkpoint entry, which 'seglift tier-prepare' needs: start the broker once (it writes one), stop it, then run 'seglift tier-prepare <log.dir>'.",
      '  legacy: of 1 closed segment, 1 lacks its producer snapshot, 1 has no leader epoch, 1 partition without a leader-epoch-checkpoint entry',
    ]);
    // What tier-prepare says of the same partition: it refuses (exit 1), as audit said it would.
    const t = await run(['tier-prepare', dir, '--dry-run']);
    expect([t.code, lines(t.stdout)]).toEqual([
      1,
      [
        `${p}: 1 closed segment, 1 producer snapshot missing, NO leader-epoch-checkpoint entry: start the broker once, stop it, run again`,
      ],
    ]);
  });
});
