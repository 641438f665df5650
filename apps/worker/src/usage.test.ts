import { usageProblems } from '@seglift/config';
import { CONVERSION_SETTINGS } from '@seglift/segment';
import { expect, it } from 'vitest';
import * as usage from './usage.js';

it('seglift-worker --help documents every flag and exit code it has, and only real SEGLIFT_* variables', () => {
  expect(usageProblems(usage, ['roots', 'redis.url', 'queue.name', 'metrics.port', 'log.level'])).toEqual([]);
});

it("seglift-worker --help names every conversion setting as the job's, and describes only the limit it reads", () => {
  const jobs = usage.HELP.slice(usage.HELP.indexOf("How a segment is converted is the job's"));
  for (const s of CONVERSION_SETTINGS) expect(jobs.slice(0, jobs.indexOf('Options:'))).toContain(s.path);
  const described = CONVERSION_SETTINGS.filter((s) => usage.HELP.includes(`\n  ${s.path}, SEGLIFT_`));
  expect(described.map((s) => s.path)).toEqual(['limits.maxDecompressedBatchBytes']);
});
