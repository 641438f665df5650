import { Redis } from 'ioredis';

/**
 * An ioredis client for BullMQ: `maxRetriesPerRequest: null` so commands wait through a Redis
 * restart instead of failing, and reconnects with a capped backoff. `rediss://` URLs use TLS.
 */
export function createRedis(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 5), 2000),
  });
}

/**
 * Resolves once Redis answers PING; rejects after `timeoutMs` (Redis unreachable) or at once when
 * it refuses the command (wrong password). Commands otherwise wait forever for a connection
 * (`maxRetriesPerRequest: null`), which a Job would never report.
 */
export async function waitForRedis(redis: Redis, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `Redis did not answer within ${timeoutMs} ms (${redis.options.host}:${redis.options.port})`,
          ),
        ),
      timeoutMs,
    );
  });
  try {
    await Promise.race([redis.ping(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** waitForRedis on a connection of its own to `url`, closed either way. */
export async function waitForRedisAt(url: string, timeoutMs: number): Promise<void> {
  const redis = createRedis(url);
  redis.on('error', () => {});
  try {
    await waitForRedis(redis, timeoutMs);
  } finally {
    redis.disconnect();
  }
}
