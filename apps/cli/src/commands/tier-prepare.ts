import { type PartitionTieringResult, prepareTiering, setIoLimit } from '@seglift/segment';
import { flag, parse, requirePositionals } from '../args.js';
import type { Command } from '../command.js';
import { EXIT_CODES_HELP, ExitCode, formatError } from '../exit-codes.js';
import { withLockAdvice } from '../failures.js';
import { toJsonLine } from '../io.js';
import { IO_LIMIT_ARG_OPTIONS, IO_LIMIT_HELP, ioLimitFlag, ioLimitLine, loadSettings } from '../settings.js';
import { count } from '../table.js';
import { requireWithinRoots } from '../targets.js';

const HELP = `Usage: seglift tier-prepare <log.dir>... [options]

Makes the closed segments of old topics tierable (tiered storage, KIP-405), with the broker
STOPPED (seglift holds each log dir's .lock, as the broker does):
  - writes each missing segment-aligned producer snapshot, <next base offset>.snapshot, that
    brokers before 2.8 did not keep and without which Kafka's copy to remote storage fails
    (NullPointerException in RemoteLogManager); computed by replaying every batch of the
    partition in offset order as Kafka does (legacy v0/v1 data: no producers). A snapshot that
    exists is never replaced, and every snapshot Kafka wrote is checked against the replay
    (a disagreement stops that partition, exit 1).
  - moves the first leader-epoch-checkpoint entry down to the first segment when older
    segments lie before it (data written before 0.11): Kafka refuses to copy a segment with no
    leader epoch ("segmentLeaderEpochs can not be null or empty").
  Entries below that first one are taken from the batches' own leader epochs, as Kafka's
  recovery assigns them: no epoch's end offset changes from what Kafka answers.
Every batch read is CRC-checked; a bad batch, a leader-epoch-checkpoint Kafka would refuse, or
Kafka's unfinished .cleaned/.swap files stop that partition (exit 1), named on stderr.
With roots set (SEGLIFT_ROOTS or the config file), every <log.dir> and every partition in it
(a symlinked one by where it leads) must lie within them: exit 2 before anything is written.
Run it on every broker that holds a replica, then set remote.storage.enable=true.
'seglift audit' tells which topics need it.

Options:
  --dry-run                 report what is missing, write nothing (no lock taken)
  --config FILE             YAML or JSON config file (default $SEGLIFT_CONFIG): its roots and
                            io.maxBytesPerSecond
  --json                    one NDJSON line per partition
${IO_LIMIT_HELP}
  -h, --help                this text

${EXIT_CODES_HELP}
  (here 1 also means: a partition has segments but no leader epoch at all; start the broker
  once so that it writes leader-epoch-checkpoint, stop it and run again)
`;

export const tierPrepareCommand: Command = {
  name: 'tier-prepare',
  help: HELP,
  async run(argv, ctx) {
    const p = parse('tier-prepare', argv, {
      'dry-run': { type: 'boolean' },
      json: { type: 'boolean' },
      config: { type: 'string' },
      ...IO_LIMIT_ARG_OPTIONS,
    });
    const dirs = requirePositionals('tier-prepare', p, '<log.dir>...');
    const dryRun = flag(p, 'dry-run');
    const json = flag(p, 'json');
    const { config } = await loadSettings('tier-prepare', p, ctx, ioLimitFlag('tier-prepare', p));
    // The replay reads every segment: under the host's I/O limit too.
    setIoLimit(config.io.maxBytesPerSecond);
    // Every path this run may write: the log dirs (each partition again below, by its real path).
    if (!dryRun) await requireWithinRoots(dirs, config.roots, ctx.io.cwd);
    let failed = 0;
    let blocked = 0;
    let mismatched = 0;
    let written = 0;
    const report = (r: PartitionTieringResult) => {
      if (r.epochsMissing) blocked++;
      if (r.mismatch !== undefined) {
        mismatched++;
        ctx.err.line(
          `error: ${r.partitionDir}: the replay disagrees with a snapshot Kafka wrote, nothing more written there: ${r.mismatch}`,
        );
      }
      if (r.error !== undefined) {
        failed++;
        ctx.err.line(`${formatError(r.error)} (${r.partitionDir}: stopped there)`);
      }
      written += r.written.length;
      if (json) {
        ctx.out.line(toJsonLine({ type: 'partition', ...r }));
        return;
      }
      const parts = [
        count(r.closedSegments, 'closed segment'),
        dryRun
          ? `${count(r.missingSnapshots.length, 'producer snapshot')} missing`
          : `${count(r.written.length, 'producer snapshot')} written`,
      ];
      if (r.epochsExtended && r.epochsFromBatches.length > 0)
        parts.push(
          `leader epochs ${r.epochsFromBatches.map((e) => `${e.epoch} (from ${e.startOffset})`).join(', ')} taken from the batches below epoch ${r.firstEpoch?.epoch}, the first extended down to the first segment`,
        );
      else if (r.epochsExtended)
        parts.push(`leader epoch ${r.firstEpoch?.epoch} extended down to the first segment`);
      else if (dryRun && r.segmentsBeforeFirstEpoch > 0 && r.firstEpoch !== undefined)
        parts.push(`${count(r.segmentsBeforeFirstEpoch, 'segment')} before the first leader epoch`);
      if (r.epochsMissing)
        parts.push('NO leader-epoch-checkpoint entry: start the broker once, stop it, run again');
      ctx.out.line(`${r.partitionDir}: ${parts.join(', ')}`);
    };
    for (const dir of dirs)
      await withLockAdvice('stop it first (--dry-run reads without the lock)', () =>
        prepareTiering(dir, { dryRun, roots: config.roots, onPartition: report }),
      );
    if (json) ctx.out.line(toJsonLine({ type: 'summary', written, blocked, mismatched, failed, dryRun }));
    else {
      const limit = ioLimitLine();
      if (limit !== undefined) ctx.out.line(limit);
    }
    return blocked + mismatched + failed > 0 ? ExitCode.SEGMENT_FAILED : ExitCode.OK;
  },
};
