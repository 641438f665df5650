/**
 * The built seglift-worker on the real conversion pipeline and a real Redis, for what an operator
 * relies on: the partition lock renewed, re-taken and lost in the middle of a conversion, the
 * abort at the end of the shutdown grace period, and coalesce grouping past the segment reader's
 * 1 MiB chunk. Only public behaviour is used (the program and its environment, the queue jobs
 * a watcher would add, the partition lock key in Redis, the files), so that these tests hold
 * whatever the worker's insides become. "Under way" is seen on disk: a conversion writes its
 * temp files first.
 */
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Config, conversionSettings, loadConfig } from '@seglift/config';
import { createRedis, partitionLeaseKey, SEGMENT_JOB_NAME, segmentJobId } from '@seglift/queue';
import { verifySegment } from '@seglift/segment';
import {
  built,
  faultEnv,
  needs,
  redisServer,
  spawnProgram,
  startRedis,
  type TestRedis,
} from '@seglift/testkit';
import { independentRecords, shallowEntries } from '@seglift/testkit/independent';
import { type Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { encodeSegment, type Kind } from './test-support/segments.js';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const WORKER = join(repoRoot, 'apps/worker/dist/seglift-worker');
const dist = built(
  WORKER,
  join(repoRoot, 'packages/segment/dist/conversion-thread.js'),
  join(repoRoot, 'packages/segment/dist/index.js'),
);

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
const seg = (n: bigint) => `${n.toString().padStart(20, '0')}.log`;
/** What a conversion or a crash leaves beside the segment (never after a clean end). */
const LEFTOVER = /\.(swap|cleaned|seglift-tmp|seglift-swap)$|\.seglift\.lock$/;

async function until(cond: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

needs(redisServer, dist).describe('seglift-worker on the real pipeline with Redis', () => {
  let redis: TestRedis;
  let conn: Redis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-worker-pipeline-')));
  const root = join(tmp, 'root');
  const procs: ReturnType<typeof spawnProgram>[] = [];
  let n = 0;

  beforeAll(async () => {
    redis = await startRedis();
    conn = createRedis(redis.url);
  });
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    conn?.disconnect();
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  interface Setup {
    config: Config;
    queue: Queue;
    dir: string;
    log: string;
    original: { sha: string; records: Awaited<ReturnType<typeof independentRecords>> };
    env: Record<string, string>;
  }

  /** A partition with one rolled segment of `records` `kind` messages (and a newer one), a queue. */
  async function setup(
    kind: Kind,
    records: number,
    valueBytes: number,
    env: Record<string, string> = {},
  ): Promise<Setup> {
    const name = `p${++n}`;
    const dir = join(root, `${name}-0`);
    mkdirSync(dir, { recursive: true });
    const log = join(dir, seg(0n));
    writeFileSync(log, encodeSegment(kind, 0n, records, n, valueBytes));
    writeFileSync(join(dir, seg(BigInt(records))), encodeSegment('v2-none', BigInt(records), 10, n + 1000));
    const config = loadConfig({
      env: {},
      flags: { roots: [root], 'redis.url': redis.url, 'queue.name': name },
    });
    const queue = new Queue(config.queue.name, {
      connection: createRedis(redis.url),
      prefix: config.queue.prefix,
    });
    return {
      config,
      queue,
      dir,
      log,
      original: { sha: sha(log), records: await independentRecords(readFileSync(log)) },
      env: {
        SEGLIFT_ROOTS: root,
        SEGLIFT_REDIS_URL: redis.url,
        SEGLIFT_QUEUE_NAME: name,
        SEGLIFT_CODEC: 'zstd',
        SEGLIFT_WORKER_CONCURRENCY: '1',
        SEGLIFT_WORKER_BACKOFF_MS: '100',
        SEGLIFT_METRICS_PORT: '0',
        SEGLIFT_METRICS_HOST: '127.0.0.1',
        SEGLIFT_LOG_LEVEL: 'info',
        ...env,
      },
    };
  }

  function startWorkerProcess(s: Setup, env: Record<string, string> = {}) {
    const p = spawnProgram(WORKER, [], { ...s.env, ...env });
    procs.push(p);
    return p;
  }

  /** The job a watcher would queue for the segment (same id, data and retry options). */
  async function enqueue(s: Setup): Promise<Job> {
    const st = statSync(s.log);
    const data = { path: s.log, size: st.size, mtimeMs: st.mtimeMs, settings: conversionSettings(s.config) };
    return s.queue.add(SEGMENT_JOB_NAME, data, {
      jobId: segmentJobId(data),
      attempts: 3,
      backoff: { type: 'fixed', delay: 100 },
    });
  }

  /**
   * Holds the worker's conversion right after it creates its temp .log (testkit's fault-preload.mjs) until
   * `release()`: the test acts on a conversion known to be under way instead of racing it.
   */
  function hold(s: Setup): { env: Record<string, string>; release: () => void } {
    const file = join(tmp, `hold-${s.config.queue.name}`);
    writeFileSync(file, '');
    return {
      env: faultEnv({ SEGLIFT_TEST_HOLD_AFTER: 'create:.log.seglift-tmp', SEGLIFT_TEST_HOLD_WHILE: file }),
      release: () => rmSync(file, { force: true }),
    };
  }

  /**
   * A worker converting a segment of 4,000 v1 messages, held right after its temp .log is created
   * (see hold) with the partition's lease taken: the state each lease and shutdown test starts from.
   */
  async function heldConversion(env: Record<string, string>) {
    const s = await setup('v1', 4_000, 150, env);
    const held = hold(s);
    const w = startWorkerProcess(s, held.env);
    const job = await enqueue(s);
    await until(
      async () => underWay(s) && (await conn.get(lockKey(s))) !== null,
      60_000,
      'a conversion to start',
    );
    return { s, held, w, job };
  }

  const underWay = (s: Setup) => readdirSync(s.dir).some((f) => f.endsWith('.seglift-tmp'));
  const leftovers = (s: Setup) => readdirSync(s.dir).filter((f) => LEFTOVER.test(f));
  const lockKey = (s: Setup) => partitionLeaseKey(s.config, s.dir);
  const state = async (s: Setup, job: Job) => s.queue.getJobState(job.id!);
  /** Waits for the job to complete, and fails with its reason if it failed for good instead. */
  async function completed(s: Setup, job: Job): Promise<void> {
    await until(async () => ['completed', 'failed'].includes(await state(s, job)), 120_000, 'the job to end');
    const j = await s.queue.getJob(job.id!);
    // (failedReason may also tell of an earlier attempt of a job that completed.)
    expect(await state(s, job), j?.failedReason).toBe('completed');
    expect(j?.returnvalue).toMatchObject({ result: 'converted' });
  }

  /** The segment now holds exactly the original records, as v2 zstd batches that verify clean. */
  async function expectConverted(s: Setup): Promise<Buffer> {
    const bytes = readFileSync(s.log);
    expect(await independentRecords(bytes)).toEqual(s.original.records);
    const entries = shallowEntries(bytes);
    expect(entries.every((e) => e.magic === 2 && (e.bytes.readInt16BE(21) & 7) === 4)).toBe(true);
    const v = await verifySegment(s.log);
    expect({ ok: v.ok, problems: v.problems }).toEqual({ ok: true, problems: [] });
    expect(leftovers(s)).toEqual([]);
    return bytes;
  }

  async function stop(p: ReturnType<typeof spawnProgram>): Promise<void> {
    p.child.kill('SIGTERM');
    expect((await p.exited).code, p.output()).toBe(0);
  }

  it('renews the partition lock past its TTL and takes it again when the key vanished mid-conversion', async () => {
    // Lock TTL 1 s, renewed every 333 ms; the conversion held until the re-take was seen.
    const { s, held, w, job } = await heldConversion({ SEGLIFT_WORKER_LOCK_DURATION_MS: '1000' });
    const token = await conn.get(lockKey(s));
    const seenAt = Date.now();
    // Renewed: still held with the same token past the 1 s TTL.
    await until(() => Date.now() - seenAt > 1500, 5000, 'a TTL and a half');
    expect(await state(s, job)).toBe('active');
    expect(await conn.get(lockKey(s))).toBe(token);
    // Redis restarted without persistence: the key is gone. The holder takes it again.
    expect(await conn.del(lockKey(s))).toBe(1);
    await until(
      async () => (await conn.get(lockKey(s))) !== null || (await state(s, job)) !== 'active',
      5000,
      'the re-take',
    );
    expect(await state(s, job)).toBe('active');
    expect(await conn.get(lockKey(s))).toBe(token);
    held.release();
    await completed(s, job);
    expect(await conn.get(lockKey(s))).toBeNull(); // released
    await expectConverted(s);
    await stop(w);
    await s.queue.close();
  }, 180_000);

  it('a lock lost to another holder, seen by the renewal, aborts the conversion: nothing swapped; the job converts once the partition is free', async () => {
    const { s, held, w, job } = await heldConversion({ SEGLIFT_WORKER_LOCK_DURATION_MS: '1000' });
    // Another worker holds the partition now (the key expired during an outage and was taken).
    await conn.set(lockKey(s), 'another-worker', 'PX', 600_000);
    // Renewals (every 333 ms) see it while the conversion is held; released, it must not swap.
    // (Either way the swap gate checks the lease too: nothing may be swapped.)
    await new Promise((r) => setTimeout(r, 1000));
    held.release();
    await until(async () => (await state(s, job)) !== 'active', 60_000, 'the job to give up the segment');
    expect(sha(s.log)).toBe(s.original.sha);
    expect(leftovers(s)).toEqual([]);
    expect(await conn.get(lockKey(s))).toBe('another-worker'); // not released by the loser
    // The job comes back (retry, or delayed while the partition is locked) and converts once free.
    expect(['delayed', 'waiting', 'wait', 'active']).toContain(await state(s, job));
    await conn.del(lockKey(s));
    await completed(s, job);
    await expectConverted(s);
    await stop(w);
    await s.queue.close();
  }, 180_000);

  it('a lock lost to another holder between two renewals never lets the job swap the segment', async () => {
    // Renewal every 20 s: the conversion, held until the lock is lost, ends before the next one.
    const { s, held, w, job } = await heldConversion({ SEGLIFT_WORKER_LOCK_DURATION_MS: '60000' });
    await conn.set(lockKey(s), 'another-worker', 'PX', 600_000);
    held.release();
    await until(async () => (await state(s, job)) !== 'active', 60_000, 'the attempt to end');
    try {
      expect(sha(s.log), 'the segment was rewritten by a worker that no longer held its partition').toBe(
        s.original.sha,
      );
    } finally {
      await conn.del(lockKey(s));
      w.child.kill('SIGKILL');
      await w.exited;
      await s.queue.close();
    }
  }, 120_000);

  it('SIGTERM: past the grace period the running conversion is aborted, the segment untouched and the job requeued', async () => {
    const { s, held, w, job } = await heldConversion({ SEGLIFT_WORKER_SHUTDOWN_GRACE_MS: '100' });
    w.child.kill('SIGTERM');
    // Held past the grace period: the abort reaches the conversion before it may go on.
    await until(() => w.output().includes('grace period over'), 30_000, 'the grace period to end');
    held.release();
    expect((await w.exited).code, w.output()).toBe(0);
    expect(w.output()).toContain('conversion aborted for shutdown; job requeued');
    expect(sha(s.log)).toBe(s.original.sha);
    expect(leftovers(s)).toEqual([]);
    expect(['delayed', 'waiting', 'wait']).toContain(await state(s, job));
    expect((await s.queue.getJob(job.id!))?.attemptsMade).toBe(0);
    // Another worker picks it up and converts it.
    const w2 = startWorkerProcess(s);
    await completed(s, job);
    await expectConverted(s);
    await stop(w2);
    await s.queue.close();
  }, 180_000);

  it('--grouping coalesce converts a segment of small uncompressed magic-1 messages well past the 1 MiB reader chunk', async () => {
    // ~3.5 MB of ~180-byte entries: a coalesced batch (1 MiB) holds records read into a buffer
    // that the reader has reused by the time the batch is written (caught before bbc5e36).
    const s = await setup('v1', 20_000, 150, { SEGLIFT_GROUPING: 'coalesce' });
    expect(statSync(s.log).size).toBeGreaterThan(3 * 1024 * 1024);
    const w = startWorkerProcess(s);
    const job = await enqueue(s);
    await completed(s, job);
    const bytes = await expectConverted(s);
    // Coalesced: batches of many records (kafka grouping would write one batch per message).
    expect(shallowEntries(bytes).length).toBeLessThan(20_000 / 100);
    await stop(w);
    await s.queue.close();
  }, 180_000);
});
