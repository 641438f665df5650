/**
 * A three-node Kafka 4.x cluster on loopback (cluster.test.ts): every node a combined broker and
 * controller, a static quorum on fixed ports, each node running as the broker user in its own log
 * dir. And Cluster.java, the cluster scenario's Kafka side (topics with replicas, leadership moves,
 * the live traffic, a dump of one replica read with Kafka's FileRecords).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '@seglift/testkit';
import {
  brokerLogs,
  formatStorage,
  type Jvm,
  prepareWorkDir,
  startJvm,
  stopJvm,
  tailOf,
  template,
  until,
} from './brokers.js';
import { type BrokerUser, CACHE_DIR, describeRun, E2E_DIR, type RunResult, run } from './env.js';

export class ClusterNode {
  private jvm: Jvm | undefined;
  logFile = '';
  private starts = 0;

  constructor(
    readonly id: number,
    readonly jars: string,
    readonly logDir: string,
    readonly workDir: string,
    readonly user: BrokerUser,
    readonly brokerPort: number,
    readonly controllerPort: number,
    readonly voters: string,
  ) {
    prepareWorkDir(workDir, user);
    writeFileSync(
      this.config,
      template('kraft-cluster.properties', {
        NODE_ID: id,
        VOTERS: voters,
        BROKER_PORT: brokerPort,
        CONTROLLER_PORT: controllerPort,
        LOG_DIR: logDir,
      }),
    );
  }

  get config(): string {
    return join(this.workDir, 'server.properties');
  }

  get bootstrap(): string {
    return `127.0.0.1:${this.brokerPort}`;
  }

  get running(): boolean {
    return this.jvm !== undefined && this.jvm.proc.exitCode === null;
  }

  async format(clusterId: string): Promise<void> {
    await formatStorage(this, clusterId, this.config, `kafka-storage format (node ${this.id})`);
  }

  /** Starts the JVM; `started()` waits for "Kafka Server started" (a node needs a quorum for it). */
  launch(label: string): void {
    if (this.running) throw new Error(`node ${this.id} already running`);
    this.starts++;
    this.logFile = join(this.workDir, `node-${this.id}-${this.starts}-${label}.log`);
    this.jvm = startJvm(this.jars, 'kafka.Kafka', [this.config], this.logFile, this.user, this.workDir);
  }

  async started(): Promise<void> {
    const jvm = this.jvm;
    if (!jvm) throw new Error(`node ${this.id} not launched`);
    try {
      await until(
        () => this.log().includes('Kafka Server started'),
        180_000,
        `Kafka 4 node ${this.id} to start`,
        jvm.proc,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- ${this.logFile} (tail)\n${tailOf(this.logFile)}`);
    }
  }

  async start(label: string): Promise<void> {
    this.launch(label);
    await this.started();
  }

  log(): string {
    return this.logFile && existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
  }

  /** SIGTERM: a controlled shutdown (its leaders move first), then `.kafka_cleanshutdown`. */
  async stop(): Promise<void> {
    if (!this.jvm) return;
    await stopJvm(this.jvm, `Kafka 4 node ${this.id}`, 180_000);
    this.jvm = undefined;
    if (!existsSync(join(this.logDir, '.kafka_cleanshutdown')))
      throw new Error(
        `node ${this.id} stopped without writing .kafka_cleanshutdown\n${tailOf(this.logFile)}`,
      );
  }

  kill(): void {
    if (this.jvm?.proc.exitCode === null) this.jvm.proc.kill('SIGKILL');
  }
}

/** Three nodes on fixed ports (the voters list is static), formatted with one cluster id. */
export async function makeCluster(
  jars: string,
  dir: string,
  user: BrokerUser,
  logDirOf: (id: number) => string,
): Promise<ClusterNode[]> {
  const ids = [1, 2, 3];
  const ports: { broker: number; controller: number }[] = [];
  for (const _ of ids) ports.push({ broker: await freePort(), controller: await freePort() });
  const voters = ids.map((id, i) => `${id}@127.0.0.1:${ports[i]!.controller}`).join(',');
  return ids.map(
    (id, i) =>
      new ClusterNode(
        id,
        jars,
        logDirOf(id),
        join(dir, `node-${id}`),
        user,
        ports[i]!.broker,
        ports[i]!.controller,
        voters,
      ),
  );
}

/** Every node's bootstrap address: clients ride through any one node being down. */
export const bootstrapOf = (nodes: ClusterNode[]) => nodes.map((n) => n.bootstrap).join(',');

/** Cluster.java compiled against one line's jars, cached by source and jar set. */
export async function clusterClasses(jars: string): Promise<string> {
  const src = join(E2E_DIR, 'java/Cluster.java');
  const hash = createHash('sha256').update(readFileSync(src)).update(jars).digest('hex').slice(0, 12);
  const dir = join(CACHE_DIR, `classes-cluster-${hash}`);
  if (existsSync(join(dir, 'Cluster.class'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  const r = await run('javac', ['-nowarn', '-d', tmp, '-cp', `${jars}/*`, src]);
  if (r.code !== 0) throw new Error(describeRun('javac Cluster.java', r));
  spawnSync('chmod', ['-R', 'a+rX', tmp]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/** Runs Cluster.java (or a Kafka tool class) in a small client JVM. */
export class ClusterTool {
  constructor(
    readonly jars: string,
    readonly classes: string,
    readonly log4j: string,
  ) {}

  java(args: string[], timeoutMs = 300_000): Promise<RunResult> {
    return run(
      'java',
      [
        '-Xms32m',
        '-Xmx256m',
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        '-XX:-UsePerfData',
        `-Dlog4j2.configurationFile=${this.log4j}`,
        '-cp',
        `${this.classes}:${this.jars}/*`,
        ...args,
      ],
      { timeoutMs },
    );
  }

  async cluster(args: string[], timeoutMs?: number): Promise<string> {
    const r = await this.java(['Cluster', ...args], timeoutMs);
    if (r.code !== 0) throw new Error(describeRun(`Cluster ${args[0]}`, r));
    return r.stdout;
  }

  /** `kafka-topics.sh --describe --under-replicated-partitions`, as the operator guide says. */
  async underReplicated(bootstrap: string): Promise<string> {
    const r = await this.java([
      'org.apache.kafka.tools.TopicCommand',
      '--bootstrap-server',
      bootstrap,
      '--describe',
      '--under-replicated-partitions',
    ]);
    if (r.code !== 0)
      throw new Error(describeRun('kafka-topics --describe --under-replicated-partitions', r));
    return r.stdout.trim();
  }
}

/** `replication-offset-checkpoint`: the high watermark of every partition as the node last knew it. */
export function highWatermarks(logDir: string): Map<string, number> {
  const out = new Map<string, number>();
  const lines = readFileSync(join(logDir, 'replication-offset-checkpoint'), 'utf8').trim().split('\n');
  for (const l of lines.slice(2)) {
    const [topic, partition, offset] = l.split(' ');
    out.set(`${topic}-${partition}`, Number(offset));
  }
  return out;
}

/** Every truncation a node's log reports: `partition -> offsets truncated to`. */
export function truncations(log: string): { tp: string; offset: number; line: string }[] {
  const out: { tp: string; offset: number; line: string }[] = [];
  for (const line of log.split('\n')) {
    // UnifiedLog: "[UnifiedLog partition=t-0, dir=...] Truncating to offset N"
    const m =
      /\[UnifiedLog partition=(\S+), dir=[^\]]*\] Truncating to offset (\d+)/.exec(line) ??
      // ReplicaFetcher: "Truncating partition t-0 with TruncationState(offset=N, ...) due to ..."
      /Truncating partition (\S+) with TruncationState\(offset=(\d+),/.exec(line);
    if (m) out.push({ tp: m[1]!, offset: Number(m[2]), line });
  }
  return out;
}

export { brokerLogs };
