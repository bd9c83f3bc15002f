//! Found in review of the mirror data path: a Kafka source's OFFSET_OUT_OF_RANGE (log start and
//! high watermark −1) restarts at its log start; the stop writes one barrier even when re-run
//! (after a crash, or after STOPPED could not be recorded), keeps the last mirror epoch it
//! recorded when stopped again after a failure, stays read-only until STOPPED is persisted, and
//! survives a source epoch of i32::MAX.

use crate::common;

use common::{T0, manager};

use bytes::Bytes;
use common::Dest;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicId, TopicPartition,
};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::*;
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use mirrorlog_segment::batch::Batches;

use mirrorlog_segment::{BatchBuilder, Compression};
use std::sync::Arc;

/// An engine source that answers OFFSET_OUT_OF_RANGE the way Apache Kafka's ReplicaManager does
/// (`createLogReadResult(e)`: highWatermark = logStartOffset = -1, no records).
#[derive(Debug)]
struct KafkaLikeOor(Arc<EngineSource>);

impl SourceCluster for KafkaLikeOor {
    fn metadata(&self, topics: Option<&[String]>) -> Result<SourceMetadata, SourceError> {
        self.0.metadata(topics)
    }
    fn fetch(&self, node: i32, request: &FetchRequest) -> Result<FetchResponse, SourceError> {
        let mut r = self.0.fetch(node, request)?;
        for p in &mut r.partitions {
            if p.error == 1 {
                p.high_watermark = Offset(-1);
                p.log_start_offset = Offset(-1);
            }
        }
        Ok(r)
    }
    fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        spec: OffsetSpec,
    ) -> Result<(Offset, LeaderEpoch), SourceError> {
        self.0.list_offset(topic, partition, spec)
    }
    fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        epoch: LeaderEpoch,
        current_leader_epoch: LeaderEpoch,
    ) -> Result<(LeaderEpoch, Offset), SourceError> {
        self.0
            .end_offset_for_epoch(topic, partition, epoch, current_leader_epoch)
    }
    fn topic_configs(&self, topic: &str) -> Result<Vec<(String, String)>, SourceError> {
        self.0.topic_configs(topic)
    }
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        self.0.list_groups()
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        self.0.committed_offsets(group_id)
    }
}

struct World {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    src: Arc<LogManager>,
    dst: Arc<LogManager>,
    source: Arc<EngineSource>,
    mirror: Arc<MirrorManager>,
}

fn world(config: MirrorConfig, kafka_like: bool) -> World {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    src.create(&tp(), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let as_source: Arc<dyn SourceCluster> = if kafka_like {
        Arc::new(KafkaLikeOor(source.clone()))
    } else {
        source.clone()
    };
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let mirror = MirrorManager::new(
        config,
        as_source,
        dst.clone(),
        Arc::new(Dest(dst.clone())),
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

fn tp() -> TopicPartition {
    TopicPartition {
        topic: "orders".into(),
        partition: 0,
    }
}

fn h(m: &LogManager) -> Arc<PartitionHandle> {
    m.get(&tp()).unwrap()
}

fn produce(m: &LogManager, b: Bytes, epoch: i32) {
    let h = h(m);
    let mut log = h.write();
    log.append_as_leader(b, LeaderEpoch(epoch), LeaderOrigin::Client)
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

fn catch_up(w: &World) {
    common::catch_up(&w.mirror);
}

fn state(m: &MirrorManager) -> (S, Option<String>, LeaderEpoch) {
    let s = m.describe().into_iter().next().unwrap();
    (s.state, s.failure, s.last_mirror_epoch)
}

fn source_with_log_start_12(w: &World) {
    for _ in 0..4 {
        produce(&w.src, records(5), 0);
    }
    h(&w.src)
        .write()
        .maybe_increment_log_start_offset(Offset(12))
        .unwrap();
}

/// KIP-1279 §8: a fetch below the source's log start restarts the mirror there. Against a
/// Kafka source (OFFSET_OUT_OF_RANGE carries logStartOffset = -1) the partition is instead
/// failed, not retryable, as a "log truncation on the source".
#[test]
fn kafka_out_of_range_below_log_start_restarts_there_without_ule() {
    let w = world(MirrorConfig::new("m-oor"), true);
    source_with_log_start_12(&w);
    w.mirror.start_topics(&["orders".to_string()]).unwrap();
    catch_up(&w);
    let (st, failure, _) = state(&w.mirror);
    assert_eq!(st, S::Mirroring, "failure: {failure:?}");
    assert_eq!(h(&w.dst).read().log_end_offset(), Offset(20));
}

/// The same with unclean-election support on: the Diverged{truncate_to: -1} outcome reaches
/// `PartitionLog::truncate_to(-1)`, whose assert panics (in the fetcher thread).
#[test]
fn kafka_out_of_range_below_log_start_restarts_there_with_ule() {
    let mut cfg = MirrorConfig::new("m-oor-ule");
    cfg.support_unclean_leader_election = true;
    let w = world(cfg, true);
    source_with_log_start_12(&w);
    w.mirror.start_topics(&["orders".to_string()]).unwrap();
    catch_up(&w);
    assert_eq!(state(&w.mirror).0, S::Mirroring);
    assert_eq!(h(&w.dst).read().log_end_offset(), Offset(20));
}

fn rewrite_state(w: &World, f: impl FnOnce(&mut mirrorlog_mirror::state::PartitionMirrorState)) {
    let store = MirrorStateStore::open(w.dst.clone(), 4).unwrap();
    let mut st = store.all().into_iter().find(|s| s.partition == 0).unwrap();
    let epoch = st.state_epoch;
    f(&mut st);
    store.put_if_epoch(&st, epoch).unwrap();
}

fn restarted(w: &World, name: &str) -> Arc<MirrorManager> {
    w.mirror.shutdown();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    MirrorManager::new(
        MirrorConfig::new(name),
        w.source.clone(),
        w.dst.clone(),
        Arc::new(Dest(w.dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap()
}

fn mirrored_with_open_txn(name: &str) -> World {
    let w = world(MirrorConfig::new(name), false);
    produce(&w.src, records(4), 3);
    let txn = BatchBuilder::new()
        .producer(ProducerId(9), ProducerEpoch(0), Sequence(0))
        .transactional(true)
        .record(TimestampMs(T0), None, Some(b"partial"))
        .build();
    produce(&w.src, txn.into_bytes(), 3);
    w.mirror.start_topics(&["orders".to_string()]).unwrap();
    catch_up(&w);
    assert_eq!(state(&w.mirror).0, S::Mirroring);
    w
}

/// A stop that failed after its first step (the epoch assigned, e.g. ENOSPC on the ABORT
/// marker) is FAILED with previous state STOPPING and the right LME recorded. The operator runs
/// `stop` again: `stop_topic` takes the FAILED partition through its `_` arm and re-reads the
/// LME from the log, whose cache now ends with the stop's own epoch.
#[test]
fn stopping_again_after_a_failed_stop_keeps_the_mirrored_epoch() {
    let w = mirrored_with_open_txn("m-restop");
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
    // What stop_partition_after did before the injected failure: step 1, the epoch.
    {
        let d = h(&w.dst);
        let mut log = d.write();
        let e = LeaderEpoch(log.leader_epoch().get() + 1);
        log.assign_leader_epoch(e).unwrap();
    }
    let again = restarted(&w, "m-restop");
    assert_eq!(state(&again).0, S::Failed);
    again.stop_topic("orders").unwrap();
    let (st, _, lme) = state(&again);
    assert_eq!(st, S::Stopped);
    assert_eq!(
        lme,
        LeaderEpoch(3),
        "the epoch of the mirrored data, not the stop's own"
    );
}

fn pid_resets(h: &PartitionHandle) -> usize {
    Batches::new(common::log_bytes(h))
        .filter_map(|b| b.ok())
        .filter(|b| b.is_control() && !b.is_transactional())
        .count()
}

/// KIP-1279 §9: one MIRROR_PID_RESET per partition. A crash after the barrier is durable but
/// before STOPPED is persisted: the restart re-runs the whole sequence, a second barrier.
#[test]
fn a_stop_interrupted_after_its_barrier_writes_no_second_barrier() {
    let w = mirrored_with_open_txn("m-twice");
    rewrite_state(&w, |st| {
        st.last_mirror_epoch = LeaderEpoch(3);
        st.transition(S::Stopping, st.state_epoch, T0).unwrap();
    });
    mirrorlog_mirror::partition::stop_partition(&h(&w.dst), "source-cluster", T0).unwrap();
    h(&w.dst).write().set_read_only(true);
    assert_eq!(pid_resets(&h(&w.dst)), 1);
    let again = restarted(&w, "m-twice");
    again.drive();
    assert_eq!(state(&again).0, S::Stopped);
    assert_eq!(
        pid_resets(&h(&w.dst)),
        1,
        "one MIRROR_PID_RESET per partition"
    );
}

/// A hostile (or corrupt-metadata) source batch with partition leader epoch i32::MAX: the
/// bump saturates at i32::MAX, then the stop's `+ 1` overflows (panic with overflow checks,
/// a negative leader epoch without).
#[test]
fn a_stop_after_a_source_epoch_of_i32_max_does_not_panic() {
    let (_d, dst) = {
        let d = tempfile::tempdir().unwrap();
        let m = manager(d.path());
        (d, m)
    };
    let dest = dst
        .create(
            &tp(),
            TopicId([1; 16]),
            LogConfig {
                read_only: true,
                ..LogConfig::default()
            },
        )
        .unwrap();
    let batch = BatchBuilder::new()
        .partition_leader_epoch(LeaderEpoch(i32::MAX))
        .record(TimestampMs(T0), None, Some(b"x"))
        .build()
        .into_bytes();
    let data = PartitionData {
        current_leader: None,
        topic: "orders".into(),
        partition: 0,
        error: 0,
        high_watermark: Offset(1),
        log_start_offset: Offset(0),
        diverging_epoch: None,
        records: batch,
    };
    let out = mirrorlog_mirror::partition::apply_fetched(&dest, Offset(0), &data).unwrap();
    assert!(
        matches!(
            out,
            mirrorlog_mirror::partition::FetchOutcome::Appended { .. }
        ),
        "{out:?}"
    );
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        mirrorlog_mirror::partition::stop_partition(&dest, "src", T0)
    }));
    let r = r.expect("the stop panicked");
    let report = r.expect("stop failed");
    assert!(
        report.new_leader_epoch >= LeaderEpoch(i32::MAX),
        "{report:?}"
    );
}

/// A stop whose sequence succeeded but whose STOPPED could not be persisted (here: the state
/// epoch was fenced; the same for any store failure): `finish_stop` leaves the partition in
/// STOPPING but already writable, not FAILED; every later `drive` re-runs the whole sequence
/// (new epoch, ABORTs, another MIRROR_PID_RESET that wipes the local producers that wrote in
/// between).
#[test]
fn a_stop_whose_stopped_state_cannot_be_persisted_is_not_rerun_on_every_drive() {
    let w = mirrored_with_open_txn("m-loop");
    rewrite_state(&w, |st| {
        st.last_mirror_epoch = LeaderEpoch(3);
        st.transition(S::Stopping, st.state_epoch, T0).unwrap();
    });
    w.mirror.shutdown();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let again = MirrorManager::new(
        MirrorConfig::new("m-loop"),
        w.source.clone(),
        w.dst.clone(),
        Arc::new(Dest(w.dst.clone())),
        store.clone(),
        ManualClock::new(T0),
    )
    .unwrap();
    assert_eq!(state(&again).0, S::Stopping);
    // Fence: the stored record moves on (another writer), the manager's copy is stale.
    let mut st = store.all().into_iter().find(|s| s.partition == 0).unwrap();
    let e = st.state_epoch;
    st.transition(S::Stopping, e, T0).unwrap();
    if st.state_epoch == e {
        st.state_epoch += 1;
    }
    store.put_if_epoch(&st, e).unwrap();
    for _ in 0..3 {
        again.drive();
    }
    let d = h(&w.dst);
    let (st_now, _, _) = state(&again);
    println!(
        "state {st_now:?}, read_only {}, resets {}, leader epoch {:?}",
        d.read().is_read_only(),
        pid_resets(&d),
        d.read().leader_epoch()
    );
    assert!(
        st_now == S::Stopped || d.read().is_read_only(),
        "a partition not STOPPED is writable"
    );
    assert_eq!(pid_resets(&d), 1, "one MIRROR_PID_RESET per partition");
}
