//! Bug: a topic's config was read from its partition 0 alone. With partition 0 in a data
//! directory offline since start, CreatePartitions gave the new partitions the broker defaults
//! (the topic's own settings, a mirror topic's read-only mark included, lost for them), and
//! DescribeConfigs answered the topic UNKNOWN_TOPIC_OR_PARTITION though Metadata lists it. In
//! Kafka a topic's config lives in the controller, not in a replica: both answer with the
//! topic's config whatever replica is offline. Every partition of a topic holds its config, so
//! any loaded one gives it; with none loaded, CreatePartitions is refused KAFKA_STORAGE_ERROR.

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

const RETENTION_MS: i64 = 123_456_789;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn open(dirs: &[&Path], sim: &SimStorage) -> Broker {
    let mut config = BrokerConfig::new(dirs[0], "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    config.logs.data_dirs = dirs.iter().map(|d| d.to_path_buf()).collect();
    config.logs.recovery_threads = 1;
    Broker::open(
        config,
        Arc::new(sim.clone()),
        ManualClock::new(1_700_000_000_000),
    )
    .unwrap()
}

#[test]
fn create_partitions_and_describe_configs_use_the_topics_config() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    // The internal topics in d1; `t` over both.
    open(&[d1.path()], &sim).shutdown().unwrap();
    let b = open(&[d1.path(), d2.path()], &sim);
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("t"));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut c = CreatableTopicConfig::default();
    c.name = s("retention.ms");
    c.value = Some(s(&RETENTION_MS.to_string()));
    t.configs = vec![c];
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let dir0 = b.partition("t", 0).unwrap().data_dir().to_path_buf();
    assert_ne!(
        b.partition("t", 1).unwrap().data_dir(),
        dir0,
        "one partition per dir"
    );
    b.shutdown().unwrap();
    let bad = dir0.join("t-0");
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let b = open(&[d1.path(), d2.path()], &sim);
    assert!(
        b.partition("t", 0).is_none(),
        "partition 0's directory failed at load"
    );

    let mut res = DescribeConfigsResource::default();
    res.resource_type = admin::RESOURCE_TOPIC;
    res.resource_name = s("t");
    res.configuration_keys = Some(vec![s("retention.ms")]);
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    let got = admin::describe_configs(&b, r, 4);
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
    r.topics = vec![g];
    let got = admin::create_partitions(&b, r, 3);
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
    b.shutdown().unwrap();
}
