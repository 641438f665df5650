/**
 * The swap marker and file identities: recovery renames and deletes only what the marker proves
 * ours, so a marker that is not exactly ours must read as none. The swap itself, crashed at every
 * step: crash.test.ts, leftovers.test.ts; its fsyncs: durability.test.ts.
 */
import { writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { SegmentFiles } from '../files/names.js';
import { tmpDir } from '../test-support/fixtures.js';
import { identityOf, readMarker, type SwapMarker, sameFile, swapInPlace } from './swap.js';

const file = { ino: 7, size: 100 };

function marker(prefix: string): SwapMarker {
  return {
    tool: 'seglift',
    version: 2,
    prefix,
    pid: 1,
    host: 'h',
    createdAt: '2026-01-01T00:00:00.000Z',
    mtimeMs: 0,
    source: { ino: 1, size: 2, mtimeMs: 3 },
    rewritten: { '.log': file, '.index': file, '.timeindex': file },
    extras: [],
  };
}

describe('readMarker', () => {
  it('reads a marker of this segment; anything else is no marker', async () => {
    const seg = new SegmentFiles(await tmpDir(), 5n);
    expect(await readMarker(seg)).toBeUndefined(); // absent
    const good = marker(seg.prefix);
    await writeFile(seg.marker, JSON.stringify(good));
    expect(await readMarker(seg)).toEqual(good);
    const bad: [string, unknown][] = [
      ['partial', JSON.stringify(good).slice(0, 40)],
      ['null', null],
      ['another tool', { ...good, tool: 'other' }],
      ['another version', { ...good, version: 1 }],
      ["another segment's", { ...good, prefix: new SegmentFiles(seg.dir, 6n).prefix }],
      ['extras not a list', { ...good, extras: '.txnindex' }],
      ['no rewritten files', { ...good, rewritten: undefined }],
      ['no .index among them', { ...good, rewritten: { '.log': file, '.timeindex': file } }],
      ...(['.log', '.index', '.timeindex'] as const).map((s): [string, unknown] => [
        `no inode for ${s}`,
        { ...good, rewritten: { ...good.rewritten, [s]: { size: 100, ino: String(file.ino) } } },
      ]),
    ];
    for (const [what, m] of bad) {
      await writeFile(seg.marker, typeof m === 'string' ? m : JSON.stringify(m));
      expect(await readMarker(seg), what).toBeUndefined();
    }
  });
});

describe('file identity', () => {
  it('the same file is the same inode and size; a missing file is nobody', async () => {
    expect(sameFile(undefined, file)).toBe(false);
    expect(sameFile({ ...file }, file)).toBe(true);
    expect(sameFile({ ...file, ino: 8 }, file)).toBe(false);
    expect(sameFile({ ...file, size: 101 }, file)).toBe(false);
    const dir = await tmpDir();
    const seg = new SegmentFiles(dir, 0n);
    expect(await identityOf(seg.log)).toBeUndefined();
    await writeFile(seg.log, Buffer.alloc(12));
    expect(await identityOf(seg.log)).toMatchObject({ size: 12, ino: expect.any(Number) });
  });
});

describe('swapInPlace', () => {
  it('a segment gone before its swap: a typed error naming it, no marker written', async () => {
    const seg = new SegmentFiles(await tmpDir(), 0n);
    await expect(swapInPlace(seg, 0)).rejects.toMatchObject({
      code: 'IO',
      file: seg.log,
      message: expect.stringMatching(/^the segment disappeared before its swap/),
    });
    expect(await identityOf(seg.marker)).toBeUndefined();
  });
});
