//! Kafka's fetch session keeps the topic name a topic id resolved to (`CachedPartition` holds
//! name and id; `maybeResolveUnknownName` fills a name only while it has none). So a session's
//! partition of a topic deleted mid-session is answered in `KafkaApis` as a name its metadata
//! lacks, `UNKNOWN_TOPIC_OR_PARTITION` (beside the read, not ending a long poll), and once a
//! topic is created again under the name, `ReplicaManager.readFromLocalLog` finds a log whose id
//! is not the session's: `INCONSISTENT_TOPIC_ID`, an error reading that answers at once. Here
//! the session resolved its ids again on every request, so both answered `UNKNOWN_TOPIC_ID`,
//! and the second kept long-polling beside a topic it could never read.

use crate::common;

use common::fetch_session::{broker_with, by_topic_id, fetch_at, produce_one, session_fetch};
use common::long_poll::{HANG_GUARD, one_record};
use kafka_protocol::messages::FetchResponse;
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_engine::config::LogConfig;
use std::sync::mpsc;
use std::time::Instant;
use uuid::Uuid;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INCONSISTENT_TOPIC_ID: i16 = 103;

/// The error the answer gives partition 0 of topic `id`.
fn error_of(resp: &FetchResponse, id: Uuid) -> i16 {
    let t = resp
        .responses
        .iter()
        .find(|t| t.topic_id == id)
        .unwrap_or_else(|| panic!("{id} is answered: {resp:?}"));
    t.partitions[0].error_code
}

#[test]
fn a_deleted_topics_partition_keeps_its_name_in_a_topic_id_session() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 1), ("gone", 1)],
    );
    let gone = b.topics.get("gone").unwrap().id;
    let full = by_topic_id(&b, session_fetch(0, 0, &[("t", 0, 0), ("gone", 0, 0)]));
    let resp = fetch_at(&b, full, 13);
    let id = resp.session_id;
    assert_ne!(id, 0);
    assert_eq!(error_of(&resp, gone), 0);

    b.topics.delete(&b.logs, "gone").unwrap();
    let resp = fetch_at(&b, session_fetch(id, 1, &[]), 13);
    assert_eq!(
        error_of(&resp, gone),
        UNKNOWN_TOPIC_OR_PARTITION,
        "{resp:?}"
    );

    b.topics
        .create(&b.logs, "gone", 1, LogConfig::default(), None)
        .unwrap();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let mut r = session_fetch(id, 2, &[]);
            r.max_wait_ms = 600_000;
            r.min_bytes = 1;
            tx.send(fetch_at(b, r, 13)).unwrap();
        });
        // Kafka answers at once: the inconsistent id is an error reading the partition.
        let hang_guard = Instant::now() + HANG_GUARD;
        let resp = loop {
            if let Ok(resp) = rx.try_recv() {
                break resp;
            }
            if b.appends.waiting() > 0 {
                produce_one(b, "t", one_record()); // Let the parked fetch go, then fail.
                let resp = rx.recv_timeout(HANG_GUARD).expect("the append wakes it");
                panic!("long-polled beside the recreated topic: {resp:?}");
            }
            assert!(Instant::now() < hang_guard, "the fetch never answered");
            std::thread::yield_now();
        };
        assert_eq!(error_of(&resp, gone), INCONSISTENT_TOPIC_ID, "{resp:?}");
    });
}
