import { ENV_VARS, undocumentedFlags } from '@seglift/config';
import { describe, expect, it } from 'vitest';
import * as usage from './usage.js';

describe('seglift-watcher --help', () => {
  it('documents every flag it accepts', () => {
    expect(undocumentedFlags(usage.OPTIONS, usage.HELP)).toEqual([]);
  });

  it('lists every exit code it returns', () => {
    const codes = Object.entries(usage)
      .filter(([k]) => k.startsWith('EXIT_'))
      .map(([, v]) => v as number);
    expect(codes.length).toBeGreaterThanOrEqual(3);
    const section = usage.HELP.slice(usage.HELP.indexOf('Exit codes'));
    for (const c of codes) expect(section).toMatch(new RegExp(`^ {2}${c} `, 'm'));
  });

  it('names only environment variables that exist, and the settings it reads', () => {
    const known = new Set(ENV_VARS.map((v) => v.env));
    const named = usage.HELP.match(/SEGLIFT_[A-Z_]+/g) ?? [];
    expect(named.length).toBeGreaterThan(5);
    for (const v of named) expect(known.has(v) || v === 'SEGLIFT_CONFIG', v).toBe(true);
    for (const s of ['roots', 'redis.url', 'queue.name', 'metrics.port', 'log.level'])
      expect(usage.HELP).toContain(`  ${s}, `);
  });
});
