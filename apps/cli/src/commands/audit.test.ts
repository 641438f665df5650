import { readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { CompressionType } from '@seglift/format';
import { describe, expect, it } from 'vitest';
import { runCli } from '../cli.js';
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
    const [p0, p1, choices, summary] = lines(r.stdout).map((l) => JSON.parse(l));
    expect(legacyMessage(0n).length).toBe(32);
    // The data a migrate would rewrite (the v0 message and the gzip batch; not the active
    // segments, not the v2/none batch) rewritten again with each choice: the chosen one first,
    // exactly the estimate's bytes.
    expect(choices.type).toBe('codecChoices');
    expect(choices.choices[0]).toMatchObject({
      codec: 'none',
      chosen: true,
      bytesIn: 32 + gzipSize,
      bytesAfter: 74 + 83,
    });
    expect(
      choices.choices.map((c: { codec: string; level?: number }) => `${c.codec}${c.level ?? ''}`),
    ).toEqual(['none', 'zstd1', 'zstd3', 'zstd9', 'lz49', 'snappy']);
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
      // What a prepare stages: the rolled segment's output with its indexes (20 bytes per 4096).
      stageBytes: Math.round((72 + 74) * (1 + 20 / 4096)),
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
    expect(p0.name).toBe('t-0');
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
      stageBytes: Math.round(146 * (1 + 20 / 4096)) + Math.round(83 * (1 + 20 / 4096)),
      // t-0's active segment holds a v0 message: migrate leaves it alone.
      legacyLeftAlone: 1,
      kafkaLeftovers: 0,
      errors: 0,
      readiness: 'not-ready',
      disk: [expect.objectContaining({ dir: expect.any(String), convertBytes: 104 + gzipSize })],
      space: [
        {
          dir: summary.disk[0].dir,
          holds: 'data',
          migrateBytes: summary.disk[0].peakExtraBytes,
          backupBytes: 0,
          needBytes: summary.disk[0].peakExtraBytes,
          freeBytes: expect.any(Number),
          enough: true,
        },
      ],
    });
    expect(p0.legacyLeftAlone).toEqual([path.join(dir, 't-0', '00000000000000000002.log')]);
  });

  it('--include-active counts the active segments; a partition dir can be audited alone', async () => {
    const dir = logDir();
    const r = await run(['audit', path.join(dir, 't-0'), '--codec', 'none', '--include-active', '--json']);
    const [p0] = lines(r.stdout).map((l) => JSON.parse(l));
    expect(p0.convertSegments).toBe(2);
    expect(p0.estimatedBytesAfter).toBe(72 + 74 + 74);
    // Prepare never stages the active segment.
    expect(p0.stageBytes).toBe(Math.round((72 + 74) * (1 + 20 / 4096)));
  });

  it('prints a table and a readiness summary', async () => {
    const dir = logDir();
    const r = await run(['audit', dir]);
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[0]).toMatch(/^PARTITION\s+SEGMENTS\s+BYTES\s+LEGACY SEGS/);
    expect(out[1]).toMatch(/^t-0\s+2\s+136 B\s+2\s+64 B\s+v0\/none=64 B v2\/none=72 B\s+1\s+104 B/);
    expect(out.some((l) => /^migrate --prepare needs about \d+ B in its stage dir/.test(l))).toBe(true);
    expect(out.slice(-4)).toEqual([
      "Kafka 4 readiness: NOT READY: 2 segments still hold magic 0/1 data; 'seglift migrate' upconverts 1 of them to v2 and leaves 1 alone (below).",
      '1 active segment holds magic 0/1 data; migrate leaves it alone (a running broker appends to it):',
      `  ${path.join(dir, 't-0', '00000000000000000002.log')}`,
      `To finish: with the broker stopped, 'seglift migrate ${dir} --include-active'; or, once the broker has rolled it (segment.ms, segment.bytes), 'seglift migrate' again (or --prepare/--commit).`,
    ]);
  });

  it('EST. AFTER is the size each partition keeps: all of it where nothing is rewritten', async () => {
    const dir = tmpDir();
    writeSegment(path.join(dir, 'done-0'), 0n, [v2Batch(0n, 3, CompressionType.ZSTD)]);
    writeSegment(path.join(dir, 'done-0'), 3n, [v2Batch(3n, 1, CompressionType.ZSTD)]);
    const legacy = writeSegment(path.join(dir, 'old-0'), 0n, [legacyMessage(0n)]);
    const active = writeSegment(path.join(dir, 'old-0'), 1n, [legacyMessage(1n)]);
    const r = await run(['audit', dir, '--codec', 'zstd']);
    const json = await run(['audit', dir, '--codec', 'zstd', '--json']);
    const [done, old] = lines(json.stdout).map((l) => JSON.parse(l));
    const doneBytes =
      v2Batch(0n, 3, CompressionType.ZSTD).length + v2Batch(3n, 1, CompressionType.ZSTD).length;
    expect([done.bytes, done.convertBytes, done.estimatedBytesAfter]).toEqual([doneBytes, 0, 0]);
    expect([old.convertBytes, statSync(legacy).size]).toEqual([32, 32]);
    const estAfter = (line: string | undefined) =>
      line
        ?.trim()
        .split(/\s{2,}/)
        .at(-1);
    const table = lines(r.stdout);
    expect(estAfter(table.find((l) => l.startsWith('done-0')))).toBe(`${doneBytes} B`);
    // old-0 keeps its active segment as it is and rewrites the closed one (32 B of v0).
    expect(estAfter(table.find((l) => l.startsWith('old-0')))).toBe(
      `${statSync(active).size + old.estimatedBytesAfter} B`,
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
    // Nothing to rewrite is said as such, not as "0 segments (0 B) to about 0 B".
    expect(g.stdout).toMatch(/^migrate --codec zstd: nothing to rewrite; active segments are left alone/m);
    expect(lines(g.stdout).at(-1)).toBe('Kafka 4 readiness: ready: 1 segment read, no magic 0/1 data found.');
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
    const objs1 = lines(one.stdout).map((l) => JSON.parse(l));
    const [p, summary] = [objs1[0], objs1.at(-1)];
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

  it('names partitions by their path under the directories audited: two clicks-0 stay apart', async () => {
    const root = tmpDir();
    for (const logDir of ['data1', 'data2']) {
      writeSegment(path.join(root, logDir, 'clicks-0'), 0n, [legacyMessage(0n)]);
      writeSegment(path.join(root, logDir, 'clicks-0'), 1n, [legacyMessage(1n)]);
    }
    const both = await run(['audit', root, '--json']);
    const names = lines(both.stdout)
      .map((l) => JSON.parse(l))
      .filter((o) => o.type === 'partition')
      .map((o) => o.name);
    expect(names.sort()).toEqual(['data1/clicks-0', 'data2/clicks-0']);
    const table = await run(['audit', path.join(root, 'data1'), path.join(root, 'data2')]);
    expect(lines(table.stdout).map((l) => l.split(' ')[0])).toEqual(
      expect.arrayContaining(['data1/clicks-0', 'data2/clicks-0']),
    );
    // One log dir: the partition's own name.
    const one = await run(['audit', path.join(root, 'data1')]);
    expect(lines(one.stdout)[1]).toMatch(/^clicks-0 /);
    expect(lines(one.stdout)).toContain(
      '1 partition, 2 segments, 64 B; 2 segments hold magic 0/1 data (64 B).',
    );
  });

  it('agrees with migrate about an empty directory: exit 2, no Kafka segments', async () => {
    const empty = tmpDir();
    const a = await run(['audit', empty]);
    const m = await run(['migrate', empty]);
    expect([a.code, m.code]).toEqual([2, 2]);
    expect(a.stderr.split('\n')[0]).toBe(`error: no Kafka segments under ${empty}`);
    expect(m.stderr.split('\n')[0]).toBe(`error: no Kafka segments under ${empty}`);
  });

  it("follows the archive switch (readiness.requireRolled false): an archive's segments count once quiet, older ones too", async () => {
    const dir = logDir();
    const config = path.join(tmpDir(), 'archive.yaml');
    writeFileSync(config, 'readiness:\n  requireRolled: false\n  quietMs: 600000\n');
    // Just written (a copy may still be writing any of them): left alone as migrate would leave them.
    const fresh = await run(['audit', dir, '--codec', 'none', '--config', config, '--json']);
    expect(lines(fresh.stdout).map((l) => JSON.parse(l))[0]).toMatchObject({
      convertSegments: 0,
      leftAloneSegments: 2,
    });
    // Unchanged for longer than quietMs: converted, as the watcher would queue them.
    const old = new Date(Date.now() - 3_600_000);
    for (const p of ['t-0', 't-1'])
      for (const s of ['00000000000000000000.log', '00000000000000000002.log'])
        utimesSync(path.join(dir, p, s), old, old);
    const quiet = await run(['audit', dir, '--codec', 'none', '--config', config]);
    expect(quiet.stdout).toContain(
      'migrate --codec none would rewrite 3 segments (239 B) to about 303 B; an archive: the newest segment of each partition once unchanged for 10 min. 1 segment is none v2 already.',
    );
    const env = await run(['audit', dir, '--codec', 'none', '--json'], {
      SEGLIFT_READINESS_REQUIRE_ROLLED: 'false',
    });
    expect(lines(env.stdout).map((l) => JSON.parse(l))[0].convertSegments).toBe(2);
  });

  it('says how much free space a migrate needs (the formula in the operator guide) and the backups', async () => {
    const dir = tmpDir();
    // u-0: three closed segments of 10, 20, 30 v0 messages (32 B each, 74 B each after as one batch
    // each, --grouping kafka: the growth the formula must cover) + an active one.
    for (const [base, n] of [
      [0, 10],
      [10, 20],
      [30, 30],
      [60, 1],
    ]) {
      const entries = Array.from({ length: n }, (_, i) => legacyMessage(BigInt(base + i)));
      writeSegment(path.join(dir, 'u-0'), BigInt(base), entries);
    }
    const args = [
      'audit',
      dir,
      '--codec',
      'none',
      '--grouping',
      'kafka',
      '--concurrency',
      '2',
      '--backup-dir',
      '/backup',
    ];
    const r = await run([...args, '--json']);
    const summary = lines(r.stdout)
      .map((l) => JSON.parse(l))
      .at(-1);
    const withIndexes = (n: number) => Math.round(n * (1 + 20 / 4096));
    expect(summary.disk).toEqual([
      {
        dir: path.join(dir, 'u-0'),
        partitions: 1,
        convertBytes: 60 * 32,
        estimatedBytesAfter: 60 * 74,
        largestSegmentAfter: withIndexes(30 * 74),
        concurrency: 2,
        // The two largest written beside their originals, + every byte the three grow by.
        inFlightBytes: withIndexes(30 * 74) + withIndexes(20 * 74),
        growthBytes: 60 * (74 - 32),
        peakExtraBytes: withIndexes(30 * 74) + withIndexes(20 * 74) + 60 * (74 - 32),
        backupBytes: withIndexes(60 * 32),
      },
    ]);
    const text = await run(args);
    expect(lines(text.stdout).find((l) => l.startsWith('disk'))).toBe(
      'disk: migrate needs 6.1 KiB free while it runs: 2 segments convert at once (--concurrency), each written beside its original (the 2 largest: 3.6 KiB), + 2.5 KiB by which segments grow. Afterwards the data is 2.5 KiB larger. Backups (/backup) take 1.9 KiB.',
    );
  });

  it('draws a progress bar on a terminal while it reads, and clears it before the report', async () => {
    const dir = logDir();
    const stderr = new PassThrough();
    const stdout = new PassThrough();
    let err = '';
    stderr.on('data', (b: Buffer) => {
      err += String(b);
    });
    stdout.resume();
    const code = await runCli(['audit', dir], {
      stdout,
      stderr,
      stderrIsTTY: true,
      env: {},
      cwd: process.cwd(),
    });
    expect(code).toBe(0);
    const frames = err.split('\r\x1b[2K').filter((f) => f !== '');
    expect(frames[0]).toBe('[------------------------]   0% 0 B/311 B 0/4 segments');
    // Redrawn at most every 100 ms: this small tree is read before a second frame is due.
    expect(frames.every((f) => /^\[[#-]{24}\] +\d+% \d+ B\/311 B \d\/4 segments$/.test(f))).toBe(true);
    expect(err.endsWith('\r\x1b[2K')).toBe(true);
  });

  it('usage errors exit 2', async () => {
    expect((await run(['audit'])).code).toBe(2);
    expect((await run(['audit', '/tmp', '--codec', 'brotli'])).code).toBe(2);
  });
});
