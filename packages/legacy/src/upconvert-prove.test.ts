/**
 * prove on the general path (offsets past 2^53 here): every batch is read back as a consumer
 * would and compared with the records it was made of. A v2 encoder made to get one thing wrong at
 * a time (a header field, a record, one record too many or too few, bytes that do not decode)
 * must be caught as a VerifyMismatchError saying which record.
 */
import * as format from '@seglift/format';
import { describe, expect, it, vi } from 'vitest';
import { encodeLegacyEntry } from './message.js';
import { thrown } from './test-support/thrown.js';
import { Upconverter } from './upconvert.js';

const G = 2n ** 53n + 5n;
const bytes = (s: string) => new Uint8Array(Buffer.from(s));
type Fields = format.RecordBatchFields;
type Rec = format.Record;

/**
 * Two records at G and G + 1, both at timestamp 1000 (so a LogAppendTime header would give
 * them the same time): key 'k' value 'v', then null key and value. Returns what the proving
 * Upconverter threw while the encoder had `fault`, or undefined.
 */
function underFault(fault: (fields: Fields, records: Rec[]) => [Fields, Rec[]]): unknown {
  const entries = [
    encodeLegacyEntry(G, { magic: 1, timestamp: 1000n, key: bytes('k'), value: bytes('v') }),
    encodeLegacyEntry(G + 1n, { magic: 1, timestamp: 1000n, key: null, value: null }),
  ];
  const real = format.encodeRecordBatch;
  const spy = vi
    .spyOn(format, 'encodeRecordBatch')
    .mockImplementation((fields, records, codec, opts) => real(...fault(fields, [...records]), codec, opts));
  try {
    const up = new Upconverter({ grouping: 'coalesce', prove: true });
    for (const e of entries) up.push(e);
    up.flush();
  } catch (err) {
    return err;
  } finally {
    spy.mockRestore();
  }
  return undefined;
}

const mismatch = (detail: string) =>
  expect.objectContaining({ detail: `verify mismatch in upconverted batch: ${detail}` });
const differs = (i: number) => mismatch(`record ${i} differs from the legacy record it was made of`);
const header = (change: Partial<Fields>) => (f: Fields, r: Rec[]) =>
  [{ ...f, ...change }, r] as [Fields, Rec[]];
const record = (i: number, change: Partial<Rec>) => (f: Fields, r: Rec[]) =>
  [f, r.map((x, j) => (j === i ? { ...x, ...change } : x))] as [Fields, Rec[]];

describe('Upconverter prove, general path: a batch that does not read back as its records', () => {
  it('an encoder that does its job: nothing to report', () => {
    expect(underFault((f, r) => [f, r])).toBeUndefined();
  });

  it('a header field that changes what a consumer sees', () => {
    const cases: [string, (f: Fields, r: Rec[]) => [Fields, Rec[]]][] = [
      ['baseOffset', (f, r) => [{ ...f, baseOffset: f.baseOffset + 1n }, r]],
      ['baseTimestamp', (f, r) => [{ ...f, baseTimestamp: f.baseTimestamp + 1n }, r]],
      // Same time, other type: LogAppendTime takes maxTimestamp, which is the records' 1000.
      ['timestamp type', (f, r) => [{ ...f, attributes: f.attributes | 0x08 }, r]],
      ['producerId', header({ producerId: 7n })],
      ['producerEpoch', header({ producerEpoch: 2 })],
      ['baseSequence', header({ baseSequence: 0 })],
      ['transactional', (f, r) => [{ ...f, attributes: f.attributes | 0x10 }, r]],
      ['control', (f, r) => [{ ...f, attributes: f.attributes | 0x20 }, r]],
    ];
    for (const [what, fault] of cases) expect(underFault(fault), what).toEqual(differs(0));
  });

  it('a record’s key, value or headers', () => {
    const cases: [string, number, Partial<Rec>][] = [
      ['key, same length', 0, { key: bytes('j') }],
      ['key, longer', 0, { key: bytes('kk') }],
      ['key, null', 0, { key: null }],
      ['key, empty for null', 1, { key: new Uint8Array(0) }],
      ['value, same length', 0, { value: bytes('w') }],
      ['value, null', 0, { value: null }],
      ['value, empty for null', 1, { value: new Uint8Array(0) }],
      ['a header', 0, { headers: [{ key: bytes('h'), value: null }] }],
      ['offset', 1, { offsetDelta: 2 }],
      ['timestamp', 1, { timestampDelta: 1 }],
    ];
    for (const [what, i, change] of cases) expect(underFault(record(i, change)), what).toEqual(differs(i));
  });

  it('a record too many or too few, and bytes that do not decode', () => {
    expect(underFault((f, r) => [f, [...r, { ...r[1], offsetDelta: 2 }]])).toEqual(differs(2));
    expect(underFault((f, r) => [f, r.slice(0, 1)])).toEqual(mismatch('1 records vs 2'));
    const real = format.encodeRecordBatch;
    const spy = vi.spyOn(format, 'encodeRecordBatch').mockImplementation((...a) => {
      const batch = Buffer.from(real(...a));
      // The first record's length varint says far more than there is.
      batch[61] = 0x7e;
      return batch;
    });
    try {
      const up = new Upconverter({ grouping: 'kafka', prove: true });
      const err = thrown(() => up.push(encodeLegacyEntry(G, { magic: 0, key: null, value: bytes('v') })));
      expect(err).toBeInstanceOf(format.VerifyMismatchError);
      expect((err as Error).message).toMatch(
        /^verify mismatch in upconverted batch: batch does not decode: /,
      );
      expect(err).toMatchObject({ offset: G });
    } finally {
      spy.mockRestore();
    }
  });
});
