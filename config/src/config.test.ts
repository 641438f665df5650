import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  DEFAULT_COALESCE_BYTES,
  formatConfig,
  loadConfig,
  loadConfigWithSources,
  metricsPort,
  redactConfig,
} from './index.js';

const tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-config-')));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const p = join(tmp, name);
  writeFileSync(p, text);
  return p;
}

async function configError(fn: () => unknown): Promise<ConfigError> {
  try {
    await fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the defaults with nothing set', () => {
    const c = loadConfig({ env: {} });
    expect(c.roots).toEqual([]);
    expect(c.codec).toBe('zstd');
    expect(c.level).toBeUndefined();
    expect(c.grouping).toBe('coalesce');
    expect(c.maxBatchBytes).toBe(1048588);
    expect(c.coalesceBytes).toBe(DEFAULT_COALESCE_BYTES);
    expect(DEFAULT_COALESCE_BYTES).toBe(1048576);
    expect(c.redis).toEqual({ url: 'redis://127.0.0.1:6379' });
    expect(c.queue).toEqual({ name: 'segments', prefix: 'seglift' });
    expect(c.readiness).toEqual({ quietMs: 300_000, requireRolled: true });
    expect(c.limits).toEqual({ maxDecompressedBatchBytes: 64 * 1024 * 1024, maxSegmentBytes: 2147483647 });
    expect(c.indexIntervalBytes).toBe(4096);
    expect(c.metrics).toEqual({ host: '0.0.0.0' });
    expect([metricsPort(c, 'seglift-worker'), metricsPort(c, 'seglift-watcher')]).toEqual([9464, 9465]);
    expect(c.log).toEqual({ level: 'info', pretty: false });
    expect(c.worker.concurrency).toBeGreaterThanOrEqual(1);
  });

  it('applies defaults < file < env < flags', async () => {
    const yaml = file(
      'prec.yaml',
      [
        'codec: gzip',
        'level: 6',
        'roots: [/data/a]',
        'worker:',
        '  concurrency: 2',
        '  attempts: 7',
        'readiness:',
        '  quietMs: 1000',
        'redis:',
        '  url: redis://file:6379',
      ].join('\n'),
    );
    const { config: c, sources } = await loadConfigWithSources({
      file: yaml,
      env: {
        SEGLIFT_WORKER_CONCURRENCY: '3',
        SEGLIFT_ROOTS: '/data/b, /data/c',
        SEGLIFT_REDIS_URL: 'rediss://u:pw@env:6380/1',
        SEGLIFT_READINESS_REQUIRE_ROLLED: 'false',
        SEGLIFT_LOG_PRETTY: 'yes',
      },
      flags: { worker: { concurrency: 4 }, 'log.level': 'debug' },
    });
    expect(c.codec).toBe('gzip');
    expect(c.level).toBe(6);
    expect(c.roots).toEqual(['/data/b', '/data/c']);
    expect(c.worker.concurrency).toBe(4);
    expect(c.worker.attempts).toBe(7);
    expect(c.readiness).toEqual({ quietMs: 1000, requireRolled: false });
    expect(c.redis.url).toBe('rediss://u:pw@env:6380/1');
    expect(c.log).toEqual({ level: 'debug', pretty: true });
    expect(sources).toEqual({
      codec: `file ${yaml}`,
      level: `file ${yaml}`,
      roots: 'env SEGLIFT_ROOTS',
      'worker.concurrency': 'flag',
      'worker.attempts': `file ${yaml}`,
      'readiness.quietMs': `file ${yaml}`,
      'readiness.requireRolled': 'env SEGLIFT_READINESS_REQUIRE_ROLLED',
      'redis.url': 'env SEGLIFT_REDIS_URL',
      'log.level': 'flag',
      'log.pretty': 'env SEGLIFT_LOG_PRETTY',
    });
  });

  it('reads JSON files and $SEGLIFT_CONFIG', async () => {
    const json = file('c.json', JSON.stringify({ codec: 'lz4', queue: { name: 'q1' } }));
    const { config: c } = await loadConfigWithSources({ env: { SEGLIFT_CONFIG: json } });
    expect(c.codec).toBe('lz4');
    expect(c.queue).toEqual({ name: 'q1', prefix: 'seglift' });
  });

  it('lists every problem at once with path, value, source and what is allowed', async () => {
    const yaml = file(
      'bad.yaml',
      ['codec: brotli', 'roots: [relative/dir]', 'worker:', '  concurency: 2'].join('\n'),
    );
    const err = await configError(() =>
      loadConfigWithSources({
        file: yaml,
        env: {
          SEGLIFT_WORKER_CONCURRENCY: 'many',
          SEGLIFT_REDIS_URL: 'http://u:secret@host',
          SEGLIFT_METRICS_PORT: '70000',
          SEGLIFT_LOG_PRETTY: 'maybe',
        },
        flags: { maxBatchBytes: 0 },
      }),
    );
    const byPath = Object.fromEntries(err.problems.map((p) => [p.path, p]));
    expect(Object.keys(byPath).sort()).toEqual([
      'codec',
      'log.pretty',
      'maxBatchBytes',
      'metrics.port',
      'redis.url',
      'roots.0',
      'worker.concurency',
      'worker.concurrency',
    ]);
    expect(byPath.codec).toMatchObject({ value: 'brotli', source: `file ${yaml}` });
    expect(byPath.codec.message).toContain('"zstd"');
    expect(byPath['roots.0']).toEqual({
      path: 'roots.0',
      value: 'relative/dir',
      message: 'must be an absolute path',
      source: `file ${yaml}`,
    });
    expect(byPath['worker.concurency']).toEqual({
      path: 'worker.concurency',
      message: 'unknown setting; did you mean worker.concurrency?',
      source: `file ${yaml}`,
    });
    expect(byPath['worker.concurrency']).toMatchObject({
      value: 'many',
      source: 'env SEGLIFT_WORKER_CONCURRENCY',
    });
    expect(byPath['metrics.port']).toMatchObject({ value: 70000, source: 'env SEGLIFT_METRICS_PORT' });
    expect(byPath['log.pretty']).toMatchObject({ value: 'maybe' });
    expect(byPath.maxBatchBytes).toMatchObject({ value: 0, source: 'flag' });
    // The password never reaches the message.
    expect(byPath['redis.url'].value).toBe('http://u:[REDACTED]@host');
    expect(err.message).not.toContain('secret');
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.message.split('\n')[0]).toBe('invalid configuration:');
    expect(err.message.split('\n')).toHaveLength(9);
  });

  it('checks the level against the codec even when other fields fail too', async () => {
    const err = await configError(() =>
      loadConfig({ env: {}, flags: { codec: 'gzip', level: 12, indexIntervalBytes: -1 } }),
    );
    expect(err.problems.map((p) => [p.path, p.message])).toEqual([
      ['indexIntervalBytes', expect.any(String)],
      ['level', 'invalid gzip level 12: expected 1..9'],
    ]);
    const snappy = await configError(() => loadConfig({ env: {}, flags: { codec: 'snappy', level: 1 } }));
    expect(snappy.problems).toEqual([
      { path: 'level', value: 1, message: 'codec snappy has no compression levels', source: 'flag' },
    ]);
    expect(loadConfig({ env: {}, flags: { codec: 'zstd', level: -5 } }).level).toBe(-5);
  });

  it('reports unreadable and unparsable files', async () => {
    const missing = await configError(() => loadConfigWithSources({ env: {}, file: join(tmp, 'nope.yaml') }));
    expect(missing.problems).toHaveLength(1);
    expect(missing.problems[0].message).toContain('cannot read config file');
    const broken = await configError(() =>
      loadConfigWithSources({ env: {}, file: file('broken.json', '{"codec": ') }),
    );
    expect(broken.problems[0].message).toContain('cannot parse config file');
    const list = await configError(() =>
      loadConfigWithSources({ env: {}, file: file('list.yaml', '- a\n- b\n') }),
    );
    expect(list.problems[0].message).toContain('must contain a mapping');
  });

  it('rejects queue names BullMQ cannot use', async () => {
    const err = await configError(() => loadConfig({ env: { SEGLIFT_QUEUE_NAME: 'a:b' } }));
    expect(err.problems.map((p) => p.path)).toEqual(['queue.name']);
  });
});

describe('redaction', () => {
  it('hides the redis password in redactConfig and formatConfig', () => {
    const c = loadConfig({ env: { SEGLIFT_REDIS_URL: 'rediss://admin:s3cr%40t@redis.example:6380/2' } });
    expect(redactConfig(c).redis.url).toBe('rediss://admin:[REDACTED]@redis.example:6380/2');
    expect(c.redis.url).toBe('rediss://admin:s3cr%40t@redis.example:6380/2');
    const yaml = formatConfig(c);
    expect(yaml).toContain('url: rediss://admin:[REDACTED]@redis.example:6380/2');
    expect(yaml).not.toContain('s3cr');
    const json = JSON.parse(formatConfig(c, { format: 'json' }));
    expect(json.redis.url).toBe('rediss://admin:[REDACTED]@redis.example:6380/2');
    expect(redactConfig({ a: { password: 'x', token: 'y', n: 1 } })).toEqual({
      a: { password: '[REDACTED]', token: '[REDACTED]', n: 1 },
    });
  });

  it('annotates non-default fields with their source', async () => {
    const { config, sources } = await loadConfigWithSources({
      env: { SEGLIFT_WORKER_CONCURRENCY: '3' },
      flags: { codec: 'lz4' },
    });
    const text = formatConfig(config, { sources });
    expect(text).toContain('codec: lz4 # from flag\n');
    expect(text).toContain('  concurrency: 3 # from env SEGLIFT_WORKER_CONCURRENCY\n');
    expect(text).toContain('grouping: coalesce\n');
  });
});
