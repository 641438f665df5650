// A Kafka 4 broker on loopback for the benches that need one (live-broker, mirror): e2e/kafka's
// jars (the kafka4 profile, in the oracle suite's cache), config templates and broker user (the
// rule of e2e/kafka/support/env.ts: a non-root user owning its log dir).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { freePort, sh, sleep } from './helpers.mjs';

const repo = new URL('..', import.meta.url).pathname;
export const E2E = join(repo, 'e2e/kafka');
export const CACHE_DIR = process.env.SEGLIFT_KAFKA_CACHE ?? '/var/tmp/seglift-kafka-jars';
/** e2e/kafka/support/brokers.ts's JVM flags but the JIT's (C1 only starts faster, runs slower). */
export const JVM_FLAGS = [
  '-Xms64m',
  '-Xmx512m',
  '-XX:+UseSerialGC',
  '-XX:-UsePerfData',
  '-Djava.awt.headless=true',
];

const hash = (...parts) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex').slice(0, 12);
};

/** The kafka4 profile's jars as e2e/kafka fetches them; `fetch`: by Maven when absent, else undefined. */
export function kafkaJars({ fetch }) {
  const pom = join(E2E, 'pom.xml');
  const dir = join(CACHE_DIR, `kafka4-${hash(readFileSync(pom))}`);
  if (existsSync(join(dir, '.complete'))) return dir;
  if (!fetch) return undefined;
  mkdirSync(CACHE_DIR, { recursive: true, mode: 0o755 });
  chmodSync(CACHE_DIR, 0o755);
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  sh('mvn', [
    '-B',
    '-q',
    '-f',
    pom,
    '-P',
    'kafka4',
    'dependency:copy-dependencies',
    `-DoutputDirectory=${tmp}`,
  ]);
  for (const f of readdirSync(tmp)) chmodSync(join(tmp, f), 0o644);
  chmodSync(tmp, 0o755);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  writeFileSync(join(dir, '.complete'), '');
  return dir;
}

/** bench/java/<name>.java compiled against `jars`, cached by source and jar set. */
export function javaClasses(name, jars) {
  const src = join(repo, 'bench/java', `${name}.java`);
  const dir = join(CACHE_DIR, `classes-${name.toLowerCase()}-${hash(readFileSync(src), jars)}`);
  if (existsSync(join(dir, `${name}.class`))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  sh('javac', ['-nowarn', '-d', tmp, '-cp', `${jars}/*`, src]);
  sh('chmod', ['-R', 'a+rX', tmp]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/** java's arguments for a client class on `classpath`, logging as e2e/kafka's clients do. */
export const javaClient = (classpath, args) => [
  ...JVM_FLAGS,
  `-Dlog4j2.configurationFile=${join(E2E, 'config/log4j2-client.properties')}`,
  '-cp',
  classpath,
  ...args,
];

/** The user a broker runs as: this one, or nobody when root. */
export function brokerUser() {
  const uid = process.getuid?.() ?? 0;
  if (uid !== 0) return { uid, gid: process.getgid?.() ?? uid };
  const [, , u, g] = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('nobody:'))
    .split(':');
  return { uid: Number(u), gid: Number(g) };
}

const template = (name, vars) =>
  readFileSync(join(E2E, 'config', name), 'utf8').replace(/\$\{(\w+)\}/g, (_, k) => String(vars[k]));

/** One KRaft broker (and controller) on loopback over `work`/logs, started and stopped at will. */
export class LoopbackBroker {
  constructor(work, jars) {
    this.jars = jars;
    this.user = brokerUser();
    this.logDir = join(work, 'logs');
    this.home = join(work, 'broker');
    this.bootstrap = '';
    this.process = undefined;
    this.starts = 0;
    mkdirSync(this.logDir, { recursive: true });
    mkdirSync(join(this.home, 'jvm-tmp'), { recursive: true });
    writeFileSync(join(this.home, 'log4j2-broker.properties'), template('log4j2-broker.properties', {}));
  }

  /** `dir` (and everything in it) owned by the broker's user. */
  chown(dir) {
    sh('chown', ['-R', `${this.user.uid}:${this.user.gid}`, dir]);
  }

  /** server.properties on fresh ports; returns its path and the broker's port. */
  async writeConfig() {
    const config = join(this.home, 'server.properties');
    const port = await freePort();
    writeFileSync(
      config,
      template('kraft.properties', {
        BROKER_PORT: port,
        CONTROLLER_PORT: await freePort(),
        LOG_DIR: this.logDir,
      }),
    );
    return { config, port };
  }

  /** java's arguments for one of Kafka's own classes, run as the broker is. */
  javaArgs(args) {
    return [
      ...JVM_FLAGS,
      `-Dlog4j2.configurationFile=${join(this.home, 'log4j2-broker.properties')}`,
      `-Djava.io.tmpdir=${join(this.home, 'jvm-tmp')}`,
      '-cp',
      `${this.jars}/*`,
      ...args,
    ];
  }

  /** Kafka's StorageTool formats the log dir for `clusterId`, as the broker's user. */
  async format(clusterId) {
    const { config } = await this.writeConfig();
    this.chown(this.home);
    this.chown(this.logDir);
    const { uid, gid } = this.user;
    const asRoot = process.getuid?.() === 0;
    sh(asRoot ? 'setpriv' : 'java', [
      ...(asRoot ? [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', 'java'] : []),
      ...this.javaArgs(['kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', config]),
    ]);
  }

  /** Starts it on fresh ports; resolves once it logged "Kafka Server started". */
  async start(timeoutMs = 180_000) {
    const { config, port } = await this.writeConfig();
    this.bootstrap = `127.0.0.1:${port}`;
    const logFile = join(this.home, `broker-${++this.starts}.log`);
    const fd = openSync(logFile, 'a', 0o644);
    this.chown(this.home);
    this.chown(this.logDir);
    this.process = spawn('java', this.javaArgs(['kafka.Kafka', config]), {
      ...(process.getuid?.() === 0 ? { uid: this.user.uid, gid: this.user.gid } : {}),
      cwd: this.home,
      env: { PATH: process.env.PATH, HOME: this.home, JAVA_HOME: process.env.JAVA_HOME ?? '' },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    const end = Date.now() + timeoutMs;
    while (!readFileSync(logFile, 'utf8').includes('Kafka Server started')) {
      if (this.process.exitCode !== null || Date.now() > end)
        throw new Error(`Kafka 4 did not start\n${readFileSync(logFile, 'utf8').slice(-4000)}`);
      await sleep(200);
    }
  }

  /** SIGTERM, and its exit awaited; with `clean`, a shutdown without Kafka's clean marker throws. */
  async stop({ clean = false } = {}) {
    const exited = new Promise((r) => this.process.once('exit', r));
    this.process.kill('SIGTERM');
    await exited;
    if (clean && !existsSync(join(this.logDir, '.kafka_cleanshutdown')))
      throw new Error('Kafka 4 stopped without a clean shutdown');
  }

  /** At exit or on a signal: gone at once. */
  kill() {
    if (this.process?.exitCode === null) this.process.kill('SIGKILL');
  }
}
