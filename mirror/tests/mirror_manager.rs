//! Scenario: a mirror between two engines driven by the manager — start, catch up byte for byte,
//! keep following, pause/resume, fail over mid-transaction; a corrupt batch and a deleted source
//! topic fail only their partitions; a divergence fails the partition unless unclean-election
//! support is on, in which case it truncates and continues. Each step is driven explicitly
//! (`sync`, `drive`, `fetch_round`): no timing decides anything.

use crate::common;

use common::{T0, manager};

use bytes::Bytes;
use common::{ConfigDest, Dest, log_bytes};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicId, TopicPartition,
};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};

use mirrorlog_segment::{BatchBuilder, Compression};
use std::sync::Arc;

struct World {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    src: Arc<LogManager>,
    dst: Arc<LogManager>,
    source: Arc<EngineSource>,
    mirror: Arc<MirrorManager>,
}

fn world(config: MirrorConfig, topics: &[(&str, i32)]) -> World {
    world_with(config, topics, LogConfig::default(), |dst| {
        Arc::new(Dest(dst))
    })
}

/// [`world`] with source topics created with `topic_config` and the destination's topics
/// handled by `dest`.
fn world_with(
    config: MirrorConfig,
    topics: &[(&str, i32)],
    topic_config: LogConfig,
    dest: impl FnOnce(Arc<LogManager>) -> Arc<dyn DestinationTopics>,
) -> World {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    for (i, (t, n)) in topics.iter().enumerate() {
        for p in 0..*n {
            let id = TopicId([i as u8 + 1; 16]);
            src.create(
                &TopicPartition {
                    topic: (*t).into(),
                    partition: p,
                },
                id,
                topic_config.clone(),
            )
            .unwrap();
        }
    }
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        config,
        source.clone(),
        dst.clone(),
        dest(dst.clone()),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    World {
        _dirs: (a, b),
        src,
        dst,
        source,
        mirror,
    }
}

fn h(m: &LogManager, t: &str, p: i32) -> Arc<PartitionHandle> {
    m.get(&TopicPartition {
        topic: t.into(),
        partition: p,
    })
    .unwrap()
}

fn produce(m: &LogManager, t: &str, p: i32, b: Bytes, epoch: i32, origin: LeaderOrigin) {
    let h = h(m, t, p);
    let mut log = h.write();
    log.append_as_leader(b, LeaderEpoch(epoch), origin).unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn records(n: usize, codec: Compression) -> Bytes {
    let mut b = BatchBuilder::new().compression(codec);
    for i in 0..n {
        b.append(
            TimestampMs(T0 + i as i64),
            None,
            Some(format!("v{i}").as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

/// Appends a transactional batch of producer 9 to the source's orders-0 in leader epoch `epoch`
/// and leaves the transaction open.
fn open_txn(w: &World, epoch: i32) {
    let txn = BatchBuilder::new()
        .producer(ProducerId(9), ProducerEpoch(0), Sequence(0))
        .transactional(true)
        .record(TimestampMs(T0), None, Some(b"partial"))
        .build();
    produce(
        &w.src,
        "orders",
        0,
        txn.into_bytes(),
        epoch,
        LeaderOrigin::Client,
    );
}

/// Drives the mirror until two rounds in a row append nothing (a truncation round appends
/// nothing but is followed by one that does).
fn catch_up(w: &World) {
    common::catch_up(&w.mirror);
}

fn state(w: &World, t: &str, p: i32) -> S {
    w.mirror
        .describe()
        .into_iter()
        .find(|s| s.topic == t && s.partition == p)
        .unwrap()
        .state
}

#[test]
fn a_mirror_catches_up_byte_for_byte_and_fails_over_mid_transaction() {
    let w = world(MirrorConfig::new("m1"), &[("orders", 2)]);
    for i in 0..20 {
        produce(
            &w.src,
            "orders",
            i % 2,
            records(5, [Compression::None, Compression::Zstd][i as usize % 2]),
            0,
            LeaderOrigin::Client,
        );
    }
    w.mirror.start_topics(&["orders".to_string()]).unwrap();
    assert_eq!(state(&w, "orders", 0), S::LogAlignment);
    catch_up(&w);
    assert_eq!(state(&w, "orders", 0), S::Mirroring);
    for p in 0..2 {
        assert_eq!(
            log_bytes(&h(&w.dst, "orders", p)),
            log_bytes(&h(&w.src, "orders", p)),
            "partition {p}"
        );
    }
    assert!(w.mirror.describe().iter().all(|s| s.lag == 0));
    // Client produce to the mirror is refused.
    let refused = h(&w.dst, "orders", 0).write().append_as_leader(
        records(1, Compression::None),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    );
    assert!(refused.is_err());
    // More data, including an open transaction, then pause/resume, then failover.
    open_txn(&w, 1);
    w.mirror.pause_topic("orders").unwrap();
    assert_eq!(
        w.mirror.fetch_round(0),
        0,
        "paused partitions are not fetched"
    );
    w.mirror.resume_topic("orders").unwrap();
    catch_up(&w);
    assert_eq!(
        log_bytes(&h(&w.dst, "orders", 0)),
        log_bytes(&h(&w.src, "orders", 0))
    );
    w.mirror.stop_topic("orders").unwrap();
    assert_eq!(state(&w, "orders", 0), S::Stopped);
    let d = h(&w.dst, "orders", 0);
    let log = d.read();
    assert!(!log.is_read_only());
    assert_eq!(
        log.last_stable_offset(),
        log.log_end_offset(),
        "the open transaction was aborted"
    );
    assert_eq!(log.producer_state().producer_count(), 0);
    let st = w
        .mirror
        .describe()
        .into_iter()
        .find(|s| s.partition == 0)
        .unwrap();
    assert_eq!(st.last_mirror_epoch, LeaderEpoch(1));
    drop(log);
    // Writable now; nothing more is fetched.
    produce(
        &w.dst,
        "orders",
        0,
        records(2, Compression::None),
        2,
        LeaderOrigin::Client,
    );
    produce(
        &w.src,
        "orders",
        0,
        records(2, Compression::None),
        1,
        LeaderOrigin::Client,
    );
    assert_eq!(w.mirror.fetch_round(0), 0);
}

#[test]
fn a_corrupt_batch_fails_only_its_partition() {
    let w = world(MirrorConfig::new("m2"), &[("a", 2)]);
    for p in 0..2 {
        produce(
            &w.src,
            "a",
            p,
            records(3, Compression::None),
            0,
            LeaderOrigin::Client,
        );
    }
    w.mirror.start_topics(&["a".to_string()]).unwrap();
    w.source.corrupt_next_fetch("a", 1);
    catch_up(&w);
    assert_eq!(state(&w, "a", 0), S::Mirroring);
    assert_eq!(state(&w, "a", 1), S::Failed);
    let st = w
        .mirror
        .describe()
        .into_iter()
        .find(|s| s.partition == 1)
        .unwrap();
    assert!(st.failure.unwrap().contains("corrupt"));
    assert_eq!(
        h(&w.dst, "a", 1).read().log_end_offset(),
        Offset(0),
        "nothing corrupt was written"
    );
}

#[test]
fn a_source_topic_deleted_is_failed_after_two_syncs() {
    let w = world(MirrorConfig::new("m3"), &[("gone", 1), ("stays", 1)]);
    w.mirror
        .start_topics(&["gone".to_string(), "stays".to_string()])
        .unwrap();
    catch_up(&w);
    w.src
        .delete(&TopicPartition {
            topic: "gone".into(),
            partition: 0,
        })
        .unwrap();
    w.mirror.sync().unwrap();
    assert_eq!(
        state(&w, "gone", 0),
        S::Mirroring,
        "one missing sync is not enough"
    );
    w.mirror.sync().unwrap();
    assert_eq!(state(&w, "gone", 0), S::Failed);
    assert_eq!(state(&w, "stays", 0), S::Mirroring);
    let failed = w
        .mirror
        .describe()
        .into_iter()
        .find(|s| s.topic == "gone")
        .unwrap();
    assert_eq!(failed.retry_attempt, -1, "not retried by itself");
    assert_eq!(failed.previous_state, Some(S::Mirroring));
    // A manual recover retries at once, back to MIRRORING from the log end.
    let leo = failed.log_end_offset;
    assert_eq!(w.mirror.recover_topic("gone").unwrap(), 1);
    let back = w
        .mirror
        .describe()
        .into_iter()
        .find(|s| s.topic == "gone")
        .unwrap();
    assert_eq!(
        (back.state, back.failure, back.retry_attempt),
        (S::Mirroring, None, 0)
    );
    assert_eq!(back.log_end_offset, leo);
    assert_eq!(
        w.mirror.recover_topic("stays").unwrap(),
        0,
        "nothing FAILED there"
    );
}

#[test]
fn divergence_fails_without_ule_support_and_recovers_with_it() {
    for ule in [false, true] {
        let mut cfg = MirrorConfig::new("m4");
        cfg.support_unclean_leader_election = ule;
        let w = world(cfg, &[("d", 1)]);
        for _ in 0..4 {
            produce(
                &w.src,
                "d",
                0,
                records(5, Compression::None),
                1,
                LeaderOrigin::Client,
            );
        }
        w.mirror.start_topics(&["d".to_string()]).unwrap();
        catch_up(&w);
        w.source.unclean_election("d", 0, Offset(10)).unwrap();
        produce(
            &w.src,
            "d",
            0,
            records(3, Compression::None),
            2,
            LeaderOrigin::Client,
        );
        catch_up(&w);
        if ule {
            assert_eq!(state(&w, "d", 0), S::Mirroring);
            assert_eq!(log_bytes(&h(&w.dst, "d", 0)), log_bytes(&h(&w.src, "d", 0)));
        } else {
            assert_eq!(state(&w, "d", 0), S::Failed);
            let f = w.mirror.describe()[0].failure.clone().unwrap();
            assert!(f.contains("mirror.support.unclean.leader.election"), "{f}");
            assert_eq!(
                h(&w.dst, "d", 0).read().log_end_offset(),
                Offset(20),
                "nothing truncated"
            );
        }
    }
}

#[test]
fn a_manager_reopened_over_the_same_store_resumes_each_partition_in_its_state() {
    let w = world(MirrorConfig::new("m1"), &[("orders", 1), ("payments", 1)]);
    for t in ["orders", "payments"] {
        produce(
            &w.src,
            t,
            0,
            records(5, Compression::None),
            0,
            LeaderOrigin::Client,
        );
    }
    w.mirror
        .start_topics(&["orders".to_string(), "payments".to_string()])
        .unwrap();
    catch_up(&w);
    w.mirror.pause_topic("payments").unwrap();
    let before = w.mirror.describe();
    w.mirror.shutdown();

    // A broker restart: a fresh store over the same `__mirror_state`, a fresh manager.
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let again = MirrorManager::new(
        MirrorConfig::new("m1"),
        w.source.clone(),
        w.dst.clone(),
        Arc::new(Dest(w.dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    let restored = again.describe();
    assert_eq!(again.topic_names(), vec!["orders", "payments"]);
    for (b, r) in before.iter().zip(&restored) {
        assert_eq!((&b.topic, b.partition), (&r.topic, r.partition));
        assert_eq!(
            (b.state, b.state_epoch),
            (r.state, r.state_epoch),
            "{}",
            b.topic
        );
    }
    produce(
        &w.src,
        "orders",
        0,
        records(7, Compression::Lz4),
        0,
        LeaderOrigin::Client,
    );
    again.sync().unwrap();
    let w2 = World {
        mirror: again.clone(),
        ..w
    };
    catch_up(&w2);
    assert_eq!(
        log_bytes(&h(&w2.dst, "orders", 0)),
        log_bytes(&h(&w2.src, "orders", 0))
    );
    // Resumed from the log end: no LOG_ALIGNMENT round trip (which truncates and bumps the
    // state epoch) happened.
    let orders = again
        .describe()
        .into_iter()
        .find(|s| s.topic == "orders")
        .unwrap();
    assert_eq!(orders.state, S::Mirroring);
    assert_eq!(orders.state_epoch, before[0].state_epoch);
    assert_eq!(state(&w2, "payments", 0), S::Paused);
}

#[test]
fn discovery_starts_matching_source_topics_and_exclude_wins() {
    let mut config = MirrorConfig::new("m1");
    config.topics_include = vec!["pay.*".into()];
    config.topics_exclude = vec!["__.*".into(), "payouts".into()];
    let w = world(config, &[("orders", 1), ("payments", 2), ("payouts", 1)]);
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_names(), vec!["payments"]);
    assert_eq!(w.mirror.topic_states("payments").len(), 2);
    w.mirror.add_patterns(&["ord.*".into()], &[]).unwrap();
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_names(), vec!["orders", "payments"]);
    assert!(w.mirror.is_excluded("payouts"));
    assert!(!w.mirror.is_included("payouts"));
    assert!(w.mirror.add_patterns(&["(".into()], &[]).is_err());
    assert_eq!(w.mirror.patterns().0, vec!["pay.*", "ord.*"]);
    // An exclude pattern added later stops the mirrored topics it matches (failover: STOPPED,
    // writable); the others keep mirroring.
    assert!(h(&w.dst, "orders", 0).read().is_read_only());
    w.mirror.add_patterns(&[], &["ord.*".into()]).unwrap();
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_states("orders"), vec![S::Stopped]);
    assert!(!h(&w.dst, "orders", 0).read().is_read_only());
    assert!(
        w.mirror
            .topic_states("payments")
            .iter()
            .all(|s| *s != S::Stopped)
    );
    assert!(h(&w.dst, "payments", 0).read().is_read_only());
    // Nothing more happens at the next sync.
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_states("orders"), vec![S::Stopped]);
    // A paused topic is stopped too.
    catch_up(&w);
    w.mirror.pause_topic("payments").unwrap();
    assert!(
        w.mirror
            .topic_states("payments")
            .iter()
            .all(|s| *s == S::Paused)
    );
    w.mirror.add_patterns(&[], &["payments".into()]).unwrap();
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_states("payments"), vec![S::Stopped; 2]);
    assert!(!h(&w.dst, "payments", 1).read().is_read_only());
}

/// Starting a topic that is already mirroring leaves its running partitions alone: same state,
/// same state epoch, same fetch position and known source high watermark. (The sync thread may
/// start a big topic's partitions while an operator's start is still working through them; a
/// second start of a partition the sync thread had moved on, e.g. through EPOCH_FENCING, used to
/// fail or reset it.)
#[test]
fn starting_a_running_topic_again_leaves_its_partitions_running() {
    let w = world(MirrorConfig::new("m-twice"), &[("t", 2)]);
    produce(
        &w.src,
        "t",
        0,
        records(3, Compression::None),
        0,
        LeaderOrigin::Client,
    );
    w.mirror.start_topics(&["t".to_string()]).unwrap();
    catch_up(&w);
    let before = w.mirror.describe();
    assert!(before.iter().all(|p| p.state == S::Mirroring));
    assert!(before.iter().all(|p| p.source_high_watermark.get() >= 0));
    w.mirror.start_topics(&["t".to_string()]).unwrap();
    let after = w.mirror.describe();
    assert_eq!(
        after
            .iter()
            .map(|p| (
                p.state,
                p.state_epoch,
                p.log_end_offset,
                p.source_high_watermark
            ))
            .collect::<Vec<_>>(),
        before
            .iter()
            .map(|p| (
                p.state,
                p.state_epoch,
                p.log_end_offset,
                p.source_high_watermark
            ))
            .collect::<Vec<_>>()
    );
    // A stopped topic starts again (failback).
    w.mirror.stop_topic("t").unwrap();
    w.mirror.start_topics(&["t".to_string()]).unwrap();
    assert!(
        w.mirror
            .describe()
            .iter()
            .all(|p| p.state == S::LogAlignment)
    );
}

/// A leader change on the in-process source: a new leader epoch, no data.
fn source_leader_change(w: &World, t: &str, p: i32) -> LeaderEpoch {
    let h = h(&w.src, t, p);
    let mut log = h.write();
    let next = LeaderEpoch(log.leader_epoch().get().max(0) + 1);
    log.assign_leader_epoch(next).unwrap();
    next
}

#[test]
fn the_destination_epoch_stays_above_a_climbing_source_epoch() {
    let w = world(MirrorConfig::new("m-epochs"), &[("e", 1)]);
    produce(
        &w.src,
        "e",
        0,
        records(3, Compression::None),
        0,
        LeaderOrigin::Client,
    );
    w.mirror.start_topics(&["e".to_string()]).unwrap();
    catch_up(&w);
    let dest = h(&w.dst, "e", 0);
    assert_eq!(dest.read().leader_epoch(), LeaderEpoch(10), "first bump");
    let mut bumps = 0;
    let mut last = dest.read().leader_epoch();
    for round in 0..30 {
        let source_epoch = source_leader_change(&w, "e", 0);
        if round % 3 == 0 {
            // Sometimes data in the new epoch, fetched before the next sync (reactive and
            // proactive bumps); otherwise only the sync sees the new epoch (periodic bump).
            produce(
                &w.src,
                "e",
                0,
                records(2, Compression::None),
                source_epoch.get(),
                LeaderOrigin::Client,
            );
            catch_up(&w);
        }
        w.mirror.sync().unwrap();
        let dle = dest.read().leader_epoch();
        assert!(
            dle >= source_epoch,
            "round {round}: destination epoch {dle} below the source's {source_epoch}"
        );
        assert!(dle >= last, "the destination epoch went down");
        if dle > last {
            bumps += 1;
            assert_eq!(dle, LeaderEpoch(source_epoch.get() + 10));
        }
        last = dle;
        let st = w.mirror.describe().into_iter().next().unwrap();
        assert_eq!(st.state, S::Mirroring);
        assert_eq!(st.destination_leader_epoch, dle, "persisted with the state");
    }
    // 30 elections with bumps of 10 once within 3: one bump per 7-8 elections.
    assert!((3..=5).contains(&bumps), "{bumps} bumps");
    catch_up(&w);
    assert_eq!(log_bytes(&dest), log_bytes(&h(&w.src, "e", 0)));
    // The bumped epoch survives a broker restart: the destination reopens with only its batch
    // epochs in the cache, and the manager raises the leader epoch from `__mirror_state`.
    let before = dest.read().leader_epoch();
    let World {
        _dirs,
        src: _src,
        dst,
        source,
        mirror,
    } = w;
    mirror.shutdown();
    drop((mirror, dest, dst));
    let dst = manager(_dirs.1.path());
    let reopened = h(&dst, "e", 0);
    assert_eq!(
        reopened.read().leader_epoch(),
        reopened.read().epoch_cache().latest_epoch().unwrap(),
        "the engine alone only knows the batch epochs"
    );
    assert!(reopened.read().leader_epoch() < before);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let _again = MirrorManager::new(
        MirrorConfig::new("m-epochs"),
        source,
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    assert_eq!(reopened.read().leader_epoch(), before);
}

/// A source with an open transaction at epoch 3, caught up; returns the world.
fn mirrored_with_open_txn(name: &str) -> World {
    let w = world(MirrorConfig::new(name), &[("orders", 1)]);
    produce(
        &w.src,
        "orders",
        0,
        records(4, Compression::None),
        3,
        LeaderOrigin::Client,
    );
    open_txn(&w, 3);
    w.mirror.start_topics(&["orders".to_string()]).unwrap();
    catch_up(&w);
    assert_eq!(state(&w, "orders", 0), S::Mirroring);
    w
}

/// The manager `w`'s broker would build on a restart over the same `__mirror_state`.
fn restarted(w: &World, name: &str, clock: Arc<ManualClock>) -> Arc<MirrorManager> {
    w.mirror.shutdown();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    MirrorManager::new(
        MirrorConfig::new(name),
        w.source.clone(),
        w.dst.clone(),
        Arc::new(Dest(w.dst.clone())),
        store,
        clock,
    )
    .unwrap()
}

/// Moves the stored state of orders-0 as `f` says, the way the manager would have persisted it.
fn rewrite_state(w: &World, f: impl FnOnce(&mut mirrorlog_mirror::state::PartitionMirrorState)) {
    let store = MirrorStateStore::open(w.dst.clone(), 4).unwrap();
    let mut st = store.all().into_iter().find(|s| s.partition == 0).unwrap();
    let epoch = st.state_epoch;
    f(&mut st);
    store.put_if_epoch(&st, epoch).unwrap();
}

fn assert_stopped_cleanly(w: &World, m: &MirrorManager) {
    let st = m.describe().into_iter().find(|s| s.partition == 0).unwrap();
    assert_eq!(st.state, S::Stopped);
    assert_eq!(
        st.last_mirror_epoch,
        LeaderEpoch(3),
        "the epoch of the mirrored data, not the interrupted stop's own"
    );
    let d = h(&w.dst, "orders", 0);
    let log = d.read();
    assert!(!log.is_read_only(), "the finished stop opens the topic");
    assert_eq!(log.last_stable_offset(), log.log_end_offset());
    assert_eq!(log.producer_state().producer_count(), 0);
    assert!(log.leader_epoch() > LeaderEpoch(3));
}

#[test]
fn a_stop_interrupted_by_a_crash_is_finished_after_the_restart() {
    let w = mirrored_with_open_txn("m-crash");
    // The crash: STOPPING (with the last mirror epoch) persisted, the sequence half done (its
    // epoch assigned, the abort and barrier written), STOPPED never persisted.
    rewrite_state(&w, |st| {
        st.last_mirror_epoch = LeaderEpoch(3);
        st.transition(S::Stopping, st.state_epoch, T0).unwrap();
    });
    mirrorlog_mirror::partition::stop_partition(&h(&w.dst, "orders", 0), "source-cluster", T0)
        .unwrap();
    h(&w.dst, "orders", 0).write().set_read_only(true);

    let again = restarted(&w, "m-crash", ManualClock::new(T0));
    assert_eq!(again.topic_states("orders"), vec![S::Stopping]);
    assert!(h(&w.dst, "orders", 0).read().is_read_only());
    again.drive();
    assert_stopped_cleanly(&w, &again);
    // Finished once: another pass changes nothing.
    let end = h(&w.dst, "orders", 0).read().log_end_offset();
    again.drive();
    assert_eq!(h(&w.dst, "orders", 0).read().log_end_offset(), end);
}

#[test]
fn a_failed_stop_is_finished_by_its_retry_and_by_a_manual_recover() {
    for manual in [false, true] {
        let w = mirrored_with_open_txn("m-fail");
        // The stop failed before writing anything: FAILED, retryable, previous state STOPPING.
        rewrite_state(&w, |st| {
            st.last_mirror_epoch = LeaderEpoch(3);
            st.transition(S::Stopping, st.state_epoch, T0).unwrap();
            st.fail(
                "stop failed: injected",
                true,
                st.state_epoch,
                T0,
                &Default::default(),
            )
            .unwrap();
        });
        let clock = ManualClock::new(T0);
        let again = restarted(&w, "m-fail", clock.clone());
        assert_eq!(again.topic_states("orders"), vec![S::Failed]);
        if manual {
            assert_eq!(again.recover_topic("orders").unwrap(), 1);
        } else {
            again.drive();
            assert_eq!(again.topic_states("orders"), vec![S::Failed], "backoff");
            clock.advance(3_600_000);
            again.drive();
        }
        assert_stopped_cleanly(&w, &again);
    }
}

/// Source and destination logs of partition `p` of `t` hold the same bytes.
fn same_bytes(w: &World, t: &str, p: i32) -> bool {
    log_bytes(&h(&w.dst, t, p)) == log_bytes(&h(&w.src, t, p))
}

/// A mirror of topic `t` (`partitions` partitions of `batches` batches each) fetching at most
/// 1 KiB per partition, so each answer holds a few batches, started and MIRRORING.
fn small_fetch_world(name: &str, t: &str, partitions: i32, batches: usize) -> World {
    let mut config = MirrorConfig::new(name);
    config.partition_fetch_max_bytes = 1024;
    let w = world(config, &[(t, partitions)]);
    for i in 0..batches {
        for p in 0..partitions {
            let codec = [Compression::None, Compression::Zstd][i % 2];
            produce(&w.src, t, p, records(8, codec), 0, LeaderOrigin::Client);
        }
    }
    w.mirror.start_topics(&[t.to_string()]).unwrap();
    w.mirror.drive();
    for p in 0..partitions {
        assert_eq!(state(&w, t, p), S::Mirroring);
    }
    w
}

#[test]
fn a_pipelined_fetcher_asks_past_answers_not_yet_applied_and_keeps_offsets_contiguous() {
    let w = small_fetch_world("pipe1", "a", 1, 30);
    let mut f = w.mirror.pipelined_fetcher(0);
    let mut ahead = w.mirror.fetch_ahead(&mut f, 1 << 20);
    let mut rounds = 0;
    while !same_bytes(&w, "a", 0) {
        // The next fetch goes out before the answer ahead of it is applied.
        let next = w.mirror.fetch_ahead(&mut f, 1 << 20);
        let fetched = ahead.record_bytes();
        let appended = w.mirror.apply_ahead(&f, ahead);
        // Every answer lands: none was asked at a position the log then did not reach.
        assert!(
            fetched == 0 || appended > 0,
            "round {rounds}: an answer was skipped"
        );
        ahead = next;
        rounds += 1;
        assert!(rounds < 200, "no convergence");
    }
    assert!(rounds > 3, "not pipelined over several answers: {rounds}");
    // What is left ahead is empty and changes nothing.
    assert_eq!(w.mirror.apply_ahead(&f, ahead), 0);
    assert!(same_bytes(&w, "a", 0));
}

#[test]
fn a_corrupt_batch_in_a_pipelined_answer_fails_only_its_partition() {
    let w = small_fetch_world("pipe2", "a", 2, 20);
    let mut f = w.mirror.pipelined_fetcher(0);
    w.source.corrupt_next_fetch("a", 1);
    let first = w.mirror.fetch_ahead(&mut f, 1 << 20);
    // Asked past the corrupt answer, before it is applied.
    let mut ahead = w.mirror.fetch_ahead(&mut f, 1 << 20);
    w.mirror.apply_ahead(&f, first);
    assert_eq!(state(&w, "a", 1), S::Failed);
    for _ in 0..200 {
        if same_bytes(&w, "a", 0) {
            break;
        }
        let next = w.mirror.fetch_ahead(&mut f, 1 << 20);
        w.mirror.apply_ahead(&f, ahead);
        ahead = next;
    }
    w.mirror.apply_ahead(&f, ahead);
    assert!(same_bytes(&w, "a", 0));
    assert_eq!(state(&w, "a", 0), S::Mirroring);
    assert_eq!(state(&w, "a", 1), S::Failed);
    assert_eq!(
        h(&w.dst, "a", 1).read().log_end_offset(),
        Offset(0),
        "nothing of the failed partition was written, before or after its corrupt answer"
    );
}

#[test]
fn a_pipelined_answer_past_one_never_applied_is_skipped_not_appended_over_a_gap() {
    let w = small_fetch_world("pipe3", "a", 1, 20);
    let mut f = w.mirror.pipelined_fetcher(0);
    let lost = w.mirror.fetch_ahead(&mut f, 1 << 20);
    let past = w.mirror.fetch_ahead(&mut f, 1 << 20);
    assert!(lost.record_bytes() > 0 && past.record_bytes() > 0);
    drop(lost);
    assert_eq!(w.mirror.apply_ahead(&f, past), 0);
    assert_eq!(h(&w.dst, "a", 0).read().log_end_offset(), Offset(0));
    // The fetcher was told: it asks from the log end again and copies everything.
    for _ in 0..200 {
        if same_bytes(&w, "a", 0) {
            break;
        }
        let got = w.mirror.fetch_ahead(&mut f, 1 << 20);
        w.mirror.apply_ahead(&f, got);
    }
    assert!(same_bytes(&w, "a", 0));
}

#[test]
fn stale_source_metadata_does_not_move_the_leader_back() {
    let w = world(MirrorConfig::new("m-stale"), &[("s", 1)]);
    for _ in 0..3 {
        source_leader_change(&w, "s", 0);
    }
    produce(
        &w.src,
        "s",
        0,
        records(3, Compression::None),
        3,
        LeaderOrigin::Client,
    );
    w.mirror.start_topics(&["s".to_string()]).unwrap();
    w.mirror.sync().unwrap();
    catch_up(&w);
    // A broker that has not heard of the last two elections answers metadata: node 7, epoch 1.
    w.source.stale_metadata_next("s", 0, 7, LeaderEpoch(1));
    w.mirror.sync().unwrap();
    produce(
        &w.src,
        "s",
        0,
        records(2, Compression::None),
        3,
        LeaderOrigin::Client,
    );
    // Still fetching from the real leader (node 1): a fetch to node 7 would come back
    // NOT_LEADER_OR_FOLLOWER and append nothing.
    w.mirror.drive();
    assert!(w.mirror.fetch_round(0) > 0, "fetched from the newer leader");
    catch_up(&w);
    assert_eq!(log_bytes(&h(&w.dst, "s", 0)), log_bytes(&h(&w.src, "s", 0)));
}

#[test]
fn a_started_topic_has_the_source_configs_before_its_first_fetch() {
    // Retention off on the source: with the destination's default (7 days) old data would be
    // deleted as it lands, until a metadata sync a refresh interval later copied the setting.
    let source_config = LogConfig::default()
        .with_overrides([("retention.ms", "-1")])
        .unwrap();
    let w = world_with(
        MirrorConfig::new("cfg"),
        &[("old", 1)],
        source_config,
        |dst| Arc::new(ConfigDest(Dest(dst))),
    );
    w.mirror.start_topics(&["old".to_string()]).unwrap();
    assert_eq!(state(&w, "old", 0), S::LogAlignment, "nothing fetched yet");
    assert_eq!(h(&w.dst, "old", 0).read().config().retention_ms, -1);
}

/// A STOPPED (failed-over, writable) topic that matches mirror.topics.exclude and whose source
/// then grows a partition stays stopped and writable, and the new partition is not mirrored (the
/// sync's grown-partition path used to make the topic read-only again and start the partition).
#[test]
fn a_stopped_excluded_topic_that_grows_on_the_source_stays_stopped_and_writable() {
    let mut config = MirrorConfig::new("m-grow");
    config.topics_include = vec!["ord.*".into()];
    let w = world(config, &[("orders", 1)]);
    w.mirror.sync().unwrap();
    catch_up(&w);
    w.mirror.add_patterns(&[], &["orders".into()]).unwrap();
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_states("orders"), vec![S::Stopped]);
    assert!(!h(&w.dst, "orders", 0).read().is_read_only());
    // The source adds a partition (same topic id as orders-0).
    w.src
        .create(
            &TopicPartition {
                topic: "orders".into(),
                partition: 1,
            },
            TopicId([1; 16]),
            LogConfig::default(),
        )
        .unwrap();
    produce(
        &w.src,
        "orders",
        1,
        records(3, Compression::None),
        0,
        LeaderOrigin::Client,
    );
    w.mirror.sync().unwrap();
    let states = w.mirror.topic_states("orders");
    let ro0 = h(&w.dst, "orders", 0).read().is_read_only();
    catch_up(&w);
    let leo1 = w
        .dst
        .get(&TopicPartition {
            topic: "orders".into(),
            partition: 1,
        })
        .map(|h| h.read().log_end_offset());
    assert!(
        !ro0 && states.iter().all(|s| *s == S::Stopped) && leo1.unwrap_or(Offset(0)) == Offset(0),
        "after the source grew: states {states:?}, orders-0 read-only {ro0}, orders-1 mirrored up to {leo1:?}"
    );
}

/// Same without exclusion: an operator-stopped topic whose source grows stays writable (it used
/// to become read-only for good while its old partitions stayed STOPPED).
#[test]
fn an_operator_stopped_topic_that_grows_on_the_source_stays_writable() {
    let w = world(MirrorConfig::new("m-grow2"), &[("orders", 1)]);
    w.mirror.start_topics(&["orders".to_string()]).unwrap();
    catch_up(&w);
    w.mirror.stop_topic("orders").unwrap();
    assert!(!h(&w.dst, "orders", 0).read().is_read_only());
    w.src
        .create(
            &TopicPartition {
                topic: "orders".into(),
                partition: 1,
            },
            TopicId([1; 16]),
            LogConfig::default(),
        )
        .unwrap();
    w.mirror.sync().unwrap();
    catch_up(&w);
    w.mirror.sync().unwrap();
    let states = w.mirror.topic_states("orders");
    let ro0 = h(&w.dst, "orders", 0).read().is_read_only();
    assert!(
        !ro0,
        "orders-0 is {:?} but read-only after the source grew; topic states {states:?}",
        states[0]
    );
}

/// An override deleted on the source goes back to the destination's default at the next sync
/// (found in review: the copied value stayed for good, so a deleted `retention.ms=60000` kept
/// deleting mirrored data the source keeps).
#[test]
fn a_config_override_removed_on_the_source_is_removed_on_the_destination() {
    let source_config = LogConfig::default()
        .with_overrides([("retention.ms", "60000")])
        .unwrap();
    let w = world_with(
        MirrorConfig::new("cfg-rm"),
        &[("logs", 1)],
        source_config,
        |dst| Arc::new(ConfigDest(Dest(dst))),
    );
    w.mirror.start_topics(&["logs".to_string()]).unwrap();
    assert_eq!(h(&w.dst, "logs", 0).read().config().retention_ms, 60_000);
    // The override is deleted on the source.
    let src = h(&w.src, "logs", 0);
    w.src
        .update_config(src.topic_partition(), LogConfig::default())
        .unwrap();
    w.mirror.sync().unwrap();
    assert_eq!(
        h(&w.dst, "logs", 0).read().config().retention_ms,
        LogConfig::default().retention_ms
    );
}

#[test]
fn a_mirror_closed_for_deletion_starts_no_topic() {
    let mut config = MirrorConfig::new("m1");
    config.topics_include = vec!["pay.*".into()];
    let w = world(config, &[("payments", 1), ("payouts", 1)]);
    w.mirror.start_topics(&["payments".into()]).unwrap();
    // Not every partition is STOPPED: refused, nothing changes.
    assert_eq!(
        w.mirror.close_to_new_topics(),
        Err(vec!["payments".to_string()])
    );
    w.mirror.stop_topic("payments").unwrap();
    w.mirror.close_to_new_topics().unwrap();
    // Neither discovery nor an operator starts a topic now: none can be left read-only and
    // unmanaged once the mirror is gone.
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_names(), vec!["payments"]);
    assert!(w.mirror.start_topics(&["payouts".into()]).is_err());
    let payouts = TopicPartition {
        topic: "payouts".into(),
        partition: 0,
    };
    assert!(w.dst.get(&payouts).is_none());
    // A delete that failed reopens it.
    w.mirror.reopen_to_new_topics();
    w.mirror.sync().unwrap();
    assert_eq!(w.mirror.topic_names(), vec!["payments", "payouts"]);
}

/// As above, for an override the source deleted while the destination's mirror was down: the
/// restarted mirror has no record of what it copied before, so it compares the destination
/// topic's own settings with the source's (found in review).
#[test]
fn a_config_override_removed_on_the_source_while_the_mirror_was_down_is_removed_too() {
    let source_config = LogConfig::default()
        .with_overrides([("retention.ms", "60000")])
        .unwrap();
    let w = world_with(
        MirrorConfig::new("cfg-down"),
        &[("logs", 1)],
        source_config,
        |dst| Arc::new(ConfigDest(Dest(dst))),
    );
    w.mirror.start_topics(&["logs".to_string()]).unwrap();
    assert_eq!(h(&w.dst, "logs", 0).read().config().retention_ms, 60_000);
    w.mirror.shutdown();
    // Deleted on the source while the destination's mirror is down.
    let src = h(&w.src, "logs", 0);
    w.src
        .update_config(src.topic_partition(), LogConfig::default())
        .unwrap();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let restarted = MirrorManager::new(
        MirrorConfig::new("cfg-down"),
        w.source.clone(),
        w.dst.clone(),
        Arc::new(ConfigDest(Dest(w.dst.clone()))),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    assert_eq!(restarted.topic_names(), vec!["logs"]);
    restarted.sync().unwrap();
    assert_eq!(
        h(&w.dst, "logs", 0).read().config().retention_ms,
        LogConfig::default().retention_ms
    );
}
