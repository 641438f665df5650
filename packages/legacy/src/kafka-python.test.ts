import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CompressionType } from '@seglift/format';
import { kafkaPython, kafkaPythonPath, needs } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { decodeLegacyRecords, type LegacyRecord } from './deep.js';
import { encodeLegacyEntry } from './message.js';
import { type ExpectedRecord, upconvertAndCheck } from './test-support/verify.js';
import { encodeCompressedWrapper } from './writer.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const script = path.join(here, '__fixtures__', 'kafka_python_legacy.py');

interface PyRecord {
  offset: number;
  timestamp: number | null;
  timestampType: 0 | 1 | null;
  key: string | null;
  value: string | null;
  crc: number;
}
interface PyCase {
  name: string;
  magic: 0 | 1;
  codec: number;
  entries: string[];
  records: PyRecord[];
}

const fromHex = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));
const toHex = (b: Uint8Array | null) => (b === null ? null : Buffer.from(b).toString('hex'));

/** kafka-python's view of a record, in our terms. */
function asOurs(r: PyRecord) {
  return {
    offset: BigInt(r.offset),
    timestamp: r.timestamp === null ? -1n : BigInt(r.timestamp),
    timestampType:
      r.timestampType === null ? 'NoTimestampType' : r.timestampType === 0 ? 'CreateTime' : 'LogAppendTime',
    key: r.key,
    value: r.value,
    crc: r.crc,
  };
}
function view(r: LegacyRecord) {
  return {
    offset: r.offset,
    timestamp: r.timestamp,
    timestampType: r.timestampType,
    key: toHex(r.key),
    value: toHex(r.value),
    crc: r.crc,
  };
}

async function checkCases(cases: PyCase[]): Promise<number> {
  let n = 0;
  for (const c of cases) {
    const entries = c.entries.map(fromHex);
    const ours = entries.flatMap((e) => decodeLegacyRecords(e)).map(view);
    expect(ours, c.name).toEqual(c.records.map(asOurs));
    n += ours.length;
    // kafka-python's records are a third view of the expectation (besides kafkajs's and ours).
    const vectors: ExpectedRecord[] = c.records.map((r) => ({
      offset: BigInt(r.offset),
      timestamp: r.timestamp === null ? -1n : BigInt(r.timestamp),
      timestampType: r.timestampType === 1 ? 'LogAppendTime' : 'CreateTime',
      key: r.key,
      value: r.value,
    }));
    for (const grouping of ['kafka', 'coalesce'] as const) {
      await upconvertAndCheck(
        entries,
        { grouping, codec: CompressionType.LZ4, maxBatchBytes: 400 },
        { vectors },
      );
    }
  }
  return n;
}

describe('kafka-python interop', () => {
  it('decodes the committed kafka-python fixtures exactly (8 cases, v0/v1 x none/gzip/snappy/lz4)', async () => {
    const fixture = JSON.parse(
      readFileSync(path.join(here, '__fixtures__', 'kafka-python-legacy.json'), 'utf8'),
    ) as {
      cases: PyCase[];
    };
    expect(fixture.cases.map((c) => c.name)).toEqual([
      'v0-none',
      'v0-gzip',
      'v0-snappy',
      'v0-lz4',
      'v1-none',
      'v1-gzip',
      'v1-snappy',
      'v1-lz4',
    ]);
    expect(await checkCases(fixture.cases)).toBe(44);
  });

  needs(kafkaPython).it('decodes what kafka-python builds now (live)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'seglift-kpy-'));
    try {
      const r = spawnSync(kafkaPythonPath(), [script, 'generate', dir], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const fresh = JSON.parse(readFileSync(path.join(dir, 'kafka-python-legacy.json'), 'utf8')) as {
        cases: PyCase[];
      };
      expect(await checkCases(fresh.cases)).toBe(44);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  needs(kafkaPython).it('kafka-python decodes what we write, exactly (live)', () => {
    const bytes = (s: string) => new Uint8Array(Buffer.from(s));
    const entries: Uint8Array[] = [
      encodeLegacyEntry(0n, { magic: 0, key: bytes('k'), value: bytes('v') }),
      encodeLegacyEntry(1n, { magic: 0, key: null, value: null }),
      encodeLegacyEntry(2n, { magic: 1, timestamp: 1234n, key: bytes(''), value: bytes('x') }),
      encodeLegacyEntry(3n, { magic: 1, attributes: 8, timestamp: 99n, key: null, value: bytes('lat') }),
    ];
    let offset = 10n;
    for (const codec of [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]) {
      for (const magic of [0, 1] as const) {
        for (const timestampType of magic === 1
          ? (['CreateTime', 'LogAppendTime'] as const)
          : (['CreateTime'] as const)) {
          const messages = Array.from({ length: 7 }, (_, i) => {
            offset += i % 3 === 2 ? 5n : 1n; // gaps, as compaction leaves them
            return {
              offset,
              timestamp: BigInt(1_600_000_000_000 + i * 3),
              key: i % 2 === 0 ? null : bytes(`key${i}`),
              value: i === 4 ? null : bytes(`value ${i} `.repeat(i * 40)),
            };
          });
          entries.push(
            encodeCompressedWrapper({
              magic,
              codec,
              timestampType,
              wrapperTimestamp: 1_700_000_000_000n,
              messages,
            }),
          );
        }
      }
    }
    const r = spawnSync(kafkaPythonPath(), [script, 'decode'], {
      input: JSON.stringify(entries.map((e) => Buffer.from(e).toString('hex'))),
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const theirs = JSON.parse(r.stdout) as PyRecord[][];
    expect(theirs.length).toBe(entries.length);
    let n = 0;
    entries.forEach((e, i) => {
      expect(decodeLegacyRecords(e).map(view)).toEqual(theirs[i].map(asOurs));
      n += theirs[i].length;
    });
    expect(n).toBe(4 + 9 * 7);
  });
});
