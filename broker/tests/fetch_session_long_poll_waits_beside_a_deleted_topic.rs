//! Kafka answers a partition whose topic it does not know (a topic id it cannot resolve:
//! UNKNOWN_TOPIC_ID; a name or partition its metadata lacks: UNKNOWN_TOPIC_OR_PARTITION) in
//! `KafkaApis.handleFetchRequest`, beside the read (`erroneous`): only the other partitions go to
//! `ReplicaManager.fetchMessages`, whose long poll an error *reading* them ends. Here any
//! partition error ended the wait, so a consumer whose session still held a deleted topic's
//! partition was answered at once, fetch after fetch, instead of waiting for its other
//! partitions' data (`fetch.max.wait.ms`): a busy loop of Fetch requests until it rebalanced.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, listed, produce_one, session_fetch};
use common::long_poll::{HANG_GUARD, one_record};
use mirrorlog_broker::broker::BrokerConfig;
use std::sync::mpsc;
use std::time::Instant;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

#[test]
fn a_session_long_poll_waits_for_its_partitions_beside_a_deleted_one() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 1), ("gone", 1)],
    );
    let resp = fetch_at(&b, session_fetch(0, 0, &[("t", 0, 0), ("gone", 0, 0)]), 12);
    let id = resp.session_id;
    assert_ne!(id, 0);
    b.topics.delete(&b.logs, "gone").unwrap();

    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let mut r = session_fetch(id, 1, &[]);
            r.max_wait_ms = 600_000;
            r.min_bytes = 1;
            tx.send(fetch_at(b, r, 12)).unwrap();
        });
        // Either the fetch parks (Kafka) or it answers without waiting.
        let hang_guard = Instant::now() + HANG_GUARD;
        while b.appends.waiting() == 0 {
            if let Ok(resp) = rx.try_recv() {
                panic!("answered without waiting for t-0: {resp:?}");
            }
            assert!(Instant::now() < hang_guard, "the fetch never long-polled");
            std::thread::yield_now();
        }
        produce_one(b, "t", one_record());
        let resp = rx.recv_timeout(HANG_GUARD).expect("the append wakes it");
        assert_eq!(
            listed(&resp),
            [("t".into(), 0), ("gone".into(), 0)],
            "{resp:?}"
        );
        let ps = &resp.responses[0].partitions;
        assert!(!ps[0].records.as_ref().unwrap().is_empty(), "{resp:?}");
        assert_eq!(
            resp.responses[1].partitions[0].error_code,
            UNKNOWN_TOPIC_OR_PARTITION
        );
    });
}
