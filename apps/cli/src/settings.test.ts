import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { convertSegment } from '@seglift/segment';
import { describe, expect, it } from 'vitest';
import { lines, run } from './test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, v2Batch, writeSegment } from './test-support/segments.js';

/** n magic 0 messages, offsets from..from+n-1: key `kNN` (3 bytes), a 100-byte value. */
function legacySegment(dir: string, n: number, base = 0n): string {
  const entries = Array.from({ length: n }, (_, i) =>
    encodeLegacyEntry(base + BigInt(i), {
      magic: 0,
      key: utf8(`k${String(i).padStart(2, '0')}`),
      value: utf8('abcdefghij'.repeat(10)),
    }),
  );
  return writeSegment(dir, base, entries);
}

async function convertJson(args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = await run(['convert', ...args, '--json'], env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const [segment, summary] = lines(r.stdout).map((l) => JSON.parse(l));
  return { segment, summary };
}

async function jsonObjects(args: string[]): Promise<Record<string, unknown>[]> {
  const r = await run(args);
  expect(r.code).toBe(0);
  return lines(r.stdout).map((l) => JSON.parse(l));
}

describe('convert/migrate/audit settings from @seglift/config', () => {
  it('SEGLIFT_CODEC sets the codec when --codec is absent, and the summary names it', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 10);
    const out = path.join(dir, 'out');
    const { segment, summary } = await convertJson([src, '--out', out], { SEGLIFT_CODEC: 'lz4' });
    // The default grouping coalesces the 10 small messages into one batch.
    expect(segment.codecOut).toEqual({ 'v2/lz4': 1 });
    expect(summary.settings).toEqual({
      codec: 'lz4',
      level: null,
      grouping: 'coalesce',
      coalesceBytes: 1048576,
      maxBatchBytes: 1048588,
      onlyIfSmaller: false,
      indexIntervalBytes: 4096,
      segmentIndexBytes: 10485760,
      maxDecompressedBatchBytes: 64 * 1024 * 1024,
    });
    // The human summary says which codec was used and where it came from.
    const r = await run(['convert', src, '--out', path.join(dir, 'out2')], { SEGLIFT_CODEC: 'lz4' });
    expect(r.code).toBe(0);
    expect(lines(r.stdout).at(-1)).toBe(
      'settings: codec lz4 (env SEGLIFT_CODEC), level codec default (default), grouping coalesce (default)',
    );
    // A flag beats the environment.
    const f = await convertJson([src, '--out', path.join(dir, 'out3'), '--codec', 'gzip'], {
      SEGLIFT_CODEC: 'lz4',
    });
    expect(f.segment.codecOut).toEqual({ 'v2/gzip': 1 });
  });

  it('takes flags as operators type them: --codec ZSTD, --level -5; a typo gets the nearest flag', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 3);
    const { segment, summary } = await convertJson([
      src,
      '--out',
      path.join(dir, 'o1'),
      '--codec',
      'ZSTD',
      '--level',
      '-5',
    ]);
    expect(segment.codecOut).toEqual({ 'v2/zstd': 1 }); // three legacy messages, coalesced
    expect(summary.settings).toMatchObject({ codec: 'zstd', level: -5 });
    const typo = await run(['convert', src, '--out', path.join(dir, 'o2'), '--levle', '3']);
    expect(typo).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "error: unknown option '--levle'; did you mean --level?\nRun 'seglift convert --help' for usage.\n",
    });
    const missing = await run(['migrate', dir, '--codec']);
    expect(missing.stderr.split('\n')[0]).toBe('error: option --codec needs a value');
  });

  it('warns about a misspelt SEGLIFT_* variable (it would be ignored without a word) and runs', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 3);
    const r = await run(['convert', src, '--out', path.join(dir, 'o')], { SEGLIFT_CODECC: 'lz4' });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(
      "warning: SEGLIFT_CODECC is not a seglift setting and is ignored; did you mean SEGLIFT_CODEC? ('seglift config print --help' lists the variables)\n",
    );
    expect(lines(r.stdout).at(-1)).toMatch(/^settings: codec zstd \(default\)/);
    const print = await run(['config', 'print'], { SEGLIFT_LEVL: '3' });
    expect(print.stderr).toContain(
      'SEGLIFT_LEVL is not a seglift setting and is ignored; did you mean SEGLIFT_LEVEL?',
    );
    const help = await run(['config', 'print', '--help']);
    expect(help.stdout).toMatch(/^ {2}SEGLIFT_WORKER_CONCURRENCY +worker\.concurrency$/m);
  });

  it('with no codec anywhere the schema default zstd applies and is named', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 3);
    const r = await run(['convert', src, '--out', path.join(dir, 'out')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(lines(r.stdout).at(-1)).toBe(
      'settings: codec zstd (default), level codec default (default), grouping coalesce (default)',
    );
  });

  it('a config file sets codec and level; --level overrides the file; output matches convertSegment', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 40);
    const file = path.join(dir, 'seglift.yaml');
    writeFileSync(file, 'codec: gzip\nlevel: 1\n');
    const fromFile = await convertJson([src, '--out', path.join(dir, 'a'), '--config', file]);
    expect(fromFile.summary.settings).toMatchObject({ codec: 'gzip', level: 1 });
    const fromFlag = await convertJson([src, '--out', path.join(dir, 'b'), '--config', file, '--level', '9']);
    expect(fromFlag.summary.settings).toMatchObject({ codec: 'gzip', level: 9 });
    // $SEGLIFT_CONFIG names the file when --config is absent; env beats the file.
    const viaEnv = await convertJson([src, '--out', path.join(dir, 'c')], {
      SEGLIFT_CONFIG: file,
      SEGLIFT_LEVEL: '9',
    });
    expect(viaEnv.summary.settings).toMatchObject({ codec: 'gzip', level: 9 });
    // The levels reached the compressor: the bytes are convertSegment's with those options.
    for (const [outDir, level] of [
      ['a', 1],
      ['b', 9],
    ] as const) {
      const ref = path.join(dir, `ref-${outDir}`);
      await convertSegment(src, { codec: 'gzip', level }, { kind: 'outDir', dir: ref });
      const name = path.basename(src);
      expect(readFileSync(path.join(dir, outDir, name)).equals(readFileSync(path.join(ref, name)))).toBe(
        true,
      );
    }
    expect(readFileSync(path.join(dir, 'c', path.basename(src)))).toEqual(
      readFileSync(path.join(dir, 'b', path.basename(src))),
    );
    // The human line names each source.
    const r = await run(['convert', src, '--out', path.join(dir, 'd'), '--config', file, '--level', '9']);
    expect(lines(r.stdout).at(-1)).toBe(
      `settings: codec gzip (file ${file}), level 9 (flag), grouping coalesce (default)`,
    );
  });

  it('invalid settings exit 2 listing every problem with its source, and write nothing', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 3);
    const out = path.join(dir, 'out');
    const r = await run(['convert', src, '--out', out, '--grouping', 'tight'], {
      SEGLIFT_LEVEL: 'high',
      SEGLIFT_CODEC: 'brotli',
    });
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    const problems = lines(r.stderr).filter((l) => l.startsWith('  - '));
    expect(r.stderr).toMatch(/^error\[INVALID_ARGUMENT\]: invalid configuration:\n/);
    expect(problems).toHaveLength(3);
    expect(
      problems.find((l) => l.startsWith('  - codec = "brotli" (from env SEGLIFT_CODEC): ')),
    ).toBeDefined();
    expect(problems.find((l) => l.startsWith('  - level = "high" (from env SEGLIFT_LEVEL): '))).toBeDefined();
    expect(problems.find((l) => l.startsWith('  - grouping = "tight" (from flag): '))).toBeDefined();
    expect(existsSync(out)).toBe(false);
    // The codec/level cross-check applies to flags too.
    const lvl = await run(['convert', src, '--out', out, '--codec', 'gzip', '--level', '12']);
    expect(lvl.code).toBe(2);
    expect(lvl.stderr).toContain('  - level = 12 (from flag): invalid gzip level 12: expected 1..9');
    // migrate and audit load the same way.
    const m = await run(['migrate', dir], { SEGLIFT_LEVEL: 'high' });
    expect(m.code).toBe(2);
    expect(m.stderr).toContain('  - level = "high" (from env SEGLIFT_LEVEL): ');
    const a = await run(['audit', dir], { SEGLIFT_LEVEL: 'high' });
    expect(a.code).toBe(2);
    expect(a.stderr).toContain('  - level = "high" (from env SEGLIFT_LEVEL): ');
  });

  it('--index-interval-bytes sets where the rebuilt .index has entries (LogSegment.recover, docs/kafka-format.md §6.4)', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 60);
    for (const [interval, flagValue] of [
      [4096, undefined],
      [1024, '1k'],
      [300, '300'],
    ] as const) {
      const out = path.join(dir, `out-${interval}`);
      const args = [src, '--codec', 'none', '--grouping', 'kafka', '--out', out];
      if (flagValue !== undefined) args.push('--index-interval-bytes', flagValue);
      const { summary } = await convertJson(args);
      expect(summary.settings.indexIntervalBytes).toBe(interval);
      const log = path.join(out, path.basename(src));
      const batches = (await jsonObjects(['inspect', log, '--json'])).filter((o) => o.type === 'batch');
      expect(batches).toHaveLength(60);
      // Recovery's rule: an entry (lastOffset, position) for each batch that starts more than
      // `interval` bytes after the last indexed position (which starts at 0).
      const expected: { offset: string; position: number }[] = [];
      let lastIndexed = 0;
      for (const b of batches) {
        const position = b.position as number;
        if (position - lastIndexed > interval) {
          expected.push({ offset: b.lastOffset as string, position });
          lastIndexed = position;
        }
      }
      const index = (await jsonObjects(['inspect', log.replace(/\.log$/, '.index'), '--json']))
        .filter((o) => o.type === 'offsetIndexEntry')
        .map((o) => ({ offset: o.offset, position: o.position }));
      expect(index).toEqual(expected);
      // 60 batches of equal size s: an entry every floor(interval / s) + 1 batches.
      const size = batches[0].size as number;
      expect(index).toHaveLength(Math.floor(59 / (Math.floor(interval / size) + 1)));
      expect(index.length).toBeGreaterThan(0);
    }
  });

  it("--segment-index-bytes (and SEGLIFT_SEGMENT_INDEX_BYTES) is the topic's segment.index.bytes the active segment's indexes must fit", async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 60);
    const args = [
      'convert',
      src,
      '--in-place',
      '--codec',
      'none',
      '--grouping',
      'kafka',
      '--index-interval-bytes',
      '1',
    ];
    // 59 offset index entries (472 bytes) do not fit 256 bytes: refused, the file untouched.
    const before = readFileSync(src);
    const refused = await run([...args, '--segment-index-bytes', '256']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/segment\.index\.bytes \(256\).*--segment-index-bytes/);
    expect(readFileSync(src).equals(before)).toBe(true);
    const ok = await run([...args, '--json'], { SEGLIFT_SEGMENT_INDEX_BYTES: '1024' });
    expect(ok.code, ok.stderr).toBe(0);
    const summary = lines(ok.stdout)
      .map((l) => JSON.parse(l))
      .at(-1);
    expect(summary.settings.segmentIndexBytes).toBe(1024);
  });

  it('--coalesce-bytes (and SEGLIFT_COALESCE_BYTES) set how many records a coalesced batch takes', async () => {
    const dir = tmpDir();
    const src = legacySegment(dir, 20);
    const batchesOut = async (args: string[], env: NodeJS.ProcessEnv = {}) => {
      const out = path.join(tmpDir(), 'out');
      const { segment } = await convertJson([src, '--codec', 'none', '--out', out, ...args], env);
      expect(segment.recordsOut).toBe(20);
      return segment.batchesOut;
    };
    // Each record is 112 bytes in a v2 batch (attributes 1, timestampDelta 1, offsetDelta 1,
    // key length 1 + 3, value length 2 + 100, headers 1, length varint 2) and a batch's header
    // is 61 bytes: 61 + 5 * 112 = 621 bytes hold exactly 5 records.
    expect(await batchesOut(['--grouping', 'kafka'])).toBe(20);
    expect(await batchesOut([])).toBe(1);
    expect(await batchesOut(['--grouping', 'coalesce'])).toBe(1);
    expect(await batchesOut(['--grouping', 'coalesce', '--coalesce-bytes', '621'])).toBe(4);
    expect(await batchesOut(['--grouping', 'coalesce', '--coalesce-bytes', '620'])).toBe(5);
    expect(await batchesOut(['--grouping', 'coalesce'], { SEGLIFT_COALESCE_BYTES: '621' })).toBe(4);
    expect(
      await batchesOut(['--grouping', 'coalesce', '--coalesce-bytes', '1k'], {
        SEGLIFT_COALESCE_BYTES: '621',
      }),
    ).toBe(3);
  });

  it('--max-decompressed-batch-bytes reaches the reader: a larger batch fails', async () => {
    const dir = tmpDir();
    const src = writeSegment(dir, 0n, [v2Batch(0n, 50, 2 /* snappy */)]);
    const ok = await run(['convert', src, '--codec', 'zstd', '--out', path.join(dir, 'a')]);
    expect(ok.code).toBe(0);
    const r = await run([
      'convert',
      src,
      '--codec',
      'zstd',
      '--out',
      path.join(dir, 'b'),
      '--max-decompressed-batch-bytes',
      '100',
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error\[DECOMPRESSION_LIMIT\]: .*limit of 100 bytes \(file .*, position 61, offset 0\)\n$/,
    );
  });

  it('migrate takes codec, index interval and concurrency from the environment; flags win', async () => {
    const dir = tmpDir();
    const part = path.join(dir, 'orders-0');
    legacySegment(part, 60, 0n);
    legacySegment(part, 3, 60n);
    const r = await run(['migrate', dir, '--json', '--index-interval-bytes', '1k'], {
      SEGLIFT_GROUPING: 'kafka',
      SEGLIFT_CODEC: 'gzip',
      SEGLIFT_INDEX_INTERVAL_BYTES: '300',
      SEGLIFT_WORKER_CONCURRENCY: '1',
    });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const objs = lines(r.stdout).map((l) => JSON.parse(l));
    const converted = objs.find((o) => o.path === path.join(part, '00000000000000000000.log'));
    expect(converted).toMatchObject({ type: 'segment', result: 'converted', codecOut: { 'v2/gzip': 60 } });
    expect(objs.at(-1)).toMatchObject({
      type: 'summary',
      converted: 1,
      settings: { codec: 'gzip', indexIntervalBytes: 1024 },
    });
    // The .index is convert's with the same settings.
    const ref = path.join(tmpDir(), 'ref');
    const orig = legacySegment(tmpDir(), 60, 0n);
    await convertSegment(
      orig,
      { codec: 'gzip', grouping: 'kafka', indexIntervalBytes: 1024 },
      { kind: 'outDir', dir: ref },
    );
    const name = '00000000000000000000.index';
    expect(readFileSync(path.join(part, name)).length).toBeGreaterThan(0);
    expect(readFileSync(path.join(part, name)).equals(readFileSync(path.join(ref, name)))).toBe(true);
  });

  it('audit and config print use the same effective settings', async () => {
    const dir = tmpDir();
    legacySegment(path.join(dir, 't-0'), 5);
    const file = path.join(dir, 'seglift.json');
    writeFileSync(file, JSON.stringify({ codec: 'gzip', level: 4 }));
    const env = { SEGLIFT_CONFIG: file, SEGLIFT_CODEC: 'lz4' };
    const printed = JSON.parse((await run(['config', 'print', '--json'], env)).stdout);
    expect([printed.codec, printed.level]).toEqual(['lz4', 4]);
    const a = await run(['audit', dir, '--json'], env);
    expect(a.code).toBe(0);
    expect(JSON.parse(lines(a.stdout).at(-1) ?? '')).toMatchObject({ type: 'summary', codec: 'lz4' });
    const c = await convertJson([path.join(dir, 't-0', '00000000000000000000.log'), '--out', tmpDir()], env);
    expect(c.summary.settings).toMatchObject({ codec: printed.codec, level: printed.level });
  });

  it('one name for the decompression limit: --max-decompressed-batch-bytes everywhere; --max-decompressed-bytes still works, with a warning', async () => {
    const dir = tmpDir();
    const src = writeSegment(dir, 0n, [v2Batch(0n, 50, 2 /* snappy */)]);
    const limit = /error\[DECOMPRESSION_LIMIT\]: .*limit of 100 bytes \(file .*, position 61, offset 0\)\n$/;
    const warning =
      'warning: --max-decompressed-bytes is an old name of --max-decompressed-batch-bytes; use --max-decompressed-batch-bytes\n';
    // convert, under verify's old name.
    const c = await run(['convert', src, '--out', path.join(dir, 'a'), '--max-decompressed-bytes', '100']);
    expect(c.code).toBe(1);
    expect(c.stderr.startsWith(warning)).toBe(true);
    expect(c.stderr).toMatch(limit);
    // verify, under the one name (no warning) and under its old one (a warning).
    const v = await run(['verify', src, '--max-decompressed-batch-bytes', '100']);
    expect(v.code).toBe(1);
    expect(v.stdout).toContain('limit of 100 bytes');
    expect(v.stderr).not.toContain('warning');
    const old = await run(['verify', src, '--max-decompressed-bytes', '100']);
    expect(old.code).toBe(1);
    expect(old.stdout).toBe(v.stdout);
    expect(old.stderr).toBe(warning + v.stderr);
    expect((await run(['verify', src, '--max-decompressed-bytes', '1m'])).code).toBe(0);
  });

  it('audit estimates a batch over --max-batch-bytes as migrate writes it: kept as it is', async () => {
    const dir = tmpDir();
    const part = path.join(dir, 't-0');
    const gzip = v2Batch(0n, 200, 1 /* gzip */);
    writeSegment(part, 0n, [gzip]);
    writeSegment(part, 200n, [v2Batch(200n, 1)]);
    const none = v2Batch(0n, 200).length;
    expect(gzip.length).toBeLessThan(2000);
    expect(none).toBeGreaterThan(2000);
    const flags = ['--codec', 'none', '--max-batch-bytes', '2000'];
    const a = await jsonObjects(['audit', dir, ...flags, '--json']);
    expect(a[0]).toMatchObject({
      type: 'partition',
      convertBytes: gzip.length,
      estimatedBytesAfter: gzip.length,
    });
    // Without the limit the recompression is what migrate writes.
    const b = await jsonObjects(['audit', dir, '--codec', 'none', '--json']);
    expect(b[0]).toMatchObject({ estimatedBytesAfter: none });
    const m = await run(['migrate', dir, ...flags]);
    expect(m.code).toBe(0);
    expect(readFileSync(path.join(part, '00000000000000000000.log')).length).toBe(gzip.length);
  });
});
