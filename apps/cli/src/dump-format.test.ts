import { CrcMismatchError, SegliftError } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import {
  type BatchView,
  decodeUtf8,
  formatBatchLine,
  formatControl,
  formatProducerSnapshotEntry,
  formatRecordLine,
} from './dump-format.js';
import { ExitCode, exitCodeOf, formatError, UsageError } from './exit-codes.js';

const v2: BatchView = {
  position: 128,
  size: 90,
  magic: 2,
  lastOffset: 14n,
  timestampType: 'LogAppendTime',
  maxTimestamp: 1_650_000_000_000n,
  compresscodec: 'zstd',
  crc: 0xfedcba98,
  isValid: true,
  v2: {
    baseOffset: 10n,
    count: 3,
    baseSequence: 2147483646,
    lastSequence: 3,
    producerId: 77n,
    producerEpoch: 2,
    partitionLeaderEpoch: 5,
    isTransactional: true,
    isControl: false,
    deleteHorizonMs: 1_650_000_086_400n,
  },
};

describe('kafka-dump-log lines', () => {
  it('v2 batch line: every field, OptionalLong[...] for a delete horizon, unsigned crc', () => {
    expect(formatBatchLine(v2)).toBe(
      'baseOffset: 10 lastOffset: 14 count: 3 baseSequence: 2147483646 lastSequence: 3 producerId: 77 producerEpoch: 2 partitionLeaderEpoch: 5 isTransactional: true isControl: false deleteHorizonMs: OptionalLong[1650000086400] position: 128 LogAppendTime: 1650000000000 size: 90 magic: 2 compresscodec: zstd crc: 4275878552 isvalid: true',
    );
  });

  it('legacy batch line carries only offset before the common fields', () => {
    const { v2: _, ...legacy } = v2;
    expect(formatBatchLine({ ...legacy, magic: 1, compresscodec: 'snappy', isValid: false })).toBe(
      'offset: 14 position: 128 LogAppendTime: 1650000000000 size: 90 magic: 1 compresscodec: snappy crc: 4275878552 isvalid: false',
    );
  });

  it('record lines: header keys, null key/value skipped in data, no data for control batches', () => {
    const r = {
      offset: 11n,
      timestamp: 1_650_000_000_000n,
      keySize: -1,
      valueSize: 3,
      key: null,
      value: new TextEncoder().encode('abc'),
      sequence: 5,
      headerKeys: [new TextEncoder().encode('h1'), new TextEncoder().encode('trace-id')],
    };
    expect(formatRecordLine(v2, r, { printDataLog: true })).toBe(
      '| offset: 11 LogAppendTime: 1650000000000 keySize: -1 valueSize: 3 sequence: 5 headerKeys: [h1,trace-id] payload: abc',
    );
    expect(
      formatRecordLine(
        v2,
        { ...r, key: new Uint8Array([0x6b]), value: null },
        { printDataLog: true, skipRecordMetadata: true },
      ),
    ).toBe('| key: k');
    const control = { ...v2, v2: { ...v2.v2!, isControl: true } };
    expect(
      formatRecordLine(
        control,
        { ...r, control: formatControl(0, 'ABORT', { coordinatorEpoch: 9 }) },
        { printDataLog: true },
      ),
    ).toBe(
      '| offset: 11 LogAppendTime: 1650000000000 keySize: -1 valueSize: 3 sequence: 5 headerKeys: [h1,trace-id] endTxnMarker: ABORT coordinatorEpoch: 9',
    );
    expect(formatControl(2, 'LEADER_CHANGE')).toBe('controlType: LEADER_CHANGE(2)');
    expect(formatControl(42, 'UNKNOWN')).toBe('controlType: UNKNOWN(42)');
  });
});

describe('errors and exit codes', () => {
  it('maps typed errors to 1, usage and invalid arguments to 2, anything else to 3', () => {
    const crc = new CrcMismatchError('CRC-32C', 1, 2, { file: 'a.log', position: 17, offset: 3n });
    expect(exitCodeOf(crc)).toBe(ExitCode.SEGMENT_FAILED);
    expect(formatError(crc)).toBe(
      'error[CRC_MISMATCH]: CRC-32C mismatch: stored 0x00000001, computed 0x00000002 (file a.log, position 17, offset 3)',
    );
    expect(exitCodeOf(new UsageError('x'))).toBe(ExitCode.USAGE);
    expect(exitCodeOf(new SegliftError('INVALID_ARGUMENT', 'bad'))).toBe(ExitCode.USAGE);
    expect(exitCodeOf(new TypeError('bug'))).toBe(ExitCode.INTERNAL);
  });
});

describe("payloads as Kafka's StringDecoder decodes them (new String(bytes, UTF_8))", () => {
  const R = '\ufffd';
  const dec = (...b: number[]) => decodeUtf8(Uint8Array.from(b));
  // Each checked against the JDK (e2e/kafka/dump-log.test.ts compares whole dumps with Kafka's).
  it.each([
    ['an encoded surrogate is one malformed sequence', [0xed, 0xa0, 0x80], R],
    ['a surrogate lead and a byte that ends it', [0xed, 0xa0, 0x41], `${R}A`],
    ['a truncated surrogate at the end', [0xed, 0xa0], R],
    ['a truncated 3-byte sequence at the end', [0xe1, 0x80], R],
    ['an overlong 3-byte form', [0xe0, 0x80, 0x80], R + R + R],
    ['above U+10FFFF', [0xf4, 0x90, 0x80, 0x80], R + R + R + R],
    ['a truncated 4-byte sequence at the end', [0xf0, 0x90, 0x80], R],
    ['a 4-byte lead, one continuation, then ASCII', [0xf0, 0x90, 0x41], `${R}A`],
    ['C0 and C1 never lead', [0xc0, 0xaf], R + R],
    ['a lone continuation byte', [0x41, 0x80, 0x42], `A${R}B`],
    ['a byte order mark is kept', [0xef, 0xbb, 0xbf, 0x41], '\ufeffA'],
    ['valid 4-byte', [0xf0, 0x9f, 0x98, 0x82], '\u{1f602}'],
  ])('%s', (_what, bytes, text) => {
    expect(dec(...bytes)).toBe(text);
  });
  it("differs from WHATWG's TextDecoder where Java's rules do", () => {
    expect(new TextDecoder().decode(Uint8Array.from([0xed, 0xa0, 0x80]))).toBe(R + R + R);
    expect(dec(0xed, 0xa0, 0x80)).toBe(R);
  });
});

describe('producer snapshot entries (DumpLogSegments.dumpProducerIdSnapshot, Kafka 4)', () => {
  const entry = {
    producerId: 1000n,
    producerEpoch: 3,
    lastSequence: 41,
    lastOffset: 9n,
    offsetDelta: 4,
    timestamp: 1_700_000_000_123n,
    coordinatorEpoch: -1,
    currentTxnFirstOffset: -1n,
  };
  it('an entry with a batch: its sequences, offsets and timestamp', () => {
    expect(formatProducerSnapshotEntry(entry)).toBe(
      'producerId: 1000 producerEpoch: 3 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty ' +
        'lastTimestamp: 1700000000123 firstSequence: 37 lastSequence: 41 lastOffset: 9 offsetDelta: 4 timestamp: 1700000000123',
    );
  });
  it('no batch (lastOffset -1), an open transaction; a first sequence that wraps', () => {
    expect(
      formatProducerSnapshotEntry({
        ...entry,
        lastOffset: -1n,
        coordinatorEpoch: 5,
        currentTxnFirstOffset: 8n,
      }),
    ).toBe(
      'producerId: 1000 producerEpoch: 3 coordinatorEpoch: 5 currentTxnFirstOffset: OptionalLong[8] lastTimestamp: 1700000000123',
    );
    expect(formatProducerSnapshotEntry({ ...entry, lastSequence: 2, offsetDelta: 5 })).toContain(
      'firstSequence: 2147483645 lastSequence: 2',
    );
  });
});
