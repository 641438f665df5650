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

export interface PartitionLease {
  token: string;
  /** Aborted when the renewal found the lease taken by someone else (stop writing). */
  lost: AbortSignal;
  /** Throws unless the lease is still this holder's, asked of Redis now (right before a swap). */
  assertHeld(): Promise<void>;
  release(): Promise<void>;
}

/**
 * A Redis lease with expiry (SET NX PX), renewed every ttl/3 while held: one worker (on any host)
 * converts a partition directory at a time; a killed holder's lease expires after `ttlMs`.
 * Returns undefined when someone else holds it. (Swaps are also serialized on disk by the
 * partition lock of @seglift/segment; this keeps workers from converting the same partition.)
 */
export async function tryLease(
  redis: Redis,
  key: string,
  ttlMs: number,
): Promise<PartitionLease | undefined> {
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
    async assertHeld() {
      const holder = await redis.get(key);
      if (holder !== token) {
        const reason = new Error(`the partition's lease ${key} was lost to another worker`);
        lost.abort(reason);
        throw reason;
      }
    },
    async release() {
      clearInterval(timer);
      await redis.eval(RELEASE, 1, key, token).catch(() => {});
    },
  };
}
