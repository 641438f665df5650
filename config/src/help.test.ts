import { describe, expect, it } from 'vitest';
import { describeSettings, metricsPortInUse, undocumentedFlags, usageProblems } from './help.js';

describe('--help helpers', () => {
  it('describeSettings names each setting with its variable, and refuses a setting no variable sets', () => {
    const text = describeSettings([['metrics.port', 'where /metrics is served']]);
    expect(text).toMatch(/^ {2}metrics\.port, SEGLIFT_METRICS_PORT\n {6}where \/metrics is served$/m);
    expect(text).toContain('$SEGLIFT_CONFIG');
    expect(() => describeSettings([['metrics.prot', 'x']])).toThrow(
      /no environment variable sets metrics\.prot/,
    );
  });

  it('undocumentedFlags lists the flags (long and short) a help text leaves out', () => {
    const options = {
      config: { type: 'string', short: 'c' },
      once: { type: 'boolean' },
      'redis-url': { type: 'string' },
    } as const;
    expect(undocumentedFlags(options, '  -c, --config FILE\n  --once [--wait]\n  --redis-url URL\n')).toEqual(
      [],
    );
    // --once-more does not document --once; a bare 'c' is no -c.
    expect(undocumentedFlags(options, '  c --config FILE\n  --once-more\n')).toEqual([
      '-c',
      '--once',
      '--redis-url',
    ]);
  });

  it('a metrics port in use is said with every way to change it', () => {
    const m = metricsPortInUse('seglift-worker', '0.0.0.0', 9464);
    expect(m).toContain('0.0.0.0:9464 is in use');
    for (const way of ['--metrics-port', 'metrics.port', 'SEGLIFT_METRICS_PORT']) expect(m).toContain(way);
  });
});

describe('usageProblems', () => {
  it('names an undocumented flag, an unlisted exit code, an unknown variable and a missing setting', () => {
    const usage = {
      OPTIONS: { root: { type: 'string' }, once: { type: 'boolean' } },
      HELP: 'Usage: x --root DIR\n\nSettings:\n  roots, SEGLIFT_ROOTS, SEGLIFT_ROOOTS\n\nExit codes:\n  0 ok\n  2 usage\n',
      EXIT_OK: 0,
      EXIT_USAGE: 2,
      EXIT_RUNTIME: 3,
    } as const;
    expect(usageProblems(usage, ['roots', 'redis.url'])).toEqual([
      'undocumented flag --once',
      'exit code 3 not listed',
      'no such variable SEGLIFT_ROOOTS',
      'setting redis.url not described',
    ]);
  });
});
