//! Scenario: a start whose `__mirror_state` write fails, after the destination topic was
//! created or made read-only. The claim was released, but the topic stayed read-only: no
//! mirror wrote it, no other mirror was stopping it, and clients got READ_ONLY_TOPIC for
//! ever. KIP-1279's controller applies a start in one metadata write, so a failed start leaves
//! the topic as it was: a topic the start created is gone again, a failed-over (writable)
//! topic is writable again, and the topic is nobody's.

use crate::common;

use common::{Dest, T0, manager};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::claims::TopicClaims;
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{MIRROR_STATE_TOPIC, MirrorStateStore};
use std::sync::Arc;

fn tp(t: &str) -> TopicPartition {
    TopicPartition {
        topic: t.into(),
        partition: 0,
    }
}

struct World {
    _dirs: [tempfile::TempDir; 3],
    dst: Arc<LogManager>,
    claims: Arc<TopicClaims>,
    mirror: Arc<MirrorManager>,
}

/// A source with `orders`, a destination (`prepare` sets it up), and a mirror whose
/// `__mirror_state` (on a log manager of its own) refuses every write.
fn world(prepare: impl FnOnce(&LogManager)) -> World {
    let dirs = [
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    ];
    let src = manager(dirs[0].path());
    let dst = manager(dirs[1].path());
    src.create(&tp("orders"), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    prepare(&dst);
    let state_logs = manager(dirs[2].path());
    let store = Arc::new(MirrorStateStore::open(state_logs.clone(), 1).unwrap());
    // The fault: the state log is gone under the store, so each state write fails.
    state_logs
        .delete(&TopicPartition {
            topic: MIRROR_STATE_TOPIC.into(),
            partition: 0,
        })
        .unwrap();
    let claims = Arc::new(TopicClaims::new());
    let mirror = MirrorManager::new_with_claims(
        MirrorConfig::new("east"),
        EngineSource::new(src, "source-cluster", 1),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
        claims.clone(),
    )
    .unwrap();
    World {
        _dirs: dirs,
        dst,
        claims,
        mirror,
    }
}

#[test]
fn a_failed_start_removes_the_topic_it_created() {
    let w = world(|_| {});
    assert!(w.mirror.start_topics(&["orders".into()]).is_err());
    assert!(
        w.dst.get(&tp("orders")).is_none(),
        "the start created the topic and failed: it must not stay behind read-only"
    );
    assert_eq!(w.claims.owner("orders"), None);
    assert!(w.mirror.topic_names().is_empty(), "nothing held");
}

#[test]
fn a_failed_start_of_a_failed_over_topic_leaves_it_writable() {
    // The source's own topic (same id), stopped earlier: writable, with local data.
    let w = world(|dst| {
        dst.create(&tp("orders"), TopicId([1; 16]), LogConfig::default())
            .unwrap();
    });
    assert!(w.mirror.start_topics(&["orders".into()]).is_err());
    let h = w.dst.get(&tp("orders")).expect("an existing topic is kept");
    assert!(
        !h.read().is_read_only(),
        "the failed start made the topic read-only and left it so, with no mirror to write it"
    );
    assert_eq!(w.claims.owner("orders"), None);
}
