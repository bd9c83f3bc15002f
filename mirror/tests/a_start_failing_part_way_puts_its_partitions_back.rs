//! Scenario: a start of a two-partition topic whose first partition's LOG_ALIGNMENT is recorded
//! and whose second partition's is not (its `__mirror_state` partition fails the write).
//!
//! The first partition used to stay in LOG_ALIGNMENT: the topic stayed claimed and read-only,
//! the next `drive` truncated the partition (a failed-over topic's local data gone, for a start
//! that answered an error), the second partition of a failed-over topic stayed STOPPED in a
//! read-only topic until the start was repeated, and the source's topic configs the start had
//! copied stayed. KIP-1279's controller applies a start in one metadata write, all or nothing:
//! now a start failing part-way puts back every partition it moved (nothing of them was
//! truncated, as `drive` leaves a topic being started alone), and the topic as it was. Only
//! when putting a partition back cannot be recorded does that partition keep the start's
//! LOG_ALIGNMENT — held FAILED, not retried and never aligned on its own, with a reason saying
//! a repeated start completes it — and the topic stays the mirror's, read-only.

use crate::common;

use common::{ConfigDest, Dest, T0, manager, orders as tp, overrides};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_mirror::claims::TopicClaims;
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{
    MIRROR_STATE_TOPIC, MirrorPartitionState as S, MirrorStateStore, PartitionMirrorState,
    state_partition_for,
};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, SimStorage, Storage};
use std::sync::Arc;

const MIRROR: &str = "east";
const STATE_PARTITIONS: i32 = 2;

/// A topic id whose two partitions' states live in different `__mirror_state` partitions, its
/// start intent (`StartIntent::key_of`, partition −1) with partition 0's, so the write that
/// fails is partition 1's; returns it with the state partitions of partition 0 and 1.
fn split_topic_id() -> ([u8; 16], i32, i32) {
    (1u8..)
        .map(|b| {
            let id = [b; 16];
            let p0 = state_partition_for(MIRROR, &id, 0, STATE_PARTITIONS);
            let p1 = state_partition_for(MIRROR, &id, 1, STATE_PARTITIONS);
            (id, p0, p1)
        })
        .find(|(id, p0, p1)| {
            p0 != p1 && state_partition_for(MIRROR, id, -1, STATE_PARTITIONS) == *p0
        })
        .unwrap()
}

fn produce(m: &LogManager, p: i32, n: usize) {
    common::produce_to(m, &tp(p), b"local", n);
}

struct World {
    _dirs: [tempfile::TempDir; 2],
    src: Arc<LogManager>,
    dst: Arc<LogManager>,
    dest: Arc<ConfigDest>,
    id: [u8; 16],
}

/// A source `orders` (2 partitions, `retention.ms` set); a destination that `failed_over`
/// holds the source's topic, writable, with its own configs and local records.
fn world(failed_over: bool) -> World {
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let (id, _, _) = split_topic_id();
    let src = manager(dirs[0].path());
    let dst = manager(dirs[1].path());
    for p in 0..2 {
        src.create(
            &tp(p),
            TopicId(id),
            overrides(&[("retention.ms", "86400000")]),
        )
        .unwrap();
        if failed_over {
            let own = overrides(&[
                ("retention.ms", "3600000"),
                ("retention.bytes", "123456789"),
            ]);
            dst.create(&tp(p), TopicId(id), own).unwrap();
            produce(&dst, p, 5);
        }
    }
    let dest = Arc::new(ConfigDest(Dest(dst.clone())));
    World {
        _dirs: dirs,
        src,
        dst,
        dest,
        id,
    }
}

fn mirror(w: &World, store: Arc<MirrorStateStore>, claims: Arc<TopicClaims>) -> Arc<MirrorManager> {
    MirrorManager::new_with_claims(
        MirrorConfig::new(MIRROR),
        EngineSource::new(w.src.clone(), "source-cluster", 1),
        w.dst.clone(),
        w.dest.clone(),
        store,
        ManualClock::new(T0),
        claims,
    )
    .unwrap()
}

/// A store on its own log manager whose `__mirror_state` partition `gone` is deleted under it
/// after `states` are written, so every later write of a key it holds fails.
fn store_losing(
    gone: i32,
    states: &[PartitionMirrorState],
) -> (tempfile::TempDir, Arc<MirrorStateStore>) {
    let dir = tempfile::tempdir().unwrap();
    let logs = manager(dir.path());
    let store = Arc::new(MirrorStateStore::open(logs.clone(), STATE_PARTITIONS).unwrap());
    for st in states {
        store.put(st).unwrap();
    }
    logs.delete(&TopicPartition {
        topic: MIRROR_STATE_TOPIC.into(),
        partition: gone,
    })
    .unwrap();
    (dir, store)
}

fn leo(dst: &LogManager, p: i32) -> Offset {
    dst.get(&tp(p)).unwrap().read().log_end_offset()
}

#[test]
fn a_new_topic_is_gone_again_with_no_state_left() {
    let w = world(false);
    let (_, _, second) = split_topic_id();
    let (_d, store) = store_losing(second, &[]);
    let claims = Arc::new(TopicClaims::new());
    let m = mirror(&w, store.clone(), claims.clone());

    assert!(m.start_topics(&["orders".into()]).is_err());
    assert!(
        w.dst.get(&tp(0)).is_none(),
        "the topic the failed start created stayed"
    );
    assert!(w.dst.get(&tp(1)).is_none());
    assert_eq!(
        claims.owner("orders"),
        None,
        "the failed start kept the topic claimed"
    );
    assert!(m.topic_names().is_empty());
    assert!(m.describe().is_empty(), "{:?}", m.describe());
    assert!(
        store.all().is_empty(),
        "the first partition's LOG_ALIGNMENT record stayed: {:?}",
        store.all()
    );
}

#[test]
fn a_failed_over_topic_keeps_its_data_its_configs_and_its_writability() {
    let w = world(true);
    let (_, _, second) = split_topic_id();
    let before: Vec<PartitionMirrorState> = (0..2)
        .map(|p| common::stopped_state(MIRROR, w.id, p))
        .collect();
    let (_d, store) = store_losing(second, &before);
    let claims = Arc::new(TopicClaims::new());
    let m = mirror(&w, store.clone(), claims.clone());
    let configs_before = w.dest.topic_overrides("orders");
    assert_eq!(configs_before.len(), 2, "{configs_before:?}");

    assert!(m.start_topics(&["orders".into()]).is_err());
    // Whatever passes run after it: nothing of the topic is aligned (truncated).
    for _ in 0..3 {
        m.drive();
    }
    for p in 0..2 {
        assert_eq!(
            leo(&w.dst, p),
            Offset(5),
            "partition {p}'s local records were truncated after a start that failed"
        );
        let h = w.dst.get(&tp(p)).unwrap();
        assert!(!h.read().is_read_only(), "partition {p} stayed read-only");
        let st = store
            .get(&PartitionMirrorState::new(MIRROR, w.id, p).key())
            .unwrap();
        assert_eq!(st.state, S::Stopped, "partition {p}: {st:?}");
        assert_eq!(
            st.last_mirror_epoch,
            LeaderEpoch(0),
            "the failback's LME was lost"
        );
    }
    assert_eq!(m.topic_states("orders"), vec![S::Stopped, S::Stopped]);
    assert_eq!(
        claims.owner("orders"),
        None,
        "the failed start kept the topic claimed"
    );
    assert_eq!(
        w.dest.topic_overrides("orders"),
        configs_before,
        "the topic's own configs were left replaced by the source's"
    );
}

#[test]
fn a_partition_whose_undo_cannot_be_recorded_is_failed_until_the_start_is_repeated() {
    let w = world(true);
    let (_, _, second) = split_topic_id();
    // The state logs on simulated storage, one data dir: the failed write of the second
    // partition's state takes the dir offline, so the first one's undo cannot be written.
    let sim = SimStorage::new();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let state_dir = tempfile::tempdir().unwrap();
    let open_state_logs = || {
        Arc::new(
            LogManager::open(
                LogManagerConfig::new(state_dir.path()),
                storage.clone(),
                ManualClock::new(T0),
            )
            .unwrap()
            .0,
        )
    };
    let state_logs = open_state_logs();
    let store = Arc::new(MirrorStateStore::open(state_logs, STATE_PARTITIONS).unwrap());
    for p in 0..2 {
        store.put(&common::stopped_state(MIRROR, w.id, p)).unwrap();
    }
    let claims = Arc::new(TopicClaims::new());
    let m = mirror(&w, store.clone(), claims.clone());
    sim.inject(
        Fault::new(IoOp::WriteAt, FaultKind::Eio)
            .on_path(format!("{MIRROR_STATE_TOPIC}-{second}/")),
    );

    assert!(m.start_topics(&["orders".into()]).is_err());
    assert_eq!(sim.pending_faults(), 0, "the fault did not fire");
    let status = m.describe().into_iter().find(|s| s.partition == 0).unwrap();
    assert_eq!(status.state, S::Failed, "{status:?}");
    assert_eq!(
        status.retry_attempt, -1,
        "retried automatically: {status:?}"
    );
    let reason = status.failure.unwrap();
    assert!(
        reason.contains("start of topic orders failed") && reason.contains("start the topic again"),
        "{reason}"
    );
    // The topic stays the mirror's and read-only (a partition of it may be aligned later), and
    // nothing aligns the partition on its own.
    assert_eq!(claims.owner("orders").as_deref(), Some(MIRROR));
    assert!(w.dst.get(&tp(0)).unwrap().read().is_read_only());
    for _ in 0..3 {
        m.drive();
    }
    assert_eq!(
        leo(&w.dst, 0),
        Offset(5),
        "the FAILED partition was aligned"
    );

    // A restart with the state dir repaired: the start's intent, which the failed start could
    // not delete either, puts the partition back before anything aligns it — the topic is as
    // it was before the start. Then the start repeated: it completes.
    m.shutdown();
    drop(m);
    let store = Arc::new(MirrorStateStore::open(open_state_logs(), STATE_PARTITIONS).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let m = mirror(&w, store.clone(), claims.clone());
    for _ in 0..3 {
        m.drive();
    }
    assert_eq!(m.topic_states("orders"), vec![S::Stopped, S::Stopped]);
    assert_eq!(claims.owner("orders"), None);
    for p in 0..2 {
        assert_eq!(leo(&w.dst, p), Offset(5), "partition {p} was aligned");
        assert!(!w.dst.get(&tp(p)).unwrap().read().is_read_only());
    }
    assert!(store.start_intents(MIRROR).is_empty());
    m.start_topics(&["orders".into()]).unwrap();
    for _ in 0..3 {
        m.drive();
    }
    assert_eq!(m.topic_states("orders"), vec![S::Mirroring, S::Mirroring]);
}
