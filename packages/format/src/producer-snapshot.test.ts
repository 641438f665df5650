import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  CorruptRecordError,
  CrcMismatchError,
  TruncatedDataError,
  UnsupportedFormatError,
} from './errors.js';
import {
  decodeProducerSnapshot,
  encodeProducerSnapshot,
  type ProducerSnapshotEntry,
} from './producer-snapshot.js';

/**
 * Written by Kafka 4.3 (ProducerStateManager.takeSnapshot at segment rolls) in the tiering e2e
 * scenario (e2e/kafka/tiering.test.ts) of partition old-0: at the end of a legacy segment, at a
 * roll with an idempotent producer and a transaction open across it, and at a roll right after
 * a transaction marker (transaction protocol v2 bumps the epoch at every marker).
 */
const fixture = (name: string) =>
  new Uint8Array(readFileSync(new URL(`./__fixtures__/producer-snapshots/${name}`, import.meta.url)));

const idempotent = (
  lastSequence: number,
  lastOffset: bigint,
  offsetDelta: number,
): ProducerSnapshotEntry => ({
  producerId: 1001n,
  producerEpoch: 0,
  lastSequence,
  lastOffset,
  offsetDelta,
  timestamp: 1767226496331n,
  coordinatorEpoch: -1,
  currentTxnFirstOffset: -1n,
});

const KAFKA: [string, ProducerSnapshotEntry[]][] = [
  ['legacy-empty.snapshot', []],
  [
    'idempotent-and-ongoing-txn.snapshot',
    [
      idempotent(439, 1049n, 1),
      {
        producerId: 1002n,
        producerEpoch: 0,
        lastSequence: 5,
        lastOffset: 1055n,
        offsetDelta: 5,
        timestamp: 1767225610000n,
        coordinatorEpoch: -1,
        currentTxnFirstOffset: 1050n,
      },
    ],
  ],
  [
    'after-marker-epoch-bump.snapshot',
    [
      idempotent(439, 1049n, 1),
      {
        producerId: 1002n,
        producerEpoch: 18,
        lastSequence: -1,
        lastOffset: -1n,
        offsetDelta: 0,
        timestamp: 1796173037621n,
        coordinatorEpoch: 0,
        currentTxnFirstOffset: -1n,
      },
    ],
  ],
];

describe('producer state snapshot files (ProducerSnapshot v1)', () => {
  for (const [name, entries] of KAFKA)
    it(`${name}: decodes to Kafka's entries, and encoding them gives Kafka's bytes`, () => {
      const bytes = fixture(name);
      expect(decodeProducerSnapshot(bytes)).toEqual(entries);
      expect(Buffer.from(encodeProducerSnapshot(entries)).equals(Buffer.from(bytes))).toBe(true);
    });

  it('layout: int16 version 1, uint32 CRC-32C of the rest, int32 count, 46-byte entries', () => {
    const bytes = fixture('idempotent-and-ongoing-txn.snapshot');
    expect(bytes.length).toBe(10 + 2 * 46);
    expect(Buffer.from(bytes.subarray(0, 2)).toString('hex')).toBe('0001');
    expect(Buffer.from(bytes.subarray(6, 10)).toString('hex')).toBe('00000002');
    // The empty snapshot: its CRC is CRC-32C of the four count bytes 00 00 00 00.
    expect(Buffer.from(encodeProducerSnapshot([])).toString('hex')).toBe('000148674bc700000000');
  });

  it('refuses a wrong CRC, an unknown version, a short or a long file', () => {
    const good = fixture('idempotent-and-ongoing-txn.snapshot');
    const flipped = good.slice();
    flipped[40] ^= 1;
    expect(() => decodeProducerSnapshot(flipped)).toThrow(CrcMismatchError);
    const v2 = good.slice();
    v2[1] = 2;
    expect(() => decodeProducerSnapshot(v2)).toThrow(UnsupportedFormatError);
    expect(() => decodeProducerSnapshot(good.subarray(0, good.length - 1))).toThrow(TruncatedDataError);
    expect(() => decodeProducerSnapshot(good.subarray(0, 9))).toThrow(TruncatedDataError);
    expect(() => decodeProducerSnapshot(new Uint8Array([...good, 0]))).toThrow(CorruptRecordError);
  });
});
