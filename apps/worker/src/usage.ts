/** What seglift-worker accepts and says about itself: its flags, its --help, its exit codes. */
import { describeSettings, type FlagOptions } from '@seglift/config';
import { QUEUE_PROGRAM_OPTIONS } from '@seglift/queue';
import { CONVERSION_SETTINGS, conversionSetting } from '@seglift/segment';

export { EXIT_OK, EXIT_RUNTIME, EXIT_USAGE } from '@seglift/queue';

export const PROGRAM = 'seglift-worker';

export const OPTIONS = {
  ...QUEUE_PROGRAM_OPTIONS,
  concurrency: { type: 'string' },
  'max-io-bytes-per-second': { type: 'string' },
  'exit-when-drained': { type: 'boolean' },
  'idle-ms': { type: 'string' },
} as const satisfies FlagOptions;

/** `names`, comma-separated, indented, in lines of at most 94 columns. */
function listed(names: readonly string[]): string {
  const lines = [''];
  for (const [i, name] of names.entries()) {
    const word = i < names.length - 1 ? `${name},` : name;
    if (lines.at(-1)!.length + word.length >= 92) lines.push('');
    lines[lines.length - 1] += lines.at(-1) === '' ? word : ` ${word}`;
  }
  return lines.map((l) => `  ${l}`).join('\n');
}

export const HELP = `Usage: seglift-worker [--exit-when-drained [--idle-ms MS]] [options]

Converts the segments seglift-watcher queued on Redis (BullMQ), in place, as 'seglift migrate'
would: magic 0/1 upconverted to v2, batches recompressed to the target codec, indexes rebuilt,
each result verified against its original before a crash-safe swap. Every path is checked
against the roots; a Redis lock per partition keeps two workers out of one partition. Start
as many as the disks and cores allow, on every host that mounts the log dirs.

How a segment is converted is the job's: the conversion settings of the seglift-watcher that
queued it travel with each job and are part of its id:
${listed(CONVERSION_SETTINGS.map((s) => s.path))}
This worker's own are not read, except that limits.maxDecompressedBatchBytes caps a job's.
A job queued by an older seglift-watcher carries none: it fails (INVALID_ARGUMENT, naming the
segment), and a run of this version's watcher queues the segment again.

Options:
  -c, --config FILE        YAML or JSON config file (default $SEGLIFT_CONFIG)
  --root DIR               a directory the worker may rewrite in (repeatable; replaces roots)
  --redis-url URL          redis://[user:password@]host:port/db (redis.url)
  --concurrency N          segments converted at once, one thread each (worker.concurrency)
  --max-io-bytes-per-second N
                           bytes read and written per second by this worker, all its threads
                           together (io.maxBytesPerSecond; default no limit)
  --exit-when-drained      exit 0 once the queue has had no waiting, delayed or active job for
                           --idle-ms (a Kubernetes work-queue Job); otherwise run until stopped
  --idle-ms MS             with --exit-when-drained (default 30000)
  --redis-timeout-ms MS    how long Redis may take to answer at start (default 60000), then exit 3
  --metrics-port N         port of /metrics, /healthz, /readyz (metrics.port; default 9464 here,
                           9465 for seglift-watcher, so both run on one host; 0: any free port)
  --log-level L            fatal|error|warn|info|debug|trace|silent (log.level)
  -h, --help               this text
  -V, --version            the version

${describeSettings([
  ['roots', 'where the worker may read and rewrite (at least one; --root)'],
  ['backupDir', 'copy every original here before replacing it (none)'],
  [
    'limits.maxDecompressedBatchBytes',
    `${conversionSetting('maxDecompressedBatchBytes').summary}; a job asking for more gets this`,
  ],
  ['limits.maxSegmentBytes', 'refuse a larger segment (2 GiB - 1)'],
  ['readiness.requireRolled', 'true: refuse an active segment; false: an archive, every segment'],
  ['readiness.quietMs', 'archive: a segment written more recently waits until unchanged this long (300000)'],
  ['redis.url', 'the queue (redis://127.0.0.1:6379)'],
  ['queue.name', 'queue name (segments); the watcher must use the same'],
  ['queue.prefix', 'Redis key prefix (seglift)'],
  ['worker.concurrency', '--concurrency (the CPUs, as many as the memory holds)'],
  ['io.maxBytesPerSecond', '--max-io-bytes-per-second (no limit)'],
  ['prepare.nice', 'a thread converting a prepare job runs at nice 10, I/O best-effort 6 (true)'],
  ['worker.lockDurationMs', "a job's lock; a killed worker's job is redone after about this long (30000)"],
  ['worker.stalledIntervalMs', 'how often stalled jobs are looked for (30000)'],
  ['worker.maxStalledCount', 'stalls before a job fails (5)'],
  ['worker.shutdownGraceMs', 'on SIGTERM, how long running conversions may finish (30000)'],
  ['metrics.port', '--metrics-port'],
  ['metrics.host', 'address the metrics server listens on (0.0.0.0)'],
  ['log.level', '--log-level (info)'],
  ['log.pretty', 'human-readable logs instead of JSON lines (false)'],
])}

A bad segment fails its job (format errors at once, passing I/O errors after worker.attempts
tries) and is left exactly as it was; seglift-watcher --once --wait reports it. The worker's
log line carries err.code, err.file, err.position and err.offset.

SIGTERM/SIGINT: no new jobs; running conversions get worker.shutdownGraceMs to finish, then are
aborted (temp files removed, originals untouched) and handed back to the queue.

Exit codes (as seglift's):
  0    stopped by SIGTERM/SIGINT as a daemon; with --exit-when-drained, the queue was drained
  2    usage or configuration error (every problem listed), or the metrics port is in use
  3    runtime error: Redis did not answer within --redis-timeout-ms, internal error
  143  --exit-when-drained: stopped by SIGTERM (130: SIGINT) before the queue was drained,
       after the graceful stop above
`;
