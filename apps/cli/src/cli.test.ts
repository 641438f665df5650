import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { built, needs } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from './cli.js';
import { lines, run } from './test-support/run.js';
import { tmpDir, v2Batch, writeSegment } from './test-support/segments.js';

const cliRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The `seglift` command: dist/main.js behind its launcher (node with the pipeline's flags). */
const bin = path.join(cliRoot, 'dist', 'seglift');
const version = JSON.parse(readFileSync(path.join(cliRoot, 'package.json'), 'utf8')).version as string;

describe('seglift (in-process)', () => {
  it('--version prints the package version', async () => {
    const r = await run(['--version']);
    expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('--help lists every command and the exit codes; no command is a usage error', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    for (const c of ['inspect', 'verify', 'convert', 'migrate', 'audit', 'config']) {
      expect(r.stdout).toMatch(new RegExp(`^  ${c} +\\S`, 'm'));
    }
    expect(r.stdout).toContain('  2  usage error');
    const none = await run([]);
    expect(none.code).toBe(2);
  });

  it('every command has --help with its usage and the exit codes', async () => {
    for (const c of COMMANDS) {
      const r = await run([c.name, '--help']);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^Usage: seglift ${c.name}`));
      expect(r.stdout).toContain('Exit codes:\n  0  ok\n  1  a segment failed');
    }
  });

  it('an unknown command is a usage error', async () => {
    const r = await run(['explode']);
    expect(r).toEqual({
      code: 2,
      stdout: '',
      stderr: "error: unknown command 'explode'\nRun 'seglift --help' for usage.\n",
    });
  });

  it('a mistyped command gets the nearest one', async () => {
    expect((await run(['migrat'])).stderr).toBe(
      "error: unknown command 'migrat'; did you mean migrate?\nRun 'seglift --help' for usage.\n",
    );
    expect((await run(['tier-prep', 'x'])).stderr).toMatch(
      /^error: unknown command 'tier-prep'; did you mean tier-prepare\?\n/,
    );
    expect((await run(['inpsect'])).code).toBe(2);
    expect((await run(['inpsect'])).stderr).toMatch(/did you mean inspect\?/);
  });
});

// These run the built binary (pnpm build first); skipped when dist/ is missing.
needs(built(bin)).describe('seglift (the built command, dist/seglift)', () => {
  it('prints its version and exits 0', () => {
    expect(execFileSync(bin, ['--version'], { encoding: 'utf8' })).toBe(`${version}\n`);
  });

  it('inspects a segment, and exits 1 on a corrupt one and 2 on a usage error', () => {
    const dir = tmpDir();
    const file = writeSegment(dir, 0n, [v2Batch(0n, 1)]);
    const ok = spawnSync(bin, ['inspect', file], { encoding: 'utf8' });
    expect(ok.status).toBe(0);
    expect(lines(ok.stdout)[2]).toMatch(/^baseOffset: 0 lastOffset: 0 count: 1 .* isvalid: true$/);
    const bad = Buffer.from(v2Batch(0n, 1));
    bad[bad.length - 1] ^= 1;
    const badFile = writeSegment(tmpDir(), 0n, [bad]);
    const verify = spawnSync(bin, ['verify', badFile], { encoding: 'utf8' });
    expect(verify.status).toBe(1);
    expect(verify.stderr).toMatch(/^error\[CRC_MISMATCH\]: .*position 17, offset 0\)$/m);
    const usage = spawnSync(bin, ['inspect', '--nope'], { encoding: 'utf8' });
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("Run 'seglift inspect --help' for usage.");
  });

  it('stops quietly (no EPIPE error) when the reader of stdout goes away', () => {
    const dir = tmpDir();
    const file = writeSegment(
      dir,
      0n,
      Array.from({ length: 2000 }, (_, i) => v2Batch(BigInt(i * 5), 5)),
    );
    const r = spawnSync(
      'sh',
      ['-c', `"${bin}" inspect --deep-iteration "${file}" | head -1; exit \${PIPESTATUS:-0}`],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stdout).toBe(`Dumping ${file}\n`);
    expect(r.stderr).toBe('');
  });
});
