//! Kafka reads a Fetch request's partitions into a map (`FetchRequest.fetchData`, a
//! `LinkedHashMap`): a partition named twice is read and answered once, at its first position,
//! with the parameters it was given last. The broker read it once per mention and answered it
//! as many times (its records repeated in one answer, each copy counted against `max_bytes`).

mod common;

use common::fetch_session::{fetch_at, listed, session_fetch};
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

const NOW: i64 = 1_700_000_000_000;
const OFFSET_OUT_OF_RANGE: i16 = 1;

#[test]
fn a_partition_named_twice_is_answered_once_with_its_last_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW),
    )
    .unwrap();
    b.topics
        .create(&b.logs, "t", 2, LogConfig::default(), None)
        .unwrap();
    // Sessionless, then creating a session.
    for epoch in [-1, 0] {
        // t-0 at 0, t-1 at 0, then t-0 again past the end of its empty log.
        let mut r = session_fetch(0, epoch, &[("t", 0, 0), ("t", 1, 0)]);
        r.topics
            .extend(session_fetch(0, epoch, &[("t", 0, 5)]).topics);
        let resp = fetch_at(&b, r, 12);
        assert_eq!(resp.error_code, 0);
        assert_eq!(
            listed(&resp),
            [("t".into(), 0), ("t".into(), 1)],
            "session epoch {epoch}: {resp:?}"
        );
        let codes: Vec<i16> = resp.responses[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        assert_eq!(
            codes,
            [OFFSET_OUT_OF_RANGE, 0],
            "the last offset asked wins"
        );
    }
}
