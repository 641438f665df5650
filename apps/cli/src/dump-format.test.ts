import { CrcMismatchError, SegliftError } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import { type BatchView, formatBatchLine, formatControl, formatRecordLine } from './dump-format.js';
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
