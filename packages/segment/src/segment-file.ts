import { stat } from 'node:fs/promises';
import path from 'node:path';
import { NotASegmentError, toSegmentError } from './errors.js';
import { METADATA_TOPIC, parsePartitionDirName, SegmentFiles } from './names.js';

export interface SegmentOnDisk {
  files: SegmentFiles;
  size: number;
  mtimeMs: number;
}

/**
 * `logPath` as a Kafka log segment, or the typed error an operator needs: a missing file is an
 * I/O error, a directory, an index or any other name is not a segment, and a segment of the KRaft
 * metadata log is never rewritten (Kafka reads it through the raft layer, whose RecordsIterator
 * refuses a record larger than its batch's stored size: a well-compressed batch would stop the
 * node from starting).
 */
export async function requireSegment(logPath: string): Promise<SegmentOnDisk> {
  const files = SegmentFiles.ofLog(logPath);
  if (files === undefined) {
    throw new NotASegmentError(
      `not a log segment: Kafka names segments <20-digit base offset>.log (an .index, .timeindex or other file cannot be read as one)`,
      { file: logPath },
    );
  }
  if (parsePartitionDirName(path.basename(files.dir))?.topic === METADATA_TOPIC) {
    throw new NotASegmentError(
      `a segment of ${METADATA_TOPIC}, the KRaft metadata log: seglift never rewrites it (Kafka loads it through the raft layer, not as a partition log)`,
      { file: logPath },
    );
  }
  let st: Awaited<ReturnType<typeof stat>>;
  try {
    st = await stat(files.log);
  } catch (err) {
    throw toSegmentError(err, logPath);
  }
  if (!st.isFile()) throw new NotASegmentError('not a log segment: not a regular file', { file: logPath });
  return { files, size: st.size, mtimeMs: st.mtimeMs };
}
