/**
 * Kafka clients other than Kafka's Java one, reading the migrated cluster (cluster.test.ts): each
 * writes the records it was served in the shape of Oracle.java's `read` (ServedRecord), and
 * `compareClient` holds them against the Java consumer's read, field by field, with the
 * differences each client's own API imposes spelled out there.
 *
 * - librdkafka: the confluent-kafka Python package (PyPI; it bundles librdkafka), clients/rdkafka_read.py
 * - kafka-python: Debian python3-kafka, clients/kafka_python_read.py
 * - franz-go: clients/franz (a Go module; `go build` fetches it from the Go module proxy)
 * - kafkajs: npm, in this process
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENTS_VENV } from '@seglift/testkit';
import { CompressionCodecs, CompressionTypes, Kafka, logLevel } from 'kafkajs';
import { decompress as zstdDecompress } from 'zstd-napi';
import { CACHE_DIR, describeRun, E2E_DIR, REPO_ROOT, type RunResult, run } from './env.js';
import type { Isolation, Served, ServedRecord } from './records.js';

export const CLIENTS_DIR = join(E2E_DIR, 'clients');
/** The venv scripts/bootstrap.sh --tests makes for confluent-kafka (pip from PyPI). */
export { CLIENTS_VENV };

export interface Plan {
  isolations: Isolation[];
  tps: string[];
  /** `${iso} ${tp}` -> the last offset the Java consumer was served (-1: none). */
  last: Record<string, number>;
}

export function planOf(java: Served, tps: string[], isolations: Isolation[]): Plan {
  const last: Record<string, number> = {};
  for (const iso of isolations)
    for (const tp of tps) last[`${iso} ${tp}`] = java.records.get(`${iso} ${tp}`)?.at(-1)?.o ?? -1;
  return { isolations, tps, last };
}

export interface ClientRead {
  client: string;
  version: string;
  records: Map<string, ServedRecord[]>;
}

export function parseClientRead(file: string): ClientRead {
  const out: ClientRead = { client: '', version: '', records: new Map() };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const j = JSON.parse(line);
    if (j.kind === 'version') {
      out.client = j.client;
      out.version = j.binding ? `${j.version} (confluent-kafka ${j.binding})` : j.version;
      continue;
    }
    const key = `${j.iso} ${j.tp}`;
    const list = out.records.get(key) ?? [];
    out.records.set(key, list);
    list.push(j as ServedRecord);
  }
  return out;
}

async function runClient(cmd: string, args: string[], what: string): Promise<RunResult> {
  const r = await run(cmd, args, { timeoutMs: 300_000 });
  if (r.code !== 0) throw new Error(describeRun(what, r));
  return r;
}

export function writePlan(file: string, plan: Plan): string {
  writeFileSync(file, JSON.stringify(plan));
  return file;
}

export const venvPython = () => join(CLIENTS_VENV, 'bin/python3');

export async function readWithRdkafka(bootstrap: string, out: string, plan: string): Promise<ClientRead> {
  await runClient(
    venvPython(),
    [join(CLIENTS_DIR, 'rdkafka_read.py'), bootstrap, out, plan],
    'rdkafka_read.py',
  );
  return parseClientRead(out);
}

export async function readWithKafkaPython(
  python: string,
  bootstrap: string,
  out: string,
  plan: string,
): Promise<ClientRead> {
  await runClient(
    python,
    [join(CLIENTS_DIR, 'kafka_python_read.py'), bootstrap, out, plan],
    'kafka_python_read.py',
  );
  return parseClientRead(out);
}

/** The franz-go reader, built once per go.mod/go.sum/main.go (modules from the Go module proxy). */
export async function franzBinary(): Promise<string> {
  const src = join(CLIENTS_DIR, 'franz');
  const h = createHash('sha256');
  for (const f of readdirSync(src).sort())
    if (/\.(go|mod|sum)$/.test(f)) h.update(readFileSync(join(src, f)));
  const bin = join(CACHE_DIR, `franz-read-${h.digest('hex').slice(0, 12)}`);
  if (existsSync(bin)) return bin;
  const r = await run('go', ['build', '-mod=readonly', '-o', bin, '.'], {
    cwd: src,
    env: { ...process.env, GOFLAGS: '-buildvcs=false' },
    timeoutMs: 600_000,
  });
  if (r.code !== 0) throw new Error(describeRun('go build (clients/franz)', r));
  return bin;
}

export async function readWithFranz(
  bin: string,
  bootstrap: string,
  out: string,
  plan: string,
): Promise<ClientRead> {
  await runClient(bin, [bootstrap, out, plan], 'franz-read');
  return parseClientRead(out);
}

export function goVersion(): string | undefined {
  const r = spawnSync('go', ['version'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/**
 * kafkajs: consumers always join a group (no assign), so one fresh group per read, from the
 * beginning. zstd is not built into kafkajs: its codec hook gets libzstd through zstd-napi (what
 * the @kafkajs/zstd package does too). kafkajs hands headers as an object (one key, its values in
 * order as an array): the order across different keys is lost, see compareClient.
 */
export async function readWithKafkajs(bootstrap: string, plan: Plan, out: string): Promise<ClientRead> {
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    compress: () => {
      throw new Error('the kafkajs reader only reads');
    },
    decompress: async (buf: Buffer) => zstdDecompress(buf),
  });
  const version = JSON.parse(
    readFileSync(join(REPO_ROOT, 'node_modules/kafkajs/package.json'), 'utf8'),
  ).version;
  const lines: string[] = [JSON.stringify({ kind: 'version', client: 'kafkajs', version })];
  const kafka = new Kafka({
    clientId: 'kafkajs-reader',
    brokers: bootstrap.split(','),
    logLevel: logLevel.NOTHING,
  });
  const topics = [...new Set(plan.tps.map((tp) => tp.replace(/-\d+$/, '')))];
  for (const iso of plan.isolations) {
    const want = new Map(plan.tps.map((tp) => [tp, plan.last[`${iso} ${tp}`] ?? -1]));
    const seen = new Map(plan.tps.map((tp) => [tp, -1]));
    const consumer = kafka.consumer({
      groupId: `kafkajs-reader-${iso}-${process.pid}-${Date.now()}`,
      readUncommitted: iso === 'read_uncommitted',
    });
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    let done!: () => void;
    let failed!: (e: Error) => void;
    const finished = new Promise<void>((res, rej) => {
      done = res;
      failed = rej;
    });
    const behind = () => [...want].some(([tp, o]) => (seen.get(tp) ?? -1) < o);
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const tp = `${batch.topic}-${batch.partition}`;
        for (const m of batch.messages) {
          const ctx = (
            m as unknown as { batchContext?: { timestampType: number; partitionLeaderEpoch: number } }
          ).batchContext;
          if (!ctx) {
            failed(new Error(`kafkajs: ${tp}@${m.offset} came in a legacy message set`));
            return;
          }
          const h: [string, string | null][] = [];
          for (const [k, v] of Object.entries(m.headers ?? {}))
            for (const one of Array.isArray(v) ? v : [v])
              h.push([
                Buffer.from(k).toString('base64'),
                one == null ? null : Buffer.from(one).toString('base64'),
              ]);
          lines.push(
            JSON.stringify({
              kind: 'rec',
              iso,
              tp,
              o: Number(m.offset),
              ts: Number(m.timestamp),
              tt: ctx.timestampType === 1 ? 'LogAppendTime' : 'CreateTime',
              k: m.key === null ? null : m.key.toString('base64'),
              v: m.value === null ? null : m.value.toString('base64'),
              h,
              le: ctx.partitionLeaderEpoch,
            }),
          );
          seen.set(tp, Math.max(seen.get(tp) ?? -1, Number(m.offset)));
        }
        if (!behind()) done();
      },
    });
    const timer = setTimeout(
      () => failed(new Error(`kafkajs ${iso}: did not reach the end in 180 s`)),
      180_000,
    );
    if (!behind()) done();
    try {
      await finished;
    } finally {
      clearTimeout(timer);
      await consumer.disconnect();
    }
  }
  writeFileSync(out, `${lines.join('\n')}\n`);
  return parseClientRead(out);
}

/**
 * A transaction marker as a client that does not skip control batches hands it over: key
 * (version int16 0, type int16 0 abort or 1 commit), value (version int16 0, coordinator epoch int32).
 */
function isControlRecord(r: ServedRecord): boolean {
  return (
    (r.k === 'AAAAAA==' || r.k === 'AAAAAQ==') && r.v !== null && Buffer.from(r.v, 'base64').length === 6
  );
}

/** How many control records the last compareClient with `controlRecords` set aside. */
export let controlRecordsDropped = 0;

/**
 * Each client's records against the Java consumer's, for every planned partition and isolation
 * level: offset, timestamp, timestamp type, key, value, headers and (where the client gives it)
 * leader epoch. `noTimestampAsZero`: librdkafka gives a record without a timestamp (magic 0) as 0
 * with TIMESTAMP_NOT_AVAILABLE where the Java client gives -1. `controlRecords`: the client hands
 * transaction markers over as records (kafka-python 2.0): set aside where Java has no record at that
 * offset, and counted. `headersByKey`: the client groups headers by key (kafkajs), so the Java headers
 * are compared grouped the same way (each key's values in order, keys by first appearance).
 */
export function compareClient(
  java: Served,
  client: ClientRead,
  plan: Plan,
  opts: {
    leaderEpoch: boolean;
    headersByKey?: boolean;
    noTimestampAsZero?: boolean;
    controlRecords?: boolean;
  },
): string[] {
  const diffs: string[] = [];
  controlRecordsDropped = 0;
  const grouped = (h: [string, string | null][]) => {
    const m = new Map<string, (string | null)[]>();
    for (const [k, v] of h) m.set(k, [...(m.get(k) ?? []), v]);
    return JSON.stringify([...m]);
  };
  const headers = (h: [string, string | null][]) => (opts.headersByKey ? grouped(h) : JSON.stringify(h));
  for (const iso of plan.isolations)
    for (const tp of plan.tps) {
      const k = `${iso} ${tp}`;
      const want = java.records.get(k) ?? [];
      let got = client.records.get(k) ?? [];
      if (opts.controlRecords) {
        const offsets = new Set(want.map((r) => r.o));
        const before = got.length;
        got = got.filter((r) => offsets.has(r.o) || !isControlRecord(r));
        controlRecordsDropped += before - got.length;
      }
      if (want.length !== got.length)
        diffs.push(`${k}: Java ${want.length} records, ${client.client} ${got.length}`);
      for (let i = 0; i < Math.max(want.length, got.length) && diffs.length < 50; i++) {
        const a = want[i];
        const b = got[i];
        const same =
          a &&
          b &&
          a.o === b.o &&
          (a.ts === b.ts ||
            (opts.noTimestampAsZero && a.tt === 'NoTimestampType' && a.ts === -1 && b.ts === 0)) &&
          a.tt === b.tt &&
          a.k === b.k &&
          a.v === b.v &&
          headers(a.h) === headers(b.h) &&
          (!opts.leaderEpoch || a.le === b.le);
        if (!same)
          diffs.push(`${k} #${i}: Java ${JSON.stringify(a)}\n  ${client.client} ${JSON.stringify(b)}`);
      }
    }
  return diffs;
}
