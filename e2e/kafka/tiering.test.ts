/**
 * Tiered storage on an old topic (issue 25), on the real broker. Kafka 3.9 writes genuine v1
 * segments; Kafka 4.3 (with tiered storage: its own LocalTieredStorage and the topic-based
 * remote log metadata manager) takes them over and appends idempotent and transactional v2 data.
 * The segment-aligned producer snapshots are then removed, as a pre-2.8 broker left none, and
 * partition 0's leader-epoch-checkpoint is what a pre-0.11 history leaves: its first entry at the
 * first offset written after the upgrade. Then `remote.storage.enable=true`:
 *   1. Kafka copies nothing: partition 0 fails on its empty segment leader epochs, partition 1 on
 *      the missing snapshot (NullPointerException); remote storage stays empty.
 *   2. After `seglift tier-prepare`, the same broker copies every closed segment, deletes the
 *      local ones once local retention is small, and serves every record from offset 0 as before;
 *      the snapshots seglift wrote are byte-identical to the ones Kafka had written.
 */
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  unlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { faultEnv } from '@seglift/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tailOf, ZkKafka } from './support/brokers.js';
import {
  type BrokerUser,
  brokerUser,
  chownTree,
  describeRun,
  E2E_DIR,
  harnessClasses,
  kafkaJars,
  missingTools,
} from './support/env.js';
import { diffServed, Harness, type Served, summarize } from './support/records.js';
import { built, seglift } from './support/seglift.js';
import { remoteFiles, TieredBroker, tieredJars } from './support/tiered.js';

const missing = missingTools();
const TOPIC = 'old';
const PARTITIONS = 2;
const dirOf = (logs: string, p: number) => join(logs, `${TOPIC}-${p}`);
const logsIn = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.log'))
    .sort();
const snapshotsIn = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.snapshot'))
    .sort();

describe.skipIf(missing !== undefined)('tiered storage on an old topic (issue 25)', () => {
  let tmp = '';
  let user: BrokerUser;
  let h4: Harness;
  let logs = '';
  let remote = '';
  let broker: TieredBroker;
  let zk: ZkKafka | undefined;
  let baseline: Served;
  /** The segment-aligned snapshots Kafka 4 wrote (then removed), by partition dir and name. */
  const kafkaSnapshots = new Map<string, Buffer>();
  let failed = false;

  beforeAll(async () => {
    if (!built()) throw new Error('dist missing: run `pnpm build` first');
    user = brokerUser();
    const j3 = await kafkaJars('kafka3');
    const j4 = await tieredJars();
    const log4j = join(E2E_DIR, 'config/log4j2-client.properties');
    h4 = new Harness(j4, await harnessClasses('kafka4', j4), log4j);
    const h3 = new Harness(j3, await harnessClasses('kafka3', j3), log4j);
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-tiering-')));
    chmodSync(tmp, 0o755);

    // Kafka 3.9 writes v1 segments (message format 0.10.0): no producer ids, no leader epochs.
    zk = new ZkKafka(j3, join(tmp, 'legacy/logs'), join(tmp, 'legacy'), user);
    await zk.start();
    const legacyProduced = await h3.script(zk.bootstrap, join(tmp, 'legacy'), 'legacy', [
      `create ${TOPIC} ${PARTITIONS} message.format.version=0.10.0 segment.bytes=24576 retention.ms=-1`,
      `produce ${TOPIC} plain 1200 3001 compression.type=none`,
    ]);
    expect(legacyProduced).toContain(`produced ${TOPIC} 1200`);
    await zk.stop();
    zk = undefined;

    // Kafka 4.x: the topic (its id in the metadata log), then the legacy segments move in.
    logs = join(tmp, 'logs');
    remote = join(tmp, 'remote');
    mkdirSync(logs, { recursive: true });
    chownTree(logs, user);
    broker = new TieredBroker(j4, logs, remote, join(tmp, 'work'), user);
    await broker.format(Buffer.from('seglift-tiering-1').toString('base64url'));
    await broker.start('create');
    await h4.script(broker.bootstrap, tmp, 'create', [
      `create ${TOPIC} ${PARTITIONS} internal.segment.bytes=32768 retention.ms=-1`,
    ]);
    await broker.stop();
    for (let p = 0; p < PARTITIONS; p++) {
      const to = dirOf(logs, p);
      for (const f of readdirSync(to))
        if (/\.(log|index|timeindex|snapshot|txnindex)$/.test(f)) unlinkSync(join(to, f));
      // Partition 0: no leader epochs at all, as a broker on message format < 0.11 left it (Kafka
      // deleted the file then); Kafka 4 starts it at its current epoch and log end offset.
      if (p === 0) unlinkSync(join(to, 'leader-epoch-checkpoint'));
      const from = join(tmp, 'legacy/logs', `${TOPIC}-${p}`);
      for (const f of readdirSync(from)) if (f.endsWith('.log')) copyFileSync(join(from, f), join(to, f));
    }
    chownTree(logs, user);

    // v2 data on top: idempotent, then transactional (with aborts, transactions across rolls).
    await broker.start('append-v2');
    const produced = await h4.script(broker.bootstrap, tmp, 'produce', [
      `produce ${TOPIC} headers 900 3002 compression.type=gzip enable.idempotence=true max.in.flight.requests.per.connection=5`,
      `produce ${TOPIC} txn 900 3003 compression.type=none enable.idempotence=true`,
    ]);
    expect(produced).toContain(`produced ${TOPIC} 900`);
    baseline = await h4.read(broker.bootstrap, join(tmp, 'baseline.jsonl'), [TOPIC]);
    await broker.stop();

    // The segment-aligned snapshots go (kept aside): only the one at the log end stays, the
    // snapshot a clean shutdown writes, as on a broker upgraded from before 2.8.
    mkdirSync(join(tmp, 'kafka-snapshots'));
    for (let p = 0; p < PARTITIONS; p++) {
      const dir = dirOf(logs, p);
      const snaps = snapshotsIn(dir);
      // Segment-aligned ones: Kafka's load also left one at the log end offset it found (the
      // legacy data's end), inside a segment it then appended to; no copy ever asks for that one.
      const bases = new Set(logsIn(dir).map((f) => f.replace(/\.log$/, '.snapshot')));
      for (const f of snaps.slice(0, -1)) {
        if (!bases.has(f)) {
          unlinkSync(join(dir, f));
          continue;
        }
        kafkaSnapshots.set(`${TOPIC}-${p}/${f}`, readFileSync(join(dir, f)));
        copyFileSync(join(dir, f), join(tmp, 'kafka-snapshots', `${TOPIC}-${p}-${f}`));
        unlinkSync(join(dir, f));
      }
    }
  }, 900_000);

  afterAll(() => {
    broker?.kill();
    zk?.kill();
    if (tmp && !failed && process.env.KEEP_KAFKA_TMP === undefined)
      rmSync(tmp, { recursive: true, force: true });
    else if (tmp) console.error(`tiering: scenario directory kept in ${tmp}`);
  });

  const closedSegments = () => {
    let n = 0;
    for (let p = 0; p < PARTITIONS; p++) n += logsIn(dirOf(logs, p)).length - 1;
    return n;
  };

  it('1: remote.storage.enable=true on the old topic: Kafka copies nothing (empty segment leader epochs, missing producer snapshot)', async () => {
    try {
      expect(kafkaSnapshots.size, 'segment-aligned snapshots Kafka 4 wrote').toBeGreaterThan(4);
      expect(closedSegments()).toBeGreaterThan(20);
      await broker.start('tiering-before');
      await h4.script(broker.bootstrap, tmp, 'enable-tiering', [`alter ${TOPIC} remote.storage.enable=true`]);
      const p0 = new RegExp(`Error occurred while copying log segments of partition: \\S+:${TOPIC}-0`);
      const p1 = new RegExp(`Error occurred while copying log segments of partition: \\S+:${TOPIC}-1`);
      await broker.until(() => p0.test(broker.log()) && p1.test(broker.log()), 120_000, 'copy errors');
      // Every copy task ran again at least once (1 s interval): the failure is not transient.
      await new Promise((r) => setTimeout(r, 3000));
      const log = broker.log();
      const after = (re: RegExp) => log.slice(log.search(re), log.search(re) + 1500);
      expect(after(p0)).toContain(
        'java.lang.IllegalArgumentException: segmentLeaderEpochs can not be null or empty',
      );
      expect(after(p1)).toContain('java.lang.NullPointerException');
      expect(log).toContain(`Copying 00000000000000000000.log to remote storage.`);
      expect(remoteFiles(remote, '.log'), 'nothing in remote storage').toEqual([]);
      // tier-prepare refuses to write under a running broker (its .lock), and writes nothing.
      const snapshotsNow = [0, 1].map((p) => snapshotsIn(dirOf(logs, p)));
      const refused = await seglift(['tier-prepare', logs]);
      expect(refused.code, describeRun('seglift tier-prepare (broker running)', refused)).toBe(2);
      expect(refused.stderr).toMatch(/LOG_DIR_LOCKED/);
      expect([0, 1].map((p) => snapshotsIn(dirOf(logs, p)))).toEqual(snapshotsNow);
      await broker.stop();
    } catch (e) {
      failed = true;
      console.error(`--- ${broker.logFile}\n${tailOf(broker.logFile, 120)}`);
      throw e;
    }
  }, 300_000);

  it('2: after seglift tier-prepare the same broker copies every closed segment, deletes the local ones and serves every record from offset 0; the snapshots seglift wrote are the ones Kafka wrote, byte for byte', async () => {
    try {
      const epochsBefore = [0, 1].map((p) =>
        readFileSync(join(dirOf(logs, p), 'leader-epoch-checkpoint'), 'utf8'),
      );
      // A first run killed (SIGKILL, a real process death) right after its 4th snapshot's link:
      // 4 whole snapshots, the 4th's temp name left behind; the next run finishes the job.
      const killed = await seglift(
        ['tier-prepare', logs],
        faultEnv({ SEGLIFT_TEST_KILL_AFTER: 'link:.snapshot@4' }),
      );
      expect(killed.signal, describeRun('seglift tier-prepare (killed)', killed)).toBe('SIGKILL');
      const dir0 = readdirSync(dirOf(logs, 0));
      expect(dir0.filter((f) => f.endsWith('.snapshot.seglift-tmp'))).toHaveLength(1);
      expect(dir0.filter((f) => f.endsWith('.snapshot'))).toHaveLength(5); // and the log end's
      const r = await seglift(['tier-prepare', logs, '--json']);
      expect(r.code, describeRun('seglift tier-prepare', r)).toBe(0);
      const parts = r.stdout
        .split('\n')
        .filter((l) => l.startsWith('{"type":"partition"'))
        .map((l) => JSON.parse(l));
      expect(parts.map((x) => [x.partitionDir.replace(`${logs}/`, ''), x.mismatch ?? 'ok'])).toEqual([
        [`${TOPIC}-0`, 'ok'],
        [`${TOPIC}-1`, 'ok'],
      ]);
      expect(parts.reduce((a, x) => a + x.written.length, 0)).toBe(kafkaSnapshots.size - 4);
      for (let p = 0; p < PARTITIONS; p++)
        expect(readdirSync(dirOf(logs, p)).filter((f) => f.includes('seglift'))).toEqual([]);
      const differ: string[] = [];
      for (const [name, kafka] of kafkaSnapshots) {
        const file = join(logs, name);
        if (!existsSync(file)) differ.push(`${name}: not written`);
        else if (!readFileSync(file).equals(kafka)) differ.push(`${name}: differs from Kafka's`);
      }
      expect(differ, "seglift's snapshots against Kafka's").toEqual([]);
      const closed = closedSegments();
      for (let p = 0; p < PARTITIONS; p++) {
        const dir = dirOf(logs, p);
        const bases = logsIn(dir).map((f) => f.replace(/\.log$/, '.snapshot'));
        for (const snap of bases.slice(1))
          expect(existsSync(join(dir, snap)), `${TOPIC}-${p}/${snap}`).toBe(true);
      }
      // Partition 0's first leader epoch (the one Kafka 4 started at the legacy data's end) now
      // starts at offset 0; every other entry as Kafka wrote it.
      const epochs0 = readFileSync(join(dirOf(logs, 0), 'leader-epoch-checkpoint'), 'utf8');
      expect(epochs0).toBe(epochsBefore[0].replace(/^(0\n\d+\n\d+) \d+\n/, '$1 0\n'));
      expect(epochs0).not.toBe(epochsBefore[0]);
      expect(readFileSync(join(dirOf(logs, 1), 'leader-epoch-checkpoint'), 'utf8')).toBe(epochsBefore[1]);

      await broker.start('tiering-after');
      await broker.until(
        () => remoteFiles(remote, '.log').length === closed,
        180_000,
        `${closed} segments in remote storage (${remoteFiles(remote, '.log').length} so far)`,
      );
      expect(broker.log()).not.toMatch(/Error occurred while copying log segments/);
      // Local retention made small: Kafka deletes every local segment already in remote storage.
      await h4.script(broker.bootstrap, tmp, 'local-retention', [`alter ${TOPIC} local.retention.ms=1000`]);
      await broker.until(
        () => [0, 1].every((p) => logsIn(dirOf(logs, p)).length === 1),
        120_000,
        'local segments deleted',
      );
      const served = await h4.read(broker.bootstrap, join(tmp, 'served.jsonl'), [TOPIC]);
      expect(summarize(diffServed(baseline, served, new Set([TOPIC])))).toBe('');
      const n = [...baseline.records.values()].reduce((a, l) => a + l.length, 0);
      expect(n, 'records compared').toBeGreaterThan(3000);
      await broker.stop();
    } catch (e) {
      failed = true;
      console.error(`--- ${broker.logFile}\n${tailOf(broker.logFile, 120)}`);
      throw e;
    }
  }, 400_000);
});
