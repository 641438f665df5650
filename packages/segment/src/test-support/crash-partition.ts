/**
 * A partition for crash tests, and the two recoveries every crash is checked with: a broker
 * starting on the directory (kafka-model.ts) and ours (recoverLeftovers, then a rerun).
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { setMtimeNs } from '../files/libc.js';
import { convertSegment } from '../placements/convert.js';
import { verifySegment } from '../rewrite/verify.js';
import { recoverLeftovers } from '../safety/leftovers.js';
import { killLocks } from './crash.js';
import { mixedSegment, tmpDir } from './fixtures.js';
import { ls, sha256 } from './helpers.js';
import { independentRecords, type PlainRecord, recoveryIndexes } from './independent.js';
import { kafkaServes, kafkaStartUp } from './kafka-model.js';

const OLD = new Date('2019-05-06T07:08:09.000Z');
/** With a sub-millisecond part: a rewrite and its recovery keep the mtime to the nanosecond. */
const OLD_NS = BigInt(OLD.getTime()) * 1_000_000n + 4_321n;
export const TXN = Buffer.alloc(34, 1);
export const SNAP = Buffer.alloc(20, 2);
/** A small segment.index.bytes keeps the zero-filled index the model writes small. */
const MODEL = { segmentIndexBytes: 64 * 1024 };

export interface Partition {
  root: string;
  pdir: string;
  /** Base-offset prefixes of the segments, the last one active. */
  prefixes: string[];
  original: Map<string, { log: string; index: string; timeindex: string }>;
  expected: PlainRecord[];
}

/**
 * A partition of three segments (the last one active) with the indexes Kafka's recovery builds,
 * `.txnindex`/`.snapshot` beside the first, and an old mtime. Built once, copied for each case.
 */
let template: Partition | undefined;
export async function partition(): Promise<Partition> {
  if (!template) template = await buildPartition();
  const root = await tmpDir('seglift-crash-');
  const pdir = path.join(root, 'orders-0');
  await cp(template.pdir, pdir, { recursive: true, preserveTimestamps: true });
  // cp keeps the millisecond only.
  for (const p of template.prefixes) setMtimeNs(path.join(pdir, `${p}.log`), OLD_NS);
  return { ...template, root, pdir, prefixes: [...template.prefixes], expected: [...template.expected] };
}

async function buildPartition(): Promise<Partition> {
  const root = await tmpDir('seglift-crash-template-');
  const pdir = path.join(root, 'orders-0');
  await mkdir(pdir);
  const prefixes: string[] = [];
  const original = new Map<string, { log: string; index: string; timeindex: string }>();
  const expected: PlainRecord[] = [];
  let off = 0n;
  for (let s = 0; s < 3; s++) {
    const seg = mixedSegment(off, 40 + s);
    const prefix = off.toString().padStart(20, '0');
    const idx = recoveryIndexes(seg.bytes, off);
    await writeFile(path.join(pdir, `${prefix}.log`), seg.bytes);
    await writeFile(path.join(pdir, `${prefix}.index`), idx.index);
    await writeFile(path.join(pdir, `${prefix}.timeindex`), idx.timeindex);
    await utimes(path.join(pdir, `${prefix}.log`), OLD, OLD);
    prefixes.push(prefix);
    expected.push(...(await independentRecords(seg.bytes)));
    off = seg.lastOffset + 1n;
  }
  await writeFile(path.join(pdir, `${prefixes[0]}.txnindex`), TXN);
  await writeFile(path.join(pdir, `${prefixes[0]}.snapshot`), SNAP);
  for (const p of prefixes) {
    original.set(p, {
      log: await sha256(path.join(pdir, `${p}.log`)),
      index: await sha256(path.join(pdir, `${p}.index`)),
      timeindex: await sha256(path.join(pdir, `${p}.timeindex`)),
    });
  }
  return { root, pdir, prefixes, original, expected };
}

/** A broker starting on a copy of the directory serves every record and right lookups. */
export async function brokerServes(part: Partition, dir: string, withCleaned: boolean): Promise<void> {
  const copy = path.join(part.root, `broker-${withCleaned ? 'cleaned' : 'plain'}`);
  await rm(copy, { recursive: true, force: true });
  await cp(dir, copy, { recursive: true, preserveTimestamps: true });
  // An interrupted cleaner's output: Kafka deletes every .swap at or above its offset first.
  if (withCleaned) await writeFile(path.join(copy, `${part.prefixes[0]}.log.cleaned`), '');
  const loaded = await kafkaStartUp(copy, MODEL);
  expect(loaded.map((s) => s.baseOffset.toString().padStart(20, '0'))).toEqual(part.prefixes);
  expect(await kafkaServes(loaded, part.expected)).toEqual([]);
  expect(await readFile(path.join(copy, `${part.prefixes[0]}.txnindex`))).toEqual(TXN);
  expect(await readFile(path.join(copy, `${part.prefixes[0]}.snapshot`))).toEqual(SNAP);
  await rm(copy, { recursive: true, force: true });
}

/** Each segment whole: the original with its indexes, or a verified conversion with recovery-rule indexes. */
async function wholeSegments(part: Partition): Promise<('original' | 'converted')[]> {
  const out: ('original' | 'converted')[] = [];
  for (const p of part.prefixes) {
    const log = path.join(part.pdir, `${p}.log`);
    const o = part.original.get(p)!;
    if ((await sha256(log)) === o.log) {
      expect(await sha256(path.join(part.pdir, `${p}.index`))).toBe(o.index);
      expect(await sha256(path.join(part.pdir, `${p}.timeindex`))).toBe(o.timeindex);
      out.push('original');
    } else {
      const bytes = await readFile(log);
      const idx = recoveryIndexes(bytes, BigInt(p));
      expect(await readFile(path.join(part.pdir, `${p}.index`))).toEqual(idx.index);
      expect(await readFile(path.join(part.pdir, `${p}.timeindex`))).toEqual(idx.timeindex);
      expect((await verifySegment(log)).problems).toEqual([]);
      expect((await stat(log, { bigint: true })).mtimeNs).toBe(OLD_NS);
      out.push('converted');
    }
  }
  return out;
}

const onlySegmentFiles = async (pdir: string) =>
  (await ls(pdir)).filter((n) => !/^\d{20}\.(log|index|timeindex|txnindex|snapshot)$/.test(n));

/** Our recovery and a rerun: every segment but the active one converted once, nothing left over. */
export async function recoverAndRerun(part: Partition, targets: string[], backupDir?: string): Promise<void> {
  await killLocks(part.pdir);
  const report = await recoverLeftovers(part.pdir);
  expect(report.foreignSwaps).toEqual([]);
  await wholeSegments(part);
  expect((await onlySegmentFiles(part.pdir)).filter((n) => !n.endsWith('.lock'))).toEqual([]);
  for (const p of targets) {
    const r = await convertSegment(
      path.join(part.pdir, `${p}.log`),
      { codec: 'zstd' },
      { kind: 'inPlace', backupDir },
    );
    expect(r.error).toBeUndefined();
  }
  expect(await wholeSegments(part)).toEqual(
    part.prefixes.map((p) => (targets.includes(p) ? 'converted' : 'original')),
  );
  expect(await onlySegmentFiles(part.pdir)).toEqual([]);
  expect(await readFile(path.join(part.pdir, `${part.prefixes[0]}.txnindex`))).toEqual(TXN);
  if (backupDir && existsSync(path.join(backupDir, 'orders-0'))) {
    for (const n of await readdir(path.join(backupDir, 'orders-0'))) {
      if (n.startsWith('.')) continue;
      const o = part.original.get(n.slice(0, 20))!;
      const want = n.endsWith('.log') ? o.log : n.endsWith('.index') ? o.index : o.timeindex;
      expect(await sha256(path.join(backupDir, 'orders-0', n))).toBe(want);
    }
  }
}
