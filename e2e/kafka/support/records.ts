/**
 * What Kafka's Java consumer served (written by Oracle.java `read` as JSON lines), and the
 * comparison of two such reads: before migration (the baseline) and after.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeRun, run } from './env.js';

/** A topic the suites write: Oracle.java's produce mode, topic configs, producer configs. */
export interface TopicSpec {
  name: string;
  partitions: number;
  /** Oracle.java produce mode. */
  mode: 'plain' | 'headers' | 'txn' | 'compact';
  count: number;
  /** Topic configs on the broker that writes it. */
  configs: string[];
  /** Producer configs. */
  producer: string[];
}

export type Isolation = 'read_uncommitted' | 'read_committed';

export interface ServedRecord {
  iso: Isolation;
  tp: string;
  o: number;
  ts: number;
  tt: 'CreateTime' | 'LogAppendTime' | 'NoTimestampType';
  k: string | null;
  v: string | null;
  h: [string, string | null][];
  le: number;
}

export interface Served {
  /** `${iso} ${tp}` -> log start offset and end offset (LSO under read_committed). */
  ranges: Map<string, { start: number; end: number }>;
  /** `${iso} ${tp}` -> records in offset order. */
  records: Map<string, ServedRecord[]>;
  /** `${tp} ${timestamp}` -> offsetsForTimes answer (offset and its timestamp, -1 for none). */
  offsetsForTimes: Map<string, { o: number; rts: number }>;
}

export function parseServed(file: string): Served {
  const s: Served = { ranges: new Map(), records: new Map(), offsetsForTimes: new Map() };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const j = JSON.parse(line);
    if (j.kind === 'range') s.ranges.set(`${j.iso} ${j.tp}`, { start: j.start, end: j.end });
    else if (j.kind === 'oft') s.offsetsForTimes.set(`${j.tp} ${j.ts}`, { o: j.o, rts: j.rts });
    else {
      const key = `${j.iso} ${j.tp}`;
      const list = s.records.get(key) ?? [];
      s.records.set(key, list);
      list.push(j as ServedRecord);
    }
  }
  return s;
}

/** A Java harness bound to one broker line's jars and classes. */
export class Harness {
  constructor(
    readonly jars: string,
    readonly classes: string,
    readonly log4j: string,
  ) {}

  async java(args: string[], what: string, timeoutMs = 300_000): Promise<string> {
    const r = await run(
      'java',
      [
        '-Xms32m',
        '-Xmx384m',
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
    if (r.code !== 0) throw new Error(describeRun(what, r));
    return r.stdout;
  }

  /** Runs Oracle.java commands (one per line, without the bootstrap) in one JVM. */
  async script(bootstrap: string, dir: string, name: string, lines: string[]): Promise<string> {
    const file = join(dir, `${name}.oracle`);
    writeFileSync(file, `${lines.join('\n')}\n`);
    return this.java(['Oracle', 'script', bootstrap, file], `Oracle script ${name}`);
  }

  /** `read`: both isolation levels and offsetsForTimes; `latest`: read_uncommitted only. */
  async read(
    bootstrap: string,
    out: string,
    topics: string[],
    how: 'read' | 'latest' = 'read',
  ): Promise<Served> {
    await this.java(['Oracle', how, bootstrap, out, ...topics], `Oracle ${how} ${out}`);
    return parseServed(out);
  }
}

const show = (r: ServedRecord | undefined) =>
  r === undefined
    ? 'missing'
    : JSON.stringify({ ...r, k: r.k?.slice(0, 24), v: r.v?.slice(0, 24), iso: undefined, tp: undefined });

/**
 * Every difference between what Kafka served before (baseline) and after, one line each.
 * Allowed, because Kafka's own upconversion does the same: a magic 0 record (no timestamp)
 * becomes a v2 record with timestamp -1 and CreateTime; an upconverted record may carry leader
 * epoch -1. Topics in `legacy` are the ones whose records may have been upconverted.
 */
export function diffServed(base: Served, after: Served, legacy: Set<string>, only?: Set<string>): string[] {
  const diffs: string[] = [];
  const topicOf = (tp: string) => tp.replace(/-\d+$/, '');
  const wanted = (tp: string) => only === undefined || only.has(topicOf(tp));
  for (const [k, r] of base.ranges) {
    if (!wanted(k.split(' ')[1])) continue;
    const a = after.ranges.get(k);
    if (!a || a.start !== r.start || a.end !== r.end)
      diffs.push(
        `${k}: offsets [${r.start}, ${r.end}) before, ${a ? `[${a.start}, ${a.end})` : 'missing'} after`,
      );
  }
  for (const [k, recs] of base.records) {
    const tp = k.split(' ')[1];
    if (!wanted(tp)) continue;
    const isLegacy = legacy.has(topicOf(tp));
    const got = after.records.get(k) ?? [];
    if (got.length !== recs.length) diffs.push(`${k}: ${recs.length} records before, ${got.length} after`);
    const n = Math.max(recs.length, got.length);
    for (let i = 0; i < n; i++) {
      const b = recs[i];
      const a = got[i];
      if (!b || !a || !sameRecord(b, a, isLegacy)) {
        diffs.push(`${k} #${i}: before ${show(b)} after ${show(a)}`);
        if (diffs.length > 200) return diffs;
      }
    }
  }
  for (const k of after.records.keys())
    if (wanted(k.split(' ')[1]) && !base.records.has(k)) diffs.push(`${k}: served after only`);
  for (const [k, r] of base.offsetsForTimes) {
    if (!wanted(k.split(' ')[0])) continue;
    const a = after.offsetsForTimes.get(k);
    if (!a || a.o !== r.o || a.rts !== r.rts)
      diffs.push(`offsetsForTimes ${k}: ${JSON.stringify(r)} before, ${JSON.stringify(a)} after`);
  }
  return diffs;
}

function sameRecord(b: ServedRecord, a: ServedRecord, legacy: boolean): boolean {
  const tt = a.tt === b.tt || (legacy && b.tt === 'NoTimestampType' && b.ts === -1 && a.tt === 'CreateTime');
  const le = a.le === b.le || (legacy && a.le === -1);
  return (
    a.o === b.o &&
    a.ts === b.ts &&
    tt &&
    le &&
    a.k === b.k &&
    a.v === b.v &&
    JSON.stringify(a.h) === JSON.stringify(b.h)
  );
}

/** The summary line for an assertion message: the first differences, and how many in all. */
export function summarize(diffs: string[], max = 30): string {
  return diffs.length <= max
    ? diffs.join('\n')
    : `${diffs.slice(0, max).join('\n')}\n… ${diffs.length - max} more`;
}
