/** What seglift-watcher accepts and says about itself: its flags, its --help, its exit codes. */
import { conversionSettingsHelp, describeSettings, type FlagOptions } from '@seglift/config';
import { QUEUE_PROGRAM_OPTIONS } from '@seglift/queue';

export { EXIT_OK, EXIT_RUNTIME, EXIT_USAGE } from '@seglift/queue';

export const PROGRAM = 'seglift-watcher';
/** --once --wait: some segment failed, or is not in the target format after the run. */
export const EXIT_SEGMENTS_FAILED = 1;

export const OPTIONS = {
  ...QUEUE_PROGRAM_OPTIONS,
  'stage-dir': { type: 'string' },
  once: { type: 'boolean' },
  wait: { type: 'boolean' },
} as const satisfies FlagOptions;

export const HELP = `Usage: seglift-watcher [--once [--wait]] [options]

Finds the Kafka segments under the roots that are ready to convert and queues each once on Redis
(BullMQ) for seglift-worker processes. A segment is ready once Kafka has rolled it (a newer
segment exists beside it); in an archive (readiness.requireRolled: false) every segment, the
newest too, once its .log has been unchanged for readiness.quietMs (a copy may still be writing
any of them). Each job carries this watcher's conversion settings (codec, level, ...): the
workers convert with them, not their own. A job's id is a hash of the segment's real path, size,
mtime, inode and ctime and of the settings that change the bytes: several watchers, or reruns,
never queue one twice, a segment a worker converted is not queued again with the same settings
(another codec or level is a new job), and a segment restored from a backup (cp -p) is a new job.

A running broker's log dir (its Kafka .lock is held) is never converted in place: its segments
are queued as prepare jobs that convert and verify them into the stage dir (stageDir), nothing in
the log dir written; the daemon keeps the stage topped up as segments roll, and keeps such a log
dir prepare-only until it stops. Commit with the broker stopped: 'seglift migrate <log dir>
--commit --stage-dir <stage dir>'. A stage dir serves one log dir: run one watcher per log dir of
a running broker. Without a stage dir the watcher refuses to start (exit 2) when it finds one.

Modes:
  (default)       a daemon: watches the roots and rescans them every 10 minutes; serves
                  /metrics (seglift_queue_jobs), /healthz and /readyz; stops on SIGTERM/SIGINT
  --once          scans the roots once, queues every ready segment, exits
  --once --wait   then waits until the workers have handled every queued segment, reads every
                  segment found ready again, and exits with the migration's result (a
                  Kubernetes Job); serves /metrics meanwhile

Options:
  -c, --config FILE        YAML or JSON config file (default $SEGLIFT_CONFIG)
  --root DIR               a directory to scan: a broker log.dir, a parent of several, or one
                           partition directory (repeatable; replaces roots)
  --redis-url URL          redis://[user:password@]host:port/db (redis.url)
  --stage-dir DIR          where a running broker's segments are prepared (stageDir): on the
                           log dir's filesystem, outside it, within the roots (the workers
                           write it); the commit reads the same
  --redis-timeout-ms MS    how long Redis may take to answer at start (default 60000), then exit 3
  --metrics-port N         port of /metrics, /healthz, /readyz (metrics.port; default 9465 here,
                           9464 for seglift-worker, so both run on one host; 0: any free port)
  --log-level L            fatal|error|warn|info|debug|trace|silent (log.level)
  -h, --help               this text
  -V, --version            the version

${describeSettings([
  ['roots', 'where segments are looked for (at least one; --root)'],
  ['readiness.requireRolled', 'true: a live log dir, the active segment waits; false: an archive'],
  ['readiness.quietMs', 'archive: how long a segment must be unchanged (300000)'],
  ['stageDir', "--stage-dir: a running broker's log dir is prepared into it"],
  ...conversionSettingsHelp(),
  ['redis.url', 'the queue (redis://127.0.0.1:6379)'],
  ['queue.name', 'queue name (segments); the workers must use the same'],
  ['queue.prefix', 'Redis key prefix (seglift)'],
  ['worker.attempts', 'tries of a segment whose conversion failed for a passing reason (5)'],
  ['worker.backoffMs', 'first wait before a retry, doubled each time (5000)'],
  [
    'watcher.noWorkerTimeoutMs',
    '--wait: give up (exit 3) when nothing finished for this long and no worker is connected (900000)',
  ],
  ['metrics.port', '--metrics-port'],
  ['metrics.host', 'address the metrics server listens on (0.0.0.0)'],
  ['log.level', '--log-level (info)'],
  ['log.pretty', 'human-readable logs instead of JSON lines (false)'],
])}

Logs: one JSON object per line on stderr. Each segment the workers gave up on is logged with
err.code, err.file, err.position and err.offset; 'seglift inspect FILE --deep-iteration'
shows the bytes there.

Exit codes (as seglift's):
  0  ok; with --once --wait: every segment found ready is in the target format now, read from
     disk (a running broker's: staged for the file as it is)
  1  --once --wait: some segments failed (each logged): bad input, a rerun will not help; or a
     segment found ready is not in the target format (or not staged) after the run (each named)
  2  usage or configuration error (every problem listed), the metrics port is in use, or a log
     dir of a running broker without a usable stage dir (nothing queued)
  3  runtime error: Redis did not answer within --redis-timeout-ms, jobs kept vanishing from
     the queue (Redis losing data), no segment finished for watcher.noWorkerTimeoutMs while no
     worker was connected (the segments still queued are logged), internal error. A rerun
     queues only what is not done yet.
`;
