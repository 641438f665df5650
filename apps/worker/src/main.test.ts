import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRedis, SEGMENT_JOB_NAME } from '@seglift/queue';
import {
  built,
  freePort,
  needs,
  redisServer,
  spawnProgram,
  startRedis,
  type TestRedis,
} from '@seglift/testkit';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const WORKER = join(repoRoot, 'apps/worker/dist/seglift-worker');
const dist = built(WORKER);

const run = (args: string[], env: Record<string, string>) => spawnProgram(WORKER, args, env);

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('seglift-worker exit codes without Redis', () => {
  needs(dist).it('2 on a usage or configuration error, 0 for --help and --version', async () => {
    const env = { SEGLIFT_ROOTS: '/tmp', SEGLIFT_METRICS_PORT: '0' };
    expect((await run(['--bogus'], env).exited).code).toBe(2);
    expect((await run(['--idle-ms', 'soon', '--exit-when-drained'], env).exited).code).toBe(2);
    expect((await run(['--redis-timeout-ms', '0'], env).exited).code).toBe(2);
    expect((await run([], { SEGLIFT_METRICS_PORT: '0' }).exited).code).toBe(2); // no roots
    expect((await run([], { ...env, SEGLIFT_CODEC: 'brotli' }).exited).code).toBe(2);
    const help = run(['--help'], env);
    expect((await help.exited).code).toBe(0);
    expect(help.output()).toContain('--exit-when-drained');
    const version = run(['-V'], {});
    expect((await version.exited).code).toBe(0);
    expect(version.output()).toBe(
      `${JSON.parse(readFileSync(join(repoRoot, 'apps/worker/package.json'), 'utf8')).version}\n`,
    );
  });

  needs(dist).it(
    '2 when the metrics port is in use, naming the setting to change; --metrics-port is checked',
    async () => {
      const busy = createServer();
      await new Promise<void>((r) => busy.listen(0, '0.0.0.0', r));
      const port = (busy.address() as AddressInfo).port;
      try {
        const p = run([...[], '--metrics-port', String(port)], {
          SEGLIFT_ROOTS: '/tmp',
          SEGLIFT_REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
        });
        expect((await p.exited).code).toBe(2);
        expect(p.output()).toContain(`the metrics port 0.0.0.0:${port} is in use`);
        expect(p.output()).toContain(
          '--metrics-port N, metrics.port in the config file or SEGLIFT_METRICS_PORT',
        );
        expect(p.output()).not.toContain('EADDRINUSE');
        const bad = run([...[], '--metrics-port', 'x'], { SEGLIFT_ROOTS: '/tmp' });
        expect((await bad.exited).code).toBe(2);
        expect(bad.output()).toContain('metrics.port');
      } finally {
        busy.close();
      }
    },
  );

  needs(dist).it('3 when Redis does not answer within --redis-timeout-ms', async () => {
    const port = await freePort(); // nothing listens there
    const p = run(['--redis-timeout-ms', '300', '--exit-when-drained'], {
      SEGLIFT_ROOTS: '/tmp',
      SEGLIFT_REDIS_URL: `redis://127.0.0.1:${port}`,
      SEGLIFT_METRICS_PORT: '0',
    });
    expect(await p.exited).toEqual({ code: 3, signal: null });
    expect(p.output()).toContain('Redis did not answer within 300 ms');
  });
});

needs(redisServer, dist).describe('seglift-worker exit codes on a real Redis', () => {
  let redis: TestRedis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-worker-main-')));
  const procs: Proc[] = [];
  let n = 0;

  beforeAll(async () => {
    if (!existsSync(WORKER)) throw new Error('dist missing: run `pnpm build` before these tests');
    redis = await startRedis();
    mkdirSync(join(tmp, 'root'));
  });
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  function worker(args: string[]) {
    const env = {
      SEGLIFT_ROOTS: join(tmp, 'root'),
      SEGLIFT_REDIS_URL: redis.url,
      SEGLIFT_QUEUE_NAME: `main${++n}`,
      SEGLIFT_WORKER_CONCURRENCY: '1',
      SEGLIFT_WORKER_SHUTDOWN_GRACE_MS: '2000',
      SEGLIFT_METRICS_PORT: '0',
      SEGLIFT_METRICS_HOST: '127.0.0.1',
      SEGLIFT_LOG_LEVEL: 'info',
    };
    const p = run(args, env);
    procs.push(p);
    return { p, queueName: env.SEGLIFT_QUEUE_NAME };
  }
  const started = (p: Proc) => until(() => p.output().includes('"worker started"'), 20_000, 'worker started');

  it('daemon mode: SIGTERM is a normal stop, exit 0', async () => {
    const { p } = worker([]);
    await started(p);
    p.child.kill('SIGTERM');
    expect(await p.exited, p.output()).toEqual({ code: 0, signal: null });
    expect(p.output()).toContain('"signal":"SIGTERM"');
    expect(p.output()).toContain('"stopped"');
  });

  it('Job mode: exits 0 by itself once the queue stayed empty for --idle-ms', async () => {
    const { p } = worker(['--exit-when-drained', '--idle-ms', '300']);
    expect(await p.exited, p.output()).toEqual({ code: 0, signal: null });
    expect(p.output()).toContain('"signal":"drained"');
    expect(p.output()).toContain('"exitWhenDrained":true');
  });

  it('Job mode: SIGTERM with a job still queued exits 143 after a graceful shutdown; the job stays queued', async () => {
    const { p, queueName } = worker(['--exit-when-drained', '--idle-ms', '300']);
    const conn = createRedis(redis.url);
    const queue = new Queue(queueName, { connection: conn, prefix: 'seglift' });
    try {
      // A delayed job is not drained work the worker could take now: it keeps the queue busy.
      await queue.add(SEGMENT_JOB_NAME, { path: '/nowhere.log' }, { jobId: 'later', delay: 3_600_000 });
      await started(p);
      // Several idle-ms periods: the worker must not call a delayed job "drained".
      await new Promise((r) => setTimeout(r, 1200));
      expect(p.child.exitCode).toBe(null);
      p.child.kill('SIGTERM');
      expect(await p.exited, p.output()).toEqual({ code: 143, signal: null });
      expect(p.output()).toContain('"signal":"SIGTERM","exitCode":143');
      expect(p.output()).toContain('"stopped"');
      expect(await queue.getJobState('later')).toBe('delayed');
    } finally {
      await queue.close();
      conn.disconnect();
    }
  });

  it('Job mode: SIGTERM on an empty queue before --idle-ms elapsed is not a drain either: 143', async () => {
    const { p } = worker(['--exit-when-drained', '--idle-ms', '60000']);
    await started(p);
    p.child.kill('SIGTERM');
    expect(await p.exited, p.output()).toEqual({ code: 143, signal: null });
  });

  it('Job mode: SIGINT exits 130', async () => {
    const { p } = worker(['--exit-when-drained', '--idle-ms', '60000']);
    await started(p);
    p.child.kill('SIGINT');
    expect(await p.exited, p.output()).toEqual({ code: 130, signal: null });
  });
});
