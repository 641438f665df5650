/**
 * A real cluster (issue 23): three Kafka 4.x nodes (KRaft, combined broker+controller), every topic
 * with three replicas and min.insync.replicas=2, migrated broker by broker with the two-phase
 * procedure of docs/operator-guide.md (prepare twice beside the running broker, controlled
 * shutdown, commit, start, wait for ISR = replicas) while an idempotent producer and a
 * read_committed consumer group run. Then every major client reads the migrated topics and must
 * see what Kafka's Java consumer sees. See docs/reliability.md §12 for what each check proves.
 */
import { type ChildProcess, spawn } from 'node:child_process';
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
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { confluentKafka, goToolchain, kafkaPython, kafkaPythonPath } from '@seglift/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tailOf, ZkKafka } from './support/brokers.js';
import {
  compareClient,
  controlRecordsDropped,
  franzBinary,
  goVersion,
  planOf,
  readWithFranz,
  readWithKafkajs,
  readWithKafkaPython,
  readWithRdkafka,
  writePlan,
} from './support/clients.js';
import {
  bootstrapOf,
  brokerLogs,
  type ClusterNode,
  ClusterTool,
  clusterClasses,
  highWatermarks,
  makeCluster,
  truncations,
} from './support/cluster.js';
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
import { diffServed, Harness, type Served, summarize, type TopicSpec } from './support/records.js';
import { built, seglift, treeDigest } from './support/seglift.js';

const missing = missingTools();
const inCI = process.env.CI === 'true';

/** Written by Kafka 3.9 (as in oracle.test.ts): magic 0 and 1, four codecs, one LogAppendTime. */
const legacy = (
  name: string,
  format: '0.9.0' | '0.10.0',
  codec: string,
  extra: string[] = [],
): TopicSpec => ({
  name,
  partitions: 1,
  mode: 'plain',
  count: 1500,
  configs: [`message.format.version=${format}`, 'segment.bytes=24576', 'retention.ms=-1', ...extra],
  producer: [`compression.type=${codec}`],
});
const LEGACY: TopicSpec[] = [
  legacy('v0-none', '0.9.0', 'none'),
  legacy('v0-gzip', '0.9.0', 'gzip'),
  legacy('v1-create-snappy', '0.10.0', 'snappy'),
  legacy('v1-create-lz4', '0.10.0', 'lz4'),
  legacy('v1-append-gzip', '0.10.0', 'gzip', ['message.timestamp.type=LogAppendTime']),
];

/** Written by the 4.x cluster itself. */
const SMALL = ['internal.segment.bytes=32768', 'retention.ms=-1'];
const IDEMPOTENT = ['enable.idempotence=true', 'max.in.flight.requests.per.connection=5'];
const V2: TopicSpec[] = [
  {
    name: 'v2-gzip-idempotent',
    partitions: 2,
    mode: 'headers',
    count: 3000,
    configs: SMALL,
    producer: ['compression.type=gzip', ...IDEMPOTENT],
  },
  {
    name: 'v2-txn',
    partitions: 1,
    mode: 'txn',
    count: 1500,
    configs: SMALL,
    producer: ['compression.type=gzip', ...IDEMPOTENT],
  },
  {
    // Compacted, but never cleaned here (the lag): each replica's cleaner would run on its own.
    name: 'v2-compact',
    partitions: 1,
    mode: 'compact',
    count: 1500,
    configs: [...SMALL, 'cleanup.policy=compact', 'min.compaction.lag.ms=315360000000'],
    producer: ['compression.type=lz4', ...IDEMPOTENT],
  },
];
/** The live traffic's topics (Cluster.java traffic), small segments so that they roll meanwhile. */
const LIVE = [
  { name: 'live-a', partitions: 2 },
  { name: 'live-b', partitions: 1 },
];
const LEGACY_NAMES = new Set(LEGACY.map((t) => t.name));
const DATA_TOPICS = [...LEGACY, ...V2].map((t) => t.name);
const READ_TOPICS = [...DATA_TOPICS, '__transaction_state'];
const CODEC = 'zstd';

const BROKER_PROBLEMS =
  /Found invalid messages|Corruption found|Found a corrupted index file|Could not find offset index file|CorruptRecordException|InvalidRecordException|KafkaStorageException|Error while (loading|reading|deleting|renaming)|is not a valid|below high watermark|Shutdown broker because|FATAL/;

function brokerProblems(log: string): string[] {
  return log.split('\n').filter((l) => BROKER_PROBLEMS.test(l));
}

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

it.skipIf(missing !== undefined && !inCI)('Kafka cluster prerequisites: a JDK 17+ and Maven on PATH', () => {
  expect(missing).toBeUndefined();
});

describe.skipIf(missing !== undefined)('a three-node Kafka 4 cluster', () => {
  let tmp = '';
  let user: BrokerUser;
  let h4: Harness;
  let tool: ClusterTool;
  let nodes: ClusterNode[] = [];
  let bootstrap = '';
  let baseline: Served;
  let after: Served;
  let ready = false;
  let migrated = false;
  let restarted = false;
  let rdkafkaBefore = '';
  let failed = false;
  const t0 = Date.now();
  const timings: string[] = [];
  const lap = (what: string) => timings.push(`${what} at ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const logDirOf = (id: number) => join(tmp, `node-${id}`, 'logs');
  const stageOf = (id: number) => join(tmp, `node-${id}`, 'stage');

  beforeAll(async () => {
    if (!built()) throw new Error('dist missing: run `pnpm build` first');
    user = brokerUser();
    const [j4, j3] = [await kafkaJars('kafka4'), await kafkaJars('kafka3')];
    const log4j = join(E2E_DIR, 'config/log4j2-client.properties');
    h4 = new Harness(j4, await harnessClasses('kafka4', j4), log4j);
    const h3 = new Harness(j3, await harnessClasses('kafka3', j3), log4j);
    tool = new ClusterTool(j4, await clusterClasses(j4), log4j);
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-cluster-')));
    chmodSync(tmp, 0o755);

    // Kafka 3.9 writes the legacy topics, as in oracle.test.ts.
    const zk = new ZkKafka(j3, join(tmp, 'legacy/logs'), join(tmp, 'legacy'), user);
    try {
      await zk.start();
      const produced = await h3.script(zk.bootstrap, join(tmp, 'legacy'), 'legacy', [
        ...LEGACY.map((t) => `create ${t.name} ${t.partitions} ${t.configs.join(' ')}`),
        ...LEGACY.map((t, i) => `produce ${t.name} ${t.mode} ${t.count} ${3000 + i} ${t.producer.join(' ')}`),
      ]);
      for (const t of LEGACY) expect(produced).toContain(`produced ${t.name} ${t.count}`);
    } finally {
      await zk.stop();
    }
    lap('legacy data written by Kafka 3.9');

    // The 4.x cluster: topics with three replicas, the v2 data written through it.
    nodes = await makeCluster(j4, tmp, user, logDirOf);
    bootstrap = bootstrapOf(nodes);
    for (const n of nodes) {
      mkdirSync(n.logDir, { recursive: true });
      chownTree(n.logDir, user);
    }
    await Promise.all(nodes.map((n) => n.format(Buffer.from('seglift-cluster1').toString('base64url'))));
    for (const n of nodes) n.launch('create');
    await Promise.all(nodes.map((n) => n.started()));
    await tool.cluster([
      'script',
      bootstrap,
      writeScript('create', [
        ...LEGACY.map(
          (t) => `create ${t.name} ${t.partitions} 3 retention.ms=-1 internal.segment.bytes=24576`,
        ),
        ...V2.map((t) => `create ${t.name} ${t.partitions} 3 ${t.configs.join(' ')}`),
        ...LIVE.map((t) => `create ${t.name} ${t.partitions} 3 internal.segment.bytes=65536 retention.ms=-1`),
      ]),
    ]);
    await h4.script(
      bootstrap,
      tmp,
      'v2',
      V2.map((t, i) => `produce ${t.name} ${t.mode} ${t.count} ${4000 + i} ${t.producer.join(' ')}`),
    );
    await Promise.all(nodes.map((n) => n.stop()));
    lap('v2 data written by the cluster');

    // The legacy segments move into every replica's partition dir, as oracle.test.ts moves them:
    // the 4.x partition.metadata and leader-epoch-checkpoint stay, indexes and snapshots go.
    for (const n of nodes)
      for (const t of LEGACY)
        for (let p = 0; p < t.partitions; p++) {
          const to = join(n.logDir, `${t.name}-${p}`);
          const from = join(tmp, 'legacy/logs', `${t.name}-${p}`);
          for (const f of readdirSync(to))
            if (/\.(log|index|timeindex|snapshot|txnindex)$/.test(f)) unlinkSync(join(to, f));
          for (const f of readdirSync(from)) if (f.endsWith('.log')) copyFileSync(join(from, f), join(to, f));
        }
    // And their high watermark with them: 3.9's replication-offset-checkpoint says what a cluster
    // that had written them would say (without it, followers truncate to the 4.x checkpoint's 0 and
    // fetch the legacy data again from the leader, and the replicas are no longer the placed bytes).
    const legacyHw = highWatermarks(join(tmp, 'legacy/logs'));
    for (const n of nodes) {
      const file = join(n.logDir, 'replication-offset-checkpoint');
      const [version, , ...entries] = readFileSync(file, 'utf8').trim().split('\n');
      const lines = entries.map((l) => {
        const [topic, partition] = l.split(' ');
        const hw = legacyHw.get(`${topic}-${partition}`);
        return hw === undefined ? l : `${topic} ${partition} ${hw}`;
      });
      writeFileSync(file, `${version}\n${lines.length}\n${lines.join('\n')}\n`);
    }
    for (const n of nodes) chownTree(n.logDir, user);
    for (const n of nodes) n.launch('baseline');
    await Promise.all(nodes.map((n) => n.started()));
    await tool.cluster(['insync', bootstrap, '180000']);
    baseline = await h4.read(bootstrap, join(tmp, 'baseline.jsonl'), READ_TOPICS);
    for (const t of LEGACY) {
      expect(baseline.records.get(`read_uncommitted ${t.name}-0`)?.length, t.name).toBe(t.count);
      for (const n of nodes)
        expect(
          readdirSync(join(n.logDir, `${t.name}-0`)).filter((f) => f.endsWith('.log')).length,
          `${t.name} segments on node ${n.id}`,
        ).toBeGreaterThan(3);
    }
    const committed = baseline.records.get('read_committed v2-txn-0')?.length ?? 0;
    const uncommitted = baseline.records.get('read_uncommitted v2-txn-0')?.length ?? 0;
    expect(committed, 'aborted transactions in v2-txn').toBeLessThan(uncommitted - 10);
    // Every replica still holds the placed legacy bytes (nothing fetched again, nothing truncated).
    for (const n of nodes)
      for (const t of LEGACY)
        expect(treeDigestOf(join(n.logDir, `${t.name}-0`), '.log'), `${t.name} on node ${n.id}`).toEqual(
          treeDigestOf(join(tmp, 'legacy/logs', `${t.name}-0`), '.log'),
        );
    lap('baseline read');
    // librdkafka on the unmigrated legacy data, kept as the "before" (librdkafka issue 5549:
    // null keys and values from v0/v1 message sets over newer fetch versions).
    if (confluentKafka.present) {
      const tps = LEGACY.map((t) => `${t.name}-0`);
      const plan = planOf(baseline, tps, ['read_uncommitted']);
      const before = await readWithRdkafka(
        bootstrap,
        join(tmp, 'rdkafka-before.jsonl'),
        writePlan(join(tmp, 'rdkafka-before.plan.json'), plan),
      );
      const diffs = compareClient(baseline, before, plan, { leaderEpoch: false, noTimestampAsZero: true });
      rdkafkaBefore = `librdkafka ${before.version} on the unmigrated legacy topics: ${
        diffs.length === 0 ? 'served as Kafka serves them' : `${diffs.length} differences, first: ${diffs[0]}`
      }`;
      console.log(rdkafkaBefore);
    }
    ready = true;
  }, 900_000);

  function writeScript(name: string, lines: string[]): string {
    const file = join(tmp, `${name}.cluster`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  }

  afterEach((ctx) => {
    if (ctx.task.result?.state !== 'fail') return;
    failed = true;
    for (const f of brokerLogs.slice(-6)) console.error(`--- ${f} (tail)\n${tailOf(f, 60)}`);
  });

  afterAll(() => {
    console.log(`cluster scenario timings:\n  ${timings.join('\n  ')}`);
    for (const n of nodes) n.kill();
    if (tmp && !failed && process.env.KEEP_KAFKA_TMP === undefined)
      rmSync(tmp, { recursive: true, force: true });
    else if (tmp) console.error(`kafka cluster: directories kept in ${tmp}`);
  });

  const stageArgs = (id: number) => ['--stage-dir', stageOf(id), '--codec', CODEC, '--json', '--quiet'];

  it('rolling two-phase migration, broker by broker, under an idempotent producer and a read_committed group: no acknowledged record lost or duplicated', async () => {
    if (!ready) throw new Error('the cluster was not built (see the first failure)');
    const stopFile = join(tmp, 'traffic.stop');
    const trafficDir = join(tmp, 'traffic');
    mkdirSync(trafficDir);
    const traffic = spawnTraffic(trafficDir, stopFile);
    const acked = () =>
      existsSync(join(trafficDir, 'acked.txt'))
        ? readFileSync(join(trafficDir, 'acked.txt'), 'utf8').split('\n').length
        : 0;
    try {
      await until(() => acked() > 200 || traffic.exitCode !== null, 120_000, 'the live producer');
      const migrationStart = Date.now();
      for (const n of nodes) {
        // 0. audit: the stage space.
        const audit = await seglift(['audit', n.logDir, '--codec', CODEC]);
        expect(audit.code, describeRun(`seglift audit (node ${n.id})`, audit)).toBe(0);
        expect(audit.stdout).toMatch(/migrate --prepare needs about/);
        // 1, 2. prepare beside the running broker, twice.
        for (const round of [1, 2]) {
          const r = await seglift(['migrate', n.logDir, '--prepare', ...stageArgs(n.id)]);
          expect(r.code, describeRun(`prepare ${round} (node ${n.id})`, r)).toBe(0);
          expect(r.summary?.failed).toBe(0);
          if (round === 1) expect(r.summary?.stage?.staged).toBeGreaterThan(20);
        }
        // The live-broker protection: a commit beside the running node is refused.
        const refused = await seglift(['migrate', n.logDir, '--commit', ...stageArgs(n.id)]);
        expect(refused.code, describeRun(`commit beside the running node ${n.id}`, refused)).toBe(2);
        expect(refused.stderr).toContain(`error[LOG_DIR_LOCKED]: log dir ${n.logDir} is locked by pid `);
        // 3. controlled shutdown, then the commit.
        await n.stop();
        const hw = highWatermarks(n.logDir);
        const metadataBefore = treeDigest(join(n.logDir, '__cluster_metadata-0'));
        const commit = await seglift([
          'migrate',
          n.logDir,
          '--commit',
          '--include-active',
          ...stageArgs(n.id),
        ]);
        expect(commit.code, describeRun(`commit (node ${n.id})`, commit)).toBe(0);
        expect(commit.summary?.failed).toBe(0);
        expect(commit.summary?.stage?.staged).toBeGreaterThan(20);
        expect(treeDigest(join(n.logDir, '__cluster_metadata-0')), `node ${n.id} metadata log`).toEqual(
          metadataBefore,
        );
        // 4. start; wait until every partition is back in sync.
        await n.start(`migrated`);
        await tool.cluster(['insync', bootstrap, '300000']);
        expect(await tool.underReplicated(bootstrap), 'under-replicated partitions').toBe('');
        const below = truncations(n.log()).filter((t) => t.offset < (hw.get(t.tp) ?? 0));
        expect(below.map((t) => `${t.line} (high watermark ${hw.get(t.tp)})`).join('\n')).toBe('');
        // audit after: no legacy data left on this node.
        const audited = await seglift(['audit', n.logDir, '--codec', CODEC, '--json']);
        expect(audited.code, describeRun(`seglift audit after (node ${n.id})`, audited)).toBe(0);
        lap(`node ${n.id} migrated (${acked()} records acknowledged so far)`);

        if (n.id === 1) {
          // Midway: one broker migrated, two not. The same reads from a migrated leader and, after
          // a forced leader change, from an unmigrated one.
          await tool.cluster(['lead', bootstrap, '1', ...READ_TOPICS]);
          const fromMigrated = await h4.read(bootstrap, join(tmp, 'midway-node1.jsonl'), READ_TOPICS);
          await tool.cluster(['lead', bootstrap, '2', ...READ_TOPICS]);
          const fromUnmigrated = await h4.read(bootstrap, join(tmp, 'midway-node2.jsonl'), READ_TOPICS);
          // Kafka's upconversion allowances (magic 0 served as CreateTime -1, epoch -1) apply.
          expect(summarize(diffServed(fromUnmigrated, fromMigrated, LEGACY_NAMES))).toBe('');
          expect(summarize(diffServed(baseline, fromMigrated, LEGACY_NAMES))).toBe('');
          lap('midway reads from a migrated and an unmigrated leader');
        }
      }
      const migrationMs = Date.now() - migrationStart;
      writeFileSync(stopFile, '');
      const t = await traffic.done;
      expect(t.code, `traffic: ${t.output}`).toBe(0);
      lap(`rolling migration done in ${(migrationMs / 1000).toFixed(0)} s`);
      checkTraffic(trafficDir, migrationStart, migrationMs);
      const producers = await tool.cluster(['producers', bootstrap, ...LIVE.map((l) => l.name)]);
      // One producer id per partition: idempotence held through every leader move.
      for (const line of producers.trim().split('\n')) expect(line).toMatch(/^producers \S+ \[\d+\]$/);
      console.log(`cluster: ${producers.trim()}`);
    } finally {
      if (!existsSync(stopFile)) writeFileSync(stopFile, '');
      await Promise.race([traffic.done, new Promise((r) => setTimeout(r, 60_000))]);
      traffic.proc.kill('SIGKILL');
    }
    after = await h4.read(bootstrap, join(tmp, 'after.jsonl'), READ_TOPICS);
    expect(summarize(diffServed(baseline, after, LEGACY_NAMES, new Set(READ_TOPICS)))).toBe('');
    for (const n of nodes) expect(brokerProblems(readAll(n)).join('\n'), `node ${n.id} log`).toBe('');
    migrated = true;
  }, 1_200_000);

  function readAll(n: ClusterNode): string {
    // The logs since the migration began (the baseline start rebuilds the indexes placement removed).
    const files = brokerLogs.filter(
      (f) => f.startsWith(`${n.workDir}/`) && !/-(create|baseline)\.log$/.test(f),
    );
    if (files.length === 0) throw new Error(`no broker log of node ${n.id} since the migration began`);
    return files.map((f) => readFileSync(f, 'utf8')).join('\n');
  }

  function spawnTraffic(dir: string, stopFile: string) {
    const proc: ChildProcess = spawn(
      'java',
      [
        '-Xms32m',
        '-Xmx256m',
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        '-XX:-UsePerfData',
        `-Dlog4j2.configurationFile=${tool.log4j}`,
        '-cp',
        `${tool.classes}:${tool.jars}/*`,
        'Cluster',
        'traffic',
        bootstrap,
        dir,
        stopFile,
        ...LIVE.map((l) => l.name),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    proc.stdout?.on('data', (d) => {
      output += String(d);
    });
    proc.stderr?.on('data', (d) => {
      output += String(d);
    });
    const done = new Promise<{ code: number | null; output: string }>((res) =>
      proc.on('exit', (code) => res({ code, output: output.slice(-4000) })),
    );
    return {
      proc,
      done,
      get exitCode() {
        return proc.exitCode;
      },
    };
  }

  /** Every acknowledged sequence number consumed, once per offset, in order per partition. */
  function checkTraffic(dir: string, fromMs: number, durationMs: number): void {
    const ackedLines = readFileSync(join(dir, 'acked.txt'), 'utf8').trim().split('\n');
    const fails = ackedLines.filter((l) => l.startsWith('fail'));
    expect(fails.slice(0, 5).join('\n'), 'failed sends').toBe('');
    const ackBySeq = new Map<number, { tp: string; o: number }>();
    for (const l of ackedLines) {
      const [, , tp, o, seq] = l.split(' ');
      expect(ackBySeq.has(Number(seq)), `seq ${seq} acknowledged twice`).toBe(false);
      ackBySeq.set(Number(seq), { tp: tp!, o: Number(o) });
    }
    // (partition, offset) -> the value consumed there; a redelivery (after a rebalance, before the
    // commit of its offset) must carry the same value.
    const consumed = new Map<string, { value: string; at: number }>();
    let redelivered = 0;
    const times: number[] = [];
    for (const l of readFileSync(join(dir, 'consumed.txt'), 'utf8').trim().split('\n')) {
      if (!l.startsWith('rec ')) continue;
      const [, at, , tp, o, value] = l.split(' ');
      const k = `${tp} ${o}`;
      const seen = consumed.get(k);
      if (seen) {
        redelivered++;
        expect(value, `${k} served two values`).toBe(seen.value);
      } else consumed.set(k, { value: value!, at: Number(at) });
      times.push(Number(at));
    }
    // Every acknowledged seq consumed at its acknowledged offset.
    let lost = 0;
    for (const [seq, { tp, o }] of ackBySeq)
      if (consumed.get(`${tp} ${o}`)?.value.split(':')[1] !== String(seq)) lost++;
    expect(lost, 'acknowledged records not consumed at their offset').toBe(0);
    // Per partition, in offset order: sequence numbers strictly increasing (none twice, none
    // out of order).
    const byTp = new Map<string, [number, number][]>();
    for (const [k, { value }] of consumed) {
      const [tp, o] = k.split(' ');
      const list = byTp.get(tp!) ?? [];
      byTp.set(tp!, list);
      list.push([Number(o), Number(value.split(':')[1])]);
    }
    for (const [tp, list] of byTp) {
      list.sort((a, b) => a[0] - b[0]);
      const wrong = list.filter((e, i) => i > 0 && e[1] <= list[i - 1]![1]).slice(0, 3);
      expect(JSON.stringify(wrong), `${tp}: [offset, seq] out of order`).toBe('[]');
    }
    // The consumers never stopped for longer than a broker restart.
    times.sort((a, b) => a - b);
    let gap = 0;
    for (let i = 1; i < times.length; i++)
      if (times[i]! >= fromMs && times[i - 1]! <= fromMs + durationMs)
        gap = Math.max(gap, times[i]! - times[i - 1]!);
    console.log(
      `cluster traffic: ${ackBySeq.size} records acknowledged (${ackedLines.filter((l) => Number(l.split(' ')[1]) >= fromMs && Number(l.split(' ')[1]) <= fromMs + durationMs).length} during the ${(durationMs / 1000).toFixed(0)} s migration), ${consumed.size} consumed, ${redelivered} redelivered after a rebalance, longest consumer pause ${gap} ms`,
    );
    expect(gap, 'longest pause of the consumers (ms)').toBeLessThan(120_000);
  }

  it('after all three are migrated and stopped cleanly: every replica holds the same records at the same offsets, every rolled segment v2 and zstd', async () => {
    if (!migrated) throw new Error('the rolling migration did not complete (see the first failure)');
    // All at once: the last of three stopped alone would wait minutes for a controller quorum.
    await Promise.all(nodes.map((n) => n.stop()));
    const dumps = [];
    for (const n of nodes) {
      const dirs = readdirSync(n.logDir)
        .filter((d) => /-\d+$/.test(d) && !d.startsWith('__cluster_metadata'))
        .sort()
        .map((d) => join(n.logDir, d));
      const out = join(tmp, `dump-node-${n.id}.jsonl`);
      await tool.cluster(['dump', out, ...dirs]);
      dumps.push(
        readFileSync(out, 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l)),
      );
    }
    const recs = dumps.map((d) => d.filter((r) => r.kind === 'rec').map((r) => JSON.stringify(r)));
    const segs = dumps.map((d) => d.filter((r) => r.kind === 'seg'));
    expect(recs[0]!.length).toBeGreaterThan(10_000);
    // The live topics as Kafka stored them: one producer id per partition, and its sequence numbers
    // one after the other (no record written twice or lost by the idempotent producer, whose
    // batches went to leaders migrated and not).
    for (const { name, partitions } of LIVE)
      for (let p = 0; p < partitions; p++) {
        const live = dumps[0]!.filter((r) => r.kind === 'rec' && r.tp === `${name}-${p}`);
        expect(new Set(live.map((r) => r.pid)).size, `${name}-${p}: producer ids`).toBe(1);
        const gaps = live.filter((r, i) => r.seq !== i).slice(0, 3);
        expect(JSON.stringify(gaps), `${name}-${p}: Kafka's sequence numbers 0, 1, 2, …`).toBe('[]');
      }
    for (const i of [1, 2]) {
      const diffs = [];
      for (let j = 0; j < Math.max(recs[0]!.length, recs[i]!.length) && diffs.length < 10; j++)
        if (recs[0]![j] !== recs[i]![j]) diffs.push(`node 1: ${recs[0]![j]}\nnode ${i + 1}: ${recs[i]![j]}`);
      expect(diffs.join('\n'), `node 1 and node ${i + 1}`).toBe('');
    }
    for (const [i, s] of segs.entries()) {
      const wrong = s
        .filter((g) => !g.active && g.batches > 0 && (g.magics !== '2' || !['zstd', ''].includes(g.codecs)))
        .map((g) => `${g.tp}/${g.file}: magic ${g.magics}, ${g.codecs}`);
      expect(wrong.join('\n'), `rolled segments not v2 ${CODEC} on node ${i + 1}`).toBe('');
    }
    for (const n of nodes) n.launch('clients');
    await Promise.all(nodes.map((n) => n.started()));
    await tool.cluster(['insync', bootstrap, '300000']);
    restarted = true;
  }, 600_000);

  const clientsMissing = [confluentKafka, kafkaPython, goToolchain].filter((r) => !r.present);
  it.skipIf(clientsMissing.length > 0 && !inCI)(
    "every major client reads every migrated topic as Kafka's Java consumer does: librdkafka, franz-go, kafka-python, kafkajs",
    async () => {
      if (!restarted) throw new Error('the migrated cluster is not running (see the first failure)');
      for (const r of [confluentKafka, kafkaPython, goToolchain])
        expect(r.missing, `${r.name}: ${r.why}`).toBeUndefined();
      const topics = [...DATA_TOPICS, ...LIVE.map((l) => l.name)];
      const java = await h4.read(bootstrap, join(tmp, 'clients-java.jsonl'), topics);
      const tps = [...new Set([...java.ranges.keys()].map((k) => k.split(' ')[1]!))].sort();
      const both = planOf(java, tps, ['read_uncommitted', 'read_committed']);
      const uncommitted = planOf(java, tps, ['read_uncommitted']);
      const bothFile = writePlan(join(tmp, 'plan-both.json'), both);
      const versions: string[] = [];
      const check = (
        read: Awaited<ReturnType<typeof readWithRdkafka>>,
        plan: typeof both,
        opts: Parameters<typeof compareClient>[3],
      ) => {
        versions.push(`${read.client} ${read.version}`);
        expect(summarize(compareClient(java, read, plan, opts)), read.client).toBe('');
      };
      check(await readWithRdkafka(bootstrap, join(tmp, 'rdkafka.jsonl'), bothFile), both, {
        leaderEpoch: true,
      });
      const franz = await franzBinary();
      check(await readWithFranz(franz, bootstrap, join(tmp, 'franz.jsonl'), bothFile), both, {
        leaderEpoch: true,
      });
      // kafka-python 2.0: read_uncommitted only, no leader epoch in its records, and it hands the
      // transaction markers over as records (set aside, counted).
      check(
        await readWithKafkaPython(
          kafkaPythonPath(),
          bootstrap,
          join(tmp, 'kafka-python.jsonl'),
          writePlan(join(tmp, 'plan-uncommitted.json'), uncommitted),
        ),
        uncommitted,
        { leaderEpoch: false, controlRecords: true },
      );
      const markers = controlRecordsDropped;
      expect(markers, 'transaction markers kafka-python handed over').toBeGreaterThan(0);
      // kafkajs: headers grouped by key (its API), leader epoch from the batch.
      check(await readWithKafkajs(bootstrap, both, join(tmp, 'kafkajs.jsonl')), both, {
        leaderEpoch: true,
        headersByKey: true,
      });
      let n = 0;
      for (const k of java.records.keys()) n += java.records.get(k)!.length;
      console.log(
        `cluster clients: ${n} records over ${tps.length} partitions, each client equal to Kafka's Java consumer: ${versions.join('; ')}; ${goVersion()}; kafka-python handed over ${markers} transaction markers as records${rdkafkaBefore ? `\n${rdkafkaBefore}` : ''}`,
      );
      await Promise.all(nodes.map((node) => node.stop()));
    },
    900_000,
  );
});

/** sha256 of the files with one suffix in a directory. */
function treeDigestOf(dir: string, suffix: string): Record<string, string> {
  const all = treeDigest(dir);
  return Object.fromEntries(Object.entries(all).filter(([f]) => f.endsWith(suffix)));
}
