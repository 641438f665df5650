/**
 * audit's tiered storage section (issue 25): per topic, whether its closed segments can be
 * copied to remote storage by Kafka (KIP-405) as they are, and what to run when not. File names
 * and leader-epoch-checkpoint only: no data is read.
 */
import path from 'node:path';
import { parsePartitionDirName, tieringState } from '@seglift/segment';
import { count } from '../table.js';
import type { TargetPartition } from '../targets.js';

export interface TopicTiering {
  topic: string;
  partitions: number;
  closedSegments: number;
  /** Closed segments without their segment-aligned producer snapshot (pre-2.8 brokers kept none). */
  missingSnapshots: number;
  /** Closed segments with no leader epoch (wholly before the first leader-epoch-checkpoint entry). */
  segmentsWithoutEpoch: number;
  /** Partitions with closed segments and no leader-epoch-checkpoint entry: tier-prepare refuses them. */
  partitionsWithoutEpochs: number;
  /** Partitions whose leader-epoch-checkpoint Kafka itself would refuse: tier-prepare leaves them alone. */
  partitionsWithBadCheckpoint: number;
  tierable: boolean;
}

/** One partition's part of it, as audit --json gives it in the partition's object (`tiering`). */
export interface PartitionTiering {
  closedSegments: number;
  missingSnapshots: number;
  segmentsWithoutEpoch: number;
  /** No leader-epoch-checkpoint entry: the broker must write one before tier-prepare can help. */
  epochsMissing: boolean;
  /** Why leader-epoch-checkpoint cannot be read as Kafka reads it (its epochs count as none). */
  checkpointError?: string;
  tierable: boolean;
}

export async function auditTiering(
  partitions: readonly TargetPartition[],
): Promise<{ topics: TopicTiering[]; byDir: Map<string, PartitionTiering> }> {
  const topics = new Map<string, TopicTiering>();
  const byDir = new Map<string, PartitionTiering>();
  for (const p of partitions) {
    const base = path.basename(p.dir);
    const topic = parsePartitionDirName(base)?.topic;
    if (topic === undefined || topic.startsWith('__') || p.namedFile) continue;
    const segments = p.segments.map((s) => ({
      ...s,
      baseOffset: BigInt(path.basename(s.path).replace(/\.log$/, '')),
    }));
    const s = await tieringState({ partitionDir: p.dir, segments });
    byDir.set(p.dir, {
      closedSegments: s.closedSegments,
      missingSnapshots: s.missingSnapshots.length,
      segmentsWithoutEpoch: s.segmentsBeforeFirstEpoch,
      epochsMissing: s.epochsMissing,
      ...(s.checkpointError !== undefined ? { checkpointError: s.checkpointError } : {}),
      tierable: s.missingSnapshots.length === 0 && s.segmentsBeforeFirstEpoch === 0,
    });
    const t = topics.get(topic) ?? {
      topic,
      partitions: 0,
      closedSegments: 0,
      missingSnapshots: 0,
      segmentsWithoutEpoch: 0,
      partitionsWithoutEpochs: 0,
      partitionsWithBadCheckpoint: 0,
      tierable: true,
    };
    t.partitions++;
    t.closedSegments += s.closedSegments;
    t.missingSnapshots += s.missingSnapshots.length;
    t.segmentsWithoutEpoch += s.segmentsBeforeFirstEpoch;
    if (s.epochsMissing) t.partitionsWithoutEpochs++;
    if (s.checkpointError !== undefined) t.partitionsWithBadCheckpoint++;
    t.tierable = t.missingSnapshots === 0 && t.segmentsWithoutEpoch === 0;
    topics.set(topic, t);
  }
  return { topics: [...topics.values()].sort((a, b) => a.topic.localeCompare(b.topic)), byDir };
}

/** The most topics audit's text names one by one; --json has every partition. */
const NAMED_TOPICS = 10;

/**
 * The text lines: one summary line (a log dir of thousands of topics must not drown the
 * readiness lines), then each topic that cannot be tiered as it is, at most NAMED_TOPICS.
 * `tiered storage: 1 of 2 topics cannot be tiered as they are (KIP-405): ...`. The advice is
 * what tier-prepare will accept: a partition without any leader epoch entry needs the broker to
 * write one first (tier-prepare refuses it, exit 1).
 */
export function tieringLines(topics: readonly TopicTiering[]): string[] {
  if (topics.length === 0) return [];
  if (topics.every((t) => t.closedSegments === 0))
    return ['tiered storage: no closed segments yet (only active ones): nothing to tier.'];
  const not = topics.filter((t) => !t.tierable);
  if (not.length === 0)
    return [
      `tiered storage: the closed segments of every topic (${topics.length}) can be tiered as they are.`,
    ];
  const withoutEpochs = not.reduce((n, t) => n + t.partitionsWithoutEpochs, 0);
  const advice =
    withoutEpochs > 0
      ? `${count(withoutEpochs, 'partition has', 'partitions have')} no leader-epoch-checkpoint entry, which ` +
        `'seglift tier-prepare' needs: start the broker once (it writes one), stop it, then run ` +
        `'seglift tier-prepare <log.dir>'.`
      : `with the broker stopped, run 'seglift tier-prepare <log.dir>' first.`;
  const lines = [
    `tiered storage: ${not.length} of ${count(topics.length, 'topic')} cannot be tiered as they are ` +
      `(remote.storage.enable=true would copy none of their old segments): ${advice}`,
  ];
  for (const t of not.slice(0, NAMED_TOPICS)) {
    const lacks: string[] = [];
    if (t.missingSnapshots > 0)
      lacks.push(
        `${t.missingSnapshots} ${t.missingSnapshots === 1 ? 'lacks its' : 'lack their'} producer snapshot`,
      );
    if (t.segmentsWithoutEpoch > 0)
      lacks.push(
        `${t.segmentsWithoutEpoch} ${t.segmentsWithoutEpoch === 1 ? 'has' : 'have'} no leader epoch`,
      );
    if (t.partitionsWithoutEpochs > 0)
      lacks.push(`${count(t.partitionsWithoutEpochs, 'partition')} without a leader-epoch-checkpoint entry`);
    if (t.partitionsWithBadCheckpoint > 0)
      lacks.push(
        `${count(t.partitionsWithBadCheckpoint, 'partition')} whose leader-epoch-checkpoint Kafka would refuse (tier-prepare leaves ${t.partitionsWithBadCheckpoint === 1 ? 'it' : 'them'} alone; --json says why)`,
      );
    lines.push(`  ${t.topic}: of ${count(t.closedSegments, 'closed segment')}, ${lacks.join(', ')}`);
  }
  if (not.length > NAMED_TOPICS)
    lines.push(`  and ${not.length - NAMED_TOPICS} more (--json: each partition's tiering)`);
  return lines;
}
