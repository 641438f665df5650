import { describe, expect, it } from 'vitest';
import { SegmentJobSchema } from './job.js';

/** `path: message` of each issue, as the worker reports a refused payload (processor.ts). */
function problems(data: unknown): string[] {
  const r = SegmentJobSchema.safeParse(data);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
}

describe('SegmentJobSchema', () => {
  it('takes a payload as the watcher writes it', () => {
    const job = { path: '/k/t-0/00000000000000000000.log', size: 10, mtimeMs: 1.5, ino: '12', ctimeNs: '34' };
    expect(SegmentJobSchema.parse(job)).toEqual(job);
    expect(problems({ ...job, mode: 'prepare', stageDir: '/stage', logDir: '/k' })).toEqual([]);
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
