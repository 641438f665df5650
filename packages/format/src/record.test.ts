import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { KAFKAJS_FIXTURES, kafkajsFixtures, needs } from '@seglift/testkit';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteReader, ByteWriter } from './bytes.js';
import { CorruptRecordError, InvalidArgumentError } from './errors.js';
import {
  decodeRecord,
  encodeRecord,
  parseRecordAt,
  RecordFields,
  readRecord,
  sizeOfRecord,
  writeRecord,
} from './record.js';
import type { Record } from './types.js';

const require = createRequire(import.meta.url);
const fixture = path.join(KAFKAJS_FIXTURES, 'recordBatch__v0_record.json');
const enc = (s: string) => new TextEncoder().encode(s);
const str = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString());

const bytesArb = fc.option(fc.uint8Array({ maxLength: 300 }), { nil: null, freq: 4 });
const recordArb: fc.Arbitrary<Record> = fc.record({
  attributes: fc.integer({ min: -128, max: 127 }),
  timestampDelta: fc.oneof(
    fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    fc.integer({ min: -(2 ** 52), max: 2 ** 52 }),
    fc.constantFrom(2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n + 1n),
  ),
  offsetDelta: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  key: bytesArb,
  value: bytesArb,
  headers: fc.array(fc.record({ key: fc.uint8Array({ maxLength: 20 }), value: bytesArb }), { maxLength: 4 }),
});

describe('v2 Record', () => {
  it('encode/decode round-trips; sizes agree; both writers write the same bytes (fast-check)', () => {
    fc.assert(
      fc.property(recordArb, (r) => {
        const bytes = encodeRecord(r);
        expect(bytes.length).toBe(sizeOfRecord(r));
        const w = new ByteWriter(1);
        writeRecord(w, r);
        expect(Buffer.from(w.finish()).equals(Buffer.from(bytes))).toBe(true);
        const back = decodeRecord(bytes);
        // safe-integer bigints come back as numbers
        expect({ ...back, timestampDelta: BigInt(back.timestampDelta) }).toEqual({
          ...r,
          timestampDelta: BigInt(r.timestampDelta),
        });
      }),
      { numRuns: 1000 },
    );
  });

  it('null and empty stay distinct for key, value and header value', () => {
    const r: Record = {
      attributes: 0,
      timestampDelta: 0,
      offsetDelta: 0,
      key: null,
      value: new Uint8Array(0),
      headers: [
        { key: new Uint8Array(0), value: null },
        { key: enc('a'), value: new Uint8Array(0) },
      ],
    };
    const bytes = encodeRecord(r);
    // body: attrs, ts, off, key -1, value 0, 2 headers, (0, -1), (1 'a', 0)
    expect([...bytes]).toEqual([22, 0, 0, 0, 1, 0, 4, 0, 1, 2, 97, 0]);
    expect(decodeRecord(bytes)).toEqual(r);
  });

  it('a null header key cannot be encoded', () => {
    const bad = {
      attributes: 0,
      timestampDelta: 0,
      offsetDelta: 0,
      key: null,
      value: null,
      headers: [{ key: null, value: null }],
    };
    expect(() => encodeRecord(bad as unknown as Record)).toThrow(InvalidArgumentError);
  });

  it('decodeRecord rejects trailing bytes; readRecord leaves the reader after the record', () => {
    const one = encodeRecord({
      attributes: 0,
      timestampDelta: 1,
      offsetDelta: 2,
      key: null,
      value: null,
      headers: [],
    });
    const two = new Uint8Array(one.length * 2);
    two.set(one);
    two.set(one, one.length);
    expect(() => decodeRecord(two)).toThrow(CorruptRecordError);
    const r = new ByteReader(two);
    readRecord(r);
    expect(r.pos).toBe(one.length);
    readRecord(r);
    expect(r.remaining).toBe(0);
  });

  needs(kafkajsFixtures).it(
    'kafkajs record fixture (body without its length): duplicate header keys in order',
    () => {
      const body = Uint8Array.from((JSON.parse(readFileSync(fixture, 'utf8')) as { data: number[] }).data);
      expect(body.length).toBe(107);
      const w = new ByteWriter();
      w.varint(body.length);
      w.bytes(body);
      const bytes = w.finish();
      const r = decodeRecord(bytes);
      expect([str(r.key), str(r.value), r.timestampDelta, r.offsetDelta]).toEqual([
        'key-0',
        'some-value-0',
        0,
        0,
      ]);
      expect(r.headers.map((h) => [str(h.key), str(h.value)])).toEqual([
        ['header-key-0', 'header-value-0'],
        ['header-key-1', 'header-value-1'],
        ['header-key-1', 'header-value-2'],
      ]);
      expect(Buffer.from(encodeRecord(r)).equals(Buffer.from(bytes))).toBe(true);
      // kafkajs folds duplicate keys into an array; same values
      const RecordDecoder = require('kafkajs/src/protocol/recordBatch/record/v0/decoder.js');
      const Decoder = require('kafkajs/src/protocol/decoder.js');
      const theirs = RecordDecoder(new Decoder(Buffer.from(body)), { firstOffset: '0', firstTimestamp: '0' });
      expect(
        Object.fromEntries(Object.entries(theirs.headers).map(([k, v]) => [k, [v].flat().map(String)])),
      ).toEqual({
        'header-key-0': ['header-value-0'],
        'header-key-1': ['header-value-1', 'header-value-2'],
      });
    },
  );
});

describe('parseRecordAt', () => {
  const outcome = (bytes: Uint8Array, step: (r: ByteReader) => unknown) => {
    const r = new ByteReader(bytes);
    try {
      const record = step(r);
      return { end: r.pos, record };
    } catch (err) {
      expect(err).toBeInstanceOf(CorruptRecordError);
      const e = err as CorruptRecordError;
      return { error: e.detail, position: e.position };
    }
  };

  it('accepts and rejects exactly what readRecord does, at the same positions (mutated records)', () => {
    fc.assert(
      fc.property(
        recordArb,
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.nat(),
        (record, flips, cut) => {
          const bytes = Buffer.from(encodeRecord(record));
          for (const [at, v] of flips) bytes[at % bytes.length] = v;
          const input = bytes.subarray(0, bytes.length - (cut % 3 === 0 ? cut % bytes.length : 0));
          const fields = new RecordFields();
          const viaFields = (r: ByteReader) => {
            r.pos = parseRecordAt(r.buf, r.pos, r.end, fields);
            const bytes = (pos: number, n: number) =>
              n < 0 ? null : Buffer.from(r.buf.subarray(pos, pos + n));
            return {
              attributes: fields.attributes,
              timestampDelta: fields.timestampDelta,
              offsetDelta: fields.offsetDelta,
              key: bytes(fields.keyPos, fields.keyLength),
              value: bytes(fields.valuePos, fields.valueLength),
              headers: fields.headerCount,
            };
          };
          const viaRecord = (r: ByteReader) => {
            const x = readRecord(r);
            const bytes = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b));
            return { ...x, key: bytes(x.key), value: bytes(x.value), headers: x.headers.length };
          };
          expect(outcome(input, viaFields)).toEqual(outcome(input, viaRecord));
        },
      ),
      { seed: 20261129, numRuns: 2000 },
    );
  });
});
