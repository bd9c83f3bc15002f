//! A topic config set explicitly (CreateTopics or IncrementalAlterConfigs SET) to the value the
//! broker default happens to have is a topic override in Kafka: DescribeConfigs reports it as
//! DYNAMIC_TOPIC_CONFIG, and it stays when the broker's default changes — a topic pinned to 7
//! days of retention must not lose its data after 1 hour once `log.retention.ms` is lowered.
//! DELETE makes the key a default again, following the broker's.

use crate::common;

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin::{self, *};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::PwriteStorage;
use std::path::Path;
use std::sync::Arc;

const NOW_MS: i64 = 1_700_000_000_000;
const WEEK_MS: &str = "604800000";

fn open(dir: &Path, default_retention_ms: i64) -> Broker {
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    config.logs.default_log_config.retention_ms = default_retention_ms;
    Broker::open(
        config,
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW_MS),
    )
    .expect("open broker")
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn create(b: &Broker, name: &str, configs: &[(&str, &str)]) {
    common::configs::create_topic(b, name, 1, configs);
}

fn set(b: &Broker, topic: &str, key: &str, value: &str) {
    alter(b, topic, key, OP_SET, Some(value));
}

fn alter(b: &Broker, topic: &str, key: &str, op: i8, value: Option<&str>) {
    let mut c = AlterableConfig::default();
    c.name = s(key);
    c.config_operation = op;
    c.value = value.map(s);
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(topic);
    res.configs = vec![c];
    let mut r = IncrementalAlterConfigsRequest::default();
    r.resources = vec![res];
    let resp = admin::incremental_alter_configs(b, r, 1);
    assert_eq!(resp.responses[0].error_code, 0);
}

/// (value, source) of `key` in the topic's DescribeConfigs.
fn describe(b: &Broker, topic: &str, key: &str) -> (String, i8) {
    let mut res = DescribeConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(topic);
    res.configuration_keys = Some(vec![s(key)]);
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    let resp = admin::describe_configs(b, r, 4);
    let c = &resp.results[0].configs[0];
    (c.value.as_ref().unwrap().to_string(), c.config_source)
}

#[test]
fn an_override_equal_to_the_broker_default_is_reported_as_a_topic_config() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path(), 604_800_000);
    create(&b, "pinned", &[("retention.ms", WEEK_MS)]);
    assert_eq!(
        describe(&b, "pinned", "retention.ms"),
        (WEEK_MS.to_string(), SOURCE_DYNAMIC_TOPIC_CONFIG)
    );
}

#[test]
fn an_override_equal_to_the_broker_default_survives_a_default_change() {
    let dir = tempfile::tempdir().unwrap();
    {
        let b = open(dir.path(), 604_800_000);
        create(&b, "created", &[("retention.ms", WEEK_MS)]);
        create(&b, "altered", &[]);
        set(&b, "altered", "retention.ms", WEEK_MS);
    }
    // The operator lowers the broker default to one hour and restarts.
    let b = open(dir.path(), 3_600_000);
    assert_eq!(describe(&b, "created", "retention.ms").0, WEEK_MS);
    assert_eq!(describe(&b, "altered", "retention.ms").0, WEEK_MS);
    let h = b.partition("created", 0).unwrap();
    assert_eq!(h.read().config().retention_ms, 604_800_000);
}

#[test]
fn a_deleted_override_follows_the_broker_default_again() {
    let dir = tempfile::tempdir().unwrap();
    {
        let b = open(dir.path(), 604_800_000);
        create(&b, "t", &[("retention.ms", WEEK_MS)]);
        alter(&b, "t", "retention.ms", OP_DELETE, None);
        assert_eq!(
            describe(&b, "t", "retention.ms"),
            (WEEK_MS.to_string(), SOURCE_DEFAULT_CONFIG)
        );
    }
    let b = open(dir.path(), 3_600_000);
    assert_eq!(
        describe(&b, "t", "retention.ms"),
        ("3600000".to_string(), SOURCE_STATIC_BROKER_CONFIG)
    );
}

#[test]
fn internal_topics_keep_every_record_whatever_the_broker_default_becomes() {
    let dir = tempfile::tempdir().unwrap();
    let internal = |b: &Broker| -> Vec<(String, i64, i64)> {
        b.logs
            .partitions()
            .into_iter()
            .filter(|h| h.topic_partition().topic.starts_with("__"))
            .map(|h| {
                let log = h.read();
                (
                    h.topic_partition().to_string(),
                    log.config().retention_ms,
                    log.config().retention_bytes,
                )
            })
            .collect()
    };
    {
        // Unlimited retention is the broker default when the internal topics are created.
        let b = Arc::new(open(dir.path(), -1));
        mirrorlog_broker::coordinators::install(&b).unwrap();
        assert!(!internal(&b).is_empty());
    }
    let b = Arc::new(open(dir.path(), 3_600_000));
    mirrorlog_broker::coordinators::install(&b).unwrap();
    for (tp, ms, bytes) in internal(&b) {
        assert_eq!((ms, bytes), (-1, -1), "{tp} must keep every record");
    }
}
