import { CorruptRecordError } from './errors.js';

/**
 * Control records (docs/kafka-format.md §5.4, Kafka's ControlRecordType and EndTransactionMarker).
 * Key = int16 version, int16 type. Unknown types decode (Kafka maps them to UNKNOWN); they are
 * never rejected, because newer brokers add types (KRaft added 2..6).
 */
export const ControlRecordType = {
  ABORT: 0,
  COMMIT: 1,
  LEADER_CHANGE: 2,
  SNAPSHOT_HEADER: 3,
  SNAPSHOT_FOOTER: 4,
  KRAFT_VERSION: 5,
  KRAFT_VOTERS: 6,
} as const;

export interface ControlRecordKey {
  version: number;
  type: number;
}

export interface EndTransactionMarker {
  version: number;
  coordinatorEpoch: number;
}

function view(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** Parses a control record key (ControlRecordType.parse): at least 4 bytes, version >= 0. */
export function decodeControlRecordKey(key: Uint8Array | null): ControlRecordKey {
  if (key === null || key.length < 4) {
    throw new CorruptRecordError(
      `control record key needs at least 4 bytes, found ${key === null ? 'null' : key.length}`,
    );
  }
  const v = view(key);
  const version = v.getInt16(0);
  if (version < 0) throw new CorruptRecordError(`invalid control record key version ${version}`);
  return { version, type: v.getInt16(2) };
}

/** Parses a COMMIT/ABORT marker value (EndTransactionMarker.deserializeValue): at least 6 bytes. */
export function decodeEndTransactionMarker(value: Uint8Array | null): EndTransactionMarker {
  if (value === null || value.length < 6) {
    throw new CorruptRecordError(
      `end transaction marker needs at least 6 bytes, found ${value === null ? 'null' : value.length}`,
    );
  }
  const v = view(value);
  return { version: v.getInt16(0), coordinatorEpoch: v.getInt32(2) };
}

const NAMES = [
  'ABORT',
  'COMMIT',
  'LEADER_CHANGE',
  'SNAPSHOT_HEADER',
  'SNAPSHOT_FOOTER',
  'KRAFT_VERSION',
  'KRAFT_VOTERS',
] as const;

/** The Kafka name of a control type, `UNKNOWN(<id>)` for types this code does not know. */
export function controlTypeName(type: number): string {
  return type >= 0 && type < NAMES.length ? NAMES[type] : `UNKNOWN(${type})`;
}

export function encodeControlRecordKey(type: number, version = 0): Uint8Array {
  const out = new Uint8Array(4);
  const v = view(out);
  v.setInt16(0, version);
  v.setInt16(2, type);
  return out;
}

export function encodeEndTransactionMarker(coordinatorEpoch: number, version = 0): Uint8Array {
  const out = new Uint8Array(6);
  const v = view(out);
  v.setInt16(0, version);
  v.setInt32(2, coordinatorEpoch);
  return out;
}
