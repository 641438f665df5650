import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.internals.ByteUtils;
import org.apache.kafka.common.utils.internals.Crc32C;
import org.apache.kafka.server.log.remote.metadata.storage.generated.ProducerSnapshot;

/**
 * Files written by Kafka 4's own classes for e2e/kafka/dump-log.test.ts (run as a single-file
 * source program on the kafka4 jars):
 *   log FILE SPEC       one uncompressed v2 batch (MemoryRecords.withRecords), a record per line of
 *                       SPEC: "KEYHEX|- VALUEHEX|- [HEADERKEYHEX]"
 *   snapshot FILE SPEC  a producer state snapshot as ProducerStateManager.writeSnapshot writes it,
 *                       an entry per line: "producerId epoch lastSequence lastOffset offsetDelta
 *                       timestamp coordinatorEpoch currentTxnFirstOffset"
 */
public class WriteFiles {
  public static void main(String[] args) throws Exception {
    List<String> lines = Files.readAllLines(Path.of(args[2]));
    ByteBuffer out = args[0].equals("log") ? log(lines) : snapshot(lines);
    try (FileOutputStream f = new FileOutputStream(args[1])) {
      f.getChannel().write(out);
    }
  }

  static ByteBuffer log(List<String> lines) {
    HexFormat hex = HexFormat.of();
    List<SimpleRecord> records = new ArrayList<>();
    for (String line : lines) {
      String[] f = line.split(" ", -1);
      byte[] key = f[0].equals("-") ? null : hex.parseHex(f[0]);
      byte[] value = f[1].equals("-") ? null : hex.parseHex(f[1]);
      Header[] headers = f.length < 3 || f[2].isEmpty()
          ? new Header[0]
          : new Header[] {new RecordHeader(new String(hex.parseHex(f[2]), StandardCharsets.UTF_8), new byte[0])};
      records.add(new SimpleRecord(1700000000000L + records.size(), key, value, headers));
    }
    return MemoryRecords.withRecords(Compression.NONE, records.toArray(new SimpleRecord[0])).buffer();
  }

  // ProducerStateManager.writeSnapshot's steps, from the entries' fields as given.
  static ByteBuffer snapshot(List<String> lines) {
    List<ProducerSnapshot.ProducerEntry> entries = new ArrayList<>();
    for (String line : lines) {
      if (line.isBlank()) continue;
      String[] f = line.trim().split(" +");
      entries.add(new ProducerSnapshot.ProducerEntry()
          .setProducerId(Long.parseLong(f[0]))
          .setEpoch(Short.parseShort(f[1]))
          .setLastSequence(Integer.parseInt(f[2]))
          .setLastOffset(Long.parseLong(f[3]))
          .setOffsetDelta(Integer.parseInt(f[4]))
          .setTimestamp(Long.parseLong(f[5]))
          .setCoordinatorEpoch(Integer.parseInt(f[6]))
          .setCurrentTxnFirstOffset(Long.parseLong(f[7])));
    }
    ProducerSnapshot snapshot = new ProducerSnapshot().setProducerEntries(entries);
    ByteBuffer buffer = MessageUtil.toVersionPrefixedByteBuffer(ProducerSnapshot.HIGHEST_SUPPORTED_VERSION, snapshot);
    // PRODUCER_ENTRIES_OFFSET 6, CRC_OFFSET 2 (ProducerStateManager).
    ByteUtils.writeUnsignedInt(buffer, 2, Crc32C.compute(buffer, 6, buffer.limit() - 6));
    return buffer;
  }
}
