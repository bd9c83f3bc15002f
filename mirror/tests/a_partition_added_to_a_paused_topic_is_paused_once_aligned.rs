//! A pause holds for the whole topic (KIP-1279 §3.3: PAUSED is the topic's desired state): a
//! partition still in LOG_ALIGNMENT when the pause comes (LOG_ALIGNMENT → PAUSING is not a
//! transition), or one the source adds while the topic is paused, is paused as soon as its
//! alignment is done, never fetched in between; a restart in between keeps that.

use crate::common;

use common::{Dest, T0, manager, produce_to};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use std::sync::Arc;

fn tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "t".into(),
        partition: p,
    }
}

fn create(src: &LogManager, p: i32) {
    src.create(&tp(p), TopicId([7; 16]), LogConfig::default())
        .unwrap();
    produce_to(src, &tp(p), b"v", 3);
}

fn mirror_on(source: Arc<EngineSource>, dst: Arc<LogManager>) -> Arc<MirrorManager> {
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    MirrorManager::new(
        MirrorConfig::new("m"),
        source,
        dst.clone(),
        Arc::new(Dest(dst)),
        store,
        ManualClock::new(T0),
    )
    .unwrap()
}

fn leo(dst: &LogManager, p: i32) -> Offset {
    dst.get(&tp(p)).unwrap().read().log_end_offset()
}

/// Partition 0 mirroring; the source grows to two partitions; the sync starts partition 1 in
/// LOG_ALIGNMENT.
fn grown() -> (
    tempfile::TempDir,
    tempfile::TempDir,
    Arc<LogManager>,
    Arc<EngineSource>,
    Arc<MirrorManager>,
) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create(&src, 0);
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let mirror = mirror_on(source.clone(), dst.clone());
    mirror.start_topics(&["t".to_string()]).unwrap();
    mirror.drive();
    mirror.fetch_round(0);
    assert_eq!(leo(&dst, 0), Offset(3));
    create(&src, 1);
    (a, b, dst, source, mirror)
}

#[test]
fn a_partition_still_aligning_when_its_topic_is_paused_is_paused_once_aligned() {
    let (_a, _b, dst, _source, mirror) = grown();
    mirror.sync().unwrap();
    assert_eq!(
        mirror.topic_states("t"),
        vec![S::Mirroring, S::LogAlignment]
    );
    mirror.pause_topic("t").unwrap();
    mirror.drive();
    mirror.fetch_round(0);
    assert_eq!(mirror.topic_states("t"), vec![S::Paused, S::Paused]);
    assert_eq!(leo(&dst, 1), Offset(0), "a paused partition was fetched");
}

#[test]
fn a_pause_of_a_partition_still_aligning_survives_a_restart() {
    let (_a, _b, dst, source, mirror) = grown();
    mirror.sync().unwrap();
    mirror.pause_topic("t").unwrap();
    mirror.shutdown();
    let again = mirror_on(source, dst.clone());
    again.drive();
    again.fetch_round(0);
    assert_eq!(again.topic_states("t"), vec![S::Paused, S::Paused]);
    assert_eq!(leo(&dst, 1), Offset(0), "a paused partition was fetched");
}

#[test]
fn a_partition_the_source_adds_to_a_paused_topic_is_paused_once_aligned() {
    let (_a, _b, dst, _source, mirror) = grown();
    mirror.pause_topic("t").unwrap();
    mirror.sync().unwrap();
    mirror.drive();
    mirror.fetch_round(0);
    assert_eq!(mirror.topic_states("t"), vec![S::Paused, S::Paused]);
    assert_eq!(
        leo(&dst, 1),
        Offset(0),
        "a partition of a paused topic was fetched"
    );
    // Resumed, both mirror.
    mirror.resume_topic("t").unwrap();
    mirror.fetch_round(0);
    assert_eq!(mirror.topic_states("t"), vec![S::Mirroring, S::Mirroring]);
    assert_eq!((leo(&dst, 0), leo(&dst, 1)), (Offset(3), Offset(3)));
}

#[test]
fn a_topic_none_of_whose_partitions_is_aligned_yet_cannot_be_paused() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    create(&src, 0);
    let mirror = mirror_on(
        EngineSource::new(src.clone(), "source-cluster", 1),
        dst.clone(),
    );
    mirror.start_topics(&["t".to_string()]).unwrap();
    // Nothing would keep the pause over a restart: refused, nothing changed.
    assert!(mirror.pause_topic("t").is_err());
    assert_eq!(mirror.topic_states("t"), vec![S::LogAlignment]);
    mirror.drive();
    mirror.pause_topic("t").unwrap();
    assert_eq!(mirror.topic_states("t"), vec![S::Paused]);
}
