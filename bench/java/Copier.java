// What operators do without seglift (bench/mirror.bench.mjs): copy a topic through the broker with
// Kafka's own consumer and producer, as MirrorMaker does (same partition, key, value, headers and
// timestamp; offsets not kept), recompressing with the producer's compression.type.
//
//   create <bootstrap> <topic> [config=value ...]    one partition, replication factor 1
//   copy <bootstrap> <from> <to> <codec> [level]     prints {"records":n,"ms":t} when every
//       record up to the source's end offset is acknowledged (acks=all)
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class Copier {
  public static void main(String[] args) throws Exception {
    switch (args[0]) {
      case "create" -> create(args);
      case "copy" -> copy(args);
      default -> throw new IllegalArgumentException("unknown command " + args[0]);
    }
  }

  static void create(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[1]);
    Map<String, String> configs = new HashMap<>();
    for (int i = 3; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      configs.put(kv[0], kv[1]);
    }
    try (Admin admin = Admin.create(p)) {
      admin.createTopics(List.of(new NewTopic(args[2], 1, (short) 1).configs(configs))).all().get();
    }
  }

  static void copy(String[] args) throws Exception {
    String bootstrap = args[1];
    String from = args[2];
    String to = args[3];
    Properties c = new Properties();
    c.put("bootstrap.servers", bootstrap);
    c.put("key.deserializer", ByteArrayDeserializer.class.getName());
    c.put("value.deserializer", ByteArrayDeserializer.class.getName());
    c.put("enable.auto.commit", "false");
    c.put("max.partition.fetch.bytes", Integer.toString(8 << 20));
    c.put("fetch.max.bytes", Integer.toString(64 << 20));
    c.put("max.poll.records", "5000");
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    p.put("acks", "all");
    p.put("compression.type", args[4]);
    if (args.length > 5) p.put("compression." + args[4] + ".level", args[5]);
    // Batches as large as seglift's (1 MiB), given time to fill.
    p.put("batch.size", Integer.toString(1 << 20));
    p.put("linger.ms", "50");
    p.put("buffer.memory", Integer.toString(64 << 20));
    p.put("max.request.size", Integer.toString(8 << 20));
    long t = System.nanoTime();
    long n = 0;
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      TopicPartition tp = new TopicPartition(from, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long end = consumer.endOffsets(List.of(tp)).get(tp);
      while (consumer.position(tp) < end) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
          producer.send(
              new ProducerRecord<>(to, r.partition(), r.timestamp(), r.key(), r.value(), r.headers()),
              (md, e) -> {
                if (e != null) {
                  e.printStackTrace();
                  System.exit(3);
                }
              });
          n++;
        }
      }
      producer.flush();
    }
    System.out.println("{\"records\":" + n + ",\"ms\":" + (System.nanoTime() - t) / 1_000_000 + "}");
  }
}
