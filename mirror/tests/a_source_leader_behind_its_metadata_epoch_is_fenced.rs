//! KIP-320: Kafka's fetchers send the leader epoch their metadata names as each fetch's
//! `current_leader_epoch`, and the node fetched from answers only when that is its own epoch:
//! FENCED_LEADER_EPOCH when the asker's is older, UNKNOWN_LEADER_EPOCH when newer (a node that
//! has not yet heard of the election naming it, or of the one that deposed it). The mirror sent
//! none, so a node behind the metadata served its own log: records the new epoch's log does not
//! hold were appended, and the partition then failed on the divergence (without
//! `mirror.support.unclean.leader.election`). Driven by hand, one fetch round at a time.

use crate::common;

use common::{Hooks, assert_mirroring_at, hooked_world, log_bytes, orders, produce_to};
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, ReplicaOrigin};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::SourceCluster;
use mirrorlog_mirror::state::MirrorStateStore;
use parking_lot::Mutex;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};

/// The source's node 1 leads in `epoch` from its log end on (it has heard of the election
/// now) and writes `batches` batches of two records there.
fn leads_in_epoch(w: &common::HookedWorld, epoch: i32, batches: usize) {
    let h = w.src.get(&orders(0)).unwrap();
    let mut log = h.write();
    log.assign_leader_epoch(LeaderEpoch(epoch)).unwrap();
    for _ in 0..batches {
        let mut b = mirrorlog_segment::BatchBuilder::new()
            .compression(mirrorlog_segment::Compression::None);
        for i in 0..2 {
            b.append(TimestampMs(common::T0 + i), None, Some(b"new"), &[]);
        }
        log.append_as_leader(
            b.build().into_bytes(),
            LeaderEpoch(epoch),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

/// A metadata hook naming every partition's leader in the epoch `named` holds.
fn names_epoch(named: Arc<AtomicI32>) -> common::MetadataHook {
    Box::new(move |md| {
        for p in md.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()) {
            p.leader_epoch = LeaderEpoch(named.load(Ordering::Relaxed));
        }
    })
}

/// A fetch hook passing each fetch on to the engine source and noting the
/// `current_leader_epoch` of each partition asked in `sent`.
fn recording_epochs(sent: Arc<Mutex<Vec<i32>>>) -> common::FetchHook {
    Box::new(move |inner, node, request| {
        sent.lock().extend(
            request
                .partitions
                .iter()
                .map(|p| p.current_leader_epoch.get()),
        );
        inner.fetch(node, request)
    })
}

/// The source's metadata names node 1 in epoch 1 while node 1 itself is still in epoch 0 and
/// writes on there (records 3..5, which epoch 1's log will not hold). Asked with epoch 1, it
/// answers UNKNOWN_LEADER_EPOCH: nothing is appended, the partition is not failed, and once
/// the node leads in epoch 1 the destination copies its log byte for byte.
#[test]
fn a_node_behind_the_epoch_the_metadata_names_is_not_copied() {
    let named = Arc::new(AtomicI32::new(0));
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            metadata: Some(names_epoch(named.clone())),
            ..Hooks::default()
        },
    );
    w.mirror.fetch_round(0);
    assert_mirroring_at(&w.mirror, Offset(3));

    named.store(1, Ordering::Relaxed);
    produce_to(&w.src, &orders(0), b"stale", 2);
    w.mirror.sync().unwrap();
    for _ in 0..4 {
        w.mirror.fetch_round(0);
        w.clock.advance(1_000);
    }
    assert_mirroring_at(&w.mirror, Offset(3));
    assert!(w.mirror.describe()[0].failure.is_none());

    // Node 1 hears of epoch 1: what it wrote since epoch 0 ended (at 3) is not in the
    // epoch's log (Kafka's `makeLeader` after the truncation a follower does first).
    w.src
        .get(&orders(0))
        .unwrap()
        .write()
        .truncate_to(Offset(3))
        .unwrap();
    leads_in_epoch(&w, 1, 2);
    common::catch_up(&w.mirror);
    assert_mirroring_at(&w.mirror, Offset(7));
    assert_eq!(
        log_bytes(&w.dst.get(&orders(0)).unwrap()),
        log_bytes(&w.src.get(&orders(0)).unwrap()),
        "the destination holds the source's log of epoch 1"
    );
}

/// The leader moves on to epoch 1 on the same node and writes there before the mirror's next
/// sync: the fetch in epoch 0 is answered FENCED_LEADER_EPOCH, the mirror asks the source's
/// metadata at once and fetches again in epoch 1 at the next round (no pause: the error was
/// about an epoch now past), nothing failed.
#[test]
fn a_fetch_in_an_old_epoch_is_fenced_and_asked_again_in_the_new_one() {
    let sent = Arc::new(Mutex::new(vec![]));
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            fetch: Some(recording_epochs(sent.clone())),
            ..Hooks::default()
        },
    );
    w.mirror.fetch_round(0);
    assert_mirroring_at(&w.mirror, Offset(3));

    leads_in_epoch(&w, 1, 1);
    assert_eq!(w.mirror.fetch_round(0), 0, "fenced: nothing appended");
    assert_mirroring_at(&w.mirror, Offset(3));
    assert!(w.mirror.describe()[0].failure.is_none());
    assert!(w.mirror.fetch_round(0) > 0);
    assert_mirroring_at(&w.mirror, Offset(5));
    assert_eq!(*sent.lock(), [0, 0, 1], "the epochs the fetches carried");
}

/// A source below Fetch v12 is asked where an epoch ends (OffsetForLeaderEpoch) before a
/// partition whose leader changed is fetched, and that question is fenced as a fetch is. Node
/// 1, which the metadata names leader in epoch 2, is still in epoch 1, which it won uncleanly
/// (its log cut back to 3 and written there; the cluster has since elected again, in epoch 2,
/// a log that holds 0..5 of epoch 0). Asked without the epoch, it answered from its own log
/// that epoch 0 ends at 3, below the destination's 5: the partition FAILED (no unclean-election
/// support) for records epoch 2's log holds. Asked in epoch 2, it answers UNKNOWN_LEADER_EPOCH;
/// once it leads in epoch 2 with the cluster's log, nothing diverged.
#[test]
fn a_node_behind_the_metadata_epoch_does_not_say_where_an_epoch_ends() {
    let named = Arc::new(AtomicI32::new(0));
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            below_fetch_v12: true,
            metadata: Some(names_epoch(named.clone())),
            ..Hooks::default()
        },
    );
    produce_to(&w.src, &orders(0), b"kept", 2);
    w.mirror.fetch_round(0);
    w.mirror.fetch_round(0);
    assert_mirroring_at(&w.mirror, Offset(5));
    let h = w.src.get(&orders(0)).unwrap();
    let kept = {
        let log = h.read();
        log.read(Offset(3), u32::MAX >> 1, FetchIsolation::LogEnd, true)
            .unwrap()
            .records
            .unwrap()
            .slice
            .read_all()
            .unwrap()
    };

    h.write().truncate_to(Offset(3)).unwrap();
    leads_in_epoch(&w, 1, 1);
    named.store(2, Ordering::Relaxed);
    w.mirror.sync().unwrap();
    for _ in 0..4 {
        w.mirror.fetch_round(0);
        w.clock.advance(1_000);
    }
    assert_mirroring_at(&w.mirror, Offset(5));
    assert!(w.mirror.describe()[0].failure.is_none());

    // Node 1 takes the cluster's log (a follower's truncation and fetch), then leads in epoch 2.
    {
        let mut log = h.write();
        log.truncate_to(Offset(3)).unwrap();
        log.append_as_follower(kept, ReplicaOrigin::Replication)
            .unwrap();
    }
    leads_in_epoch(&w, 2, 1);
    common::catch_up(&w.mirror);
    assert_mirroring_at(&w.mirror, Offset(7));
    assert_eq!(
        log_bytes(&w.dst.get(&orders(0)).unwrap()),
        log_bytes(&h),
        "the destination holds the source's log of epoch 2"
    );
}

/// A mirror restored from its state (a broker restart) knows no source leader until it asks
/// the source's metadata; the leader it learns there comes with the leader's epoch, which every
/// fetch it sends from then on carries — never none (−1), which a node behind the metadata
/// would serve from its own log.
#[test]
fn a_restored_mirror_fetches_in_the_epoch_the_metadata_names() {
    let w = hooked_world(1, MirrorConfig::new("m"), Hooks::default());
    common::catch_up(&w.mirror);
    assert_mirroring_at(&w.mirror, Offset(3));
    // The source elects again (epoch 2) while the destination's broker is down.
    leads_in_epoch(&w, 2, 1);
    let common::HookedWorld {
        dirs: _dirs,
        src,
        dst,
        clock,
        mirror,
    } = w;
    drop(mirror);

    let sent = Arc::new(Mutex::new(vec![]));
    let source = common::Hooked {
        inner: EngineSource::new(src.clone(), "source-cluster", 1),
        hooks: Hooks {
            fetch: Some(recording_epochs(sent.clone())),
            ..Hooks::default()
        },
    };
    let restored = MirrorManager::new(
        MirrorConfig::new("m"),
        Arc::new(source),
        dst.clone(),
        Arc::new(common::Dest(dst.clone())),
        Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
        clock,
    )
    .unwrap();
    restored.drive();
    common::catch_up(&restored);
    assert_mirroring_at(&restored, Offset(5));
    let sent = sent.lock().clone();
    assert!(!sent.is_empty());
    assert!(
        sent.iter().all(|&e| e == 2),
        "the epochs the restored mirror's fetches carried: {sent:?}"
    );
    assert_eq!(
        log_bytes(&dst.get(&orders(0)).unwrap()),
        log_bytes(&src.get(&orders(0)).unwrap())
    );
}
