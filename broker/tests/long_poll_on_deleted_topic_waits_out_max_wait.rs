//! Kafka completes the delayed fetches of a partition when it stops hosting it
//! (`ReplicaManager.stopPartitions` → `completeDelayedOperationsWhenNotPartitionLeader` →
//! `delayedFetchPurgatory.checkAndComplete`), so a consumer long-polling a topic that is deleted
//! is told UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID at once. Here DeleteTopics wakes no
//! parked fetch: the fetch sleeps out its whole `max_wait_ms` (or until an unrelated append).

use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{DeleteTopicsRequest, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::{admin, fetch};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;
use std::time::{Duration, Instant};

const MAX_WAIT_MS: i32 = 10_000;

#[test]
fn deleting_a_topic_answers_the_fetches_parked_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = Arc::new(
        Broker::open(
            BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
            Arc::new(PwriteStorage::new()),
            ManualClock::new(1_700_000_000_000),
        )
        .unwrap(),
    );
    let id = b
        .topics
        .create(&b.logs, "t", 1, LogConfig::default(), None)
        .unwrap()
        .id;
    let poll = {
        let b = b.clone();
        std::thread::spawn(move || {
            let mut p = FetchPartition::default();
            p.partition = 0;
            p.fetch_offset = 0;
            p.partition_max_bytes = 1 << 20;
            let mut t = FetchTopic::default();
            t.topic_id = id;
            t.partitions.push(p);
            let mut r = FetchRequest::default();
            r.replica_id = kafka_protocol::messages::BrokerId(-1);
            r.max_wait_ms = MAX_WAIT_MS;
            r.min_bytes = 1;
            r.max_bytes = 1 << 20;
            r.session_epoch = -1;
            r.topics.push(t);
            let started = Instant::now();
            let resp = fetch::handle(&b, r, 13);
            (started.elapsed(), resp)
        })
    };
    // Let the fetch park (if it has not yet, it finds the topic gone and answers at once).
    std::thread::sleep(Duration::from_millis(300));
    let mut d = DeleteTopicsRequest::default();
    let mut st = DeleteTopicState::default();
    st.name = Some(TopicName(StrBytes::from_static_str("t")));
    d.topics.push(st);
    d.timeout_ms = 30_000;
    let resp = admin::delete_topics(&b, d, 6);
    assert_eq!(resp.responses[0].error_code, 0);

    let (took, resp) = poll.join().unwrap();
    let p = &resp.responses[0].partitions[0];
    assert_ne!(
        p.error_code, 0,
        "a deleted topic's partition is answered with an error"
    );
    assert!(
        took < Duration::from_millis(MAX_WAIT_MS as u64 / 2),
        "the fetch parked on the deleted topic slept {took:?} of its {MAX_WAIT_MS} ms"
    );
}
