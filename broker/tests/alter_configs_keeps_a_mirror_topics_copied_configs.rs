//! Bug: the legacy AlterConfigs (API 33, v0–2: the configs sent replace the topic's whole set
//! of overrides) on a mirror topic reset the overrides its cluster mirror had copied from the
//! source — a kafkajs or aiokafka user changing one local key sent the whole set without them —
//! and they stayed reset until the source's configs changed (the sync writes only then): e.g.
//! a source `retention.ms` of a day became the 7-day default on the destination.
//!
//! The rule now, for both AlterConfigs and IncrementalAlterConfigs: on a mirror topic, the keys
//! the mirror copies (every key but those in `mirror.topic.properties.exclude`) are the
//! source's. A change to one is refused with INVALID_CONFIG (validate_only too), the whole
//! resource with it; naming one with its current value changes nothing; AlterConfigs keeps the
//! copied keys it leaves out. The excluded keys are the destination's own: clients set them,
//! AlterConfigs replaces them, and the config sync never touches them, a restart's first sync
//! included. After a stop (failover) every key is the topic's own again.

use crate::common;

use common::configs::{alter_configs, incremental_alter};
use common::mirror::{source_and_destination_with, start_orders, stop_orders};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin::{self, *};
use mirrorlog_broker::running::RunningBroker;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// AlterConfigs `version` of topic `orders`: (error code, message).
fn legacy(
    b: &Broker,
    configs: &[(&str, &str)],
    validate_only: bool,
    version: i16,
) -> (i16, Option<String>) {
    alter_configs(b, "orders", configs, validate_only, version)
}

/// IncrementalAlterConfigs of topic `orders` with one operation: the error code.
fn incremental(b: &Broker, key: &str, op: i8, value: Option<&str>) -> i16 {
    incremental_alter(b, "orders", key, op, value).0
}

/// (value, source) of `key` in `orders`'s DescribeConfigs.
fn describe(b: &Broker, key: &str) -> (String, i8) {
    let mut res = DescribeConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s("orders");
    res.configuration_keys = Some(vec![s(key)]);
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    let resp = admin::describe_configs(b, r, 4);
    let c = &resp.results[0].configs[0];
    (c.value.as_ref().unwrap().to_string(), c.config_source)
}

const DAY: &str = "86400000";
const WEEK: &str = "604800000";

fn copied(v: &str) -> (String, i8) {
    (v.to_string(), SOURCE_DYNAMIC_TOPIC_CONFIG)
}

fn default(v: &str) -> (String, i8) {
    (v.to_string(), SOURCE_DEFAULT_CONFIG)
}

/// The copied configs of the destination's `orders` are still the source's.
fn assert_copied_intact(b: &Broker) {
    assert_eq!(describe(b, "retention.ms"), copied(DAY));
    assert_eq!(describe(b, "max.message.bytes"), copied("2000000"));
}

#[test]
fn alter_configs_keeps_a_mirror_topics_copied_configs() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = source_and_destination_with(
        dir.path(),
        &["east"],
        &[
            ("retention.ms", DAY),
            ("max.message.bytes", "2000000"),
            // In the default mirror.topic.properties.exclude: not copied.
            ("message.timestamp.type", "LogAppendTime"),
        ],
    );
    let b = dst.broker.clone();
    assert_eq!(start_orders(&b, "east"), 0);
    assert_copied_intact(&b);
    assert_eq!(
        describe(&b, "message.timestamp.type"),
        default("CreateTime")
    );

    let refused = ResponseError::InvalidConfig.code();
    for v in 0..=2 {
        // A local key set with the whole-set request: the copied keys left out stay.
        assert_eq!(
            legacy(&b, &[("message.timestamp.type", "LogAppendTime")], false, v),
            (0, None),
            "v{v}"
        );
        assert_copied_intact(&b);
        assert_eq!(
            describe(&b, "message.timestamp.type"),
            copied("LogAppendTime")
        );
        // validate_only of an empty set: accepted, nothing changes.
        assert_eq!(legacy(&b, &[], true, v).0, 0, "v{v}");
        assert_eq!(
            describe(&b, "message.timestamp.type"),
            copied("LogAppendTime")
        );

        // A copied key changed: refused as IncrementalAlterConfigs refuses it, the whole
        // resource with it (validate_only too).
        for validate_only in [false, true] {
            let (code, msg) = legacy(
                &b,
                &[
                    ("retention.ms", "1000"),
                    ("message.timestamp.type", "CreateTime"),
                ],
                validate_only,
                v,
            );
            assert_eq!(code, refused, "v{v}: {msg:?}");
            let msg = msg.unwrap();
            assert!(
                msg.contains("retention.ms") && msg.contains("east"),
                "{msg}"
            );
        }
        assert_eq!(
            incremental(&b, "retention.ms", OP_SET, Some("1000")),
            refused
        );
        assert_eq!(incremental(&b, "retention.ms", OP_DELETE, None), refused);
        // A key the mirror copies that the source does not set is the source's too: the sync
        // resets it.
        assert_eq!(
            legacy(&b, &[("segment.bytes", "1048576")], false, v).0,
            refused
        );
        assert_eq!(
            incremental(&b, "segment.bytes", OP_SET, Some("1048576")),
            refused
        );
        assert_copied_intact(&b);
        assert_eq!(
            describe(&b, "message.timestamp.type"),
            copied("LogAppendTime")
        );

        // The copied keys named with their values: nothing to change; the local key left out
        // goes back to the default, as AlterConfigs does.
        assert_eq!(
            legacy(
                &b,
                &[("retention.ms", DAY), ("max.message.bytes", "2000000")],
                false,
                v
            ),
            (0, None),
            "v{v}"
        );
        assert_copied_intact(&b);
        assert_eq!(
            describe(&b, "message.timestamp.type"),
            default("CreateTime")
        );
        assert_eq!(describe(&b, "segment.bytes").1, SOURCE_DEFAULT_CONFIG);
    }
    drop(b);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}

#[test]
fn the_config_sync_keeps_local_keys_and_a_stop_makes_every_key_local() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst) = source_and_destination_with(
        dir.path(),
        &["east"],
        &[("retention.ms", DAY), ("max.message.bytes", "2000000")],
    );
    let b = dst.broker.clone();
    assert_eq!(start_orders(&b, "east"), 0);
    assert_eq!(
        legacy(&b, &[("message.timestamp.type", "LogAppendTime")], false, 2),
        (0, None)
    );

    // The source's configs change: the sync follows them and leaves the local key alone.
    assert_eq!(
        incremental(&src.broker, "retention.ms", OP_SET, Some("172800000")),
        0
    );
    assert_eq!(
        incremental(&src.broker, "max.message.bytes", OP_DELETE, None),
        0
    );
    b.mirrors.get("east").unwrap().sync().unwrap();
    assert_eq!(describe(&b, "retention.ms"), copied("172800000"));
    assert_eq!(describe(&b, "max.message.bytes").1, SOURCE_DEFAULT_CONFIG);
    assert_eq!(
        describe(&b, "message.timestamp.type"),
        copied("LogAppendTime")
    );

    // A restart: the first sync resets every copied key the source no longer sets, never the
    // local one, and the rule holds again at once.
    drop(b);
    dst.shutdown().unwrap();
    let dst = RunningBroker::start_local(&dir.path().join("dst"), 2).unwrap();
    let b = dst.broker.clone();
    b.mirrors.get("east").unwrap().sync().unwrap();
    assert_eq!(describe(&b, "retention.ms"), copied("172800000"));
    assert_eq!(
        describe(&b, "message.timestamp.type"),
        copied("LogAppendTime")
    );
    assert_eq!(
        incremental(&b, "retention.ms", OP_SET, Some(DAY)),
        ResponseError::InvalidConfig.code()
    );

    // Failed over: the topic is the destination's, every key with it.
    assert_eq!(stop_orders(&b, "east"), 0);
    assert_eq!(
        legacy(&b, &[("segment.bytes", "1048576")], false, 2),
        (0, None)
    );
    assert_eq!(describe(&b, "segment.bytes"), copied("1048576"));
    assert_eq!(describe(&b, "retention.ms"), default(WEEK));
    assert_eq!(
        describe(&b, "message.timestamp.type"),
        default("CreateTime")
    );
    assert_eq!(incremental(&b, "retention.ms", OP_SET, Some(DAY)), 0);
    assert_eq!(describe(&b, "retention.ms"), copied(DAY));
    drop(b);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
