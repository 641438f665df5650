/**
 * Issue 21 item 7 in the worker: a job naming a segment inside a seglift backup dir (a backup dir
 * inside the worker's root), or a segment with a second hard link, fails at once by name and
 * leaves the file as it was (docs/reliability.md §16.7). The real conversion pool, a real Redis.
 */
import {
  linkSync,
  mkdirSync,
  mkdtempSync,
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
import { createLogger } from '@seglift/observability';
import { createRedis, fileStateOf, SEGMENT_JOB_NAME } from '@seglift/queue';
import { built, needs, redisServer, startRedis, type TestRedis } from '@seglift/testkit';
import { Queue, QueueEvents } from 'bullmq';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { encodeSegment } from './test-support/segments.js';
import { startWorker } from './worker.js';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const dist = built(join(repoRoot, 'packages/segment/dist/conversion-thread.js'));
const seg = (n: bigint) => `${n.toString().padStart(20, '0')}.log`;

needs(redisServer, dist).describe('seglift-worker: backups and hard links are never rewritten', () => {
  let redis: TestRedis;
  const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-worker-paths-')));
  const root = join(tmp, 'root');

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  /** `<dir>/t-0` with a legacy segment 0 and a newer one (0 is rolled). */
  function partition(dir: string): string {
    const p = join(dir, 't-0');
    mkdirSync(p, { recursive: true });
    writeFileSync(join(p, seg(0n)), encodeSegment('v1', 0n, 20, 1, 40));
    writeFileSync(join(p, seg(20n)), encodeSegment('v2-none', 20n, 5, 2, 40));
    return join(p, seg(0n));
  }

  it('a job naming a file inside a marked backup dir, or a segment with a second hard link, fails at once with NOT_A_SEGMENT', async () => {
    const backups = join(root, 'backups');
    const inBackup = partition(backups);
    writeFileSync(join(backups, '.seglift-backup'), '');
    writeFileSync(join(backups, 't-0', '.seglift-backup'), '');
    const linked = partition(join(root, 'logs'));
    linkSync(linked, join(tmp, 'other-name.log'));
    const before = [readFileSync(inBackup), readFileSync(linked)];
    const config = loadConfig({
      env: {},
      flags: { roots: [root], 'redis.url': redis.url, 'queue.name': 'paths', 'log.level': 'silent' },
    });
    const queue = new Queue('paths', { connection: createRedis(redis.url), prefix: config.queue.prefix });
    const events = new QueueEvents('paths', {
      connection: createRedis(redis.url),
      prefix: config.queue.prefix,
    });
    const w = await startWorker({ config, logger: createLogger({ name: 'test', level: 'silent' }) });
    try {
      const jobs = [inBackup, linked].map((p, i) =>
        // The file as it is: the job-state check passes, so the path rules are what refuse it.
        queue.add(
          SEGMENT_JOB_NAME,
          { ...fileStateOf(p, statSync(p, { bigint: true })), settings: conversionSettings(config) },
          {
            jobId: `j${i}`,
            attempts: 3,
          },
        ),
      );
      const results = await Promise.all(
        jobs.map(async (j) =>
          (await j).waitUntilFinished(events, 20_000).then(String, (e: Error) => e.message),
        ),
      );
      expect(JSON.parse(results[0])).toMatchObject({
        code: 'NOT_A_SEGMENT',
        message: expect.stringContaining(`inside the seglift backup dir ${join(backups, 't-0')}`),
      });
      expect(JSON.parse(results[1])).toMatchObject({
        code: 'NOT_A_SEGMENT',
        message: expect.stringContaining('has 2 hard links'),
      });
      for (const id of ['j0', 'j1']) expect((await queue.getJob(id))?.attemptsMade).toBe(1);
      expect([readFileSync(inBackup), readFileSync(linked)]).toEqual(before);
    } finally {
      await w.shutdown();
      await Promise.all([queue.close(), events.close()]);
    }
  });
});
