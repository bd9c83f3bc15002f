//! The mirror keeps fetchers per source node (Kafka's `AbstractFetcherManager`): a partition
//! whose source leader moves from node 1 to node 2 and back changes fetchers each time, while
//! answers of the fetcher it left may still be in flight. Whatever order those answers are
//! applied in, the destination ends byte-identical to the source, with no gap and nothing
//! appended twice (an answer is applied only at the log end it was asked for), and the
//! fetcher a partition left keeps no cursor for it.

use crate::common;

use common::{
    HookedWorld, Hooks, fetch_as_leader_in, hooked_world, log_bytes, orders, produce_to, two_nodes,
};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::manager::{FETCHER_IDLE_MS, MirrorConfig};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A two-node source whose metadata names `(leader, epoch)` for partition 0; either node
/// serves its fetches (an answer in flight from the old leader is one it gave while it led).
fn two_node_world(leadership: Arc<Mutex<(i32, i32)>>) -> HookedWorld {
    let named = leadership.clone();
    hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            metadata: Some(two_nodes(move |_| {
                let (leader, epoch) = *named.lock();
                (leader, LeaderEpoch(epoch))
            })),
            // The engine source is node 1, whichever node this plays, in the epoch the
            // metadata names now.
            fetch: Some(Box::new(move |inner, _, request| {
                let epoch = LeaderEpoch(leadership.lock().1);
                fetch_as_leader_in(inner, request, |_| epoch)
            })),
            ..Hooks::default()
        },
    )
}

fn end(w: &HookedWorld) -> Offset {
    w.dst.get(&orders(0)).unwrap().read().log_end_offset()
}

fn assert_identical(w: &HookedWorld) {
    assert_eq!(
        log_bytes(&w.dst.get(&orders(0)).unwrap()),
        log_bytes(&w.src.get(&orders(0)).unwrap()),
        "destination and source differ"
    );
}

#[test]
fn answers_in_flight_across_a_leader_move_and_back_append_once_and_leave_no_gap() {
    let leadership = Arc::new(Mutex::new((1, 0)));
    let w = two_node_world(leadership.clone());
    let m = &w.mirror;
    let mut on_1 = m.pipelined_fetcher_of(1, 0);
    let mut on_2 = m.pipelined_fetcher_of(2, 0);

    // Node 1 answers 0..3; not applied yet.
    let from_1 = m.fetch_ahead(&mut on_1, 1 << 20);
    assert!(from_1.record_bytes() > 0);
    assert_eq!(m.fetch_ahead(&mut on_2, 1 << 20).record_bytes(), 0);

    // The leadership moves to node 2: its fetcher asks from the log end, 0 (0..5).
    produce_to(&w.src, &orders(0), b"b", 2);
    *leadership.lock() = (2, 1);
    m.sync().unwrap();
    let from_2 = m.fetch_ahead(&mut on_2, 1 << 20);
    assert!(from_2.record_bytes() > 0);
    assert_eq!(
        m.fetch_ahead(&mut on_1, 1 << 20).record_bytes(),
        0,
        "node 1's fetcher no longer fetches it"
    );

    // Node 1's answer lands first; node 2's, asked at 0, is then not where the log ends.
    assert!(m.apply_ahead(&on_1, from_1) > 0);
    assert_eq!(end(&w), Offset(3));
    assert_eq!(m.apply_ahead(&on_2, from_2), 0, "appended twice");
    assert_eq!(end(&w), Offset(3));

    // Node 2 asks again from the log end (3..7) ...
    produce_to(&w.src, &orders(0), b"c", 2);
    let again_from_2 = m.fetch_ahead(&mut on_2, 1 << 20);
    assert!(again_from_2.record_bytes() > 0);
    // ... and before that is applied, the leadership is back on node 1, which asks from the
    // log end too (3..8), not from where its own last answer ended.
    *leadership.lock() = (1, 2);
    m.sync().unwrap();
    produce_to(&w.src, &orders(0), b"d", 1);
    let again_from_1 = m.fetch_ahead(&mut on_1, 1 << 20);
    assert!(again_from_1.record_bytes() > 0);
    assert!(m.apply_ahead(&on_2, again_from_2) > 0);
    assert_eq!(end(&w), Offset(7));
    assert_eq!(m.apply_ahead(&on_1, again_from_1), 0, "appended twice");

    for _ in 0..10 {
        let got = m.fetch_ahead(&mut on_1, 1 << 20);
        m.apply_ahead(&on_1, got);
        assert_eq!(m.fetch_ahead(&mut on_2, 1 << 20).record_bytes(), 0);
    }
    assert_eq!(end(&w), Offset(8));
    assert_identical(&w);
}

/// Polls `done` until it holds or a minute passes (a hang guard, not a verdict on timing).
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_running_mirror_starts_a_fetcher_for_the_new_leader_and_stops_the_idle_one() {
    let leadership = Arc::new(Mutex::new((1, 0)));
    let w = two_node_world(leadership.clone());
    let refresh = w.mirror.config().metadata_refresh_interval_ms;
    w.mirror.run();
    eventually("node 1's partition mirrored", || end(&w) == Offset(3));
    assert_eq!(w.mirror.running_fetchers(), [(1, 0)]);

    for (leader, epoch, records) in [(2, 1, 2), (1, 2, 3), (2, 3, 1)] {
        produce_to(&w.src, &orders(0), b"x", records);
        let src_end = w.src.get(&orders(0)).unwrap().read().log_end_offset();
        *leadership.lock() = (leader, epoch);
        // The next metadata sync sees the move.
        w.clock.advance(refresh);
        eventually("the new leader's fetcher started", || {
            w.mirror.running_fetchers().contains(&(leader, 0))
        });
        eventually("the partition mirrored from its new leader", || {
            end(&w) == src_end
        });
        // The old leader's fetcher, left without partitions, stops once idle long enough.
        w.clock.advance(FETCHER_IDLE_MS);
        eventually("the old leader's fetcher stopped", || {
            w.mirror.running_fetchers() == [(leader, 0)]
        });
    }
    w.mirror.shutdown();
    assert!(w.mirror.running_fetchers().is_empty());
    assert_identical(&w);
}
