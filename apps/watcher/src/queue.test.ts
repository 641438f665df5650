import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Config, conversionSettings, loadConfig } from '@seglift/config';
import {
  createRedis,
  doneMarkerKey,
  enqueueSegments,
  fileStateOf,
  openQueue,
  segmentJobId,
} from '@seglift/queue';
import { findReadySegments } from '@seglift/segment';
import { holdLockAsABroker, needs, python3, redisServer, startRedis, type TestRedis } from '@seglift/testkit';
import { type Job, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOnce } from './once.js';

const scanRoots = (roots: string[], rules: { requireRolled: boolean; quietMs: number }) =>
  findReadySegments(roots, rules, { realPaths: true });

import { startWatching } from './watch.js';

const seg = (n: number) => `${String(n).padStart(20, '0')}.log`;

describe('segmentJobId', () => {
  const settings = conversionSettings(loadConfig({ env: {}, flags: {} }));
  const id = (over: Partial<Parameters<typeof segmentJobId>[0]>) =>
    segmentJobId({
      path: '/data/t-0/00000000000000000000.log',
      size: 10,
      mtimeMs: 1000.7,
      settings,
      ...over,
    });

  it('is deterministic, BullMQ-safe and changes with size or mtime', () => {
    const a = id({});
    expect(a).toMatch(/^seg-[0-9a-f]{40}$/);
    expect(id({ mtimeMs: 1000.2 })).toBe(a);
    expect(id({ size: 11 })).not.toBe(a);
    expect(id({ mtimeMs: 2000 })).not.toBe(a);
    expect(id({ path: '/data/t-1/00000000000000000000.log' })).not.toBe(a);
  });

  it('changes with every setting that changes the bytes written, not with a limit', () => {
    const a = id({});
    expect(id({ settings: { ...settings, codec: 'lz4' } })).not.toBe(a);
    expect(id({ settings: { ...settings, level: 3 } })).not.toBe(a);
    expect(id({ settings: { ...settings, grouping: 'kafka' } })).not.toBe(a);
    expect(id({ settings: { ...settings, onlyIfSmaller: true } })).not.toBe(a);
    expect(id({ settings: { ...settings, indexIntervalBytes: 8192 } })).not.toBe(a);
    expect(id({ settings: { ...settings, maxDecompressedBatchBytes: 1024 } })).toBe(a);
    expect(id({ settings: { ...settings, segmentIndexBytes: 1024 } })).toBe(a);
  });
});

/** The jobs a watcher plans for `ready` with `config`'s settings. */
const jobsOf = <T extends { path: string }>(config: Config, ready: readonly T[]) =>
  ready.map((r) => ({ ...r, settings: conversionSettings(config) }));

needs(redisServer).describe('watcher with a real Redis', () => {
  let redis: TestRedis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-watcher-')));
  let n = 0;
  // The test workers' own connections (a Worker never closes a connection it was given): closed
  // before Redis stops, or they reconnect to a dead port and print ioredis's unhandled errors.
  const workerConns: ReturnType<typeof createRedis>[] = [];
  const workerConnection = () => {
    const c = createRedis(redis.url);
    workerConns.push(c);
    return c;
  };
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const c of workerConns) c.disconnect();
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  function setup(overrides: Record<string, unknown> = {}) {
    const name = `w${++n}`;
    const root = join(tmp, name);
    const config = loadConfig({
      env: {},
      flags: {
        roots: [root],
        'redis.url': redis.url,
        'queue.name': name,
        'log.level': 'silent',
        ...overrides,
      },
    });
    const conn = createRedis(redis.url);
    const queue = openQueue(config, conn);
    return { name, root, config, conn, queue };
  }

  /** Empty segments: in every target format, so a run's read-back finds them done. */
  function files(dir: string, names: string[]) {
    mkdirSync(dir, { recursive: true });
    for (const f of names) writeFileSync(join(dir, f), '');
  }

  it('never queues a segment twice, across restarts and a second watcher; skips done markers', async () => {
    const { root, config, conn, queue } = setup();
    files(join(root, 't-0'), [seg(0), seg(10), seg(20)]);
    files(join(root, 't-1'), [seg(0), seg(5)]);
    const scan = await scanRoots(config.roots, config.readiness);
    expect(scan.ready).toHaveLength(3);
    const first = await enqueueSegments(queue, conn, config, jobsOf(config, scan.ready));
    expect(first.jobIds.map((j) => j.path)).toEqual(scan.ready.map((s) => s.path));
    // A second watcher (own connection) and a restarted one add nothing new.
    const conn2 = createRedis(redis.url);
    const queue2 = openQueue(config, conn2);
    await enqueueSegments(
      queue2,
      conn2,
      config,
      jobsOf(config, (await scanRoots(config.roots, config.readiness)).ready),
    );
    await enqueueSegments(queue, conn, config, jobsOf(config, scan.ready));
    expect(await queue.getJobCounts('waiting', 'active', 'delayed')).toEqual({
      waiting: 3,
      active: 0,
      delayed: 0,
    });
    const jobs = await queue.getJobs(['waiting']);
    expect(jobs.map((j) => j.id).sort()).toEqual(first.jobIds.map((j) => j.id).sort());
    expect(jobs.find((j) => j.data.path === join(root, 't-0', seg(0)))?.opts).toMatchObject({
      attempts: 5,
      backoff: { type: 'exponential', delay: 5000 },
    });
    // The worker marks the converted state done: that state is not queued again.
    await conn.set(doneMarkerKey(config, first.jobIds[0].id), '1');
    await queue.obliterate({ force: true });
    const again = await enqueueSegments(queue, conn, config, jobsOf(config, scan.ready));
    expect(again.alreadyDone).toBe(1);
    expect(again.jobIds).toHaveLength(2);
    await Promise.all([queue.close(), queue2.close()]);
    conn.disconnect();
    conn2.disconnect();
  });

  it('runs a completed job again when the file state it was for is still not marked done (BullMQ would ignore the add)', async () => {
    const { name, root, config, conn, queue } = setup();
    files(join(root, 't-0'), [seg(0), seg(10)]);
    const ready = (await scanRoots(config.roots, config.readiness)).ready.map((r) =>
      fileStateOf(r.path, statSync(r.path, { bigint: true })),
    );
    let runs = 0;
    // A worker that completes without leaving the file done (as a done marker lost with Redis).
    const worker = new Worker(
      name,
      async () => {
        runs++;
        return { result: 'converted' };
      },
      { connection: workerConnection(), prefix: config.queue.prefix },
    );
    const first = await enqueueSegments(queue, conn, config, jobsOf(config, ready));
    expect(first.rerun).toBe(0);
    await until(async () => (await queue.getJobState(first.jobIds[0].id)) === 'completed');
    const again = await enqueueSegments(queue, conn, config, jobsOf(config, ready));
    expect(again).toMatchObject({ alreadyDone: 0, rerun: 1 });
    await until(() => runs === 2);
    // Marked done: neither queued nor run again.
    await conn.set(doneMarkerKey(config, first.jobIds[0].id), '1');
    await until(async () => (await queue.getJobState(first.jobIds[0].id)) === 'completed');
    expect(await enqueueSegments(queue, conn, config, jobsOf(config, ready))).toMatchObject({
      alreadyDone: 1,
      rerun: 0,
    });
    await worker.close();
    await queue.close();
    conn.disconnect();
  });

  it('--once --wait: succeeds only when every job succeeded', async () => {
    const { name, root, config, conn, queue } = setup();
    files(join(root, 'ok-0'), [seg(0), seg(10)]);
    files(join(root, 'bad-0'), [seg(0), seg(10)]);
    const worker = new Worker(
      name,
      async (job: Job) => {
        if (String(job.data.path).includes('bad-0')) throw new Error('{"code":"CRC_MISMATCH"}');
        return { result: 'converted' };
      },
      { connection: workerConnection(), prefix: config.queue.prefix },
    );
    const cfg = { ...config, worker: { ...config.worker, attempts: 1 } };
    const r = await runOnce({ config: cfg, queue, redis: conn, wait: true, pollMs: 50 });
    expect(r).toMatchObject({ partitions: 2, ready: 2, notReady: 2, queued: 2, succeeded: 1, ok: false });
    expect(r.failed).toEqual([
      {
        id: segmentJobId({
          ...fileStateOf(
            join(root, 'bad-0', seg(0)),
            statSync(join(root, 'bad-0', seg(0)), { bigint: true }),
          ),
          settings: conversionSettings(config),
        }),
        path: join(root, 'bad-0', seg(0)),
        failure: { code: 'CRC_MISMATCH', message: '{"code":"CRC_MISMATCH"}' },
      },
    ]);
    await worker.close();
    await queue.close();
    conn.disconnect();
  });

  it('--once queues in turns across log dirs and partitions; --wait learns of finished jobs from the queue events', async () => {
    const { name, root, config, conn, queue } = setup();
    for (const [logDir, p] of [
      ['a', 'x-0'],
      ['a', 'x-1'],
      ['b', 'y-0'],
    ])
      files(join(root, logDir, p), [seg(0), seg(10), seg(20)]);
    const order: string[] = [];
    const worker = new Worker(
      name,
      async (job: Job) => {
        order.push(String(job.data.path).slice(root.length + 1));
        return { result: 'converted' };
      },
      { connection: workerConnection(), prefix: config.queue.prefix, autorun: false },
    );
    // Polls and sweeps too rare to end the wait within the test's time: only the events can.
    const running = runOnce({ config, queue, redis: conn, wait: true, pollMs: 60_000, sweepMs: 60_000 });
    await until(async () => (await queue.getWaitingCount()) === 6);
    worker.run();
    const r = await running;
    expect(r).toMatchObject({ queued: 6, succeeded: 6, ok: true });
    expect(order).toEqual([
      join('a', 'x-0', seg(0)),
      join('b', 'y-0', seg(0)),
      join('a', 'x-1', seg(0)),
      join('b', 'y-0', seg(10)),
      join('a', 'x-0', seg(10)),
      join('a', 'x-1', seg(10)),
    ]);
    await worker.close();
    await queue.close();
    conn.disconnect();
  });

  it('--once --wait gives up when nothing finishes and no worker is connected (noWorkerTimeoutMs)', async () => {
    const { name, root, config, conn, queue } = setup({ 'watcher.noWorkerTimeoutMs': 400 });
    files(join(root, 't-0'), [seg(0), seg(10), seg(20)]);
    // A connected worker stuck on a long conversion keeps the wait going past the timeout...
    const worker = new Worker(name, () => new Promise(() => {}), {
      connection: workerConnection(),
      prefix: config.queue.prefix,
      concurrency: 1,
    });
    await worker.waitUntilReady();
    let settled = false;
    const running = runOnce({ config, queue, redis: conn, wait: true, pollMs: 50 }).finally(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 1200));
    expect(settled).toBe(false);
    // ...until it is gone (killed): nobody is left to run the two queued segments.
    await worker.close(true);
    const r = await running;
    expect(r).toMatchObject({ queued: 2, succeeded: 0, ok: false, failed: [], lost: [] });
    expect(r.abandoned.map((a) => a.path).sort()).toEqual([
      join(root, 't-0', seg(0)),
      join(root, 't-0', seg(10)),
    ]);
    await queue.close();
    conn.disconnect();
  });

  it('watch mode queues a segment when the next one rolls, and an archive segment once quiet', async () => {
    const { root, config, conn, queue } = setup({ 'readiness.requireRolled': true });
    const dir = join(root, 'live-0');
    files(dir, [seg(0)]);
    const evaluated: Array<[string, number]> = [];
    const h = startWatching({
      config,
      queue,
      redis: conn,
      debounceMs: 50,
      onEvaluated: (d, q) => evaluated.push([d, q]),
    });
    await h.ready;
    await until(() => evaluated.length >= 1);
    expect(await queue.count()).toBe(0); // only the active segment
    appendFileSync(join(dir, seg(0)), 'more');
    files(dir, [seg(100)]);
    await until(() => evaluated.some(([, q]) => q === 1));
    const jobs = await queue.getJobs(['waiting']);
    expect(jobs.map((j) => j.data.path)).toEqual([join(dir, seg(0))]);
    // Temp files and -delete dirs are ignored.
    files(dir, [`${seg(0)}.swap`, `${seg(100)}.cleaned`]);
    files(join(root, 'live-0.abc-delete'), [seg(0), seg(1)]);
    await new Promise((r) => setTimeout(r, 300));
    expect(await queue.count()).toBe(1);
    await h.close();

    // An archive segment is queued once quiet. Its mtime an hour ahead, it is quiet at no
    // evaluation of this test, however slow the machine; set an hour back, the evaluation that
    // the change causes queues it. (No window of a few hundred ms to hit.)
    const arch = setup({ 'readiness.requireRolled': false, 'readiness.quietMs': 60_000 });
    const old = join(arch.root, 'old-0', seg(0));
    files(join(arch.root, 'old-0'), [seg(0)]);
    utimesSync(old, Date.now() / 1000 + 3600, Date.now() / 1000 + 3600);
    const archEvaluated: number[] = [];
    const h2 = startWatching({
      config: arch.config,
      queue: arch.queue,
      redis: arch.conn,
      debounceMs: 20,
      onEvaluated: (_d, q) => archEvaluated.push(q),
    });
    await h2.ready;
    await until(() => archEvaluated.length >= 1);
    expect(archEvaluated.every((q) => q === 0)).toBe(true);
    expect(await arch.queue.count()).toBe(0);
    utimesSync(old, Date.now() / 1000 - 3600, Date.now() / 1000 - 3600);
    await until(async () => (await arch.queue.count()) === 1);
    await h2.close();

    // The periodic rescan puts back what a Redis restart lost.
    await arch.queue.obliterate({ force: true });
    const h3 = startWatching({
      config: arch.config,
      queue: arch.queue,
      redis: arch.conn,
      debounceMs: 60_000,
      rescanMs: 100,
    });
    await h3.ready;
    await until(async () => (await arch.queue.count()) === 1);
    await h3.close();
    await Promise.all([queue.close(), arch.queue.close()]);
    conn.disconnect();
    arch.conn.disconnect();
  });
});

async function until(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Holds `<logDir>/.lock` as a running Kafka broker does (python's lockf: a process-associated F_SETLK). */
async function holdLogDirLock(logDir: string): Promise<{ release: () => Promise<void> }> {
  writeFileSync(join(logDir, '.lock'), '');
  const holder = await holdLockAsABroker(join(logDir, '.lock'));
  const exited = new Promise((resolve) => holder.once('exit', resolve));
  return {
    release: async () => {
      holder.stdin.end();
      await exited;
    },
  };
}

/** Every file under `dir` with its bytes' digest, size and mtime: what "nothing changed" means. */
function snapshotDir(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else {
        const st = statSync(p);
        out[p] =
          `${createHash('sha256').update(readFileSync(p)).digest('hex')} ${st.size} ${st.mtimeMs} ${st.ino}`;
      }
    }
  };
  walk(dir);
  return out;
}

needs(redisServer, python3).describe("the watcher beside a running broker (its log dir's .lock held)", () => {
  let redis: TestRedis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-watcher-held-')));
  let n = 0;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  function setup(stageDir: string | undefined) {
    const name = `h${++n}`;
    const logDir = join(tmp, name, 'kafka-logs');
    for (const p of ['t-0', 't-1']) {
      mkdirSync(join(logDir, p), { recursive: true });
      for (const f of [seg(0), seg(10)]) writeFileSync(join(logDir, p, f), `bytes of ${p}/${f}`);
    }
    const config = loadConfig({
      env: {},
      flags: {
        // The stage dir beside the log dir, both within the roots (the workers write it).
        roots: [join(tmp, name)],
        'redis.url': redis.url,
        'queue.name': name,
        'log.level': 'silent',
        ...(stageDir !== undefined ? { stageDir: join(tmp, name, stageDir) } : {}),
      },
    });
    const conn = createRedis(redis.url);
    return { name, logDir, config, conn, queue: openQueue(config, conn) };
  }

  it('--once queues only prepare jobs into the stage dir, and nothing in the log dir changes', async () => {
    const { logDir, config, conn, queue } = setup('stage');
    const lock = await holdLogDirLock(logDir);
    try {
      const before = snapshotDir(logDir);
      const r = await runOnce({ config, queue, redis: conn });
      expect(r).toMatchObject({ ready: 2, queued: 2, prepared: [logDir], refused: [], ok: true });
      const jobs = await queue.getJobs(['waiting']);
      const stage = join(logDir, '..', 'stage');
      expect(jobs.map((j) => [j.data.path, j.data.mode, j.data.stageDir, j.id?.slice(0, 5)]).sort()).toEqual([
        [join(logDir, 't-0', seg(0)), 'prepare', stage, 'prep-'],
        [join(logDir, 't-1', seg(0)), 'prepare', stage, 'prep-'],
      ]);
      expect(snapshotDir(logDir)).toEqual(before);
      // A second run queues nothing new (same ids).
      await runOnce({ config, queue, redis: conn });
      expect(await queue.count()).toBe(2);
    } finally {
      await lock.release();
    }
    await queue.close();
    conn.disconnect();
  });

  it('without a stage dir nothing is queued, and the reason names the log dir and the setting', async () => {
    const { logDir, config, conn, queue } = setup(undefined);
    const lock = await holdLogDirLock(logDir);
    try {
      const before = snapshotDir(logDir);
      const r = await runOnce({ config, queue, redis: conn });
      expect(r).toMatchObject({ queued: 0, ok: false });
      expect(r.refused).toEqual([
        {
          logDir,
          reason: expect.stringMatching(
            /^log dir .* belongs to a running Kafka broker \(its \.lock is held by pid \d+\): nothing is converted in place beside it; set stageDir/,
          ),
        },
      ]);
      expect(await queue.count()).toBe(0);
      // A stage dir the workers could not write (outside their roots): refused too.
      const outside = join(tmp, 'outside-stage');
      const r2 = await runOnce({ config: { ...config, stageDir: outside }, queue, redis: conn });
      expect(r2.refused[0]?.reason).toMatch(/running Kafka broker .*: .*allowed roots: /);
      expect(await queue.count()).toBe(0);
      expect(snapshotDir(logDir)).toEqual(before);
    } finally {
      await lock.release();
    }
    await queue.close();
    conn.disconnect();
  });

  it('the daemon keeps the stage topped up as segments roll, prepare only, even after the broker stops', async () => {
    const { logDir, config, conn, queue } = setup('stage');
    const lock = await holdLogDirLock(logDir);
    const h = startWatching({ config, queue, redis: conn, debounceMs: 50, rescanMs: 0 });
    try {
      await h.ready;
      await until(async () => (await queue.count()) === 2);
      // The broker rolls t-0: its former active segment is ready, as a prepare job.
      writeFileSync(join(logDir, 't-0', seg(20)), 'new active segment');
      await until(async () => (await queue.count()) === 3);
      // A rolling restart frees .lock for a while: still a running broker's log dir.
      await lock.release();
      writeFileSync(join(logDir, 't-1', seg(20)), 'new active segment');
      await until(async () => (await queue.count()) === 4);
      const jobs = await queue.getJobs(['waiting']);
      expect(jobs.every((j) => j.data.mode === 'prepare')).toBe(true);
      expect(jobs.map((j) => j.data.path).sort()).toEqual([
        join(logDir, 't-0', seg(0)),
        join(logDir, 't-0', seg(10)),
        join(logDir, 't-1', seg(0)),
        join(logDir, 't-1', seg(10)),
      ]);
    } finally {
      await h.close();
      await lock.release();
    }
    await queue.close();
    conn.disconnect();
  });

  it('a partition linked in from another disk: the log dir holding the link decides, never its real parent', async () => {
    const { name, logDir, config, conn, queue } = setup(undefined);
    // t-0 moved to another directory (within the roots) and linked back, as Kafka loads it.
    const other = join(tmp, name, 'disk2');
    mkdirSync(other);
    rmSync(join(logDir, 't-1'), { recursive: true });
    execFileSync('mv', [join(logDir, 't-0'), join(other, 't-0')]);
    symlinkSync(join(other, 't-0'), join(logDir, 't-0'));
    const lock = await holdLogDirLock(logDir);
    try {
      const before = snapshotDir(other);
      const r = await runOnce({ config, queue, redis: conn });
      expect(r).toMatchObject({ ready: 1, queued: 0, ok: false });
      expect(r.refused).toEqual([
        { logDir, reason: expect.stringMatching(/belongs to a running Kafka broker/) },
      ]);
      // With a stage dir: the linked partition cannot be staged (another disk); nothing queued.
      const staged = await runOnce({
        config: { ...config, stageDir: join(tmp, name, 'stage') },
        queue,
        redis: conn,
      });
      expect(staged).toMatchObject({ queued: 0, prepared: [logDir] });
      expect(staged.refused).toEqual([
        {
          logDir: join(other, 't-0'),
          reason: expect.stringMatching(/linked into the running broker's log dir/),
        },
      ]);
      expect(await queue.count()).toBe(0);
      expect(snapshotDir(other)).toEqual(before);
    } finally {
      await lock.release();
    }
    // The broker stopped: an in-place job that names the log dir it was found in.
    const free = await runOnce({ config, queue, redis: conn });
    expect(free).toMatchObject({ queued: 1, refused: [] });
    const jobs = await queue.getJobs(['waiting']);
    expect(jobs.map((j) => [j.data.path, j.data.mode, j.data.logDir])).toEqual([
      [join(other, 't-0', seg(0)), undefined, logDir],
    ]);
    await queue.close();
    conn.disconnect();
  });
});
