import { describe, expect, it } from 'vitest';
import { stageOptionsKey } from '../stage/stage.js';
import { CONVERSION_SETTINGS } from './conversion-settings.js';

describe('conversion settings, declared once', () => {
  it('each has one name, one env var and one flag', () => {
    for (const key of ['name', 'path', 'env', 'flag'] as const) {
      const all = CONVERSION_SETTINGS.map((s) => s[key]);
      expect(new Set(all).size).toBe(all.length);
    }
    const flags = CONVERSION_SETTINGS.flatMap((s) => [s.flag, ...('aliases' in s ? s.aliases : [])]);
    expect(new Set(flags).size).toBe(flags.length);
  });

  it('stageOptionsKey is the bytes-changing settings, as stage records have always spelled them', () => {
    const settings = Object.fromEntries(CONVERSION_SETTINGS.map((s) => [s.name, s.default]));
    // A stage record is compared as JSON text: the same settings must give the same text as before.
    expect(JSON.stringify(stageOptionsKey({ ...settings, codec: 'zstd' }))).toBe(
      '{"codec":"zstd","level":null,"grouping":"coalesce","coalesceBytes":1048576,"maxBatchBytes":1048588,' +
        '"indexIntervalBytes":4096,"force":false,"onlyIfSmaller":false}',
    );
    // coalesceBytes is read by coalesce grouping only.
    expect(
      stageOptionsKey({ codec: 'gzip', level: 9, grouping: 'kafka', coalesceBytes: 5, force: true }),
    ).toEqual({
      codec: 'gzip',
      level: 9,
      grouping: 'kafka',
      coalesceBytes: null,
      maxBatchBytes: 1048588,
      indexIntervalBytes: 4096,
      force: true,
      onlyIfSmaller: false,
    });
    // segmentIndexBytes and maxDecompressedBatchBytes never change a byte written.
    expect(CONVERSION_SETTINGS.filter((s) => !s.changesBytes).map((s) => s.name)).toEqual([
      'segmentIndexBytes',
      'maxDecompressedBatchBytes',
    ]);
  });
});
