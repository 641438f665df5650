import { usageProblems } from '@seglift/config';
import { expect, it } from 'vitest';
import * as usage from './usage.js';

it('seglift-watcher --help documents every flag and exit code it has, and only real SEGLIFT_* variables', () => {
  expect(usageProblems(usage, ['roots', 'redis.url', 'queue.name', 'metrics.port', 'log.level'])).toEqual([]);
});
