import { describe, expect, it } from 'vitest';
import { codecId, codecName, compress, decompress, defaultLevel, validateLevel } from './index.js';
import { CODEC_REGISTRY, CompressionType, codecById, codecByName } from './registry.js';

describe('the codec registry', () => {
  it('holds Kafka ids 0-4 at their index, and nothing for 5-7 (CompressionType.forId)', () => {
    expect(CODEC_REGISTRY.map((c) => [c.id, c.name])).toEqual([
      [0, 'none'],
      [1, 'gzip'],
      [2, 'snappy'],
      [3, 'lz4'],
      [4, 'zstd'],
    ]);
    expect(CompressionType).toEqual({ NONE: 0, GZIP: 1, SNAPPY: 2, LZ4: 3, ZSTD: 4 });
    for (const id of [5, 6, 7, -1, 1.5]) expect(codecById(id)).toBeUndefined();
    expect(codecByName('ZSTD')).toBeUndefined();
    expect(codecByName('lz4')?.id).toBe(3);
  });

  it('is what compress, decompress and the level rules read', () => {
    expect(CODEC_REGISTRY.map((c) => defaultLevel(c.id) ?? null)).toEqual([null, 6, null, 9, 3]);
    expect(CODEC_REGISTRY.filter((c) => c.minMagic > 0).map((c) => c.name)).toEqual(['zstd']);
    expect(validateLevel(1, -1)).toBe(-1);
    expect(() => validateLevel(3, -1)).toThrow('invalid lz4 level -1: expected 1..17');
    expect(() => compress(4, new Uint8Array(1), { magic: 1 })).toThrow(
      'zstd compression requires magic 2 (got magic 1)',
    );
    const data = new TextEncoder().encode('seglift '.repeat(64));
    for (const c of CODEC_REGISTRY) {
      expect(codecId(c.name)).toBe(c.id);
      expect(codecName(c.id)).toBe(c.name);
      const z = compress(c.id, data, { magic: 2 });
      expect(Buffer.from(decompress(c.id, z, { magic: 2, maxBytes: data.length }))).toEqual(
        Buffer.from(data),
      );
    }
  });
});
