//! A source older than Kafka 2.7 (Fetch below v12) cannot be sent `LastFetchedEpoch`, so it
//! never answers a `DivergingEpoch`: after an unclean election there (its log truncated below the
//! destination's end and written again at a new epoch) the mirror fetched on from its own log
//! end and kept the records the source lost, under the source's new ones. Kafka's
//! `ReplicaFetcherThread` asks such a leader OffsetsForLeaderEpoch about its latest epoch when a
//! partition is added and after each leader change, and truncates by the divergence rule before
//! fetching; the mirror now does the same, and decides as for a `DivergingEpoch` answer
//! (`mirror.support.unclean.leader.election`: truncate and go on, or FAILED). Driven by hand, one
//! fetch round at a time: nothing here is timed.

use crate::common;

use common::{Hooks, hooked_world, log_bytes, orders, produce_to};
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::state::MirrorPartitionState as S;

/// A mirror of a source below Fetch v12 (with `hooks`) that has copied offsets 0..5 (epoch 0).
fn copied_five(ule: bool, hooks: Hooks) -> common::HookedWorld {
    let mut cfg = MirrorConfig::new("m");
    cfg.support_unclean_leader_election = ule;
    let w = hooked_world(
        1,
        cfg,
        Hooks {
            below_fetch_v12: true,
            ..hooks
        },
    );
    produce_to(&w.src, &orders(0), b"lost", 2);
    w.mirror.fetch_round(0);
    w.mirror.fetch_round(0);
    assert_eq!(w.mirror.describe()[0].log_end_offset, Offset(5));
    w
}

/// An unclean election on the source: offsets 3 and 4 are lost, the new leader writes 3..=6 at
/// epoch 1, in two batches (so a fetch at the destination's log end, 5, finds one that starts
/// there).
fn unclean_election(w: &common::HookedWorld) {
    let h = w.src.get(&orders(0)).unwrap();
    let mut log = h.write();
    log.truncate_to(Offset(3)).unwrap();
    log.assign_leader_epoch(LeaderEpoch(1)).unwrap();
    for _ in 0..2 {
        let mut b = mirrorlog_segment::BatchBuilder::new()
            .compression(mirrorlog_segment::Compression::None);
        for i in 0..2 {
            b.append(TimestampMs(common::T0 + i), None, Some(b"new"), &[]);
        }
        log.append_as_leader(b.build().into_bytes(), LeaderEpoch(1), LeaderOrigin::Client)
            .unwrap();
    }
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn fetch_rounds(w: &common::HookedWorld) {
    for _ in 0..4 {
        w.mirror.fetch_round(0);
    }
}

/// The election, then a sync that hears of the new leader epoch, then fetches.
fn unclean_election_below_fetch_v12(ule: bool) -> common::HookedWorld {
    let w = copied_five(ule, Hooks::default());
    unclean_election(&w);
    w.mirror.sync().unwrap();
    fetch_rounds(&w);
    w
}

fn assert_copy_of_the_source(w: &common::HookedWorld) {
    let s = w.mirror.describe().remove(0);
    assert_eq!(
        (s.state, s.log_end_offset),
        (S::Mirroring, Offset(7)),
        "{:?}",
        s.failure
    );
    let of = |m: &mirrorlog_engine::manager::LogManager| log_bytes(&m.get(&orders(0)).unwrap());
    assert!(
        of(&w.dst) == of(&w.src),
        "the destination holds the source's log, not the records it lost"
    );
}

#[test]
fn with_unclean_election_support_the_destination_truncates_and_copies_the_new_records() {
    assert_copy_of_the_source(&unclean_election_below_fetch_v12(true));
}

/// A partition entering MIRRORING is checked too: here it was paused over the election, and the
/// source's metadata (below v7) reports no leader epochs, so no leader change is seen.
#[test]
fn a_partition_resumed_after_the_election_is_checked_before_its_first_fetch() {
    let w = copied_five(
        true,
        Hooks {
            metadata: Some(Box::new(|md| {
                for p in md.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
                    p.leader_epoch = LeaderEpoch::NONE;
                }
            })),
            ..Hooks::default()
        },
    );
    w.mirror.pause_topic("orders").unwrap();
    unclean_election(&w);
    w.mirror.sync().unwrap();
    w.mirror.resume_topic("orders").unwrap();
    fetch_rounds(&w);
    assert_copy_of_the_source(&w);
}

#[test]
fn without_unclean_election_support_the_partition_fails_untouched() {
    let w = unclean_election_below_fetch_v12(false);
    let s = w.mirror.describe().remove(0);
    assert_eq!(s.state, S::Failed, "{:?}", s.log_end_offset);
    let f = s.failure.unwrap();
    assert!(f.contains("mirror.support.unclean.leader.election"), "{f}");
    assert_eq!(s.log_end_offset, Offset(5), "nothing truncated or appended");
}

/// Fetched between the election and the sync that reports its new leader epoch: the source's
/// next batch starts right at the destination's log end, and the mirror appended it over the
/// records the source lost; the OffsetForLeaderEpoch check after the sync then asked about that
/// new epoch (ending at the source's log end) and saw no divergence below it. Records of an
/// epoch not heard of now make the partition truncating first, as a leader change does.
#[test]
fn records_of_a_new_epoch_fetched_before_the_sync_are_checked_first() {
    let w = copied_five(true, Hooks::default());
    unclean_election(&w);
    fetch_rounds(&w);
    w.mirror.sync().unwrap();
    fetch_rounds(&w);
    assert_copy_of_the_source(&w);
}
