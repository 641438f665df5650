import { describe, expect, it } from 'vitest';
import { FlagError, nearest, parseFlags } from './flags.js';
import { loadConfig, loadConfigWithSources, unknownEnvWarnings } from './load.js';

const OPTIONS = {
  level: { type: 'string' },
  out: { type: 'string' },
  root: { type: 'string', multiple: true },
  'in-place': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const error = (argv: string[]) => {
  try {
    parseFlags(argv, OPTIONS);
  } catch (err) {
    expect(err).toBeInstanceOf(FlagError);
    return (err as Error).message;
  }
  throw new Error('no error');
};

describe('parseFlags (every program: seglift, seglift-watcher, seglift-worker)', () => {
  it('takes a negative number as a value: --level -5 (zstd fast levels)', () => {
    expect(parseFlags(['--level', '-5', 'a.log'], OPTIONS)).toEqual({
      values: { level: '-5' },
      positionals: ['a.log'],
    });
    expect(parseFlags(['--level=-131072'], OPTIONS).values.level).toBe('-131072');
  });

  it('suggests the nearest flag for a mistyped one instead of node advice about --', () => {
    expect(error(['--levle', '3'])).toBe("unknown option '--levle'; did you mean --level?");
    expect(error(['--inplace'])).toBe("unknown option '--inplace'; did you mean --in-place?");
    expect(error(['--jsn'])).toBe("unknown option '--jsn'; did you mean --json?");
    expect(error(['--in'])).toBe("unknown option '--in'; did you mean --in-place?");
    expect(error(['--frobnicate'])).toBe("unknown option '--frobnicate'");
    expect(error(['-x'])).toBe("unknown option '-x'");
  });

  it('says what is wrong with a value', () => {
    expect(error(['--out'])).toBe('option --out needs a value');
    expect(error(['--out', '--json'])).toBe(
      "option --out needs a value (got the option '--json'; write --out=--json if that is the value)",
    );
    expect(error(['--json=yes'])).toBe("option --json takes no value (got 'yes')");
    expect(() => parseFlags(['x'], OPTIONS, { allowPositionals: false })).toThrow("unexpected argument 'x'");
  });

  it('keeps what node:util parseArgs gives: repeated options, short flags, -- before positionals', () => {
    expect(parseFlags(['--root', '/a', '--root=/b', '-h', '--', '--not-a-flag'], OPTIONS)).toEqual({
      values: { root: ['/a', '/b'], help: true },
      positionals: ['--not-a-flag'],
    });
  });

  it('nearest: typos within two edits, or the one name a prefix stands for', () => {
    expect(nearest('SEGLIFT_CODECC', ['SEGLIFT_CODEC', 'SEGLIFT_LEVEL'])).toBe('SEGLIFT_CODEC');
    expect(nearest('--con', ['--config', '--concurrency'])).toBeUndefined();
    expect(nearest('--xyz', ['--json'])).toBeUndefined();
  });
});

describe('settings an operator types', () => {
  it('takes a codec in any case, from every source', () => {
    expect(loadConfig({ env: {}, flags: { codec: 'ZSTD' } }).codec).toBe('zstd');
    expect(loadConfig({ env: { SEGLIFT_CODEC: 'Lz4' } }).codec).toBe('lz4');
    expect(loadConfig({ env: {}, flags: { codec: 'GZIP', level: 9 } }).level).toBe(9);
    expect(() => loadConfig({ env: {}, flags: { codec: 'brotli' } })).toThrow(/codec = "brotli"/);
  });

  it('warns about a SEGLIFT_* variable that is no setting, naming the one it was likely meant to be', async () => {
    const { warnings } = await loadConfigWithSources({
      env: {
        SEGLIFT_CODECC: 'lz4',
        SEGLIFT_CODEC: 'gzip',
        SEGLIFT_WORKER_CONCURENCY: '4',
        SEGLIFT_NOPE: '1',
      },
    });
    expect(warnings).toEqual([
      "SEGLIFT_CODECC is not a seglift setting and is ignored; did you mean SEGLIFT_CODEC? ('seglift config print --help' lists the variables)",
      "SEGLIFT_NOPE is not a seglift setting and is ignored ('seglift config print --help' lists the variables)",
      "SEGLIFT_WORKER_CONCURENCY is not a seglift setting and is ignored; did you mean SEGLIFT_WORKER_CONCURRENCY? ('seglift config print --help' lists the variables)",
    ]);
    // The tools' own variables are not settings and never warned about.
    expect(
      unknownEnvWarnings({
        SEGLIFT_CONFIG: '/x.yaml',
        SEGLIFT_BIN_DIR: '/usr/local/bin',
        SEGLIFT_SKIP_SUMMARY: '1',
        SEGLIFT_TEST_KILL_AFTER: 'rename',
        PATH: '/bin',
      }),
    ).toEqual([]);
  });
});
