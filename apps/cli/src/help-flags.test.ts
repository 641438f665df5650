import type { FlagOptions } from '@seglift/config';
import { describe, expect, it, vi } from 'vitest';

// Every flag a command accepts is described in its --help: the parser's own option list, read
// by wrapping `parse`, against the help text (not a list kept by hand in this test).
const seen = new Map<string, FlagOptions>();
vi.mock('./args.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('./args.js')>();
  return {
    ...original,
    parse: (command: string, argv: string[], options: FlagOptions) => {
      seen.set(command, options);
      return original.parse(command, argv, options);
    },
  };
});

const { COMMANDS } = await import('./cli.js');
const { run } = await import('./test-support/run.js');

describe('--help names every flag its command accepts', () => {
  for (const c of COMMANDS) {
    it(c.name, async () => {
      // A run that parses its flags and stops at a usage error (no paths, or an unknown flag).
      await run(c.name === 'config' ? ['config', 'print', '--not-a-flag'] : [c.name, '--not-a-flag']);
      const options = seen.get(c.name === 'config' ? 'config' : c.name);
      expect(options, `${c.name} never called parse`).toBeDefined();
      const { help } = await c.load();
      const missing = Object.keys(options ?? {}).filter((name) => !new RegExp(`--${name}\\b`).test(help));
      expect(missing).toEqual([]);
      expect(Object.keys(options ?? {}).length).toBeGreaterThan(0);
    });
  }
});

describe('--help names the SEGLIFT_* variable of every setting it reads (as the README says)', () => {
  const others: Record<string, string[]> = {
    convert: ['roots', 'backupDir'],
    migrate: [
      'roots',
      'backupDir',
      'stageDir',
      'worker.concurrency',
      'readiness.requireRolled',
      'readiness.quietMs',
    ],
    audit: ['backupDir', 'worker.concurrency', 'readiness.requireRolled', 'readiness.quietMs'],
  };
  for (const [name, paths] of Object.entries(others))
    it(name, async () => {
      const { ENV_VARS, conversionSettingsHelp } = await import('@seglift/config');
      const { help } = await (COMMANDS.find((c) => c.name === name) as (typeof COMMANDS)[number]).load();
      const missing = [...conversionSettingsHelp().map(([p]) => p), ...paths].filter(
        (p) => !help.includes(`  ${p}, ${ENV_VARS.find((v) => v.path === p)?.env}\n`),
      );
      expect(missing).toEqual([]);
    });
});
