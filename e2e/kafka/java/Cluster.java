// The cluster scenario's Kafka side beside Oracle.java (cluster.test.ts): topics with a
// replication factor, leadership moved on purpose, the live traffic that runs through the rolling
// migration, and a dump of one replica's partition directories read with Kafka's own FileRecords.
//
//   create <bootstrap> <topic> <partitions> <replicas> [config=value ...]
//   lead <bootstrap> <nodeId> <topic> ...    every partition of the topics led by nodeId (its
//       replicas reordered so that it is the preferred leader, then a preferred election)
//   insync <bootstrap> <timeoutMs>            waits until every partition has ISR = replicas
//   traffic <bootstrap> <outDir> <stopFile> <topic> ...   see traffic() below
//   producers <bootstrap> <topic> ...        the producer ids each partition's leader knows
//   dump <out.jsonl> <partitionDir> ...      every record of every segment, as Kafka reads it
//   script <bootstrap> <file>                 as in Oracle.java

import java.io.BufferedWriter;
import java.io.File;
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Cluster {
  public static void main(String[] args) throws Exception {
    if (args[0].equals("script")) {
      for (String line : Files.readAllLines(Path.of(args[2]))) {
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

  static void run(String[] a) throws Exception {
    switch (a[0]) {
      case "create" -> create(a);
      case "lead" -> lead(a[1], Integer.parseInt(a[2]), List.of(a).subList(3, a.length));
      case "insync" -> insync(a[1], Long.parseLong(a[2]));
      case "traffic" -> traffic(a[1], a[2], a[3], List.of(a).subList(4, a.length));
      case "producers" -> producers(a[1], List.of(a).subList(2, a.length));
      case "dump" -> dump(a[1], List.of(a).subList(2, a.length));
      default -> throw new IllegalArgumentException("unknown command " + a[0]);
    }
  }

  static Admin admin(String bootstrap) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("request.timeout.ms", "30000");
    p.put("default.api.timeout.ms", "120000");
    return Admin.create(p);
  }

  static void create(String[] a) throws Exception {
    Map<String, String> configs = new HashMap<>();
    for (int i = 5; i < a.length; i++) {
      int eq = a[i].indexOf('=');
      configs.put(a[i].substring(0, eq), a[i].substring(eq + 1));
    }
    try (Admin admin = admin(a[1])) {
      NewTopic t = new NewTopic(a[2], Integer.parseInt(a[3]), Short.parseShort(a[4])).configs(configs);
      admin.createTopics(List.of(t)).all().get();
      System.out.println("created " + a[2]);
    }
  }

  static Map<TopicPartition, TopicPartitionInfo> partitions(Admin admin, List<String> topics) throws Exception {
    Map<TopicPartition, TopicPartitionInfo> out = new HashMap<>();
    java.util.Collection<String> names = topics.isEmpty() ? admin.listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true)).names().get() : topics;
    for (TopicDescription d : admin.describeTopics(names).allTopicNames().get().values())
      for (TopicPartitionInfo p : d.partitions()) out.put(new TopicPartition(d.name(), p.partition()), p);
    return out;
  }

  static void lead(String bootstrap, int node, List<String> topics) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      Map<TopicPartition, Optional<NewPartitionReassignment>> moves = new HashMap<>();
      for (var e : partitions(admin, topics).entrySet()) {
        List<Integer> replicas = new ArrayList<>();
        replicas.add(node);
        for (Node n : e.getValue().replicas()) if (n.id() != node) replicas.add(n.id());
        moves.put(e.getKey(), Optional.of(new NewPartitionReassignment(replicas)));
      }
      // The same replica set in another order: no data moves, only the preferred leader changes.
      admin.alterPartitionReassignments(moves).all().get();
      long deadline = System.currentTimeMillis() + 120_000;
      while (!admin.listPartitionReassignments(moves.keySet()).reassignments().get().isEmpty()) {
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("reassignment did not finish");
        Thread.sleep(200);
      }
      while (true) {
        try {
          admin.electLeaders(ElectionType.PREFERRED, moves.keySet()).all().get();
        } catch (Exception e) {
          // ElectionNotNeeded for partitions already led by node; the check below decides.
        }
        Set<TopicPartition> others = new TreeSet<>((x, y) -> x.toString().compareTo(y.toString()));
        for (var e : partitions(admin, topics).entrySet())
          if (e.getValue().leader() == null || e.getValue().leader().id() != node) others.add(e.getKey());
        if (others.isEmpty()) break;
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("not led by " + node + ": " + others);
        Thread.sleep(500);
      }
      System.out.println("led " + moves.size() + " by " + node);
    }
  }

  static void insync(String bootstrap, long timeoutMs) throws Exception {
    long deadline = System.currentTimeMillis() + timeoutMs;
    try (Admin admin = admin(bootstrap)) {
      while (true) {
        List<String> behind = new ArrayList<>();
        for (var e : partitions(admin, List.of()).entrySet())
          if (e.getValue().isr().size() != e.getValue().replicas().size() || e.getValue().leader() == null)
            behind.add(e.getKey().toString());
        if (behind.isEmpty()) break;
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("not in sync: " + behind);
        Thread.sleep(500);
      }
    }
    System.out.println("insync");
  }

  static void producers(String bootstrap, List<String> topics) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      DescribeProducersResult r = admin.describeProducers(partitions(admin, topics).keySet());
      for (var e : r.all().get().entrySet()) {
        TreeSet<Long> ids = new TreeSet<>();
        for (ProducerState s : e.getValue().activeProducers()) ids.add(s.producerId());
        System.out.println("producers " + e.getKey() + " " + ids);
      }
    }
  }

  /**
   * The live traffic: one idempotent producer (acks=all) writing numbered records round-robin over
   * the partitions of the topics, value `<producer>:<seq>` (the producer is named by the run, its
   * Kafka producer id is read afterwards with `producers`), and two read_committed consumers in one
   * group. Lines, each with the wall clock in ms: acked.txt `ack <ms> <topic-p> <offset> <seq>`,
   * `fail <ms> <seq> <exception>`; consumed.txt `rec <ms> <consumer> <topic-p> <offset> <value>`.
   * Runs until stopFile exists, then closes the producer and lets the consumers read to the end.
   */
  static void traffic(String bootstrap, String outDir, String stopFile, List<String> topics) throws Exception {
    AtomicBoolean stop = new AtomicBoolean(false);
    AtomicBoolean produced = new AtomicBoolean(false);
    Map<TopicPartition, Long> endOffsets = new ConcurrentHashMap<>();
    Map<TopicPartition, Long> next = new ConcurrentHashMap<>();
    PrintWriter acked = new PrintWriter(new BufferedWriter(new FileWriter(outDir + "/acked.txt", StandardCharsets.UTF_8)));
    PrintWriter consumed = new PrintWriter(new BufferedWriter(new FileWriter(outDir + "/consumed.txt", StandardCharsets.UTF_8)));
    List<Thread> consumers = new ArrayList<>();
    AtomicLong errors = new AtomicLong();
    for (int c = 0; c < 2; c++) {
      final int id = c;
      Thread t = new Thread(() -> {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", "cluster-live");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("isolation.level", "read_committed");
        p.put("check.crcs", "true");
        p.put("default.api.timeout.ms", "120000");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
          consumer.subscribe(topics);
          while (true) {
            if (produced.get() && !endOffsets.isEmpty()) {
              boolean done = true;
              for (var e : endOffsets.entrySet()) if (next.getOrDefault(e.getKey(), 0L) < e.getValue()) done = false;
              if (done) break;
            }
            try {
              ConsumerRecords<byte[], byte[]> recs = consumer.poll(Duration.ofMillis(300));
              long now = System.currentTimeMillis();
              synchronized (consumed) {
                for (ConsumerRecord<byte[], byte[]> r : recs) {
                  TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                  consumed.println("rec " + now + " " + id + " " + tp + " " + r.offset() + " " + new String(r.value(), StandardCharsets.UTF_8));
                  next.merge(tp, r.offset() + 1, Math::max);
                }
                consumed.flush();
              }
              if (!recs.isEmpty()) consumer.commitSync();
            } catch (Exception e) {
              // Leader moves and rebalances: commits may fail and be retried by the next poll.
              errors.incrementAndGet();
              synchronized (consumed) {
                consumed.println("error " + System.currentTimeMillis() + " " + id + " " + e.toString().replace('\n', ' '));
              }
            }
          }
        }
      });
      t.start();
      consumers.add(t);
    }

    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    p.put("acks", "all");
    p.put("enable.idempotence", "true");
    p.put("max.in.flight.requests.per.connection", "5");
    p.put("compression.type", "zstd");
    p.put("linger.ms", "20");
    p.put("delivery.timeout.ms", "600000");
    p.put("request.timeout.ms", "15000");
    String name = "live-" + Long.toHexString(System.nanoTime());
    List<TopicPartition> tps = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      for (String t : topics)
        for (var info : producer.partitionsFor(t)) tps.add(new TopicPartition(t, info.partition()));
      tps.sort((x, y) -> x.toString().compareTo(y.toString()));
      long seq = 0;
      while (!new File(stopFile).exists()) {
        // ~120 records/s: a steady stream that two cores carry beside three brokers.
        for (int i = 0; i < 6; i++, seq++) {
          TopicPartition tp = tps.get((int) (seq % tps.size()));
          final long s = seq;
          byte[] value = (name + ":" + s).getBytes(StandardCharsets.UTF_8);
          producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), ("k" + s).getBytes(StandardCharsets.UTF_8), value), (md, e) -> {
            synchronized (acked) {
              if (e == null) acked.println("ack " + System.currentTimeMillis() + " " + tp + " " + md.offset() + " " + s);
              else acked.println("fail " + System.currentTimeMillis() + " " + s + " " + e.toString().replace('\n', ' '));
            }
          });
        }
        synchronized (acked) {
          acked.flush();
        }
        Thread.sleep(50);
      }
      producer.flush();
    }
    synchronized (acked) {
      acked.flush();
    }
    // The consumers stop at the end offsets (no transactions here: the LSO is the high watermark).
    Properties cp = new Properties();
    cp.put("bootstrap.servers", bootstrap);
    cp.put("key.deserializer", ByteArrayDeserializer.class.getName());
    cp.put("value.deserializer", ByteArrayDeserializer.class.getName());
    cp.put("isolation.level", "read_committed");
    cp.put("default.api.timeout.ms", "120000");
    try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
      endOffsets.putAll(c.endOffsets(tps));
    }
    produced.set(true);
    for (Thread t : consumers) t.join(180_000);
    boolean alive = consumers.stream().anyMatch(Thread::isAlive);
    synchronized (consumed) {
      consumed.flush();
    }
    acked.close();
    consumed.close();
    System.out.println("traffic " + name + " ends " + endOffsets + " consumerErrors " + errors.get());
    if (alive) {
      System.out.println("consumers did not reach the end offsets");
      System.exit(1);
    }
    System.exit(0);
  }

  static String b64(ByteBuffer b) {
    if (b == null) return "null";
    byte[] x = new byte[b.remaining()];
    b.duplicate().get(x);
    return "\"" + Base64.getEncoder().encodeToString(x) + "\"";
  }

  static String b64(byte[] b) {
    return b == null ? "null" : "\"" + Base64.getEncoder().encodeToString(b) + "\"";
  }

  /**
   * Each partition directory's segments in offset order, read with Kafka's FileRecords: a `seg`
   * line per segment (magics and codecs of its batches, control batches apart) and a `rec` line per
   * record with what its batch says of it.
   */
  static void dump(String out, List<String> dirs) throws IOException {
    try (BufferedWriter w = new BufferedWriter(new FileWriter(out, StandardCharsets.UTF_8))) {
      for (String dir : dirs) {
        String tp = new File(dir).getName();
        File[] logs = new File(dir).listFiles((d, n) -> n.endsWith(".log"));
        Arrays.sort(logs);
        for (int i = 0; i < logs.length; i++) {
          Set<String> magics = new TreeSet<>();
          Set<String> codecs = new TreeSet<>();
          int batches = 0;
          try (FileRecords fr = FileRecords.open(logs[i], false)) {
            for (RecordBatch b : fr.batches()) {
              batches++;
              magics.add(String.valueOf(b.magic()));
              if (!b.isControlBatch()) codecs.add(b.compressionType().name);
              for (Record r : b) {
                StringBuilder h = new StringBuilder("[");
                for (Header hd : r.headers()) {
                  if (h.length() > 1) h.append(',');
                  h.append('[').append(b64(hd.key().getBytes(StandardCharsets.UTF_8))).append(',').append(b64(hd.value())).append(']');
                }
                h.append(']');
                w.write("{\"kind\":\"rec\",\"tp\":\"" + tp + "\",\"o\":" + r.offset() + ",\"ts\":" + r.timestamp() + ",\"tt\":\"" + b.timestampType().name
                    + "\",\"k\":" + b64(r.key()) + ",\"v\":" + b64(r.value()) + ",\"h\":" + h + ",\"le\":" + b.partitionLeaderEpoch()
                    + ",\"pid\":" + b.producerId() + ",\"seq\":" + (b.magic() >= 2 ? r.sequence() : -1) + ",\"txn\":" + b.isTransactional()
                    + ",\"ctl\":" + b.isControlBatch() + "}\n");
              }
            }
          }
          w.write("{\"kind\":\"seg\",\"tp\":\"" + tp + "\",\"file\":\"" + logs[i].getName() + "\",\"active\":" + (i == logs.length - 1)
              + ",\"batches\":" + batches + ",\"magics\":\"" + String.join(",", magics) + "\",\"codecs\":\"" + String.join(",", codecs) + "\"}\n");
        }
      }
    }
    System.out.println("dumped " + dirs.size());
  }
}
