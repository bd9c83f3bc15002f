//! A source partition whose metadata names no leader (−1: an election under way, its leader's
//! broker down) is not fetched. Kafka's consumer asks for metadata again at once
//! (`AbstractFetch.prepareFetchRequests` requests an update, backed off by `retry.backoff.ms`,
//! 100 ms); the mirror waited for its next periodic sync (`metadata.refresh.interval.ms`, 5 s by
//! default, up to an hour), the partition stalled meanwhile. Driven by hand on the manual clock.

use crate::common;

use common::{
    HookedWorld, Hooks, assert_mirroring_at, fetch_as_leader_in, hooked_world, orders, produce_to,
};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::state::MirrorPartitionState as S;
use parking_lot::Mutex;
use std::sync::Arc;

/// What the source's metadata names, and how often it was asked.
struct Leadership {
    leader: i32,
    epoch: i32,
    metadata_calls: usize,
}

impl Leadership {
    /// The metadata names `leader` at `epoch` from now on; the calls are counted from zero.
    fn name(&mut self, leader: i32, epoch: i32) {
        (self.leader, self.epoch, self.metadata_calls) = (leader, epoch, 0);
    }
}

/// A mirror of a one-partition source whose metadata names what the returned state says.
fn world() -> (HookedWorld, Arc<Mutex<Leadership>>) {
    let state = Arc::new(Mutex::new(Leadership {
        leader: 1,
        epoch: 0,
        metadata_calls: 0,
    }));
    let (m, f) = (state.clone(), state.clone());
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            metadata: Some(Box::new(move |md| {
                let mut s = m.lock();
                s.metadata_calls += 1;
                for p in md.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                    p.leader = s.leader;
                    p.leader_epoch = LeaderEpoch(s.epoch);
                }
            })),
            // The leader fetched from leads in the epoch the metadata names.
            fetch: Some(Box::new(move |inner, _, request| {
                let epoch = LeaderEpoch(f.lock().epoch);
                fetch_as_leader_in(inner, request, |_| epoch)
            })),
            ..Hooks::default()
        },
    );
    (w, state)
}

#[test]
fn a_partition_without_a_leader_fetches_once_the_refreshed_metadata_names_one() {
    let (w, state) = world();
    w.mirror.fetch_round(0);
    assert_eq!(w.mirror.describe()[0].log_end_offset, Offset(3));

    // The source's leader goes away; a sync learns there is none.
    state.lock().name(-1, 1);
    w.mirror.sync().unwrap();
    produce_to(&w.src, &orders(0), b"w", 2);
    // A new leader is elected; no periodic sync runs from here on.
    state.lock().name(1, 2);

    w.clock.advance(100);
    w.mirror.fetch_round(0);
    assert_eq!(
        state.lock().metadata_calls,
        1,
        "a partition without a leader asks the source's metadata at once"
    );
    w.mirror.fetch_round(0);
    assert_mirroring_at(&w.mirror, Offset(5));
}

#[test]
fn a_partition_without_a_leader_asks_at_most_once_per_100_ms() {
    let (w, state) = world();
    state.lock().name(-1, 1);
    w.mirror.sync().unwrap();
    state.lock().metadata_calls = 0;

    w.clock.advance(100);
    for _ in 0..5 {
        w.mirror.fetch_round(0);
    }
    assert_eq!(state.lock().metadata_calls, 1, "one refresh per 100 ms");
    w.clock.advance(99);
    w.mirror.fetch_round(0);
    assert_eq!(state.lock().metadata_calls, 1);
    w.clock.advance(1);
    w.mirror.fetch_round(0);
    assert_eq!(state.lock().metadata_calls, 2, "asked again after 100 ms");
    assert_eq!(w.mirror.describe()[0].state, S::Mirroring);
}
