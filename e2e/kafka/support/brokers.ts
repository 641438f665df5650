/**
 * Real Kafka brokers on loopback: Kafka 4.x in KRaft mode (combined broker+controller) and
 * Kafka 3.9 in ZooKeeper mode. Each runs as the broker user, logs to a file in its work directory
 * and is stopped with SIGTERM (a clean shutdown).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { freePort } from '@seglift/testkit';
import { type BrokerUser, chownTree, describeRun, E2E_DIR, run } from './env.js';

/** Modest JVMs: two cores run a broker, a client and seglift side by side. */
export const JVM_FLAGS = [
  '-Xms64m',
  '-Xmx512m',
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-XX:-UsePerfData',
  '-Djava.awt.headless=true',
];

export function template(name: string, vars: Record<string, string | number>): string {
  return readFileSync(join(E2E_DIR, 'config', name), 'utf8').replace(/\$\{(\w+)\}/g, (_, k: string) => {
    if (!(k in vars)) throw new Error(`${name}: no value for \${${k}}`);
    return String(vars[k]);
  });
}

/** Every broker log written by this run, so a failing test can print their tails. */
export const brokerLogs: string[] = [];

export function tailOf(file: string, lines = 80): string {
  if (!existsSync(file)) return `(no ${file})`;
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

export async function until(cond: () => boolean, timeoutMs: number, what: string, proc?: ChildProcess) {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (proc && proc.exitCode !== null) throw new Error(`${what}: the process exited with ${proc.exitCode}`);
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createConnection({ port, host: '127.0.0.1' });
    s.on('connect', () => {
      s.destroy();
      res(true);
    });
    s.on('error', () => res(false));
  });
}

export interface Jvm {
  proc: ChildProcess;
  exited: Promise<number | null>;
  logFile: string;
}

export function startJvm(
  jars: string,
  mainClass: string,
  args: string[],
  logFile: string,
  user: BrokerUser,
  workDir: string,
): Jvm {
  const fd = openSync(logFile, 'a', 0o644);
  const proc = spawn(
    'java',
    [
      ...JVM_FLAGS,
      `-Dlog4j2.configurationFile=${join(workDir, 'log4j2-broker.properties')}`,
      `-Djava.io.tmpdir=${join(workDir, 'jvm-tmp')}`,
      '-cp',
      `${jars}/*`,
      mainClass,
      ...args,
    ],
    {
      // Only root switches users; anyone else runs brokers as themselves.
      ...(process.getuid?.() === 0 ? { uid: user.uid, gid: user.gid } : {}),
      cwd: workDir,
      env: { PATH: process.env.PATH, HOME: workDir, JAVA_HOME: process.env.JAVA_HOME ?? '' },
      stdio: ['ignore', fd, fd],
    },
  );
  closeSync(fd);
  brokerLogs.push(logFile);
  const exited = new Promise<number | null>((res) =>
    proc.on('exit', (code, signal) => res(code ?? (signal === 'SIGTERM' ? 143 : null))),
  );
  return { proc, exited, logFile };
}

/**
 * kafka-storage format (kafka.tools.StorageTool) of one Kafka 4 node's log dir, as the broker
 * user when run as root: writes meta.properties and the bootstrap metadata.
 */
export async function formatStorage(
  node: { jars: string; workDir: string; user: BrokerUser },
  clusterId: string,
  config: string,
  what: string,
): Promise<void> {
  const asUser =
    process.getuid?.() === 0
      ? ['setpriv', `--reuid=${node.user.uid}`, `--regid=${node.user.gid}`, '--clear-groups']
      : [];
  const r = await run(asUser[0] ?? 'java', [
    ...asUser.slice(1),
    ...(asUser.length ? ['java'] : []),
    ...JVM_FLAGS,
    `-Dlog4j2.configurationFile=${join(node.workDir, 'log4j2-broker.properties')}`,
    '-cp',
    `${node.jars}/*`,
    'kafka.tools.StorageTool',
    'format',
    '-t',
    clusterId,
    '-c',
    config,
  ]);
  if (r.code !== 0) throw new Error(describeRun(what, r));
}

/** A directory the broker user can use for its config, JVM temp files and logs. */
export function prepareWorkDir(workDir: string, user: BrokerUser): void {
  mkdirSync(join(workDir, 'jvm-tmp'), { recursive: true, mode: 0o755 });
  writeFileSync(join(workDir, 'log4j2-broker.properties'), template('log4j2-broker.properties', {}));
  chownTree(join(workDir, 'jvm-tmp'), user);
}

export async function stopJvm(jvm: Jvm, what: string, timeoutMs = 90_000): Promise<number | null> {
  if (jvm.proc.exitCode !== null) return jvm.proc.exitCode;
  jvm.proc.kill('SIGTERM');
  const t = setTimeout(() => jvm.proc.kill('SIGKILL'), timeoutMs);
  const code = await jvm.exited;
  clearTimeout(t);
  if (code === null) throw new Error(`${what} did not stop within ${timeoutMs} ms of SIGTERM (killed)`);
  return code;
}

/** Kafka 4.x, KRaft, one node being broker and controller; the metadata log lives in logDir. */
export class KraftBroker {
  private jvm: Jvm | undefined;
  bootstrap = '';
  logFile = '';
  private starts = 0;

  constructor(
    readonly jars: string,
    readonly logDir: string,
    readonly workDir: string,
    readonly user: BrokerUser,
  ) {
    prepareWorkDir(workDir, user);
  }

  private async writeConfig(): Promise<string> {
    const file = join(this.workDir, 'server.properties');
    writeFileSync(
      file,
      template('kraft.properties', {
        BROKER_PORT: await freePort(),
        CONTROLLER_PORT: await freePort(),
        LOG_DIR: this.logDir,
      }),
    );
    return file;
  }

  /** kafka-storage format: writes meta.properties and the bootstrap metadata into logDir. */
  async format(clusterId: string): Promise<void> {
    await formatStorage(this, clusterId, await this.writeConfig(), 'kafka.tools.StorageTool format');
  }

  /** Starts on fresh ports; resolves once the broker logs "Kafka Server started". */
  async start(label: string): Promise<void> {
    if (this.jvm && this.jvm.proc.exitCode === null) throw new Error('broker already running');
    const config = await this.writeConfig();
    this.bootstrap = `127.0.0.1:${/PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(config, 'utf8'))![1]}`;
    this.starts++;
    this.logFile = join(this.workDir, `broker-${this.starts}-${label}.log`);
    this.jvm = startJvm(this.jars, 'kafka.Kafka', [config], this.logFile, this.user, this.workDir);
    const jvm = this.jvm;
    try {
      await until(
        () => this.log().includes('Kafka Server started'),
        120_000,
        `Kafka 4 (${label}) to start`,
        jvm.proc,
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- ${this.logFile} (tail)\n${tailOf(this.logFile)}`);
    }
  }

  log(): string {
    return this.logFile && existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : '';
  }

  /** SIGTERM; a clean shutdown leaves `.kafka_cleanshutdown` in the log dir. */
  async stop(): Promise<void> {
    if (!this.jvm) return;
    await stopJvm(this.jvm, 'Kafka 4');
    this.jvm = undefined;
    if (!existsSync(join(this.logDir, '.kafka_cleanshutdown')))
      throw new Error(`Kafka 4 stopped without writing .kafka_cleanshutdown\n${tailOf(this.logFile)}`);
  }

  kill(): void {
    if (this.jvm?.proc.exitCode === null) this.jvm.proc.kill('SIGKILL');
  }
}

/** Kafka 3.9 in ZooKeeper mode (ZooKeeper from 3.9's own dependencies), for legacy segments. */
export class ZkKafka {
  private zk: Jvm | undefined;
  private broker: Jvm | undefined;
  bootstrap = '';

  constructor(
    readonly jars: string,
    readonly logDir: string,
    readonly workDir: string,
    readonly user: BrokerUser,
  ) {
    prepareWorkDir(workDir, user);
  }

  async start(): Promise<void> {
    const zkPort = await freePort();
    const brokerPort = await freePort();
    const zkData = join(this.workDir, 'zookeeper');
    mkdirSync(zkData, { recursive: true });
    mkdirSync(this.logDir, { recursive: true });
    chownTree(zkData, this.user);
    chownTree(this.logDir, this.user);
    const zkConfig = join(this.workDir, 'zookeeper.properties');
    writeFileSync(zkConfig, template('zookeeper.properties', { DATA_DIR: zkData, ZK_PORT: zkPort }));
    const config = join(this.workDir, 'server.properties');
    writeFileSync(
      config,
      template('zk-broker.properties', { BROKER_PORT: brokerPort, ZK_PORT: zkPort, LOG_DIR: this.logDir }),
    );
    this.zk = startJvm(
      this.jars,
      'org.apache.zookeeper.server.quorum.QuorumPeerMain',
      [zkConfig],
      join(this.workDir, 'zookeeper.log'),
      this.user,
      this.workDir,
    );
    const deadline = Date.now() + 60_000;
    while (!(await accepts(zkPort))) {
      if (this.zk.proc.exitCode !== null || Date.now() > deadline)
        throw new Error(`ZooKeeper did not listen\n${tailOf(join(this.workDir, 'zookeeper.log'))}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const logFile = join(this.workDir, 'broker-3.9.log');
    this.broker = startJvm(this.jars, 'kafka.Kafka', [config], logFile, this.user, this.workDir);
    this.bootstrap = `127.0.0.1:${brokerPort}`;
    try {
      await until(
        () =>
          existsSync(logFile) && readFileSync(logFile, 'utf8').includes('started (kafka.server.KafkaServer)'),
        120_000,
        'Kafka 3.9 to start',
        this.broker.proc,
      );
    } catch (e) {
      throw new Error(
        `${(e as Error).message}\n--- ${logFile} (tail)\n${tailOf(logFile)}\n--- zookeeper\n${tailOf(join(this.workDir, 'zookeeper.log'))}`,
      );
    }
  }

  log(): string {
    const f = join(this.workDir, 'broker-3.9.log');
    return existsSync(f) ? readFileSync(f, 'utf8') : '';
  }

  async stop(): Promise<void> {
    if (this.broker) await stopJvm(this.broker, 'Kafka 3.9');
    if (this.zk) await stopJvm(this.zk, 'ZooKeeper');
    this.broker = this.zk = undefined;
  }

  kill(): void {
    for (const j of [this.broker, this.zk]) if (j?.proc.exitCode === null) j.proc.kill('SIGKILL');
  }
}
