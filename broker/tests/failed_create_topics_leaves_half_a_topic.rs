//! A CreateTopics that fails part-way (here: the process runs out of file descriptors, as a
//! 100 000-partition topic — the allowed maximum — does under a default `ulimit -n`) leaves
//! the partitions it created in the log manager, on disk, but not in the topic registry:
//! `TopicRegistry::create` returns the error without undoing them. The two then disagree: the
//! name answers UNKNOWN_TOPIC_OR_PARTITION, a retry fails with KAFKA_STORAGE_ERROR (the
//! partitions exist under the failed attempt's topic id), and a restart brings the half topic
//! back. Kafka creates a topic atomically (one metadata record batch).

mod common;

use kafka_protocol::messages::CreateTopicsRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

fn create(b: &Broker, partitions: i32) -> i16 {
    let mut t = CreatableTopic::default();
    t.name = TopicName(StrBytes::from_static_str("t"));
    t.num_partitions = partitions;
    t.replication_factor = -1;
    let mut r = CreateTopicsRequest::default();
    r.topics.push(t);
    r.timeout_ms = 30_000;
    admin::create_topics(b, r, 5).topics[0].error_code
}

fn partitions_of_t(b: &Broker) -> usize {
    b.logs
        .partitions()
        .iter()
        .filter(|h| h.topic_partition().topic == "t")
        .count()
}

#[test]
fn a_failed_create_leaves_no_partition_behind() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(1_700_000_000_000),
    )
    .unwrap();

    // Room for a few dozen more descriptors only.
    let code = common::with_spare_fds(64, || create(&b, 500));
    assert_ne!(code, 0, "500 partitions cannot fit in 64 descriptors");
    assert!(b.topics.get("t").is_none());
    let left = partitions_of_t(&b);
    // With descriptors again, the name must be usable.
    let retry = create(&b, 1);
    assert_eq!(
        (left, retry),
        (0, 0),
        "the failed create left {left} partitions of t in the log manager (not in the registry); \
         a retry answered {retry}"
    );
}
