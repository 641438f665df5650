import { chmod, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  ControlRecordType,
  encodeControlRecordKey,
  encodeEndTransactionMarker,
  encodeProducerSnapshot,
  encodeRecordBatch,
  type ProducerSnapshotEntry,
} from '@seglift/format';
import { encodeLegacyEntry } from '@seglift/legacy';
import { beforeEach, describe, expect, it } from 'vitest';
import { crashAfterOp } from '../test-support/crash.js';
import { tmpDir, v2Batch, writeSegment } from '../test-support/fixtures.js';
import { parseLeaderEpochCheckpoint, prepareTiering } from './tiering.js';

const TXN = 0x10;
const CONTROL = 0x20;
const idem = (baseOffset: bigint, n: number, producerId: bigint, baseSequence: number, attributes = 0) =>
  v2Batch(
    baseOffset,
    Array.from({ length: n }, () => Buffer.from('v')),
    0,
    { producerId, producerEpoch: 1, baseSequence, attributes },
  );
const commit = (baseOffset: bigint, producerId: bigint) =>
  encodeRecordBatch(
    {
      baseOffset,
      partitionLeaderEpoch: 3,
      attributes: TXN | CONTROL,
      lastOffsetDelta: 0,
      baseTimestamp: 1_700_000_000_000n,
      maxTimestamp: 1_700_000_000_000n,
      producerId,
      producerEpoch: 1,
      baseSequence: -1,
    },
    [
      {
        attributes: 0,
        timestampDelta: 0,
        offsetDelta: 0,
        key: encodeControlRecordKey(ControlRecordType.COMMIT),
        value: encodeEndTransactionMarker(5),
        headers: [],
      },
    ],
    0,
  );

const p7 = (lastOffset: bigint, lastSequence: number): ProducerSnapshotEntry => ({
  producerId: 7n,
  producerEpoch: 1,
  lastSequence,
  lastOffset,
  offsetDelta: 2,
  timestamp: 1_600_000_000_014n,
  coordinatorEpoch: -1,
  currentTxnFirstOffset: -1n,
});
/** What Kafka would have snapshotted at offsets 3, 6 and 8. */
const AT_3: ProducerSnapshotEntry[] = [];
const AT_6 = [p7(5n, 2)];
const AT_8 = [
  p7(5n, 2),
  {
    producerId: 9n,
    producerEpoch: 1,
    lastSequence: 1,
    lastOffset: 7n,
    offsetDelta: 1,
    timestamp: 1_600_000_000_007n,
    coordinatorEpoch: -1,
    currentTxnFirstOffset: 6n,
  },
];

let logDir = '';
let part = '';
const snap = (o: number) => path.join(part, `${String(o).padStart(20, '0')}.snapshot`);

/**
 * Segments 0 (legacy v0 messages 0-2), 3 (producer 7, idempotent, 3-5), 6 (producer 9's
 * transaction 6-7, open at the roll) and 8 (its COMMIT, then producer 7 again: the active one).
 * The leader epochs start at 8, as after an upgrade from a message format below 0.11.
 */
beforeEach(async () => {
  logDir = await tmpDir('seglift-tiering-');
  const legacy = Buffer.concat(
    [0n, 1n, 2n].map((o) => encodeLegacyEntry(o, { magic: 0, key: null, value: Buffer.from('old') })),
  );
  const first = await writeSegment(logDir, legacy, 0n);
  part = path.dirname(first);
  await writeSegment(logDir, idem(3n, 3, 7n, 0), 3n);
  await writeSegment(logDir, idem(6n, 2, 9n, 0, TXN), 6n);
  await writeSegment(logDir, Buffer.concat([commit(8n, 9n), idem(9n, 1, 7n, 3)]), 8n);
  for (const f of await readdir(part)) await chmod(path.join(part, f), 0o640);
  await writeFile(path.join(part, 'leader-epoch-checkpoint'), '0\n2\n3 8\n4 9\n', { mode: 0o600 });
});

async function files(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const f of (await readdir(part)).sort()) out[f] = (await readFile(path.join(part, f))).toString('hex');
  return out;
}

describe('prepareTiering (seglift tier-prepare)', () => {
  it("writes the producer snapshot Kafka would have written at each closed segment's end, and extends the first leader epoch down", async () => {
    const [r] = await prepareTiering(logDir);
    expect(r.written).toEqual([3n, 6n, 8n]);
    expect(r.epochsExtended).toBe(true);
    expect(await readFile(snap(3))).toEqual(Buffer.from(encodeProducerSnapshot(AT_3)));
    expect(await readFile(snap(6))).toEqual(Buffer.from(encodeProducerSnapshot(AT_6)));
    expect(await readFile(snap(8))).toEqual(Buffer.from(encodeProducerSnapshot(AT_8)));
    // The broker's mode (that of its segment files), and Kafka's checkpoint format.
    expect((await stat(snap(8))).mode & 0o777).toBe(0o640);
    expect(await readFile(path.join(part, 'leader-epoch-checkpoint'), 'utf8')).toBe('0\n2\n3 0\n4 9\n');
    expect((await stat(path.join(part, 'leader-epoch-checkpoint'))).mode & 0o777).toBe(0o600);
    expect((await readdir(part)).filter((f) => f.includes('seglift'))).toEqual([]);
    // A second run has nothing to do.
    const before = await files();
    const [again] = await prepareTiering(logDir);
    expect(again.written).toEqual([]);
    expect(again.epochsExtended).toBe(false);
    expect(await files()).toEqual(before);
  });

  it('never replaces a snapshot that exists, checks it against the replay; --dry-run writes nothing', async () => {
    // Kafka's may lack producers (expired ones, or the empty snapshots of a log loaded without any).
    const kafka = encodeProducerSnapshot([]);
    await writeFile(snap(6), kafka);
    const before = await files();
    const [dry] = await prepareTiering(logDir, { dryRun: true });
    expect(dry.missingSnapshots).toEqual([3n, 8n]);
    expect(dry.segmentsBeforeFirstEpoch).toBe(3);
    expect(await files()).toEqual(before);
    const [r] = await prepareTiering(logDir);
    expect(r.written).toEqual([3n, 8n]);
    expect(r.verifiedAgainstKafka).toBe(1);
    expect(r.mismatch).toBeUndefined();
    expect(await readFile(snap(6))).toEqual(Buffer.from(kafka));
  });

  it('a snapshot Kafka wrote that contradicts the replay stops the partition: nothing after it is written', async () => {
    await writeFile(snap(6), encodeProducerSnapshot([{ ...AT_6[0], lastSequence: 99 }]));
    const [r] = await prepareTiering(logDir);
    expect(r.written).toEqual([3n]);
    expect(r.mismatch).toBe(
      `${snap(6)}: producer 7: Kafka's snapshot has {"producerId":"7","producerEpoch":1,"lastSequence":99,"lastOffset":"5","offsetDelta":2,"timestamp":"1600000000014","coordinatorEpoch":-1,"currentTxnFirstOffset":"-1"}, the replay {"producerId":"7","producerEpoch":1,"lastSequence":2,"lastOffset":"5","offsetDelta":2,"timestamp":"1600000000014","coordinatorEpoch":-1,"currentTxnFirstOffset":"-1"}`,
    );
    expect(r.epochsExtended).toBe(false);
    expect(await readFile(path.join(part, 'leader-epoch-checkpoint'), 'utf8')).toBe('0\n2\n3 8\n4 9\n');
    await writeFile(snap(6), 'not a snapshot');
    const [bad] = await prepareTiering(logDir);
    expect(bad.mismatch).toMatch(
      /^.*00000000000000000006\.snapshot: producer snapshot version 28271 \(Kafka knows only 1\) \(position 0\)$/,
    );
  });

  it('a crash at any filesystem change leaves no partial snapshot under its name, and a rerun ends where a clean run does', async () => {
    await prepareTiering(logDir);
    const clean = await files();
    for (let n = 1; ; n++) {
      for (const f of await readdir(part))
        if (f.endsWith('.snapshot') || f.includes('seglift')) await rm(path.join(part, f));
      await writeFile(path.join(part, 'leader-epoch-checkpoint'), '0\n2\n3 8\n4 9\n', { mode: 0o600 });
      const run = await crashAfterOp(n, () => [prepareTiering(logDir)]);
      // Whatever is under a snapshot name is whole: the file Kafka would read is never half written.
      for (const f of await readdir(part))
        if (f.endsWith('.snapshot'))
          expect(clean[f], `${f} after a crash at op ${n}`).toBe(
            (await readFile(path.join(part, f))).toString('hex'),
          );
      await prepareTiering(logDir);
      expect(await files(), `rerun after a crash at op ${n}`).toEqual(clean);
      if (!run.crashed) {
        // 3 snapshots (create, write, fsync, chmod, link, unlink), fsync-dir, the checkpoint's 6.
        expect(n - 1, 'crash points').toBeGreaterThan(20);
        break;
      }
    }
  });
});

describe('leader-epoch-checkpoint as Kafka reads it (CheckpointFile)', () => {
  it('an empty file has no entries (Kafka 3.9 leaves one beside magic 0/1 data); a wrong version is refused', () => {
    expect(parseLeaderEpochCheckpoint('')).toEqual([]);
    expect(parseLeaderEpochCheckpoint('0\n2\n0 0\n5 1482\n')).toEqual([
      { epoch: 0, startOffset: 0n },
      { epoch: 5, startOffset: 1482n },
    ]);
    expect(() => parseLeaderEpochCheckpoint('1\n0\n', 'f')).toThrow(/version "1", expected 0/);
    expect(() => parseLeaderEpochCheckpoint('0\n2\n0 0\n', 'f')).toThrow(/says 2 entries, holds 1/);
  });
});
