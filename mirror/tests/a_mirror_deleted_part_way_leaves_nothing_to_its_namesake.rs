//! Scenario: a cluster mirror holding two failed-over (STOPPED, writable) topics, each with a
//! start intent an earlier start left, is deleted; the power is cut after each sync of the
//! deletion, and a mirror is created again under the same name from what the crash left.
//!
//! The deletion tombstoned the mirror's partition states one by one, then its start intents: a
//! crash in between left intents, and the new mirror's restore put them back as the mirror's
//! own interrupted starts — a topic the old start had created (every partition STOPPED now,
//! nothing running) was removed with its local records. Ordering alone cannot close it (each
//! tombstone is a sync of its own): the deletion now writes a deletion record first and
//! tombstones it last, and a mirror created under that name finishes the deletion before it
//! restores anything.

use crate::common;

use common::{T0, config_mirror, produce_to, sim_world, stopped_state};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use mirrorlog_mirror::state::{MirrorStateStore, StartIntent, TopicBefore};
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
use std::sync::Arc;

const MIRROR: &str = "east";
const STATE_PARTITIONS: i32 = 3;
/// The mirror's topics: name, id, partitions.
const TOPICS: &[(&str, [u8; 16], i32)] = &[("orders", [1; 16], 2), ("items", [2; 16], 1)];

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

/// Deletes the mirror with the power cut after `syncs` syncs of the deletion (`None`: never),
/// then creates it again from what the crash left. Returns the destination, its store and how
/// many syncs the deletion completed.
fn delete_crashing_after(syncs: Option<u64>) -> (Arc<LogManager>, Arc<MirrorStateStore>, u64) {
    let w = sim_world();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), STATE_PARTITIONS).unwrap());
    for (topic, id, partitions) in TOPICS {
        for p in 0..*partitions {
            w.dst
                .create(&tp(topic, p), TopicId(*id), Default::default())
                .unwrap();
            produce_to(&w.dst, &tp(topic, p), b"local", 5);
            w.dst.get(&tp(topic, p)).unwrap().write().flush().unwrap();
            store.put(&stopped_state(MIRROR, *id, p)).unwrap();
        }
    }
    let mirror = config_mirror(MIRROR, &w.src, &w.dst, &store);
    // What a start of a new topic leaves when its intent's deletion fails (and the stop's
    // too): the topic was absent and its partitions had no state before it.
    for (topic, id, partitions) in TOPICS {
        store
            .put_start_intent(&StartIntent {
                mirror: MIRROR.into(),
                topic_id: *id,
                topic: topic.to_string(),
                topic_before: TopicBefore::Absent,
                configs_before: vec![],
                partitions: (0..*partitions).map(|p| (p, None)).collect(),
            })
            .unwrap();
    }
    mirror.shutdown();
    let base = w.sim.syncs_completed();
    if let Some(k) = syncs {
        w.sim.halt_after_syncs(base + k);
    }
    let answered = mirror.delete_states();
    let done = w.sim.syncs_completed() - base;
    if syncs.is_none() {
        answered.unwrap();
    }
    let crashed: SimStorage = w.sim.crash(TornTail::None);
    drop((mirror, store));
    let storage: Arc<dyn Storage> = Arc::new(crashed);
    let (dst, _) = LogManager::open(
        LogManagerConfig::new(w.dst_dir.path()),
        storage,
        ManualClock::new(T0),
    )
    .unwrap();
    let dst = Arc::new(dst);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), STATE_PARTITIONS).unwrap());
    // The namesake: its restore runs here.
    let again = config_mirror(MIRROR, &w.src, &dst, &store);
    again.drive();
    (dst, store, done)
}

#[test]
fn a_mirror_created_again_after_a_crash_part_way_through_a_deletion_puts_back_nothing() {
    let (_, _, total) = delete_crashing_after(None);
    assert!(total >= 5, "the deletion completed {total} syncs");
    // After 0 syncs nothing of the deletion is durable: the mirror was not deleted.
    for k in 1..=total {
        let at = format!("crash after {k} of the deletion's {total} syncs");
        let (dst, store, _) = delete_crashing_after(Some(k));
        for (topic, _, partitions) in TOPICS {
            for p in 0..*partitions {
                let h = dst.get(&tp(topic, p)).unwrap_or_else(|| {
                    panic!("{at}: {topic}-{p} was removed (a deleted mirror's intent put back)")
                });
                assert_eq!(h.read().log_end_offset(), Offset(5), "{at}: {topic}-{p}");
                assert!(!h.read().is_read_only(), "{at}: {topic}-{p}");
            }
        }
        assert!(
            store.start_intents(MIRROR).is_empty(),
            "{at}: {:?}",
            store.start_intents(MIRROR)
        );
        assert!(
            store.all().iter().all(|s| s.mirror != MIRROR),
            "{at}: the namesake holds the deleted mirror's states: {:?}",
            store.all()
        );
        assert!(!store.mirror_deletion_pending(MIRROR), "{at}");
    }
}

/// The deletion cut short after its deletion record, then a restart with the data dir of the
/// `__mirror_state` partition holding the mirror's state offline: the namesake cannot finish
/// the deletion, so it is refused (a storage error) and the record stays; it used to tombstone
/// what it could see and the record, so the restart with the dir repaired restored the old
/// mirror's state. With the dir repaired, the namesake finishes the deletion.
#[test]
fn a_namesake_is_refused_while_a_state_of_the_deleted_mirror_is_offline() {
    use mirrorlog_engine::clock::ManualClock;
    use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
    use mirrorlog_mirror::state::{MIRROR_STATE_TOPIC, mirror_deletion_key, state_partition_for};
    use mirrorlog_segment::io::{Fault, FaultKind, IoOp};
    let partitions = 2;
    let marker = mirror_deletion_key(MIRROR);
    let marker_p = state_partition_for(MIRROR, &marker.topic_id, -1, partitions);
    // A topic whose partition 0's state is not in the deletion record's partition.
    let id = (1u8..)
        .map(|b| {
            let mut id = [1; 16];
            id[0] = b;
            id
        })
        .find(|id| state_partition_for(MIRROR, id, 0, partitions) != marker_p)
        .unwrap();
    let state_p = 1 - marker_p;
    let root = tempfile::tempdir().unwrap();
    let src = common::manager(&root.path().join("src"));
    let dirs = vec![root.path().join("d1"), root.path().join("d2")];
    let open_dst = |sim: &SimStorage| {
        let mut config = LogManagerConfig::new(&dirs[0]);
        config.data_dirs = dirs.clone();
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        Arc::new(
            LogManager::open(config, storage, ManualClock::new(T0))
                .unwrap()
                .0,
        )
    };
    let namesake = |dst: &Arc<LogManager>, store: &Arc<MirrorStateStore>| {
        MirrorManager::new(
            MirrorConfig::new(MIRROR),
            mirrorlog_mirror::engine_source::EngineSource::new(src.clone(), "source-cluster", 1),
            dst.clone(),
            Arc::new(common::ConfigDest(common::Dest(dst.clone()))),
            store.clone(),
            ManualClock::new(T0),
        )
    };
    let sim = SimStorage::new();
    let dst = open_dst(&sim);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), partitions).unwrap());
    let dir_of = |p: i32| {
        let tp = tp(MIRROR_STATE_TOPIC, p);
        dst.get(&tp).unwrap().data_dir().join(tp.to_string())
    };
    let bad = dir_of(state_p);
    assert_ne!(
        bad.parent(),
        dir_of(marker_p).parent(),
        "the scenario needs two dirs"
    );
    dst.create(&tp("orders", 0), TopicId(id), Default::default())
        .unwrap();
    store.put(&stopped_state(MIRROR, id, 0)).unwrap();
    // Another mirror's state in the deletion record's partition: its first append (which also
    // records the leader epoch) is behind it, so the deletion record takes one sync.
    let other = (1u8..)
        .map(|b| [b; 16])
        .find(|id| state_partition_for("west", id, 0, partitions) == marker_p)
        .unwrap();
    store.put(&stopped_state("west", other, 0)).unwrap();
    let mirror = namesake(&dst, &store).unwrap();
    mirror.shutdown();
    // Power cut after the deletion record.
    sim.halt_after_syncs(sim.syncs_completed() + 1);
    assert!(mirror.delete_states().is_err());
    let crashed = sim.crash(TornTail::None);
    drop((mirror, store, dst));

    let offline = crashed.crash(TornTail::None);
    offline.inject(Fault::new(IoOp::ListDir, FaultKind::Eio).on_path(bad.to_str().unwrap()));
    let dst = open_dst(&offline);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), partitions).unwrap());
    assert_eq!(store.unavailable_partitions().len(), 1, "the scenario");
    assert!(store.mirror_deletion_pending(MIRROR), "the scenario");
    assert!(
        namesake(&dst, &store).is_err(),
        "the deletion cannot be finished"
    );
    assert!(store.mirror_deletion_pending(MIRROR));
    drop((store, dst));

    let dst = open_dst(&crashed.crash(TornTail::None));
    let store = Arc::new(MirrorStateStore::open(dst.clone(), partitions).unwrap());
    assert!(store.unavailable_partitions().is_empty());
    let _again = namesake(&dst, &store).unwrap();
    assert!(!store.mirror_deletion_pending(MIRROR));
    assert!(
        store.all().iter().all(|s| s.mirror != MIRROR),
        "the namesake holds the deleted mirror's state: {:?}",
        store.all()
    );
}
