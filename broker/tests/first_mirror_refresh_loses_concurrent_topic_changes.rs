//! The first CreateClusterMirror opens `__mirror_state` and then rebuilds the whole topic
//! registry from a snapshot of the log manager (`TopicRegistry::refresh`), outside the
//! registry's lock. A topic created (or deleted) by a client meanwhile is overwritten with the
//! snapshot's stale view: the registry and the log manager then disagree until a restart.

use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const PARTITIONS: i32 = 200;

#[test]
fn a_topic_created_while_the_first_mirror_starts_keeps_all_its_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let b = rb.broker.clone();
    let creator = {
        let b = b.clone();
        std::thread::spawn(move || {
            b.topics
                .create(&b.logs, "big", PARTITIONS, LogConfig::default(), None)
                .unwrap()
        })
    };
    // Wait until the create is under way (its first partition exists), then start a mirror.
    let started = Instant::now();
    while b
        .logs
        .get(&TopicPartition {
            topic: "big".into(),
            partition: 0,
        })
        .is_none()
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "create never began"
        );
        std::thread::yield_now();
    }
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), "127.0.0.1:1".to_string())]);
    b.mirrors.create_durable(&b, "m", configs).unwrap();
    let created = creator.join().unwrap();
    assert_eq!(created.partitions, PARTITIONS);

    let on_disk = b
        .logs
        .partitions()
        .iter()
        .filter(|h| h.topic_partition().topic == "big")
        .count() as i32;
    assert_eq!(on_disk, PARTITIONS);
    let registry = b.topics.get("big").map(|t| t.partitions);
    assert_eq!(
        registry,
        Some(PARTITIONS),
        "the registry lost partitions the log manager holds (stale refresh)"
    );
    drop(b);
    rb.shutdown().unwrap();
}
