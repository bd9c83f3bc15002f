//! Scenario: a start of a local writable topic `orders` (no mirror state stored for it yet)
//! into a two-directory node crashes just before its start intent is deleted (both partitions
//! recorded LOG_ALIGNMENT), and the node restarts with the data directory holding one
//! partition's state (not the intent's) offline; then restarts again with it repaired.
//!
//! Bug: the restore read that partition's state as absent ("no state before, none now: nothing
//! to put back"), put the rest of the topic back (writable, the other partition's state
//! deleted) and deleted the intent. The repaired restart then found that partition in
//! LOG_ALIGNMENT with no intent, so it aligned it (truncating the local records) inside a topic
//! the restore had made writable again. Now a start whose partition states are not all
//! available is not put back at all: its partitions are held FAILED in memory, nothing is
//! written, and the intent stays for the restart with the directory repaired, which puts the
//! whole start back.

use crate::common;

use common::{T0, manager, orders as tp};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use mirrorlog_mirror::manager::MirrorManager;
use mirrorlog_mirror::state::{
    MIRROR_STATE_TOPIC, MirrorPartitionState as S, MirrorStateStore, PartitionMirrorState,
    state_partition_for,
};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage, TornTail};
use std::path::PathBuf;
use std::sync::Arc;

const MIRROR: &str = "east";
const STATE_PARTITIONS: i32 = 2;

/// A topic id whose partition 1's state and start intent live in different `__mirror_state`
/// partitions.
fn topic_id() -> [u8; 16] {
    (1u8..)
        .map(|b| [b; 16])
        .find(|id| {
            state_partition_for(MIRROR, id, 1, STATE_PARTITIONS)
                != state_partition_for(MIRROR, id, -1, STATE_PARTITIONS)
        })
        .unwrap()
}

struct World {
    _dirs: [tempfile::TempDir; 2],
    src: Arc<LogManager>,
    dst_dirs: Vec<PathBuf>,
    id: [u8; 16],
}

fn open_dst(w: &World, sim: &SimStorage) -> Arc<LogManager> {
    let mut config = LogManagerConfig::new(&w.dst_dirs[0]);
    config.data_dirs = w.dst_dirs.clone();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let (m, _) = LogManager::open(config, storage, ManualClock::new(T0)).unwrap();
    Arc::new(m)
}

struct Node {
    dst: Arc<LogManager>,
    store: Arc<MirrorStateStore>,
    mirror: Arc<MirrorManager>,
}

fn node(w: &World, sim: &SimStorage) -> Node {
    let dst = open_dst(w, sim);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), STATE_PARTITIONS).unwrap());
    let mirror = common::config_mirror(MIRROR, &w.src, &dst, &store);
    Node { dst, store, mirror }
}

fn leo(n: &Node, p: i32) -> Offset {
    n.dst.get(&tp(p)).unwrap().read().log_end_offset()
}

fn stored(n: &Node, id: [u8; 16], p: i32) -> Option<PartitionMirrorState> {
    n.store.get(&PartitionMirrorState::new(MIRROR, id, p).key())
}

/// The source (`orders`, 2 partitions of 3 records) and, on simulated storage over two data
/// dirs, `__mirror_state` and a local writable `orders` (same id, 5 records a partition).
fn world() -> (World, SimStorage) {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let id = topic_id();
    let src = manager(&dirs[0].path().join("src"));
    for p in 0..2 {
        src.create(&tp(p), TopicId(id), Default::default()).unwrap();
        common::produce_to(&src, &tp(p), b"source", 3);
    }
    let w = World {
        dst_dirs: vec![dirs[1].path().join("d1"), dirs[1].path().join("d2")],
        _dirs: dirs,
        src,
        id,
    };
    let sim = SimStorage::new();
    let dst = open_dst(&w, &sim);
    MirrorStateStore::open(dst.clone(), STATE_PARTITIONS).unwrap();
    // Both partitions of `orders` in the dir of the intent: the offline dir holds only a state.
    let intent_tp = TopicPartition {
        topic: MIRROR_STATE_TOPIC.into(),
        partition: state_partition_for(MIRROR, &id, -1, STATE_PARTITIONS),
    };
    let good = dst.get(&intent_tp).unwrap().data_dir().to_path_buf();
    let mut fillers = 0;
    for p in 0..2 {
        loop {
            let h = dst.create(&tp(p), TopicId(id), Default::default()).unwrap();
            if h.data_dir() == good {
                break;
            }
            // Placed in the other dir (it held fewer partitions): fill that dir up by one.
            dst.delete(&tp(p)).unwrap();
            let filler = TopicPartition {
                topic: "filler".into(),
                partition: fillers,
            };
            fillers += 1;
            dst.create(&filler, TopicId([0xEE; 16]), Default::default())
                .unwrap();
            assert!(fillers < 4, "cannot place orders in {}", good.display());
        }
        common::produce_to(&dst, &tp(p), b"local", 5);
        dst.get(&tp(p)).unwrap().write().flush().unwrap();
    }
    (w, sim)
}

#[test]
fn a_start_put_back_with_a_state_dir_offline_waits_for_the_dir() {
    // How many syncs a start completes, in a world of its own.
    let total = {
        let (w, sim) = world();
        let n = node(&w, &sim);
        let base = sim.syncs_completed();
        n.mirror.start_topics(&["orders".into()]).unwrap();
        sim.syncs_completed() - base
    };
    let (w, sim) = world();
    let n = node(&w, &sim);
    // The dir of partition 1's state, not the intent's.
    let state_tp = |p: i32| TopicPartition {
        topic: MIRROR_STATE_TOPIC.into(),
        partition: state_partition_for(MIRROR, &w.id, p, STATE_PARTITIONS),
    };
    let dir_of = |t: &TopicPartition| PathBuf::from(n.dst.get(t).unwrap().data_dir());
    let bad = dir_of(&state_tp(1));
    assert_ne!(bad, dir_of(&state_tp(-1)), "the scenario needs two dirs");
    let fault = bad.join(state_tp(1).to_string());

    // The crash: every sync of the start but the intent's deletion.
    sim.halt_after_syncs(sim.syncs_completed() + total - 1);
    assert!(n.mirror.start_topics(&["orders".into()]).is_err());
    let crashed = sim.crash(TornTail::None);
    drop(n);
    {
        // What the crash left, read without a mirror (whose restore would put it back).
        let dst = open_dst(&w, &crashed.crash(TornTail::None));
        let store = MirrorStateStore::open(dst, STATE_PARTITIONS).unwrap();
        let states: Vec<_> = (0..2)
            .map(|p| store.get(&PartitionMirrorState::new(MIRROR, w.id, p).key()))
            .map(|s| s.map(|s| s.state))
            .collect();
        assert_eq!(states, vec![Some(S::LogAlignment); 2], "the scenario");
        assert_eq!(store.start_intents(MIRROR).len(), 1, "the scenario");
    }

    // Restart with partition 1's state dir offline: nothing of the start is put back.
    crashed.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(fault.to_str().unwrap()));
    let n = node(&w, &crashed);
    assert!(n.dst.offline_dirs().iter().any(|(p, _)| *p == bad));
    assert_eq!(
        n.store.start_intents(MIRROR).len(),
        1,
        "the intent of a start put back only in part was deleted"
    );
    for _ in 0..3 {
        n.mirror.drive();
    }
    assert_eq!(leo(&n, 0), Offset(5), "partition 0 was aligned");
    assert_eq!(n.mirror.topic_states("orders"), vec![S::Failed; 2]);
    drop(n);

    // Restart with the dir repaired: the whole start is put back, nothing aligned.
    let n = node(&w, &crashed.crash(TornTail::None));
    assert!(n.dst.offline_dirs().is_empty());
    assert!(n.store.start_intents(MIRROR).is_empty());
    for _ in 0..3 {
        n.mirror.drive();
    }
    for p in 0..2 {
        assert_eq!(
            stored(&n, w.id, p).map(|s| s.state),
            None,
            "partition {p} of a start that did not complete kept its state"
        );
        assert!(
            !n.dst.get(&tp(p)).unwrap().read().is_read_only(),
            "partition {p}"
        );
        assert_eq!(
            leo(&n, p),
            Offset(5),
            "partition {p}'s local records were truncated for a start that did not complete"
        );
    }
    assert!(n.mirror.topic_states("orders").is_empty());
}
