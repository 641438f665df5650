import { describe, expect, it } from 'vitest';
import {
  ControlRecordType,
  controlTypeName,
  decodeControlRecordKey,
  decodeEndTransactionMarker,
  encodeControlRecordKey,
  encodeEndTransactionMarker,
} from './control.js';
import { CorruptRecordError } from './errors.js';

describe('control records', () => {
  it('type ids (ControlRecordType)', () => {
    expect(ControlRecordType).toEqual({
      ABORT: 0,
      COMMIT: 1,
      LEADER_CHANGE: 2,
      SNAPSHOT_HEADER: 3,
      SNAPSHOT_FOOTER: 4,
      KRAFT_VERSION: 5,
      KRAFT_VOTERS: 6,
    });
  });

  it('decodes keys byte for byte, unknown types included', () => {
    expect(decodeControlRecordKey(Uint8Array.of(0, 0, 0, 1))).toEqual({ version: 0, type: 1 });
    expect(decodeControlRecordKey(Uint8Array.of(0, 0, 0, 0))).toEqual({ version: 0, type: 0 });
    expect(decodeControlRecordKey(Uint8Array.of(0, 3, 0x01, 0x2c, 0xff))).toEqual({ version: 3, type: 300 });
    expect(decodeControlRecordKey(Uint8Array.of(0, 0, 0xff, 0xff))).toEqual({ version: 0, type: -1 });
    expect(controlTypeName(300)).toBe('UNKNOWN(300)');
    expect(controlTypeName(-1)).toBe('UNKNOWN(-1)');
    expect([0, 1, 2, 3, 4, 5, 6].map(controlTypeName)).toEqual([
      'ABORT',
      'COMMIT',
      'LEADER_CHANGE',
      'SNAPSHOT_HEADER',
      'SNAPSHOT_FOOTER',
      'KRAFT_VERSION',
      'KRAFT_VOTERS',
    ]);
  });

  it('rejects short or null keys and negative versions (ControlRecordType.parse)', () => {
    expect(() => decodeControlRecordKey(Uint8Array.of(0, 0, 1))).toThrow(CorruptRecordError);
    expect(() => decodeControlRecordKey(null)).toThrow(CorruptRecordError);
    expect(() => decodeControlRecordKey(Uint8Array.of(0xff, 0xff, 0, 1))).toThrow(/version -1/);
  });

  it('end transaction markers', () => {
    expect(decodeEndTransactionMarker(Uint8Array.of(0, 0, 0, 0, 0, 7))).toEqual({
      version: 0,
      coordinatorEpoch: 7,
    });
    expect(decodeEndTransactionMarker(Uint8Array.of(0, 1, 0xff, 0xff, 0xff, 0xff, 9))).toEqual({
      version: 1,
      coordinatorEpoch: -1,
    });
    expect(() => decodeEndTransactionMarker(Uint8Array.of(0, 0, 0, 0, 0))).toThrow(CorruptRecordError);
    expect(() => decodeEndTransactionMarker(null)).toThrow(CorruptRecordError);
  });

  it('encoders round-trip', () => {
    expect([...encodeControlRecordKey(ControlRecordType.ABORT)]).toEqual([0, 0, 0, 0]);
    expect([...encodeEndTransactionMarker(258)]).toEqual([0, 0, 0, 0, 1, 2]);
    expect(decodeControlRecordKey(encodeControlRecordKey(6, 2))).toEqual({ version: 2, type: 6 });
  });
});
