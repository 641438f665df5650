import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';

// Renew if still ours; re-take it if it vanished (Redis restarted without persistence); 0 = lost.
const RENEW = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
if not v then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 2 end
return 0`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export interface HeldLock {
  token: string;
  /** Aborted when the lock was taken by someone else (we must stop writing). */
  lost: AbortSignal;
  release(): Promise<void>;
}

/**
 * A Redis lock with expiry (SET NX PX), renewed every ttl/3 while held. Used per partition
 * directory so that two workers (on any host) never rewrite the same partition at once; a killed
 * holder's lock expires after `ttlMs`. Returns undefined when someone else holds it.
 */
export async function tryLock(redis: Redis, key: string, ttlMs: number): Promise<HeldLock | undefined> {
  const token = randomUUID();
  const ok = await redis.set(key, token, 'PX', ttlMs, 'NX');
  if (ok !== 'OK') return undefined;
  const lost = new AbortController();
  let renewing = false;
  const timer = setInterval(
    () => {
      if (renewing) return;
      renewing = true;
      redis
        .eval(RENEW, 1, key, token, String(ttlMs))
        .then((r) => {
          if (r === 0) lost.abort(new Error(`lock ${key} was taken by another worker`));
        })
        .catch(() => {}) // Redis down: keep trying; nobody else can take it meanwhile
        .finally(() => {
          renewing = false;
        });
    },
    Math.max(100, Math.floor(ttlMs / 3)),
  );
  timer.unref();
  return {
    token,
    lost: lost.signal,
    async release() {
      clearInterval(timer);
      await redis.eval(RELEASE, 1, key, token).catch(() => {});
    },
  };
}
