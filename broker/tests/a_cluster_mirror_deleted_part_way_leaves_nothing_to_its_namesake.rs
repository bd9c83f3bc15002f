//! Scenario: cluster mirror `east`, every topic of it failed over (STOPPED, writable) and each
//! with a start intent an earlier start left, is deleted (DeleteClusterMirror) beside mirror
//! `west`; the power is cut after each sync of the deletion, the broker starts again from what
//! the crash left, and a mirror is created again under the name `east`.
//!
//! Bug: the deletion took `east` out of `cluster-mirrors.json` before it wrote its deletion
//! record to `__mirror_state`, so a crash between the two left every record of `east` with
//! nothing saying it was deleted: the start did not restore them (no mirror of that name in the
//! file) but kept them, and the mirror created again under the name restored the old one's
//! states and put back its start intents as its own. Now the deletion record is written first,
//! and a start finishes every deletion whose record it finds (taking the mirror out of the file
//! if it is still there): after any crash `east` is either whole or gone with all its records,
//! and nothing of `west` is lost.
//!
//! `cluster-mirrors.json` is written through `std::fs`, not the simulated storage, so a cut
//! never stops its rewrite: it is where the deletion left it when the next sync failed. The
//! one crash point that leaves it unwritten though the sync before its rewrite was done (the
//! power cut between that sync and the rewrite) is made by putting the old file back.

use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::mirrors::MIRRORS_FILE;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::state::{
    MirrorPartitionState as S, PartitionMirrorState, StartIntent, TopicBefore,
};
use mirrorlog_segment::io::{SimStorage, TornTail};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;
const MIRROR: &str = "east";
const OTHER: &str = "west";
/// The deleted mirror's topics: name, id, partitions.
const TOPICS: &[(&str, [u8; 16], i32)] = &[("orders", [1; 16], 2), ("items", [2; 16], 1)];
/// The other mirror's topic.
const OTHER_TOPIC: (&str, [u8; 16]) = ("stock", [3; 16]);

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn stopped(mirror: &str, id: [u8; 16], p: i32) -> PartitionMirrorState {
    let mut st = PartitionMirrorState::new(mirror, id, p);
    for target in [S::LogAlignment, S::Mirroring, S::Stopping, S::Stopped] {
        let e = st.state_epoch;
        st.transition(target, e, T0).unwrap();
    }
    st
}

/// The broker on `d1`/`d2` over `sim` (no coordinators: nothing but the deletion syncs), its
/// mirrors restored.
fn open(d1: &Path, d2: &Path, sim: Arc<SimStorage>) -> Arc<Broker> {
    let mut config = BrokerConfig::new(d1, "127.0.0.1", 9092);
    config.cluster_id = Some("dst".into());
    config.logs.data_dirs = vec![d1.to_path_buf(), d2.to_path_buf()];
    config.logs.recovery_threads = 1;
    let b = Arc::new(Broker::open(config, sim, ManualClock::new(T0)).unwrap());
    b.register_arc();
    b.mirrors.restore(&b).unwrap();
    b
}

fn create_mirror(b: &Arc<Broker>, name: &str) {
    // Nothing listens there: the mirror never fetches.
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), "127.0.0.1:1".to_string())]);
    b.mirrors.create_durable(b, name, configs).unwrap();
}

/// What a crash of the deletion left, opened again.
struct AfterCrash {
    b: Arc<Broker>,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    /// Syncs the deletion completed.
    syncs: u64,
    /// Whether the deletion had rewritten the mirrors file.
    file_rewritten: bool,
}

/// Deletes `east` with the power cut after `syncs` of its syncs (`None`: never), the mirrors
/// file put back as it was before when `file_lost`, and starts the broker again.
fn delete_crashing_after(syncs: Option<u64>, file_lost: bool) -> AfterCrash {
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sim = Arc::new(SimStorage::new());
    let b = open(d1.path(), d2.path(), sim.clone());
    create_mirror(&b, MIRROR);
    create_mirror(&b, OTHER);
    let store = b.mirrors.state_store().unwrap();
    let writable = LogConfig::default();
    for (topic, id, partitions) in TOPICS {
        b.topics
            .create(
                &b.logs,
                topic,
                *partitions,
                writable.clone(),
                Some(uuid::Uuid::from_bytes(*id)),
            )
            .unwrap();
        for p in 0..*partitions {
            store.put(&stopped(MIRROR, *id, p)).unwrap();
        }
        // A start of the failed-over topic whose intent's deletion failed (and the stop's
        // too): put back, it leaves the partitions STOPPED and the topic writable again.
        store
            .put_start_intent(&StartIntent {
                mirror: MIRROR.into(),
                topic_id: *id,
                topic: topic.to_string(),
                topic_before: TopicBefore::Writable,
                configs_before: vec![],
                partitions: (0..*partitions)
                    .map(|p| (p, Some(stopped(MIRROR, *id, p))))
                    .collect(),
            })
            .unwrap();
    }
    let (topic, id) = OTHER_TOPIC;
    b.topics
        .create(
            &b.logs,
            topic,
            1,
            writable,
            Some(uuid::Uuid::from_bytes(id)),
        )
        .unwrap();
    store.put(&stopped(OTHER, id, 0)).unwrap();
    drop(store);

    let file = d1.path().join(MIRRORS_FILE);
    let before = std::fs::read(&file).unwrap();
    let base = sim.syncs_completed();
    if let Some(k) = syncs {
        sim.halt_after_syncs(base + k);
    }
    let answered = b.mirrors.delete(&b, MIRROR);
    let done = sim.syncs_completed() - base;
    if syncs.is_none() {
        answered.unwrap();
    }
    let file_rewritten = std::fs::read(&file).unwrap() != before;
    let crashed = sim.crash(TornTail::None);
    b.mirrors.shutdown();
    drop(b);
    if file_lost {
        std::fs::write(&file, &before).unwrap();
    }
    let b = open(d1.path(), d2.path(), Arc::new(crashed));
    AfterCrash {
        b,
        _dirs: (d1, d2),
        syncs: done,
        file_rewritten,
    }
}

/// `east` is whole (the deletion did not take effect) or gone with every record of it (a
/// mirror created again under its name starts empty); `west` is whole either way.
fn check(after: &AfterCrash, at: &str) {
    let b = &after.b;
    let listed = mirrorlog_broker::mirrors::read_mirrors_file(&b.config.logs.data_dirs[0])
        .unwrap()
        .into_iter()
        .map(|(name, _)| name)
        .collect::<Vec<_>>();
    let store = b.mirrors.state_store().unwrap();
    let states_of = |mirror: &str| -> usize {
        (store.all().iter())
            .filter(|s| s.mirror == mirror && s.state == S::Stopped)
            .count()
    };
    if b.mirrors.get(MIRROR).is_some() {
        // Not deleted: its intents were put back (its own), its states all there.
        assert!(listed.iter().any(|n| n == MIRROR), "{at}: {listed:?}");
        assert_eq!(states_of(MIRROR), 3, "{at}: the mirror lost its states");
    } else {
        assert!(!listed.iter().any(|n| n == MIRROR), "{at}: {listed:?}");
        create_mirror(b, MIRROR);
        assert_eq!(
            states_of(MIRROR),
            0,
            "{at}: the namesake holds the deleted mirror's states: {:?}",
            store.all()
        );
        assert!(store.start_intents(MIRROR).is_empty(), "{at}");
        assert!(!store.mirror_deletion_pending(MIRROR), "{at}");
    }
    for (topic, _, partitions) in TOPICS {
        for p in 0..*partitions {
            let h = (b.logs.get(&tp(topic, p))).unwrap_or_else(|| panic!("{at}: {topic}-{p}"));
            assert!(!h.read().is_read_only(), "{at}: {topic}-{p}");
        }
    }
    assert!(b.mirrors.get(OTHER).is_some(), "{at}");
    assert!(listed.iter().any(|n| n == OTHER), "{at}: {listed:?}");
    assert_eq!(states_of(OTHER), 1, "{at}: {:?}", store.all());
    assert!(b.logs.get(&tp(OTHER_TOPIC.0, 0)).is_some(), "{at}");
}

#[test]
fn a_cluster_mirror_created_again_after_a_crash_part_way_through_its_deletion_starts_empty() {
    let whole = delete_crashing_after(None, false);
    let total = whole.syncs;
    assert!(total >= 6, "the deletion completed {total} syncs");
    check(&whole, "no crash");
    let mut file_rewrite_seen = false;
    for k in 0..=total {
        let after = delete_crashing_after(Some(k), false);
        check(
            &after,
            &format!("crash after {k} of the deletion's {total} syncs"),
        );
        if after.file_rewritten && !file_rewrite_seen {
            // The first cut the file's rewrite came before: the cut could also have come
            // between sync k and the rewrite.
            file_rewrite_seen = true;
            let lost = delete_crashing_after(Some(k), true);
            check(
                &lost,
                &format!(
                    "crash after {k} of the deletion's {total} syncs, before the file's rewrite"
                ),
            );
        }
    }
    assert!(
        file_rewrite_seen,
        "the deletion never rewrote {MIRRORS_FILE}"
    );
}

/// A deletion of `east` left unfinished (its record stored: a start could not finish it), then
/// CreateClusterMirror of `east` with the power cut before its first sync. The creation saved
/// the name in the mirrors file before it finished the deletion, so a cut between the two left
/// both the name and the deletion record, and the next start took the new mirror for the
/// deleted one and deleted it. Now the deletion is finished before the name is saved: the cut
/// fails the creation with the file never rewritten.
#[test]
fn a_namesake_is_saved_only_once_the_deletion_it_finishes_is_done() {
    use std::os::unix::fs::MetadataExt;
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let sim = Arc::new(SimStorage::new());
    let b = open(d1.path(), d2.path(), sim.clone());
    create_mirror(&b, OTHER);
    let store = b.mirrors.state_store().unwrap();
    store.put_mirror_deletion(MIRROR).unwrap();
    let file = d1.path().join(MIRRORS_FILE);
    let inode = std::fs::metadata(&file).unwrap().ino();
    sim.halt_after_syncs(sim.syncs_completed());
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), "127.0.0.1:1".to_string())]);
    assert!(b.mirrors.create_durable(&b, MIRROR, configs).is_err());
    assert_eq!(
        std::fs::metadata(&file).unwrap().ino(),
        inode,
        "{MIRRORS_FILE} was rewritten (the name saved) before the deletion was finished"
    );
    let crashed = sim.crash(TornTail::None);
    b.mirrors.shutdown();
    drop((store, b));
    let b = open(d1.path(), d2.path(), Arc::new(crashed));
    assert!(b.mirrors.get(OTHER).is_some());
    create_mirror(&b, MIRROR);
    assert!(
        !b.mirrors
            .state_store()
            .unwrap()
            .mirror_deletion_pending(MIRROR)
    );
}
