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
 * Kafka's own KafkaProducer/KafkaConsumer (kafka-clients 4.3.0) against `mirrorlog serve`: the
 * scenario is chosen by the first argument (scenarios taking only BOOTSTRAP can be joined with
 * '+' to run in one JVM). Every check throws on failure (non-zero exit with the message); a
 * passing scenario prints a line starting with "ok", and the run ends with "client log: W
 * warnings, E errors", the client's own WARN/ERROR log lines (printed to stderr).
 *
 * <pre>
 *   codecs BOOTSTRAP        idempotent producer in every codec; read back with assign + subscribe
 *   offsets BOOTSTRAP       acks=0/1, offsetsForTimes, beginning/endOffsets, seek, out of range,
 *                           DeleteRecords
 *   validation BOOTSTRAP    LogAppendTime, a timestamp out of the topic's bounds
 *   large BOOTSTRAP         a 900 KB record through 1000-byte fetch limits; RecordTooLarge
 *   metadata BOOTSTRAP      partitionsFor, listTopics, auto-creation, pattern subscription
 *   txn BOOTSTRAP           commit/abort, LSO and endOffsets, read_committed/uncommitted
 *   interleaved BOOTSTRAP   two transactional producers and a plain one in one partition, in
 *                           three codecs, read_committed through tiny fetches; a too-long timeout
 *   ctp BOOTSTRAP           consume-transform-produce (sendOffsetsToTransaction), an abort
 *   fencing BOOTSTRAP       a second producer with the same transactional.id fences the first
 *   stable BOOTSTRAP        a pending transactional offset commit: committed() waits
 *   txn_timeout BOOTSTRAP   the coordinator aborts a transaction past its timeout
 *   protocol BOOTSTRAP default|classic|consumer   what a group consumer does with that protocol
 *   cooperative BOOTSTRAP   CooperativeStickyAssignor: members join and leave
 *   static BOOTSTRAP        group.instance.id: a member closes and rejoins with its partition
 *   group_phase1 BOOTSTRAP TOPIC GROUP    two members, one leaves, commitSync; prints offsets
 *   group_phase2 BOOTSTRAP TOPIC GROUP O0 O1 O2   after a restart: resume from those offsets
 *   live_restart BOOTSTRAP DIR            clients live through a restart: DIR/ready, DIR/go
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
    // Scenarios that take only BOOTSTRAP run in one JVM when joined with '+'.
    try {
      for (String scenario : args[0].split("\\+")) {
        run(scenario, bs, args);
      }
    } catch (Throwable e) {
      // Exit now: client and member threads left running must not keep a failed run alive.
      e.printStackTrace();
      System.out.println("client log: " + ClientLog.WARNINGS.get() + " warnings, "
          + ClientLog.ERRORS.get() + " errors");
      System.exit(1);
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
        String text = org.slf4j.helpers.MessageFormatter.basicArrayFormat(msg, args);
        // Not counted: the consumer's own note that an endOffsets answer came for a partition
        // it does not fetch (every endOffsets/offsetsForTimes of an unassigned partition).
        boolean benign = text.endsWith("as it is no longer assigned");
        if (level == org.slf4j.event.Level.WARN && !benign) {
          WARNINGS.incrementAndGet();
        } else if (level == org.slf4j.event.Level.ERROR) {
          ERRORS.incrementAndGet();
        }
        System.err.println("[client " + level + " " + name.substring(name.lastIndexOf('.') + 1)
            + "] " + text + (t == null ? "" : " (" + t + ")"));
      }
    }
  }

  static void run(String scenario, String bs, String[] args) throws Exception {
    switch (scenario) {
      case "codecs" -> codecs(bs);
      case "offsets" -> offsets(bs);
      case "txn" -> txn(bs);
      case "ctp" -> consumeTransformProduce(bs);
      case "protocol" -> protocol(bs, args[2]);
      case "fencing" -> fencing(bs);
      case "zombie" -> zombie(bs);
      case "interleaved" -> interleaved(bs);
      case "txn_timeout" -> txnTimeout(bs);
      case "validation" -> validation(bs);
      case "mirror_source" -> mirrorSource(bs, args[2]);
      case "mirror_destination" -> mirrorDestination(bs, args[2]);
      case "session" -> session(bs);
      case "idem_delete" -> idempotentAfterDeleteRecords(bs);
      case "live_restart" -> liveRestart(bs, Path.of(args[2]));
      case "cooperative" -> cooperative(bs);
      case "static" -> staticMembership(bs);
      case "stable" -> requireStable(bs);
      case "large" -> large(bs);
      case "metadata" -> metadata(bs);
      case "group_phase1" -> groupPhase1(bs, args[2], args[3]);
      case "group_phase2" -> groupPhase2(bs, args[2], args[3], Arrays.copyOfRange(args, 4, args.length));
      case "produce_acked" -> produceAcked(bs, args[2], Integer.parseInt(args[3]), Path.of(args[4]));
      case "consume_check" -> consumeCheck(bs, args[2], Path.of(args[3]));
      case "txn_acked" -> txnAcked(bs, args[2], Integer.parseInt(args[3]), Path.of(args[4]));
      case "txn_check" -> txnCheck(bs, args[2], Path.of(args[3]));
      default -> throw new IllegalArgumentException("unknown scenario " + scenario);
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
        // Timestamps go back inside batches: the answer is the first record at or after the
        // target, found inside a compressed batch.
        for (long target = T0 - 30; target < T0 + 3000; target += 37) {
          int want = -1;
          for (int i = 0; i < sent.size() && want < 0; i++) {
            if (sent.get(i).timestamp() >= target) {
              want = i;
            }
          }
          OffsetAndTimestamp at = c.offsetsForTimes(Map.of(tp, target)).get(tp);
          check(want < 0 ? at == null : at != null && at.offset() == want
              && at.timestamp() == sent.get(want).timestamp(),
              codec + ": offsetsForTimes(T0+" + (target - T0) + ") = " + at + ", want " + want);
        }
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
    // Out of range: past the end, then below a log start that DeleteRecords moved.
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("auto.offset.reset", "none"))) {
      c.assign(List.of(tp));
      c.seek(tp, 500);
      try {
        long deadline = System.currentTimeMillis() + DEADLINE_MS;
        while (true) {
          check(System.currentTimeMillis() < deadline, "hang guard: no out-of-range error");
          check(c.poll(Duration.ofMillis(200)).isEmpty(), "records past the end");
        }
      } catch (org.apache.kafka.clients.consumer.OffsetOutOfRangeException e) {
        check(e.offsetOutOfRangePartitions().get(tp) == 500, "out of range at " + e.offsetOutOfRangePartitions());
      }
    }
    try (Admin admin = Admin.create(base(bs))) {
      admin.deleteRecords(Map.of(tp, org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(30)))
          .all().get(DEADLINE_MS, TimeUnit.MILLISECONDS);
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("auto.offset.reset", "earliest"))) {
      check(c.beginningOffsets(List.of(tp)).get(tp) == 30, "beginningOffsets after DeleteRecords");
      Map<TopicPartition, OffsetAndTimestamp> at = c.offsetsForTimes(Map.of(tp, T0));
      check(at.get(tp).offset() == 30, "offsetsForTimes(T0) after DeleteRecords = " + at.get(tp));
      c.assign(List.of(tp));
      c.seek(tp, 5);
      List<ConsumerRecord<byte[], byte[]>> got = pollN(c, 1);
      check(got.get(0).offset() == 30, "below the log start: reset to " + got.get(0).offset());
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

  /** The producer's own decision (its `TransactionManager`, from ApiVersions' finalized features). */
  static boolean transactionV2Enabled(KafkaProducer<?, ?> p) throws Exception {
    java.lang.reflect.Field f = KafkaProducer.class.getDeclaredField("transactionManager");
    f.setAccessible(true);
    return ((org.apache.kafka.clients.producer.internals.TransactionManager) f.get(p)).isTransactionV2Enabled();
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
      // The broker finalizes no transaction.version (≥ 2 would switch the producer to
      // transactions v2: Produce v12, EndTxn v5, an epoch bump per transaction).
      check(!transactionV2Enabled(p), "the producer turned transactions v2 on");
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

  // ---------------------------------------------------------------- probes

  static void fencing(String bs) throws Exception {
    String topic = unique("fence");
    createTopic(bs, topic, 1);
    String txid = unique("fence-tx");
    KafkaProducer<byte[], byte[]> old = producer(bs, Map.of("transactional.id", txid, "compression.type", "lz4"));
    old.initTransactions();
    old.beginTransaction();
    old.send(new ProducerRecord<>(topic, 0, null, "old-open".getBytes(StandardCharsets.UTF_8))).get();
    try (KafkaProducer<byte[], byte[]> fresh = producer(bs, Map.of("transactional.id", txid))) {
      // Aborts the old producer's open transaction and fences it.
      fresh.initTransactions();
      try {
        old.send(new ProducerRecord<>(topic, 0, null, "old-late".getBytes(StandardCharsets.UTF_8))).get();
        old.commitTransaction();
        throw new AssertionError("FAIL: the fenced producer committed");
      } catch (Exception e) {
        Throwable c = e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
        System.out.println("fenced: " + c.getClass().getSimpleName() + ": " + c.getMessage());
        check(c instanceof org.apache.kafka.common.errors.ProducerFencedException
            || c instanceof org.apache.kafka.common.errors.InvalidProducerEpochException,
            "fenced with " + c);
      }
      old.close(Duration.ZERO);
      fresh.beginTransaction();
      fresh.send(new ProducerRecord<>(topic, 0, null, "fresh".getBytes(StandardCharsets.UTF_8)));
      fresh.commitTransaction();
    }
    List<String> rc = readAll(bs, new TopicPartition(topic, 0), "read_committed");
    check(rc.equals(List.of("fresh")), "read_committed after fencing: " + rc);
    System.out.println("ok fencing");
  }

  /**
   * Transactions in lz4 batches interleaved with a plain idempotent producer's batches and with
   * each other (two transactional producers), read by read_committed consumers whose fetches
   * end in the middle of aborted transactions; and a transaction timeout above the broker's
   * maximum refused at initTransactions.
   */
  static void interleaved(String bs) throws Exception {
    String topic = unique("inter");
    createTopic(bs, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    List<String> committed = new ArrayList<>();
    List<String> all = new ArrayList<>();
    try (KafkaProducer<byte[], byte[]> t1 = producer(bs, Map.of("transactional.id", unique("i1"), "compression.type", "lz4", "linger.ms", "0"));
        KafkaProducer<byte[], byte[]> t2 = producer(bs, Map.of("transactional.id", unique("i2"), "compression.type", "zstd", "linger.ms", "0"));
        KafkaProducer<byte[], byte[]> plain = producer(bs, Map.of("compression.type", "gzip", "linger.ms", "0"))) {
      t1.initTransactions();
      t2.initTransactions();
      for (int round = 0; round < 6; round++) {
        t1.beginTransaction();
        t2.beginTransaction();
        for (int i = 0; i < 5; i++) {
          String v1 = "t1-" + round + "-" + i;
          String v2 = "t2-" + round + "-" + i;
          String vp = "p-" + round + "-" + i;
          t1.send(new ProducerRecord<>(topic, 0, null, v1.getBytes(StandardCharsets.UTF_8))).get();
          plain.send(new ProducerRecord<>(topic, 0, null, vp.getBytes(StandardCharsets.UTF_8))).get();
          t2.send(new ProducerRecord<>(topic, 0, null, v2.getBytes(StandardCharsets.UTF_8))).get();
          all.add(v1);
          all.add(vp);
          all.add(v2);
        }
        boolean commit1 = round % 2 == 0;
        boolean commit2 = round % 3 != 1;
        for (String v : all.subList(all.size() - 15, all.size())) {
          if (v.startsWith("p-") || (v.startsWith("t1-") && commit1) || (v.startsWith("t2-") && commit2)) {
            committed.add(v);
          }
        }
        if (commit1) { t1.commitTransaction(); } else { t1.abortTransaction(); }
        if (commit2) { t2.commitTransaction(); } else { t2.abortTransaction(); }
      }
    }
    for (String limit : List.of("1", "300", "1048576")) {
      try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("isolation.level", "read_committed",
          "max.partition.fetch.bytes", limit, "fetch.max.bytes", limit))) {
        c.assign(List.of(tp));
        c.seekToBeginning(List.of(tp));
        long end = c.endOffsets(List.of(tp)).get(tp);
        List<String> got = values(pollTo(c, tp, end));
        check(got.equals(committed), "read_committed with fetches of " + limit + " bytes: " + got);
      }
    }
    check(readAll(bs, tp, "read_uncommitted").equals(all), "read_uncommitted");
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("transactional.id", unique("long"),
        "transaction.timeout.ms", "1000000"))) {
      try {
        p.initTransactions();
        throw new AssertionError("FAIL: a transaction timeout above the maximum was accepted");
      } catch (org.apache.kafka.common.KafkaException e) {
        System.out.println("timeout too long: " + e.getClass().getSimpleName() + ": " + e.getMessage());
        // The client names only some InitProducerId errors; INVALID_TRANSACTION_TIMEOUT (50)
        // comes back as a bare KafkaException with Kafka's text for the code, as from Kafka.
        check(e.getMessage().contains("The transaction timeout is larger than the maximum value"),
            "refused with " + e);
      }
    }
    System.out.println("ok interleaved " + committed.size() + " of " + all.size());
  }

  /** A transaction left open past transaction.timeout.ms is aborted by the coordinator. */
  static void txnTimeout(String bs) throws Exception {
    String topic = unique("txto");
    createTopic(bs, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    String txid = unique("txto-tx");
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("transactional.id", txid,
        "transaction.timeout.ms", "1000"));
        KafkaConsumer<byte[], byte[]> rc = consumer(bs, Map.of("isolation.level", "read_committed"))) {
      p.initTransactions();
      p.beginTransaction();
      p.send(new ProducerRecord<>(topic, 0, null, "late".getBytes(StandardCharsets.UTF_8))).get();
      check(rc.endOffsets(List.of(tp)).get(tp) == 0, "LSO held by the open transaction");
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (rc.endOffsets(List.of(tp)).get(tp) < 2) {
        check(System.currentTimeMillis() < deadline, "hang guard: the timed-out transaction was never aborted");
        Thread.sleep(100);
      }
      try {
        p.commitTransaction();
        throw new AssertionError("FAIL: committed a transaction the coordinator aborted");
      } catch (org.apache.kafka.common.KafkaException e) {
        System.out.println("commit after the timeout: " + e.getClass().getSimpleName() + ": " + e.getMessage());
        check(e instanceof org.apache.kafka.common.errors.ProducerFencedException
            || e instanceof org.apache.kafka.common.errors.InvalidProducerEpochException, "commit after the timeout: " + e);
      }
    }
    check(readAll(bs, tp, "read_committed").isEmpty(), "read_committed sees the timed-out transaction");
    // The same transactional id starts over.
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("transactional.id", txid))) {
      p.initTransactions();
      p.beginTransaction();
      p.send(new ProducerRecord<>(topic, 0, null, "again".getBytes(StandardCharsets.UTF_8)));
      p.commitTransaction();
    }
    check(readAll(bs, tp, "read_committed").equals(List.of("again")), "after the restart of the id");
    System.out.println("ok txn_timeout");
  }

  static void createTopic(String bs, String name, Map<String, String> configs) throws Exception {
    try (Admin admin = Admin.create(base(bs))) {
      admin.createTopics(List.of(new NewTopic(name, 1, (short) 1).configs(configs))).all()
          .get(DEADLINE_MS, TimeUnit.MILLISECONDS);
    }
  }

  /** LogAppendTime stamped and reported; a timestamp out of the topic's bounds refused. */
  static void validation(String bs) throws Exception {
    String lat = unique("lat");
    createTopic(bs, lat, Map.of("message.timestamp.type", "LogAppendTime"));
    long before = System.currentTimeMillis();
    RecordMetadata m;
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of())) {
      m = p.send(new ProducerRecord<>(lat, 0, T0, null, "x".getBytes(StandardCharsets.UTF_8))).get();
    }
    long after = System.currentTimeMillis();
    check(m.timestamp() >= before && m.timestamp() <= after, "acked LogAppendTime " + m.timestamp());
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of())) {
      TopicPartition tp = new TopicPartition(lat, 0);
      c.assign(List.of(tp));
      ConsumerRecord<byte[], byte[]> r = pollN(c, 1).get(0);
      check(r.timestampType() == org.apache.kafka.common.record.TimestampType.LOG_APPEND_TIME
          && r.timestamp() == m.timestamp(), "consumed " + r.timestampType() + " " + r.timestamp());
    }
    String bounded = unique("bounded");
    createTopic(bs, bounded, Map.of("message.timestamp.before.max.ms", "3600000"));
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of())) {
      try {
        p.send(new ProducerRecord<>(bounded, 0, T0, null, "old".getBytes(StandardCharsets.UTF_8))).get();
        throw new AssertionError("FAIL: a timestamp years old was accepted");
      } catch (java.util.concurrent.ExecutionException e) {
        System.out.println("old timestamp: " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
        check(e.getCause() instanceof org.apache.kafka.common.errors.InvalidTimestampException, "old: " + e.getCause());
      }
      p.send(new ProducerRecord<>(bounded, 0, null, "now".getBytes(StandardCharsets.UTF_8))).get();
    }
    System.out.println("ok validation");
  }

  /** Creates `dir/ready`, then waits for `dir/go` (the test restarts the broker between). */
  static void handOff(Path dir) throws Exception {
    Files.writeString(dir.resolve("ready"), "");
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (!Files.exists(dir.resolve("go"))) {
      check(System.currentTimeMillis() < deadline, "hang guard: no go from the test");
      Thread.sleep(20);
    }
  }

  /**
   * Clients that live through a broker restart (SIGTERM, start on the same dir and port): a
   * transaction open across it commits, an idempotent producer continues without duplicates,
   * and a group member keeps consuming and committing.
   */
  static void liveRestart(String bs, Path dir) throws Exception {
    String topic = unique("live");
    String group = unique("live-g");
    createTopic(bs, topic, 2);
    TopicPartition tp0 = new TopicPartition(topic, 0);
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    try (KafkaProducer<byte[], byte[]> tx = producer(bs, Map.of("transactional.id", unique("live-tx")));
        KafkaProducer<byte[], byte[]> idem = producer(bs, Map.of("enable.idempotence", "true", "acks", "all"))) {
      tx.initTransactions();
      tx.beginTransaction();
      for (int i = 0; i < 5; i++) {
        tx.send(new ProducerRecord<>(topic, 0, null, ("tx-" + i).getBytes(StandardCharsets.UTF_8)));
        idem.send(new ProducerRecord<>(topic, 1, null, ("id-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      tx.flush();
      idem.flush();
      Member m = new Member("live", bs, topic, group, seen);
      m.thread.start();
      // Partition 1's five records (a read_uncommitted member may also have read partition 0's
      // open transaction by then: waiting for exactly five in all raced its next poll).
      waitFor("the member reads partition 1",
          () -> java.util.stream.IntStream.range(0, 5).allMatch(i -> seen.containsKey("1:" + i)), m);
      handOff(dir);
      for (int i = 5; i < 10; i++) {
        tx.send(new ProducerRecord<>(topic, 0, null, ("tx-" + i).getBytes(StandardCharsets.UTF_8)));
        idem.send(new ProducerRecord<>(topic, 1, null, ("id-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      idem.flush();
      tx.commitTransaction();
      waitFor("the member reads everything", () -> seen.size() == 20, m);
      m.finish();
    }
    List<String> want = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      want.add("tx-" + i);
    }
    List<String> rc = readAll(bs, tp0, "read_committed");
    check(rc.equals(want), "read_committed after a transaction across the restart: " + rc);
    List<String> ids = readAll(bs, new TopicPartition(topic, 1), "read_uncommitted");
    check(ids.size() == 10 && new HashSet<>(ids).size() == 10, "idempotent across the restart: " + ids);
    for (String k : seen.keySet()) {
      check(seen.get(k) == 1, "read twice: " + k);
    }
    System.out.println("ok live_restart");
  }

  static void produceTo(String bs, String topic, int partitions, int perPartition, String tag) throws Exception {
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("linger.ms", "0"))) {
      for (int i = 0; i < perPartition; i++) {
        for (int part = 0; part < partitions; part++) {
          p.send(new ProducerRecord<>(topic, part, null, (tag + "-" + part + "-" + i).getBytes(StandardCharsets.UTF_8)));
        }
      }
      p.flush();
    }
  }

  /**
   * One consumer's incremental fetch session through assignment changes and pause/resume: the
   * partitions it drops are never fetched again, those it adds start where it seeks, a paused
   * partition's records wait until it is resumed.
   */
  static void session(String bs) throws Exception {
    String topic = unique("session");
    int parts = 4;
    createTopic(bs, topic, parts);
    produceTo(bs, topic, parts, 10, "a");
    List<TopicPartition> tps = new ArrayList<>();
    for (int i = 0; i < parts; i++) {
      tps.add(new TopicPartition(topic, i));
    }
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("fetch.max.wait.ms", "100"))) {
      c.assign(List.of(tps.get(0), tps.get(1)));
      c.seekToBeginning(c.assignment());
      List<ConsumerRecord<byte[], byte[]>> got = pollN(c, 20);
      check(got.size() == 20, "first two partitions: " + got.size());
      check(c.poll(Duration.ofMillis(300)).isEmpty(), "nothing more");
      // p1 out, p2 in (from its start), p3 in (from offset 5).
      c.assign(List.of(tps.get(0), tps.get(2), tps.get(3)));
      c.seek(tps.get(2), 0);
      c.seek(tps.get(3), 5);
      produceTo(bs, topic, parts, 3, "b");
      Map<Integer, List<Long>> byPart = new TreeMap<>();
      for (ConsumerRecord<byte[], byte[]> r : pollN(c, 3 + 13 + 8)) {
        byPart.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.offset());
      }
      check(!byPart.containsKey(1), "a dropped partition was fetched: " + byPart);
      check(byPart.get(0).equals(List.of(10L, 11L, 12L)), "p0 " + byPart.get(0));
      check(byPart.get(2).size() == 13 && byPart.get(2).get(0) == 0, "p2 " + byPart.get(2));
      check(byPart.get(3).size() == 8 && byPart.get(3).get(0) == 5, "p3 " + byPart.get(3));
      check(c.poll(Duration.ofMillis(300)).isEmpty(), "nothing more after the reassignment");
      // Pause p0: its new records wait; p2's come.
      c.pause(List.of(tps.get(0)));
      produceTo(bs, topic, parts, 2, "c");
      Set<Integer> seenParts = new HashSet<>();
      int n = 0;
      for (ConsumerRecord<byte[], byte[]> r : pollN(c, 4)) {
        seenParts.add(r.partition());
        n++;
      }
      check(seenParts.equals(Set.of(2, 3)) && n == 4, "while p0 is paused: " + seenParts + " " + n);
      check(c.poll(Duration.ofMillis(300)).isEmpty(), "a paused partition was returned");
      c.resume(List.of(tps.get(0)));
      List<ConsumerRecord<byte[], byte[]>> after = pollN(c, 2);
      check(after.size() == 2 && after.get(0).partition() == 0 && after.get(0).offset() == 13,
          "after resume: " + after.size() + " first " + after.get(0).partition() + "@" + after.get(0).offset());
      // Everything back, from the start, over and over: the session keeps up with seeks.
      for (int round = 0; round < 5; round++) {
        c.assign(round % 2 == 0 ? tps : List.of(tps.get(1), tps.get(3)));
        c.seekToBeginning(c.assignment());
        int want = round % 2 == 0 ? 4 * 15 : 2 * 15;
        List<ConsumerRecord<byte[], byte[]>> all = pollN(c, want);
        check(all.size() == want, "round " + round + ": " + all.size());
      }
    }
    System.out.println("ok session");
  }

  /** DeleteRecords past everything an idempotent producer wrote; it keeps producing. */
  static void idempotentAfterDeleteRecords(String bs) throws Exception {
    String topic = unique("idel");
    createTopic(bs, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("enable.idempotence", "true", "acks", "all"));
        Admin admin = Admin.create(base(bs))) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>(topic, 0, null, ("before-" + i).getBytes(StandardCharsets.UTF_8))).get();
      }
      admin.deleteRecords(Map.of(tp, org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(10)))
          .all().get(DEADLINE_MS, TimeUnit.MILLISECONDS);
      for (int i = 0; i < 10; i++) {
        RecordMetadata m = p.send(new ProducerRecord<>(topic, 0, null, ("after-" + i).getBytes(StandardCharsets.UTF_8))).get();
        check(m.offset() == 10 + i, "after DeleteRecords: offset " + m.offset());
      }
    }
    List<String> got = readAll(bs, tp, "read_uncommitted");
    check(got.size() == 10 && got.get(0).equals("after-0"), "read back " + got);
    System.out.println("ok idem_delete");
  }

  /**
   * A source topic for a mirror: a committed and an aborted transaction, plain records, and a
   * transaction left open (the JVM halts without ending it).
   */
  static void mirrorSource(String bs, String topic) throws Exception {
    createTopic(bs, topic, 1);
    KafkaProducer<byte[], byte[]> tx = producer(bs, Map.of("transactional.id", unique("msrc"), "compression.type", "lz4"));
    try (KafkaProducer<byte[], byte[]> plain = producer(bs, Map.of("compression.type", "zstd"))) {
      tx.initTransactions();
      tx.beginTransaction();
      for (int i = 0; i < 5; i++) {
        tx.send(new ProducerRecord<>(topic, 0, null, ("committed-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      tx.commitTransaction();
      tx.beginTransaction();
      for (int i = 0; i < 3; i++) {
        tx.send(new ProducerRecord<>(topic, 0, null, ("aborted-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      tx.flush();
      tx.abortTransaction();
      for (int i = 0; i < 4; i++) {
        plain.send(new ProducerRecord<>(topic, 0, null, ("plain-" + i).getBytes(StandardCharsets.UTF_8))).get();
      }
      tx.beginTransaction();
      for (int i = 0; i < 2; i++) {
        tx.send(new ProducerRecord<>(topic, 0, null, ("open-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      tx.flush();
    }
    System.out.println("ok mirror_source");
    System.out.flush();
    Runtime.getRuntime().halt(0); // the open transaction stays open
  }

  /** The failed-over destination topic: read, then written by new producers, read again. */
  static void mirrorDestination(String bs, String topic) throws Exception {
    TopicPartition tp = new TopicPartition(topic, 0);
    System.out.println("read_committed " + String.join(",", readAll(bs, tp, "read_committed")));
    System.out.println("read_uncommitted " + String.join(",", readAll(bs, tp, "read_uncommitted")));
    try (KafkaProducer<byte[], byte[]> idem = producer(bs, Map.of("enable.idempotence", "true"));
        KafkaProducer<byte[], byte[]> tx = producer(bs, Map.of("transactional.id", unique("mdst")))) {
      idem.send(new ProducerRecord<>(topic, 0, null, "dest-idem".getBytes(StandardCharsets.UTF_8))).get();
      tx.initTransactions();
      tx.beginTransaction();
      tx.send(new ProducerRecord<>(topic, 0, null, "dest-tx".getBytes(StandardCharsets.UTF_8)));
      tx.commitTransaction();
    }
    System.out.println("after read_committed " + String.join(",", readAll(bs, tp, "read_committed")));
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("group.id", unique("mdst-g"), "group.protocol", "classic",
        "isolation.level", "read_committed"))) {
      c.subscribe(List.of(topic));
      List<String> got = values(pollN(c, 11));
      System.out.println("group " + String.join(",", got));
    }
    System.out.println("ok mirror_destination");
  }

  /**
   * KIP-447 fencing: offsets sent to a transaction with the group metadata of a generation the
   * group has left behind are refused (the producer reports CommitFailedException) and the
   * transaction can be aborted.
   */
  static void zombie(String bs) throws Exception {
    String topic = unique("zombie");
    String group = unique("zombie-g");
    createTopic(bs, topic, 2);
    produceTo(bs, topic, 2, 5, "z");
    TopicPartition tp0 = new TopicPartition(topic, 0);
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    Member a = new Member("za", bs, topic, group, seen);
    a.thread.start();
    waitFor("a holds both", () -> a.assignment.get().size() == 2
        && a.meta.get() != null && a.meta.get().generationId() > 0, a);
    org.apache.kafka.clients.consumer.ConsumerGroupMetadata first = a.meta.get();
    Member b = new Member("zb", bs, topic, group, seen);
    b.thread.start();
    waitFor("a rejoined in a later generation", () -> b.assignment.get().size() == 1
        && a.meta.get().generationId() > first.generationId(), a, b);
    String staleGeneration = sendStaleOffsets(bs, tp0, first);
    check(staleGeneration.contains("CommitFailedException")
        && staleGeneration.contains("Specified group generation id is not valid"), staleGeneration);
    a.finish(); // leaves the group
    org.apache.kafka.clients.consumer.ConsumerGroupMetadata left = a.meta.get();
    waitFor("b holds both", () -> b.assignment.get().size() == 2, b);
    String leftMember = sendStaleOffsets(bs, tp0, left);
    check(leftMember.contains("CommitFailedException")
        && leftMember.contains("The coordinator is not aware of this member"), leftMember);
    b.finish();
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("group.id", group))) {
      OffsetAndMetadata o = c.committed(Set.of(tp0)).get(tp0);
      check(o == null || o.offset() != 3, "a refused offset was committed: " + o);
    }
    System.out.println("ok zombie");
  }

  /** Sends offset 3 with `meta` in a transaction; returns what happened. */
  static String sendStaleOffsets(String bs, TopicPartition tp,
      org.apache.kafka.clients.consumer.ConsumerGroupMetadata meta) throws Exception {
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("transactional.id", unique("zombie-tx")))) {
      p.initTransactions();
      p.beginTransaction();
      try {
        p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(3)), meta);
        p.commitTransaction();
        return "committed";
      } catch (org.apache.kafka.common.KafkaException e) {
        p.abortTransaction();
        String what = e.getClass().getSimpleName() + ": " + e.getMessage();
        System.out.println("generation " + meta.generationId() + " refused: " + what);
        return what;
      }
    }
  }

  /**
   * N transactions of 5 records over 2 partitions, each retried (as a new attempt with new
   * values) until one commits; through a broker crash. OUTFILE gets one line per attempt:
   * "committed|aborted|unknown ATTEMPT" (unknown: neither commit nor abort returned).
   */
  static void txnAcked(String bs, String topic, int n, Path outFile) throws Exception {
    createTopic(bs, topic, 2);
    StringBuilder log = new StringBuilder();
    Map<String, String> cfg = Map.of("transactional.id", unique("crash-tx"), "linger.ms", "1",
        "request.timeout.ms", "10000", "max.block.ms", "30000", "delivery.timeout.ms", "30000",
        "reconnect.backoff.ms", "50", "reconnect.backoff.max.ms", "500", "retry.backoff.ms", "50");
    KafkaProducer<byte[], byte[]> p = producer(bs, cfg);
    p.initTransactions();
    int errors = 0;
    for (int t = 0; t < n; t++) {
      for (int attempt = 0; ; attempt++) {
        String id = "t" + t + "a" + attempt;
        try {
          p.beginTransaction();
          for (int i = 0; i < 5; i++) {
            p.send(new ProducerRecord<>(topic, i % 2, null, (id + "-" + i).getBytes(StandardCharsets.UTF_8)));
          }
          p.commitTransaction();
          log.append("committed ").append(id).append('\n');
          break;
        } catch (org.apache.kafka.common.KafkaException e) {
          errors++;
          if (errors <= 5) {
            System.out.println(id + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
          }
          try {
            p.abortTransaction();
            log.append("aborted ").append(id).append('\n');
          } catch (org.apache.kafka.common.KafkaException e2) {
            if (errors <= 5) {
              System.out.println(id + " abort: " + e2.getClass().getSimpleName() + ": " + e2.getMessage());
            }
            log.append("unknown ").append(id).append('\n');
            p.close(Duration.ZERO);
            p = producer(bs, cfg);
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            while (true) {
              try {
                p.initTransactions();
                break;
              } catch (org.apache.kafka.common.errors.TimeoutException e3) {
                check(System.currentTimeMillis() < deadline, "hang guard: initTransactions");
              }
            }
          }
        }
      }
    }
    p.close();
    Files.writeString(outFile, log.toString());
    System.out.println("ok txn_acked " + n + " errors " + errors);
  }

  static void txnCheck(String bs, String topic, Path file) throws Exception {
    Map<String, Integer> count = new HashMap<>();
    for (int part = 0; part < 2; part++) {
      for (String v : readAll(bs, new TopicPartition(topic, part), "read_committed")) {
        count.merge(v, 1, Integer::sum);
      }
    }
    int committed = 0;
    for (String l : Files.readAllLines(file)) {
      String[] f = l.split(" ");
      int present = 0;
      for (int i = 0; i < 5; i++) {
        Integer c = count.get(f[1] + "-" + i);
        check(c == null || c == 1, f[1] + "-" + i + " read " + c + " times");
        present += c == null ? 0 : 1;
      }
      switch (f[0]) {
        case "committed" -> check(present == 5, "committed " + f[1] + ": " + present + " of 5 visible");
        case "aborted" -> check(present == 0, "aborted " + f[1] + ": " + present + " of 5 visible");
        default -> check(present == 0 || present == 5, "unknown " + f[1] + " half visible: " + present);
      }
      committed += f[0].equals("committed") ? 1 : 0;
    }
    System.out.println("ok txn_check committed " + committed);
  }

  static void cooperative(String bs) throws Exception {
    String topic = unique("coop");
    String group = unique("coop-g");
    createTopic(bs, topic, 6);
    int total = 6 * 20;
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of())) {
      for (int i = 0; i < total; i++) {
        p.send(new ProducerRecord<>(topic, i % 6, null, ("c-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      p.flush();
    }
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    Map<String, String> cfg = Map.of("group.id", group, "group.protocol", "classic",
        "partition.assignment.strategy", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
        "max.poll.records", "3");
    Member a = new Member("ca", bs, topic, cfg, seen);
    a.thread.start();
    waitFor("a holds all", () -> a.assignment.get().size() == 6, a);
    Member b = new Member("cb", bs, topic, cfg, seen);
    b.thread.start();
    waitFor("b gets a share", () -> b.assignment.get().size() == 3 && a.assignment.get().size() == 3, a, b);
    Member c = new Member("cc", bs, topic, cfg, seen);
    c.thread.start();
    waitFor("three members of two", () -> a.assignment.get().size() == 2 && b.assignment.get().size() == 2
        && c.assignment.get().size() == 2, a, b, c);
    b.finish();
    waitFor("after b left", () -> a.assignment.get().size() + c.assignment.get().size() == 6, a, c);
    waitFor("every record", () -> seen.size() == total, a, c);
    a.finish();
    c.finish();
    System.out.println("ok cooperative " + seen.size());
  }

  static void staticMembership(String bs) throws Exception {
    String topic = unique("static");
    String group = unique("static-g");
    createTopic(bs, topic, 2);
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    // A session longer than every wait below: only a LeaveGroup (or fencing) moves partitions.
    Map<String, String> cfgA = Map.of("group.id", group, "group.protocol", "classic",
        "group.instance.id", "inst-a", "session.timeout.ms", "300000");
    Map<String, String> cfgB = Map.of("group.id", group, "group.protocol", "classic",
        "group.instance.id", "inst-b", "session.timeout.ms", "300000");
    Member a = new Member("sa", bs, topic, cfgA, seen);
    Member b = new Member("sb", bs, topic, cfgB, seen);
    a.thread.start();
    b.thread.start();
    waitFor("both static members assigned", () -> a.assignment.get().size() == 1 && b.assignment.get().size() == 1, a, b);
    Set<TopicPartition> bHad = b.assignment.get();
    b.finish(); // a static member's close does not leave the group
    Member b2 = new Member("sb2", bs, topic, cfgB, seen);
    b2.thread.start();
    waitFor("the same instance rejoins with its partition", () -> b2.assignment.get().equals(bHad), b2, a);
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of())) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>(topic, i % 2, null, ("s-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      p.flush();
    }
    waitFor("records", () -> seen.size() == 10, a, b2);
    // A second consumer with the same instance id while b2 still runs: b2 is fenced.
    Member b3 = new Member("sb3", bs, topic, cfgB, seen);
    b3.thread.start();
    waitFor("the older instance fenced", () -> b2.failure.get() != null, a, b3);
    check(b2.failure.get() instanceof org.apache.kafka.common.errors.FencedInstanceIdException,
        "fenced with " + b2.failure.get());
    waitFor("the new instance holds the partition", () -> b3.assignment.get().equals(bHad), a, b3);
    // Leaving explicitly hands the partition over at once.
    b3.closeOptions = org.apache.kafka.clients.consumer.CloseOptions.groupMembershipOperation(
        org.apache.kafka.clients.consumer.CloseOptions.GroupMembershipOperation.LEAVE_GROUP);
    b3.finish();
    waitFor("a static member's LeaveGroup", () -> a.assignment.get().size() == 2, a);
    a.finish();
    System.out.println("ok static");
  }

  static void requireStable(String bs) throws Exception {
    String topic = unique("stable");
    String group = unique("stable-g");
    createTopic(bs, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of())) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>(topic, 0, null, ("u-" + i).getBytes(StandardCharsets.UTF_8)));
      }
      p.flush();
    }
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("transactional.id", unique("stable-tx")));
        KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("group.id", group, "group.protocol", "classic"))) {
      p.initTransactions();
      p.beginTransaction();
      p.sendOffsetsToTransaction(Map.of(tp, new OffsetAndMetadata(7)), c.groupMetadata());
      // Pending: a consumer's committed() asks for stable offsets (KafkaConsumer always does),
      // so it is answered UNSTABLE_OFFSET_COMMIT and retries until its bound; the admin client
      // (not asking for stable offsets) sees the last committed one: none.
      try (KafkaConsumer<byte[], byte[]> rc = consumer(bs, Map.of("group.id", group,
          "isolation.level", "read_committed", "default.api.timeout.ms", "1500"))) {
        try {
          Map<TopicPartition, OffsetAndMetadata> got = rc.committed(Set.of(tp));
          throw new AssertionError("FAIL: committed() with a pending offset: " + got);
        } catch (org.apache.kafka.common.errors.TimeoutException e) {
          System.out.println("pending offset: committed() waits");
        }
      }
      Properties ap = base(bs);
      try (Admin admin = Admin.create(ap)) {
        Map<TopicPartition, OffsetAndMetadata> got = admin.listConsumerGroupOffsets(group)
            .partitionsToOffsetAndMetadata().get(DEADLINE_MS, TimeUnit.MILLISECONDS);
        check(got.get(tp) == null, "admin sees the pending offset: " + got);
      }
      p.commitTransaction();
      check(c.committed(Set.of(tp)).get(tp).offset() == 7, "committed after the commit");
    }
    System.out.println("ok stable");
  }

  static void large(String bs) throws Exception {
    String topic = unique("large");
    createTopic(bs, topic, 1);
    TopicPartition tp = new TopicPartition(topic, 0);
    byte[] big = new byte[900_000];
    new java.util.Random(7).nextBytes(big);
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of("max.request.size", "2000000"))) {
      p.send(new ProducerRecord<>(topic, 0, null, "small".getBytes(StandardCharsets.UTF_8))).get();
      p.send(new ProducerRecord<>(topic, 0, null, big)).get();
      p.send(new ProducerRecord<>(topic, 0, null, "after".getBytes(StandardCharsets.UTF_8))).get();
      // Over message.max.bytes: refused with RecordTooLarge, not a hang or a closed connection.
      try {
        p.send(new ProducerRecord<>(topic, 0, null, new byte[1_500_000])).get();
        throw new AssertionError("FAIL: a 1.5 MB record was accepted");
      } catch (java.util.concurrent.ExecutionException e) {
        System.out.println("too large: " + e.getCause().getClass().getSimpleName());
        check(e.getCause() instanceof org.apache.kafka.common.errors.RecordTooLargeException, "too large: " + e.getCause());
      }
    }
    // A record bigger than the fetch limits still comes back (KIP-74).
    try (KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("max.partition.fetch.bytes", "1000", "fetch.max.bytes", "1000"))) {
      c.assign(List.of(tp));
      c.seekToBeginning(List.of(tp));
      List<ConsumerRecord<byte[], byte[]>> got = pollTo(c, tp, 3);
      check(got.size() == 3 && Arrays.equals(got.get(1).value(), big), "large record read back");
    }
    System.out.println("ok large");
  }

  static void metadata(String bs) throws Exception {
    String topic = unique("meta");
    createTopic(bs, topic, 3);
    try (KafkaProducer<byte[], byte[]> p = producer(bs, Map.of());
        KafkaConsumer<byte[], byte[]> c = consumer(bs, Map.of("group.id", unique("meta-g"), "group.protocol", "classic"))) {
      check(p.partitionsFor(topic).size() == 3, "producer partitionsFor");
      check(c.partitionsFor(topic).size() == 3, "consumer partitionsFor");
      check(c.listTopics().containsKey(topic), "listTopics");
      // Auto-created by the producer's metadata request.
      String auto = unique("auto");
      p.send(new ProducerRecord<>(auto, null, "a".getBytes(StandardCharsets.UTF_8))).get();
      check(c.partitionsFor(auto).size() == 1, "auto-created topic");
      c.subscribe(java.util.regex.Pattern.compile(java.util.regex.Pattern.quote(auto) + "|" + java.util.regex.Pattern.quote(topic)));
      p.send(new ProducerRecord<>(topic, 1, null, "m".getBytes(StandardCharsets.UTF_8))).get();
      List<ConsumerRecord<byte[], byte[]>> got = pollN(c, 2);
      check(got.size() == 2, "pattern subscription");
    }
    System.out.println("ok metadata");
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
    /** How `close` leaves the group (null: the default `close()`). */
    volatile org.apache.kafka.clients.consumer.CloseOptions closeOptions;
    /** The member's group metadata after its last poll (read on its own thread). */
    final AtomicReference<org.apache.kafka.clients.consumer.ConsumerGroupMetadata> meta = new AtomicReference<>();
    final Thread thread;
    final String topic;

    Member(String name, String bs, String topic, String group, Map<String, Integer> seen) {
      this(name, bs, topic, Map.of("group.id", group, "group.protocol", "classic",
          "max.poll.records", "5", "session.timeout.ms", "30000"), seen);
    }

    Member(String name, String bs, String topic, Map<String, String> cfg, Map<String, Integer> seen) {
      this.name = name;
      this.topic = topic;
      this.seen = seen;
      this.consumer = consumer(bs, cfg);
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
          meta.set(consumer.groupMetadata());
          Map<TopicPartition, OffsetAndMetadata> commit = new HashMap<>();
          for (ConsumerRecord<byte[], byte[]> r : rs) {
            seen.merge(r.partition() + ":" + r.offset(), 1, Integer::sum);
            commit.put(new TopicPartition(r.topic(), r.partition()),
                new OffsetAndMetadata(r.offset() + 1, r.leaderEpoch(), name + "@" + (r.offset() + 1)));
          }
          if (!rs.isEmpty()) {
            consumer.commitSync(commit);
          }
        }
        if (closeOptions == null) {
          consumer.close(); // a dynamic member leaves the group; a static one stays
        } else {
          consumer.close(closeOptions);
        }
      } catch (Throwable e) {
        failure.set(e);
        consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
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
    long start = System.currentTimeMillis();
    long deadline = start + DEADLINE_MS;
    while (!cond.getAsBoolean()) {
      for (Member m : ms) {
        if (m.failure.get() != null) {
          throw new AssertionError(m.name + " failed", m.failure.get());
        }
      }
      check(System.currentTimeMillis() < deadline, "hang guard: " + what);
      Thread.sleep(20);
    }
    if (System.getProperty("client.log") != null) {
      System.out.println(what + ": " + (System.currentTimeMillis() - start) + " ms");
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
        check(o.leaderEpoch().isPresent() && o.metadata().endsWith("@" + o.offset()),
            "committed epoch and metadata p" + p + " = " + o);
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
