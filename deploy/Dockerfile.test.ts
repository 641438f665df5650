import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PIPELINE_NODE } from '@seglift/segment';
import { afterAll, describe, expect, it } from 'vitest';
import { launcherScript } from '../scripts/stamp-bin.mjs';

// The image cannot be built here (no Docker daemon); these tests read the Dockerfile as text and
// run the entrypoint script against a fake /app.

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const APPS = ['cli', 'worker', 'watcher'] as const;
const PROGRAMS = { cli: 'seglift', worker: 'seglift-worker', watcher: 'seglift-watcher' } as const;

interface Instruction {
  op: string;
  args: string;
}

/** Instructions with line continuations joined and comments dropped, grouped by FROM. */
function parseDockerfile(text: string): {
  args: Map<string, string>;
  stages: { from: string; name?: string; body: Instruction[] }[];
} {
  const logical: string[] = [];
  let current = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && current === '')) continue;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      continue;
    }
    logical.push(current + line);
    current = '';
  }
  const args = new Map<string, string>();
  const stages: { from: string; name?: string; body: Instruction[] }[] = [];
  for (const l of logical.filter((x) => x !== '')) {
    const space = l.indexOf(' ');
    const op = l.slice(0, space).toUpperCase();
    const rest = l.slice(space + 1).trim();
    if (op === 'ARG' && stages.length === 0) {
      const [k, v] = rest.split('=');
      args.set(k, v ?? '');
    } else if (op === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest)!;
      const from = m[1].replace(/^\$\{(\w+)\}$/, (_, k: string) => args.get(k) ?? '');
      stages.push({ from, name: m[2], body: [] });
    } else {
      stages.at(-1)?.body.push({ op, args: rest });
    }
  }
  return { args, stages };
}

const dockerfile = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
const build = dockerfile.stages[0];
const runtime = dockerfile.stages.at(-1)!;
const runs = (stage: typeof build) => stage.body.filter((i) => i.op === 'RUN').map((i) => i.args);

describe('Dockerfile', () => {
  it('is multi-stage on node:22-bookworm-slim (Node 22 LTS, glibc for the native codecs)', () => {
    expect(dockerfile.stages.map((s) => s.name)).toEqual(['build', 'runtime']);
    for (const stage of dockerfile.stages) expect(stage.from).toBe('node:22-bookworm-slim');
  });

  it('builds with node-gyp tools, pnpm 10 from npm, the frozen lockfile and a production deploy of the three apps', () => {
    const text = runs(build).join('\n');
    expect(text).toMatch(/apt-get install -y --no-install-recommends python3 make g\+\+/);
    expect(text).toMatch(/npm install -g pnpm@10\.\d+\.\d+/);
    expect(text).toContain('pnpm install --frozen-lockfile');
    expect(text).toContain('pnpm build');
    for (const app of ['cli', 'worker', 'watcher']) {
      expect(text).toContain(`pnpm --filter=@seglift/${app} --prod deploy --legacy /out/${app}`);
      expect(text).toContain(`test -x /out/${app}/dist/${PROGRAMS[app]}`);
    }
    // The launcher's own smoke test, inside the image's build: `sh`, `readlink -f`, node's flags.
    expect(text).toContain('/out/cli/dist/seglift --version');
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
      packageManager: string;
    };
    expect(text).toContain(`pnpm@${pkg.packageManager.replace(/^pnpm@/, '')}`);
  });

  it('ships only the deployed production directories in the final stage, no sources, no build tools', () => {
    const copies = runtime.body.filter((i) => i.op === 'COPY').map((i) => i.args);
    expect(copies).toEqual([
      '--from=build /out/cli /app/cli',
      '--from=build /out/worker /app/worker',
      '--from=build /out/watcher /app/watcher',
      '--chmod=0755 deploy/docker/entrypoint.sh /usr/local/bin/seglift',
    ]);
    const text = runs(runtime).join('\n');
    for (const devOnly of ['pnpm', 'npm ', 'python3', 'g++', 'make', 'node-gyp', 'COPY . .']) {
      expect(text).not.toContain(devOnly);
    }
    const env = runtime.body
      .filter((i) => i.op === 'ENV')
      .map((i) => i.args)
      .join(' ');
    expect(env).toContain('NODE_ENV=production');
  });

  it("leaves node's environment and flags to the launchers: the image repeats none of them", () => {
    const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    const entrypoint = readFileSync(join(repoRoot, 'deploy/docker/entrypoint.sh'), 'utf8');
    for (const [k, v] of Object.entries(PIPELINE_NODE.env)) {
      expect(text).not.toContain(`${k}=${v}`);
      expect(entrypoint).not.toContain(`${k}=${v}`);
    }
    for (const f of PIPELINE_NODE.flags) {
      expect(text).not.toContain(f);
      expect(entrypoint).not.toContain(f);
    }
    for (const app of APPS) expect(entrypoint).toContain(`exec /app/${app}/dist/${PROGRAMS[app]} "$@"`);
  });

  it('runs as a non-root numeric user (uid 10001) created in the final stage', () => {
    const users = runtime.body.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users).toEqual(['10001:10001']);
    expect(runs(runtime).join('\n')).toContain('useradd --uid 10001 --gid 10001');
    // USER comes after every RUN, so nothing runs as root after it and nothing can write /app.
    const userIndex = runtime.body.findIndex((i) => i.op === 'USER');
    expect(runtime.body.slice(userIndex).some((i) => i.op === 'RUN')).toBe(false);
  });

  it('has the seglift CLI under tini as exec-form ENTRYPOINT and exposes the metrics port', () => {
    const entry = runtime.body.filter((i) => i.op === 'ENTRYPOINT');
    expect(entry).toHaveLength(1);
    expect(JSON.parse(entry[0].args)).toEqual(['/usr/bin/tini', '--', '/usr/local/bin/seglift']);
    expect(runtime.body.find((i) => i.op === 'EXPOSE')?.args).toBe('9464');
    expect(runs(runtime).join('\n')).toContain('tini');
  });
});

describe('.dockerignore', () => {
  it('keeps host build output and the git directory out of the context but keeps the entrypoint', () => {
    const lines = readFileSync(join(repoRoot, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'));
    for (const p of ['**/node_modules', '**/dist', '.git', '**/.turbo']) expect(lines).toContain(p);
    expect(lines.indexOf('!deploy/docker/entrypoint.sh')).toBeGreaterThan(lines.indexOf('deploy'));
    for (const needed of ['pnpm-lock.yaml', 'pnpm-workspace.yaml', 'package.json', 'tsconfig.base.json']) {
      expect(lines).not.toContain(needed);
    }
  });
});

describe('entrypoint.sh', () => {
  const script = join(repoRoot, 'deploy/docker/entrypoint.sh');
  const dir = mkdtempSync(join(tmpdir(), 'seglift-entrypoint-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The script with /app pointed at a fake tree whose main.js files print who they are.
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'seglift'), readFileSync(script, 'utf8').replaceAll('/app/', `${dir}/app/`));
  chmodSync(join(bin, 'seglift'), 0o755);
  symlinkSync('seglift', join(bin, 'seglift-worker'));
  symlinkSync('seglift', join(bin, 'seglift-watcher'));
  // Each program as the build leaves it: its launcher (the real one) beside a main.js that
  // prints who it is, its arguments, and the node flags and environment it was started with.
  for (const app of APPS) {
    const dist = join(dir, 'app', app, 'dist');
    mkdirSync(dist, { recursive: true });
    writeFileSync(
      join(dist, 'main.js'),
      `console.log(JSON.stringify({ argv: ['${app}', ...process.argv.slice(2)], execArgv: process.execArgv, ` +
        `env: Object.fromEntries(${JSON.stringify(Object.keys(PIPELINE_NODE.env))}.map((k) => [k, process.env[k]])) }));`,
    );
    writeFileSync(join(dist, PROGRAMS[app]), launcherScript(PROGRAMS[app], PIPELINE_NODE));
    chmodSync(join(dist, PROGRAMS[app]), 0o755);
  }
  const started = (name: string, ...args: string[]) =>
    JSON.parse(execFileSync(join(bin, name), args, { encoding: 'utf8' })) as {
      argv: string[];
      execArgv: string[];
      env: Record<string, string>;
    };
  const run = (name: string, ...args: string[]) => started(name, ...args).argv;

  it('is an executable POSIX sh script', () => {
    expect(readFileSync(script, 'utf8').startsWith('#!/bin/sh\n')).toBe(true);
    expect(statSync(script).mode & 0o111).not.toBe(0);
    expect(existsSync(script)).toBe(true);
  });

  it('runs the CLI by default and passes every argument through', () => {
    expect(run('seglift', 'migrate', '/data', '--codec', 'zstd')).toEqual([
      'cli',
      'migrate',
      '/data',
      '--codec',
      'zstd',
    ]);
    expect(run('seglift', 'seglift', 'audit', '/data')).toEqual(['cli', 'audit', '/data']);
    expect(run('seglift')).toEqual(['cli']);
  });

  it('selects the worker or watcher by first argument or by the name it is called by', () => {
    expect(run('seglift', 'seglift-worker', '--once')).toEqual(['worker', '--once']);
    expect(run('seglift', 'seglift-watcher', '--once', '--wait')).toEqual(['watcher', '--once', '--wait']);
    expect(run('seglift-worker', 'x y')).toEqual(['worker', 'x y']);
    expect(run('seglift-watcher')).toEqual(['watcher']);
    // Only the full names switch programs; a CLI subcommand called "worker" would reach the CLI.
    expect(run('seglift', 'worker')).toEqual(['cli', 'worker']);
  });

  it("starts every program with the pipeline's node flags and environment (PIPELINE_NODE)", () => {
    for (const name of ['seglift', 'seglift-worker', 'seglift-watcher']) {
      const p = started(name);
      expect(p.execArgv, name).toEqual([...PIPELINE_NODE.flags]);
      expect(p.env, name).toEqual(PIPELINE_NODE.env);
    }
  });
});
