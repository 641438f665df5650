/**
 * `seglift inspect` against Kafka's own DumpLogSegments (kafka-dump-log.sh), byte for byte, on
 * files Kafka 4's classes wrote (java/WriteFiles.java): payloads and keys that are not valid
 * UTF-8, decoded by Kafka's StringDecoder (`new String(bytes, UTF_8)`, the JDK's count of U+FFFD,
 * not WHATWG's), and producer state snapshots. No broker: the jars and a JVM only.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRun, E2E_DIR, kafkaJars, missingTools, run } from './support/env.js';
import { built, CLI } from './support/seglift.js';

const missing = missingTools();
const inCI = process.env.CI === 'true';

// The operator's UTF-8 terminal: Java writes stdout in the locale's charset (ASCII under POSIX).
/** How many of the payloads below Java decodes otherwise than WHATWG (seeded, so fixed). */
const DIFFER = 8;

const UTF8_ENV = { ...process.env, LC_ALL: 'C.UTF-8' };
const JAVA_UTF8 = ['-Dfile.encoding=UTF-8', '-Dstdout.encoding=UTF-8', '-XX:TieredStopAtLevel=1'];

/** Bytes that start, continue, end or break UTF-8 sequences (Java's and WHATWG's rules differ on some). */
const EDGE = [
  0x41, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf1, 0xf4,
  0xf5, 0xf8, 0xff, 0xbb,
];

/** mulberry32, seeded: the same payloads on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.skipIf(missing !== undefined && !inCI)("inspect beside Kafka's DumpLogSegments", () => {
  let jars = '';
  let dir = '';
  beforeAll(async () => {
    if (!built()) throw new Error('dist missing: run `pnpm build` first');
    if (missing) throw new Error(`the Kafka suite needs ${missing}`);
    jars = await kafkaJars('kafka4');
    dir = mkdtempSync(join(tmpdir(), 'seglift-dump-'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** WriteFiles.java on the kafka4 jars (a single-file source program). */
  async function write(kind: 'log' | 'snapshot', name: string, spec: string[]): Promise<void> {
    writeFileSync(join(dir, `${name}.spec`), `${spec.join('\n')}\n`);
    const r = await run(
      'java',
      ['-cp', `${jars}/*`, join(E2E_DIR, 'java/WriteFiles.java'), kind, name, `${name}.spec`],
      {
        cwd: dir,
      },
    );
    if (r.code !== 0) throw new Error(describeRun(`WriteFiles ${kind}`, r));
  }

  /** Both tools' stdout for the same arguments, run in the files' directory. */
  async function both(files: string[], flags: string[]): Promise<{ kafka: string; seglift: string }> {
    const k = await run(
      'java',
      [
        ...JAVA_UTF8,
        `-Dlog4j2.configurationFile=${join(E2E_DIR, 'config/log4j2-client.properties')}`,
        '-cp',
        `${jars}/*`,
        'org.apache.kafka.tools.DumpLogSegments',
        ...flags,
        '--files',
        files.join(','),
      ],
      { cwd: dir, env: UTF8_ENV },
    );
    if (k.code !== 0) throw new Error(describeRun('DumpLogSegments', k));
    const s = await run(CLI, ['inspect', ...files, ...flags], { cwd: dir, env: UTF8_ENV });
    expect(s.stderr).toBe('');
    expect(s.code).toBe(0);
    return { kafka: k.stdout, seglift: s.stdout };
  }

  it('--print-data-log: keys and payloads that are not valid UTF-8 decode as Java decodes them', async () => {
    const hex = (b: number[]) => Buffer.from(b).toString('hex');
    const named = [
      [0xed, 0xa0, 0x80], // an encoded surrogate: one U+FFFD in Java, three in WHATWG
      [0xed, 0xa0, 0x41],
      [0xed, 0xa0], // truncated at the end
      [0xe0, 0x80, 0x80], // overlong
      [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
      [0xf0, 0x90, 0x80], // truncated 4-byte sequence
      [0xef, 0xbb, 0xbf, 0x41], // a byte order mark is kept
      [0xc0, 0xaf],
      [0xf0, 0x9f, 0x98, 0x82], // valid
      [],
    ];
    const rand = prng(20261204);
    const random = Array.from({ length: 400 }, () =>
      Array.from({ length: 1 + Math.floor(rand() * 8) }, () =>
        rand() < 0.85 ? (EDGE[Math.floor(rand() * EDGE.length)] as number) : Math.floor(rand() * 256),
      ),
    );
    const payloads = [...named, ...random];
    // Each payload as a value, and as the next record's key (a null value once, a null key once).
    const spec = payloads.map(
      (p, i) =>
        `${i === 1 ? '-' : hex(payloads[(i + 1) % payloads.length] ?? [])} ${i === 2 ? '-' : hex(p)} ${i % 7 === 0 ? hex([0x68, 0xc3, 0xa9]) : ''}`,
    );
    await write('log', '00000000000000000000.log', spec);
    const { kafka, seglift } = await both(['00000000000000000000.log'], ['--print-data-log']);
    expect(seglift.split('\n').filter((l) => l.startsWith('| offset: ')).length).toBe(payloads.length);
    expect(seglift).toBe(kafka);
    // What this guards: payloads whose Java decoding is not WHATWG's (TextDecoder, Buffer).
    const printed = kafka
      .split('\n')
      .filter((l) => l.startsWith('| offset: '))
      .map((l) => l.split(' payload: ')[1]);
    const differ = payloads.filter(
      (p, i) => i !== 2 && printed[i] !== new TextDecoder().decode(Uint8Array.from(p)),
    );
    expect(differ.length).toBe(DIFFER);
  });

  it('producer state snapshots (.snapshot): every entry as DumpLogSegments prints it', async () => {
    await write('snapshot', '00000000000000000010.snapshot', [
      '1000 3 41 9 4 1700000000123 -1 -1', // an idempotent producer's last batch
      '7 0 -1 -1 0 1700000000999 5 8', // no batch, a transaction open at 8
      '42 1 2 30 5 1700000001000 0 25', // firstSequence wraps (2 - 5)
      '9223372036854775807 32767 2147483647 9223372036854775806 0 -1 2147483647 -1',
    ]);
    await write('snapshot', '00000000000000000020.snapshot', []);
    const files = ['00000000000000000010.snapshot', '00000000000000000020.snapshot'];
    const { kafka, seglift } = await both(files, []);
    expect(kafka.split('\n').length).toBe(2 + 4 + 1);
    expect(seglift).toBe(kafka);
    expect(readFileSync(join(dir, files[0] as string)).length).toBe(10 + 4 * 46);
  });
});
