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

mod common;

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
