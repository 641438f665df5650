import { PIPELINE_THREAD_RESOURCE_LIMITS } from '@seglift/segment';
import { describe, expect, it } from 'vitest';
import { THREAD_RESOURCE_LIMITS } from './run-thread.js';

describe('conversion threads', () => {
  it('get the V8 limits the segment pipeline sets for its own threads', () => {
    expect(THREAD_RESOURCE_LIMITS).toEqual(PIPELINE_THREAD_RESOURCE_LIMITS);
  });
});
