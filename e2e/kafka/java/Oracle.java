// The oracle suite's Kafka client side: creates topics, produces seeded data with Kafka's own Java
// producer, and reads every record back with Kafka's own Java consumer (the baseline and the
// after-migration reads are this same code). Compiled against the jars of the broker it talks to.
//
//   create <bootstrap> <topic> <partitions> [config=value ...]
//   alter <bootstrap> <topic> config=value ...
//   produce <bootstrap> <topic> <mode> <count> <seed> [producer.prop=value ...]
//       mode: plain | headers | txn | compact ; prints `produced <topic> <n>` (n acked records)
//   read <bootstrap> <out.jsonl> <topic> ...
//       read_uncommitted and read_committed reads of every partition, log start/end offsets and
//       offsetsForTimes on sampled timestamps, as JSON lines.
//   latest <bootstrap> <out.jsonl> <topic>   the records of one topic as served now (uncommitted)
//   script <bootstrap> <file>   runs each line of <file> (a command above without its bootstrap,
//       words separated by spaces) in this one JVM: a JVM start costs seconds on two cores.

import java.io.BufferedWriter;
import java.io.FileWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Oracle {
  // 2026-01-01T00:00:00Z: CreateTime timestamps are seeded offsets from here (topics keep
  // retention.ms=-1, so their age never matters).
  static final long BASE_TS = 1767225600000L;

  public static void main(String[] args) throws Exception {
    if (args[0].equals("script")) {
      for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of(args[2]))) {
        if (line.isBlank()) continue;
        String[] words = line.trim().split(" +");
        String[] full = new String[words.length + 1];
        full[0] = words[0];
        full[1] = args[1];
        System.arraycopy(words, 1, full, 2, words.length - 1);
        run(full);
      }
    } else run(args);
  }

  static void run(String[] args) throws Exception {
    switch (args[0]) {
      case "create" -> create(args);
      case "alter" -> alter(args);
      case "produce" -> produce(args);
      case "read" -> read(args[1], args[2], List.of(args).subList(3, args.length), true);
      case "latest" -> read(args[1], args[2], List.of(args).subList(3, args.length), false);
      default -> throw new IllegalArgumentException("unknown command " + args[0]);
    }
  }

  static Admin admin(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("request.timeout.ms", "30000");
    p.put("default.api.timeout.ms", "60000");
    return Admin.create(p);
  }

  static Map<String, String> kv(String[] args, int from) {
    Map<String, String> m = new HashMap<>();
    for (int i = from; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      m.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    return m;
  }

  static void create(String[] a) throws Exception {
    try (Admin admin = admin(a[1])) {
      NewTopic t = new NewTopic(a[2], Integer.parseInt(a[3]), (short) 1).configs(kv(a, 4));
      admin.createTopics(List.of(t)).all().get();
      System.out.println("created " + a[2]);
    }
  }

  static void alter(String[] a) throws Exception {
    try (Admin admin = admin(a[1])) {
      ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, a[2]);
      List<AlterConfigOp> ops = new ArrayList<>();
      kv(a, 3).forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
      admin.incrementalAlterConfigs(Map.of(r, ops)).all().get();
      System.out.println("altered " + a[2]);
    }
  }

  static byte[] bytes(Random r, int max) {
    byte[] b = new byte[r.nextInt(max + 1)];
    // Half text-like (compresses), half random (does not): both shapes reach the codecs.
    if (r.nextBoolean()) for (int i = 0; i < b.length; i++) b[i] = (byte) ('a' + r.nextInt(6));
    else r.nextBytes(b);
    return b;
  }

  static void produce(String[] a) throws Exception {
    String bootstrap = a[1], topic = a[2], mode = a[3];
    int count = Integer.parseInt(a[4]);
    Random r = new Random(Long.parseLong(a[5]));
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    p.put("acks", "all");
    p.put("enable.idempotence", "false");
    p.put("max.in.flight.requests.per.connection", "1");
    p.put("linger.ms", "5");
    p.put("batch.size", "4096");
    p.putAll(kv(a, 6));
    if (mode.equals("txn")) p.put("transactional.id", "oracle-" + topic);
    int partitions;
    long acked = 0;
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      partitions = producer.partitionsFor(topic).size();
      if (mode.equals("txn")) producer.initTransactions();
      List<Future<RecordMetadata>> pending = new ArrayList<>();
      int i = 0;
      while (i < count) {
        // Bursts of 1..40 records end with a flush: batches of one record and batches of many.
        int burst = 1 + r.nextInt(40);
        boolean abort = mode.equals("txn") && r.nextInt(4) == 0;
        if (mode.equals("txn")) producer.beginTransaction();
        for (int j = 0; j < burst && i < count; j++, i++) {
          int partition = r.nextInt(partitions);
          byte[] key;
          byte[] value;
          if (mode.equals("compact")) {
            key = ("key-" + r.nextInt(60)).getBytes(StandardCharsets.UTF_8);
            value = r.nextInt(25) == 0 ? null : ("v" + i + "-").concat(new String(bytes(r, 80), StandardCharsets.ISO_8859_1)).getBytes(StandardCharsets.ISO_8859_1);
            partition = Math.abs(new String(key, StandardCharsets.UTF_8).hashCode()) % partitions;
          } else {
            key = r.nextInt(5) == 0 ? null : bytes(r, 24);
            value = r.nextInt(17) == 0 ? null : bytes(r, 300);
          }
          // Mostly increasing, sometimes earlier than the one before (the time index keeps the max).
          Long ts = BASE_TS + i * 1000L + (r.nextInt(8) == 0 ? -r.nextInt(60_000) : r.nextInt(900));
          List<Header> headers = new ArrayList<>();
          if (mode.equals("headers") || mode.equals("txn")) {
            int n = r.nextInt(4);
            for (int h = 0; h < n; h++) headers.add(new RecordHeader("h" + r.nextInt(5), r.nextInt(6) == 0 ? null : bytes(r, 20)));
          }
          pending.add(producer.send(new ProducerRecord<>(topic, partition, ts, key, value, headers)));
        }
        if (mode.equals("txn")) {
          // Flushed first, so an aborted transaction's records are in the log (read_uncommitted
          // serves them, read_committed must not): an abort before sending would drop them unsent.
          producer.flush();
          if (abort) producer.abortTransaction();
          else producer.commitTransaction();
        } else producer.flush();
        for (Future<RecordMetadata> f : pending) {
          try {
            f.get();
            acked++;
          } catch (ExecutionException e) {
            if (!abort) throw e;
          }
        }
        pending.clear();
      }
    }
    System.out.println("produced " + topic + " " + acked);
  }

  static String b64(byte[] b) {
    return b == null ? "null" : "\"" + Base64.getEncoder().encodeToString(b) + "\"";
  }

  static String tpName(TopicPartition tp) {
    return "\"" + tp.topic() + "-" + tp.partition() + "\"";
  }

  static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String isolation) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("enable.auto.commit", "false");
    p.put("auto.offset.reset", "earliest");
    p.put("isolation.level", isolation);
    p.put("check.crcs", "true");
    p.put("default.api.timeout.ms", "120000");
    p.put("request.timeout.ms", "30000");
    return new KafkaConsumer<>(p);
  }

  static void read(String bootstrap, String out, List<String> topics, boolean full) throws IOException {
    try (BufferedWriter w = new BufferedWriter(new FileWriter(out, StandardCharsets.UTF_8))) {
      List<Long> samples = new ArrayList<>();
      for (String iso : full ? List.of("read_uncommitted", "read_committed") : List.of("read_uncommitted")) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap, iso)) {
          List<TopicPartition> tps = new ArrayList<>();
          for (String t : topics) {
            List<PartitionInfo> infos = c.partitionsFor(t, Duration.ofSeconds(120));
            if (infos == null || infos.isEmpty()) throw new IllegalStateException("no partitions for " + t);
            for (PartitionInfo pi : infos) tps.add(new TopicPartition(t, pi.partition()));
          }
          tps.sort((x, y) -> x.toString().compareTo(y.toString()));
          c.assign(tps);
          c.seekToBeginning(tps);
          Map<TopicPartition, Long> start = c.beginningOffsets(tps);
          Map<TopicPartition, Long> end = c.endOffsets(tps);
          for (TopicPartition tp : tps)
            w.write("{\"kind\":\"range\",\"iso\":\"" + iso + "\",\"tp\":" + tpName(tp) + ",\"start\":" + start.get(tp) + ",\"end\":" + end.get(tp) + "}\n");
          Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> got = new HashMap<>();
          long deadline = System.currentTimeMillis() + 180_000;
          while (true) {
            boolean done = true;
            for (TopicPartition tp : tps) if (c.position(tp) < end.get(tp)) done = false;
            if (done) break;
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("read did not reach the end offsets " + end);
            ConsumerRecords<byte[], byte[]> recs = c.poll(Duration.ofMillis(500));
            for (ConsumerRecord<byte[], byte[]> rec : recs)
              got.computeIfAbsent(new TopicPartition(rec.topic(), rec.partition()), k -> new ArrayList<>()).add(rec);
          }
          for (TopicPartition tp : tps) {
            for (ConsumerRecord<byte[], byte[]> rec : got.getOrDefault(tp, List.of())) {
              StringBuilder h = new StringBuilder("[");
              for (Header hd : rec.headers()) {
                if (h.length() > 1) h.append(',');
                h.append('[').append(b64(hd.key().getBytes(StandardCharsets.UTF_8))).append(',').append(b64(hd.value())).append(']');
              }
              h.append(']');
              w.write("{\"kind\":\"rec\",\"iso\":\"" + iso + "\",\"tp\":" + tpName(tp) + ",\"o\":" + rec.offset() + ",\"ts\":" + rec.timestamp()
                  + ",\"tt\":\"" + rec.timestampType().name + "\",\"k\":" + b64(rec.key()) + ",\"v\":" + b64(rec.value())
                  + ",\"h\":" + h + ",\"le\":" + rec.leaderEpoch().orElse(-1) + "}\n");
              if (full && iso.equals("read_uncommitted") && rec.offset() % 53 == 0) {
                samples.add(rec.timestamp());
                samples.add(rec.timestamp() + 1);
              }
            }
          }
          if (full && iso.equals("read_uncommitted")) {
            samples.add(0L);
            samples.add(BASE_TS);
            samples.add(Long.MAX_VALUE / 2);
            for (long ts : samples) {
              if (ts < 0) continue;
              Map<TopicPartition, Long> q = new HashMap<>();
              for (TopicPartition tp : tps) q.put(tp, ts);
              Map<TopicPartition, OffsetAndTimestamp> res = c.offsetsForTimes(q);
              for (TopicPartition tp : tps) {
                OffsetAndTimestamp ot = res.get(tp);
                w.write("{\"kind\":\"oft\",\"tp\":" + tpName(tp) + ",\"ts\":" + ts + ",\"o\":" + (ot == null ? -1 : ot.offset())
                    + ",\"rts\":" + (ot == null ? -1 : ot.timestamp()) + "}\n");
              }
            }
          }
        }
      }
    }
    System.out.println("read " + out);
  }
}
