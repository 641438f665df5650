import { kafkajsFixtures, needs } from '@seglift/testkit';
import { expect, it } from 'vitest';
import { decodeLegacyRecords, logicalRecordsOfLegacyEntry } from './deep.js';
import { fetchRecordSets, loadBufferJson, shallowEntries } from './test-support/fetch.js';
import { kafkajsDecodeMessageSet } from './test-support/kafkajs.js';
import { upconvertAndCheck } from './test-support/verify.js';

/** [file, Fetch version, legacy entries, wrappers among them, deep records] */
const FETCH: [string, number, number, number, number][] = [
  ['requests_fetch__v0_response.json', 0, 1, 0, 1],
  ['requests_fetch__v0_response_gzip.json', 0, 3, 0, 3],
  ['requests_fetch__v1_response.json', 1, 1, 0, 1],
  ['requests_fetch__v1_response_gzip.json', 1, 1, 1, 3],
  ['requests_fetch__v2_response.json', 2, 3, 0, 3],
  ['requests_fetch__v2_response_gzip.json', 2, 1, 1, 3],
  ['requests_fetch__v3_response.json', 3, 3, 0, 3],
  ['requests_fetch__v3_response_gzip.json', 3, 1, 1, 3],
  ['requests_fetch__v4_response_010_format.json', 4, 1, 0, 1],
  ['requests_fetch__v4_response_snappy.json', 4, 0, 0, 0],
  ['requests_fetch__v4_response_mixed_formats.json', 4, 1611, 0, 1611],
];

function legacyEntriesOf(file: string, version: number): Uint8Array[] {
  return fetchRecordSets(loadBufferJson(file), version).flatMap((p) =>
    shallowEntries(p.recordSet)
      .filter((e) => e.magic < 2)
      .map((e) => e.bytes),
  );
}

/** Our deep iteration against kafkajs's MessageSetDecoder, field by field. */
async function compareWithKafkajs(entry: Uint8Array): Promise<number> {
  const ours = decodeLegacyRecords(entry);
  const theirs = await kafkajsDecodeMessageSet(entry);
  expect(theirs.length).toBe(ours.length);
  ours.forEach((r, i) => {
    const t = theirs[i];
    expect(r.offset.toString()).toBe(t.offset);
    expect(r.magic).toBe(t.magicByte);
    expect(r.attributes).toBe(t.attributes);
    expect(r.crc).toBe(t.crc >>> 0);
    expect(r.key === null ? null : Buffer.from(r.key)).toEqual(t.key);
    expect(r.value === null ? null : Buffer.from(r.value)).toEqual(t.value);
    // kafkajs does not apply the LogAppendTime wrapper rule; none of these fixtures use it.
    expect(r.timestamp.toString()).toBe(r.magic === 1 ? t.timestamp : '-1');
    expect(r.timestampType).toBe(r.magic === 0 ? 'NoTimestampType' : 'CreateTime');
  });
  return ours.length;
}

needs(kafkajsFixtures).describe('kafkajs broker-captured fixtures', () => {
  it('messageSet v0 uncompressed: 3 messages key-i/some-value-i', async () => {
    const set = loadBufferJson('messageSet__messages_v0_uncompressed.json.json').subarray(4);
    const entries = shallowEntries(set).map((e) => e.bytes);
    expect(entries.length).toBe(3);
    const rs = entries.flatMap((e) => decodeLegacyRecords(e));
    expect(
      rs.map((r) => [r.offset, r.magic, Buffer.from(r.key!).toString(), Buffer.from(r.value!).toString()]),
    ).toEqual([
      [0n, 0, 'key-0', 'some-value-0'],
      [1n, 0, 'key-1', 'some-value-1'],
      [2n, 0, 'key-2', 'some-value-2'],
    ]);
    for (const e of entries) await compareWithKafkajs(e);
  });

  it('messageSet v0 GZIP: one wrapper with the same 3 messages', async () => {
    const set = loadBufferJson('messageSet__messages_v0_GZIP.json').subarray(4);
    const entries = shallowEntries(set).map((e) => e.bytes);
    expect(entries.length).toBe(1);
    expect(entries[0][17] & 7).toBe(1);
    const rs = decodeLegacyRecords(entries[0]);
    expect(
      rs.map((r) => [r.offset, r.magic, Buffer.from(r.key!).toString(), Buffer.from(r.value!).toString()]),
    ).toEqual([
      [0n, 0, 'key-0', 'some-value-0'],
      [1n, 0, 'key-1', 'some-value-1'],
      [2n, 0, 'key-2', 'some-value-2'],
    ]);
    expect(await compareWithKafkajs(entries[0])).toBe(3);
  });

  for (const [file, version, count, wrappers, records] of FETCH) {
    it(`${file}: deep iteration equals kafkajs's`, async () => {
      const entries = legacyEntriesOf(file, version);
      expect(entries.length).toBe(count);
      expect(entries.filter((e) => (e[17] & 7) !== 0).length).toBe(wrappers);
      let n = 0;
      for (const e of entries) n += await compareWithKafkajs(e);
      expect(n).toBe(records);
    });
  }

  it('mixed formats: magic-1 records carry CreateTime timestamps, v2 batches follow', () => {
    const sets = fetchRecordSets(loadBufferJson('requests_fetch__v4_response_mixed_formats.json'), 4);
    const all = sets.flatMap((p) => shallowEntries(p.recordSet));
    expect(all.map((e) => e.magic).slice(-4)).toEqual([1, 2, 2, 2]);
    const legacy = all.filter((e) => e.magic === 1).flatMap((e) => logicalRecordsOfLegacyEntry(e.bytes));
    expect(legacy[0].offset).toBe(0n);
    expect(legacy[legacy.length - 1].offset).toBe(1610n);
    expect(legacy.every((r) => r.timestampType === 'CreateTime' && r.timestamp > 1_500_000_000_000n)).toBe(
      true,
    );
  });

  for (const grouping of ['kafka', 'coalesce'] as const) {
    for (const codec of [0, 1, 2, 3, 4] as const) {
      it(`upconverts every legacy fixture (${grouping}, codec ${codec})`, async () => {
        let files = 0;
        for (const [file, version] of FETCH) {
          const entries = legacyEntriesOf(file, version);
          if (entries.length === 0) continue; // a v2-only capture
          files++;
          const { batches, stats } = await upconvertAndCheck(entries, {
            grouping,
            codec,
            coalesceBytes: 16 * 1024,
          });
          if (grouping === 'kafka') expect(batches.length).toBe(entries.length);
          expect(stats.oversizeBatches).toBe(0);
        }
        expect(files).toBe(FETCH.filter(([, , count]) => count > 0).length);
      });
    }
  }
});
