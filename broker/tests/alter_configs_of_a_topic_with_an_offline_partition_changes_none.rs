//! Bug: IncrementalAlterConfigs (and AlterConfigs) of a topic with a partition in a data
//! directory offline since start wrote the new config partition by partition and failed at the
//! offline one: the partitions before it kept the change, the rest did not, so the topic came
//! back from the answered error with two configs (before the registry counted offline
//! partitions, an offline last partition was even skipped and the request answered success).
//! The offline partition's `topic.config` cannot be written, so the change is refused whole,
//! KAFKA_STORAGE_ERROR, nothing written — as DeleteTopics refuses such a topic.

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage};
use std::path::Path;
use std::sync::Arc;

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
fn a_config_change_is_refused_whole_while_a_partition_is_offline() {
    let d1 = tempfile::tempdir().unwrap();
    let d2 = tempfile::tempdir().unwrap();
    let sim = SimStorage::new();
    open(&[d1.path()], &sim).shutdown().unwrap();
    let b = open(&[d1.path(), d2.path()], &sim);
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("t"));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);
    let dir1 = b.partition("t", 1).unwrap().data_dir().to_path_buf();
    assert_ne!(
        b.partition("t", 0).unwrap().data_dir(),
        dir1,
        "one partition per dir"
    );
    b.shutdown().unwrap();
    let bad = dir1.join("t-1");
    sim.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let b = open(&[d1.path(), d2.path()], &sim);
    assert!(
        b.partition("t", 1).is_none(),
        "partition 1's directory failed at load"
    );

    let mut c = AlterableConfig::default();
    c.name = s("retention.ms");
    c.config_operation = admin::OP_SET;
    c.value = Some(s("4242"));
    let mut res = AlterConfigsResource::default();
    res.resource_type = admin::RESOURCE_TOPIC;
    res.resource_name = s("t");
    res.configs = vec![c];
    let mut r = IncrementalAlterConfigsRequest::default();
    r.resources = vec![res];
    let got = admin::incremental_alter_configs(&b, r, 1);
    assert_eq!(
        got.responses[0].error_code,
        E::KafkaStorageError.code(),
        "{:?}",
        got.responses[0].error_message
    );
    assert_eq!(
        b.partition("t", 0).unwrap().read().config().retention_ms,
        LogConfig::default().retention_ms,
        "partition 0 kept its config"
    );
    b.shutdown().unwrap();
}
