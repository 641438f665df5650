import java.io.File;
import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.zip.CRC32;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;

/**
 * Leader epochs as Kafka 4's own classes see them, for e2e/kafka/leader-epochs.test.ts (a
 * single-file source program on the kafka4 jars):
 *   write DIR SPEC         segments written with Kafka's MemoryRecords, a line of SPEC each:
 *                          "segment BASE" starts DIR/<BASE>.log; "v2 BASE COUNT EPOCH" appends one
 *                          uncompressed batch of COUNT records with that partitionLeaderEpoch;
 *                          "v1 OFFSET COUNT" appends COUNT uncompressed magic 1 messages (no epoch)
 *   read DIR CHECKPOINT... one JSON object: every partitionLeaderEpoch present in DIR's batches,
 *                          the log end offset, and for each checkpoint file (read by
 *                          LeaderEpochCheckpointFile into a LeaderEpochFileCache) and for the cache
 *                          Kafka's recovery builds from the batches (LogSegment.recover: assign
 *                          (epoch, baseOffset) per batch of magic >= 2 whose epoch is above the
 *                          latest) the entries and endOffsetFor(epoch, logEndOffset) of each epoch;
 *                          or the exception Kafka throws reading the file.
 */
public class LeaderEpochs {
  static final TopicPartition TP = new TopicPartition("t", 0);

  public static void main(String[] args) throws Exception {
    if (args[0].equals("write")) write(new File(args[1]), Files.readAllLines(Path.of(args[2])));
    else read(new File(args[1]), Arrays.copyOfRange(args, 2, args.length));
  }

  static void write(File dir, List<String> spec) throws Exception {
    FileOutputStream out = null;
    for (String line : spec) {
      if (line.isBlank()) continue;
      String[] f = line.trim().split(" +");
      if (f[0].equals("segment")) {
        if (out != null) out.close();
        out = new FileOutputStream(new File(dir, String.format("%020d.log", Long.parseLong(f[1]))));
      } else if (f[0].equals("v2")) {
        long base = Long.parseLong(f[1]);
        int count = Integer.parseInt(f[2]);
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) records[i] = new SimpleRecord(1700000000000L + base + i, null, ("v" + (base + i)).getBytes());
        ByteBuffer b = MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V2, base, Compression.NONE,
            TimestampType.CREATE_TIME, -1L, (short) -1, -1, Integer.parseInt(f[3]), false, records).buffer();
        out.getChannel().write(b);
      } else {
        long offset = Long.parseLong(f[1]);
        for (int i = 0; i < Integer.parseInt(f[2]); i++) out.write(legacyV1(offset + i));
      }
    }
    if (out != null) out.close();
  }

  /** One uncompressed magic 1 message (LegacyRecord's layout), value "old". */
  static byte[] legacyV1(long offset) {
    byte[] value = "old".getBytes();
    ByteBuffer body = ByteBuffer.allocate(1 + 1 + 8 + 4 + 4 + value.length);
    body.put((byte) 1).put((byte) 0).putLong(1600000000000L + offset).putInt(-1).putInt(value.length).put(value);
    CRC32 crc = new CRC32();
    crc.update(body.array());
    ByteBuffer m = ByteBuffer.allocate(8 + 4 + 4 + body.capacity());
    m.putLong(offset).putInt(4 + body.capacity()).putInt((int) crc.getValue()).put(body.array());
    return m.array();
  }

  static void read(File dir, String[] checkpoints) throws Exception {
    File[] logs = dir.listFiles((d, n) -> n.endsWith(".log"));
    Arrays.sort(logs);
    TreeSet<Integer> present = new TreeSet<>();
    long logEnd = 0;
    Path tmp = Files.createTempDirectory("leader-epochs");
    LeaderEpochFileCache recovered = cache(tmp.resolve("recovered").toFile());
    for (File log : logs) {
      try (FileRecords records = FileRecords.open(log)) {
        for (FileChannelRecordBatch batch : records.batches()) {
          if (batch.magic() >= RecordBatch.MAGIC_VALUE_V2) {
            int epoch = batch.partitionLeaderEpoch();
            if (epoch >= 0) present.add(epoch);
            // LogSegment.recover's rule, on Kafka's own cache.
            if (epoch >= 0 && recovered.latestEntry().map(e -> epoch > e.epoch()).orElse(true))
              recovered.assign(epoch, batch.baseOffset());
          }
          logEnd = batch.nextOffset();
        }
      }
    }
    StringBuilder json = new StringBuilder("{\"epochs\":" + present + ",\"logEndOffset\":" + logEnd);
    json.append(",\"recovered\":").append(describe(recovered, present, logEnd));
    for (String c : checkpoints) {
      // A copy: Kafka's checkpoint classes may write beside the file they are given.
      Path copy = tmp.resolve("c" + json.length());
      Files.copy(Path.of(c), copy, StandardCopyOption.REPLACE_EXISTING);
      String described;
      try {
        described = describe(cache(copy.toFile()), present, logEnd);
      } catch (Exception e) {
        Throwable t = e.getCause() != null ? e.getCause() : e;
        described = "{\"error\":\"" + t.getClass().getSimpleName() + "\"}";
      }
      json.append(",\"").append(c).append("\":").append(described);
    }
    System.out.println(json.append("}"));
  }

  static LeaderEpochFileCache cache(File file) throws Exception {
    return new LeaderEpochFileCache(TP, new LeaderEpochCheckpointFile(file, new LogDirFailureChannel(1)), null);
  }

  static String describe(LeaderEpochFileCache cache, TreeSet<Integer> epochs, long logEnd) {
    List<String> entries = new ArrayList<>();
    for (EpochEntry e : cache.epochEntries()) entries.add("[" + e.epoch() + "," + e.startOffset() + "]");
    List<String> ends = new ArrayList<>();
    for (int epoch : epochs) {
      Map.Entry<Integer, Long> end = cache.endOffsetFor(epoch, logEnd);
      ends.add("\"" + epoch + "\":[" + end.getKey() + "," + end.getValue() + "]");
    }
    return "{\"entries\":" + entries + ",\"endOffsetFor\":{" + String.join(",", ends) + "}}";
  }
}
