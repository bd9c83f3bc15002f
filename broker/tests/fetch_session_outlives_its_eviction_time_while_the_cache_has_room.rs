//! Kafka's `FetchSessionCache` has no timer: a session idle longer than
//! `MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS` (120 s) only becomes evictable, and is evicted when a new
//! session needs its slot (`tryEvict`). The broker's periodic upkeep dropped every session idle
//! that long, so a consumer whose processing took more than two minutes between polls lost its
//! session (FETCH_SESSION_ID_NOT_FOUND, then a full fetch of every partition) with the cache
//! nearly empty.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, listed, session_fetch};
use mirrorlog_broker::broker::BrokerConfig;

#[test]
fn an_idle_session_survives_the_upkeep_while_the_cache_has_room() {
    let dir = tempfile::tempdir().unwrap();
    let (b, clock) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 2)],
    );
    let resp = fetch_at(&b, session_fetch(0, 0, &[("t", 0, 0), ("t", 1, 0)]), 12);
    let id = resp.session_id;
    assert_ne!(id, 0);

    // Ten minutes without a fetch (Kafka's default eviction time is two), upkeep running.
    for _ in 0..10 {
        clock.advance(60_000);
        b.tick();
    }
    let resp = fetch_at(&b, session_fetch(id, 1, &[]), 12);
    assert_eq!((resp.error_code, resp.session_id), (0, id), "{resp:?}");
    assert!(listed(&resp).is_empty(), "nothing changed: {resp:?}");
    assert_eq!(b.fetch_sessions.len(), 1);
}
