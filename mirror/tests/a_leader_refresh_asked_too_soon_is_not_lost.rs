//! A fetch answered FENCED_LEADER_EPOCH (or "not the leader") has the source's leaders asked,
//! at most once per 100 ms (Kafka's consumer backs its metadata updates off by
//! `retry.backoff.ms`). A request made within the 100 ms was dropped: its partition, backed off
//! for a second, waited for a refresh one of its own fetches asked for again, however many
//! refreshes ran meanwhile for other topics (a partition without a leader asks for one every
//! pass of the fetcher pool, so such a refresh took nearly every slot). Since KIP-320 a source
//! election on the same node fences the mirror's fetches too, so every epoch change waited so.
//! Driven by hand on the mirror's clock, one fetch round at a time.

use crate::common;

use common::{Dest, Hooked, Hooks, T0, manager, orders, produce_to};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::MirrorStateStore;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn other() -> TopicPartition {
    TopicPartition {
        topic: "other".into(),
        partition: 0,
    }
}

#[test]
fn a_refresh_asked_within_the_interval_is_made_with_the_next_one() {
    let dirs = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (src, dst) = (manager(dirs.0.path()), manager(dirs.1.path()));
    src.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    src.create(&other(), TopicId([2; 16]), LogConfig::default())
        .unwrap();
    produce_to(&src, &orders(0), b"v", 3);
    produce_to(&src, &other(), b"v", 1);
    // Whether the source's metadata names no leader for `other` (its only replica is down).
    let leaderless = Arc::new(AtomicBool::new(false));
    let l = leaderless.clone();
    let source = Hooked {
        inner: EngineSource::new(src.clone(), "source-cluster", 1),
        hooks: Hooks {
            metadata: Some(Box::new(move |md| {
                for t in md.topics.iter_mut().filter(|t| t.name == "other") {
                    for p in &mut t.partitions {
                        if l.load(Ordering::Relaxed) {
                            p.leader = -1;
                        }
                    }
                }
            })),
            ..Hooks::default()
        },
    };
    let clock = ManualClock::new(T0);
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        Arc::new(source),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap()),
        clock.clone(),
    )
    .unwrap();
    mirror
        .start_topics(&["orders".to_string(), "other".to_string()])
        .unwrap();
    mirror.drive();
    common::catch_up(&mirror);
    let leo = |k: &TopicPartition| dst.get(k).unwrap().read().log_end_offset();
    assert_eq!((leo(&orders(0)), leo(&other())), (Offset(3), Offset(1)));

    // `other` loses its leader; the fetch round asks for one (the refresh's slot is taken).
    leaderless.store(true, Ordering::Relaxed);
    mirror.sync().unwrap();
    mirror.fetch_round(0);

    // `orders` elects again on the same node, which writes in epoch 1: the next fetch (epoch
    // 0) is fenced, and the refresh it asks for comes within the 100 ms.
    {
        let h = src.get(&orders(0)).unwrap();
        let mut log = h.write();
        log.assign_leader_epoch(LeaderEpoch(1)).unwrap();
        let mut b = mirrorlog_segment::BatchBuilder::new()
            .compression(mirrorlog_segment::Compression::None);
        b.append(TimestampMs(T0), None, Some(b"new"), &[]);
        b.append(TimestampMs(T0 + 1), None, Some(b"new"), &[]);
        log.append_as_leader(b.build().into_bytes(), LeaderEpoch(1), LeaderOrigin::Client)
            .unwrap();
        let end = log.log_end_offset();
        log.update_high_watermark(end);
    }
    assert_eq!(mirror.fetch_round(0), 0, "fenced");

    // 100 ms on, `other` has the leaders asked again: `orders`' request goes with it, and its
    // new epoch ends the pause its fenced fetch began.
    clock.advance(100);
    mirror.fetch_round(0);
    mirror.fetch_round(0);
    mirror.fetch_round(0);
    assert_eq!(leo(&orders(0)), Offset(5));
    assert!(mirror.describe().iter().all(|s| s.failure.is_none()));
}
