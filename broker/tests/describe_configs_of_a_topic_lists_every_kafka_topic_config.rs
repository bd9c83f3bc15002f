//! Bug: a topic's DescribeConfigs listed only the 16 configs mirrorlog implements, where Kafka
//! lists every topic config of its `LogConfig` (`min.insync.replicas`,
//! `unclean.leader.election.enable`, compaction's and tiered storage's keys, …): tools that show
//! or diff a topic's whole config (`kafka-configs.sh --describe --all`, AKHQ, kafka-ui) found
//! them missing, and a request naming one got nothing back. Now every Kafka 4.3 topic config is
//! listed, those mirrorlog does not implement at the value it behaves as (Kafka's default,
//! `DEFAULT_CONFIG`, Kafka's broker synonym if it has one) — all but `preallocate`, whose Kafka
//! default would not say what `log.preallocate` does here. Setting one is refused as before.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::DescribeConfigsRequest;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin::{
    self, OP_SET, RESOURCE_TOPIC, SOURCE_DEFAULT_CONFIG, SOURCE_DYNAMIC_TOPIC_CONFIG,
};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The topic configs mirrorlog does not implement, as listed: (name, value, ConfigType id,
/// Kafka's broker synonym). Values and synonyms are Kafka 4.x's `LogConfig` defaults and
/// `ServerTopicConfigSynonyms`.
const NOT_IMPLEMENTED: &[(&str, &str, i8, Option<&str>)] = &[
    (
        "compression.gzip.level",
        "-1",
        3,
        Some("compression.gzip.level"),
    ),
    (
        "compression.lz4.level",
        "9",
        3,
        Some("compression.lz4.level"),
    ),
    (
        "compression.zstd.level",
        "3",
        3,
        Some("compression.zstd.level"),
    ),
    (
        "delete.retention.ms",
        "86400000",
        5,
        Some("log.cleaner.delete.retention.ms"),
    ),
    ("follower.replication.throttled.replicas", "", 7, None),
    ("leader.replication.throttled.replicas", "", 7, None),
    (
        "local.retention.bytes",
        "-2",
        5,
        Some("log.local.retention.bytes"),
    ),
    (
        "local.retention.ms",
        "-2",
        5,
        Some("log.local.retention.ms"),
    ),
    (
        "max.compaction.lag.ms",
        "9223372036854775807",
        5,
        Some("log.cleaner.max.compaction.lag.ms"),
    ),
    (
        "min.cleanable.dirty.ratio",
        "0.5",
        6,
        Some("log.cleaner.min.cleanable.ratio"),
    ),
    (
        "min.compaction.lag.ms",
        "0",
        5,
        Some("log.cleaner.min.compaction.lag.ms"),
    ),
    ("min.insync.replicas", "1", 3, Some("min.insync.replicas")),
    ("remote.log.copy.disable", "false", 1, None),
    ("remote.log.delete.on.disable", "false", 1, None),
    ("remote.storage.enable", "false", 1, None),
    (
        "unclean.leader.election.enable",
        "false",
        1,
        Some("unclean.leader.election.enable"),
    ),
];

/// Kafka 4.3's topic config names (`LogConfig`, internal ones aside) but `preallocate`, sorted.
const KAFKA_TOPIC_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "delete.retention.ms",
    "file.delete.delay.ms",
    "flush.messages",
    "flush.ms",
    "follower.replication.throttled.replicas",
    "index.interval.bytes",
    "leader.replication.throttled.replicas",
    "local.retention.bytes",
    "local.retention.ms",
    "max.compaction.lag.ms",
    "max.message.bytes",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.type",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "remote.log.copy.disable",
    "remote.log.delete.on.disable",
    "remote.storage.enable",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.jitter.ms",
    "segment.ms",
    "unclean.leader.election.enable",
];

fn describe(b: &Broker, topic: &str, keys: Option<&[&str]>) -> Vec<DescribeConfigsResourceResult> {
    let mut res = DescribeConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(topic);
    res.configuration_keys = keys.map(|k| k.iter().map(|k| s(k)).collect());
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    r.include_synonyms = true;
    r.include_documentation = true;
    let mut resp = admin::describe_configs(b, r, 4);
    let out = resp.results.remove(0);
    assert_eq!(out.error_code, 0, "{:?}", out.error_message);
    out.configs
}

fn check_not_implemented(c: &DescribeConfigsResourceResult) {
    let name = c.name.as_str();
    let (_, value, config_type, broker) = NOT_IMPLEMENTED
        .iter()
        .find(|(n, ..)| *n == name)
        .unwrap_or_else(|| panic!("{name} is not one of the listed defaults"));
    assert_eq!(c.value.as_deref(), Some(*value), "{name}");
    assert_eq!(c.config_source, SOURCE_DEFAULT_CONFIG, "{name}");
    assert_eq!(c.config_type, *config_type, "{name}");
    assert!(!c.read_only && !c.is_sensitive, "{name}");
    assert!(c.documentation.is_some(), "{name}");
    let want: Vec<(String, String, i8)> = broker
        .iter()
        .map(|b| (b.to_string(), value.to_string(), SOURCE_DEFAULT_CONFIG))
        .collect();
    assert_eq!(common::configs::synonyms(c), want, "{name}");
}

#[test]
fn a_topics_describe_configs_lists_every_kafka_topic_config() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    common::configs::create_topic(&b, "t", 1, &[("retention.ms", "1000")]);

    let configs = describe(&b, "t", None);
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, KAFKA_TOPIC_CONFIGS);
    for c in &configs {
        if NOT_IMPLEMENTED.iter().any(|(n, ..)| *n == c.name.as_str()) {
            check_not_implemented(c);
        }
    }
    // The implemented ones as before: the topic's own value first.
    let retention = configs.iter().find(|c| c.name.as_str() == "retention.ms");
    let retention = retention.unwrap();
    assert_eq!(retention.value.as_deref(), Some("1000"));
    assert_eq!(retention.config_source, SOURCE_DYNAMIC_TOPIC_CONFIG);
    assert_eq!(
        common::configs::synonyms(retention),
        vec![
            (
                "retention.ms".into(),
                "1000".into(),
                SOURCE_DYNAMIC_TOPIC_CONFIG
            ),
            (
                "log.retention.ms".into(),
                "604800000".into(),
                SOURCE_DEFAULT_CONFIG
            ),
        ]
    );

    // CreateTopics answers the same set, as Kafka's controller resolves every topic config.
    use kafka_protocol::messages::CreateTopicsRequest;
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    let mut t = CreatableTopic::default();
    t.name = kafka_protocol::messages::TopicName(s("created"));
    t.num_partitions = 1;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    r.timeout_ms = 30_000;
    let created = admin::create_topics(&b, r, 7);
    let created = created.topics[0].configs.as_ref().unwrap();
    let names: Vec<&str> = created.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, KAFKA_TOPIC_CONFIGS);
    let isr = created
        .iter()
        .find(|c| c.name.as_str() == "min.insync.replicas")
        .unwrap();
    assert_eq!(isr.value.as_deref(), Some("1"));
    assert_eq!(isr.config_source, SOURCE_DEFAULT_CONFIG);
}

#[test]
fn a_kafka_topic_config_mirrorlog_does_not_implement_is_answered_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    common::configs::create_topic(&b, "t", 1, &[]);

    let configs = describe(
        &b,
        "t",
        Some(&[
            "min.insync.replicas",
            "unclean.leader.election.enable",
            "retention.ms",
            // Left out as an unknown key is: its Kafka default would not be true here.
            "preallocate",
            "no.such.config",
        ]),
    );
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "min.insync.replicas",
            "retention.ms",
            "unclean.leader.election.enable"
        ]
    );
    check_not_implemented(&configs[0]);
    check_not_implemented(&configs[2]);
    assert_eq!(configs[1].value.as_deref(), Some("604800000"));
}

#[test]
fn altering_a_listed_config_mirrorlog_does_not_implement_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    common::configs::create_topic(&b, "t", 1, &[]);

    for (key, value, ..) in NOT_IMPLEMENTED {
        // Even to the very value listed: mirrorlog cannot honour another one.
        let (code, message) = common::configs::incremental_alter(&b, "t", key, OP_SET, Some(value));
        assert_eq!(code, E::InvalidConfig.code(), "SET {key}: {message:?}");
        assert!(
            message.as_deref().unwrap_or("").contains(key),
            "{message:?}"
        );
        let (code, message) = common::configs::alter_configs(&b, "t", &[(key, value)], false, 2);
        assert_eq!(
            code,
            E::InvalidConfig.code(),
            "AlterConfigs {key}: {message:?}"
        );
    }
    let (code, _) =
        common::configs::incremental_alter(&b, "t", "min.insync.replicas", OP_SET, Some("2"));
    assert_eq!(code, E::InvalidConfig.code());
    // Nothing was stored: every listed default is still the default.
    for c in describe(&b, "t", None) {
        if NOT_IMPLEMENTED.iter().any(|(n, ..)| *n == c.name.as_str()) {
            check_not_implemented(&c);
        } else {
            assert_ne!(c.config_source, SOURCE_DYNAMIC_TOPIC_CONFIG, "{:?}", c.name);
        }
    }
}
