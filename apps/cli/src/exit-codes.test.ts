/**
 * One rule for a path that does not exist, whatever the command: exit 2 (the command line is
 * wrong), `error: X: no such file or directory`, nothing read or written, and every --help says so.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from './cli.js';
import { lines, run } from './test-support/run.js';
import { tmpDir, v2Batch, writeSegment } from './test-support/segments.js';

const MISSING = '/nonexistent/orders-0/00000000000000000000.log';

describe('a path that does not exist: exit 2 for every command', () => {
  const cases: [string, string[]][] = [
    ['inspect', ['inspect', MISSING]],
    ['verify', ['verify', MISSING]],
    ['convert', ['convert', MISSING, '--codec', 'zstd', '--out', '/tmp/seglift-never-written']],
    ['migrate', ['migrate', path.dirname(MISSING)]],
    ['audit', ['audit', MISSING]],
  ];
  for (const [name, argv] of cases) {
    it(name, async () => {
      const missing = argv[1];
      expect(await run(argv)).toEqual({
        code: 2,
        stdout: '',
        stderr: `error: ${missing}: no such file or directory\nRun 'seglift ${name} --help' for usage.\n`,
      });
    });
  }

  it('with an existing segment named first, nothing is read or written before the refusal', async () => {
    const dir = tmpDir();
    const file = writeSegment(path.join(dir, 'orders-0'), 0n, [v2Batch(0n, 2)]);
    const out = path.join(dir, 'out');
    for (const argv of [
      ['inspect', file, MISSING],
      ['verify', file, MISSING],
      ['convert', file, MISSING, '--codec', 'zstd', '--out', out],
    ]) {
      const r = await run(argv);
      expect(r.code, argv[0]).toBe(2);
      expect(r.stdout, argv[0]).toBe('');
      expect(lines(r.stderr)[0]).toBe(`error: ${MISSING}: no such file or directory`);
    }
    expect(readdirSync(dir)).toEqual(['orders-0']);
  });

  it("every command's --help states the rule", async () => {
    for (const c of COMMANDS) {
      const r = await run([c.name, '--help']);
      expect(r.stdout, c.name).toContain(
        '  2  usage error or invalid configuration (every problem is listed), a path given that does not\n' +
          '     exist, or a path outside the configured roots: nothing was read or written\n',
      );
    }
    expect((await run(['--help'])).stdout).toContain('a path given that does not\n     exist');
  });
});
