//! AlterConfigs, the legacy non-incremental request, is the only way kafkajs 2.2 and aiokafka
//! 0.14 alter topic configs (the broker once did not serve it: their `alterConfigs` failed with
//! "The Kafka server does not support the requested API version"). Its configs replace the
//! topic's whole set of overrides, as in Kafka: a key left out goes back to the broker default.

use crate::common;

use kafka_protocol::ResponseError;
use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin::{self, *};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn open(dir: &std::path::Path) -> Broker {
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    Broker::open(
        config,
        Arc::new(PwriteStorage::new()),
        ManualClock::new(1_700_000_000_000),
    )
    .expect("open broker")
}

fn create(b: &Broker, name: &str, configs: &[(&str, &str)]) {
    common::configs::create_topic(b, name, 2, configs);
}

/// AlterConfigs of one topic resource; returns (error code, message).
fn alter(
    b: &Broker,
    topic: &str,
    configs: &[(&str, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(topic);
    res.configs = configs
        .iter()
        .map(|(k, v)| {
            let mut c = AlterableConfig::default();
            c.name = s(k);
            c.value = v.map(s);
            c
        })
        .collect();
    let mut r = AlterConfigsRequest::default();
    r.resources = vec![res];
    r.validate_only = validate_only;
    let resp = admin::alter_configs(b, r, 2);
    assert_eq!(resp.responses.len(), 1);
    let out = &resp.responses[0];
    assert_eq!(out.resource_name.as_str(), topic);
    (
        out.error_code,
        out.error_message.as_ref().map(|m| m.to_string()),
    )
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
fn the_configs_given_replace_every_override_of_the_topic() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(
        &b,
        "t",
        &[("retention.ms", "3600000"), ("max.message.bytes", "2000")],
    );
    let default_retention = {
        create(&b, "plain", &[]);
        describe(&b, "plain", "retention.ms").0
    };
    assert_eq!(
        alter(&b, "t", &[("max.message.bytes", Some("3000"))], false),
        (0, None)
    );
    assert_eq!(
        describe(&b, "t", "max.message.bytes"),
        ("3000".into(), SOURCE_DYNAMIC_TOPIC_CONFIG)
    );
    // retention.ms was left out: back to the broker default, no longer an override.
    assert_eq!(
        describe(&b, "t", "retention.ms"),
        (default_retention, SOURCE_DEFAULT_CONFIG)
    );
    // On every partition.
    for p in 0..2 {
        let h = b.partition("t", p).unwrap();
        assert_eq!(h.read().config().max_message_bytes, 3000);
    }
}

#[test]
fn validate_only_changes_nothing_and_bad_requests_are_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let b = open(dir.path());
    create(&b, "t", &[("retention.ms", "3600000")]);
    assert_eq!(
        alter(&b, "t", &[("retention.ms", Some("7200000"))], true),
        (0, None)
    );
    assert_eq!(describe(&b, "t", "retention.ms").0, "3600000");
    let (code, msg) = alter(&b, "t", &[("retention.ms", None)], false);
    assert_eq!(code, ResponseError::InvalidRequest.code());
    assert_eq!(
        msg.as_deref(),
        Some("Null value not supported for : retention.ms")
    );
    let (code, _) = alter(&b, "t", &[("retention.ms", Some("soon"))], false);
    assert_eq!(code, ResponseError::InvalidConfig.code());
    let (code, _) = alter(&b, "t", &[("cleanup.policy", Some("compact"))], false);
    assert_eq!(code, ResponseError::InvalidConfig.code());
    assert_eq!(
        describe(&b, "t", "retention.ms"),
        ("3600000".into(), SOURCE_DYNAMIC_TOPIC_CONFIG)
    );
    let (code, _) = alter(&b, "missing", &[("retention.ms", Some("1000"))], false);
    assert_eq!(code, ResponseError::UnknownTopicOrPartition.code());
}
