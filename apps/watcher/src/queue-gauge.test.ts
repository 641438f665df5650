/**
 * seglift_queue_jobs is the queue at the moment of the scrape: right after "queued 3 segments" a
 * scrape says waiting 3 (it was sampled every 15 s, first before anything was queued, so it said
 * waiting 0 and whatever an earlier run had left). A real Redis, the built watcher, no workers.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { built, freePort, needs, redisServer, spawnProgram, startRedis } from '@seglift/testkit';
import { expect } from 'vitest';

const repoRoot = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const WATCHER = join(repoRoot, 'apps/watcher/dist/seglift-watcher');
const seg = (n: number) => `${String(n).padStart(20, '0')}.log`;

needs(built(WATCHER), redisServer).it(
  'a scrape right after "queued 3 segments" says waiting 3',
  async () => {
    const redis = await startRedis();
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-queue-gauge-')));
    for (const p of ['t-0', 't-1', 't-2']) {
      mkdirSync(join(root, p));
      // Two segments: the first is rolled, so ready (empty: nothing to convert, no worker runs).
      for (const s of [seg(0), seg(100)]) writeFileSync(join(root, p, s), '');
    }
    const port = await freePort();
    const p = spawnProgram(WATCHER, ['--once', '--wait'], {
      SEGLIFT_ROOTS: root,
      SEGLIFT_REDIS_URL: redis.url,
      SEGLIFT_QUEUE_NAME: 'gauge',
      SEGLIFT_LOG_LEVEL: 'info',
      SEGLIFT_METRICS_PORT: String(port),
    });
    try {
      const deadline = Date.now() + 30_000;
      while (!p.output().includes('"msg":"queued 3 segments"')) {
        if (Date.now() > deadline) throw new Error(`never queued: ${p.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(text.split('\n').filter((l) => l.startsWith('seglift_queue_jobs{'))).toEqual([
        'seglift_queue_jobs{state="waiting"} 3',
        'seglift_queue_jobs{state="active"} 0',
        'seglift_queue_jobs{state="failed"} 0',
        'seglift_queue_jobs{state="completed"} 0',
      ]);
    } finally {
      p.child.kill('SIGKILL');
      await p.exited;
      await redis.stop();
      rmSync(root, { recursive: true, force: true });
    }
  },
  60_000,
);
