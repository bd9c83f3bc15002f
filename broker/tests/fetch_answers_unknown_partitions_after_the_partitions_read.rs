//! Kafka's `KafkaApis.handleFetchRequest` answers the partitions it finds unknown (an unknown
//! topic id, topic or partition: its `erroneous`) without reading them, and its response lists
//! the partitions read first, then the erroneous ones (`processResponseCallback`), each in
//! request order; a session created by the request holds its partitions in that order, so its
//! later reads follow it. mirrorlog kept every partition at its place in the request.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, listed, produce_one, session_fetch};
use common::produce::{batch, request};
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::handlers::produce;
use mirrorlog_engine::config::LogConfig;

fn named(parts: &[(&str, i32)]) -> Vec<(String, i32)> {
    parts.iter().map(|&(t, p)| (t.to_string(), p)).collect()
}

#[test]
fn unknown_partitions_come_after_the_partitions_read() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 2), ("u", 1)],
    );
    let parts = [
        ("t", 0, 0),
        ("t", 5, 0),
        ("nope", 0, 0),
        ("u", 0, 0),
        ("t", 1, 0),
    ];
    // Sessionless, and a full request that creates a session.
    for epoch in [-1, 0] {
        let resp = fetch_at(&b, session_fetch(0, epoch, &parts), 12);
        assert_eq!(
            listed(&resp),
            named(&[("t", 0), ("u", 0), ("t", 1), ("t", 5), ("nope", 0)]),
            "epoch {epoch}"
        );
    }
    let id = fetch_at(&b, session_fetch(0, 0, &parts), 12).session_id;
    assert_ne!(id, 0);

    // The session holds t-0, u-0, t-1, t-5, nope-0: once "nope" exists, its partition is read
    // after t-1, and t-5, still unknown, comes last.
    b.topics
        .create(&b.logs, "nope", 1, LogConfig::default(), None)
        .unwrap();
    produce_one(&b, "nope", batch(b"n"));
    let resp = produce::handle(&b, request(1, vec![("t", 1, Some(batch(b"one")))]), 9).unwrap();
    assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);

    let resp = fetch_at(&b, session_fetch(id, 1, &[]), 12);
    assert_eq!(
        listed(&resp),
        named(&[("t", 1), ("nope", 0), ("t", 5)]),
        "{resp:?}"
    );
}
