// The consumer of bench/live-broker.bench.mjs: reads a topic at its tail, as the consumers a
// broker serves in production do, and says how far behind it is.
//
//   create <bootstrap> <topic> <partitions> [config=value ...]   replication factor 1
//   tail <bootstrap> <topic>     from the end of every partition; every 500 ms prints
//       {"t":<epoch ms>,"lag":<records behind the end offsets>,"delayMs":<largest now - record
//       CreateTime of the records read since the last line, -1 when none>}
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class TailLag {
  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "create" -> create(args);
      case "tail" -> tail(args);
      default -> throw new IllegalArgumentException("unknown command " + args[0]);
    }
  }

  static void create(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[1]);
    Map<String, String> configs = new HashMap<>();
    for (int i = 4; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      configs.put(kv[0], kv[1]);
    }
    try (Admin admin = Admin.create(p)) {
      admin
          .createTopics(List.of(new NewTopic(args[2], Integer.parseInt(args[3]), (short) 1).configs(configs)))
          .all()
          .get();
    }
  }

  static void tail(String[] args) throws Exception {
    Properties c = new Properties();
    c.put("bootstrap.servers", args[1]);
    c.put("key.deserializer", ByteArrayDeserializer.class.getName());
    c.put("value.deserializer", ByteArrayDeserializer.class.getName());
    c.put("enable.auto.commit", "false");
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (PartitionInfo pi : consumer.partitionsFor(args[2]))
        tps.add(new TopicPartition(pi.topic(), pi.partition()));
      consumer.assign(tps);
      consumer.seekToEnd(tps);
      long next = System.currentTimeMillis() + 500;
      long delay = -1;
      for (;;) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100)))
          delay = Math.max(delay, System.currentTimeMillis() - r.timestamp());
        long now = System.currentTimeMillis();
        if (now < next) continue;
        next = now + 500;
        long lag = 0;
        Map<TopicPartition, Long> end = consumer.endOffsets(tps);
        for (TopicPartition tp : tps) lag += end.get(tp) - consumer.position(tp);
        System.out.println("{\"t\":" + now + ",\"lag\":" + lag + ",\"delayMs\":" + delay + "}");
        System.out.flush();
        delay = -1;
      }
    }
  }
}
