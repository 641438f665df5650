import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { lines, run } from '../test-support/run.js';
import { encodeLegacyEntry, tmpDir, utf8, v2Batch, writeSegment } from '../test-support/segments.js';

function partition(): string {
  const dir = tmpDir();
  const p = path.join(dir, 'orders-0');
  writeSegment(p, 0n, [v2Batch(0n, 3), v2Batch(3n, 2)]);
  writeSegment(p, 5n, [encodeLegacyEntry(5n, { magic: 1, timestamp: 9n, key: null, value: utf8('v') })]);
  return dir;
}

describe('seglift verify', () => {
  it('takes directories as migrate does, and counts in words', async () => {
    const dir = partition();
    const r = await run(['verify', dir]);
    expect(r.code).toBe(0);
    const size = (f: string) => readFileSync(path.join(dir, 'orders-0', f)).length;
    expect(lines(r.stdout)).toEqual([
      `OK ${path.join(dir, 'orders-0', '00000000000000000000.log')}: 2 batches, 5 records, ${size('00000000000000000000.log')} bytes, offsets 0..4, no .index, no .timeindex`,
      `OK ${path.join(dir, 'orders-0', '00000000000000000005.log')}: 1 batch, 1 record, ${size('00000000000000000005.log')} bytes, offsets 5..5, no .index, no .timeindex`,
      '2 of 2 segments OK',
    ]);
  });

  it('counts index entries in words too: 1 entry, 2 entries', async () => {
    const dir = tmpDir();
    const src = writeSegment(path.join(dir, 'in'), 0n, [v2Batch(0n, 1), v2Batch(1n, 1), v2Batch(2n, 1)]);
    for (const [n, words] of [
      [2, '1 entry'],
      [1, '2 entries'],
    ] as const) {
      const out = path.join(dir, `out-${n}`);
      // An .index entry every N bytes: the batches are ~70 bytes, so 1 per 2 batches or per batch.
      const interval = n === 2 ? 100 : 1;
      const c = await run([
        'convert',
        src,
        '--out',
        out,
        '--codec',
        'none',
        '--index-interval-bytes',
        String(interval),
      ]);
      expect(c.code, c.stderr).toBe(0);
      const r = await run(['verify', out]);
      expect(r.stdout).toMatch(
        new RegExp(`: 3 batches, 3 records, .*, \\.index ${words}, \\.timeindex ${words}$`, 'm'),
      );
    }
  });

  it('names the error class: a missing path is a usage error, an index is not a segment', async () => {
    const dir = partition();
    const missing = await run(['verify', path.join(dir, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/nope: no such file or directory/);
    const index = path.join(dir, 'orders-0', '00000000000000000000.index');
    writeFileSync(index, Buffer.alloc(16, 1));
    const r = await run(['verify', index]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/^FAILED .*\.index: not a log segment: Kafka names segments/);
    expect(r.stderr).toMatch(/^error\[NOT_A_SEGMENT\]: not a log segment/);
    const empty = tmpDir();
    mkdirSync(path.join(empty, 'x'));
    const none = await run(['verify', empty]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no Kafka segments under/);
  });

  it('a truncated segment: what was read before the error, and each position and offset once', async () => {
    const dir = partition();
    const log = path.join(dir, 'orders-0', '00000000000000000000.log');
    const bytes = readFileSync(log);
    writeFileSync(log, bytes.subarray(0, bytes.length - 5));
    const first = v2Batch(0n, 3).length;
    const second = v2Batch(3n, 2).length;
    const r = await run(['verify', log]);
    expect(r.code).toBe(1);
    const out = lines(r.stdout);
    expect(out[0]).toBe(
      `FAILED ${log}: before the error: 1 batch, 3 records, ${first} bytes, offsets 0..2, no .index, no .timeindex`,
    );
    expect(out[1]).toBe(
      `  structure: partial entry at the end of the file: declares ${second} bytes, ${second - 5} present (position ${first}, offset 3)`,
    );
    expect(r.stderr.match(new RegExp(`position ${first}`, 'g'))).toHaveLength(1);
  });
});
