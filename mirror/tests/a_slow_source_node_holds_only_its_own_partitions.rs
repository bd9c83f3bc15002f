//! Kafka keeps `num.replica.fetchers` fetcher threads per source broker
//! (`AbstractFetcherManager`: one per (broker id, fetcher id)), so a broker that is slow, down
//! or holding a long poll delays only the partitions it leads. The mirror ran
//! `mirror.num.replica.fetchers` threads in all, each asking its partitions' leaders one after
//! another: with one thread, a fetch held by node 1 kept node 2's partition from being fetched
//! at all until node 1 answered.
//!
//! Node 1's fetches wait on a gate the test opens only once node 2's partition has been
//! mirrored to its end (or a deadline has passed, which fails the test instead of hanging it).

use crate::common;

use common::{Hooks, hooked_world, log_bytes, orders, produce_to, two_nodes, within};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::source::SourceCluster;
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Node 1's fetches wait here until it opens; counts the fetches that reached it.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, u32)>,
    changed: Condvar,
}

impl Gate {
    fn pass(&self) {
        let mut s = self.state.lock();
        s.1 += 1;
        self.changed.notify_all();
        // Bounded, so a test that failed without opening it does not leave a thread behind
        // for good.
        let give_up = Instant::now() + Duration::from_secs(300);
        while !s.0 && Instant::now() < give_up {
            self.changed.wait_for(&mut s, Duration::from_millis(100));
        }
    }

    fn open(&self) {
        self.state.lock().0 = true;
        self.changed.notify_all();
    }

    fn waiting(&self) -> u32 {
        self.state.lock().1
    }
}

#[test]
fn a_fetch_held_by_one_source_node_does_not_hold_another_nodes_partitions() {
    let gate = Arc::new(Gate::default());
    let g = gate.clone();
    let mut config = MirrorConfig::new("m");
    config.fetcher_threads = 1;
    let w = hooked_world(
        2,
        config,
        Hooks {
            // Partition 0 is led by node 1, partition 1 by node 2.
            metadata: Some(two_nodes(|p| (p + 1, LeaderEpoch(0)))),
            fetch: Some(Box::new(move |inner, node, request| {
                if node == 1 {
                    g.pass();
                }
                // The engine source is node 1, whichever node this plays.
                inner.fetch(1, request)
            })),
            ..Hooks::default()
        },
    );
    w.mirror.run();
    assert!(
        within(60, || gate.waiting() > 0),
        "node 1 was never fetched from"
    );
    // Node 1 holds a fetch from here on; node 2's partition gets new records.
    produce_to(&w.src, &orders(1), b"n2", 4);
    let end = |p| w.dst.get(&orders(p)).unwrap().read().log_end_offset();
    let node_2_caught_up = within(30, || end(1) == Offset(4));
    gate.open();
    let node_1_caught_up = within(60, || end(0) == Offset(3));
    w.mirror.shutdown();
    assert!(
        node_2_caught_up,
        "node 2's partition was not fetched while node 1 held a fetch (log end {})",
        end(1)
    );
    assert!(node_1_caught_up, "node 1's partition after the gate opened");
    for p in 0..2 {
        assert_eq!(
            log_bytes(&w.dst.get(&orders(p)).unwrap()),
            log_bytes(&w.src.get(&orders(p)).unwrap())
        );
    }
}
