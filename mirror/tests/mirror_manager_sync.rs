//! The mirror manager's control plane (found in review): the pipelined fetcher never waits for
//! its applier while holding a partition, progress resets the failure count, a changed source
//! cluster id fails the partitions with discovery on, a failed partition-count increase is
//! retried, a restored EPOCH_FENCING partition mirrors again, and a partition that failed while
//! paused stays paused when it comes back.

use crate::common;

use common::{T0, manager};

use bytes::Bytes;
use common::Dest;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::{
    CommittedOffset, FetchRequest, FetchResponse, GroupListing, OffsetSpec, SourceCluster,
    SourceError, SourceMetadata,
};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};

use mirrorlog_segment::{BatchBuilder, Compression};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

fn h(m: &LogManager, t: &str, p: i32) -> Arc<PartitionHandle> {
    m.get(&TopicPartition {
        topic: t.into(),
        partition: p,
    })
    .unwrap()
}

fn produce(m: &LogManager, t: &str, p: i32, b: Bytes) {
    let h = h(m, t, p);
    let mut log = h.write();
    log.append_as_leader(b, LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn records(n: usize) -> Bytes {
    let mut b = BatchBuilder::new().compression(Compression::None);
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

fn create_source_topic(src: &LogManager, t: &str, n: i32) {
    for p in 0..n {
        src.create(
            &TopicPartition {
                topic: t.into(),
                partition: p,
            },
            TopicId([7; 16]),
            LogConfig::default(),
        )
        .unwrap();
    }
}

/// Delegates to an [`EngineSource`]; the first `inject` fetches answer partition 1 with an
/// OFFSET_OUT_OF_RANGE whose offsets are unknown (so the applier asks `list_offset`, which is
/// slow here and fails) and partition 0 with NOT_LEADER_OR_FOLLOWER, in the order [1, 0].
#[derive(Debug)]
struct Flaky {
    inner: Arc<EngineSource>,
    inject: AtomicU32,
}

impl SourceCluster for Flaky {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        self.inner.metadata(topics)
    }
    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        let mut r = self.inner.fetch(node, request)?;
        let left = self.inject.load(Ordering::SeqCst);
        if left > 0 && r.partitions.len() == 2 {
            self.inject.store(left - 1, Ordering::SeqCst);
            for d in &mut r.partitions {
                d.records = Bytes::new();
                d.high_watermark = Offset(-1);
                d.log_start_offset = Offset(-1);
                d.error = if d.partition == 1 { 1 } else { 6 };
            }
            r.partitions.sort_by_key(|d| -d.partition);
        }
        Ok(r)
    }
    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError> {
        if partition == 1 {
            // A slow source (a network round trip): the applier holds partition 1 meanwhile.
            std::thread::sleep(Duration::from_millis(300));
            return Err(SourceError::Unreachable("slow, then gone".into()));
        }
        self.inner.list_offset(topic, partition, spec)
    }
    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        self.inner
            .end_offset_for_epoch(topic, partition, epoch, current_leader_epoch)
    }
    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        self.inner.topic_configs(topic)
    }
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        self.inner.list_groups()
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.inner.committed_offsets(group_id)
    }
}

/// The pipelined fetcher of `run()` holds a partition's entry lock while it waits (`settle`)
/// for its applier to finish the answers handed before; the applier needs that same lock to
/// apply the partition's part of those answers. A partition whose previous answer was an error
/// (no cursor) triggers it: the fetcher thread and its applier wait on each other until
/// shutdown, and every partition of that fetcher thread stops being fetched while MIRRORING.
#[test]
fn an_error_answer_does_not_stall_the_pipelined_fetcher_for_good() {
    pipelined_run(1);
}

/// Control: the same run without the injected error answer catches up.
#[test]
fn control_without_the_error_answer_catches_up() {
    pipelined_run(0);
}

fn pipelined_run(inject: u32) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create_source_topic(&src, "t", 2);
    for p in 0..2 {
        produce(&src, "t", p, records(3));
    }
    let inner = EngineSource::new(src.clone(), "source-cluster", 1);
    let source = Arc::new(Flaky {
        inner,
        inject: AtomicU32::new(0),
    });
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let clock = ManualClock::new(T0);
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        clock.clone(),
    )
    .unwrap();
    mirror.start_topics(&["t".to_string()]).unwrap();
    mirror.drive();
    assert_eq!(mirror.topic_states("t"), vec![S::Mirroring, S::Mirroring]);
    source.inject.store(inject, Ordering::SeqCst);
    mirror.run();
    // Well past the injected answer (300 ms of list_offset), new data arrives on the source.
    std::thread::sleep(Duration::from_millis(1000));
    for p in 0..2 {
        produce(&src, "t", p, records(2));
    }
    // A hang guard, not a verdict: the stall this test looks for lasts until shutdown, while a
    // loaded CI machine can take more than a few seconds to catch up the healthy case.
    let deadline = Instant::now() + Duration::from_secs(60);
    let caught_up =
        |p| h(&dst, "t", p).read().log_end_offset() == h(&src, "t", p).read().log_end_offset();
    while Instant::now() < deadline && !(caught_up(0) && caught_up(1)) {
        std::thread::sleep(Duration::from_millis(50));
        // The mirror's clock moves, so partition 0's pause after its error answer ends.
        clock.advance(50);
    }
    let ends: Vec<_> = (0..2)
        .map(|p| {
            (
                h(&dst, "t", p).read().log_end_offset(),
                h(&src, "t", p).read().log_end_offset(),
            )
        })
        .collect();
    // While stalled, describe() blocks too: the fetcher holds partition 0's entry lock.
    let (tx, rx) = std::sync::mpsc::channel();
    let m2 = mirror.clone();
    std::thread::spawn(move || {
        let _ = tx.send(m2.topic_states("t"));
    });
    let describe = rx.recv_timeout(Duration::from_secs(2));
    mirror.shutdown();
    eprintln!("topic_states while running: {describe:?} (Err = blocked on an entry lock)");
    assert!(
        caught_up(0) && caught_up(1),
        "the mirror stopped fetching (dest, source) log ends: {ends:?}"
    );
}

/// The failure record (and its attempt count) is never cleared once mirroring makes progress
/// again (state.rs says the manager does so; it only does on a manual recover): transient
/// failures months apart add up, and the `max_attempts`-th one in the partition's life is never
/// retried automatically.
#[test]
fn a_retry_that_made_progress_resets_the_attempt_count() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create_source_topic(&src, "t", 1);
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let clock = ManualClock::new(T0);
    let mut config = MirrorConfig::new("m");
    config.retry.max_attempts = 2;
    let mirror = MirrorManager::new(
        config,
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        clock.clone(),
    )
    .unwrap();
    mirror.start_topics(&["t".to_string()]).unwrap();
    mirror.drive();
    for round in 0..3 {
        // A transient corrupt answer: FAILED, retried after its backoff.
        produce(&src, "t", 0, records(3));
        source.corrupt_next_fetch("t", 0);
        mirror.fetch_round(0);
        assert_eq!(mirror.topic_states("t"), vec![S::Failed], "round {round}");
        // Days later (each failure is an isolated incident).
        clock.advance(86_400_000);
        mirror.drive();
        assert_eq!(
            mirror.topic_states("t"),
            vec![S::Mirroring],
            "round {round}: an isolated transient failure is retried automatically ({:?})",
            mirror.describe()[0]
        );
        // Mirroring makes progress again.
        for _ in 0..3 {
            mirror.fetch_round(0);
        }
        assert_eq!(
            h(&dst, "t", 0).read().log_end_offset(),
            h(&src, "t", 0).read().log_end_offset()
        );
    }
}

/// A crash between the two writes of an epoch bump (EPOCH_FENCING persisted, MIRRORING not)
/// leaves the partition restored in EPOCH_FENCING, which nothing moves on: not the fetcher,
/// not `drive`, not the sync's bump, not a resume, not a start.
#[test]
fn a_partition_restored_in_epoch_fencing_mirrors_again() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create_source_topic(&src, "t", 1);
    produce(&src, "t", 0, records(3));
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store.clone(),
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.start_topics(&["t".to_string()]).unwrap();
    mirror.drive();
    mirror.fetch_round(0);
    mirror.shutdown();
    // The crash: EPOCH_FENCING persisted by ensure_leader_epoch, MIRRORING never.
    let mut st = store.all().into_iter().next().unwrap();
    let e = st.state_epoch;
    st.transition(S::EpochFencing, e, T0).unwrap();
    store.put_if_epoch(&st, e).unwrap();
    drop(mirror);

    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let again = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    produce(&src, "t", 0, records(2));
    again.sync().unwrap();
    again.drive();
    let _ = again.resume_topic("t");
    let _ = again.start_topics(&["t".to_string()]);
    again.drive();
    for _ in 0..3 {
        again.fetch_round(0);
    }
    assert_eq!(
        (
            again.topic_states("t"),
            h(&dst, "t", 0).read().log_end_offset()
        ),
        (vec![S::Mirroring], h(&src, "t", 0).read().log_end_offset())
    );
}

/// With `mirror.topics.include` set, `sync` first runs discovery, whose cluster-id check returns
/// an error that aborts the whole sync before the code that fails every partition on a changed
/// source cluster id: the partitions stay MIRRORING (fetching from another cluster), and no
/// metadata, deletion or group sync runs any more.
#[test]
fn a_changed_cluster_id_fails_the_partitions_with_discovery_on() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create_source_topic(&src, "orders", 1);
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mut config = MirrorConfig::new("m");
    config.topics_include = vec!["ord.*".into()];
    let mirror = MirrorManager::new(
        config,
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.sync().unwrap();
    mirror.drive();
    assert_eq!(mirror.topic_states("orders"), vec![S::Mirroring]);
    source.set_cluster_id("another-cluster");
    let r = mirror.sync();
    assert_eq!(
        mirror.topic_states("orders"),
        vec![S::Failed],
        "sync answered {r:?}"
    );
}

/// Destination topics whose `ensure_mirror_topic` fails `fail` times (a transient storage error).
#[derive(Debug)]
struct FlakyDest {
    inner: Dest,
    fail: AtomicU32,
}

impl mirrorlog_mirror::manager::DestinationTopics for FlakyDest {
    fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], partitions: i32) -> Result<(), String> {
        if self.fail.load(Ordering::SeqCst) > 0 {
            self.fail.fetch_sub(1, Ordering::SeqCst);
            return Err("injected: no space left on device".into());
        }
        self.inner.ensure_mirror_topic(name, id, partitions)
    }
    fn topic_name_for_id(&self, id: [u8; 16]) -> Option<String> {
        self.inner.topic_name_for_id(id)
    }
    fn apply_topic_configs(
        &self,
        name: &str,
        configs: &[(String, String)],
        removed: &[String],
    ) -> Result<(), String> {
        self.inner.apply_topic_configs(name, configs, removed)
    }
    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String> {
        self.inner.set_read_only(name, read_only)
    }
}

/// `sync_topics` records the grown partition count before `ensure_mirror_topic` succeeds; when
/// it fails once, the next sync no longer sees the topic as grown, never creates the new
/// destination partitions, and starts them anyway: LOG_ALIGNMENT forever (drive skips a
/// partition without a destination log), never mirrored.
#[test]
fn a_failed_partition_count_increase_is_retried_on_the_next_sync() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create_source_topic(&src, "t", 1);
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let topics = Arc::new(FlakyDest {
        inner: Dest(dst.clone()),
        fail: AtomicU32::new(0),
    });
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        topics.clone(),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.start_topics(&["t".to_string()]).unwrap();
    mirror.drive();
    // The source grows to 2 partitions; the first attempt to create the second one fails.
    src.create(
        &TopicPartition {
            topic: "t".into(),
            partition: 1,
        },
        TopicId([7; 16]),
        LogConfig::default(),
    )
    .unwrap();
    produce(&src, "t", 1, records(3));
    topics.fail.store(1, Ordering::SeqCst);
    assert!(mirror.sync().is_err());
    for _ in 0..3 {
        mirror.sync().unwrap();
        mirror.drive();
        mirror.fetch_round(0);
    }
    assert_eq!(
        (
            mirror.topic_states("t"),
            dst.get(&TopicPartition {
                topic: "t".into(),
                partition: 1
            })
            .map(|h| h.read().log_end_offset())
        ),
        (vec![S::Mirroring, S::Mirroring], Some(Offset(3)))
    );
}

/// A PAUSED partition that fails (here: its source topic deleted, then recreated by the
/// operator's fix) comes back MIRRORING on recover: the operator's pause is lost (state.rs
/// claims "a pause is re-applied from the topic's desired state"; there is no such state).
#[test]
fn a_paused_partition_recovered_from_failed_stays_paused() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create_source_topic(&src, "t", 1);
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        MirrorConfig::new("m"),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    mirror.start_topics(&["t".to_string()]).unwrap();
    mirror.drive();
    mirror.pause_topic("t").unwrap();
    // A cluster-id blip (a misrouted DNS answer) fails every partition, PAUSED ones included.
    source.set_cluster_id("other");
    mirror.sync().unwrap();
    assert_eq!(mirror.topic_states("t"), vec![S::Failed]);
    source.set_cluster_id("source-cluster");
    mirror.recover_topic("t").unwrap();
    assert_eq!(mirror.topic_states("t"), vec![S::Paused]);
}
