/**
 * The README's two set-up commands and CI's are one script (scripts/bootstrap.sh): CI only sets
 * CI=true, so no install is known to CI alone, and after a run the script would install nothing.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { needs, requirement } from '@seglift/testkit';
import { describe, expect, it } from 'vitest';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const bootstrap = path.join(repo, 'scripts/bootstrap.sh');
const bash = (...args: string[]) =>
  spawnSync('bash', args, { cwd: repo, encoding: 'utf8', timeout: 120_000 });

/** The commands of the README's set-up section, one per sh block. */
function readmeSetUp(): string[] {
  const readme = readFileSync(path.join(repo, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Set-up'), readme.indexOf('## Using it'));
  return [...section.matchAll(/```sh\n([^`]*)```/g)].map((m) => (m[1] ?? '').trim());
}

describe('scripts/bootstrap.sh and .ci/run', () => {
  it('the README has two set-up commands: the demo and every test', () => {
    expect(readmeSetUp()).toEqual([
      'bash scripts/bootstrap.sh && pnpm demo',
      'bash scripts/bootstrap.sh --tests && pnpm test',
    ]);
  });

  it(".ci/run runs the README's test command with CI=true and installs nothing itself", () => {
    const lines = readFileSync(path.join(repo, '.ci/run'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));
    expect(lines).toEqual([
      'set -euo pipefail',
      'cd "$(dirname "$0")/.."',
      'export CI=true',
      readmeSetUp()[1],
    ]);
  });

  it('every set-up script parses (bash -n)', () => {
    const scripts = ['scripts/bootstrap.sh', '.ci/run', 'scripts/link-bins.sh', 'scripts/k8s/setup.sh'];
    for (const s of scripts.filter((f) => existsSync(path.join(repo, f)))) {
      const r = bash('-n', s);
      expect({ s, status: r.status, stderr: r.stderr }).toEqual({ s, status: 0, stderr: '' });
    }
  });

  it('a wrong argument is a usage error (2); --help says what it installs', () => {
    const bad = bash(bootstrap, '--test');
    expect([bad.status, bad.stdout, bad.stderr]).toEqual([
      2,
      '',
      "bootstrap: unknown argument '--test' (use --tests, --check or --help)\n",
    ]);
    const help = bash(bootstrap, '--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Installs what seglift needs on a fresh machine/);
    expect(help.stdout).toContain('bash scripts/bootstrap.sh --tests --check');
  });

  // After `bash scripts/bootstrap.sh --tests` (as CI runs before the tests) a second run installs
  // nothing: its --check finds every install in place.
  const bootstrapped = requirement(
    'bash scripts/bootstrap.sh --tests',
    'every test needs what it installs (the README, "Set-up on a fresh machine")',
    () => {
      const r = bash(bootstrap, '--tests', '--check');
      return r.status === 0 ? undefined : r.stderr.trim().replaceAll('\n', '; ');
    },
  );
  needs(bootstrapped).it('run again, it has nothing to install', () => {
    const r = bash(bootstrap, '--tests', '--check');
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(r.stdout.trim().split('\n').at(-1)).toBe('bootstrap: nothing to install');
  });
});
