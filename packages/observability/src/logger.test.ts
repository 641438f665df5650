import { describe, expect, it } from 'vitest';
import { childLogger, createLogger, formatPretty } from './logger.js';

/** Same contract as @seglift/format's SegliftError: code, file, position, bigint offset, toJSON. */
class FakeSegliftError extends Error {
  readonly code = 'CRC_MISMATCH';
  file = '/data/t-0/00000000000000000000.log';
  position = 4096;
  offset = 9007199254740993n;
  constructor(readonly detail: string) {
    super(`${detail} (file /data/t-0/00000000000000000000.log, position 4096, offset 9007199254740993)`);
    this.name = 'CrcMismatchError';
  }
  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      code: this.code,
      message: this.detail,
      file: this.file,
      position: this.position,
      offset: this.offset.toString(),
    };
  }
}

function capture(
  options: { level?: 'info' | 'debug'; pretty?: boolean; bindings?: Record<string, unknown> } = {},
) {
  const lines: string[] = [];
  const logger = createLogger({ name: 'test', destination: { write: (l) => lines.push(l) }, ...options });
  const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, parsed };
}

describe('createLogger', () => {
  it('writes one JSON object per line with the level name, name, ISO time and message', () => {
    const { logger, lines, parsed } = capture();
    logger.info({ segments: 3 }, 'scan done');
    logger.debug('hidden at info level');
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith('\n')).toBe(true);
    const [line] = parsed();
    expect(line.level).toBe('info');
    expect(line.name).toBe('test');
    expect(line.msg).toBe('scan done');
    expect(line.segments).toBe(3);
    expect(line.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('binds job id, segment and partition on child loggers and leaves out undefined fields', () => {
    const { logger, parsed } = capture({ bindings: { queue: 'seglift' } });
    const child = childLogger(logger, {
      jobId: '42',
      segment: '/d/t-0/00000000000000000100.log',
      partition: 't-0',
      extra: undefined,
    });
    child.warn('slow');
    const [line] = parsed();
    expect(line.queue).toBe('seglift');
    expect(line.jobId).toBe('42');
    expect(line.segment).toBe('/d/t-0/00000000000000000100.log');
    expect(line.partition).toBe('t-0');
    expect('extra' in line).toBe(false);
    expect(line.level).toBe('warn');
  });

  it('serializes a SegliftError with its typed context and the offset as an exact string', () => {
    const { logger, parsed } = capture();
    logger.error({ err: new FakeSegliftError('CRC-32C mismatch') }, 'segment failed');
    const err = parsed()[0].err as Record<string, unknown>;
    expect(err.type).toBe('CrcMismatchError');
    expect(err.name).toBe('CrcMismatchError');
    expect(err.code).toBe('CRC_MISMATCH');
    expect(err.message).toBe('CRC-32C mismatch');
    expect(err.file).toBe('/data/t-0/00000000000000000000.log');
    expect(err.position).toBe(4096);
    expect(err.offset).toBe('9007199254740993');
    expect(String(err.stack)).toContain('logger.test.ts');
  });

  it('takes the message from an error logged alone and serializes causes and Node error fields', () => {
    const { logger, parsed } = capture();
    const io = Object.assign(new Error('ENOENT: no such file'), {
      code: 'ENOENT',
      syscall: 'open',
      errno: -2,
    });
    logger.error(new Error('rename failed', { cause: io }));
    const line = parsed()[0];
    expect(line.msg).toBe('rename failed');
    const cause = (line.err as Record<string, unknown>).cause as Record<string, unknown>;
    expect(cause.code).toBe('ENOENT');
    expect(cause.syscall).toBe('open');
    expect(cause.errno).toBe(-2);
    expect(cause.message).toBe('ENOENT: no such file');
  });

  it('writes bigints as decimal strings and summarises byte arrays', () => {
    const { logger, parsed } = capture();
    logger.info({ baseOffset: 18446744073709551615n, bytes: Buffer.alloc(300) }, 'batch');
    const line = parsed()[0];
    expect(line.baseOffset).toBe('18446744073709551615');
    expect(line.bytes).toBe('[Buffer byteLength=300]');
  });

  it('redacts Redis URL passwords, secret-named keys and secrets in messages and bindings', () => {
    const { logger, lines, parsed } = capture({ bindings: { redisUrl: 'redis://:hunter2@redis:6379/0' } });
    logger.info(
      {
        config: {
          queue: { name: 'seglift' },
          redis: { url: 'rediss://default:s3cr3t@cache:6380', password: 'pw1' },
        },
        token: 'abc',
        apiKey: 'k',
        clientSecret: { nested: 'x' },
        plain: 'redis://redis:6379',
      },
      'connecting to redis://user:topsecret@redis:6379 with ?password=qq&db=1',
    );
    const text = lines.join('');
    for (const secret of ['hunter2', 's3cr3t', 'pw1', '"abc"', 'topsecret', 'qq', 'nested']) {
      expect(text).not.toContain(secret);
    }
    const line = parsed()[0];
    expect(line.redisUrl).toBe('redis://:[REDACTED]@redis:6379/0');
    expect(line.config).toEqual({
      queue: { name: 'seglift' },
      redis: { url: 'rediss://default:[REDACTED]@cache:6380', password: '[REDACTED]' },
    });
    expect(line.token).toBe('[REDACTED]');
    expect(line.apiKey).toBe('[REDACTED]');
    expect(line.clientSecret).toBe('[REDACTED]');
    expect(line.plain).toBe('redis://redis:6379');
    expect(line.msg).toBe('connecting to redis://user:[REDACTED]@redis:6379 with ?password=[REDACTED]&db=1');
  });

  it('redacts credentials inside error messages', () => {
    const { logger, lines } = capture();
    logger.error(new Error('connect ECONNREFUSED redis://:pw9@10.0.0.1:6379'));
    expect(lines.join('')).not.toContain('pw9');
    expect(JSON.parse(lines[0]).msg).toBe('connect ECONNREFUSED redis://:[REDACTED]@10.0.0.1:6379');
  });

  it('survives circular objects', () => {
    const { logger, parsed } = capture();
    const a: Record<string, unknown> = { n: 1 };
    a.self = a;
    logger.info({ a }, 'cycle');
    expect(parsed()[0].a).toEqual({ n: 1, self: '[Circular]' });
  });

  it('writes human lines when pretty', () => {
    const { logger, lines } = capture({ pretty: true });
    logger.info({ jobId: '7', offset: 5n }, 'converted');
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}test: converted jobId=7 offset=5\n$/);
  });
});

describe('formatPretty', () => {
  it('prints an error with its context and stack below the line', () => {
    const line = JSON.stringify({
      level: 'error',
      time: '2024-05-01T10:20:30.456Z',
      name: 'seglift-worker',
      msg: 'segment failed',
      segment: '/d/t-0/0.log',
      err: {
        type: 'TruncatedDataError',
        code: 'TRUNCATED',
        message: 'partial entry',
        position: 12,
        stack: 'TruncatedDataError: partial entry\n    at read (r.js:1:1)',
      },
    });
    expect(formatPretty(line)).toBe(
      '10:20:30.456 ERROR seglift-worker: segment failed segment=/d/t-0/0.log\n' +
        '    TruncatedDataError: partial entry (code=TRUNCATED position=12)\n' +
        '    at read (r.js:1:1)\n',
    );
  });

  it('returns a line that is not JSON unchanged and colours levels on request', () => {
    expect(formatPretty('not json\n')).toBe('not json\n');
    const colored = formatPretty(
      JSON.stringify({ level: 'warn', time: '2024-05-01T10:20:30.456Z', name: 'n', msg: 'm' }),
      true,
    );
    expect(colored).toBe('10:20:30.456 \x1b[33mWARN \x1b[0m n: m\n');
  });
});
