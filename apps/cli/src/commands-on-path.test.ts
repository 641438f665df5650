/**
 * The three programs as the README's install command leaves them: launchers built from
 * PIPELINE_NODE, linked into a directory on PATH by scripts/link-bins.sh (bootstrap.sh runs it),
 * run from wherever the operator stands.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PIPELINE_NODE } from '@seglift/segment';
import { built, freePort, needs, npm, tmux } from '@seglift/testkit';
import { beforeAll, expect, it } from 'vitest';
import { launcherScript } from '../../../scripts/stamp-bin.mjs';
import { tmpDir, v2Batch, writeSegment } from './test-support/segments.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const PROGRAMS = [
  ['cli', 'seglift'],
  ['worker', 'seglift-worker'],
  ['watcher', 'seglift-watcher'],
] as const;
const launchers = PROGRAMS.map(([app, program]) => path.join(repo, 'apps', app, 'dist', program));

needs(built(...launchers)).describe('the commands on PATH', () => {
  const binDir = tmpDir('seglift-bin-');
  const env = { ...process.env, PATH: `${binDir}${path.delimiter}${process.env.PATH}` };
  const seglift = (args: string[], cwd: string) =>
    spawnSync('seglift', args, { cwd, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });

  beforeAll(() => {
    execFileSync('bash', [path.join(repo, 'scripts/link-bins.sh')], {
      env: { ...env, SEGLIFT_BIN_DIR: binDir },
      stdio: 'pipe',
    });
  });

  it('are the launchers PIPELINE_NODE makes (a stale build fails here), executable, linked by link-bins.sh', () => {
    for (const [i, [, program]] of PROGRAMS.entries()) {
      expect(readFileSync(launchers[i], 'utf8'), program).toBe(launcherScript(program, PIPELINE_NODE));
      expect(statSync(launchers[i]).mode & 0o111, program).toBe(0o111);
      expect(readlinkSync(path.join(binDir, program)), program).toBe(launchers[i]);
    }
    const version = JSON.parse(readFileSync(path.join(repo, 'apps/cli/package.json'), 'utf8')).version;
    expect(seglift(['--version'], '/').stdout).toBe(`${version}\n`);
  });

  it('resolve relative paths from where the operator stands', () => {
    const root = tmpDir();
    const partition = path.join(root, 'orders-0');
    writeSegment(partition, 0n, [v2Batch(0n, 3)]);
    writeSegment(partition, 3n, [v2Batch(3n, 2)]);
    const inspect = seglift(['inspect', '00000000000000000003.log'], partition);
    expect(inspect.status, inspect.stderr).toBe(0);
    expect(inspect.stdout).toMatch(/^Dumping 00000000000000000003\.log\nLog starting offset: 3\n/);
    const docs = path.join(root, 'docs');
    mkdirSync(docs);
    const audit = seglift(['audit', '..'], docs);
    expect(audit.status, audit.stderr).toBe(0);
    expect(audit.stdout).toMatch(/^orders-0 /m);
    expect(audit.stdout).toMatch(/^orders-0 +2 /m);
  });

  it('take a shell glob of 4,800 segments in one command (no E2BIG) and verify them in seconds', () => {
    const root = tmpDir();
    const files: string[] = [];
    const batch = v2Batch(0n, 1);
    for (let p = 0; p < 48; p++) {
      for (let s = 0; s < 100; s++) {
        const dir = path.join(root, `clicks-${p}`);
        if (s === 0) mkdirSync(dir);
        const name = `${String(s * 10).padStart(20, '0')}.log`;
        // Each segment holds one batch at its base offset (the batch's offset field is patched).
        const b = Buffer.from(batch);
        b.writeBigInt64BE(BigInt(s * 10), 0);
        writeFileSync(path.join(dir, name), b);
        files.push(path.join(`clicks-${p}`, name));
      }
    }
    const started = performance.now();
    const r = seglift(['verify', '--shallow', ...files], root);
    const seconds = (performance.now() - started) / 1000;
    expect(r.error).toBeUndefined();
    expect(r.status, r.stderr.slice(0, 2000)).toBe(0);
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe('4800 of 4800 segments OK');
    // Each partition directory is listed once, not once per named segment (was 27 s).
    expect(seconds).toBeLessThan(20);
  });

  it("start node with the pipeline's flags and environment (seen in /proc of a running worker)", async () => {
    const port = await freePort();
    const child = spawn('seglift-worker', ['--redis-timeout-ms', '30000'], {
      env: {
        PATH: env.PATH,
        SEGLIFT_ROOTS: '/tmp',
        SEGLIFT_REDIS_URL: `redis://127.0.0.1:${port}`,
        SEGLIFT_METRICS_PORT: '0',
      },
      stdio: 'ignore',
    });
    try {
      const proc = `/proc/${child.pid}`;
      let cmdline: string[] = [];
      for (let i = 0; i < 100 && !cmdline.some((a) => a.endsWith('/main.js')); i++) {
        await new Promise((r) => setTimeout(r, 50));
        cmdline = readFileSync(`${proc}/cmdline`, 'utf8').split('\0');
      }
      // sh exec'd node: same pid, node's flags before the script, the script the real main.js.
      expect(cmdline.slice(1, 1 + PIPELINE_NODE.flags.length)).toEqual([...PIPELINE_NODE.flags]);
      expect(cmdline[1 + PIPELINE_NODE.flags.length]).toBe(path.join(repo, 'apps/worker/dist/main.js'));
      const environ = readFileSync(`${proc}/environ`, 'utf8').split('\0');
      for (const [k, v] of Object.entries(PIPELINE_NODE.env)) expect(environ).toContain(`${k}=${v}`);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

needs(built(...launchers), npm).it(
  'install on a host without the repository: scripts/pack.sh, tar -x, npm install -g DIR (no registry)',
  () => {
    const work = tmpDir('seglift-pack-');
    const tgz = execFileSync('bash', [path.join(repo, 'scripts/pack.sh'), path.join(work, 'out')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    })
      .trim()
      .split('\n')
      .at(-1)!;
    expect(tgz).toMatch(/seglift-\d+\.\d+\.\d+-\w+-\w+\.tgz$/);
    const opt = path.join(work, 'opt');
    mkdirSync(opt);
    execFileSync('tar', ['-xzf', tgz, '-C', opt]);
    const prefix = path.join(work, 'prefix');
    execFileSync(
      'npm',
      [
        'install',
        '-g',
        '--offline',
        '--no-audit',
        '--no-fund',
        '--prefix',
        prefix,
        path.join(opt, 'seglift'),
      ],
      {
        stdio: 'pipe',
      },
    );
    const env = { ...process.env, PATH: `${path.join(prefix, 'bin')}${path.delimiter}${process.env.PATH}` };
    const version = JSON.parse(readFileSync(path.join(repo, 'apps/cli/package.json'), 'utf8')).version;
    const partition = path.join(work, 'data', 'orders-0');
    writeSegment(partition, 0n, [v2Batch(0n, 3)]);
    writeSegment(partition, 3n, [v2Batch(3n, 2)]);
    const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { cwd: work, env, encoding: 'utf8' });
    expect(run('seglift', ['--version']).stdout).toBe(`${version}\n`);
    // migrate runs its conversion threads from the installed copy.
    const migrate = run('seglift', ['migrate', 'data', '--quiet']);
    expect(migrate.status, migrate.stderr).toBe(0);
    expect(migrate.stdout).toMatch(/converted 1 segment, skipped 1/);
    for (const p of ['seglift-worker', 'seglift-watcher']) {
      expect(run(p, ['--help']).stdout).toMatch(`Usage: ${p} `);
      // The same version as seglift's: each program reads its own package.json, packed beside it.
      expect(run(p, ['--version']).stdout).toBe(`${version}\n`);
    }
  },
  180_000,
);

needs(built(...launchers), tmux).it(
  'draws its progress bar in a real terminal (tmux) and clears it before the report; none into a pipe',
  async () => {
    const root = tmpDir();
    for (let p = 0; p < 40; p++) {
      const dir = path.join(root, `clicks-${p}`);
      writeSegment(dir, 0n, [v2Batch(0n, 3)]);
      writeSegment(dir, 3n, [v2Batch(3n, 1)]);
    }
    const socket = `seglift-test-${process.pid}`;
    const raw = path.join(root, 'terminal.raw');
    const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    const done = path.join(root, 'done');
    tmux('new-session', '-d', '-s', 'bar', '-x', '150', '-y', '30', 'bash', '--norc', '--noprofile');
    try {
      tmux('pipe-pane', '-t', 'bar', '-o', `cat > ${raw}`);
      tmux('send-keys', '-t', 'bar', `${launchers[0]} audit ${root}; echo $? > ${done}`, 'Enter');
      const end = Date.now() + 60_000;
      while (!existsSync(done) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      expect(readFileSync(done, 'utf8').trim()).toBe('0');
      // The pane shows what the terminal shows, once tmux has drawn the last output.
      let screen = '';
      while (!/Kafka 4 readiness/.test(screen) && Date.now() < end) {
        screen = tmux('capture-pane', '-p', '-t', 'bar');
        await new Promise((r) => setTimeout(r, 100));
      }
      // Each frame: clear the line (CR, ESC [2K), then the bar up to the next control character.
      const frames = readFileSync(raw, 'latin1')
        .split('\r\u001b[2K')
        .slice(1)
        .map((f) => f.split(/[\r\n]/)[0].split('\u001b')[0])
        .filter((f) => f !== '');
      expect(frames[0]).toMatch(/^\[-{24}\] +0% 0 B\/\d+\.\d KiB 0\/80 segments$/);
      for (const f of frames) expect(f).not.toMatch(/\d\.\d{2,}|1 segments|\/s.*\/s/);
      // Cleared before the report: the screen holds the report, no bar.
      expect(screen).toMatch(/^Kafka 4 readiness: ready/m);
      expect(screen).not.toMatch(/\[[#-]{24}\]/);
    } finally {
      spawnSync('tmux', ['-L', socket, 'kill-server']);
    }
    // Into a pipe (a log file, `| tee`): no bar at all.
    const piped = spawnSync(launchers[0], ['audit', root], { encoding: 'utf8' });
    expect(piped.stderr).toBe('');
  },
  90_000,
);
