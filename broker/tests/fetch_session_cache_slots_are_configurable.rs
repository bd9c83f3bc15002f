//! Kafka's `max.incremental.fetch.session.cache.slots` (default 1000, at least 0) bounds the
//! fetch sessions a broker holds; 0 turns sessions off. The broker always used 1000: an operator
//! could neither give a broker with many consumers more sessions nor turn them off.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, listed, session_fetch};
use mirrorlog_broker::broker::{Broker, BrokerConfig};

fn broker(dir: &std::path::Path, slots: i32) -> Broker {
    let mut config = BrokerConfig::new(dir, "127.0.0.1", 9092);
    config.max_incremental_fetch_session_cache_slots = slots;
    broker_with(config, &[("t", 2)]).0
}

#[test]
fn the_default_is_kafkas() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    assert_eq!(config.max_incremental_fetch_session_cache_slots, 1000);
}

#[test]
fn a_full_cache_answers_a_new_consumer_without_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), 1);
    let first = fetch_at(&b, session_fetch(0, 0, &[("t", 0, 0)]), 12);
    assert_ne!(first.session_id, 0);
    // One slot, taken by a session used just now: the second consumer gets a full answer
    // without a session (Kafka's `maybeCreateSession` returns INVALID_SESSION_ID).
    let second = fetch_at(&b, session_fetch(0, 0, &[("t", 0, 0), ("t", 1, 0)]), 12);
    assert_eq!((second.error_code, second.session_id), (0, 0));
    assert_eq!(listed(&second), [("t".into(), 0), ("t".into(), 1)]);
    assert_eq!(b.fetch_sessions.len(), 1);
    // The first session goes on.
    let resp = fetch_at(&b, session_fetch(first.session_id, 1, &[]), 12);
    assert_eq!((resp.error_code, resp.session_id), (0, first.session_id));
}

#[test]
fn zero_slots_turn_sessions_off() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), 0);
    let resp = fetch_at(&b, session_fetch(0, 0, &[("t", 0, 0)]), 12);
    assert_eq!((resp.error_code, resp.session_id), (0, 0));
    assert_eq!(listed(&resp), [("t".into(), 0)]);
    assert!(b.fetch_sessions.is_empty());
}

#[test]
fn a_negative_count_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.max_incremental_fetch_session_cache_slots = -1;
    let e = config.validate().unwrap_err();
    assert!(
        e.contains("max.incremental.fetch.session.cache.slots"),
        "{e}"
    );
}
