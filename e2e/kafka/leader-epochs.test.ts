/**
 * leader-epoch-checkpoint as Kafka 4's own classes read it (issue 32, items 3 and 4): no broker,
 * the kafka4 jars and java/LeaderEpochs.java. Segments are written by Kafka's MemoryRecords; the
 * checkpoint before and after `seglift tier-prepare` is loaded into Kafka's LeaderEpochFileCache,
 * beside the cache Kafka's recovery builds from the batches themselves (LogSegment.recover's
 * assign per batch), and `endOffsetFor` is asked for every epoch the batches carry:
 *   - the answer after is the one Kafka's recovery of the batches gives, for every epoch present;
 *   - the checkpoint's own epochs keep the answer they had (and with one epoch below the first
 *     entry, as in the issue, every answer is unchanged).
 * And every checkpoint seglift refuses is one Kafka refuses or would not keep as it is.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeRun, E2E_DIR, kafkaJars, missingTools, run } from './support/env.js';
import { built, CLI } from './support/seglift.js';

const missing = missingTools();
const inCI = process.env.CI === 'true';

interface Cache {
  entries?: [number, number][];
  endOffsetFor?: Record<string, [number, number]>;
  error?: string;
}
type Read = { epochs: number[]; logEndOffset: number; recovered: Cache } & Record<string, Cache>;

describe.skipIf(missing !== undefined && !inCI)("leader epochs beside Kafka's LeaderEpochFileCache", () => {
  let jars = '';
  let dir = '';
  beforeAll(async () => {
    if (!built()) throw new Error('dist missing: run `pnpm build` first');
    if (missing) throw new Error(`the Kafka suite needs ${missing}`);
    jars = await kafkaJars('kafka4');
    dir = mkdtempSync(join(tmpdir(), 'seglift-epochs-'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function java(args: string[]): Promise<string> {
    const r = await run('java', [
      '-XX:TieredStopAtLevel=1',
      `-Dlog4j2.configurationFile=${join(E2E_DIR, 'config/log4j2-client.properties')}`,
      '-cp',
      `${jars}/*`,
      join(E2E_DIR, 'java/LeaderEpochs.java'),
      ...args,
    ]);
    if (r.code !== 0) throw new Error(describeRun(`LeaderEpochs ${args[0]}`, r));
    return r.stdout;
  }

  /** A log dir with partition t-0 written by Kafka's classes from `spec`, and its checkpoint. */
  async function partition(name: string, spec: string[], checkpoint: string): Promise<string> {
    const part = join(dir, name, 't-0');
    mkdirSync(part, { recursive: true });
    writeFileSync(join(dir, `${name}.spec`), `${spec.join('\n')}\n`);
    await java(['write', part, join(dir, `${name}.spec`)]);
    writeFileSync(join(part, 'leader-epoch-checkpoint'), checkpoint);
    writeFileSync(join(dir, `${name}.before`), checkpoint);
    return part;
  }

  async function tierPrepare(name: string): Promise<Read> {
    const r = await run(CLI, ['tier-prepare', join(dir, name)]);
    if (r.code !== 0) throw new Error(describeRun('seglift tier-prepare', r));
    const part = join(dir, name, 't-0');
    return JSON.parse(
      await java(['read', part, join(dir, `${name}.before`), join(part, 'leader-epoch-checkpoint')]),
    );
  }

  it("batches 0..147 all of epoch 1, the checkpoint `2 148`: every epoch's end offset as before (KIP-320's check sees no truncation)", async () => {
    const part = await partition(
      'one-below',
      ['segment 0', 'v2 0 100 1', 'segment 100', 'v2 100 48 1', 'segment 148', 'v2 148 2 2'],
      '0\n1\n2 148\n',
    );
    const read = await tierPrepare('one-below');
    const before = read[join(dir, 'one-below.before')];
    const after = read[join(part, 'leader-epoch-checkpoint')];
    expect(read.epochs).toEqual([1, 2]);
    expect(after.entries).toEqual([
      [1, 0],
      [2, 148],
    ]);
    // Kafka's answer for epoch 1 stays 148 (it was 0 when the first entry was moved down).
    expect(before.endOffsetFor).toEqual({ '1': [1, 148], '2': [2, 150] });
    expect(after.endOffsetFor).toEqual(before.endOffsetFor);
    expect(after.endOffsetFor).toEqual(read.recovered.endOffsetFor);
  });

  it("several epochs below the first entry, legacy data first: each epoch's end offset is what Kafka's recovery of the batches gives; the checkpoint's epochs keep theirs", async () => {
    const part = await partition(
      'several-below',
      [
        'segment 0',
        'v1 0 3',
        'segment 3',
        'v2 3 2 0',
        'v2 5 2 1',
        'v2 7 1 0',
        'segment 8',
        'v2 8 2 1',
        'v2 10 2 3',
        'segment 12',
        'v2 12 1 3',
        'segment 13',
        'v2 13 1 4',
      ],
      '0\n2\n3 12\n4 13\n',
    );
    const read = await tierPrepare('several-below');
    const before = read[join(dir, 'several-below.before')];
    const after = read[join(part, 'leader-epoch-checkpoint')];
    expect(read.epochs).toEqual([0, 1, 3, 4]);
    expect(read.recovered.entries).toEqual([
      [0, 3],
      [1, 5],
      [3, 10],
      [4, 13],
    ]);
    // The earliest entry reaches down over the legacy data (no epoch), as tiering needs.
    expect(after.entries).toEqual([
      [0, 0],
      [1, 5],
      [3, 10],
      [4, 13],
    ]);
    expect(after.endOffsetFor).toEqual(read.recovered.endOffsetFor);
    for (const e of ['3', '4']) expect(after.endOffsetFor?.[e]).toEqual(before.endOffsetFor?.[e]);
  });

  it('every checkpoint seglift refuses is one Kafka refuses or would not keep as written; every one it accepts Kafka reads as written', async () => {
    // [the file, its entries as written when its lines are entries at all]
    const cases: [string, [number, number][] | null][] = [
      ['', []],
      ['0\n', []],
      ['0\n0\n', []],
      ['0\r\n1\r\n2 148\r\n', [[2, 148]]],
      ['0\n1\n2\t148  \n', [[2, 148]]],
      ['+0\n1\n+2 148\n', [[2, 148]]],
      ['0\n1\n99999999999999999999 200\n', null],
      ['0\n1\n2147483648 200\n', null],
      ['0\n2\n\n2 148\n', null],
      [
        '0\n2\n3 148\n2 149\n',
        [
          [3, 148],
          [2, 149],
        ],
      ],
      [
        '0\n2\n2 148\n3 148\n',
        [
          [2, 148],
          [3, 148],
        ],
      ],
      ['0\n1\n-1 148\n', null],
      ['0\n1\n 2 148\n', null],
      ['0\n3\n2 148\n', null],
      ['0\n-1\n', null],
      ['1\n0\n', null],
    ];
    const part = await partition('checkpoints', ['segment 0', 'v2 0 100 1', 'segment 148', 'v2 148 2 2'], '');
    const files: string[] = [];
    const seglift: boolean[] = [];
    for (const [i, [text]] of cases.entries()) {
      const file = join(dir, `checkpoint-${i}`);
      writeFileSync(file, text);
      files.push(file);
      writeFileSync(join(part, 'leader-epoch-checkpoint'), text);
      const r = await run(CLI, ['tier-prepare', '--dry-run', '--json', join(dir, 'checkpoints')]);
      const partition = JSON.parse(r.stdout.split('\n')[0]);
      seglift.push(partition.error === undefined);
    }
    const read: Read = JSON.parse(await java(['read', part, ...files]));
    for (const [i, [text, written]] of cases.entries()) {
      const kafka = read[files[i]];
      const keeps = kafka.error === undefined && JSON.stringify(kafka.entries) === JSON.stringify(written);
      expect(seglift[i], `${JSON.stringify(text)}: Kafka ${JSON.stringify(kafka)}`).toBe(keeps);
    }
    // Both kinds occur: the table is not all of one.
    expect(seglift.filter(Boolean).length).toBe(6);
    expect(readFileSync(join(part, 'leader-epoch-checkpoint'), 'utf8')).toBe('1\n0\n');
  });
});
