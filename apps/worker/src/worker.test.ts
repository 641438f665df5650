import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { type Config, conversionSettings, loadConfig } from '@seglift/config';
import { CorruptRecordError, type SegliftError } from '@seglift/format';
import { createLogger, createMetrics, metricsSnapshot } from '@seglift/observability';
import { createRedis, doneMarkerKey, fileStateOf, SEGMENT_JOB_NAME, segmentJobId } from '@seglift/queue';
import {
  acquireLogDirLock,
  type ConvertSettings,
  emptyReport,
  LogDirLockedError,
  logDirLockHolder,
  type SegmentReport,
} from '@seglift/segment';
import { holdLockAsABroker, needs, python3, redisServer, startRedis, type TestRedis } from '@seglift/testkit';
import { type Job, Queue, QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { classifyError, toJobError } from './classify.js';
import type { ConvertFn } from './processor.js';
import { encodeSegment } from './test-support/segments.js';
import { startWorker, type WorkerHandle } from './worker.js';

/** A report as the pipeline gives it, with the fields a test cares about. */
const report = (path: string, over: Partial<SegmentReport>): SegmentReport => ({
  ...emptyReport(path),
  ...over,
});

const seg = (n: number) => `${String(n).padStart(20, '0')}.log`;

describe('classifyError', () => {
  it('fails format errors at once and retries I/O', () => {
    expect(classifyError(new CorruptRecordError('bad size'))).toBe('permanent');
    expect(classifyError({ code: 'VERIFY_MISMATCH' })).toBe('permanent');
    expect(classifyError({ code: 'PATH_OUTSIDE_ROOTS' })).toBe('permanent');
    expect(classifyError({ code: 'EACCES' })).toBe('permanent');
    expect(classifyError({ code: 'EBUSY' })).toBe('transient');
    expect(classifyError({ code: 'ENOSPC' })).toBe('transient');
    expect(classifyError({ code: 'IO', cause: { code: 'EROFS' } })).toBe('permanent');
    expect(classifyError({ code: 'IO', cause: { code: 'EIO' } })).toBe('transient');
    expect(classifyError(new Error('?'))).toBe('transient');
  });

  it("a log dir's .lock held by a broker fails the job; held by another seglift is retried", () => {
    expect(classifyError(new LogDirLockedError('/d', '/d/.lock', 4242))).toBe('permanent');
    // 0: a broker in another PID namespace (a container beside this one).
    expect(classifyError(new LogDirLockedError('/d', '/d/.lock', 0))).toBe('permanent');
    expect(classifyError(new LogDirLockedError('/d', '/d/.lock', -1))).toBe('transient');
  });

  it('carries the typed error JSON in UnrecoverableError', () => {
    const e = toJobError(new CorruptRecordError('bad size', { file: '/x.log', position: 12, offset: 5n }));
    expect(e.name).toBe('UnrecoverableError');
    expect(JSON.parse(e.message)).toEqual({
      name: 'CorruptRecordError',
      code: 'CORRUPT_RECORD',
      message: 'bad size',
      file: '/x.log',
      position: 12,
      offset: '5',
    });
  });
});

needs(redisServer).describe('worker with a real Redis', () => {
  let redis: TestRedis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-worker-')));
  const root = join(tmp, 'root');
  const outside = join(tmp, 'outside');
  let queueN = 0;

  beforeAll(async () => {
    redis = await startRedis();
    mkdirSync(outside, { recursive: true });
    writeFileSync(join(outside, seg(0)), 'x');
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  function setup(files: string[], overrides: Record<string, unknown> = {}) {
    const name = `q${++queueN}`;
    const dir = join(root, `${name}-0`);
    mkdirSync(dir, { recursive: true });
    for (const f of files) writeFileSync(join(dir, f), `data ${f}`);
    const config = loadConfig({
      env: {},
      flags: {
        roots: [root],
        'redis.url': redis.url,
        'queue.name': name,
        'worker.concurrency': 2,
        'worker.attempts': 3,
        'worker.backoffMs': 50,
        'log.level': 'silent',
        ...overrides,
      },
    });
    const conn = createRedis(redis.url);
    const queue = new Queue(name, { connection: conn, prefix: config.queue.prefix });
    const events = new QueueEvents(name, { connection: createRedis(redis.url), prefix: config.queue.prefix });
    return { config, dir, conn, queue, events };
  }

  async function add(
    queue: Queue,
    config: Config,
    data: unknown,
    id = `j-${Math.random().toString(36).slice(2)}`,
  ) {
    // size 1 and mtimeMs 1 stand for the file as it is: the state a watcher records; the job
    // carries the settings a watcher with this config plans with, unless it names its own.
    const d = { settings: conversionSettings(config), ...(data as object) } as {
      path?: string;
      size?: number;
      mtimeMs?: number;
    };
    data = d;
    if (d.size === 1 && d.mtimeMs === 1 && d.path !== undefined && existsSync(d.path)) {
      const st = statSync(d.path);
      data = { ...d, size: st.size, mtimeMs: st.mtimeMs };
    }
    return queue.add(SEGMENT_JOB_NAME, data, {
      jobId: id,
      attempts: config.worker.attempts,
      backoff: { type: 'exponential', delay: config.worker.backoffMs },
    });
  }

  async function finished(job: Job, events: QueueEvents): Promise<{ ok: boolean; value: unknown }> {
    try {
      return { ok: true, value: await job.waitUntilFinished(events, 20_000) };
    } catch (err) {
      return { ok: false, value: (err as Error).message };
    }
  }

  const logger = createLogger({ name: 'test', level: 'silent' });

  it('converts, reports progress, marks the result done and records metrics', async () => {
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10)]);
    const calls: Parameters<ConvertFn>[] = [];
    const convert: ConvertFn = async (...call) => {
      const [p, , , hooks] = call;
      calls.push(call);
      hooks.onProgress?.(5, 10);
      writeFileSync(p, 'converted!');
      return report(p, {
        result: 'converted',
        bytesIn: 10,
        bytesOut: 10,
        batchesIn: 2,
        batchesOut: 1,
        recordsIn: 4,
        recordsOut: 4,
      });
    };
    const metrics = createMetrics();
    const w = await startWorker({ config, logger, metrics, convert });
    const p = join(dir, seg(0));
    const st = statSync(p);
    const job = await add(queue, config, { path: p, size: st.size, mtimeMs: st.mtimeMs });
    const r = await finished(job, events);
    expect(r).toEqual({
      ok: true,
      value: { path: p, result: 'converted', bytesIn: 10, bytesOut: 10, durationMs: expect.any(Number) },
    });
    expect(calls).toHaveLength(1);
    expect(calls[0][1]).toMatchObject({
      codec: 'zstd',
      grouping: 'coalesce',
      maxBatchBytes: 1048588,
      indexIntervalBytes: 4096,
      maxDecompressedBatchBytes: 64 * 1024 * 1024,
    });
    expect(calls[0][2]).toMatchObject({ kind: 'inPlace' });
    expect(calls[0][3].signal).toBeInstanceOf(AbortSignal);
    expect(calls[0][3].beforeSwap).toBeInstanceOf(Function);
    // The marker names the file as the conversion left it (inode and ctime too).
    const doneId = segmentJobId({
      ...fileStateOf(p, statSync(p, { bigint: true })),
      settings: conversionSettings(config),
    });
    expect(await conn.exists(doneMarkerKey(config, doneId))).toBe(1);
    expect((await queue.getJob(job.id!))?.progress).toEqual({ bytesDone: 29, bytesTotal: 29 });
    const snap = await metricsSnapshot(metrics.registry);
    expect(snap['seglift_segments_total{result="converted"}']).toBe(1);
    expect(snap['seglift_records_total{direction="in"}']).toBe(4);
    await w.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  it("converts with the job's settings, not its own (a job may lower the decompression limit, never raise it); the done marker is the job's settings'", async () => {
    // The worker's own config says lz4 and a 32 MiB limit; the watcher planned zstd -5, kafka grouping.
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10), seg(20)], {
      codec: 'lz4',
      'limits.maxDecompressedBatchBytes': 32 * 1024 * 1024,
    });
    const calls: ConvertSettings[] = [];
    const convert: ConvertFn = async (p, settings) => {
      calls.push(settings);
      writeFileSync(p, `converted ${calls.length}`);
      return report(p, { result: 'converted', bytesIn: 9, bytesOut: 9 });
    };
    const w = await startWorker({ config, logger, convert });
    const planned = conversionSettings(
      loadConfig({ env: {}, flags: { codec: 'zstd', level: -5, grouping: 'kafka' } }),
    );
    const lower = { ...planned, maxDecompressedBatchBytes: 1024 };
    for (const [f, settings] of [
      [seg(0), planned],
      [seg(10), lower],
    ] as const)
      expect(
        await finished(
          await add(queue, config, { path: join(dir, f), size: 1, mtimeMs: 1, settings }),
          events,
        ),
      ).toMatchObject({ ok: true, value: { result: 'converted' } });
    const only = (o: ConvertSettings) => ({
      codec: o.codec,
      level: o.level,
      grouping: o.grouping,
      maxDecompressedBatchBytes: o.maxDecompressedBatchBytes,
    });
    expect(calls.map(only)).toEqual([
      { codec: 'zstd', level: -5, grouping: 'kafka', maxDecompressedBatchBytes: 32 * 1024 * 1024 },
      { codec: 'zstd', level: -5, grouping: 'kafka', maxDecompressedBatchBytes: 1024 },
    ]);
    // Done for the settings it was converted with, not for the worker's own.
    const p = join(dir, seg(0));
    const state = fileStateOf(p, statSync(p, { bigint: true }));
    expect(await conn.exists(doneMarkerKey(config, segmentJobId({ ...state, settings: planned })))).toBe(1);
    const own = conversionSettings(config);
    expect(await conn.exists(doneMarkerKey(config, segmentJobId({ ...state, settings: own })))).toBe(0);
    // A setting this version does not declare (a newer watcher's): refused, not converted.
    const newer = await add(queue, config, {
      path: join(dir, seg(20)),
      size: 1,
      mtimeMs: 1,
      settings: { ...planned, tomorrow: 1 },
    });
    const r = await finished(newer, events);
    expect(JSON.parse(String(r.value))).toEqual({
      name: 'InvalidJobError',
      code: 'INVALID_ARGUMENT',
      message: 'invalid job payload: settings: Unrecognized key: "tomorrow"',
    });
    expect(calls).toHaveLength(2);
    await w.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  it("a 'prepare' job converts into the stage dir of its log dir: nothing in place, no done marker", async () => {
    // The stage dir beside the log dir (root), both within the roots.
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10)], { roots: [tmp] });
    const stageDir = join(tmp, 'stage');
    const calls: Parameters<ConvertFn>[] = [];
    const convert: ConvertFn = async (...call) => {
      const p = call[0];
      calls.push(call);
      return report(p, { result: 'converted', stage: 'staged', bytesIn: 10, bytesOut: 5 });
    };
    const w = await startWorker({ config, logger, convert });
    const p = join(dir, seg(0));
    const st = statSync(p);
    const job = await add(queue, config, {
      path: p,
      size: st.size,
      mtimeMs: st.mtimeMs,
      mode: 'prepare',
      stageDir,
    });
    expect(await finished(job, events)).toMatchObject({ ok: true, value: { result: 'converted' } });
    expect(calls).toHaveLength(1);
    expect(calls[0][2]).toEqual({ kind: 'stage', dir: join(stageDir, `${queue.name}-0`) });
    expect(calls[0][3].beforeSwap).toBeUndefined();
    expect(statSync(join(stageDir, '.seglift-stage')).isFile()).toBe(true);
    const doneId = segmentJobId({
      ...fileStateOf(p, statSync(p, { bigint: true })),
      settings: conversionSettings(config),
    });
    expect(await conn.exists(doneMarkerKey(config, doneId))).toBe(0);
    // No stage dir, a stage dir inside the log dir, the active segment: refused.
    const noStage = await add(queue, config, { path: p, size: 1, mtimeMs: 1, mode: 'prepare' });
    expect(await finished(noStage, events)).toMatchObject({ ok: false });
    const inside = await add(queue, config, {
      path: p,
      size: 1,
      mtimeMs: 1,
      mode: 'prepare',
      stageDir: join(root, 'stage'),
    });
    const insideResult = await finished(inside, events);
    expect(JSON.parse(String(insideResult.value))).toMatchObject({ code: 'STAGE_DIR' });
    const active = await add(queue, config, {
      path: join(dir, seg(10)),
      size: 1,
      mtimeMs: 1,
      mode: 'prepare',
      stageDir,
    });
    expect(await finished(active, events)).toMatchObject({ ok: false });
    expect(calls).toHaveLength(1);
    await w.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  it('never converts a file other than the one queued: changed since (a copy still writing it) fails SEGMENT_CHANGED, before the conversion or at its swap; one needing no rewrite is done', async () => {
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10), seg(20), seg(30)], {
      codec: 'none',
    });
    const calls: string[] = [];
    const convert: ConvertFn = async (p, _settings, _placement, hooks) => {
      calls.push(p);
      // The copy resumes while the segment is being converted: the swap must not happen.
      appendFileSync(p, ' and the rest of the copy');
      try {
        await hooks.beforeSwap?.();
      } catch (err) {
        return report(p, { result: 'failed', error: (err as SegliftError).toJSON() });
      }
      return report(p, { result: 'converted' });
    };
    const w = await startWorker({ config, logger, convert });
    const queued = (p: string) => {
      const st = statSync(p);
      return { path: p, size: st.size, mtimeMs: st.mtimeMs, ino: String(statSync(p, { bigint: true }).ino) };
    };
    // Queued, then written to (a parallel copy had not finished it).
    const growing = join(dir, seg(0));
    const growingJob = await add(queue, config, queued(growing));
    appendFileSync(growing, ' more records');
    const before = readFileSync(growing);
    const r0 = await finished(growingJob, events);
    expect(r0.ok).toBe(false);
    expect(JSON.parse(String(r0.value))).toMatchObject({
      code: 'SEGMENT_CHANGED',
      file: growing,
      message: expect.stringMatching(
        /^the segment changed since it was queued \(size \d+ -> \d+, mtime .*\): not converted/,
      ),
    });
    expect(readFileSync(growing)).toEqual(before);
    // A prepare job of a changed source: nothing staged, no failure (the commit converts what is there).
    const prepareJob = await add(queue, config, {
      ...queued(growing),
      mode: 'prepare',
      stageDir: join(root, 'stage'),
    });
    appendFileSync(growing, ' yet more');
    expect(await finished(prepareJob, events)).toMatchObject({
      ok: true,
      value: { result: 'skipped', reason: 'source-changed' },
    });
    // Replaced meanwhile by a file already in the target format (v2, codec none): nothing to do.
    const replaced = join(dir, seg(10));
    const replacedJob = await add(queue, config, queued(replaced));
    writeFileSync(`${replaced}.new`, encodeSegment('v2-none', 10n, 5, 1));
    renameSync(`${replaced}.new`, replaced);
    expect(await finished(replacedJob, events)).toMatchObject({
      ok: true,
      value: { result: 'skipped', reason: 'already-target-codec' },
    });
    const doneId = segmentJobId({
      ...fileStateOf(replaced, statSync(replaced, { bigint: true })),
      settings: conversionSettings(config),
    });
    expect(await conn.exists(doneMarkerKey(config, doneId))).toBe(1);
    // Unchanged when taken, written to while converted: refused right before the swap.
    const resumed = join(dir, seg(20));
    const r2 = await finished(await add(queue, config, queued(resumed)), events);
    expect(JSON.parse(String(r2.value))).toMatchObject({ code: 'SEGMENT_CHANGED' });
    expect(calls).toEqual([resumed]);
    await w.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  it('fails format errors at once, retries transient ones, rejects bad payloads and paths outside roots', async () => {
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10), seg(20), seg(30)]);
    const attempts = new Map<string, number>();
    const convert: ConvertFn = async (p) => {
      const n = (attempts.get(p) ?? 0) + 1;
      attempts.set(p, n);
      if (p.endsWith(seg(0))) throw new CorruptRecordError('record count -1', { file: p, position: 0 });
      if (p.endsWith(seg(10)) && n < 3) throw Object.assign(new Error('resource busy'), { code: 'EBUSY' });
      if (p.endsWith(seg(20))) {
        return report(p, {
          result: 'failed',
          error: { name: 'CrcMismatchError', code: 'CRC_MISMATCH', message: 'crc' },
        });
      }
      return report(p, { result: 'skipped', reason: 'already zstd v2', bytesIn: 9, bytesOut: 9 });
    };
    const w = await startWorker({ config, logger, convert });
    const data = (f: string) => ({ path: join(dir, f), size: 1, mtimeMs: 1 });
    const corrupt = await add(queue, config, data(seg(0)));
    const busy = await add(queue, config, data(seg(10)));
    const failedReport = await add(queue, config, data(seg(20)));
    const outsideJob = await add(queue, config, { path: join(outside, seg(0)), size: 1, mtimeMs: 1 });
    const dotdot = await add(queue, config, { path: `${dir}/../../outside/${seg(0)}`, size: 1, mtimeMs: 1 });
    const junk = await add(queue, config, { path: 'relative.log', size: -1, extra: true });
    const active = await add(queue, config, data(seg(30)));
    const missing = await add(queue, config, data(seg(5)));

    const c = await finished(corrupt, events);
    expect(c.ok).toBe(false);
    expect(JSON.parse(String(c.value))).toMatchObject({
      code: 'CORRUPT_RECORD',
      message: 'record count -1',
      position: 0,
    });
    expect(attempts.get(join(dir, seg(0)))).toBe(1);
    expect(await finished(busy, events)).toMatchObject({ ok: true, value: { result: 'skipped' } });
    expect(attempts.get(join(dir, seg(10)))).toBe(3);
    const f = await finished(failedReport, events);
    expect(JSON.parse(String(f.value))).toEqual({
      name: 'CrcMismatchError',
      code: 'CRC_MISMATCH',
      message: 'crc',
    });
    expect((await queue.getJob(failedReport.id!))?.attemptsMade).toBe(1);
    for (const j of [outsideJob, dotdot]) {
      const r = await finished(j, events);
      expect(JSON.parse(String(r.value))).toMatchObject({ code: 'PATH_OUTSIDE_ROOTS' });
    }
    const jr = await finished(junk, events);
    expect(JSON.parse(String(jr.value))).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(String(jr.value)).toContain('path: must be an absolute path');
    expect(String(jr.value)).toContain('Unrecognized key');
    const ar = await finished(active, events);
    expect(JSON.parse(String(ar.value))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('active segment'),
    });
    expect(await finished(missing, events)).toMatchObject({
      ok: true,
      value: { result: 'skipped', reason: 'missing' },
    });
    expect([...attempts.keys()].sort()).toEqual([join(dir, seg(0)), join(dir, seg(10)), join(dir, seg(20))]);
    await w.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  it('an archive segment written less than readiness.quietMs ago waits, without using an attempt, and converts once quiet; so does one the conversion finds written again', async () => {
    const quietMs = 1500;
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10)], {
      'readiness.requireRolled': false,
      'readiness.quietMs': quietMs,
    });
    const calls: Array<{ path: string; at: number; quietMs?: number }> = [];
    const convert: ConvertFn = async (p, _settings, placement) => {
      calls.push({
        path: p,
        at: Date.now(),
        quietMs: placement.kind === 'inPlace' ? placement.quietMs : undefined,
      });
      // The newest segment: its copy resumed when the conversion started (convert's own check).
      if (p.endsWith(seg(10)) && calls.filter((c) => c.path === p).length === 1)
        return report(p, { result: 'skipped', reason: 'still-changing' });
      return report(p, { result: 'converted', bytesIn: 9, bytesOut: 9 });
    };
    const w = await startWorker({ config, logger, convert });
    const fresh = join(dir, seg(0));
    const written = statSync(fresh).mtimeMs;
    const job = await add(queue, config, { path: fresh, size: 1, mtimeMs: 1 });
    let state = '';
    for (let i = 0; i < 500 && state !== 'delayed'; i++) {
      state = (await (await queue.getJob(job.id!))?.getState()) ?? '';
      if (state !== 'delayed') await new Promise((r) => setTimeout(r, 10));
    }
    expect(state).toBe('delayed');
    expect(calls).toEqual([]);
    expect(await finished(job, events)).toMatchObject({ ok: true, value: { result: 'converted' } });
    // Converted only once quiet, the conversion told to check the quiet again; no attempt used.
    expect(calls).toEqual([{ path: fresh, at: expect.any(Number), quietMs }]);
    expect(calls[0].at).toBeGreaterThanOrEqual(Math.trunc(written) + quietMs);
    expect(await queue.getJob(job.id!)).toMatchObject({ attemptsMade: 1 });
    // Quiet when taken (stamped back), written again when its conversion started: waits again.
    const newest = join(dir, seg(10));
    const old = new Date(Date.now() - 2 * quietMs);
    utimesSync(newest, old, old);
    const again = await add(queue, config, { path: newest, size: 1, mtimeMs: 1 });
    expect(await finished(again, events)).toMatchObject({ ok: true, value: { result: 'converted' } });
    const tries = calls.filter((c) => c.path === newest);
    expect(tries).toHaveLength(2);
    expect(tries[1].at - tries[0].at).toBeGreaterThanOrEqual(quietMs);
    expect(await queue.getJob(again.id!)).toMatchObject({ attemptsMade: 1 });
    await w.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  it("an in-place job while another seglift holds the log dir's .lock is delayed without using an attempt, and converts once it is free", async () => {
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10)]);
    const calls: string[] = [];
    const convert: ConvertFn = async (p) => {
      calls.push(p);
      return report(p, { result: 'skipped', reason: 'already-target-codec' });
    };
    const other = acquireLogDirLock(root);
    const w = await startWorker({ config, logger, convert, lockedRetryMs: 20 });
    const job = await add(queue, config, { path: join(dir, seg(0)), size: 1, mtimeMs: 1 });
    try {
      let state = '';
      for (let i = 0; i < 500 && state !== 'delayed'; i++) {
        state = (await (await queue.getJob(job.id!))?.getState()) ?? '';
        if (state !== 'delayed') await new Promise((r) => setTimeout(r, 10));
      }
      expect(state).toBe('delayed');
      await new Promise((r) => setTimeout(r, 200));
      // Refused and delayed, without using an attempt (the other run may take long); nothing converted.
      expect(await queue.getJob(job.id!)).toMatchObject({ attemptsMade: 0 });
      expect(calls).toEqual([]);
    } finally {
      other.release();
    }
    expect(await finished(job, events)).toMatchObject({ ok: true, value: { result: 'skipped' } });
    expect(calls).toEqual([join(dir, seg(0))]);
    await w.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  needs(python3).it(
    "an in-place job while a broker holds the log dir's .lock fails at once, naming it; nothing converted",
    async () => {
      const { config, dir, conn, queue, events } = setup([seg(0), seg(10)]);
      const calls: string[] = [];
      const convert: ConvertFn = async (p) => {
        calls.push(p);
        return report(p, { result: 'converted' });
      };
      const broker = await holdLockAsABroker(join(root, '.lock'));
      const w = await startWorker({ config, logger, convert });
      try {
        const job = await add(queue, config, { path: join(dir, seg(0)), size: 1, mtimeMs: 1 });
        const r = await finished(job, events);
        expect(r.ok).toBe(false);
        expect(JSON.parse(String(r.value))).toEqual({
          name: 'LogDirLockedError',
          code: 'LOG_DIR_LOCKED',
          message: `log dir ${root} is locked by pid ${broker.pid}: a Kafka broker (or another seglift) is running on it: stop it first, or use --prepare`,
          file: join(root, '.lock'),
        });
        expect((await queue.getJob(job.id!))?.attemptsMade).toBe(1);
        expect(calls).toEqual([]);
      } finally {
        broker.stdin.end();
        await new Promise((resolve) => broker.once('exit', resolve));
        rmSync(join(root, '.lock'));
        await w.shutdown();
        await Promise.all([queue.close(), events.close()]);
        conn.disconnect();
      }
    },
  );

  it('the backup dir, one rule with migrate: inside the roots and outside the log dir, or every in-place job fails', async () => {
    const calls: Array<string | undefined> = [];
    const convert: ConvertFn = async (p, _settings, placement) => {
      calls.push(placement.kind === 'inPlace' ? placement.backupDir : undefined);
      return report(p, { result: 'skipped', reason: 'already-target-codec' });
    };
    const cases = [
      [join(outside, 'backups'), { code: 'PATH_OUTSIDE_ROOTS' }],
      [join(root, 'backups-in-log-dir'), { code: 'INVALID_ARGUMENT' }],
      [join(tmp, 'root-backups'), undefined],
    ] as const;
    for (const [backupDir, refused] of cases) {
      // The partition's log dir is root; the last backup dir lies in a second root beside it.
      const { config, dir, conn, queue, events } = setup([seg(0), seg(10)], {
        backupDir,
        ...(refused === undefined ? { roots: [root, tmp] } : {}),
      });
      const w = await startWorker({ config, logger, convert });
      try {
        const r = await finished(
          await add(queue, config, { path: join(dir, seg(0)), size: 1, mtimeMs: 1 }),
          events,
        );
        if (refused === undefined) expect(r).toMatchObject({ ok: true, value: { result: 'skipped' } });
        else {
          expect(r.ok, backupDir).toBe(false);
          expect(JSON.parse(String(r.value))).toMatchObject({
            ...refused,
            message: expect.stringContaining(`backup dir ${backupDir} `),
          });
        }
      } finally {
        await w.shutdown();
        await Promise.all([queue.close(), events.close()]);
        conn.disconnect();
      }
    }
    expect(calls).toEqual([join(tmp, 'root-backups')]);
  });

  needs(python3).it(
    "a job whose logDir holds a link to a broker's partition takes the broker's .lock (the real parent's), whatever logDir it claims",
    async () => {
      const { config, conn, queue, events } = setup([]);
      // The broker's log dir ld2 holds idem-0; the job's logDir jd holds `idem-0 -> ld2/idem-0`.
      const ld2 = join(root, `${queue.name}-ld2`);
      const part = join(ld2, 'idem-0');
      mkdirSync(part, { recursive: true });
      for (const f of [seg(0), seg(10)]) writeFileSync(join(part, f), `data ${f}`);
      const jd = join(root, `${queue.name}-jd`);
      mkdirSync(jd);
      symlinkSync(part, join(jd, 'idem-0'));
      // A link from outside the roots to the partition: never a path a job may name it by.
      const outLink = join(outside, `${queue.name}-idem-0`);
      symlinkSync(part, outLink);
      const calls: string[] = [];
      const convert: ConvertFn = async (p) => {
        calls.push(p);
        return report(p, { result: 'skipped', reason: 'already-target-codec' });
      };
      const broker = await holdLockAsABroker(join(ld2, '.lock'));
      const w = await startWorker({ config, logger, convert });
      const locked = {
        code: 'LOG_DIR_LOCKED',
        message: expect.stringContaining(`log dir ${ld2} is locked by pid ${broker.pid}`),
      };
      try {
        // By its real path, claiming jd: jd's .lock and ld2's; ld2's is held.
        const claimed = await finished(
          await add(queue, config, { path: join(part, seg(0)), size: 1, mtimeMs: 1, logDir: jd }),
          events,
        );
        expect(claimed.ok).toBe(false);
        expect(JSON.parse(String(claimed.value))).toMatchObject(locked);
        // Through the link, claiming nothing: the same.
        const linked = await finished(
          await add(queue, config, { path: join(jd, 'idem-0', seg(0)), size: 1, mtimeMs: 1 }),
          events,
        );
        expect(JSON.parse(String(linked.value))).toMatchObject(locked);
        const out = await finished(
          await add(queue, config, { path: join(outLink, seg(0)), size: 1, mtimeMs: 1 }),
          events,
        );
        expect(JSON.parse(String(out.value))).toMatchObject({ code: 'PATH_OUTSIDE_ROOTS' });
        expect(calls).toEqual([]);
      } finally {
        broker.stdin.end();
        await new Promise((resolve) => broker.once('exit', resolve));
      }
      try {
        const free = await finished(
          await add(queue, config, { path: join(part, seg(0)), size: 1, mtimeMs: 1, logDir: jd }),
          events,
        );
        expect(free).toMatchObject({ ok: true, value: { result: 'skipped' } });
        expect(calls).toEqual([join(part, seg(0))]);
      } finally {
        await w.shutdown();
        await Promise.all([queue.close(), events.close()]);
        conn.disconnect();
      }
    },
  );

  needs(python3).it(
    "a job of a partition linked into a log dir takes that log dir's .lock (the job's logDir, checked), and its real parent's",
    async () => {
      const { config, dir, conn, queue, events } = setup([seg(0), seg(10)]);
      // The log dir L holds `t-0 -> dir`: the partition's real parent (root) is not L.
      const logDir = join(root, `${basename(dir)}-logs`);
      mkdirSync(logDir);
      symlinkSync(dir, join(logDir, 't-0'));
      const stranger = join(root, `${basename(dir)}-stranger`);
      mkdirSync(stranger);
      const seen: ({ pid: number } | undefined)[][] = [];
      const calls: string[] = [];
      const convert: ConvertFn = async (p) => {
        calls.push(p);
        seen.push([logDirLockHolder(logDir), logDirLockHolder(root)]);
        return report(p, { result: 'skipped', reason: 'already-target-codec' });
      };
      writeFileSync(join(logDir, '.lock'), '');
      const broker = await holdLockAsABroker(join(logDir, '.lock'));
      const w = await startWorker({ config, logger, convert });
      const path = join(dir, seg(0));
      try {
        const held = await finished(await add(queue, config, { path, size: 1, mtimeMs: 1, logDir }), events);
        expect(held.ok).toBe(false);
        expect(JSON.parse(String(held.value))).toMatchObject({
          code: 'LOG_DIR_LOCKED',
          message: expect.stringContaining(`log dir ${logDir} is locked by pid ${broker.pid}`),
        });
        // A log dir that does not hold the partition: failed, never trusted.
        const wrong = await finished(
          await add(queue, config, { path, size: 1, mtimeMs: 1, logDir: stranger }),
          events,
        );
        expect(wrong.ok).toBe(false);
        expect(JSON.parse(String(wrong.value))).toMatchObject({
          name: 'LogDirUnknownError',
          code: 'LOG_DIR_UNKNOWN',
          message: expect.stringContaining(`log dir ${stranger} does not hold the partition ${dir}`),
        });
        // Outside the roots: failed too.
        const out = await finished(
          await add(queue, config, { path, size: 1, mtimeMs: 1, logDir: outside }),
          events,
        );
        expect(JSON.parse(String(out.value))).toMatchObject({ code: 'PATH_OUTSIDE_ROOTS' });
        expect(calls).toEqual([]);
      } finally {
        broker.stdin.end();
        await new Promise((resolve) => broker.once('exit', resolve));
      }
      try {
        const free = await finished(await add(queue, config, { path, size: 1, mtimeMs: 1, logDir }), events);
        expect(free).toMatchObject({ ok: true, value: { result: 'skipped' } });
        // Held by this worker during the conversion.
        expect(seen).toEqual([[{ pid: -1 }, { pid: -1 }]]);
        expect(logDirLockHolder(logDir)).toBeUndefined();
        expect(logDirLockHolder(root)).toBeUndefined();
      } finally {
        await w.shutdown();
        await Promise.all([queue.close(), events.close()]);
        conn.disconnect();
      }
    },
  );

  it('never runs two conversions in one partition at once, across workers', async () => {
    const files = Array.from({ length: 7 }, (_, i) => seg(i * 10));
    const { config, dir, conn, queue, events } = setup(files, { 'worker.concurrency': 3 });
    let running = 0;
    let maxRunning = 0;
    const convert: ConvertFn = async (p) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      await new Promise((r) => setTimeout(r, 60));
      running--;
      return report(p, { result: 'converted', bytesIn: 1, bytesOut: 1 });
    };
    const workers: WorkerHandle[] = [];
    for (let i = 0; i < 2; i++) {
      workers.push(await startWorker({ config, logger, convert, lockedRetryMs: 20 }));
    }
    const jobs = await Promise.all(
      files.slice(0, -1).map((f) => add(queue, config, { path: join(dir, f), size: 1, mtimeMs: 1 })),
    );
    const results = await Promise.all(jobs.map((j) => finished(j, events)));
    expect(results.every((r) => r.ok)).toBe(true);
    expect(maxRunning).toBe(1);
    for (const j of jobs) expect((await queue.getJob(j.id!))?.attemptsMade).toBe(1);
    await Promise.all(workers.map((w) => w.shutdown()));
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });

  it('on shutdown lets a conversion finish within the grace period, aborts and requeues after it', async () => {
    const { config, dir, conn, queue, events } = setup([seg(0), seg(10), seg(20)]);
    const seen: string[] = [];
    // Order of what happens, and when the abort came: the signals, instead of elapsed times.
    const order: string[] = [];
    let abortedAt = 0;
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const slow: ConvertFn = (p, _settings, _placement, o) =>
      new Promise((resolve, reject) => {
        seen.push(p);
        if (p === join(dir, seg(0))) {
          // Finishes when the test says so: during the grace period.
          released.then(() => {
            order.push('quick finished');
            resolve(report(p, { result: 'converted', bytesIn: 1, bytesOut: 1 }));
          });
          return;
        }
        o.signal?.addEventListener('abort', () => {
          abortedAt = performance.now();
          order.push('long aborted');
          reject(Object.assign(new Error('aborted'), { name: 'AbortError' }));
        });
      });
    const w = await startWorker({ config, logger, convert: slow });
    const quick = await add(queue, config, { path: join(dir, seg(0)), size: 1, mtimeMs: 1 });
    // Another partition: the partition lock would otherwise serialize the two.
    const dir2 = `${dir}b`;
    mkdirSync(dir2);
    for (const f of [seg(0), seg(10)]) writeFileSync(join(dir2, f), 'x');
    const long = await add(queue, config, { path: join(dir2, seg(0)), size: 1, mtimeMs: 1 });
    while (seen.length < 2) await new Promise((r) => setTimeout(r, 20));
    const graceMs = 1000;
    const t0 = performance.now();
    const stopped = w.shutdown(graceMs).then(() => order.push('shut down'));
    order.push('release quick');
    release();
    await stopped;
    expect(order).toEqual(['release quick', 'quick finished', 'long aborted', 'shut down']);
    // Not before the grace period was over (a timer never fires early; 1 ms of rounding).
    expect(abortedAt - t0).toBeGreaterThanOrEqual(graceMs - 1);
    expect(await quick.getState()).toBe('completed');
    // Requeued without using an attempt; another worker finishes it.
    expect(['delayed', 'waiting', 'wait']).toContain(await queue.getJobState(long.id!));
    const fast: ConvertFn = async (p) => report(p, { result: 'converted', bytesIn: 1, bytesOut: 1 });
    const w2 = await startWorker({ config, logger, convert: fast });
    expect(await finished(long, events)).toMatchObject({ ok: true });
    expect((await queue.getJob(long.id!))?.attemptsMade).toBe(1);
    await w2.shutdown();
    await Promise.all([queue.close(), events.close()]);
    conn.disconnect();
  });
});
