import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.time.Duration;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.DescribeProducersResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Kafka's own Admin API (kafka-clients 4.3.0) against one broker, one scenario per run. Each
 * scenario prints "key=value" lines that the Rust test checks; a failed call prints the simple
 * name of its exception class as the value, so a hang (TimeoutException) or an unexpected error
 * shows up as a wrong value, not as a crash.
 *
 * <p>Usage: AdminScenarios SCENARIO BOOTSTRAP, SCENARIO one of topics, configs, offsets, cluster,
 * groups, transactions; AdminScenarios loggers BOOTSTRAP PHASE, PHASE set or delete.
 */
public final class AdminScenarios {
  private static String bootstrap;
  private static long tsBase;

  public static void main(String[] args) throws Exception {
    bootstrap = args[1];
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    // Bounds, not synchronisation: a call that hangs ends as a TimeoutException line.
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
    try (Admin admin = Admin.create(props)) {
      switch (args[0]) {
        case "topics" -> topics(admin);
        case "configs" -> configs(admin);
        case "offsets" -> offsets(admin);
        case "cluster" -> cluster(admin);
        case "groups" -> groups(admin);
        case "transactions" -> transactions(admin);
        case "unsupported" -> unsupported(admin);
        case "internal" -> internal(admin);
        case "loggers" -> loggers(admin, args[2]);
        default -> throw new IllegalArgumentException("unknown scenario " + args[0]);
      }
    }
  }

  static void out(String key, Object value) {
    System.out.println(key + "=" + value);
  }

  /** "ok", or the simple class name of the exception the future failed with. */
  static String outcome(KafkaFuture<?> f) {
    try {
      f.get();
      return "ok";
    } catch (ExecutionException e) {
      return e.getCause().getClass().getSimpleName();
    } catch (InterruptedException e) {
      throw new RuntimeException(e);
    }
  }

  static <T> T get(KafkaFuture<T> f) throws Exception {
    return f.get();
  }

  static String partitions(TopicDescription d) {
    List<String> parts = new ArrayList<>();
    for (TopicPartitionInfo p : d.partitions()) {
      parts.add(
          p.partition()
              + ":"
              + p.leader().id()
              + ":"
              + p.replicas().stream().map(n -> n.id()).toList()
              + ":"
              + p.isr().stream().map(n -> n.id()).toList());
    }
    return String.join(",", parts);
  }

  static Set<String> names(Collection<TopicListing> listings) {
    Set<String> s = new TreeSet<>();
    for (TopicListing l : listings) {
      s.add(l.name() + (l.isInternal() ? "(internal)" : ""));
    }
    return s;
  }

  // ---------------------------------------------------------------------------------------------
  static void topics(Admin admin) throws Exception {
    NewTopic t1 =
        new NewTopic("t1", 3, (short) 1)
            .configs(Map.of("retention.ms", "3600000", "segment.bytes", "1048576"));
    NewTopic t2 = new NewTopic("t2", Optional.empty(), Optional.empty());
    NewTopic t3 = new NewTopic("t3", 2, (short) -1);
    CreateTopicsResult created = admin.createTopics(List.of(t1, t2, t3));
    for (String t : List.of("t1", "t2", "t3")) {
      out("create." + t, outcome(created.values().get(t)));
      out("create." + t + ".partitions", outcome(created.numPartitions(t)) + ":" + created.numPartitions(t).getNow(-1));
      out("create." + t + ".rf", created.replicationFactor(t).getNow(-1));
      out("create." + t + ".id_set", !created.topicId(t).getNow(Uuid.ZERO_UUID).equals(Uuid.ZERO_UUID));
    }
    Config c1 = created.config("t1").get();
    for (String k : List.of("retention.ms", "segment.bytes", "cleanup.policy")) {
      ConfigEntry e = c1.get(k);
      out("create.t1.config." + k, e == null ? "absent" : e.value() + ":" + e.source());
    }

    // validateOnly: answers like a real creation, creates nothing.
    CreateTopicsResult v =
        admin.createTopics(
            List.of(new NewTopic("v1", 4, (short) 1)), new CreateTopicsOptions().validateOnly(true));
    out("validate.v1", outcome(v.all()));
    out("validate.v1.partitions", v.numPartitions("v1").getNow(-1));

    out("exists.t1", outcome(admin.createTopics(List.of(new NewTopic("t1", 1, (short) 1))).all()));
    out(
        "invalid.config.value",
        outcome(
            admin
                .createTopics(
                    List.of(new NewTopic("bad1", 1, (short) 1).configs(Map.of("retention.ms", "abc"))))
                .all()));
    out(
        "invalid.config.name",
        outcome(
            admin
                .createTopics(
                    List.of(new NewTopic("bad2", 1, (short) 1).configs(Map.of("no.such.config", "1"))))
                .all()));
    out("invalid.rf3", outcome(admin.createTopics(List.of(new NewTopic("bad3", 1, (short) 3))).all()));
    out("invalid.partitions0", outcome(admin.createTopics(List.of(new NewTopic("bad4", 0, (short) 1))).all()));
    out("invalid.name", outcome(admin.createTopics(List.of(new NewTopic("bad name!", 1, (short) 1))).all()));

    out("list", names(admin.listTopics().listings().get()));
    out("list.internal", names(admin.listTopics(new ListTopicsOptions().listInternal(true)).listings().get()));

    Map<String, TopicDescription> byName = admin.describeTopics(List.of("t1", "t2", "t3")).allTopicNames().get();
    for (String t : List.of("t1", "t2", "t3")) {
      TopicDescription d = byName.get(t);
      out("describe." + t, partitions(d) + " internal=" + d.isInternal());
    }
    Uuid id1 = byName.get("t1").topicId();
    Uuid id2 = byName.get("t2").topicId();
    out("describe.id_matches_create", id1.equals(created.topicId("t1").get()));
    try {
      Map<Uuid, TopicDescription> byId =
          admin.describeTopics(TopicCollection.ofTopicIds(List.of(id1, id2))).allTopicIds().get();
      out("describe.byid.t1", byId.get(id1).name() + " " + partitions(byId.get(id1)));
      out("describe.byid.t2", byId.get(id2).name());
    } catch (ExecutionException e) {
      out("describe.byid", e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
    }
    out("describe.unknown", outcome(admin.describeTopics(List.of("nope")).allTopicNames()));
    out(
        "describe.unknown_id",
        outcome(admin.describeTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).allTopicIds()));

    out("partitions.t1.to5", outcome(admin.createPartitions(Map.of("t1", NewPartitions.increaseTo(5))).all()));
    out("partitions.t1.after", admin.describeTopics(List.of("t1")).allTopicNames().get().get("t1").partitions().size());
    out("partitions.t1.to2", outcome(admin.createPartitions(Map.of("t1", NewPartitions.increaseTo(2))).all()));
    out("partitions.t1.same", outcome(admin.createPartitions(Map.of("t1", NewPartitions.increaseTo(5))).all()));
    out(
        "partitions.t2.validate",
        outcome(
            admin
                .createPartitions(
                    Map.of("t2", NewPartitions.increaseTo(7)), new CreatePartitionsOptions().validateOnly(true))
                .all()));
    out("partitions.t2.after_validate", admin.describeTopics(List.of("t2")).allTopicNames().get().get("t2").partitions().size());
    out("partitions.unknown", outcome(admin.createPartitions(Map.of("nope", NewPartitions.increaseTo(2))).all()));

    out("delete.t2.byname", outcome(admin.deleteTopics(List.of("t2")).all()));
    out("delete.t1.byid", outcome(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(id1))).all()));
    out("delete.unknown", outcome(admin.deleteTopics(List.of("nope")).all()));
    out("delete.unknown_id", outcome(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all()));
    out("list.after_delete", names(admin.listTopics().listings().get()));
  }

  // ---------------------------------------------------------------------------------------------
  static String entry(Config c, String name) {
    ConfigEntry e = c.get(name);
    if (e == null) {
      return "absent";
    }
    List<String> syn = new ArrayList<>();
    for (ConfigEntry.ConfigSynonym s : e.synonyms()) {
      syn.add(s.name() + "=" + s.value() + "@" + s.source());
    }
    return e.value()
        + " "
        + e.source()
        + " default="
        + e.isDefault()
        + " ro="
        + e.isReadOnly()
        + " sensitive="
        + e.isSensitive()
        + " type="
        + e.type()
        + " doc="
        + (e.documentation() != null && !e.documentation().isEmpty())
        + " synonyms="
        + syn;
  }

  /** "ok", or the simple class name and the message of the exception the future failed with. */
  static String outcomeWithMessage(KafkaFuture<?> f) {
    try {
      f.get();
      return "ok";
    } catch (ExecutionException e) {
      return e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage();
    } catch (InterruptedException e) {
      throw new RuntimeException(e);
    }
  }

  static String alterLogger(
      Admin admin, ConfigResource node, String logger, String level, AlterConfigOp.OpType op, boolean validateOnly) {
    return outcomeWithMessage(
        admin
            .incrementalAlterConfigs(
                Map.of(node, List.of(new AlterConfigOp(new ConfigEntry(logger, level), op))),
                new AlterConfigsOptions().validateOnly(validateOnly))
            .all());
  }

  /**
   * The broker's loggers (BROKER_LOGGER of node 1, as kafka-configs.sh --entity-type
   * broker-loggers): phase "set" describes them, is refused a bad level, an unknown logger, a
   * DELETE of root and an APPEND, validates a SET only, then sets mirrorlog_broker to DEBUG;
   * phase "delete" deletes that level again.
   */
  static void loggers(Admin admin, String phase) throws Exception {
    ConfigResource node = new ConfigResource(ConfigResource.Type.BROKER_LOGGER, "1");
    AlterConfigOp.OpType set = AlterConfigOp.OpType.SET;
    if (phase.equals("set")) {
      Config before = admin.describeConfigs(List.of(node)).all().get().get(node);
      out("before.root", entry(before, "root"));
      out("before.mirrorlog_broker", entry(before, "mirrorlog_broker"));
      out("before.mirrorlog_engine", before.get("mirrorlog_engine").value());
      out("set.bad_level", alterLogger(admin, node, "mirrorlog_broker", "VERBOSE", set, false));
      out("set.lower_case", alterLogger(admin, node, "mirrorlog_broker", "debug", set, false));
      out("set.unknown_logger", alterLogger(admin, node, "kafka.server", "DEBUG", set, false));
      out("delete.root", alterLogger(admin, node, "root", "", AlterConfigOp.OpType.DELETE, false));
      out("append", alterLogger(admin, node, "mirrorlog_broker", "DEBUG", AlterConfigOp.OpType.APPEND, false));
      out("validate_only", alterLogger(admin, node, "root", "TRACE", set, true));
      out("set", alterLogger(admin, node, "mirrorlog_broker", "DEBUG", set, false));
      Config after = admin.describeConfigs(List.of(node)).all().get().get(node);
      out("after.set.root", after.get("root").value());
      out("after.set.mirrorlog_broker", after.get("mirrorlog_broker").value());
    } else {
      out("delete", alterLogger(admin, node, "mirrorlog_broker", "", AlterConfigOp.OpType.DELETE, false));
      Config after = admin.describeConfigs(List.of(node)).all().get().get(node);
      out("after.delete.mirrorlog_broker", after.get("mirrorlog_broker").value());
    }
  }

  static void configs(Admin admin) throws Exception {
    admin
        .createTopics(
            List.of(new NewTopic("c1", 1, (short) 1).configs(Map.of("retention.ms", "1000000"))))
        .all()
        .get();
    ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "c1");
    ConfigResource broker = new ConfigResource(ConfigResource.Type.BROKER, "1");

    Config plain = admin.describeConfigs(List.of(topic)).all().get().get(topic);
    out("topic.plain.retention.ms", entry(plain, "retention.ms"));
    out("topic.plain.segment.bytes", entry(plain, "segment.bytes"));
    Config full =
        admin
            .describeConfigs(
                List.of(topic), new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true))
            .all()
            .get()
            .get(topic);
    out("topic.full.retention.ms", entry(full, "retention.ms"));
    out("topic.full.segment.bytes", entry(full, "segment.bytes"));
    out("topic.full.cleanup.policy", entry(full, "cleanup.policy"));
    // Kafka topic configs mirrorlog does not implement, listed at the value it behaves as.
    out("topic.full.min.insync.replicas", entry(full, "min.insync.replicas"));
    out("topic.full.min.cleanable.dirty.ratio", entry(full, "min.cleanable.dirty.ratio"));
    out("topic.full.remote.storage.enable", entry(full, "remote.storage.enable"));

    Config b =
        admin
            .describeConfigs(
                List.of(broker), new DescribeConfigsOptions().includeSynonyms(true).includeDocumentation(true))
            .all()
            .get()
            .get(broker);
    out("broker.count_positive", b.entries().size() > 0);
    out("broker.log.retention.ms", entry(b, "log.retention.ms"));
    out("broker.log.segment.bytes", entry(b, "log.segment.bytes"));
    ConfigResource unknownTopic = new ConfigResource(ConfigResource.Type.TOPIC, "nope");
    out("topic.unknown", outcome(admin.describeConfigs(List.of(unknownTopic)).all()));

    // incrementalAlterConfigs: SET, DELETE, APPEND, SUBTRACT.
    out(
        "alter.set",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(
                            new AlterConfigOp(new ConfigEntry("retention.ms", "2000000"), AlterConfigOp.OpType.SET),
                            new AlterConfigOp(new ConfigEntry("segment.ms", "100000"), AlterConfigOp.OpType.SET))))
                .all()));
    Config afterSet = admin.describeConfigs(List.of(topic)).all().get().get(topic);
    out("after.set.retention.ms", afterSet.get("retention.ms").value() + " " + afterSet.get("retention.ms").source());
    out("after.set.segment.ms", afterSet.get("segment.ms").value() + " " + afterSet.get("segment.ms").source());
    out(
        "alter.delete",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(new AlterConfigOp(new ConfigEntry("segment.ms", ""), AlterConfigOp.OpType.DELETE))))
                .all()));
    Config afterDelete = admin.describeConfigs(List.of(topic)).all().get().get(topic);
    out("after.delete.segment.ms", afterDelete.get("segment.ms").value() + " " + afterDelete.get("segment.ms").source());
    out(
        "alter.subtract",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(
                            new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT))))
                .all()));
    Config afterSubtract = admin.describeConfigs(List.of(topic)).all().get().get(topic);
    out(
        "after.subtract.cleanup.policy",
        "[" + afterSubtract.get("cleanup.policy").value() + "] " + afterSubtract.get("cleanup.policy").source());
    out(
        "alter.append",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(
                            new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND))))
                .all()));
    Config afterAppend = admin.describeConfigs(List.of(topic)).all().get().get(topic);
    out(
        "after.append.cleanup.policy",
        "[" + afterAppend.get("cleanup.policy").value() + "] " + afterAppend.get("cleanup.policy").source());
    out(
        "alter.append.twice",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(
                            new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.APPEND))))
                .all()));
    out("after.append.twice.cleanup.policy", "[" + admin.describeConfigs(List.of(topic)).all().get().get(topic).get("cleanup.policy").value() + "]");
    out(
        "alter.append.nonlist",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "5"), AlterConfigOp.OpType.APPEND))))
                .all()));
    out(
        "alter.invalid",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "abc"), AlterConfigOp.OpType.SET))))
                .all()));
    out(
        "alter.unknown_key",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET))))
                .all()));
    out(
        "alter.validate_only",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        topic,
                        List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "7"), AlterConfigOp.OpType.SET))),
                    new AlterConfigsOptions().validateOnly(true))
                .all()));
    out("after.validate_only.retention.ms", admin.describeConfigs(List.of(topic)).all().get().get(topic).get("retention.ms").value());
    out(
        "alter.unknown_topic",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        unknownTopic,
                        List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "7"), AlterConfigOp.OpType.SET))))
                .all()));
    out(
        "alter.broker",
        outcome(
            admin
                .incrementalAlterConfigs(
                    Map.of(
                        broker,
                        List.of(new AlterConfigOp(new ConfigEntry("log.retention.ms", "7"), AlterConfigOp.OpType.SET))))
                .all()));
  }

  // ---------------------------------------------------------------------------------------------
  static Properties producerProps() {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
    return p;
  }

  static String offsetsOf(Admin admin, TopicPartition tp, OffsetSpec spec, IsolationLevel level) {
    try {
      ListOffsetsResult.ListOffsetsResultInfo i =
          admin.listOffsets(Map.of(tp, spec), new ListOffsetsOptions(level)).partitionResult(tp).get();
      // Timestamps relative to the scenario's base time.
      return i.offset() + "@" + (i.timestamp() == -1 ? "-1" : "base+" + (i.timestamp() - tsBase));
    } catch (ExecutionException e) {
      return e.getCause().getClass().getSimpleName();
    } catch (InterruptedException e) {
      throw new RuntimeException(e);
    }
  }

  static void offsets(Admin admin) throws Exception {
    admin.createTopics(List.of(new NewTopic("o1", 1, (short) 1))).all().get();
    TopicPartition tp = new TopicPartition("o1", 0);
    IsolationLevel ru = IsolationLevel.READ_UNCOMMITTED;
    IsolationLevel rc = IsolationLevel.READ_COMMITTED;
    out("empty.earliest", offsetsOf(admin, tp, OffsetSpec.earliest(), ru));
    out("empty.latest", offsetsOf(admin, tp, OffsetSpec.latest(), ru));
    out("empty.max", offsetsOf(admin, tp, OffsetSpec.maxTimestamp(), ru));
    long base = System.currentTimeMillis() - 60_000;
    tsBase = base;
    try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
      long[] ts = {base, base + 5000, base + 3000, base + 4000};
      for (int i = 0; i < ts.length; i++) {
        p.send(new ProducerRecord<>("o1", 0, ts[i], "k" + i, "v" + i)).get();
      }
    }
    // An open transaction: the last stable offset stays at its first record.
    Properties tx = producerProps();
    tx.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "offsets-tx");
    KafkaProducer<String, String> txp = new KafkaProducer<>(tx);
    txp.initTransactions();
    txp.beginTransaction();
    txp.send(new ProducerRecord<>("o1", 0, base + 6000, "t", "t")).get();
    txp.flush();
    out("earliest", offsetsOf(admin, tp, OffsetSpec.earliest(), ru));
    out("latest.uncommitted", offsetsOf(admin, tp, OffsetSpec.latest(), ru));
    out("latest.committed", offsetsOf(admin, tp, OffsetSpec.latest(), rc));
    out("ts.base+3500", offsetsOf(admin, tp, OffsetSpec.forTimestamp(base + 3500), ru));
    out("ts.base", offsetsOf(admin, tp, OffsetSpec.forTimestamp(base), ru));
    out("ts.after_all", offsetsOf(admin, tp, OffsetSpec.forTimestamp(base + 100_000), ru));
    out("ts.base+5500.committed", offsetsOf(admin, tp, OffsetSpec.forTimestamp(base + 5500), rc));
    out("ts.base+5500.uncommitted", offsetsOf(admin, tp, OffsetSpec.forTimestamp(base + 5500), ru));
    out("max.uncommitted", offsetsOf(admin, tp, OffsetSpec.maxTimestamp(), ru));
    out("max.committed", offsetsOf(admin, tp, OffsetSpec.maxTimestamp(), rc));
    out("earliest_local", offsetsOf(admin, tp, OffsetSpec.earliestLocal(), ru));
    out("latest_tiered", offsetsOf(admin, tp, OffsetSpec.latestTiered(), ru));
    txp.commitTransaction();
    txp.close();
    out("after_commit.latest.committed", offsetsOf(admin, tp, OffsetSpec.latest(), rc));
    out("unknown", offsetsOf(admin, new TopicPartition("nope", 0), OffsetSpec.latest(), ru));

    var del = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(2))).lowWatermarks().get(tp);
    out("delete_records", outcome(del) + ":" + (del.isDone() && !del.isCompletedExceptionally() ? del.get().lowWatermark() : -1));
    out("after_delete.earliest", offsetsOf(admin, tp, OffsetSpec.earliest(), ru));
    out("after_delete.ts.base", offsetsOf(admin, tp, OffsetSpec.forTimestamp(base), ru));
    var beyond = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(100))).lowWatermarks().get(tp);
    out("delete_records.beyond", outcome(beyond));
    var all = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp);
    out("delete_records.hw", outcome(all) + ":" + (all.isDone() && !all.isCompletedExceptionally() ? all.get().lowWatermark() : -1));
  }

  // ---------------------------------------------------------------------------------------------
  static void cluster(Admin admin) throws Exception {
    DescribeClusterResult c = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
    out("cluster.id_set", c.clusterId().get() != null && !c.clusterId().get().isEmpty());
    out("cluster.nodes", c.nodes().get().stream().map(n -> n.id() + "@" + n.host() + ":" + n.port()).toList());
    out("cluster.controller", c.controller().get().id());
    Set<?> ops = c.authorizedOperations().get();
    out("cluster.authorized_operations", ops == null ? "null" : new TreeSet<>(ops.stream().map(Object::toString).toList()));

    try {
      FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
      out("features.finalized", new TreeMap<>(f.finalizedFeatures()).entrySet().stream()
          .map(e -> e.getKey() + "=" + e.getValue().minVersionLevel() + ".." + e.getValue().maxVersionLevel()).toList());
      out("features.supported", new TreeMap<>(f.supportedFeatures()).entrySet().stream()
          .map(e -> e.getKey() + "=" + e.getValue().minVersion() + ".." + e.getValue().maxVersion()).toList());
      out("features.epoch", f.finalizedFeaturesEpoch());
    } catch (ExecutionException e) {
      out("features", e.getCause().getClass().getSimpleName());
    }
    // What `kafka-features.sh upgrade` sends: UpdateFeatures (API 57), which is not advertised.
    try {
      admin.updateFeatures(Map.of("transaction.version",
          new FeatureUpdate((short) 2, FeatureUpdate.UpgradeType.UPGRADE)), new UpdateFeaturesOptions()).all().get();
      out("features.update", "ok");
    } catch (ExecutionException e) {
      out("features.update", e.getCause().getClass().getSimpleName());
    }

    admin.createTopics(List.of(new NewTopic("d1", 2, (short) 1))).all().get();
    try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>("d1", 1, "k", "value-" + i)).get();
      }
    }
    int node = c.controller().get().id();
    try {
      Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(node)).allDescriptions().get().get(node);
      out("logdirs.count", dirs.size());
      for (Map.Entry<String, LogDirDescription> d : new TreeMap<>(dirs).entrySet()) {
        LogDirDescription ld = d.getValue();
        Map<String, String> reps = new TreeMap<>();
        for (Map.Entry<TopicPartition, ReplicaInfo> r : ld.replicaInfos().entrySet()) {
          if (r.getKey().topic().equals("d1")) {
            reps.put(r.getKey().toString(), r.getValue().size() + ":" + r.getValue().offsetLag() + ":" + r.getValue().isFuture());
          }
        }
        out(
            "logdir",
            d.getKey()
                + " error="
                + (ld.error() == null ? "none" : ld.error().getClass().getSimpleName())
                + " total_set="
                + ld.totalBytes().isPresent()
                + " usable_set="
                + ld.usableBytes().isPresent()
                + " d1="
                + reps);
      }
    } catch (ExecutionException e) {
      out("logdirs", e.getCause().getClass().getSimpleName());
    }
    try {
      var r =
          admin.describeReplicaLogDirs(List.of(new TopicPartitionReplica("d1", 1, node))).all().get();
      var info = r.get(new TopicPartitionReplica("d1", 1, node));
      out("replica_logdirs", "current=" + info.getCurrentReplicaLogDir() + " future=" + info.getFutureReplicaLogDir());
    } catch (ExecutionException e) {
      out("replica_logdirs", e.getCause().getClass().getSimpleName());
    }
  }

  // ---------------------------------------------------------------------------------------------
  static KafkaConsumer<String, String> consumer(String group, String instance) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
    p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
    p.put(ConsumerConfig.CLIENT_ID_CONFIG, "client-" + instance);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "30000");
    p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
    return new KafkaConsumer<>(p);
  }

  static String groupOffsets(Admin admin, String group) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    Map<String, Long> sorted = new TreeMap<>();
    for (var e : m.entrySet()) {
      sorted.put(e.getKey().toString(), e.getValue() == null ? null : e.getValue().offset());
    }
    return sorted.toString();
  }

  static String listing(Collection<GroupListing> ls, String group) {
    for (GroupListing g : ls) {
      if (g.groupId().equals(group)) {
        return "type=" + g.type().map(Object::toString).orElse("?")
            + " protocol=" + g.protocol()
            + " state=" + g.groupState().map(Object::toString).orElse("?")
            + " simple=" + g.isSimpleConsumerGroup();
      }
    }
    return "absent";
  }

  static String describeGroup(Admin admin, String group) {
    try {
      ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
      List<String> members = new ArrayList<>();
      for (MemberDescription m : d.members()) {
        members.add(
            m.groupInstanceId().orElse("-")
                + "/"
                + m.clientId()
                + "/"
                + m.host()
                + "/id_set="
                + !m.consumerId().isEmpty()
                + "/"
                + new TreeSet<>(m.assignment().topicPartitions().stream().map(Object::toString).toList()));
      }
      return "state=" + d.groupState()
          + " type=" + d.type()
          + " simple=" + d.isSimpleConsumerGroup()
          + " assignor=" + d.partitionAssignor()
          + " coordinator=" + d.coordinator().id()
          + " members=" + members;
    } catch (ExecutionException e) {
      return e.getCause().getClass().getSimpleName();
    } catch (InterruptedException e) {
      throw new RuntimeException(e);
    }
  }

  static void groups(Admin admin) throws Exception {
    admin.createTopics(List.of(new NewTopic("g", 2, (short) 1))).all().get();
    try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
      for (int i = 0; i < 10; i++) {
        p.send(new ProducerRecord<>("g", i % 2, "k", "v" + i)).get();
      }
    }
    KafkaConsumer<String, String> c = consumer("g1", "inst-1");
    c.subscribe(List.of("g"));
    int read = 0;
    long deadline = System.currentTimeMillis() + 30_000; // a failure bound only
    while (read < 10 && System.currentTimeMillis() < deadline) {
      read += c.poll(Duration.ofMillis(500)).count();
    }
    out("consumed", read);
    c.commitSync(
        Map.of(
            new TopicPartition("g", 0), new OffsetAndMetadata(5, "meta0"),
            new TopicPartition("g", 1), new OffsetAndMetadata(4)));

    out("list_groups", listing(admin.listGroups().all().get(), "g1"));
    out("list_groups.consumer", listing(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all().get(), "g1"));
    @SuppressWarnings("removal")
    var lcg = admin.listConsumerGroups().all().get();
    out("list_consumer_groups", lcg.stream().map(l -> l.groupId()).sorted().toList());
    out("describe.active", describeGroup(admin, "g1"));
    try {
      var classic = admin.describeClassicGroups(List.of("g1")).describedGroups().get("g1").get();
      out(
          "describe_classic.active",
          "state=" + classic.state()
              + " protocol=" + classic.protocol()
              + " data=" + classic.protocolData()
              + " members=" + classic.members().size());
    } catch (ExecutionException e) {
      out("describe_classic.active", e.getCause().getClass().getSimpleName());
    }
    out("offsets.active", groupOffsets(admin, "g1"));
    out(
        "alter_offsets.active",
        outcome(admin.alterConsumerGroupOffsets("g1", Map.of(new TopicPartition("g", 0), new OffsetAndMetadata(1))).all()));
    out(
        "delete_offsets.active",
        outcome(admin.deleteConsumerGroupOffsets("g1", Set.of(new TopicPartition("g", 0))).all()));
    out("delete_group.active", outcome(admin.deleteConsumerGroups(List.of("g1")).all()));

    out(
        "remove_members",
        outcome(
            admin
                .removeMembersFromConsumerGroup(
                    "g1", new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("inst-1"))))
                .all()));
    out(
        "remove_members.unknown",
        outcome(
            admin
                .removeMembersFromConsumerGroup(
                    "g1", new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("inst-9"))))
                .all()));
    out("describe.after_remove", describeGroup(admin, "g1"));
    c.close(Duration.ofSeconds(1));

    out(
        "alter_offsets.empty",
        outcome(
            admin
                .alterConsumerGroupOffsets(
                    "g1",
                    Map.of(
                        new TopicPartition("g", 0), new OffsetAndMetadata(2),
                        new TopicPartition("g", 1), new OffsetAndMetadata(3, "m")))
                .all()));
    out("offsets.after_alter", groupOffsets(admin, "g1"));
    out(
        "delete_offsets.empty",
        outcome(admin.deleteConsumerGroupOffsets("g1", Set.of(new TopicPartition("g", 0))).all()));
    out("offsets.after_delete_offsets", groupOffsets(admin, "g1"));
    out(
        "delete_offsets.unknown_group",
        outcome(admin.deleteConsumerGroupOffsets("nogroup", Set.of(new TopicPartition("g", 0))).all()));
    // A group that only ever had offsets committed by the admin (a "simple" group).
    out(
        "alter_offsets.new_group",
        outcome(admin.alterConsumerGroupOffsets("g2", Map.of(new TopicPartition("g", 1), new OffsetAndMetadata(7))).all()));
    out("list_groups.g2", listing(admin.listGroups().all().get(), "g2"));
    out("describe.g2", describeGroup(admin, "g2"));
    out("offsets.g2", groupOffsets(admin, "g2"));

    out("delete_group", outcome(admin.deleteConsumerGroups(List.of("g1")).all()));
    out("list_groups.after_delete", listing(admin.listGroups().all().get(), "g1"));
    out("describe.after_delete", describeGroup(admin, "g1"));
    out("offsets.after_delete", groupOffsets(admin, "g1"));
    out("delete_group.unknown", outcome(admin.deleteConsumerGroups(List.of("nogroup")).all()));
  }

  // ---------------------------------------------------------------------------------------------
  static void transactions(Admin admin) throws Exception {
    admin.createTopics(List.of(new NewTopic("x", 1, (short) 1))).all().get();
    TopicPartition tp = new TopicPartition("x", 0);
    Properties idem = producerProps();
    idem.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    try (KafkaProducer<String, String> p = new KafkaProducer<>(idem)) {
      for (int i = 0; i < 3; i++) {
        p.send(new ProducerRecord<>("x", 0, "k", "idem" + i)).get();
      }
    }
    Properties tx = producerProps();
    tx.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "tx1");
    tx.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "45000");
    KafkaProducer<String, String> txp = new KafkaProducer<>(tx);
    txp.initTransactions();
    txp.beginTransaction();
    txp.send(new ProducerRecord<>("x", 0, "k", "tx0")).get();
    txp.send(new ProducerRecord<>("x", 0, "k", "tx1")).get();
    txp.flush();

    try {
      List<ProducerState> ps = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers();
      List<String> s = new ArrayList<>();
      for (ProducerState p : ps) {
        s.add(
            "epoch=" + p.producerEpoch()
                + " last_seq=" + p.lastSequence()
                + " ts_set=" + (p.lastTimestamp() > 0)
                + " coordinator_epoch=" + p.coordinatorEpoch()
                + " txn_start=" + p.currentTransactionStartOffset());
      }
      s.sort(null);
      out("describe_producers", s);
    } catch (ExecutionException e) {
      out("describe_producers", e.getCause().getClass().getSimpleName());
    }
    try {
      Collection<TransactionListing> ls = admin.listTransactions().all().get();
      out("list_transactions", ls.stream().map(l -> l.transactionalId() + ":" + l.state()).sorted().toList());
    } catch (ExecutionException e) {
      out("list_transactions", e.getCause().getClass().getSimpleName());
    }
    try {
      TransactionDescription d = admin.describeTransactions(List.of("tx1")).description("tx1").get();
      out(
          "describe_transactions",
          "state=" + d.state()
              + " timeout=" + d.transactionTimeoutMs()
              + " epoch=" + d.producerEpoch()
              + " partitions=" + d.topicPartitions()
              + " start_set=" + d.transactionStartTimeMs().isPresent());
    } catch (ExecutionException e) {
      out("describe_transactions", e.getCause().getClass().getSimpleName());
    }
    // The hanging-transaction tool's way (kafka-transactions.sh abort): the open transaction's
    // producer from describeProducers, its ABORT marker written by WriteTxnMarkers.
    ProducerState open = null;
    try {
      for (ProducerState p : admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers()) {
        if (p.currentTransactionStartOffset().isPresent()) {
          open = p;
        }
      }
    } catch (ExecutionException e) {
      // Reported above.
    }
    if (open == null) {
      out("abort_transaction", "no open transaction found");
    } else {
      out(
          "abort_transaction",
          outcome(
              admin
                  .abortTransaction(
                      new AbortTransactionSpec(
                          tp, open.producerId(), (short) open.producerEpoch(), open.coordinatorEpoch().orElse(0)))
                  .all()));
    }
    out(
        "lso_after_abort",
        admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
            .partitionResult(tp)
            .get()
            .offset());
    out("fence_producers", outcome(admin.fenceProducers(List.of("tx1")).all()));
    try {
      txp.commitTransaction();
      out("commit_after_fence", "ok");
    } catch (Exception e) {
      out("commit_after_fence", e.getClass().getSimpleName());
    }
    txp.close(Duration.ofSeconds(1));
    out(
        "lso_after_fence",
        admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions(IsolationLevel.READ_COMMITTED))
            .partitionResult(tp)
            .get()
            .offset());
    out(
        "list_transactions.after_fence",
        admin.listTransactions().all().get().stream().map(l -> l.transactionalId() + ":" + l.state()).sorted().toList());
    out(
        "list_transactions.ongoing",
        admin
            .listTransactions(new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING)))
            .all()
            .get()
            .size());
    out("describe_transactions.unknown", outcome(admin.describeTransactions(List.of("never-seen")).description("never-seen")));
    out("fence_producers.unknown", outcome(admin.fenceProducers(List.of("never-used")).all()));
  }

  // ---------------------------------------------------------------------------------------------
  /** Admin calls whose APIs the broker does not advertise: each must fail at once, not hang. */
  static void unsupported(Admin admin) throws Exception {
    admin.createTopics(List.of(new NewTopic("u", 1, (short) 1))).all().get();
    TopicPartition tp = new TopicPartition("u", 0);
    out("describe_acls", outcome(admin.describeAcls(org.apache.kafka.common.acl.AclBindingFilter.ANY).values()));
    out("describe_quorum", outcome(admin.describeMetadataQuorum().quorumInfo()));
    out("list_reassignments", outcome(admin.listPartitionReassignments().reassignments()));
    out(
        "elect_leaders",
        outcome(admin.electLeaders(org.apache.kafka.common.ElectionType.PREFERRED, Set.of(tp)).all()));
    out(
        "describe_client_quotas",
        outcome(
            admin
                .describeClientQuotas(org.apache.kafka.common.quota.ClientQuotaFilter.all())
                .entities()));
    out("describe_scram", outcome(admin.describeUserScramCredentials().all()));
    out("describe_tokens", outcome(admin.describeDelegationToken().delegationTokens()));
    out("list_client_metrics", outcome(admin.listClientMetricsResources().all()));
    out("describe_share_groups", outcome(admin.describeShareGroups(List.of("s")).all()));
    out(
        "alter_replica_log_dirs",
        outcome(admin.alterReplicaLogDirs(Map.of(new TopicPartitionReplica("u", 0, 1), "/tmp")).all()));
    out(
        "update_features",
        outcome(
            admin
                .updateFeatures(
                    Map.of(
                        "transaction.version",
                        new org.apache.kafka.clients.admin.FeatureUpdate(
                            (short) 2, org.apache.kafka.clients.admin.FeatureUpdate.UpgradeType.UPGRADE)),
                    new org.apache.kafka.clients.admin.UpdateFeaturesOptions())
                .all()));
    out("list_config_resources", outcome(admin.listConfigResources().all()));
  }

  // ---------------------------------------------------------------------------------------------
  /** Authorized operations and the internal topics through the Admin API. */
  static void internal(Admin admin) throws Exception {
    admin.createTopics(List.of(new NewTopic("i", 1, (short) 1))).all().get();
    TopicDescription d =
        admin
            .describeTopics(List.of("i"), new org.apache.kafka.clients.admin.DescribeTopicsOptions().includeAuthorizedOperations(true))
            .allTopicNames()
            .get()
            .get("i");
    out("topic.authorized_operations", new TreeSet<>(d.authorizedOperations().stream().map(Object::toString).toList()));
    TopicDescription offsets =
        admin.describeTopics(List.of("__consumer_offsets")).allTopicNames().get().get("__consumer_offsets");
    out("offsets_topic", "internal=" + offsets.isInternal() + " partitions=" + offsets.partitions().size());
    out("delete.offsets_topic", outcome(admin.deleteTopics(List.of("__consumer_offsets")).all()));
    out(
        "delete_records.offsets_topic",
        outcome(
            admin
                .deleteRecords(Map.of(new TopicPartition("__consumer_offsets", 0), RecordsToDelete.beforeOffset(0)))
                .all()));
    out(
        "partitions.offsets_topic",
        outcome(admin.createPartitions(Map.of("__consumer_offsets", NewPartitions.increaseTo(60))).all()));
    ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets");
    out("configs.offsets_topic.retention.ms", admin.describeConfigs(List.of(r)).all().get().get(r).get("retention.ms").value());
  }
}
