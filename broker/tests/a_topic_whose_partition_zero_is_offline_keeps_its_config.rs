//! Bug: a topic's config was read from its partition 0 alone. With partition 0 in a data
//! directory offline since start, CreatePartitions gave the new partitions the broker defaults
//! (the topic's own settings, a mirror topic's read-only mark included, lost for them), and
//! DescribeConfigs answered the topic UNKNOWN_TOPIC_OR_PARTITION though Metadata lists it. In
//! Kafka a topic's config lives in the controller, not in a replica: both answer with the
//! topic's config whatever replica is offline. Every partition of a topic holds its config, so
//! any loaded one gives it; with none loaded, CreatePartitions is refused KAFKA_STORAGE_ERROR.

use crate::common;

use common::offline_partition::{s, topic_t_with_partition_offline};
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;
use mirrorlog_broker::handlers::admin;

const RETENTION_MS: i64 = 123_456_789;

#[test]
fn create_partitions_and_describe_configs_use_the_topics_config() {
    let retention = RETENTION_MS.to_string();
    let setup = topic_t_with_partition_offline(0, &[("retention.ms", &retention)]);
    let b = &setup.broker;

    let mut res = DescribeConfigsResource::default();
    res.resource_type = admin::RESOURCE_TOPIC;
    res.resource_name = s("t");
    res.configuration_keys = Some(vec![s("retention.ms")]);
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    let got = admin::describe_configs(b, r, 4);
    let got = &got.results[0];
    assert_eq!(got.error_code, 0, "{:?}", got.error_message);
    let retention: Vec<_> = got
        .configs
        .iter()
        .map(|c| (c.name.to_string(), c.value.as_ref().map(|v| v.to_string())))
        .collect();
    assert_eq!(
        retention,
        vec![("retention.ms".to_string(), Some(RETENTION_MS.to_string()))]
    );

    let mut g = CreatePartitionsTopic::default();
    g.name = TopicName(s("t"));
    g.count = 4;
    g.assignments = None;
    let mut r = CreatePartitionsRequest::default();
    r.timeout_ms = 30_000;
    r.topics = vec![g];
    let got = admin::create_partitions(b, r, 3);
    assert_eq!(
        got.results[0].error_code, 0,
        "{:?}",
        got.results[0].error_message
    );
    for p in 2..4 {
        let h = b.partition("t", p).expect("created");
        assert_eq!(
            h.read().config().retention_ms,
            RETENTION_MS,
            "partition {p}"
        );
        assert!(
            h.read().config().overrides.contains("retention.ms"),
            "partition {p}"
        );
    }
    setup.broker.shutdown().unwrap();
}
