import { conversionSettings, loadConfig } from '@seglift/config';
import { describe, expect, it } from 'vitest';
import { jobData, SegmentJobSchema } from './job.js';

/** `path: message` of each issue, as the worker reports a refused payload (processor.ts). */
function problems(data: unknown): string[] {
  const r = SegmentJobSchema.safeParse(data);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
}

describe('SegmentJobSchema', () => {
  const settings = conversionSettings(loadConfig({ env: {}, flags: { codec: 'lz4', level: 9 } }));

  it('takes a payload as the watcher writes it, its settings as JSON keeps them', () => {
    const job = {
      path: '/k/t-0/00000000000000000000.log',
      size: 10,
      mtimeMs: 1.5,
      ino: '12',
      ctimeNs: '34',
      settings,
    };
    const sent = JSON.parse(JSON.stringify(jobData(job)));
    expect(sent.settings).toEqual({
      codec: 'lz4',
      level: 9,
      grouping: 'coalesce',
      coalesceBytes: 1048576,
      maxBatchBytes: 1048588,
      indexIntervalBytes: 4096,
      onlyIfSmaller: false,
      segmentIndexBytes: 10485760,
      maxDecompressedBatchBytes: 67108864,
    });
    expect(SegmentJobSchema.parse(sent)).toEqual(job);
    expect(problems({ ...job, mode: 'prepare', stageDir: '/stage', logDir: '/k' })).toEqual([]);
    // No level: the codec's own (JSON drops an undefined field).
    const { level: _, ...noLevel } = settings;
    expect(SegmentJobSchema.parse({ ...job, settings: noLevel }).settings).toEqual(noLevel);
  });

  it('refuses settings as the config does, and one this version does not declare', () => {
    const job = { path: '/k/t-0/00000000000000000000.log', size: 10, mtimeMs: 1.5 };
    expect(
      problems({ ...job, settings: { ...settings, codec: 'brotli', coalesceBytes: 0, later: true } }),
    ).toEqual([
      'settings.codec: Invalid option: expected one of "none"|"gzip"|"snappy"|"lz4"|"zstd"',
      'settings.coalesceBytes: Too small: expected number to be >=1',
      'settings: Unrecognized key: "later"',
    ]);
  });

  it("refuses a bad one in zod's English messages (zod/mini sets none itself)", () => {
    expect(problems({ path: 'rel.txt', size: -1, mtimeMs: 'x', ino: 'z', mode: 'copy', extra: 1 })).toEqual([
      'path: must be an absolute path',
      'path: must name a .log file',
      'size: Too small: expected number to be >=0',
      'mtimeMs: Invalid input: expected number, received string',
      'ino: must be a decimal integer',
      'mode: Invalid option: expected one of "convert"|"prepare"',
      '(root): Unrecognized key: "extra"',
    ]);
    expect(problems({ path: '/a/0.log', size: 1, mtimeMs: 1, mode: 'prepare' })).toEqual([
      "stageDir: a 'prepare' job needs stageDir",
    ]);
    expect(problems(null)).toEqual(['(root): Invalid input: expected object, received null']);
  });
});
