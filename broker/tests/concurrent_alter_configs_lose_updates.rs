//! Two IncrementalAlterConfigs on different keys of the same topic, served concurrently (two
//! client connections), must both take effect: Kafka serializes config changes (the controller
//! applies each request's records to the current configs). `alter_one` reads the topic's config
//! from partition 0, applies the request's ops and writes the whole config back to every
//! partition without a lock held across the read and the write, so one request can overwrite
//! the other's change with the stale value it read. Worse, both write `topic.config` through the
//! same `topic.config.tmp`, so one of them fails its rename with KAFKA_STORAGE_ERROR after
//! having changed only some partitions.

use crate::common;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin::{self, *};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::{Arc, Barrier};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn set(b: &Broker, topic: &str, key: &str, value: &str) {
    let (code, message) = common::configs::incremental_alter(b, topic, key, OP_SET, Some(value));
    assert_eq!(code, 0, "{message:?}");
}

#[test]
fn concurrent_alters_of_different_keys_both_apply() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    let b = Arc::new(
        Broker::open(
            config,
            Arc::new(PwriteStorage::new()),
            ManualClock::new(1_700_000_000_000),
        )
        .unwrap(),
    );
    let mut t = CreatableTopic::default();
    t.name = TopicName(s("cfg"));
    t.num_partitions = 4;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);

    for i in 0..50i64 {
        let retention = (1_000_000 + i).to_string();
        let segment_ms = (2_000_000 + i).to_string();
        let barrier = Arc::new(Barrier::new(2));
        let a = {
            let (b, barrier, v) = (b.clone(), barrier.clone(), retention.clone());
            std::thread::spawn(move || {
                barrier.wait();
                set(&b, "cfg", "retention.ms", &v);
            })
        };
        let c = {
            let (b, barrier, v) = (b.clone(), barrier.clone(), segment_ms.clone());
            std::thread::spawn(move || {
                barrier.wait();
                set(&b, "cfg", "segment.ms", &v);
            })
        };
        a.join().unwrap();
        c.join().unwrap();
        for p in 0..4 {
            let config = b.partition("cfg", p).unwrap().read().config().clone();
            assert_eq!(
                (config.retention_ms, config.segment.segment_ms),
                (1_000_000 + i, 2_000_000 + i),
                "round {i}, partition {p}: one of two concurrent alters was lost"
            );
        }
    }
}
