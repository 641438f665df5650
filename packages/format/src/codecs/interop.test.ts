import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import {
  kafkaPython,
  kafkaPythonPath,
  lz4Cli,
  needs,
  pythonSnappy,
  referenceDecompress,
  zstdCli,
} from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { compress, decompress } from './index.js';
import { pythonPayload, randomBytes, semiCompressible } from './test-support/data.js';
import { xxh32 } from './xxh32.js';

/**
 * Cross-implementation checks against kafka-python's kafka.codec: its vectors (generated once by
 * __fixtures__/make-vectors.py) must decode here, and our output must decode there.
 */
interface Vector {
  name: string;
  codec: number;
  magic: number;
  payload: string;
  hex: string;
}
const fixtures = JSON.parse(
  readFileSync(new URL('./__fixtures__/kafka-python-vectors.json', import.meta.url), 'utf8'),
) as { vectors: Vector[]; xxh32: { hex: string; seed: number; xxh32: number }[] };

const MAX = 64 * 1024 * 1024;

describe('kafka-python vectors decode', () => {
  it('has the expected number of vectors', () => {
    expect(fixtures.vectors.length).toBe(20);
  });
  for (const v of fixtures.vectors) {
    it(v.name, () => {
      const out = decompress(v.codec, Buffer.from(v.hex, 'hex'), { magic: v.magic, maxBytes: MAX });
      expect(Buffer.from(out).equals(pythonPayload(v.payload))).toBe(true);
    });
  }
  it('python lz4 vectors with content size and checksums also decode as magic 1', () => {
    for (const v of fixtures.vectors.filter((x) => x.codec === 3 && x.magic === 2)) {
      const out = decompress(3, Buffer.from(v.hex, 'hex'), { magic: 1, maxBytes: MAX });
      expect(Buffer.from(out).equals(pythonPayload(v.payload))).toBe(true);
    }
  });
  it('python lz4_encode_old_kafka (broken HC) is rejected for magic 1 and 2', () => {
    const v = fixtures.vectors.find((x) => x.name === 'lz4_encode_old_kafka small')!;
    for (const magic of [1, 2]) {
      expect(() => decompress(3, Buffer.from(v.hex, 'hex'), { magic, maxBytes: MAX })).toThrow(
        /frame descriptor corrupted/,
      );
    }
  });
});

describe('xxh32 against python3-xxhash', () => {
  it.each(fixtures.xxh32)('xxh32($hex, seed $seed) = $xxh32', ({ hex, seed, xxh32: expected }) => {
    const data = Buffer.from(hex, 'hex');
    expect(xxh32(data, 0, data.length, seed)).toBe(expected);
  });
});

// Reads [[fn, hex], ...] as JSON on stdin, prints the decoded payloads as a JSON list of hex.
const DECODER = `
import sys, json
from kafka import codec
fns = {'gzip': codec.gzip_decode, 'snappy': codec.snappy_decode, 'lz4': codec.lz4_decode,
       'lz4_old': codec.lz4_decode_old_kafka, 'zstd': codec.zstd_decode}
print(json.dumps([fns[f](bytes.fromhex(h)).hex() for f, h in json.loads(sys.stdin.read())]))
`;

describe('kafka-python decodes our output', () => {
  needs(kafkaPython).it('gzip, snappy, lz4 (magic 0 and 2), zstd', () => {
    const payloads = [
      pythonPayload('small'),
      pythonPayload('big'),
      semiCompressible(300_000, 3),
      randomBytes(70_000, 5), // incompressible: stored LZ4 blocks
    ];
    const cases: { fn: string; codec: number; magic: number; level?: number; data: Buffer }[] = [];
    for (const data of payloads) {
      cases.push({ fn: 'gzip', codec: 1, magic: 2, data });
      cases.push({ fn: 'gzip', codec: 1, magic: 2, level: 1, data });
      cases.push({ fn: 'snappy', codec: 2, magic: 2, data });
      cases.push({ fn: 'lz4', codec: 3, magic: 2, data });
      cases.push({ fn: 'lz4_old', codec: 3, magic: 0, data });
      cases.push({ fn: 'zstd', codec: 4, magic: 2, data });
      cases.push({ fn: 'zstd', codec: 4, magic: 2, level: 19, data });
    }
    // kafka-python's snappy_decode wants more than a bare header, so empty input only for the others.
    for (const fn of ['gzip', 'lz4', 'zstd']) {
      cases.push({ fn, codec: { gzip: 1, lz4: 3, zstd: 4 }[fn]!, magic: 2, data: Buffer.alloc(0) });
    }
    const input = cases.map((c) => [
      c.fn,
      Buffer.from(compress(c.codec, c.data, { magic: c.magic, level: c.level })).toString('hex'),
    ]);
    const r = spawnSync(kafkaPythonPath(), ['-c', DECODER], {
      input: JSON.stringify(input),
      maxBuffer: 1 << 28,
    });
    expect(r.stderr.toString()).toBe('');
    expect(r.status).toBe(0);
    const decoded = JSON.parse(r.stdout.toString()) as string[];
    expect(decoded.length).toBe(cases.length);
    cases.forEach((c, i) => {
      expect(decoded[i] === c.data.toString('hex'), `${c.fn} magic ${c.magic} case ${i}`).toBe(true);
    });
  });
});

// The second implementation of each codec that the test helpers check every payload with.
describe('reference implementations decompress our output (zstd and lz4 tools, python3-snappy, gzip)', () => {
  const payloads = [
    Buffer.alloc(0),
    pythonPayload('small'),
    semiCompressible(300_000, 3),
    randomBytes(70_000, 5), // incompressible: stored blocks
  ];
  const cases = [
    { codec: 1, magic: 2, gate: needs() },
    { codec: 2, magic: 2, gate: needs(pythonSnappy) },
    { codec: 3, magic: 0, gate: needs(lz4Cli) }, // pre-0.10 header checksum, fixed by the helper
    { codec: 3, magic: 1, gate: needs(lz4Cli) },
    { codec: 3, magic: 2, gate: needs(lz4Cli) },
    { codec: 4, magic: 2, gate: needs(zstdCli) },
  ];
  for (const { codec, magic, gate } of cases) {
    gate.it(`codec ${codec}, magic ${magic}`, async () => {
      for (const data of payloads) {
        if (codec === 2 && data.length === 0) continue; // python3-snappy wants more than a header
        const ours = compress(codec, data, { magic });
        expect((await referenceDecompress(codec, ours)).equals(data)).toBe(true);
      }
    });
  }
});
