/**
 * End to end over the built dist (run `pnpm build` first): seglift-watcher --once --wait and
 * seglift-worker processes on a real Redis, the real @seglift/segment pipeline, generated segments.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
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
import { conversionSettings, loadConfig } from '@seglift/config';
import {
  createRedis,
  decodeJobFailure,
  doneMarkerKey,
  fileStateOf,
  SEGMENT_JOB_NAME,
  segmentJobId,
} from '@seglift/queue';
import { verifySegment } from '@seglift/segment';
import { built, needs, redisServer, spawnProgram, startRedis, type TestRedis } from '@seglift/testkit';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  encodeSegment,
  type GeneratedSegment,
  generateLogDir,
  segmentDigest,
} from './test-support/segments.js';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const WORKER = join(repoRoot, 'apps/worker/dist/seglift-worker');
const WATCHER = join(repoRoot, 'apps/watcher/dist/seglift-watcher');
const dist = built(WORKER, WATCHER, join(repoRoot, 'packages/segment/dist/index.js'));

interface Proc {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

function run(script: string, args: string[], env: Record<string, string>): Proc {
  const p = spawnProgram(script, args, env);
  return { ...p, exited: p.exited.then((e) => e.code) };
}

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');
const LEFTOVER = /\.(swap|cleaned|seglift-tmp|seglift-swap)$|\.seglift\.lock$/;

function leftovers(root: string): string[] {
  const found: string[] = [];
  // Partition dirs only: the log dir's `.lock` is Kafka's, taken by the workers too.
  for (const d of readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory()))
    for (const f of readdirSync(join(root, d.name))) if (LEFTOVER.test(f)) found.push(`${d.name}/${f}`);
  return found;
}

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

needs(redisServer, dist).describe('distributed mode end to end', () => {
  let redis: TestRedis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-e2e-')));
  const procs: Proc[] = [];

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  const envFor = (root: string, queue: string): Record<string, string> => ({
    SEGLIFT_ROOTS: root,
    SEGLIFT_REDIS_URL: redis.url,
    SEGLIFT_QUEUE_NAME: queue,
    SEGLIFT_CODEC: 'zstd',
    SEGLIFT_WORKER_CONCURRENCY: '2',
    SEGLIFT_WORKER_LOCK_DURATION_MS: '2000',
    SEGLIFT_WORKER_STALLED_INTERVAL_MS: '1000',
    SEGLIFT_WORKER_BACKOFF_MS: '200',
    SEGLIFT_WORKER_SHUTDOWN_GRACE_MS: '5000',
    SEGLIFT_METRICS_PORT: '0',
    SEGLIFT_METRICS_HOST: '127.0.0.1',
    SEGLIFT_LOG_LEVEL: 'info',
  });
  const worker = (env: Record<string, string>) => {
    const p = run(WORKER, [], env);
    procs.push(p);
    return p;
  };
  const stopWorker = async (p: Proc) => {
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  };

  async function checkConverted(
    segments: GeneratedSegment[],
    before: Map<string, { digest: string; sha: string }>,
  ) {
    for (const s of segments) {
      const d = await segmentDigest(s.path);
      const orig = before.get(s.path)!;
      expect(d.records, s.path).toBe(s.records);
      expect(d.digest, s.path).toBe(orig.digest);
      if (s.active) {
        expect(sha(s.path), `active ${s.path} untouched`).toBe(orig.sha);
        continue;
      }
      expect(d.formats, s.path).toEqual(['v2/4']);
      const v = await verifySegment(s.path);
      expect({ path: s.path, ok: v.ok, problems: v.problems }).toEqual({
        path: s.path,
        ok: true,
        problems: [],
      });
    }
  }

  async function snapshot(segments: GeneratedSegment[]) {
    const m = new Map<string, { digest: string; sha: string }>();
    for (const s of segments)
      m.set(s.path, { digest: (await segmentDigest(s.path)).digest, sha: sha(s.path) });
    return m;
  }

  it('watcher --once --wait with two workers converts 54 mixed segments exactly once; a second run converts nothing', async () => {
    const root = join(tmp, 'logs-a');
    const segments = generateLogDir(root, { topic: 'orders', partitions: 6, perPartition: 9, records: 60 });
    expect(segments.filter((s) => !s.active)).toHaveLength(54);
    const before = await snapshot(segments);
    const env = envFor(root, 'e2e-a');
    // Both exit by themselves once the queue stayed empty for 2 s (Kubernetes Job mode).
    const workers = [0, 1].map(() => {
      const p = run(WORKER, ['--exit-when-drained', '--idle-ms', '2000'], env);
      procs.push(p);
      return p;
    });
    const watcher = run(WATCHER, ['--once', '--wait'], env);
    expect(await watcher.exited, watcher.output()).toBe(0);
    const summary = watcher.output();
    if (process.env.E2E_DEBUG) console.log(summary, workers[0].output());
    expect(summary).toMatch(/"queued":54/);
    expect(summary).toMatch(/"succeeded":54/);
    await checkConverted(segments, before);
    expect(leftovers(root)).toEqual([]);

    // Each segment converted by exactly one job, spread over both workers.
    const logs = workers.map((w) => w.output());
    const converted = logs.flatMap((l) =>
      [...l.matchAll(/"segment":"([^"]+)".*"result":"converted"/g)].map((m) => m[1]),
    );
    expect(converted.sort()).toEqual(
      segments
        .filter((s) => !s.active)
        .map((s) => s.path)
        .sort(),
    );
    expect(logs.every((l) => l.includes('"result":"converted"'))).toBe(true);

    const after = new Map(segments.map((s) => [s.path, sha(s.path)]));
    const again = run(WATCHER, ['--once', '--wait'], env);
    expect(await again.exited, again.output()).toBe(0);
    expect(again.output()).toMatch(/"queued":0/);
    expect(again.output()).toMatch(/"alreadyDone":54/);
    for (const s of segments) expect(sha(s.path)).toBe(after.get(s.path));
    for (const w of workers) expect(await w.exited, w.output()).toBe(0);
    expect(workers[0].output()).toContain('"signal":"drained"');
  });

  it('a rollback (cp -p of the backups over the converted files) is converted again by the next --once --wait; a segment it leaves unconverted fails the run, named', async () => {
    const root = join(tmp, 'logs-r');
    const backups = join(tmp, 'backups-r');
    const segments = generateLogDir(root, { topic: 'rb', partitions: 1, perPartition: 3, records: 30 });
    const before = await snapshot(segments);
    const env = { ...envFor(root, 'e2e-r'), SEGLIFT_BACKUP_DIR: backups };
    // The workers write the backups: within their roots, as deploy/base gives them.
    const workerEnv = { ...env, SEGLIFT_ROOTS: `${root},${backups}` };
    const migrate = async () => {
      const w = run(WORKER, ['--exit-when-drained', '--idle-ms', '1000'], workerEnv);
      procs.push(w);
      const watcher = run(WATCHER, ['--once', '--wait'], env);
      const code = await watcher.exited;
      expect(await w.exited, w.output()).toBe(0);
      return { code, output: watcher.output() };
    };
    const first = await migrate();
    expect(first.code, first.output).toBe(0);
    expect(first.output).toMatch(/"queued":3/);
    await checkConverted(segments, before);
    // The operator guide's rollback: the backups copied over the converted files, times kept.
    const restore = () => {
      const b = join(backups, 'rb-0');
      const files = readdirSync(b).filter((f) => !f.startsWith('.'));
      execFileSync('cp', ['-p', ...files.map((f) => join(b, f)), join(root, 'rb-0')]);
      for (const s of segments) expect(sha(s.path), s.path).toBe(before.get(s.path)!.sha);
    };
    restore();
    // Same path, size and mtime as the first run's jobs: converted again all the same.
    const second = await migrate();
    expect(second.code, second.output).toBe(0);
    expect(second.output).toMatch(/"queued":3,"alreadyDone":0,"succeeded":3/);
    await checkConverted(segments, before);
    // A done marker that lies about a restored file (what an id a restore can repeat would find):
    // the run reads the segment, names it and fails.
    restore();
    const lie = segments[0].path;
    const conn = createRedis(redis.url);
    const settings = conversionSettings(loadConfig({ env: {}, flags: { codec: 'zstd' } }));
    const id = segmentJobId({ ...fileStateOf(lie, statSync(lie, { bigint: true })), settings });
    await conn.set(doneMarkerKey({ queue: { prefix: 'seglift', name: 'e2e-r' } }, id), '1');
    conn.disconnect();
    const third = await migrate();
    expect(third.code, third.output).toBe(1);
    expect(third.output).toMatch(/"queued":2,"alreadyDone":1,"succeeded":2/);
    const notDone = third.output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => /^segment not done after the run/.test(l.msg));
    expect(notDone.map((l) => [l.segment, l.reason])).toEqual([
      [lie, expect.stringMatching(/^still holds a magic 0 entry \(v0\/none\) at position 0$/)],
    ]);
  }, 60_000);

  it("a bad segment: the worker's and the watcher's failure lines carry err.code, err.file, err.position and err.offset", async () => {
    const root = join(tmp, 'logs-c');
    const dir = join(root, 'bad-0');
    mkdirSync(dir, { recursive: true });
    const log = join(dir, `${'0'.padStart(20, '0')}.log`);
    // Five v1 messages; a byte of the third one's value flipped: its CRC-32 no longer matches.
    const bytes = encodeSegment('v1', 0n, 5, 7);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let third = 0;
    for (let i = 0; i < 2; i++) third += 12 + view.getInt32(third + 8);
    const end = third + 12 + view.getInt32(third + 8);
    bytes[end - 1] ^= 0xff;
    writeFileSync(log, bytes);
    writeFileSync(join(dir, `${'5'.padStart(20, '0')}.log`), encodeSegment('v1', 5n, 5, 8));
    const env = { ...envFor(root, 'e2e-c'), SEGLIFT_WORKER_ATTEMPTS: '1' };
    const w = run(WORKER, ['--exit-when-drained', '--idle-ms', '1000'], env);
    procs.push(w);
    const watcher = run(WATCHER, ['--once', '--wait'], env);
    expect(await watcher.exited, watcher.output()).toBe(1);
    expect(await w.exited, w.output()).toBe(0);
    const lines = (out: string, msg: string) =>
      out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l))
        .filter((l) => l.msg === msg);
    const err = { code: 'CRC_MISMATCH', file: log, position: third, offset: '2' };
    const [failed, ...more] = lines(watcher.output(), 'segment failed');
    expect(more).toEqual([]);
    expect(failed).toMatchObject({ segment: log, err });
    expect(failed.error).toBeUndefined();
    const [conversion] = lines(w.output(), 'conversion failed');
    expect(conversion).toMatchObject({ segment: log, err });
    const [job] = lines(w.output(), 'job failed');
    expect(job).toMatchObject({ segment: log, err });
    expect(readFileSync(log)).toEqual(Buffer.from(bytes));
  }, 60_000);

  it('another codec is another job: the samples converted with lz4, then with zstd by a worker whose own settings say lz4, each run exit 0 with every ready segment in its codec', async () => {
    const root = join(tmp, 'logs-s');
    cpSync(join(repoRoot, 'samples/kafka-logs'), root, { recursive: true });
    // Ready: every segment but the newest of its partition (rolled).
    const ready = readdirSync(root).flatMap((p) =>
      readdirSync(join(root, p))
        .filter((f) => f.endsWith('.log'))
        .sort()
        .slice(0, -1)
        .map((f) => join(root, p, f)),
    );
    expect(ready).toHaveLength(7);
    const before = new Map<string, string>();
    for (const p of ready) before.set(p, (await segmentDigest(p)).digest);
    const migrateWith = async (watcherCodec: string, workerCodec: string) => {
      const env = envFor(root, 'e2e-s');
      const w = worker({ ...env, SEGLIFT_CODEC: workerCodec });
      const watcher = run(WATCHER, ['--once', '--wait'], { ...env, SEGLIFT_CODEC: watcherCodec });
      const code = await watcher.exited;
      await stopWorker(w);
      return { code, output: watcher.output() };
    };
    // The batches' codecs (attributes' bits): lz4 3, zstd 4; the samples' transaction markers too.
    const codecs = async () =>
      new Set((await Promise.all(ready.map((p) => segmentDigest(p)))).flatMap((d) => d.formats));
    const lz4 = await migrateWith('lz4', 'lz4');
    expect(lz4.code, lz4.output).toBe(0);
    expect(lz4.output).toMatch(/"queued":7,"alreadyDone":0,"succeeded":7/);
    expect([...(await codecs())].sort()).toEqual(['v2/3', 'v2/control']);
    const zstd = await migrateWith('zstd', 'lz4');
    expect(zstd.code, zstd.output).toBe(0);
    expect(zstd.output).toMatch(/"queued":7,"alreadyDone":0,"succeeded":7/);
    expect([...(await codecs())].sort()).toEqual(['v2/4', 'v2/control']);
    for (const p of ready) {
      expect((await segmentDigest(p)).digest, p).toBe(before.get(p));
      expect((await verifySegment(p)).ok, p).toBe(true);
    }
    // The same settings again: done.
    const again = await migrateWith('zstd', 'lz4');
    expect(again.code, again.output).toBe(0);
    expect(again.output).toMatch(/"queued":0,"alreadyDone":7/);
  }, 90_000);

  it("a job whose data is not JSON, and one without conversion settings (an older watcher's), fail at once (INVALID_ARGUMENT) and --exit-when-drained exits 0", async () => {
    const root = join(tmp, 'logs-u');
    mkdirSync(root, { recursive: true });
    const env = envFor(root, 'e2e-u');
    const conn = createRedis(redis.url);
    const queue = new Queue('e2e-u', { connection: conn, prefix: 'seglift' });
    const log = join(root, 't-0', `${'0'.padStart(20, '0')}.log`);
    await queue.add(SEGMENT_JOB_NAME, {}, { jobId: 'not-json', attempts: 5 });
    await conn.hset('seglift:e2e-u:not-json', 'data', '{"path": "/data/t-0/0000');
    await queue.add(
      SEGMENT_JOB_NAME,
      { path: log, size: 1, mtimeMs: 1 },
      { jobId: 'no-settings', attempts: 5 },
    );
    // A job as this version queues it, beside them: still converted (here: gone, skipped).
    const settings = conversionSettings(loadConfig({ env: {}, flags: { roots: [root] } }));
    await queue.add(SEGMENT_JOB_NAME, { path: log, size: 1, mtimeMs: 1, settings }, { jobId: 'ok' });
    const w = run(WORKER, ['--exit-when-drained', '--idle-ms', '1000'], env);
    procs.push(w);
    const exited = await Promise.race([
      w.exited,
      new Promise<string>((r) => setTimeout(() => r('still running after 30 s'), 30_000)),
    ]);
    expect(exited, w.output()).toBe(0);
    // Read raw: BullMQ's Job.fromId parses the data too.
    const failure = async (id: string) => {
      const job = await conn.hgetall(`seglift:e2e-u:${id}`);
      return { state: await queue.getJobState(id), attempts: job.atm, ...decodeJobFailure(job.failedReason) };
    };
    expect(await failure('not-json')).toMatchObject({
      state: 'failed',
      attempts: '1',
      name: 'InvalidJobError',
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/^the job's data is not JSON \(.*\): not a job any seglift queued$/),
    });
    expect(await failure('no-settings')).toMatchObject({
      state: 'failed',
      attempts: '1',
      name: 'InvalidJobError',
      code: 'INVALID_ARGUMENT',
      file: log,
      message: expect.stringContaining('the job carries no conversion settings'),
    });
    expect(await (await queue.getJob('ok'))?.getState()).toBe('completed');
    await queue.close();
    conn.disconnect();
  }, 60_000);

  it('survives kill -9 of a worker mid-conversion and a Redis restart', async () => {
    const root = join(tmp, 'logs-b');
    // Bigger segments so that a conversion is still running when the worker is killed.
    const segments = generateLogDir(root, {
      topic: 'big',
      partitions: 4,
      perPartition: 3,
      records: 40_000,
      valueBytes: 150,
    });
    const before = await snapshot(segments);
    const env = envFor(root, 'e2e-b');
    const w1 = worker({ ...env, SEGLIFT_WORKER_CONCURRENCY: '1' });
    const watcher = run(WATCHER, ['--once', '--wait'], env);
    // A conversion is under way once its temp files exist.
    await until(
      () =>
        readdirSync(root, { withFileTypes: true }).some(
          (d) => d.isDirectory() && readdirSync(join(root, d.name)).some((f) => f.endsWith('.seglift-tmp')),
        ),
      30_000,
      'a conversion to start',
    );
    w1.child.kill('SIGKILL');
    await w1.exited;
    expect(leftovers(root).length).toBeGreaterThan(0);
    const w2 = worker(env);
    const w3 = worker(env);
    // Restart Redis (no persistence: the queue is lost) once some segments are done.
    await until(
      () => (w2.output() + w3.output()).includes('"result":"converted"'),
      60_000,
      'a conversion after the kill',
    );
    await redis.restart({ downMs: 300 });
    expect(await watcher.exited, watcher.output()).toBe(0);
    expect(watcher.output()).toMatch(/"succeeded":12/);
    await checkConverted(segments, before);
    expect(leftovers(root)).toEqual([]);
    await Promise.all([w2, w3].map(stopWorker));
  }, 110_000);
});
