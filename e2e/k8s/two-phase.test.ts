/**
 * Kubernetes for real (issue 36): a single-node cluster started by the suite (scripts/k8s), the
 * image built from the project's Dockerfile, and the two-phase Jobs of deploy/ run exactly as
 * docs/operator-guide.md tells an operator, against a Kafka 4 broker pod whose volume holds
 * genuine v0/v1 segments (written by Kafka 3.9, as the oracle suite does) and v2 gzip data. Then
 * the queue form (deploy/base: Redis, the watcher Job, the worker Job) on the stopped Kafka 3.9
 * broker's own volume. One file: the cluster and its data (the set-up) are the slow part.
 * Run with `pnpm test:k8s` (or `pnpm test`), as root, after `bash scripts/k8s/setup.sh`.
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { needs, requirement } from '@seglift/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { template, ZkKafka } from '../kafka/support/brokers.js';
import {
  brokerUser,
  chownTree,
  describeRun,
  E2E_DIR,
  harnessClasses,
  kafkaJars,
  missingTools,
  REPO_ROOT,
  run,
} from '../kafka/support/env.js';
import { diffServed, Harness, type Served, summarize, type TopicSpec } from '../kafka/support/records.js';
import { treeDigest } from '../kafka/support/seglift.js';
import { buildImage, Cluster, clusterParts, K8S_BIN, NODE, PodMemory } from './support/cluster.js';

const K8S_DIR = join(REPO_ROOT, 'e2e/k8s');
/** Strimzi's broker user: the broker pod runs as it and every file of its volume is its. */
const BROKER_UID = 1001;
const BROKER_GID = 0;
const NS = 'kafka';
const BROKER_POD = 'kafka-0';
/** The two Jobs' names: deploy/two-phase's, with the overlay's nameSuffix (the broker pod). */
const PREPARE = `seglift-prepare-${BROKER_POD}`;
const COMMIT = `seglift-commit-${BROKER_POD}`;
/** The target codec of deploy/common/configmap.yaml (attributes & 7 of a v2 batch: zstd = 4). */
const ZSTD = 4;

const java = requirement(
  'a JDK 17+ and Maven',
  'Kafka 3.9 writes the legacy segments, Kafka 4 serves them',
  () => missingTools(),
);
const gate = needs(clusterParts, java);

const legacy = (name: string, format: '0.9.0' | '0.10.0'): TopicSpec => ({
  name,
  partitions: 1,
  mode: 'plain',
  count: 1500,
  // Small segments: several closed segments for the prepare to stage.
  configs: [`message.format.version=${format}`, 'segment.bytes=24576', 'retention.ms=-1'],
  producer: ['compression.type=gzip'],
});
/** Genuine magic 0 and magic 1 segments (gzip wrappers), written by Kafka 3.9. */
const LEGACY: TopicSpec[] = [legacy('v0-gzip', '0.9.0'), legacy('v1-create-gzip', '0.10.0')];
/** v2 batches, gzip, written by Kafka 4's producer into the broker pod. */
const V2: TopicSpec = {
  name: 'v2-gzip',
  partitions: 1,
  mode: 'headers',
  count: 1500,
  configs: ['internal.segment.bytes=32768', 'retention.ms=-1'],
  producer: ['compression.type=gzip', 'enable.idempotence=true'],
};
/** Every kustomization under deploy/ (a Component is applied through the overlays that use it). */
function kustomizations(dir = join(REPO_ROOT, 'deploy')): string[] {
  const here = join(dir, 'kustomization.yaml');
  const own = existsSync(here) && /^kind: Kustomization$/m.test(readFileSync(here, 'utf8')) ? [dir] : [];
  const subdirs = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory());
  return [...own, ...subdirs.flatMap((e) => kustomizations(join(dir, e.name)))];
}
/**
 * v2 gzip batches written by Kafka 3.9: its log dir, the queue form's stopped broker volume, holds
 * them beside the v0 and v1 topics.
 */
const V2_K3: TopicSpec = {
  name: 'v2-gzip-k3',
  partitions: 1,
  mode: 'headers',
  count: 1500,
  // Smaller than the legacy topics' segments: v2 gzip batches of these records are smaller.
  configs: ['segment.bytes=8192', 'retention.ms=-1'],
  producer: ['compression.type=gzip'],
};
const TOPICS = [...LEGACY, V2].map((t) => t.name);
/** The stopped Kafka 3.9 broker's claim, which the suite's overlay of deploy/base names. */
const QUEUE_CLAIM = 'data-kafka39-0';
/** deploy/base/redis-deployment.yaml's user. */
const REDIS_UID = 999;
const LEGACY_NAMES = new Set(LEGACY.map((t) => t.name));

let tmp = '';
/** The stopped Kafka 3.9 broker's log dir: the queue form's volume (claim QUEUE_CLAIM). */
let k3LogDir = '';
let cluster: Cluster;
let h4: Harness;
/** The broker volume as the node sees it (the hostPath of its PersistentVolume). */
let volume = '';
let logDir = '';
let overlay = '';
let baseline: Served;
let failed = false;
const timings: string[] = [];

async function timed<T>(what: string, f: () => Promise<T>): Promise<T> {
  const start = Date.now();
  const v = await f();
  timings.push(`${what} ${((Date.now() - start) / 1000).toFixed(1)} s`);
  return v;
}

/** The broker pod's IP once it is Ready (its advertised listener). */
async function brokerReady(): Promise<string> {
  await cluster.until(`${BROKER_POD} to exist`, 120_000, async () => {
    const r = await cluster.kubectlRaw(['-n', NS, 'get', 'pod', BROKER_POD]);
    return r.code === 0 ? true : undefined;
  });
  await cluster.wait(NS, `pod/${BROKER_POD}`, 'condition=Ready', 240);
  const ip = await cluster.kubectl(['-n', NS, 'get', 'pod', BROKER_POD, '-o', 'jsonpath={.status.podIP}']);
  return `${ip}:9092`;
}

async function scaleBroker(replicas: 0 | 1): Promise<string | undefined> {
  await cluster.kubectl(['-n', NS, 'scale', 'statefulset/kafka', `--replicas=${replicas}`]);
  if (replicas === 1) return brokerReady();
  await cluster.wait(NS, `pod/${BROKER_POD}`, 'delete', 180);
  return undefined;
}

/**
 * Every file of the log dir but what the running broker itself rewrites: its metadata log
 * (appended to) and its log-dir-wide checkpoints (the recovery point moves on each flush).
 * Every partition directory is in: segments, indexes, partition metadata, epoch checkpoints.
 */
function logDirDigest(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(treeDigest(logDir)).filter(
      ([p]) => !p.startsWith('__cluster_metadata-0/') && !/^[^/]*-checkpoint$/.test(p),
    ),
  );
}

/** What Kafka says when a log it loads is wrong (e2e/kafka's oracle list), and any ERROR. */
const BROKER_PROBLEMS =
  /Found invalid messages|Corruption found|Found a corrupted index file|CorruptRecordException|InvalidRecordException|KafkaStorageException| ERROR /;

/** What an operator looks at when the broker pod does not come back: the pod, its events, its log's tail. */
async function brokerState(): Promise<string> {
  const out = async (args: string[]) => {
    const r = await cluster.kubectlRaw(['-n', NS, ...args]);
    return `$ kubectl -n ${NS} ${args.join(' ')}\n${r.stdout}${r.stderr}`;
  };
  return [
    await out(['get', 'statefulset,pods', '-o', 'wide']),
    await out(['describe', 'pod', BROKER_POD]),
    await out(['logs', BROKER_POD, '--tail=40']),
  ].join('\n');
}

async function podPhase(): Promise<string> {
  return cluster.kubectl(['-n', NS, 'get', 'pod', BROKER_POD, '-o', 'jsonpath={.status.phase}']);
}

/** The topic partitions of the log dir (Kafka's metadata log is not one: seglift leaves it). */
function partitions(): string[] {
  return readdirSync(logDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== '__cluster_metadata-0')
    .map((e) => e.name);
}

/** The closed segments of a partition: every .log but the newest (the active segment). */
function rolledSegments(tp: string, dir = logDir): string[] {
  const logs = readdirSync(join(dir, tp))
    .filter((f) => f.endsWith('.log'))
    .sort();
  return logs.slice(0, -1).map((f) => join(dir, tp, f));
}

/** magic and codec (attributes & 7) of every batch of a segment file. */
function batches(file: string): { magic: number; codec: number }[] {
  const b = readFileSync(file);
  const out: { magic: number; codec: number }[] = [];
  for (let pos = 0; pos + 17 <= b.length; ) {
    const size = b.readInt32BE(pos + 8);
    const magic = b[pos + 16];
    // v0/v1: attributes after the 4-byte crc and magic; v2: after partitionLeaderEpoch, magic, crc.
    const codec = magic === 2 ? b.readInt16BE(pos + 21) & 7 : b[pos + 17] & 7;
    out.push({ magic, codec });
    pos += 12 + size;
  }
  return out;
}

/**
 * Runs the commands of the operator guide's first `sh` block after `marker`, for this broker
 * (the guide's example is kafka-2), as an operator pastes them: each line in a shell, with the
 * cluster's kubectl on PATH. The guide's own checks (a revision comparison) are asserted here.
 */
async function runGuide(marker: string): Promise<void> {
  const guide = readFileSync(join(REPO_ROOT, 'docs/operator-guide.md'), 'utf8');
  const at = guide.indexOf(marker);
  expect(at, marker).toBeGreaterThan(0);
  const block = /```sh\n([\s\S]*?)```/.exec(guide.slice(at))?.[1] ?? '';
  const lines = block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  expect(lines.length, marker).toBeGreaterThan(2);
  for (const line of lines) {
    // A read (get, wait) may come a moment before the StatefulSet controller recreated the pod
    // or updated its status: an operator looks again, so does this.
    const read = / (get|wait) /.test(line);
    const end = Date.now() + 60_000;
    for (;;) {
      // The guide gives a broker 30 minutes to load its logs; this one has little data, and a
      // wait that ends inside the step's own timeout reports the pod's state instead of hanging.
      const cmd = line.replaceAll('kafka-2', BROKER_POD).replace('--timeout=30m', '--timeout=240s');
      const r = await run('bash', ['-c', cmd], {
        env: { ...process.env, PATH: `${K8S_BIN}:${process.env.PATH}`, KUBECONFIG: cluster.kubeconfig },
        timeoutMs: 600_000,
      });
      // The guide's check before restoring the update strategy: the revisions are equal again.
      const [current, update] = r.stdout.trim().split(' ');
      const ok = r.code === 0 && (!line.includes('currentRevision') || current === update);
      if (ok) break;
      if (!read || Date.now() > end) {
        if (r.code !== 0) expect.fail(`${describeRun(cmd, r)}\n${await brokerState()}`);
        expect(current, `${line}: the revisions`).toBe(update);
      }
      await new Promise((res) => setTimeout(res, 1000));
    }
  }
}

/** apply -k of the test overlay, selected by phase as the operator guide says. */
async function applyPhase(selector: string): Promise<string> {
  return cluster.kubectl(['apply', '-k', overlay, '-l', selector]);
}

gate.describe('Kubernetes: the image, a single-node cluster, the two-phase Jobs against a broker pod', () => {
  beforeAll(async () => {
    try {
      await setUp();
    } catch (e) {
      failed = true;
      throw e;
    }
  }, 1_800_000);

  /** The cluster, the images, the broker pod with its legacy and v2 data, the baseline read. */
  async function setUp(): Promise<void> {
    tmp = mkdtempSync('/var/tmp/seglift-k8s-e2e-');
    // The broker user crosses it to reach its volume.
    chmodSync(tmp, 0o755);
    cluster = new Cluster(join(tmp, 'cluster'));
    const jars4 = await kafkaJars('kafka4');
    const jars3 = await kafkaJars('kafka3');
    const log4j = join(E2E_DIR, 'config/log4j2-client.properties');
    h4 = new Harness(jars4, await harnessClasses('kafka4', jars4), log4j);
    const h3 = new Harness(jars3, await harnessClasses('kafka3', jars3), log4j);

    // The cluster starts while the images build and Kafka 3.9 writes the legacy segments.
    const up = timed('cluster up', () => cluster.up());
    const images = timed('images', async () => [
      await buildImage('seglift', REPO_ROOT),
      await buildImage('kafka', jars4),
      await buildImage('redis'),
    ]);
    const legacyDir = join(tmp, 'legacy');
    const zk = new ZkKafka(jars3, join(legacyDir, 'logs'), legacyDir, brokerUser());
    try {
      await timed('Kafka 3.9 legacy topics', async () => {
        await zk.start();
        const produced = await h3.script(zk.bootstrap, legacyDir, 'legacy', [
          ...[...LEGACY, V2_K3].map((t) => `create ${t.name} ${t.partitions} ${t.configs.join(' ')}`),
          ...[...LEGACY, V2_K3].map(
            (t, i) => `produce ${t.name} ${t.mode} ${t.count} ${1000 + i} ${t.producer.join(' ')}`,
          ),
        ]);
        for (const t of [...LEGACY, V2_K3]) expect(produced).toContain(`produced ${t.name} ${t.count}`);
      });
    } finally {
      await zk.stop();
    }
    k3LogDir = join(legacyDir, 'logs');
    await up;
    const tars = await images;
    for (const tar of tars) await timed(`import ${tar.split('/').at(-1)}`, () => cluster.import(tar));

    // The broker's volume and the commit's backup volume: static PersistentVolumes (hostPath) the
    // claims bind to, owned by the broker's user as its operator would leave them.
    volume = join(tmp, 'volumes/data-kafka-0');
    logDir = join(volume, 'data');
    const backup = join(tmp, 'volumes/backup');
    mkdirSync(volume, { recursive: true });
    mkdirSync(backup, { recursive: true });
    ownByBroker(join(tmp, 'volumes'));
    await cluster.kubectl(['apply', '-f', '-'], readFileSync(join(K8S_DIR, 'manifests/kafka.yaml'), 'utf8'));
    await cluster.kubectl(
      ['apply', '-f', '-'],
      [
        pv('kafka-0-data', volume, '1Gi', 'data-kafka-0'),
        // deploy/two-phase/backup-pvc.yaml asks for 500Gi ("size it like the broker's data").
        pv('kafka-0-seglift-backup', backup, '500Gi', `seglift-backup-${BROKER_POD}`),
      ].join('---'),
    );
    const server = template('kraft.properties', {
      BROKER_PORT: 9092,
      CONTROLLER_PORT: 9093,
      LOG_DIR: '/var/lib/kafka/data',
    })
      .replace(/^listeners=.*$/m, 'listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://127.0.0.1:9093')
      .replace(/^advertised\.listeners=.*$/m, 'advertised.listeners=PLAINTEXT://@POD_IP@:9092');
    writeFileSync(join(tmp, 'server.properties'), server);
    await cluster.kubectl([
      '-n',
      NS,
      'create',
      'configmap',
      'kafka-config',
      `--from-file=server.properties=${join(tmp, 'server.properties')}`,
      `--from-file=log4j2.properties=${join(E2E_DIR, 'config/log4j2-broker.properties')}`,
    ]);

    // Kafka 4 in its pod: the topics (so its metadata log has their ids) and the v2 data.
    let bootstrap = await timed('broker pod Ready (format)', brokerReady);
    await h4.script(bootstrap, tmp, 'create', [
      ...LEGACY.map((t) => `create ${t.name} ${t.partitions} retention.ms=-1`),
      `create ${V2.name} ${V2.partitions} ${V2.configs.join(' ')}`,
      `produce ${V2.name} ${V2.mode} ${V2.count} 2000 ${V2.producer.join(' ')}`,
    ]);
    // The legacy segments move in while the pod is down, as in the oracle suite: Kafka 4's
    // partition.metadata and leader-epoch-checkpoint stay, indexes are left for Kafka to rebuild.
    await scaleBroker(0);
    for (const t of LEGACY) {
      const to = join(logDir, `${t.name}-0`);
      const from = join(legacyDir, 'logs', `${t.name}-0`);
      for (const f of readdirSync(to))
        if (/\.(log|index|timeindex|snapshot|txnindex)$/.test(f)) unlinkSync(join(to, f));
      for (const f of readdirSync(from)) if (f.endsWith('.log')) copyFileSync(join(from, f), join(to, f));
    }
    ownByBroker(volume);
    bootstrap = (await scaleBroker(1)) as string;
    baseline = await h4.read(bootstrap, join(tmp, 'baseline.jsonl'), TOPICS);
    for (const t of TOPICS) expect(baseline.records.get(`read_uncommitted ${t}-0`)?.length, t).toBe(1500);
    for (const t of LEGACY)
      expect(batches(rolledSegments(`${t.name}-0`)[0])[0].magic, t.name).toBeLessThan(2);

    // The operator's copy of deploy/overlays/statefulset for this broker: its node filled in
    // (the other values are this broker's already), the Strimzi user's security context.
    overlay = join(tmp, 'overlay');
    cpSync(join(REPO_ROOT, 'deploy/overlays/statefulset'), overlay, { recursive: true });
    const brokerYaml = join(overlay, 'broker.yaml');
    writeFileSync(brokerYaml, readFileSync(brokerYaml, 'utf8').replace(/^( {2}node:) .*$/m, `$1 ${NODE}`));
    const kust = join(overlay, 'kustomization.yaml');
    writeFileSync(
      kust,
      readFileSync(kust, 'utf8').replace(
        '  - ../../two-phase',
        // kustomize takes relative paths only.
        `  - ${relative(overlay, join(REPO_ROOT, 'deploy/two-phase'))}\n  - ${relative(overlay, join(REPO_ROOT, 'deploy/strimzi-user'))}`,
      ),
    );
  }

  afterAll(async () => {
    console.log(`k8s timings: ${timings.join(', ')}`);
    if (cluster && failed && tmp)
      try {
        cluster.keepLogs(join(tmp, 'cluster-logs'));
      } catch (e) {
        console.error(`k8s: the cluster's logs could not be kept: ${e}`);
      }
    if (cluster) await cluster.down();
    if (tmp && !failed && process.env.KEEP_K8S_TMP === undefined)
      rmSync(tmp, { recursive: true, force: true });
    else if (tmp) console.error(`k8s: the scenario's files are kept in ${tmp}`);
  }, 300_000);

  const step = (name: string, body: () => Promise<void>) =>
    it(name, async () => {
      // Each step starts where the one before left the cluster. `failed` is cleared only when
      // the body ends: a step that vitest timed out (its body still running) stops the next.
      if (failed) throw new Error('not run: an earlier step failed or timed out');
      failed = true;
      await timed(name.split(':')[0], body);
      failed = false;
    });

  step('the image: its three programs run in a pod admitted under `restricted`', async () => {
    const version = JSON.parse(readFileSync(join(REPO_ROOT, 'apps/cli/package.json'), 'utf8')).version;
    const container = (name: string, args: string[]) => ({
      name,
      image: `seglift:${version}`,
      args,
      securityContext: {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ['ALL'] },
      },
    });
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'seglift-image', namespace: NS },
      spec: {
        restartPolicy: 'Never',
        automountServiceAccountToken: false,
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
        containers: [
          container('cli', ['--version']),
          container('worker', ['seglift-worker', '--help']),
          container('watcher', ['seglift-watcher', '--help']),
        ],
      },
    };
    await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(pod));
    await cluster.wait(NS, 'pod/seglift-image', 'jsonpath={.status.phase}=Succeeded', 120);
    const logs = async (c: string) => cluster.kubectl(['-n', NS, 'logs', 'seglift-image', '-c', c]);
    expect((await logs('cli')).trim()).toBe(version);
    expect(await logs('worker')).toMatch(/^Usage: seglift-worker /);
    expect(await logs('watcher')).toMatch(/^Usage: seglift-watcher /);
    await cluster.kubectl(['-n', NS, 'delete', 'pod', 'seglift-image']);
  });

  step(
    'admission: every kustomization under deploy/ accepted by the API server (server-side apply, dry run), no Pod Security warning under `restricted`',
    async () => {
      // Their namespaces exist (as the operator's would), enforcing the restricted profile.
      await cluster.kubectl(['create', 'namespace', 'seglift']);
      await cluster.kubectl([
        'label',
        'namespace',
        'seglift',
        'pod-security.kubernetes.io/enforce=restricted',
      ]);
      const all = kustomizations();
      expect(all.length).toBeGreaterThanOrEqual(6);
      for (const k of all) {
        const r = await cluster.kubectlRaw(['apply', '--server-side', '--dry-run=server', '-k', k]);
        expect({ k, code: r.code, stderr: r.stderr }).toEqual({ k, code: 0, stderr: '' });
        expect(r.stdout, k).toMatch(/serverside-applied \(server dry run\)/);
      }
    },
  );

  let staged = 0;

  step(
    'prepare: the Job runs beside the running broker pod on its node and completes, staging every rolled segment; the log dir is byte-identical',
    async () => {
      const before = logDirDigest();
      const rolled = partitions().flatMap((tp) => rolledSegments(tp)).length;
      await applyPhase('seglift.io/phase!=commit');
      await cluster.wait(NS, `job/${PREPARE}`, 'condition=Complete', 300);
      const pods = await cluster.json<{ items: { spec: { nodeName: string } }[] }>([
        ...['-n', NS, 'get', 'pods', '-l', `job-name=${PREPARE}`],
      ]);
      expect(pods.items.map((p) => p.spec.nodeName)).toEqual([NODE]);
      expect(await podPhase()).toBe('Running');
      const logs = await cluster.jobLogs(NS, PREPARE);
      staged = Number(
        /stage: staged (\d+), already staged 0, changed while read 0, discarded 0/.exec(logs)?.[1],
      );
      expect(staged, logs).toBe(rolled);
      expect(logs).toMatch(/failed 0/);
      expect(logDirDigest()).toEqual(before);
    },
  );

  step(
    'commit while the broker pod runs: refused (exit 2, the broker lock seen across pods), the Job fails at once through its podFailurePolicy, nothing touched',
    async () => {
      const before = logDirDigest();
      await applyPhase('seglift.io/phase=commit');
      await cluster.wait(NS, `job/${COMMIT}`, 'condition=Failed', 300);
      const job = await cluster.json<{
        status: { conditions: { type: string; reason: string }[]; failed?: number };
      }>(['-n', NS, 'get', `job/${COMMIT}`]);
      expect(job.status.conditions.find((c) => c.type === 'Failed')?.reason).toBe('PodFailurePolicy');
      expect(job.status.failed).toBe(1);
      const pods = await cluster.json<{
        items: { status: { containerStatuses: { state: { terminated?: { exitCode: number } } }[] } }[];
      }>(['-n', NS, 'get', 'pods', '-l', `job-name=${COMMIT}`]);
      expect(pods.items.map((p) => p.status.containerStatuses[0].state.terminated?.exitCode)).toEqual([2]);
      expect(await cluster.jobLogs(NS, COMMIT)).toMatch(/LOG_DIR_LOCKED|lock/);
      expect(await podPhase()).toBe('Running');
      expect(logDirDigest()).toEqual(before);
    },
  );

  step(
    'commit once the broker pod is held (the guide: OnDelete, a node selector no node has, delete the pod): the Job completes; every rolled segment is v2 zstd, owned by the broker user with its mode',
    async () => {
      const modes = new Map<string, number>();
      for (const f of partitions().flatMap((tp) => rolledSegments(tp))) modes.set(f, statSync(f).mode);
      // The failed Job goes first (its name is the commit's), as the guide says after a failure.
      await cluster.kubectl(['-n', NS, 'delete', `job/${COMMIT}`, '--cascade=foreground', '--wait=true']);
      await runGuide('For a StatefulSet (a Helm chart');
      expect(await podPhase()).toBe('Pending');
      await applyPhase('seglift.io/phase=commit');
      await cluster.wait(NS, `job/${COMMIT}`, 'condition=Complete', 300);
      const logs = await cluster.jobLogs(NS, COMMIT);
      expect(logs).toMatch(`stage: committed from stage ${staged}, converted at commit 0, discarded 0`);
      expect(logs).toMatch(/failed 0/);
      const rolled = partitions().flatMap((tp) => rolledSegments(tp));
      expect(rolled.length).toBe(staged);
      for (const f of rolled) {
        const st = statSync(f);
        expect({ f, uid: st.uid, gid: st.gid, mode: st.mode }).toEqual({
          f,
          uid: BROKER_UID,
          gid: BROKER_GID,
          mode: modes.get(f),
        });
        expect(
          batches(f).filter((b) => b.magic !== 2 || b.codec !== ZSTD),
          f,
        ).toEqual([]);
      }
    },
  );

  step('the broker started again (hold off, pod deleted) serves every record as before', async () => {
    await runGuide('**6. Start the broker.**');
    const bootstrap = await brokerReady();
    const after = await h4.read(bootstrap, join(tmp, 'after.jsonl'), TOPICS);
    expect(summarize(diffServed(baseline, after, LEGACY_NAMES))).toBe('');
    const log = (await cluster.kubectlRaw(['-n', NS, 'logs', BROKER_POD])).stdout;
    expect(log.split('\n').filter((l) => BROKER_PROBLEMS.test(l))).toEqual([]);
  });

  step(
    "the queue form (deploy/base) on the stopped Kafka 3.9 broker's volume: Redis takes its password from the mounted Secret file only; the watcher Job and the worker Job complete, both workers drained and exited 0, every rolled segment v2 zstd, no worker at its memory limit",
    async () => {
      // The stopped broker's volume as its StatefulSet would leave it: its claim, its user's files.
      const tps = readdirSync(k3LogDir, { withFileTypes: true })
        .filter((e) => e.isDirectory() && /-\d+$/.test(e.name))
        .map((e) => e.name)
        .sort();
      expect(tps).toEqual([...LEGACY, V2_K3].map((t) => `${t.name}-0`).sort());
      const rolled = tps.flatMap((tp) => rolledSegments(tp, k3LogDir));
      for (const tp of tps) expect(rolledSegments(tp, k3LogDir).length, tp).toBeGreaterThan(0);
      expect(new Set(rolled.map((f) => batches(f)[0].magic))).toEqual(new Set([0, 1, 2]));
      const actives = () =>
        Object.fromEntries(
          Object.entries(treeDigest(k3LogDir)).filter(
            ([p]) => p.endsWith('.log') && !rolled.includes(join(k3LogDir, p)),
          ),
        );
      const activesBefore = actives();
      expect(Object.keys(activesBefore).length).toBe(tps.length);
      ownByBroker(k3LogDir);
      const redisData = join(tmp, 'volumes/seglift-redis');
      const backup = join(tmp, 'volumes/seglift-backup');
      mkdirSync(redisData, { recursive: true });
      mkdirSync(backup, { recursive: true });
      chownTree(redisData, { uid: REDIS_UID, gid: REDIS_UID, name: 'redis' });
      ownByBroker(backup);
      await cluster.kubectl(
        ['apply', '-f', '-'],
        [
          pv('kafka39-0-data', k3LogDir, '1Gi', QUEUE_CLAIM),
          pv('seglift-redis', redisData, '2Gi', 'seglift-redis'),
          pv('seglift-backup', backup, '500Gi', 'seglift-backup'),
          `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: { name: ${QUEUE_CLAIM}, namespace: ${NS} }
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: { requests: { storage: 1Gi } }
`,
        ].join('---'),
      );

      // The operator's overlay of deploy/base (e2e/k8s/manifests/queue), its values filled in.
      const queue = join(tmp, 'queue');
      cpSync(join(K8S_DIR, 'manifests/queue'), queue, { recursive: true });
      const fill = (file: string, from: string, to: string) =>
        writeFileSync(join(queue, file), readFileSync(join(queue, file), 'utf8').replaceAll(from, to));
      fill('kustomization.yaml', '../../../../deploy/', `${relative(queue, join(REPO_ROOT, 'deploy'))}/`);
      const password = randomBytes(32).toString('hex');
      fill('secret-patch.yaml', '@PASSWORD@', password);

      // Redis first: the Jobs need its pod IP (no DNS, no kube-proxy here).
      await cluster.kubectl([
        'apply',
        '-k',
        queue,
        '-l',
        'app.kubernetes.io/component notin (watcher,worker)',
      ]);
      await cluster.wait(NS, 'deployment/seglift-redis', 'condition=Available', 180);
      const redisPods = await cluster.json<{ items: { status: { podIP: string } }[] }>([
        ...['-n', NS, 'get', 'pods', '-l', 'app.kubernetes.io/name=seglift-redis'],
      ]);
      expect(redisPods.items.length).toBe(1);
      const redisIp = redisPods.items[0].status.podIP;
      // The password is in no object but the Secret, and redis-server requires it: it can only
      // have come from the included file (the Secret's redis-auth.conf, mounted).
      const deployment = await cluster.kubectl(['-n', NS, 'get', 'deployment/seglift-redis', '-o', 'json']);
      expect(deployment).not.toContain(password);
      expect(JSON.stringify(redisPods)).not.toContain(password);
      const { REDISCLI_AUTH: _, ...env } = process.env;
      const ping = (auth: Record<string, string>) =>
        run('redis-cli', ['-h', redisIp, 'ping'], { env: { ...env, ...auth }, timeoutMs: 10_000 });
      // Ready is Redis's own answer inside the pod (an exec probe); from this host the pod's
      // address may answer a moment later.
      const noAuth = await cluster.until('redis-server to answer from this host', 30_000, async () => {
        const r = await ping({});
        return r.stdout.trim() !== '' ? r : undefined;
      });
      expect(noAuth.stdout, describeRun('redis-cli ping', noAuth)).toMatch(/NOAUTH/);
      expect((await ping({ REDISCLI_AUTH: password })).stdout.trim()).toBe('PONG');

      fill('jobs-patch.yaml', '@REDIS_POD_IP@', redisIp);
      const memory = new PodMemory();
      memory.start();
      try {
        await cluster.kubectl([
          'apply',
          '-k',
          queue,
          '-l',
          'app.kubernetes.io/component in (watcher,worker)',
        ]);
        await cluster.wait(NS, 'job/seglift-watcher', 'condition=Complete', 300);
        // The workers exit once the queue has been empty for deploy/base's --idle-ms (2 minutes).
        await cluster.wait(NS, 'job/seglift-worker', 'condition=Complete', 300);
      } finally {
        memory.stop();
      }

      // The watcher: every rolled segment queued once, converted, read again and found done.
      const watcherLog = await cluster.jobLogs(NS, 'seglift-watcher');
      const finished = jsonLines(watcherLog).find((l) => l.msg === 'run finished');
      expect(finished, watcherLog).toMatchObject({
        ready: rolled.length,
        queued: rolled.length,
        alreadyDone: 0,
        succeeded: rolled.length,
        failed: 0,
        lost: 0,
        abandoned: 0,
        notDone: 0,
      });
      expect(watcherLog).not.toContain(password);
      expect(troubles(jsonLines(watcherLog))).toEqual([]);

      // The workers: two pods, each drained and exited 0, none OOM-killed, none replaced; between
      // them every segment converted once.
      const workerJob = await cluster.json<{ status: { succeeded?: number; failed?: number } }>([
        ...['-n', NS, 'get', 'job/seglift-worker'],
      ]);
      expect(workerJob.status).toMatchObject({ succeeded: 2 });
      expect(workerJob.status.failed ?? 0).toBe(0);
      const workers = await cluster.json<{
        items: {
          metadata: { name: string; uid: string };
          spec: { containers: { resources: { limits: { memory: string } } }[] };
          status: {
            containerStatuses: {
              restartCount: number;
              state: { terminated?: { exitCode: number; reason: string } };
              lastState: { terminated?: unknown };
            }[];
          };
        }[];
      }>(['-n', NS, 'get', 'pods', '-l', 'job-name=seglift-worker']);
      expect(workers.items.length).toBe(2);
      const baseLimit = (
        parseYaml(readFileSync(join(REPO_ROOT, 'deploy/base/worker-job.yaml'), 'utf8')) as {
          spec: { template: { spec: { containers: { resources: { limits: { memory: string } } }[] } } };
        }
      ).spec.template.spec.containers[0].resources.limits.memory;
      expect(baseLimit).toBe('512Mi');
      let converted = 0;
      const peaks: string[] = [];
      for (const pod of workers.items) {
        const name = pod.metadata.name;
        expect(pod.spec.containers[0].resources.limits.memory, name).toBe(baseLimit);
        const [status] = pod.status.containerStatuses;
        const { exitCode, reason } = status.state.terminated ?? {};
        expect({ name, exitCode, reason, restarts: status.restartCount, last: status.lastState }).toEqual({
          name,
          exitCode: 0,
          reason: 'Completed',
          restarts: 0,
          last: {},
        });
        const log = jsonLines((await cluster.kubectlRaw(['-n', NS, 'logs', name, '--tail=-1'])).stdout);
        expect(
          log.find((l) => l.signal === 'drained'),
          name,
        ).toMatchObject({ exitCode: 0 });
        expect(troubles(log), name).toEqual([]);
        converted += log.filter((l) => l.msg === 'segment done' && l.result === 'converted').length;
        // Its memory cgroup, read while it ran: the limit is deploy's, never reached.
        const use = memory.pods.get(pod.metadata.uid);
        expect(use, `${name}: its memory cgroup was never read`).toBeDefined();
        if (!use) continue;
        expect(use.limit, name).toBe(512 * 1024 * 1024);
        expect({ name, failcnt: use.failcnt }).toEqual({ name, failcnt: 0 });
        expect(use.maxUsage, name).toBeLessThan(use.limit);
        peaks.push(`${name} ${(use.maxUsage / 2 ** 20).toFixed(0)} MiB`);
      }
      expect(converted).toBe(rolled.length);
      timings.push(`queue: ${rolled.length} segments, worker peaks ${peaks.join(', ')} of ${baseLimit}`);

      // On the volume: every rolled segment v2 zstd, owned by the broker's user; the active
      // segments as they were; each original in the backup volume.
      for (const f of rolled) {
        const st = statSync(f);
        expect({ f, uid: st.uid, gid: st.gid }).toEqual({ f, uid: BROKER_UID, gid: BROKER_GID });
        expect(
          batches(f).filter((b) => b.magic !== 2 || b.codec !== ZSTD),
          f,
        ).toEqual([]);
      }
      expect(actives()).toEqual(activesBefore);
      const backups = Object.keys(treeDigest(backup)).filter((p) => p.endsWith('.log'));
      expect(backups.length).toBe(rolled.length);
    },
  );
});

/** The JSON lines of a seglift program's log (pino); other lines are left out. */
function jsonLines(log: string): Record<string, unknown>[] {
  return log.split('\n').flatMap((l) => {
    if (!l.startsWith('{')) return [];
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}

/** A seglift log's warnings and errors (a Service's SEGLIFT_* variables were one), by message. */
function troubles(lines: Record<string, unknown>[]): unknown[] {
  return lines.filter((l) => l.level !== 'info' && l.level !== 'debug').map((l) => l.msg);
}

/** A static PersistentVolume (a directory of this host) that only the named claim binds to. */
function pv(name: string, path: string, size: string, claim: string): string {
  return `
apiVersion: v1
kind: PersistentVolume
metadata:
  name: ${name}
spec:
  capacity: { storage: ${size} }
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: { namespace: ${NS}, name: ${claim} }
  hostPath: { path: ${path}, type: Directory }
`;
}

/** Gives a tree to the broker's user, as the broker's own writes would leave it. */
function ownByBroker(dir: string): void {
  chownTree(dir, { uid: BROKER_UID, gid: BROKER_GID, name: 'broker' });
}
