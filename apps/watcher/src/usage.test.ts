import { conversionSettingsHelp, usageProblems } from '@seglift/config';
import { expect, it } from 'vitest';
import * as usage from './usage.js';

it('seglift-watcher --help documents every flag and exit code it has, every conversion setting it plans jobs with, and only real SEGLIFT_* variables', () => {
  const settings = conversionSettingsHelp().map(([path]) => path);
  expect(settings).toHaveLength(9);
  expect(
    usageProblems(usage, ['roots', 'redis.url', 'queue.name', 'metrics.port', 'log.level', ...settings]),
  ).toEqual([]);
});
