import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { assertBackupDirOutside } from './backup.js';
import { type ConvertOptions, convertSegment } from './convert.js';
import { findPartitionSegments, type IgnoredDir, type SegmentFile } from './discovery.js';
import { SegmentIoError } from './errors.js';
import { emptyReport, type RunSummary, type SegmentReport, summarize } from './report.js';
import type { WorkerMessage, WorkerRequest } from './worker.js';

/**
 * V8 limits for a thread that runs conversions: the young generation capped as the seglift bin
 * caps it (--max-semi-space-size=8, i.e. 3 x 8 MiB), so each thread's heap stays near its working
 * set under the pipeline's allocation rate (bench/pipeline).
 */
export const PIPELINE_THREAD_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 24 } as const;

export interface MigrateProgress {
  segmentsDone: number;
  segmentsTotal: number;
  bytesDone: number;
  bytesTotal: number;
}

export interface MigrateOptions
  extends Omit<ConvertOptions, 'outDir' | 'inPlace' | 'onProgress' | 'testHooks'> {
  /** Also convert each partition's active (highest base offset) segment. Default false. */
  includeActive?: boolean;
  /** Parallel conversions (default: all cores). */
  concurrency?: number;
  /** 'threads' (default when dist/worker.js exists) or 'inline' (in process, one at a time). */
  mode?: 'threads' | 'inline';
  onProgress?: (progress: MigrateProgress) => void;
  onSegment?: (report: SegmentReport) => void;
}

export interface MigrateResult {
  reports: SegmentReport[];
  summary: RunSummary;
  partitions: number;
  /** Directories with segments that are not partition logs Kafka loads (metadata log, backups). */
  ignored: IgnoredDir[];
  /** The signal stopped the run: segments not reached are reported 'not-started'. */
  interrupted: boolean;
  /** How the run was executed (threads fall back to inline when the worker script is missing). */
  mode: 'threads' | 'inline';
}

/** dist/worker.js next to this module (built), or next to src/ when running from sources. */
export function workerScriptPath(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const p of [path.join(here, 'worker.js'), path.join(here, '..', 'dist', 'worker.js')]) {
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Converts, in place, every non-active segment under `dirs` (log dirs, partition dirs or their
 * parents) with a worker_threads pool. Active segments are reported as skipped. Never throws for
 * a bad segment; every segment gets a report, in discovery order.
 */
export async function migrate(dirs: string[], options: MigrateOptions): Promise<MigrateResult> {
  const started = performance.now();
  const reports: SegmentReport[] = [];
  const todo: SegmentFile[] = [];
  const ignored: IgnoredDir[] = [];
  let partitions = 0;
  if (options.backupDir) await assertBackupDirOutside(options.backupDir, dirs);
  for (const dir of dirs) {
    const found = await findPartitionSegments(dir, { includeActive: options.includeActive });
    ignored.push(...found.ignored);
    for (const p of found.partitions) {
      partitions++;
      todo.push(...p.eligible);
      if (!options.includeActive && p.active) {
        const r = emptyReport(p.active.path);
        r.result = 'skipped';
        r.reason = 'active-segment';
        r.bytesIn = p.active.size;
        reports.push(r);
        options.onSegment?.(r);
      }
    }
  }
  const bytesTotal = todo.reduce((a, s) => a + s.size, 0);
  const progress: MigrateProgress = { segmentsDone: 0, segmentsTotal: todo.length, bytesDone: 0, bytesTotal };
  const inFlight = new Map<number, number>();
  const emit = () => {
    if (!options.onProgress) return;
    let partial = 0;
    for (const v of inFlight.values()) partial += v;
    options.onProgress({ ...progress, bytesDone: progress.bytesDone + partial });
  };
  const done = (i: number, r: SegmentReport) => {
    results[i] = r;
    inFlight.delete(i);
    progress.segmentsDone++;
    progress.bytesDone += todo[i].size;
    options.onSegment?.(r);
    emit();
  };
  const results: SegmentReport[] = new Array(todo.length);
  const {
    includeActive: _a,
    concurrency: _c,
    mode: _m,
    onProgress: _p,
    onSegment: _s,
    signal,
    ...convert
  } = options;
  const script = workerScriptPath();
  const mode = options.mode === 'inline' || !script ? 'inline' : 'threads';
  const concurrency = Math.max(
    1,
    Math.min(options.concurrency ?? os.availableParallelism(), todo.length || 1),
  );

  if (mode === 'inline') {
    for (let i = 0; i < todo.length; i++) {
      const r = await convertSegment(todo[i].path, {
        ...convert,
        signal,
        inPlace: true,
        onProgress: (d) => {
          inFlight.set(i, d);
          emit();
        },
      });
      done(i, r);
    }
  } else {
    // Largest segments first: the run does not end with one thread converting a big segment
    // alone while the others idle (reports stay in discovery order).
    const order = todo.map((_, i) => i).sort((a, b) => todo[b].size - todo[a].size || a - b);
    let next = 0;
    // One pool thread taking segments until none are left. A thread that dies (out of memory, a
    // native crash) fails the segment it held, with the reason, and is replaced: the other
    // segments of the run go on.
    const runWorker = (): Promise<void> =>
      new Promise<void>((resolve) => {
        const w = new Worker(script!, { resourceLimits: PIPELINE_THREAD_RESOURCE_LIMITS });
        let current: number | undefined;
        let ended = false;
        const onAbort = () => w.postMessage({ type: 'abort' });
        signal?.addEventListener('abort', onAbort);
        const end = () => {
          ended = true;
          signal?.removeEventListener('abort', onAbort);
        };
        const feed = () => {
          if (next >= todo.length || signal?.aborted) {
            end();
            void w.terminate().then(() => resolve());
            return;
          }
          current = order[next++];
          w.postMessage({
            type: 'convert',
            id: current,
            logPath: todo[current].path,
            options: { ...convert, inPlace: true },
          } satisfies WorkerRequest);
        };
        const died = (why: string) => {
          if (ended) return;
          end();
          if (current !== undefined) {
            const r = emptyReport(todo[current].path);
            const e = new SegmentIoError(`conversion thread died: ${why}`, { file: todo[current].path });
            r.result = 'failed';
            r.bytesIn = todo[current].size;
            r.error = e.toJSON();
            r.reason = e.message;
            done(current, r);
          }
          resolve(runWorker());
        };
        w.on('message', (m: WorkerMessage) => {
          if (m.type === 'progress') {
            inFlight.set(m.id, m.bytesDone);
            emit();
          } else {
            current = undefined;
            done(m.id, m.report);
            feed();
          }
        });
        w.on('error', (err) => died(err.message));
        w.on('exit', (code) => died(`exit code ${code}`));
        feed();
      });
    await Promise.all(Array.from({ length: concurrency }, runWorker));
  }
  const interrupted = signal?.aborted === true;
  for (let i = 0; i < todo.length; i++) {
    const r = results[i];
    if (!r) {
      const nr = emptyReport(todo[i].path);
      nr.result = 'not-started';
      nr.reason = 'interrupted before it started';
      nr.bytesIn = todo[i].size;
      results[i] = nr;
    } else if (interrupted && r.result === 'failed' && r.error?.message === 'aborted') {
      // Stopped mid-conversion: its temp files are gone and the original was never touched.
      r.result = 'not-started';
      r.reason = 'interrupted before its swap; left as it was';
      delete r.error;
    }
  }
  const all = [...reports, ...results];
  return {
    reports: all,
    summary: summarize(all, performance.now() - started),
    partitions,
    ignored,
    interrupted,
    mode,
  };
}
