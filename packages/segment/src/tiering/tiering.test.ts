import { execFileSync } from 'node:child_process';
import {
  chmod,
  mkdir,
  open,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  truncate,
  writeFile,
} from 'node:fs/promises';
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
import { parseLeaderEpochCheckpoint, prepareTiering, tieringState } from './tiering.js';

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
    expect(() => parseLeaderEpochCheckpoint('1\n0\n', 'f')).toThrow(/line 1: version 1, expected 0/);
    expect(() => parseLeaderEpochCheckpoint('0\n2\n0 0\n', 'f')).toThrow(/says 2 entries, holds 1/);
  });
});

describe('tier-prepare trusts nothing it reads (issue 32)', () => {
  const checkpoint = () => readFile(path.join(part, 'leader-epoch-checkpoint'), 'utf8');

  it('every batch replayed is CRC-checked: one flipped producerId byte stops the partition with the file, position and offset', async () => {
    const seg3 = path.join(part, '00000000000000000003.log');
    const bytes = await readFile(seg3);
    bytes[43] ^= 0x01; // producerId's last byte (RecordBatch header: producerId at 43..50)
    await writeFile(seg3, bytes);
    const [r] = await prepareTiering(logDir);
    expect(r.error?.code).toBe('CRC_MISMATCH');
    // The position of the batch's stored CRC (the batch starts at 0), as verify reports it.
    expect([r.error?.file, r.error?.position, r.error?.offset]).toEqual([seg3, 17, 3n]);
    // The snapshot at 3 comes from segment 0 alone (checked); nothing from or after the bad batch.
    expect(r.written).toEqual([3n]);
    expect((await readdir(part)).filter((f) => f.endsWith('.snapshot'))).toEqual([
      '00000000000000000003.snapshot',
    ]);
    expect(await checkpoint()).toBe('0\n2\n3 8\n4 9\n');
  });

  it('honours the roots as migrate does: a log dir outside them, or a partition linked out of them, is refused before any write', async () => {
    const before = await files();
    const elsewhere = await tmpDir('seglift-tiering-roots-');
    await expect(prepareTiering(logDir, { roots: [elsewhere] })).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_ROOTS',
    });
    // A log dir inside the roots holding a link to the partition outside them.
    const inside = path.join(elsewhere, 'logs');
    await mkdir(inside);
    await symlink(part, path.join(inside, 'topic-0'));
    await expect(prepareTiering(inside, { roots: [elsewhere] })).rejects.toThrow(
      /partition dir .*topic-0, found under .*logs through a symlink, is outside the allowed roots/,
    );
    expect(await files()).toEqual(before);
    expect((await prepareTiering(logDir, { roots: [logDir] }))[0].written).toEqual([3n, 6n, 8n]);
  });

  it("refuses a partition holding Kafka's unfinished operations (KAFKA_LEFTOVERS), as migrate does", async () => {
    for (const leftover of ['00000000000000000003.log.swap', '00000000000000000006.log.cleaned']) {
      await writeFile(path.join(part, leftover), '');
      const before = await files();
      const [r] = await prepareTiering(logDir);
      expect(r.error?.code).toBe('KAFKA_LEFTOVERS');
      expect(r.error?.message).toContain(leftover);
      expect(await files()).toEqual(before);
      await rm(path.join(part, leftover));
    }
  });

  it('a checkpoint Kafka refuses is refused, never rewritten; audit counts it as no epochs', async () => {
    for (const bad of [
      '0\n1\n99999999999999999999 200\n',
      '0\n1\n2147483648 200\n',
      '0\n2\n\n3 8\n4 9\n',
      '0\n2\n4 8\n3 9\n',
      '0\n2\n3 8\n4 8\n',
      '0\n1\n-1 8\n',
      '0\n1\n 3 8\n',
      '0\n1\n3 8 9\n',
      '0\n3\n3 8\n4 9\n',
      '0\n-1\n',
      'x\n',
    ]) {
      await writeFile(path.join(part, 'leader-epoch-checkpoint'), bad);
      const before = await files();
      const [r] = await prepareTiering(logDir);
      expect(r.error?.code, JSON.stringify(bad)).toBe('CORRUPT_RECORD');
      expect(r.written).toEqual([]);
      expect(await files(), JSON.stringify(bad)).toEqual(before);
      const state = await tieringState({
        partitionDir: part,
        segments: r.closedSegments ? await segs() : [],
      });
      expect(state.checkpointError).toMatch(
        /^leader-epoch-checkpoint line \d+: .*\(Kafka refuses this file\)/,
      );
      expect([state.firstEpoch, state.segmentsBeforeFirstEpoch, state.epochsMissing]).toEqual([
        undefined,
        3,
        false,
      ]);
    }
  });

  it('FIFOs, devices and oversized files never hang or exhaust it: typed errors, nothing read whole', async () => {
    const lec = path.join(part, 'leader-epoch-checkpoint');
    await rm(lec);
    execFileSync('mkfifo', [lec]);
    const [fifo] = await prepareTiering(logDir);
    expect(fifo.error?.message).toMatch(/leader-epoch-checkpoint is not a regular file \(a FIFO\)/);
    await rm(lec);
    await symlink('/dev/zero', lec);
    expect((await prepareTiering(logDir))[0].error?.message).toMatch(
      /not a regular file \(a character device\)/,
    );
    await rm(lec);
    await writeFile(lec, '0\n2\n3 8\n4 9\n');
    await truncate(lec, 600 * 1024 * 1024);
    expect((await prepareTiering(logDir))[0].error?.message).toMatch(
      /leader-epoch-checkpoint is 629145600 bytes, more than such a file can be \(16777216\): not read/,
    );
    await writeFile(lec, '0\n2\n3 8\n4 9\n');
    // Kafka's snapshot at 6 as a FIFO, then as a sparse 1.5 GB file: a mismatch, read no further.
    execFileSync('mkfifo', [snap(6)]);
    const [f] = await prepareTiering(logDir);
    expect(f.mismatch).toBe(`${snap(6)}: a snapshot of at most 1 producers is not a regular file (a FIFO)`);
    await rm(snap(6));
    const h = await open(snap(6), 'w');
    await h.truncate(1536 * 1024 * 1024);
    await h.close();
    const [big] = await prepareTiering(logDir);
    expect(big.mismatch).toBe(
      `${snap(6)}: a snapshot of at most 1 producers is 1610612736 bytes, more than such a file can be (56): not read`,
    );
  }, 30_000);
});

async function segs() {
  return (await readdir(part))
    .filter((f) => f.endsWith('.log'))
    .sort()
    .map((f) => ({ path: path.join(part, f), baseOffset: BigInt(f.slice(0, 20)), size: 0, mtimeMs: 0 }));
}

describe('leader epochs below the first checkpoint entry, as Kafka recovery assigns them (issue 32)', () => {
  const epochBatch = (baseOffset: bigint, n: number, partitionLeaderEpoch: number) =>
    v2Batch(
      baseOffset,
      Array.from({ length: n }, () => Buffer.from('v')),
      0,
      { partitionLeaderEpoch },
    );

  async function partition(segments: [bigint, Uint8Array][], lec: string): Promise<string> {
    const dir = await tmpDir('seglift-epochs-');
    let p = '';
    for (const [base, bytes] of segments) p = path.dirname(await writeSegment(dir, bytes, base));
    await writeFile(path.join(p, 'leader-epoch-checkpoint'), lec);
    return dir;
  }
  const lecOf = async (dir: string) => readFile(path.join(dir, 'topic-0', 'leader-epoch-checkpoint'), 'utf8');

  it('batches 0..147 all of epoch 1 before `2 148`: epoch 1 starts at 0 (endOffsetFor(1) stays 148), not `2 0`', async () => {
    const dir = await partition(
      [
        [0n, Buffer.concat([epochBatch(0n, 100, 1)])],
        [100n, Buffer.concat([epochBatch(100n, 48, 1)])],
        [148n, epochBatch(148n, 2, 2)],
      ],
      '0\n1\n2 148\n',
    );
    const [r] = await prepareTiering(dir);
    expect(r.error).toBeUndefined();
    expect(await lecOf(dir)).toBe('0\n2\n1 0\n2 148\n');
    expect(r.epochsFromBatches).toEqual([{ epoch: 1, startOffset: 0n }]);
  });

  it('several epochs below, legacy data first: each epoch from its first batch, the earliest down over the legacy data; the first entry moved down over its own epoch', async () => {
    const legacy = Buffer.concat(
      [0n, 1n, 2n].map((o) =>
        encodeLegacyEntry(o, { magic: 1, key: null, value: Buffer.from('old'), timestamp: 1n }),
      ),
    );
    const dir = await partition(
      [
        [0n, legacy],
        [3n, Buffer.concat([epochBatch(3n, 2, 0), epochBatch(5n, 2, 1), epochBatch(7n, 1, 0)])],
        [8n, Buffer.concat([epochBatch(8n, 2, 1), epochBatch(10n, 2, 3)])],
        [12n, epochBatch(12n, 1, 3)],
        [13n, epochBatch(13n, 1, 4)],
      ],
      '0\n2\n3 12\n4 13\n',
    );
    const [r] = await prepareTiering(dir);
    expect(r.error).toBeUndefined();
    // Epoch 0 from 3 (down to 0 over legacy), 1 from 5 (the later epoch-0 batch is below the
    // latest: recovery assigns nothing), 3 from 10 (the checkpoint's first entry, moved down).
    expect(await lecOf(dir)).toBe('0\n4\n0 0\n1 5\n3 10\n4 13\n');
    expect(r.epochsFromBatches).toEqual([
      { epoch: 0, startOffset: 3n },
      { epoch: 1, startOffset: 5n },
    ]);
  });

  it('batches of an epoch above the first entry, below its start, contradict the checkpoint: refused, nothing written', async () => {
    const dir = await partition(
      [
        [0n, epochBatch(0n, 2, 7)],
        [2n, epochBatch(2n, 1, 3)],
      ],
      '0\n1\n3 2\n',
    );
    const [r] = await prepareTiering(dir);
    expect(r.error?.message).toMatch(
      /batches from offset 0 carry leader epoch 7, below the checkpoint's first entry \(epoch 3 from 2\)/,
    );
    expect(await lecOf(dir)).toBe('0\n1\n3 2\n');
  });
});
