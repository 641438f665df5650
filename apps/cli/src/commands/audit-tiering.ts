/**
 * audit's tiered storage section (issue 25): per topic, whether its closed segments can be
 * copied to remote storage by Kafka (KIP-405) as they are, and what to run when not. File names
 * and leader-epoch-checkpoint only: no data is read.
 */
import path from 'node:path';
import { parsePartitionDirName, tieringState } from '@seglift/segment';
import type { TargetPartition } from '../targets.js';

export interface TopicTiering {
  topic: string;
  partitions: number;
  closedSegments: number;
  /** Closed segments without their segment-aligned producer snapshot (pre-2.8 brokers kept none). */
  missingSnapshots: number;
  /** Closed segments with no leader epoch (wholly before the first leader-epoch-checkpoint entry). */
  segmentsWithoutEpoch: number;
  tierable: boolean;
}

/** One partition's part of it, as audit --json gives it in the partition's object (`tiering`). */
export interface PartitionTiering {
  closedSegments: number;
  missingSnapshots: number;
  segmentsWithoutEpoch: number;
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
      tierable: s.missingSnapshots.length === 0 && s.segmentsBeforeFirstEpoch === 0,
    });
    const t = topics.get(topic) ?? {
      topic,
      partitions: 0,
      closedSegments: 0,
      missingSnapshots: 0,
      segmentsWithoutEpoch: 0,
      tierable: true,
    };
    t.partitions++;
    t.closedSegments += s.closedSegments;
    t.missingSnapshots += s.missingSnapshots.length;
    t.segmentsWithoutEpoch += s.segmentsBeforeFirstEpoch;
    t.tierable = t.missingSnapshots === 0 && t.segmentsWithoutEpoch === 0;
    topics.set(topic, t);
  }
  return { topics: [...topics.values()].sort((a, b) => a.topic.localeCompare(b.topic)), byDir };
}

/** `tiered storage: orders: NOT tierable: 12 closed segments lack ... run 'seglift tier-prepare'`. */
export function tieringLines(topics: readonly TopicTiering[]): string[] {
  const lines: string[] = [];
  for (const t of topics) {
    if (t.tierable) {
      lines.push(
        `tiered storage: ${t.topic}: its ${t.closedSegments} closed segments can be tiered as they are`,
      );
      continue;
    }
    const lacks: string[] = [];
    if (t.missingSnapshots > 0) lacks.push(`${t.missingSnapshots} lack their producer snapshot`);
    if (t.segmentsWithoutEpoch > 0) lacks.push(`${t.segmentsWithoutEpoch} have no leader epoch`);
    lines.push(
      `tiered storage: ${t.topic}: NOT tierable (of ${t.closedSegments} closed segments, ${lacks.join(', ')}): ` +
        `with the broker stopped, run 'seglift tier-prepare <log.dir>' before remote.storage.enable=true`,
    );
  }
  return lines;
}
