import { describe, expect, it } from 'vitest';
import { PIPELINE_NODE } from '../node-flags.js';
import { pipelineThreadResourceLimits } from './pool.js';

describe('pipelineThreadResourceLimits', () => {
  it('a thread young generation of 24 MiB for one or two threads, 48 MiB shared above, at least 6', () => {
    const young = [1, 2, 3, 4, 6, 8, 16, 64].map(
      (n) => pipelineThreadResourceLimits(n).maxYoungGenerationSizeMb,
    );
    expect(young).toEqual([24, 24, 16, 12, 8, 6, 6, 6]);
  });

  it('the programs pass no --max-semi-space-size, which V8 would take over every thread limit', () => {
    expect(PIPELINE_NODE.flags.some((f) => f.startsWith('--max-semi-space-size'))).toBe(false);
  });
});
