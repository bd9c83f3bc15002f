import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka's own KafkaProducer/KafkaConsumer (kafka-clients 4.3.0) against `mirrorlog serve`: one
 * scenario per run, chosen by the first argument. Every check throws on failure (non-zero exit
 * with the message); the last line of a passing run starts with "ok".
 *
 * <pre>
 *   codecs BOOTSTRAP                      idempotent producer in every codec; assign + subscribe
 *   offsets BOOTSTRAP                     acks=0/1, offsetsForTimes, beginning/endOffsets, seek
 *   txn BOOTSTRAP                         commit/abort, LSO, read_committed/uncommitted
 *   ctp BOOTSTRAP                         consume-transform-produce (sendOffsetsToTransaction)
 *   protocol BOOTSTRAP default|classic|consumer   what a group consumer does with that protocol
 *   group_phase1 BOOTSTRAP TOPIC GROUP    two members, one leaves, commitSync; prints offsets
 *   group_phase2 BOOTSTRAP TOPIC GROUP P0 P1 P2   after a restart: resume from those offsets
 *   produce_acked BOOTSTRAP TOPIC N OUTFILE       idempotent producer, acked offsets to OUTFILE
 *   consume_check BOOTSTRAP TOPIC ACKFILE         every acked record at its offset, no duplicate
 * </pre>
 */
public final class ProducerConsumerScenarios {
  /** Hang guard for every wait below; never a pass/fail timing. */
  static final long DEADLINE_MS = 60_000;

  static final long T0 = 1_700_000_000_000L;

  public static void main(String[] args) throws Exception {
    // Before any Kafka class asks for a logger: the client's own warnings and errors (protocol
    // errors, retries, fencing) are the first thing to read when a scenario fails.
    System.setProperty("slf4j.provider", ClientLog.class.getName());
    String bs = args[1];
    switch (args[0]) {
      case "codecs" -> codecs(bs);
      case "offsets" -> offsets(bs);
      case "txn" -> txn(bs);
      case "ctp" -> consumeTransformProduce(bs);
      case "protocol" -> protocol(bs, args[2]);
      case "group_phase1" -> groupPhase1(bs, args[2], args[3]);
      case "group_phase2" -> groupPhase2(bs, args[2], args[3], Arrays.copyOfRange(args, 4, args.length));
      case "produce_acked" -> produceAcked(bs, args[2], Integer.parseInt(args[3]), Path.of(args[4]));
      case "consume_check" -> consumeCheck(bs, args[2], Path.of(args[3]));
      default -> throw new IllegalArgumentException("unknown scenario " + args[0]);
    }
    System.out.println("client log: " + ClientLog.WARNINGS.get() + " warnings, "
        + ClientLog.ERRORS.get() + " errors");
    // Client threads left behind must not keep the JVM alive.
    System.exit(0);
  }

  /**
   * A minimal SLF4J 2 provider (the jars hold no logging backend): the client's WARN and ERROR
   * lines (and INFO with -Dclient.log=info) to stderr, counted.
   */
  public static final class ClientLog implements org.slf4j.spi.SLF4JServiceProvider {
    static final java.util.concurrent.atomic.AtomicInteger WARNINGS = new java.util.concurrent.atomic.AtomicInteger();
    static final java.util.concurrent.atomic.AtomicInteger ERRORS = new java.util.concurrent.atomic.AtomicInteger();
    static final boolean INFO = "info".equals(System.getProperty("client.log"));

    @Override
    public org.slf4j.ILoggerFactory getLoggerFactory() {
      return Logger::new;
    }

    @Override
    public org.slf4j.IMarkerFactory getMarkerFactory() {
      return new org.slf4j.helpers.BasicMarkerFactory();
    }

    @Override
    public org.slf4j.spi.MDCAdapter getMDCAdapter() {
      return new org.slf4j.helpers.NOPMDCAdapter();
    }

    @Override
    public String getRequestedApiVersion() {
      return "2.0.99";
    }

    @Override
    public void initialize() {}

    static final class Logger extends org.slf4j.helpers.LegacyAbstractLogger {
      Logger(String name) {
        this.name = name;
      }

      @Override
      public boolean isTraceEnabled() {
        return false;
      }

      @Override
      public boolean isDebugEnabled() {
        return false;
      }

      @Override
      public boolean isInfoEnabled() {
        return INFO;
      }

      @Override
      public boolean isWarnEnabled() {
        return true;
      }

      @Override
      public boolean isErrorEnabled() {
        return true;
      }

      @Override
      protected String getFullyQualifiedCallerName() {
        return null;
      }

      @Override
      protected void handleNormalizedLoggingCall(org.slf4j.event.Level level, org.slf4j.Marker marker,
          String msg, Object[] args, Throwable t) {
        if (level == org.slf4j.event.Level.WARN) {
          WARNINGS.incrementAndGet();
        } else if (level == org.slf4j.event.Level.ERROR) {
          ERRORS.incrementAndGet();
        }
        String text = org.slf4j.helpers.MessageFormatter.basicArrayFormat(msg, args);
        System.err.println("[client " + level + " " + name.substring(name.lastIndexOf('.') + 1)
            + "] " + text + (t == null ? "" : " (" + t + ")"));
      }
    }
  }

  static void check(boolean ok, String what) {
    if (!ok) {
      throw new AssertionError("FAIL: " + what);
    }
  }

  static Properties base(String bs) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bs);
    return p;
  }

  static KafkaProducer<byte[], byte[]> producer(String bs, Map<String, String> extra) {
    Properties p = base(bs);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.putAll(extra);
    return new KafkaProducer<>(p);
  }

  static KafkaConsumer<byte[], byte[]> consumer(String bs, Map<String, String> extra) {
    Properties p = base(bs);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.putAll(extra);
    return new KafkaConsumer<>(p);
  }

  static void createTopic(String bs, String name, int partitions) throws Exception {
    Properties p = base(bs);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
    try (Admin admin = Admin.create(p)) {
      admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all()
          .get(DEADLINE_MS, TimeUnit.MILLISECONDS);
    }
  }

  static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  /** Polls until `n` records arrived (more is an error only for the caller to judge). */
  static List<ConsumerRecord<byte[], byte[]>> pollN(KafkaConsumer<byte[], byte[]> c, int n) {
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (out.size() < n) {
      check(System.currentTimeMillis() < deadline,
          "hang guard: " + out.size() + " of " + n + " records after " + DEADLINE_MS + " ms");
      for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
        out.add(r);
      }
    }
    return out;
  }

  /** Polls until the position of `tp` reaches `end`; returns what came. */
  static List<ConsumerRecord<byte[], byte[]>> pollTo(
      KafkaConsumer<byte[], byte[]> c, TopicPartition tp, long end) {
    List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (c.position(tp) < end) {
      check(System.currentTimeMillis() < deadline,
          "hang guard: position " + c.position(tp) + " of " + end);
      for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
        out.add(r);
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- scenario 1: codecs

  /** One record to send and to expect back. */
  record Sent(byte[] key, byte[] value, long timestamp, List<Header> headers) {}

  static List<Sent> records(String codec, int n) {
    java.util.Random rnd = new java.util.Random(codec.hashCode());
    List<Sent> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] key = switch (i % 7) {
        case 0 -> null;
        case 1 -> new byte[0];
        default -> (codec + "-k" + i).getBytes(StandardCharsets.UTF_8);
      };
      byte[] value;
      if (i % 11 == 3) {
        value = null; // tombstone
      } else if (i % 5 == 0) {
        value = new byte[rnd.nextInt(3000)];
        rnd.nextBytes(value);
      } else {
        value = ("value " + i + " " + codec + " ünïcödé ✓ " + "x".repeat(i % 50))
            .getBytes(StandardCharsets.UTF_8);
      }
      // Out of order on purpose: a batch's max timestamp is not its last record's.
      long ts = T0 + i * 10L + ((i % 4 == 2) ? -25 : 0);
      List<Header> headers = new ArrayList<>();
      if (i % 3 != 0) {
        headers.add(new RecordHeader("h1", ("hv" + i).getBytes(StandardCharsets.UTF_8)));
        headers.add(new RecordHeader("null-value", null));
        headers.add(new RecordHeader("h1", new byte[] {0, (byte) 0xff, (byte) i}));
      }
      out.add(new Sent(key, value, ts, headers));
    }
    return out;
  }

  static void compare(String what, List<Sent> sent, List<ConsumerRecord<byte[], byte[]>> got,
      long firstOffset) {
    check(got.size() == sent.size(), what + ": " + got.size() + " records, sent " + sent.size());
    for (int i = 0; i < sent.size(); i++) {
      Sent s = sent.get(i);
      ConsumerRecord<byte[], byte[]> r = got.get(i);
      String at = what + " record " + i;
      check(r.offset() == firstOffset + i, at + ": offset " + r.offset());
      check(Arrays.equals(s.key(), r.key()), at + ": key");
      check(Arrays.equals(s.value(), r.value()), at + ": value");
      check(r.timestamp() == s.timestamp(), at + ": timestamp " + r.timestamp() + " != " + s.timestamp());
      check(r.timestampType() == org.apache.kafka.common.record.TimestampType.CREATE_TIME,
          at + ": timestamp type " + r.timestampType());
      Header[] hs = r.headers().toArray();
      check(hs.length == s.headers().size(), at + ": " + hs.length + " headers");
      for (int h = 0; h < hs.length; h++) {
        check(hs[h].key().equals(s.headers().get(h).key()), at + ": header key " + h);
        check(Arrays.equals(hs[h].value(), s.headers().get(h).value()), at + ": header value " + h);
      }
      check(r.leaderEpoch().isPresent(), at + ": no leader epoch");
    }
  }

  static void codecs(String bs) throws Exception {
    for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
      String topic = unique("codec-" + codec);
      createTopic(bs, topic, 1);
      TopicPartition tp = new TopicPartition(topic, 0);
      List<Sent> sent = records(codec, 300);
      List<Future<RecordMetadata>> acks = new ArrayList<>();
      try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of(
          "enable.idempotence", "true", "acks", "all", "compression.type", codec,
          "linger.ms", "20", "batch.size", "16384"))) {
        for (Sent s : sent) {
          acks.add(p.send(new ProducerRecord<>(topic, 0, s.timestamp(), s.key(), s.value(), s.headers())));
        }
        p.flush();
      }
      for (int i = 0; i < acks.size(); i++) {
        RecordMetadata m = acks.get(i).get();
        check(m.offset() == i, codec + ": record " + i + " acked at offset " + m.offset());
        check(m.timestamp() == sent.get(i).timestamp(), codec + ": acked timestamp of " + i);
      }
      try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of())) {
        c.assign(List.of(tp));
        c.seekToBeginning(List.of(tp));
        compare(codec + " assign", sent, pollTo(c, tp, sent.size()), 0);
      }
      try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of(
          "group.id", unique("codec-" + codec), "group.protocol", "classic"))) {
        c.subscribe(List.of(topic));
        compare(codec + " subscribe", sent, pollN(c, sent.size()), 0);
        c.commitSync();
        check(c.committed(Set.of(tp)).get(tp).offset() == sent.size(), codec + ": committed");
      }
      System.out.println("codec " + codec + " " + topic + " " + sent.size());
    }
    System.out.println("ok codecs");
  }

  // ---------------------------------------------------------------- scenario 4: offsets, acks

  static void offsets(String bs) throws Exception {
    String topic = unique("offsets");
    createTopic(bs, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    // acks=1, one record per batch (each send waited for), timestamps T0, T0+10, ...
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of(
        "acks", "1", "enable.idempotence", "false", "linger.ms", "0"))) {
      for (int i = 0; i < 50; i++) {
        RecordMetadata m = p.send(new ProducerRecord<>(topic, 0, T0 + i * 10L, null,
            ("a1-" + i).getBytes(StandardCharsets.UTF_8))).get();
        check(m.offset() == i, "acks=1: record " + i + " at " + m.offset());
      }
    }
    // acks=0: no offsets come back; the records must still land, in order.
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of(
        "acks", "0", "enable.idempotence", "false", "linger.ms", "5"))) {
      for (int i = 50; i < 70; i++) {
        RecordMetadata m = p.send(new ProducerRecord<>(topic, 0, T0 + i * 10L, null,
            ("a0-" + i).getBytes(StandardCharsets.UTF_8))).get();
        check(m.offset() == -1, "acks=0: offset " + m.offset());
      }
      p.flush();
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of())) {
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (c.endOffsets(List.of(tp)).get(tp) < 70) {
        check(System.currentTimeMillis() < deadline, "hang guard: acks=0 records never landed");
        Thread.sleep(50);
      }
      check(c.endOffsets(List.of(tp)).get(tp) == 70, "endOffsets");
      check(c.beginningOffsets(List.of(tp)).get(tp) == 0, "beginningOffsets");
      Map<TopicPartition, OffsetAndTimestamp> at = c.offsetsForTimes(Map.of(tp, T0 + 105));
      check(at.get(tp).offset() == 11 && at.get(tp).timestamp() == T0 + 110,
          "offsetsForTimes(T0+105) = " + at.get(tp));
      check(at.get(tp).leaderEpoch().isPresent(), "offsetsForTimes leader epoch");
      at = c.offsetsForTimes(Map.of(tp, T0));
      check(at.get(tp).offset() == 0, "offsetsForTimes(T0) = " + at.get(tp));
      at = c.offsetsForTimes(Map.of(tp, T0 + 655));
      check(at.get(tp).offset() == 66, "offsetsForTimes(T0+655) = " + at.get(tp));
      at = c.offsetsForTimes(Map.of(tp, T0 + 100_000));
      check(at.get(tp) == null, "offsetsForTimes past the end = " + at.get(tp));

      c.assign(List.of(tp));
      c.seek(tp, 25);
      List<ConsumerRecord<byte[], byte[]>> got = pollTo(c, tp, 70);
      check(got.size() == 45 && got.get(0).offset() == 25, "seek(25): " + got.size());
      for (int i = 0; i < got.size(); i++) {
        int n = 25 + i;
        String want = (n < 50 ? "a1-" : "a0-") + n;
        check(new String(got.get(i).value(), StandardCharsets.UTF_8).equals(want)
            && got.get(i).offset() == n && got.get(i).timestamp() == T0 + n * 10L,
            "record at " + n);
      }
      c.seekToBeginning(List.of(tp));
      check(c.position(tp) == 0, "seekToBeginning position");
      c.seekToEnd(List.of(tp));
      check(c.position(tp) == 70, "seekToEnd position");
      c.seek(tp, 3);
      check(new String(pollN(c, 1).get(0).value(), StandardCharsets.UTF_8).equals("a1-3"),
          "seek(3)");
    }
    System.out.println("ok offsets");
  }

  // ---------------------------------------------------------------- scenario 3: transactions

  static List<String> values(List<ConsumerRecord<byte[], byte[]>> rs) {
    List<String> out = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : rs) {
      out.add(new String(r.value(), StandardCharsets.UTF_8));
    }
    return out;
  }

  static List<String> readAll(String bs, TopicPartition tp, String isolation) {
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("isolation.level", isolation))) {
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      long end = c.endOffsets(List.of(tp)).get(tp);
      return values(pollTo(c, tp, end));
    }
  }

  static void txn(String bs) throws Exception {
    String topic = unique("txn");
    createTopic(bs, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    List<String> committed = new ArrayList<>();
    List<String> all = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of(
        "transactional.id", unique("tx"), "acks", "all", "linger.ms", "5"))) {
      p.initTransactions();
      int n = 0;
      for (String outcome : List.of("commit", "abort", "commit", "abort", "commit")) {
        p.beginTransaction();
        for (int i = 0; i < 6; i++, n++) {
          String v = outcome + "-" + n;
          p.send(new ProducerRecord<>(topic, 0, null, v.getBytes(StandardCharsets.UTF_8)));
          all.add(v);
          if (outcome.equals("commit")) {
            committed.add(v);
          }
        }
        // Sent before the abort: abortTransaction drops batches still in the accumulator.
        p.flush();
        if (outcome.equals("commit")) {
          p.commitTransaction();
        } else {
          p.abortTransaction();
        }
      }
      check(readAll(bs, tp, "read_committed").equals(committed),
          "read_committed: " + readAll(bs, tp, "read_committed"));
      check(readAll(bs, tp, "read_uncommitted").equals(all),
          "read_uncommitted: " + readAll(bs, tp, "read_uncommitted"));

      // An open transaction holds the LSO at its first offset; read_committed stops there.
      try (KafkaConsumer<byte[], byte[]> rc = consumer(bs, Map.of("isolation.level", "read_committed"));
          KafkaConsumer<byte[], byte[]> ru = consumer(bs, Map.of("isolation.level", "read_uncommitted"))) {
        long hwBefore = ru.endOffsets(List.of(tp)).get(tp);
        check(rc.endOffsets(List.of(tp)).get(tp) == hwBefore, "LSO = HW with no open transaction");
        p.beginTransaction();
        for (int i = 0; i < 4; i++) {
          p.send(new ProducerRecord<>(topic, 0, null, ("open-" + i).getBytes(StandardCharsets.UTF_8)));
        }
        p.flush();
        long hw = ru.endOffsets(List.of(tp)).get(tp);
        long lso = rc.endOffsets(List.of(tp)).get(tp);
        check(hw == hwBefore + 4, "HW with the open transaction: " + hw + " (before " + hwBefore + ")");
        check(lso == hwBefore, "LSO with the open transaction: " + lso + ", want " + hwBefore);
        rc.assign(List.of(tp));
        rc.seekToBeginning(List.of(tp));
        check(values(pollTo(rc, tp, lso)).equals(committed), "read_committed below the LSO");
        check(rc.poll(Duration.ofMillis(300)).isEmpty(), "read_committed past the LSO");
        check(rc.position(tp) == lso, "read_committed position " + rc.position(tp));
        p.commitTransaction();
        long end = ru.endOffsets(List.of(tp)).get(tp);
        check(end == hw + 1, "HW after the commit marker: " + end);
        check(rc.endOffsets(List.of(tp)).get(tp) == end, "LSO = HW after the commit");
        List<String> rest = values(pollTo(rc, tp, end));
        check(rest.equals(List.of("open-0", "open-1", "open-2", "open-3")), "after commit: " + rest);
      }
    }
    System.out.println("ok txn " + committed.size() + " committed of " + all.size());
  }

  static void consumeTransformProduce(String bs) throws Exception {
    String in = unique("ctp-in");
    String out = unique("ctp-out");
    String group = unique("ctp-group");
    createTopic(bs, in, 2);
    createTopic(bs, out, 1);
    int n = 60;
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("acks", "all"))) {
      for (int i = 0; i < n; i++) {
        p.send(new ProducerRecord<>(in, i % 2, null, ("in-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      p.flush();
    }
    Set<String> expected = new HashSet<>();
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of(
            "transactional.id", unique("ctp-tx"), "acks", "all"));
        KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of(
            "group.id", group, "group.protocol", "classic", "isolation.level", "read_committed",
            "max.poll.records", "7"))) {
      p.initTransactions();
      c.subscribe(List.of(in));
      int seen = 0;
      int round = 0;
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (seen < n) {
        check(System.currentTimeMillis() < deadline, "hang guard: consumed " + seen);
        ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(200));
        if (rs.isEmpty()) {
          continue;
        }
        boolean abort = round++ == 1;
        p.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : rs) {
          String v = new String(r.value(), StandardCharsets.UTF_8).replace("in-", "out-");
          p.send(new ProducerRecord<>(out, 0, null, (abort ? "aborted-" + v : v).getBytes(StandardCharsets.UTF_8)));
          offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        p.sendOffsetsToTransaction(offsets, c.groupMetadata());
        if (abort) {
          p.flush();
          p.abortTransaction();
          // Back to the last committed offsets: the aborted round is read again.
          Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
          for (TopicPartition tp : c.assignment()) {
            OffsetAndMetadata o = committed.get(tp);
            if (o == null) {
              c.seekToBeginning(List.of(tp));
            } else {
              c.seek(tp, o.offset());
            }
          }
          continue;
        }
        p.commitTransaction();
        for (ConsumerRecord<byte[], byte[]> r : rs) {
          expected.add(new String(r.value(), StandardCharsets.UTF_8).replace("in-", "out-"));
        }
        seen += rs.count();
      }
      check(round > 2, "rounds: " + round);
      Set<TopicPartition> parts = Set.of(new TopicPartition(in, 0), new TopicPartition(in, 1));
      Map<TopicPartition, OffsetAndMetadata> committed = c.committed(parts);
      for (TopicPartition tp : parts) {
        check(committed.get(tp) != null && committed.get(tp).offset() == n / 2,
            "committed " + tp + " = " + committed.get(tp));
      }
    }
    List<String> got = readAll(bs, new TopicPartition(out, 0), "read_committed");
    check(got.size() == n && new HashSet<>(got).equals(expected), "read_committed output: " + got);
    List<String> uncommitted = readAll(bs, new TopicPartition(out, 0), "read_uncommitted");
    check(uncommitted.stream().anyMatch(v -> v.startsWith("aborted-")), "aborted round not in the log");
    // A fresh member of the group starts at the committed offsets: nothing left to read.
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("group.id", group, "group.protocol", "classic"))) {
      c.subscribe(List.of(in));
      check(c.poll(Duration.ofMillis(1500)).isEmpty(), "a new member re-read committed input");
    }
    System.out.println("ok ctp " + n);
  }

  // ---------------------------------------------------------------- group protocol probe

  static void protocol(String bs, String mode) throws Exception {
    String topic = unique("proto");
    createTopic(bs, topic, 1);
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of())) {
      p.send(new ProducerRecord<>(topic, 0, null, "x".getBytes(StandardCharsets.UTF_8))).get();
    }
    Map<String, String> cfg = new HashMap<>();
    cfg.put("group.id", unique("proto-g"));
    if (!mode.equals("default")) {
      cfg.put("group.protocol", mode);
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, cfg)) {
      c.subscribe(List.of(topic));
      try {
        List<ConsumerRecord<byte[], byte[]>> got = pollN(c, 1);
        c.commitSync();
        System.out.println("ok protocol " + mode + " consumed " + got.size());
      } catch (Throwable e) {
        System.out.println("error protocol " + mode + " " + e.getClass().getName() + ": " + e.getMessage());
      }
    }
  }

  // ---------------------------------------------------------------- scenario 2: group

  static final int GROUP_PARTITIONS = 3;
  static final int GROUP_RECORDS_PER_PARTITION = 40;

  /** One member of a consumer group on its own thread: polls, records, commitSync. */
  static final class Member implements Runnable {
    final String name;
    final KafkaConsumer<byte[], byte[]> consumer;
    final Map<String, Integer> seen;
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicReference<Set<TopicPartition>> assignment = new AtomicReference<>(Set.of());
    final AtomicReference<Throwable> failure = new AtomicReference<>();
    final Thread thread;
    final String topic;

    Member(String name, String bs, String topic, String group, Map<String, Integer> seen) {
      this.name = name;
      this.topic = topic;
      this.seen = seen;
      this.consumer = consumer(bs, Map.of("group.id", group, "group.protocol", "classic",
          "max.poll.records", "5", "session.timeout.ms", "30000"));
      this.thread = new Thread(this, name);
    }

    @Override
    public void run() {
      try {
        consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
          @Override
          public void onPartitionsRevoked(Collection<TopicPartition> parts) {
            Set<TopicPartition> now = new HashSet<>(assignment.get());
            now.removeAll(parts);
            assignment.set(now);
          }

          @Override
          public void onPartitionsAssigned(Collection<TopicPartition> parts) {
            Set<TopicPartition> now = new HashSet<>(assignment.get());
            now.addAll(parts);
            assignment.set(now);
          }
        });
        while (!stop.get()) {
          ConsumerRecords<byte[], byte[]> rs = consumer.poll(Duration.ofMillis(100));
          for (ConsumerRecord<byte[], byte[]> r : rs) {
            seen.merge(r.partition() + ":" + r.offset(), 1, Integer::sum);
          }
          if (!rs.isEmpty()) {
            consumer.commitSync();
          }
        }
        consumer.close(); // leaves the group
      } catch (Throwable e) {
        failure.set(e);
      }
    }

    void finish() throws InterruptedException {
      stop.set(true);
      thread.join(DEADLINE_MS);
      check(!thread.isAlive(), name + " did not stop");
      if (failure.get() != null) {
        throw new AssertionError(name + " failed", failure.get());
      }
    }
  }

  static void waitFor(String what, java.util.function.BooleanSupplier cond, Member... ms)
      throws InterruptedException {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (!cond.getAsBoolean()) {
      for (Member m : ms) {
        if (m.failure.get() != null) {
          throw new AssertionError(m.name + " failed", m.failure.get());
        }
      }
      check(System.currentTimeMillis() < deadline, "hang guard: " + what);
      Thread.sleep(20);
    }
  }

  static void groupPhase1(String bs, String topic, String group) throws Exception {
    createTopic(bs, topic, GROUP_PARTITIONS);
    int total = GROUP_PARTITIONS * GROUP_RECORDS_PER_PARTITION;
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("acks", "all"))) {
      for (int i = 0; i < total; i++) {
        p.send(new ProducerRecord<>(topic, i % GROUP_PARTITIONS, null,
            ("g-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      p.flush();
    }
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    Member a = new Member("a", bs, topic, group, seen);
    Member b = new Member("b", bs, topic, group, seen);
    a.thread.start();
    b.thread.start();
    // Both members hold partitions at once: the group rebalanced into two.
    waitFor("both members assigned", () -> !a.assignment.get().isEmpty() && !b.assignment.get().isEmpty()
        && a.assignment.get().size() + b.assignment.get().size() == GROUP_PARTITIONS, a, b);
    Set<TopicPartition> bHad = b.assignment.get();
    System.out.println("two members: a=" + a.assignment.get().size() + " b=" + bHad.size());
    b.finish();
    // b left: a takes every partition and reads everything.
    waitFor("a takes over", () -> a.assignment.get().size() == GROUP_PARTITIONS, a);
    waitFor("every record read", () -> seen.size() == total, a);
    a.finish();
    List<String> dups = new ArrayList<>();
    seen.forEach((k, v) -> {
      if (v != 1) {
        dups.add(k + "x" + v);
      }
    });
    check(dups.isEmpty(), "records read more than once: " + dups);
    // Committed offsets, read back by a consumer that is not in the group.
    Set<TopicPartition> parts = new HashSet<>();
    for (int p = 0; p < GROUP_PARTITIONS; p++) {
      parts.add(new TopicPartition(topic, p));
    }
    StringBuilder line = new StringBuilder("committed");
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("group.id", group))) {
      Map<TopicPartition, OffsetAndMetadata> committed = c.committed(parts);
      for (int p = 0; p < GROUP_PARTITIONS; p++) {
        OffsetAndMetadata o = committed.get(new TopicPartition(topic, p));
        check(o != null && o.offset() == GROUP_RECORDS_PER_PARTITION, "committed p" + p + " = " + o);
        line.append(' ').append(o.offset());
      }
    }
    System.out.println(line);
    System.out.println("ok group_phase1 " + total);
  }

  static void groupPhase2(String bs, String topic, String group, String[] committed) throws Exception {
    int more = 10;
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of(
        "acks", "all", "enable.idempotence", "true"))) {
      for (int i = 0; i < GROUP_PARTITIONS * more; i++) {
        p.send(new ProducerRecord<>(topic, i % GROUP_PARTITIONS, null,
            ("after-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      p.flush();
    }
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    Member a = new Member("a2", bs, topic, group, seen);
    // Offsets before the first poll, from the restarted coordinator.
    Set<TopicPartition> parts = new HashSet<>();
    for (int p = 0; p < GROUP_PARTITIONS; p++) {
      parts.add(new TopicPartition(topic, p));
    }
    Map<TopicPartition, OffsetAndMetadata> before = a.consumer.committed(parts);
    for (int p = 0; p < GROUP_PARTITIONS; p++) {
      OffsetAndMetadata o = before.get(new TopicPartition(topic, p));
      check(o != null && o.offset() == Long.parseLong(committed[p]),
          "committed p" + p + " after the restart = " + o + ", want " + committed[p]);
    }
    a.thread.start();
    waitFor("the records after the commit", () -> seen.size() == GROUP_PARTITIONS * more, a);
    a.finish();
    for (String k : seen.keySet()) {
      String[] pk = k.split(":");
      long off = Long.parseLong(pk[1]);
      long from = Long.parseLong(committed[Integer.parseInt(pk[0])]);
      check(off >= from && off < from + more && seen.get(k) == 1, "read " + k + " x" + seen.get(k));
    }
    System.out.println("ok group_phase2 " + seen.size());
  }

  // ---------------------------------------------------------------- scenario 5: kill mid-produce

  static void produceAcked(String bs, String topic, int n, Path outFile) throws Exception {
    createTopic(bs, topic, 2);
    Map<Integer, String> acked = new ConcurrentHashMap<>();
    List<String> errors = new CopyOnWriteArrayList<>();
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of(
        "enable.idempotence", "true", "acks", "all", "linger.ms", "2",
        "delivery.timeout.ms", "120000", "request.timeout.ms", "10000",
        "reconnect.backoff.ms", "50", "reconnect.backoff.max.ms", "500",
        "retry.backoff.ms", "50", "batch.size", "4096"))) {
      for (int i = 0; i < n; i++) {
        final int id = i;
        p.send(new ProducerRecord<>(topic, i % 2, null, ("rec-" + i).getBytes(StandardCharsets.UTF_8)),
            (m, e) -> {
              if (e != null) {
                errors.add(id + ": " + e);
              } else {
                acked.put(id, m.partition() + " " + m.offset());
              }
            });
      }
      p.flush();
    }
    StringBuilder sb = new StringBuilder();
    for (Map.Entry<Integer, String> e : new TreeMap<>(acked).entrySet()) {
      sb.append(e.getKey()).append(' ').append(e.getValue()).append('\n');
    }
    Files.writeString(outFile, sb.toString());
    System.out.println("acked " + acked.size() + " failed " + errors.size());
    if (!errors.isEmpty()) {
      System.out.println("first failure " + errors.get(0));
    }
    check(errors.isEmpty(), errors.size() + " sends failed");
    System.out.println("ok produce_acked " + acked.size());
  }

  static void consumeCheck(String bs, String topic, Path ackFile) throws IOException {
    Map<String, Integer> at = new HashMap<>(); // "partition offset" -> record id
    for (String l : Files.readAllLines(ackFile)) {
      String[] f = l.split(" ");
      at.put(f[1] + " " + f[2], Integer.parseInt(f[0]));
    }
    Set<String> valuesSeen = new HashSet<>();
    int found = 0;
    long records = 0;
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("max.poll.records", "5000"))) {
      for (int part = 0; part < 2; part++) {
        TopicPartition tp = new TopicPartition(topic, part);
        c.assign(List.of(tp));
        c.seekToBeginning(List.of(tp));
        long end = c.endOffsets(List.of(tp)).get(tp);
        long expect = 0;
        for (ConsumerRecord<byte[], byte[]> r : pollTo(c, tp, end)) {
          check(r.offset() == expect++, "offsets not contiguous at " + r.offset());
          String v = new String(r.value(), StandardCharsets.UTF_8);
          check(valuesSeen.add(v), "duplicate " + v + " at " + part + " " + r.offset());
          Integer id = at.get(part + " " + r.offset());
          if (id != null) {
            check(v.equals("rec-" + id), "acked rec-" + id + " at " + part + " " + r.offset() + " reads " + v);
            found++;
          }
          records++;
        }
      }
    }
    check(found == at.size(), (at.size() - found) + " acknowledged records missing");
    System.out.println("ok consume_check acked " + at.size() + " in log " + records);
  }
}
