//! Scenario: a client deletes a mirror topic on the destination (DeleteTopics is not refused for
//! mirror topics), perhaps creating an ordinary topic under its name. The owning mirror's stop
//! then found no destination log and failed: its partition stayed MIRRORING, so the topic stayed
//! claimed for ever (no other mirror could start it, and the mirror could never be deleted).
//! And with an ordinary topic recreated under the name, the stop sequence (epoch bump, barrier)
//! was written into the client's log. Driven explicitly: no timing decides anything.

use crate::common;

use bytes::Bytes;
use common::{Dest, T0, catch_up, log_bytes, manager};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{LeaderEpoch, TimestampMs, TopicId, TopicPartition};
use mirrorlog_mirror::claims::TopicClaims;
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use mirrorlog_segment::{BatchBuilder, Compression};
use std::sync::Arc;

struct World {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    src: Arc<LogManager>,
    dst: Arc<LogManager>,
    source: Arc<EngineSource>,
    store: Arc<MirrorStateStore>,
    claims: Arc<TopicClaims>,
}

fn tp(t: &str) -> TopicPartition {
    TopicPartition {
        topic: t.into(),
        partition: 0,
    }
}

fn world() -> World {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    src.create(&tp("orders"), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    World {
        _dirs: (a, b),
        src,
        dst,
        source,
        store,
        claims: Arc::new(TopicClaims::new()),
    }
}

fn mirror(w: &World, name: &str) -> Arc<MirrorManager> {
    MirrorManager::new_with_claims(
        MirrorConfig::new(name),
        w.source.clone(),
        w.dst.clone(),
        Arc::new(Dest(w.dst.clone())),
        w.store.clone(),
        ManualClock::new(T0),
        w.claims.clone(),
    )
    .unwrap()
}

fn batch(n: usize, tag: &str) -> Bytes {
    let mut b = BatchBuilder::new().compression(Compression::None);
    for i in 0..n {
        b.append(
            TimestampMs(T0 + i as i64),
            None,
            Some(format!("{tag}{i}").as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

fn produce(m: &LogManager, n: usize, tag: &str) {
    let h = m.get(&tp("orders")).unwrap();
    let mut log = h.write();
    log.append_as_leader(batch(n, tag), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

/// `east` mirrors `orders`, caught up; then a client deletes the destination topic.
fn mirrored_then_deleted(w: &World) -> Arc<MirrorManager> {
    let east = mirror(w, "east");
    produce(&w.src, 3, "a");
    east.start_topics(&["orders".into()]).unwrap();
    catch_up(&east);
    assert_eq!(east.topic_states("orders"), [S::Mirroring]);
    w.dst.delete(&tp("orders")).unwrap();
    east
}

#[test]
fn a_mirror_topic_deleted_by_a_client_can_be_stopped_and_taken_by_another_mirror() {
    let w = world();
    let east = mirrored_then_deleted(&w);
    east.stop_topic("orders")
        .expect("a stop with nothing left to stop");
    assert_eq!(east.topic_states("orders"), [S::Stopped]);
    assert_eq!(w.claims.owner("orders"), None, "still claimed by east");
    east.close_to_new_topics()
        .expect("east has no active topic: it can be deleted");
    east.reopen_to_new_topics();

    let west = mirror(&w, "west");
    west.start_topics(&["orders".into()]).unwrap();
    catch_up(&west);
    assert_eq!(
        log_bytes(&w.dst.get(&tp("orders")).unwrap()),
        log_bytes(&w.src.get(&tp("orders")).unwrap())
    );
}

#[test]
fn the_stop_sequence_never_writes_an_ordinary_topic_recreated_under_the_name() {
    let w = world();
    let east = mirrored_then_deleted(&w);
    // A client's own topic now: new id, writable, its own records.
    w.dst
        .create(&tp("orders"), TopicId([9; 16]), LogConfig::default())
        .unwrap();
    produce(&w.dst, 2, "mine");
    let h = w.dst.get(&tp("orders")).unwrap();
    let (before, epoch) = (log_bytes(&h), h.read().leader_epoch());

    east.stop_topic("orders").unwrap();
    assert_eq!(east.topic_states("orders"), [S::Stopped]);
    assert_eq!(w.claims.owner("orders"), None);
    assert_eq!(
        log_bytes(&h),
        before,
        "the stop wrote into the client's topic"
    );
    assert_eq!(h.read().leader_epoch(), epoch, "the stop bumped its epoch");
    assert!(!h.read().is_read_only());
}
