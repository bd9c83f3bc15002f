//! Kafka reads a Fetch request's partitions into a map (`FetchRequest.fetchData`, a
//! `LinkedHashMap`): a partition named twice is read and answered once, at its first position,
//! with the parameters it was given last. The broker read it once per mention and answered it
//! as many times (its records repeated in one answer, each copy counted against `max_bytes`).

use crate::common;

use common::fetch_session::{broker_with, fetch_at, listed, session_fetch};
use mirrorlog_broker::broker::BrokerConfig;

const OFFSET_OUT_OF_RANGE: i16 = 1;

#[test]
fn a_partition_named_twice_is_answered_once_with_its_last_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 2)],
    );
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
        let first = &resp.responses[0].partitions[0];
        assert_eq!(
            first.error_code, OFFSET_OUT_OF_RANGE,
            "the last offset asked wins"
        );
    }
}
