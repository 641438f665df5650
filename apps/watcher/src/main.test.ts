import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRedis } from '@seglift/queue';
import {
  built,
  freePort,
  holdLockAsABroker,
  needs,
  python3,
  redisServer,
  spawnProgram,
  startRedis,
  type TestRedis,
} from '@seglift/testkit';
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const WATCHER = join(repoRoot, 'apps/watcher/dist/seglift-watcher');
const dist = built(WATCHER);

const seg = (n: number) => `${String(n).padStart(20, '0')}.log`;

function run(args: string[], env: Record<string, string>) {
  const p = spawnProgram(WATCHER, args, env);
  return { ...p, exited: p.exited.then((e) => e.code) };
}

needs(dist).describe('seglift-watcher exit codes without Redis', () => {
  const env = { SEGLIFT_ROOTS: '/tmp', SEGLIFT_METRICS_PORT: '0' };

  it('2 on a usage or configuration error, 0 for --help and --version', async () => {
    expect(await run(['--bogus'], env).exited).toBe(2);
    expect(await run(['--once', '--redis-timeout-ms', 'x'], env).exited).toBe(2);
    expect(await run(['--once'], { SEGLIFT_METRICS_PORT: '0' }).exited).toBe(2); // no roots
    expect(await run(['--once', '--redis-url', 'http://x'], env).exited).toBe(2);
    const help = run(['--help'], env);
    expect(await help.exited).toBe(0);
    expect(help.output()).toContain('--once [--wait]');
    const version = run(['--version'], {});
    expect(await version.exited).toBe(0);
    expect(version.output()).toBe(
      `${JSON.parse(readFileSync(join(repoRoot, 'apps/watcher/package.json'), 'utf8')).version}\n`,
    );
  });

  it('2 when the metrics port is in use, naming the setting to change; --metrics-port is checked', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '0.0.0.0', r));
    const port = (busy.address() as AddressInfo).port;
    try {
      const p = run([...['--once', '--wait'], '--metrics-port', String(port)], {
        SEGLIFT_ROOTS: '/tmp',
        SEGLIFT_REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      });
      expect(await p.exited).toBe(2);
      expect(p.output()).toContain(`the metrics port 0.0.0.0:${port} is in use`);
      expect(p.output()).toContain(
        '--metrics-port N, metrics.port in the config file or SEGLIFT_METRICS_PORT',
      );
      expect(p.output()).not.toContain('EADDRINUSE');
      const bad = run([...['--once', '--wait'], '--metrics-port', 'x'], { SEGLIFT_ROOTS: '/tmp' });
      expect(await bad.exited).toBe(2);
      expect(bad.output()).toContain('metrics.port');
    } finally {
      busy.close();
    }
  });

  it('3 when Redis does not answer within --redis-timeout-ms', async () => {
    const port = await freePort();
    const p = run(['--once', '--wait', '--redis-timeout-ms', '300'], {
      ...env,
      SEGLIFT_REDIS_URL: `redis://127.0.0.1:${port}`,
    });
    expect(await p.exited).toBe(3);
    expect(p.output()).toContain('Redis did not answer within 300 ms');
  });
});

needs(redisServer, dist).describe('seglift-watcher --once --wait exit codes on a real Redis', () => {
  let redis: TestRedis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-watcher-main-')));
  let n = 0;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** Partitions of two segments each (the first is rolled, so ready); workers fail `bad-*`. */
  async function runWith(partitions: string[]) {
    const name = `m${++n}`;
    const root = join(tmp, name);
    for (const p of partitions) {
      mkdirSync(join(root, p), { recursive: true });
      // Empty segments: in every target format, so the run's read-back finds them done.
      for (const s of [seg(0), seg(100)]) writeFileSync(join(root, p, s), '');
    }
    const conn = createRedis(redis.url);
    const worker = new Worker(
      name,
      async (job) => {
        if ((job.data.path as string).includes('/bad-'))
          throw new UnrecoverableError(
            JSON.stringify({ code: 'CRC_MISMATCH', file: job.data.path, position: 17, offset: '40' }),
          );
        return { result: 'converted' };
      },
      { connection: conn, prefix: 'seglift' },
    );
    try {
      const p = run(['--once', '--wait'], {
        SEGLIFT_ROOTS: root,
        SEGLIFT_REDIS_URL: redis.url,
        SEGLIFT_QUEUE_NAME: name,
        SEGLIFT_WORKER_ATTEMPTS: '1',
        SEGLIFT_LOG_LEVEL: 'info',
        SEGLIFT_METRICS_PORT: '0',
      });
      return { code: await p.exited, output: p.output(), root };
    } finally {
      await worker.close();
      conn.disconnect();
    }
  }

  needs(python3).it(
    "2 beside a running broker (its log dir's .lock held) without a stage dir: refuses to start, naming the log dir",
    async () => {
      const logDir = join(tmp, `held-${++n}`);
      mkdirSync(join(logDir, 't-0'), { recursive: true });
      for (const s of [seg(0), seg(100)]) writeFileSync(join(logDir, 't-0', s), '');
      const holder = await holdLockAsABroker(join(logDir, '.lock'));
      const exited = new Promise((r) => holder.once('exit', r));
      try {
        for (const args of [['--once'], []]) {
          const p = run(args, {
            SEGLIFT_ROOTS: logDir,
            SEGLIFT_REDIS_URL: redis.url,
            SEGLIFT_QUEUE_NAME: `held-${n}`,
            SEGLIFT_METRICS_PORT: '0',
          });
          const code = await p.exited;
          expect(code, p.output()).toBe(2);
          expect(p.output()).toContain(
            `refusing to start: log dir ${logDir} belongs to a running Kafka broker (its .lock is held by pid ${holder.pid}): nothing is converted in place beside it; set stageDir (--stage-dir, SEGLIFT_STAGE_DIR)`,
          );
        }
        // With a stage dir it prepares there instead (exit 0, one prepare job queued).
        const stage = join(tmp, `held-${n}-stage`);
        const p = run(['--once', '--stage-dir', stage], {
          // The workers write the stage dir: within the roots, or refused too.
          SEGLIFT_ROOTS: `${logDir},${stage}`,
          SEGLIFT_REDIS_URL: redis.url,
          SEGLIFT_QUEUE_NAME: `held-${n}`,
          SEGLIFT_METRICS_PORT: '0',
        });
        expect(await p.exited, p.output()).toBe(0);
        expect(p.output()).toMatch(/"prepareOnly":\[.*\],"msg":"queued 1 segment"/);
        expect(existsSync(join(stage, '.seglift-stage'))).toBe(true);
      } finally {
        holder.stdin.end();
        await exited;
      }
    },
  );

  needs(python3).it(
    'every prepare job failed: no word of a prepared stage, and the summary names the cause',
    async () => {
      const name = `held-fail-${++n}`;
      const logDir = join(tmp, name);
      mkdirSync(join(logDir, 't-0'), { recursive: true });
      for (const s of [seg(0), seg(100), seg(200)]) writeFileSync(join(logDir, 't-0', s), '');
      const stage = join(tmp, `${name}-stage`);
      const holder = await holdLockAsABroker(join(logDir, '.lock'));
      const exited = new Promise((r) => holder.once('exit', r));
      const conn = createRedis(redis.url);
      // A worker whose roots do not hold the log dir: it refuses every job.
      const message = `${logDir}/t-0: outside the roots`;
      const worker = new Worker(
        name,
        async () => {
          throw new UnrecoverableError(JSON.stringify({ code: 'PATH_OUTSIDE_ROOTS', message }));
        },
        { connection: conn, prefix: 'seglift' },
      );
      try {
        const p = run(['--once', '--wait', '--stage-dir', stage], {
          SEGLIFT_ROOTS: `${logDir},${stage}`,
          SEGLIFT_REDIS_URL: redis.url,
          SEGLIFT_QUEUE_NAME: name,
          SEGLIFT_WORKER_ATTEMPTS: '1',
          SEGLIFT_METRICS_PORT: '0',
        });
        expect(await p.exited, p.output()).toBe(1);
        const logs = p
          .output()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l));
        expect(logs.filter((l) => /prepared into the stage dir/.test(l.msg))).toEqual([]);
        expect(logs.at(-1)).toMatchObject({
          succeeded: 0,
          failed: 2,
          failedBy: { PATH_OUTSIDE_ROOTS: 2 },
          msg: `run finished: all 2 segments failed: PATH_OUTSIDE_ROOTS (2): ${message}`,
        });
      } finally {
        await worker.close();
        conn.disconnect();
        holder.stdin.end();
        await exited;
      }
    },
  );

  it('0 when every queued segment succeeded', async () => {
    const r = await runWith(['t-0', 't-1']);
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/"queued":2,"alreadyDone":0,"succeeded":2,"failed":0,"lost":0/);
  });

  it('1 when some segment failed (bad input: a retry of the Job would not help), naming it', async () => {
    const r = await runWith(['t-0', 'bad-0']);
    expect(r.code, r.output).toBe(1);
    expect(r.output).toMatch(/"succeeded":1,"failed":1,"lost":0/);
    // As the worker logs it: the error's code, file, position and offset, not a JSON string.
    const failed = r.output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((l) => l.msg === 'segment failed');
    const file = join(r.root, 'bad-0', seg(0));
    expect(failed).toMatchObject({
      segment: file,
      err: { code: 'CRC_MISMATCH', file, position: 17, offset: '40' },
    });
  });
});
