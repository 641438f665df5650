/**
 * Real Kafka as the oracle (issue 11). Kafka 3.9 (ZooKeeper mode, IBP 2.8) writes genuine magic
 * 0/1 segments, Kafka 4.x writes v2 data (idempotent, transactional with aborts, headers), Kafka
 * 4.x serves all of it as the baseline; then seglift rewrites copies of that log directory and
 * Kafka 4.x must serve every record exactly as before. Run with `pnpm test:kafka` (or `pnpm test`).
 * See docs/reliability.md, "Kafka as the oracle", for what each scenario proves.
 */
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { faultEnv, needs, redisServer, spawnProgram, startRedis } from '@seglift/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { brokerLogs, KraftBroker, tailOf, ZkKafka } from './support/brokers.js';
import {
  type BrokerUser,
  brokerUser,
  chownTree,
  copyTree,
  describeRun,
  E2E_DIR,
  harnessClasses,
  kafkaJars,
  missingTools,
} from './support/env.js';
import { diffServed, Harness, type Served, summarize, type TopicSpec } from './support/records.js';
import { built, seglift, treeDigest, WATCHER, WORKER } from './support/seglift.js';

async function until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const missing = missingTools();
const inCI = process.env.CI === 'true';
if (missing && !inCI)
  console.warn(
    `kafka oracle suite skipped: ${missing} (needs a JDK 17+ and Maven: apt-get install openjdk-17-jdk-headless maven)`,
  );

const legacy = (
  name: string,
  format: '0.9.0' | '0.10.0',
  codec: string,
  partitions: number,
  extra: string[] = [],
  mode: TopicSpec['mode'] = 'plain',
): TopicSpec => ({
  name,
  partitions,
  mode,
  count: 1500 * partitions,
  // Small segments: several closed segments per partition for seglift to convert.
  configs: [`message.format.version=${format}`, 'segment.bytes=24576', 'retention.ms=-1', ...extra],
  producer: [`compression.type=${codec}`],
});

/** Written by Kafka 3.9 with a legacy message format: v0 and v1, every legacy codec, both timestamp types. */
const LEGACY: TopicSpec[] = [
  legacy('v0-none', '0.9.0', 'none', 1),
  legacy('v0-gzip', '0.9.0', 'gzip', 2),
  legacy('v0-snappy', '0.9.0', 'snappy', 1),
  legacy('v0-lz4', '0.9.0', 'lz4', 1),
  legacy('v1-create-none', '0.10.0', 'none', 1),
  legacy('v1-create-gzip', '0.10.0', 'gzip', 2),
  legacy('v1-create-snappy', '0.10.0', 'snappy', 1),
  legacy('v1-create-lz4', '0.10.0', 'lz4', 1),
  legacy('v1-append-none', '0.10.0', 'none', 1, ['message.timestamp.type=LogAppendTime']),
  legacy('v1-append-lz4', '0.10.0', 'lz4', 1, ['message.timestamp.type=LogAppendTime']),
  // Left uncleaned for Kafka 4's cleaner (scenario 6): nothing is old enough for 3.9's.
  legacy(
    'v1-compact',
    '0.10.0',
    'none',
    1,
    ['cleanup.policy=compact', 'min.compaction.lag.ms=315360000000'],
    'compact',
  ),
  // Cleaned by 3.9's own cleaner: legacy segments with offset gaps, inside rewritten wrappers too.
  legacy(
    'v1-compacted-gzip',
    '0.10.0',
    'gzip',
    1,
    ['cleanup.policy=compact', 'min.cleanable.dirty.ratio=0.01', 'min.compaction.lag.ms=0'],
    'compact',
  ),
];

/** Written by Kafka 4.x's producer: v2 batches, recompressed by seglift. */
const v2 = (name: string, partitions: number, mode: TopicSpec['mode'], producer: string[]): TopicSpec => ({
  name,
  partitions,
  mode,
  count: 1500 * partitions,
  // internal.segment.bytes: Kafka 4 refuses segment.bytes below 1 MiB; this test-only topic config does not.
  configs: ['internal.segment.bytes=32768', 'retention.ms=-1'],
  producer,
});
const V2: TopicSpec[] = [
  v2('v2-gzip-idempotent', 2, 'headers', [
    'compression.type=gzip',
    'enable.idempotence=true',
    'max.in.flight.requests.per.connection=5',
  ]),
  v2('v2-txn', 2, 'txn', [
    'compression.type=gzip',
    'enable.idempotence=true',
    'max.in.flight.requests.per.connection=5',
  ]),
  v2('v2-none', 1, 'headers', ['compression.type=none', 'linger.ms=0']),
];
const LEGACY_NAMES = new Set(LEGACY.map((t) => t.name));
const ALL_TOPICS = [...LEGACY, ...V2].map((t) => t.name);
/** Read too: seglift rewrites it like any partition, and the transaction coordinator loads it. */
const READ_TOPICS = [...ALL_TOPICS, '__transaction_state'];

/** What Kafka says when a log it loads is wrong; any of these after a migration is a seglift bug. */
const BROKER_PROBLEMS =
  /Found invalid messages|Corruption found|Found a corrupted index file|Could not find offset index file|CorruptRecordException|InvalidRecordException|KafkaStorageException|Error while (loading|reading|deleting|renaming)|is not a valid|Shutdown broker because|FATAL/;

/**
 * ERROR lines that are about the KRaft quorum starting, never about a log: the combined
 * broker+controller sends its own controller registration before the controller is ready to
 * take it (seen once on a loaded machine), and retries it.
 */
const QUORUM_STARTUP =
  /ERROR \[ControllerApis nodeId=\d+\] Unexpected error handling request RequestHeader\(apiKey=CONTROLLER_REGISTRATION,/;

function brokerErrors(log: string): string[] {
  return log
    .split('\n')
    .filter((l) => BROKER_PROBLEMS.test(l) || (/ ERROR /.test(l) && !QUORUM_STARTUP.test(l)));
}

// With CI=true a missing JDK or Maven is a failed test, not a skip.
it.skipIf(missing !== undefined && !inCI)('Kafka oracle prerequisites: a JDK 17+ and Maven on PATH', () => {
  expect(missing).toBeUndefined();
});

describe.skipIf(missing !== undefined)('Kafka as the oracle', () => {
  let tmp = '';
  let user: BrokerUser;
  let h4: Harness;
  let baseLogs = '';
  let baseline: Served;
  let clusterReady = false;
  const brokers: { kill(): void }[] = [];
  let jars4 = '';
  let failed = false;

  beforeAll(async () => {
    if (!built()) throw new Error('dist missing: run `pnpm build` first');
    user = brokerUser();
    const [j4, j3] = [await kafkaJars('kafka4'), await kafkaJars('kafka3')];
    jars4 = j4;
    const log4j = join(E2E_DIR, 'config/log4j2-client.properties');
    h4 = new Harness(j4, await harnessClasses('kafka4', j4), log4j);
    const h3 = new Harness(j3, await harnessClasses('kafka3', j3), log4j);
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'seglift-kafka-')));
    chmodSync(tmp, 0o755);

    // Kafka 3.9 writes the legacy topics.
    const zk = new ZkKafka(j3, join(tmp, 'legacy/logs'), join(tmp, 'legacy'), user);
    brokers.push(zk);
    await zk.start();
    const produced = await h3.script(zk.bootstrap, join(tmp, 'legacy'), 'legacy', [
      ...LEGACY.map((t) => `create ${t.name} ${t.partitions} ${t.configs.join(' ')}`),
      ...LEGACY.map((t, i) => `produce ${t.name} ${t.mode} ${t.count} ${1000 + i} ${t.producer.join(' ')}`),
    ]);
    await until(() => /cleaned log v1-compacted-gzip-0/.test(zk.log()), 120_000, "Kafka 3.9's cleaner");
    await zk.stop();
    for (const t of LEGACY) expect(produced).toContain(`produced ${t.name} ${t.count}`);

    // Kafka 4.x: the topics (so its metadata log has their ids) and the v2 data.
    const base = join(tmp, 'base');
    baseLogs = join(base, 'logs');
    mkdirSync(baseLogs, { recursive: true });
    chownTree(baseLogs, user);
    const k4 = new KraftBroker(j4, baseLogs, join(tmp, 'base-work'), user);
    brokers.push(k4);
    await k4.format(Buffer.from('seglift-oracle-1').toString('base64url'));
    await k4.start('create');
    await h4.script(k4.bootstrap, join(tmp, 'base-work'), 'create', [
      ...LEGACY.map((t) => `create ${t.name} ${t.partitions} retention.ms=-1`),
      ...V2.map((t) => `create ${t.name} ${t.partitions} ${t.configs.join(' ')}`),
      ...V2.map((t, i) => `produce ${t.name} ${t.mode} ${t.count} ${2000 + i} ${t.producer.join(' ')}`),
    ]);
    await k4.stop();

    // The legacy segments move in: Kafka 4's partition.metadata and leader-epoch-checkpoint stay,
    // indexes and producer snapshots are left for Kafka to rebuild.
    for (const t of LEGACY)
      for (let p = 0; p < t.partitions; p++) {
        const to = join(baseLogs, `${t.name}-${p}`);
        const from = join(tmp, 'legacy/logs', `${t.name}-${p}`);
        for (const f of readdirSync(to))
          if (/\.(log|index|timeindex|snapshot|txnindex)$/.test(f)) unlinkSync(join(to, f));
        for (const f of readdirSync(from)) if (f.endsWith('.log')) copyFileSync(join(from, f), join(to, f));
      }
    chownTree(baseLogs, user);
    await k4.start('baseline');
    baseline = await h4.read(k4.bootstrap, join(tmp, 'baseline.jsonl'), READ_TOPICS);
    await k4.stop();

    // The baseline is not trivially empty: every produced record is there (but what 3.9's
    // cleaner removed).
    for (const t of LEGACY.filter((t) => t.name !== 'v1-compacted-gzip')) {
      let n = 0;
      for (let p = 0; p < t.partitions; p++)
        n += baseline.records.get(`read_uncommitted ${t.name}-${p}`)?.length ?? 0;
      expect(n, t.name).toBe(t.count);
      expect(
        readdirSync(join(baseLogs, `${t.name}-0`)).filter((f) => f.endsWith('.log')).length,
        t.name,
      ).toBeGreaterThan(3);
    }
    const compacted = baseline.records.get('read_uncommitted v1-compacted-gzip-0') ?? [];
    expect(compacted.length, "offset gaps left by 3.9's cleaner").toBeLessThan(compacted.at(-1)!.o / 2);
    const committed = baseline.records.get('read_committed v2-txn-0')?.length ?? 0;
    const uncommitted = baseline.records.get('read_uncommitted v2-txn-0')?.length ?? 0;
    expect(committed, 'aborted transactions in v2-txn').toBeLessThan(uncommitted - 10);
    clusterReady = true;
    // Tails printed on a failure are those of the failing scenario's brokers only.
    brokerLogs.length = 0;
  }, 900_000);

  afterEach((ctx) => {
    const logs = brokerLogs.splice(0);
    if (ctx.task.result?.state !== 'fail') return;
    failed = true;
    for (const f of logs) console.error(`--- ${f} (tail)\n${tailOf(f, 60)}`);
  });

  afterAll(() => {
    for (const b of brokers) b.kill();
    if (tmp && !failed && process.env.KEEP_KAFKA_TMP === undefined)
      rmSync(tmp, { recursive: true, force: true });
    else if (tmp) console.error(`kafka oracle: scenario directories kept in ${tmp}`);
  });

  /** A copy of the baseline log directory for one scenario, and a broker for it. */
  function scenario(name: string): { logs: string; broker: KraftBroker } {
    if (!clusterReady) throw new Error('the baseline was not built (see the first failure)');
    const dir = join(tmp, name);
    mkdirSync(dir);
    const logs = join(dir, 'logs');
    copyTree(baseLogs, logs);
    const broker = new KraftBroker(jars4, logs, join(dir, 'work'), user);
    brokers.push(broker);
    return { logs, broker };
  }

  /** `brokerTried`: a broker is started (and refused) meanwhile; its controller writes its own metadata log. */
  async function migrate(
    logs: string,
    args: string[],
    env: Record<string, string> = {},
    brokerTried = false,
  ) {
    const metadataBefore = treeDigest(join(logs, '__cluster_metadata-0'));
    const r = await seglift(['migrate', logs, '--json', '--quiet', ...args], env);
    expect(r.code, describeRun('seglift migrate', r)).toBe(0);
    expect(r.summary?.failed).toBe(0);
    expect(r.summary?.converted).toBeGreaterThan(20);
    // The KRaft metadata log is Kafka's own state, not a topic: seglift must leave it alone.
    if (!brokerTried)
      expect
        .soft(treeDigest(join(logs, '__cluster_metadata-0')), '__cluster_metadata-0 untouched')
        .toEqual(metadataBefore);
    return r;
  }

  /** Start Kafka 4 on a migrated directory: no complaint in its log, every record served as before. */
  async function servesAll(broker: KraftBroker, label: string, out: string): Promise<Served> {
    await broker.start(label);
    const served = await broker_read(broker, out);
    expect(brokerErrors(broker.log()).join('\n'), 'broker log problems').toBe('');
    expect(summarize(diffServed(baseline, served, LEGACY_NAMES))).toBe('');
    return served;
  }

  async function broker_read(broker: KraftBroker, out: string) {
    return h4.read(broker.bootstrap, out, READ_TOPICS);
  }

  it('1+2+21: migrate --codec zstd --grouping kafka (closed segments): a Kafka 4 started mid-migrate fails to take the log dir lock; after it Kafka 4 serves every record as before', async () => {
    const { logs, broker } = scenario('s1-zstd-kafka');
    // The migrate is held right after its first segments' `.log.swap` renames (half-migrated
    // partitions on disk) while a broker is started on the directory.
    const hold = join(logs, '..', 'hold');
    writeFileSync(hold, '');
    const running = migrate(
      logs,
      ['--codec', 'zstd', '--grouping', 'kafka'],
      faultEnv({ SEGLIFT_TEST_HOLD_AFTER: 'rename:.log.swap', SEGLIFT_TEST_HOLD_WHILE: hold }),
      true,
    );
    try {
      const swapping = () =>
        readdirSync(logs, { recursive: true }).some((f) => String(f).endsWith('.log.swap'));
      await until(swapping, 120_000, 'the migrate to reach a swap');
      await expect(broker.start('during-migrate')).rejects.toThrow(/the process exited/);
      // Kafka's combined controller runs its own metadata log (in this log dir, never seglift's)
      // before the broker's LogManager takes the lock; no partition log is loaded.
      expect(broker.log()).not.toMatch(/Loading logs from log dirs|Completed load of Log\(/);
      expect(broker.log()).toContain(
        `Failed to acquire lock on file .lock in ${logs}. A Kafka instance in another process or thread is using this directory.`,
      );
      expect(swapping(), 'the migrate still held mid-swap').toBe(true);
    } finally {
      rmSync(hold);
    }
    await running;
    await servesAll(broker, 'after-migrate', join(logs, '..', 'served.jsonl'));
    await broker.stop();
  }, 300_000);

  it('1+2: migrate --codec lz4 --grouping coalesce --include-active: Kafka 4 serves every record as before', async () => {
    const { logs, broker } = scenario('s1-lz4-coalesce');
    await migrate(logs, ['--codec', 'lz4', '--grouping', 'coalesce', '--include-active']);
    await servesAll(broker, 'after-migrate', join(logs, '..', 'served.jsonl'));
    // The converted active segments take new appends (Kafka 4 writes on after seglift's last
    // batch and index entry), and a restart serves old and new records alike.
    const APPENDED = ['v0-gzip', 'v1-append-lz4', 'v2-none'];
    await h4.script(broker.bootstrap, join(logs, '..'), 'append', [
      'produce v0-gzip plain 300 77 compression.type=gzip',
      'produce v1-append-lz4 plain 300 78 compression.type=lz4',
      'produce v2-none headers 300 79 compression.type=none',
    ]);
    const appended = await h4.read(broker.bootstrap, join(logs, '..', 'appended.jsonl'), READ_TOPICS);
    await broker.stop();
    await broker.start('restart-after-append');
    const restarted = await h4.read(broker.bootstrap, join(logs, '..', 'restarted.jsonl'), READ_TOPICS);
    expect(brokerErrors(broker.log()).join('\n'), 'broker log problems').toBe('');
    await broker.stop();
    const others = new Set(ALL_TOPICS.filter((t) => !APPENDED.includes(t)));
    expect(summarize(diffServed(baseline, appended, LEGACY_NAMES, others))).toBe('');
    const grew: string[] = [];
    for (const topic of APPENDED) {
      let added = 0;
      for (const iso of ['read_uncommitted', 'read_committed'])
        for (const [k, before] of baseline.records) {
          if (!k.startsWith(`${iso} ${topic}-`)) continue;
          const after = appended.records.get(k) ?? [];
          // Every record served before is still served first, unchanged.
          const prefix = {
            ...baseline,
            records: new Map([[k, before]]),
            ranges: new Map(),
            offsetsForTimes: new Map(),
          };
          const head = { ...appended, records: new Map([[k, after.slice(0, before.length)]]) };
          grew.push(...diffServed(prefix, head, LEGACY_NAMES));
          if (iso === 'read_uncommitted') added += after.length - before.length;
        }
      if (added !== 300) grew.push(`${topic}: ${added} records appended, 300 produced`);
    }
    expect(grew.join('\n')).toBe('');
    expect(summarize(diffServed(appended, restarted, LEGACY_NAMES))).toBe('');
  }, 300_000);

  it('3: forced recovery after migrate: no invalid messages, same end offsets, Kafka rebuilds byte-identical indexes', async () => {
    const { logs, broker } = scenario('s3-recovery');
    const r = await migrate(logs, ['--codec', 'zstd', '--grouping', 'kafka']);
    // seglift's indexes of every converted (closed) segment, to compare with Kafka's rebuild.
    const indexes = new Map<string, Buffer>();
    for (const s of r.segments)
      if (s.result === 'converted')
        for (const ext of ['.index', '.timeindex']) {
          const f = s.path.replace(/\.log$/, ext);
          indexes.set(f, readFileSync(f));
        }
    expect(indexes.size).toBeGreaterThan(40);
    // An unclean shutdown with nothing flushed: Kafka recovers every segment from offset 0.
    rmSync(join(logs, '.kafka_cleanshutdown'));
    const rp = join(logs, 'recovery-point-offset-checkpoint');
    writeFileSync(rp, readFileSync(rp, 'utf8').replace(/^(\S+ \d+) \d+$/gm, '$1 0'));
    for (const d of readdirSync(logs))
      if (!d.startsWith('__cluster_metadata') && statSync(join(logs, d)).isDirectory())
        for (const f of readdirSync(join(logs, d))) if (f.endsWith('.snapshot')) unlinkSync(join(logs, d, f));
    await servesAll(broker, 'recovery', join(logs, '..', 'served.jsonl'));
    expect(broker.log()).toMatch(/Recovering unflushed segment|recovering segment|Recovering segment/i);
    await broker.stop();
    const differ: string[] = [];
    for (const [f, before] of indexes) if (!readFileSync(f).equals(before)) differ.push(f);
    expect(differ, "indexes Kafka's recovery rebuilt differently").toEqual([]);
  }, 300_000);

  it('4: DumpLogSegments --verify-index-only and --index-sanity-check find no mismatch in any converted segment', async () => {
    const problems: string[] = [];
    for (const [name, args] of [
      ['s4-zstd-kafka', ['--codec', 'zstd', '--grouping', 'kafka']],
      ['s4-lz4-coalesce', ['--codec', 'lz4', '--grouping', 'coalesce', '--include-active']],
    ] as const) {
      const { logs } = scenario(name);
      const r = await migrate(logs, [...args]);
      const files = r.segments
        .filter((s) => s.result === 'converted')
        .flatMap((s) => [s.path.replace(/\.log$/, '.index'), s.path.replace(/\.log$/, '.timeindex')]);
      for (const mode of [['--deep-iteration', '--verify-index-only'], ['--index-sanity-check']]) {
        const out = await h4.java(
          ['org.apache.kafka.tools.DumpLogSegments', ...mode, '--files', files.join(',')],
          `DumpLogSegments ${mode.join(' ')}`,
        );
        // It exits 0 whatever it finds: its output is the verdict.
        const dumped = out.split('\n').filter((l) => l.startsWith('Dumping ')).length;
        expect(dumped, `${name} ${mode.join(' ')}: every file dumped`).toBe(files.length);
        // Its verdict per file: "passed sanity check." or, for an empty index, "is empty.".
        if (mode[0] === '--index-sanity-check')
          expect(out.split('\n').filter((l) => / (passed sanity check|is empty)\.$/.test(l)).length).toBe(
            files.length,
          );
        for (const l of out.split('\n'))
          if (/mismatch|Mismatches|out of order|failed sanity|corrupt|Exception|error/i.test(l))
            problems.push(`${name} ${mode.join(' ')}: ${l}`);
      }
    }
    expect(problems.join('\n')).toBe('');
  }, 300_000);

  it("6: compaction after migrate (coalesce): Kafka 4's cleaner cleans the migrated log without error, the latest value per key is served", async () => {
    const { logs, broker } = scenario('s6-compaction');
    await migrate(logs, ['--codec', 'lz4', '--grouping', 'coalesce']);
    await servesAll(broker, 'compaction', join(logs, '..', 'served.jsonl'));
    await h4.script(broker.bootstrap, join(logs, '..'), 'compact', [
      'alter v1-compact cleanup.policy=compact min.cleanable.dirty.ratio=0.01 min.compaction.lag.ms=0 segment.ms=100',
    ]);
    await until(
      () => /cleaned log v1-compact-0/.test(broker.log()),
      120_000,
      "Kafka's cleaner to clean v1-compact-0",
    );
    const served = await h4.read(
      broker.bootstrap,
      join(logs, '..', 'compacted.jsonl'),
      ['v1-compact'],
      'latest',
    );
    expect(brokerErrors(broker.log()).join('\n'), 'broker log problems').toBe('');
    expect(broker.log()).not.toMatch(/uncleanable/);
    await broker.stop();

    const before = baseline.records.get('read_uncommitted v1-compact-0') ?? [];
    const after = served.records.get('read_uncommitted v1-compact-0') ?? [];
    expect(after.length, 'the cleaner removed superseded records').toBeLessThan(before.length / 2);
    // Each record still served is the same record as before, at the same offset (the cleaner
    // only removes), and the latest value of each key is among them.
    const byOffset = new Map(before.map((r) => [r.o, r]));
    const changed = after.filter((r) => JSON.stringify(r) !== JSON.stringify(byOffset.get(r.o)));
    expect(changed.slice(0, 5), 'records the cleaner changed').toEqual([]);
    const latest = (recs: typeof before) => new Map(recs.map((r) => [r.k, r]));
    const want = latest(before);
    const got = latest(after);
    const wrong: string[] = [];
    for (const [k, r] of want) {
      const g = got.get(k);
      // A tombstone may already be gone; any other key keeps its latest value.
      if (r.v === null ? g !== undefined && g.o !== r.o : g?.o !== r.o)
        wrong.push(`key ${k}: latest offset ${r.o} before, ${g?.o ?? 'none'} after`);
    }
    expect(wrong).toEqual([]);
  }, 300_000);

  needs(redisServer).it(
    "7: distributed: watcher + worker over Redis (snappy) on a stopped broker's directory, then Kafka 4 serves every record",
    async () => {
      const { logs, broker } = scenario('s7-distributed');
      const redis = await startRedis();
      try {
        const env = {
          SEGLIFT_ROOTS: logs,
          SEGLIFT_REDIS_URL: redis.url,
          SEGLIFT_QUEUE_NAME: 'kafka-oracle',
          SEGLIFT_CODEC: 'snappy',
          SEGLIFT_WORKER_CONCURRENCY: '2',
          SEGLIFT_METRICS_PORT: '0',
          SEGLIFT_METRICS_HOST: '127.0.0.1',
        };
        const metadataBefore = treeDigest(join(logs, '__cluster_metadata-0'));
        const worker = spawnProgram(WORKER, ['--exit-when-drained', '--idle-ms', '2000'], env);
        const watcher = spawnProgram(WATCHER, ['--once', '--wait'], env);
        const w = await watcher.exited;
        expect(w.code, watcher.output()).toBe(0);
        expect(watcher.output()).toMatch(/"succeeded":[1-9]/);
        expect((await worker.exited).code, worker.output()).toBe(0);
        expect
          .soft(treeDigest(join(logs, '__cluster_metadata-0')), '__cluster_metadata-0 untouched')
          .toEqual(metadataBefore);
      } finally {
        await redis.stop();
      }
      await servesAll(broker, 'after-distributed', join(logs, '..', 'served.jsonl'));
      await broker.stop();
    },
    300_000,
  );

  it('8+21: two-phase: --prepare while Kafka 4 runs and takes appends (migrate and --commit refused beside it, exit 2), --commit with it stopped: every record served, the appends too', async () => {
    const { logs, broker } = scenario('s8-two-phase');
    const stage = join(logs, '..', 'stage');
    const args = ['--codec', 'zstd', '--stage-dir', stage, '--json', '--quiet'];
    await broker.start('during-prepare');
    // Step 1 with the broker up: nothing in the log dir is written, the stage fills.
    const prepared = await seglift(['migrate', logs, '--prepare', ...args]);
    expect(prepared.code, describeRun('seglift migrate --prepare', prepared)).toBe(0);
    expect(prepared.summary?.failed).toBe(0);
    expect(prepared.summary?.stage?.staged).toBeGreaterThan(20);
    // What writes in the log dir is refused while the broker holds its .lock (issue 21).
    // Each with the advice that fits it: a migrate can prepare instead, a commit needs the stop.
    for (const [refusedArgs, advice] of [
      [['--codec', 'zstd', '--quiet'], 'stop it first, or use --prepare'],
      [['--commit', ...args], 'stop it first: the commit swaps in what --prepare staged'],
    ] as const) {
      const r = await seglift(['migrate', logs, ...refusedArgs]);
      expect(r.code, describeRun(`seglift migrate ${refusedArgs[0]} beside Kafka 4`, r)).toBe(2);
      expect(r.stderr).toMatch(
        new RegExp(
          `^error\\[LOG_DIR_LOCKED\\]: log dir \\S+ is locked by pid \\d+: a Kafka broker \\(or another seglift\\) is running on it: ${advice} \\(file `,
          'm',
        ),
      );
      expect(r.stderr).toContain(`log dir ${logs} is locked by pid `);
    }
    // The broker keeps taking writes after the prepare (into active segments, which stay v2).
    const APPENDED = 'v2-none';
    await h4.script(broker.bootstrap, join(logs, '..'), 'append', [
      `produce ${APPENDED} headers 300 81 compression.type=none`,
    ]);
    const before = await h4.read(broker.bootstrap, join(logs, '..', 'before-commit.jsonl'), READ_TOPICS);
    await broker.stop();
    const metadataBefore = treeDigest(join(logs, '__cluster_metadata-0'));
    // Step 2 with the broker stopped: the staged segments swapped in, the rest converted now.
    const committed = await seglift(['migrate', logs, '--commit', ...args]);
    expect(committed.code, describeRun('seglift migrate --commit', committed)).toBe(0);
    expect(committed.summary?.failed).toBe(0);
    expect(committed.summary?.stage?.staged).toBeGreaterThan(20);
    expect
      .soft(treeDigest(join(logs, '__cluster_metadata-0')), '__cluster_metadata-0 untouched')
      .toEqual(metadataBefore);
    await broker.start('after-commit');
    const served = await h4.read(broker.bootstrap, join(logs, '..', 'served.jsonl'), READ_TOPICS);
    expect(brokerErrors(broker.log()).join('\n'), 'broker log problems').toBe('');
    await broker.stop();
    // What the broker served just before the commit, appends included, is served after it.
    expect(summarize(diffServed(before, served, LEGACY_NAMES))).toBe('');
    // And that was the baseline plus the 300 appended records.
    const others = new Set(ALL_TOPICS.filter((t) => t !== APPENDED));
    expect(summarize(diffServed(baseline, before, LEGACY_NAMES, others))).toBe('');
    let added = 0;
    for (const [k, b] of baseline.records)
      if (k.startsWith(`read_uncommitted ${APPENDED}-`))
        added += (before.records.get(k)?.length ?? 0) - b.length;
    expect(added).toBe(300);
  }, 300_000);

  /**
   * SIGKILL inside each swap step (SEGLIFT_TEST_KILL_AFTER, a test-only fault of seglift's
   * filesystem layer: kill right after the k-th operation of that kind on a path with that
   * suffix), then Kafka 4 starts directly on the directory, no seglift run in between. The @3:
   * the kill lands in the third segment's swap, with converted segments before it.
   */
  // The last field: after Kafka's start and clean stop, seglift runs again on the directory (an
  // operator resuming the migration) and Kafka 4 starts once more.
  const KILLS: [string, string, string[], boolean][] = [
    ['marker committed', 'rename:.seglift-swap@3', [], false],
    ['old offset index deleted', 'unlink:.index@3', [], false],
    ['time index renamed to .timeindex.swap', 'rename:.timeindex.swap@3', [], false],
    ['log renamed to .log.swap', 'rename:.log.swap@3', [], true],
    ['offset index renamed to .index.swap', 'rename:.index.swap@3', [], true],
    ['.log.swap renamed to .log', 'rename:.log@3', [], true],
    ['.timeindex.swap renamed to .timeindex', 'rename:.timeindex@3', [], false],
    ['.index.swap renamed to .index', 'rename:.index@3', [], false],
    ['marker removed', 'unlink:.seglift-swap@3', [], true],
    // Two segments of ONE partition converting at once: the second .log.swap of that partition.
    [
      'two segments of one partition at once',
      'rename:.log.swap@2',
      ['v1-create-gzip-0', '--concurrency', '2'],
      true,
    ],
  ];
  it.each(KILLS)(
    '5: SIGKILL after %s (%s), then Kafka 4 starts on the directory: every record served, nothing deleted',
    async (_what, killAfter, extra, rerun) => {
      const name = `s5-${killAfter.replace(/[^a-z0-9]+/gi, '_')}`;
      const { logs, broker } = scenario(name);
      const partitionDir = extra[0] && !extra[0].startsWith('-') ? join(logs, extra[0]) : undefined;
      const args = extra.filter((a) => a !== extra[0] || !partitionDir);
      const logsBefore = segmentNames(logs);
      const r = await seglift(
        ['migrate', partitionDir ?? logs, '--codec', 'zstd', '--json', '--quiet', ...args],
        faultEnv({ SEGLIFT_TEST_KILL_AFTER: killAfter }),
      );
      expect(
        r.signal,
        `SEGLIFT_TEST_KILL_AFTER=${killAfter} not honoured: seglift ended by itself (${describeRun('seglift migrate', r)})`,
      ).toBe('SIGKILL');
      await broker.start('after-kill');
      const served = await h4.read(broker.bootstrap, join(logs, '..', 'served.jsonl'), READ_TOPICS);
      // An old offset index deleted by the swap is rebuilt by Kafka (it logs that at ERROR): expected.
      const problems = brokerErrors(broker.log()).filter((l) => !/Could not find offset index file/.test(l));
      expect(problems.join('\n'), 'broker log problems').toBe('');
      expect(summarize(diffServed(baseline, served, LEGACY_NAMES))).toBe('');
      await broker.stop();
      expect(segmentNames(logs), 'segments deleted by Kafka').toEqual(logsBefore);
      if (!rerun) return;
      const again = await seglift([
        'migrate',
        partitionDir ?? logs,
        '--codec',
        'zstd',
        '--json',
        '--quiet',
        ...args,
      ]);
      expect(again.code, describeRun('seglift migrate (rerun after the broker)', again)).toBe(0);
      await broker.start('after-rerun');
      const servedAgain = await h4.read(
        broker.bootstrap,
        join(logs, '..', 'served-again.jsonl'),
        READ_TOPICS,
      );
      expect(brokerErrors(broker.log()).join('\n'), 'broker log problems after the rerun').toBe('');
      expect(summarize(diffServed(baseline, servedAgain, LEGACY_NAMES))).toBe('');
      await broker.stop();
      expect(segmentNames(logs), 'segments deleted').toEqual(logsBefore);
    },
    300_000,
  );
});

/** partition -> its segments' base offsets (the .log files), over a log directory. */
function segmentNames(logs: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const d of readdirSync(logs).sort())
    if (statSync(join(logs, d)).isDirectory() && !d.startsWith('__cluster_metadata'))
      out[d] = readdirSync(join(logs, d))
        .filter((f) => f.endsWith('.log'))
        .sort();
  return out;
}
