//! Scenario: a mirror topic whose partitions were PAUSED when a start of it left its start
//! intent (a start whose undo could not be recorded keeps the intent, and a repeated start
//! keeps what it first recorded); the operator then resumes the topic, and the node restarts.
//!
//! Bug: the restore put every partition the intent names back to the state it recorded, one
//! the start never moves (a start leaves PAUSED, MIRRORING, LOG_ALIGNMENT alone) included: the
//! resume was undone at the restart (and a MIRRORING partition recorded then went back to its
//! older last mirror epoch and destination leader epoch). Now the restore puts back only what
//! a start moves: a partition that had no state, or was STOPPED, STOPPING or FAILED.

use crate::common;

use common::{ConfigDest, Dest, manager, orders as tp};
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::TopicId;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorManager};
use mirrorlog_mirror::state::{
    MirrorPartitionState as S, MirrorStateStore, PartitionMirrorState, StartIntent, TopicBefore,
};
use std::sync::Arc;

const MIRROR: &str = "east";
const ID: [u8; 16] = [7; 16];

fn mirror(
    src: &Arc<LogManager>,
    dst: &Arc<LogManager>,
) -> (Arc<MirrorStateStore>, Arc<MirrorManager>) {
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 2).unwrap());
    let m = common::config_mirror(MIRROR, src, dst, &store);
    (store, m)
}

fn stored(store: &MirrorStateStore, p: i32) -> PartitionMirrorState {
    store
        .get(&PartitionMirrorState::new(MIRROR, ID, p).key())
        .unwrap()
}

#[test]
fn a_resume_after_the_intent_was_recorded_survives_the_restart() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    for p in 0..2 {
        src.create(&tp(p), TopicId(ID), Default::default()).unwrap();
        common::produce_to(&src, &tp(p), b"source", 3);
    }
    let dst = manager(b.path());
    let (store, m) = mirror(&src, &dst);
    m.start_topics(&["orders".into()]).unwrap();
    common::catch_up(&m);
    m.pause_topic("orders").unwrap();
    m.drive();
    assert_eq!(m.topic_states("orders"), vec![S::Paused; 2], "the scenario");
    // The intent a start of the paused topic left (its undo not recorded).
    let dest = ConfigDest(Dest(dst.clone()));
    store
        .put_start_intent(&StartIntent {
            mirror: MIRROR.into(),
            topic_id: ID,
            topic: "orders".into(),
            topic_before: TopicBefore::ReadOnly,
            configs_before: dest.topic_overrides("orders"),
            partitions: (0..2).map(|p| (p, Some(stored(&store, p)))).collect(),
        })
        .unwrap();
    m.resume_topic("orders").unwrap();
    common::catch_up(&m);
    assert_eq!(
        m.topic_states("orders"),
        vec![S::Mirroring; 2],
        "the scenario"
    );
    let running: Vec<_> = (0..2).map(|p| stored(&store, p)).collect();
    drop((m, store));

    let (store, m) = mirror(&src, &dst);
    assert!(store.start_intents(MIRROR).is_empty());
    for (p, was) in running.iter().enumerate() {
        let now = stored(&store, p as i32);
        assert_eq!(
            (now.state, now.state_epoch, now.last_mirror_epoch),
            (was.state, was.state_epoch, was.last_mirror_epoch),
            "partition {p}, which the start never moved, was put back to what the intent recorded"
        );
    }
    assert_eq!(m.topic_states("orders"), vec![S::Mirroring; 2]);
}
