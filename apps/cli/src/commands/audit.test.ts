import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CompressionType } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, v2Batch, writeSegment } from '../test-support/segments.js';

function legacyMessage(offset: bigint) {
  // 12 (offset, size) + 14 (v0 overhead) + key 'a' + value 'hello' = 32 bytes.
  return encodeLegacyEntry(offset, { magic: 0, key: utf8('a'), value: utf8('hello') });
}

/** Two partitions: t-0 mixes v0 and v2/none, t-1 has a gzip batch; the last segment of each is active. */
function logDir(): string {
  const dir = tmpDir();
  writeSegment(path.join(dir, 't-0'), 0n, [legacyMessage(0n), v2Batch(1n, 1)]);
  writeSegment(path.join(dir, 't-0'), 2n, [legacyMessage(2n)]);
  writeSegment(path.join(dir, 't-1'), 0n, [v2Batch(0n, 2, CompressionType.GZIP)]);
  writeSegment(path.join(dir, 't-1'), 2n, [v2Batch(2n, 1)]);
  return dir;
}

describe('seglift audit', () => {
  it('reports exact numbers for a generated log dir', async () => {
    const dir = logDir();
    const gzipSize = v2Batch(0n, 2, CompressionType.GZIP).length;
    const r = await run(['audit', dir, '--codec', 'none', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const [p0, p1, summary] = lines(r.stdout).map((l) => JSON.parse(l));
    expect(legacyMessage(0n).length).toBe(32);
    expect(v2Batch(1n, 1).length).toBe(72);
    expect(p0).toMatchObject({
      type: 'partition',
      topic: 't',
      partition: 0,
      segments: 2,
      bytes: 32 + 72 + 32,
      legacySegments: 2,
      legacyBytes: 64,
      bytesByFormat: { 'v0/none': 64, 'v2/none': 72 },
      activeSegment: path.join(dir, 't-0', '00000000000000000002.log'),
      convertSegments: 1,
      convertBytes: 104,
      // v2/none batch kept (72) + the v0 message upconverted to one v2 batch: 61 + 13 = 74.
      estimatedBytesAfter: 72 + 74,
      // What a prepare stages: the rolled segment's output and one entry in each index.
      stageBytes: 72 + 74 + 20,
      errors: [],
    });
    expect(p1).toMatchObject({
      topic: 't',
      partition: 1,
      segments: 2,
      bytes: gzipSize + 72,
      legacySegments: 0,
      legacyBytes: 0,
      bytesByFormat: { 'v2/gzip': gzipSize, 'v2/none': 72 },
      convertSegments: 1,
      convertBytes: gzipSize,
      // Two records of 11 bytes uncompressed behind the 61-byte header.
      estimatedBytesAfter: 61 + 22,
    });
    expect(summary).toEqual({
      type: 'summary',
      codec: 'none',
      partitions: 2,
      segments: 4,
      bytes: 136 + gzipSize + 72,
      legacySegments: 2,
      legacyBytes: 64,
      convertSegments: 2,
      convertBytes: 104 + gzipSize,
      estimatedBytesAfter: 146 + 83,
      stageBytes: 146 + 83 + 2 * 20,
      errors: 0,
      readiness: 'not-ready',
    });
  });

  it('--include-active counts the active segments; a partition dir can be audited alone', async () => {
    const dir = logDir();
    const r = await run(['audit', path.join(dir, 't-0'), '--codec', 'none', '--include-active', '--json']);
    const [p0] = lines(r.stdout).map((l) => JSON.parse(l));
    expect(p0.convertSegments).toBe(2);
    expect(p0.estimatedBytesAfter).toBe(72 + 74 + 74);
    // Prepare never stages the active segment.
    expect(p0.stageBytes).toBe(72 + 74 + 20);
  });

  it('prints a table and a readiness summary', async () => {
    const dir = logDir();
    const r = await run(['audit', dir]);
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[0]).toMatch(/^PARTITION\s+SEGMENTS\s+BYTES\s+LEGACY SEGS/);
    expect(out[1]).toMatch(/^t-0\s+2\s+136 B\s+2\s+64 B\s+v0\/none=64 B v2\/none=72 B\s+1\s+104 B/);
    expect(out.at(-2)).toMatch(/^migrate --prepare needs about \d+ B in its stage dir/);
    expect(out.at(-1)).toBe(
      "Kafka 4 readiness: NOT READY: 2 segments still hold magic 0/1 data; 'seglift migrate' upconverts them to v2.",
    );
  });

  it('never says ready when it read nothing: a missing path, an empty dir, an unreadable segment', async () => {
    const missing = await run(['audit', '/does/not/exist']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/\/does\/not\/exist: no such file or directory/);
    expect(missing.stdout).not.toMatch(/ready/);
    const empty = tmpDir();
    const e = await run(['audit', empty]);
    expect(e.code).toBe(2);
    expect(e.stderr).toMatch(/no Kafka segments under/);
    expect(e.stdout).not.toMatch(/ready/);
    // A corrupt segment among good v2 ones: the answer is unknown, exit 1.
    const dir = tmpDir();
    writeSegment(path.join(dir, 'v-0'), 0n, [v2Batch(0n, 1)]);
    const bad = writeSegment(path.join(dir, 'v-0'), 1n, [v2Batch(1n, 1)]);
    const bytes = readFileSync(bad);
    bytes[30] ^= 0xff;
    writeFileSync(bad, bytes);
    writeSegment(path.join(dir, 'v-0'), 2n, [v2Batch(2n, 1)]);
    const u = await run(['audit', dir]);
    expect(u.code).toBe(1);
    expect(lines(u.stdout).at(-1)).toMatch(/^Kafka 4 readiness: UNKNOWN: 1 segment could not be read/);
    // All v2, all read: ready.
    const good = tmpDir();
    writeSegment(path.join(good, 'w-0'), 0n, [v2Batch(0n, 1)]);
    const g = await run(['audit', good]);
    expect(g.code).toBe(0);
    expect(lines(g.stdout).at(-1)).toBe(
      'Kafka 4 readiness: ready: all 1 segment read, no magic 0/1 data found.',
    );
  });

  it('a segment file is audited as that segment; the KRaft metadata log is passed over', async () => {
    const dir = logDir();
    const one = await run([
      'audit',
      path.join(dir, 't-0', '00000000000000000000.log'),
      '--codec',
      'none',
      '--json',
    ]);
    expect(one.code).toBe(0);
    const [p, summary] = lines(one.stdout).map((l) => JSON.parse(l));
    expect(p).toMatchObject({ topic: 't', partition: 0, segments: 1, convertSegments: 1, legacySegments: 1 });
    expect(summary.readiness).toBe('not-ready');
    writeSegment(path.join(dir, '__cluster_metadata-0'), 0n, [v2Batch(0n, 1, CompressionType.GZIP)]);
    const r = await run(['audit', dir, '--json']);
    const objs = lines(r.stdout).map((l) => JSON.parse(l));
    expect(objs.filter((o) => o.type === 'partition').map((o) => o.topic)).toEqual(['t', 't']);
    expect(objs.find((o) => o.type === 'ignored')).toMatchObject({
      dir: path.join(dir, '__cluster_metadata-0'),
      reason: expect.stringMatching(/KRaft metadata log/),
    });
    const m = await run(['audit', path.join(dir, '__cluster_metadata-0')]);
    expect(m.code).toBe(2);
    expect(m.stderr).toMatch(
      /no Kafka segments under .*passed over: .*__cluster_metadata-0 \(the KRaft metadata log/,
    );
  });

  it('a sample smaller than the data scales the estimate by the sample ratio', async () => {
    const dir = tmpDir();
    const entries = Array.from({ length: 10 }, (_, i) => legacyMessage(BigInt(i)));
    writeSegment(path.join(dir, 'u-0'), 0n, entries);
    writeSegment(path.join(dir, 'u-0'), 10n, [legacyMessage(10n)]);
    const r = await run(['audit', dir, '--codec', 'none', '--sample-bytes', '64', '--json']);
    const [p] = lines(r.stdout).map((l) => JSON.parse(l));
    // 32 bytes sampled per segment; every v0 message becomes a 74-byte batch.
    expect(p.sampledBytes).toBe(64);
    expect(p.estimatedBytesAfter).toBe(740);
    expect(statSync(path.join(dir, 'u-0', '00000000000000000000.log')).size).toBe(320);
  });

  it('usage errors exit 2', async () => {
    expect((await run(['audit'])).code).toBe(2);
    expect((await run(['audit', '/tmp', '--codec', 'brotli'])).code).toBe(2);
  });
});
