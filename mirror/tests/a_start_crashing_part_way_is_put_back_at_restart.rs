//! Scenario: the node crashes in the middle of a start of a two-partition topic, at every point
//! one of the start's writes becomes durable (each completed sync of `__mirror_state`, of the
//! destination topic's configs), and the mirror is restarted from what the crash left.
//!
//! A start used to record its partitions' LOG_ALIGNMENT one by one, with nothing recording that
//! the start was under way: a crash after the first left it in LOG_ALIGNMENT, so the restart
//! aligned (truncated) it — a failed-over topic lost its local records for a start that never
//! completed — while the second stayed STOPPED in a topic left read-only with the source's
//! configs. KIP-1279's controller applies a start in one metadata write: now the start records
//! an intent before it changes anything and deletes it once complete, and the restart puts
//! back a start whose intent it finds before anything is aligned, so after a crash at any point
//! the topic is either wholly started or wholly as it was.

use crate::common;

use common::{ConfigDest, Dest, T0, manager, orders as tp, overrides};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId};
use mirrorlog_mirror::claims::TopicClaims;
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{
    MirrorPartitionState as S, MirrorStateStore, PartitionMirrorState, StartIntent,
    state_partition_for,
};
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
use std::sync::Arc;

const MIRROR: &str = "east";
const STATE_PARTITIONS: i32 = 2;
/// The source's topic configs, which a start copies.
const SOURCE_RETENTION_MS: &str = "86400000";

/// A topic id whose two partitions' states and start intent do not all live in one
/// `__mirror_state` partition.
fn topic_id() -> [u8; 16] {
    (1u8..)
        .map(|b| [b; 16])
        .find(|id| {
            state_partition_for(MIRROR, id, 0, STATE_PARTITIONS)
                != state_partition_for(MIRROR, id, 1, STATE_PARTITIONS)
        })
        .unwrap()
}

/// The source (`orders`, 2 partitions of 3 records, `retention.ms` set) and the destination
/// data dir, on simulated storage holding the destination's topics and `__mirror_state`.
struct World {
    _src_dir: tempfile::TempDir,
    dst_dir: tempfile::TempDir,
    src: Arc<LogManager>,
    id: [u8; 16],
    /// The store's `intent_chunk_bytes` (`None`: the default, which keeps these intents whole).
    chunk_bytes: Option<usize>,
}

fn open_dst(dir: &std::path::Path, sim: &SimStorage) -> Arc<LogManager> {
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let (m, _) = LogManager::open(LogManagerConfig::new(dir), storage, ManualClock::new(T0))
        .expect("the destination reopens after the crash");
    Arc::new(m)
}

struct Node {
    sim: SimStorage,
    dst: Arc<LogManager>,
    dest: Arc<ConfigDest>,
    store: Arc<MirrorStateStore>,
    claims: Arc<TopicClaims>,
    mirror: Arc<MirrorManager>,
}

fn node(w: &World, sim: SimStorage) -> Node {
    let dst = open_dst(w.dst_dir.path(), &sim);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), STATE_PARTITIONS).unwrap());
    if let Some(n) = w.chunk_bytes {
        store.set_intent_chunk_bytes(n);
    }
    let dest = Arc::new(ConfigDest(Dest(dst.clone())));
    let claims = Arc::new(TopicClaims::new());
    let mirror = MirrorManager::new_with_claims(
        MirrorConfig::new(MIRROR),
        EngineSource::new(w.src.clone(), "source-cluster", 1),
        dst.clone(),
        dest.clone(),
        store.clone(),
        ManualClock::new(T0),
        claims.clone(),
    )
    .unwrap();
    Node {
        sim,
        dst,
        dest,
        store,
        claims,
        mirror,
    }
}

/// A new world and its node before the start: with `failed_over`, the destination holds the
/// source's topic, writable, with its own configs, 5 local records per partition, and STOPPED
/// states of an earlier mirroring.
fn world(failed_over: bool, chunk_bytes: Option<usize>) -> (World, Node) {
    let src_dir = tempfile::tempdir().unwrap();
    let dst_dir = tempfile::tempdir().unwrap();
    let id = topic_id();
    let src = manager(src_dir.path());
    for p in 0..2 {
        src.create(
            &tp(p),
            TopicId(id),
            overrides(&[("retention.ms", SOURCE_RETENTION_MS)]),
        )
        .unwrap();
        common::produce_to(&src, &tp(p), b"source", 3);
    }
    let w = World {
        _src_dir: src_dir,
        dst_dir,
        src,
        id,
        chunk_bytes,
    };
    let sim = SimStorage::new();
    if failed_over {
        let dst = open_dst(w.dst_dir.path(), &sim);
        let store = MirrorStateStore::open(dst.clone(), STATE_PARTITIONS).unwrap();
        for p in 0..2 {
            let own = overrides(&[
                ("retention.ms", "3600000"),
                ("retention.bytes", "123456789"),
            ]);
            dst.create(&tp(p), TopicId(id), own).unwrap();
            common::produce_to(&dst, &tp(p), b"local", 5);
            dst.get(&tp(p)).unwrap().write().flush().unwrap();
            store.put(&common::stopped_state(MIRROR, id, p)).unwrap();
        }
    }
    let n = node(&w, sim);
    (w, n)
}

/// Starts `orders` with the power cut after `syncs` more completed syncs (`None`: never),
/// crashes, and restarts from what the crash left. Returns the restarted node and how many
/// syncs the start completed.
fn start_crashing_after(
    failed_over: bool,
    chunk_bytes: Option<usize>,
    syncs: Option<u64>,
) -> (World, Node, u64) {
    let (w, n) = world(failed_over, chunk_bytes);
    let base = n.sim.syncs_completed();
    if let Some(k) = syncs {
        n.sim.halt_after_syncs(base + k);
    }
    let answered = n.mirror.start_topics(&["orders".into()]);
    let done = n.sim.syncs_completed() - base;
    if syncs.is_none() {
        answered.unwrap();
    }
    // The crash: only what was durable survives; nothing else of this node runs.
    let crashed = n.sim.crash(TornTail::None);
    drop(n);
    let n = node(&w, crashed);
    (w, n, done)
}

fn leo(n: &Node, p: i32) -> Offset {
    n.dst.get(&tp(p)).unwrap().read().log_end_offset()
}

fn stored(n: &Node, id: [u8; 16], p: i32) -> Option<PartitionMirrorState> {
    n.store.get(&PartitionMirrorState::new(MIRROR, id, p).key())
}

/// The restarted node holds the topic wholly started or wholly as before; returns whether
/// started. Nothing of it has been aligned when this runs.
fn check_all_or_nothing(w: &World, n: &Node, failed_over: bool, at: &str) -> bool {
    assert!(
        n.store.start_intents(MIRROR).is_empty(),
        "{at}: the restart left a start intent: {:?}",
        n.store.start_intents(MIRROR)
    );
    let states: Vec<Option<S>> = (0..2)
        .map(|p| stored(n, w.id, p).map(|s| s.state))
        .collect();
    let started = states.iter().all(|s| *s == Some(S::LogAlignment));
    if started {
        assert_eq!(n.claims.owner("orders").as_deref(), Some(MIRROR), "{at}");
        for p in 0..2 {
            assert!(n.dst.get(&tp(p)).unwrap().read().is_read_only(), "{at}");
        }
        assert!(
            n.dest
                .topic_overrides("orders")
                .contains(&("retention.ms".into(), SOURCE_RETENTION_MS.into())),
            "{at}: started without the source's configs: {:?}",
            n.dest.topic_overrides("orders")
        );
        return true;
    }
    assert_eq!(
        n.claims.owner("orders"),
        None,
        "{at}: partly started: states {states:?}, the topic claimed"
    );
    if !failed_over {
        assert_eq!(states, vec![None, None], "{at}: partly started");
        assert!(
            n.dst.get(&tp(0)).is_none() && n.dst.get(&tp(1)).is_none(),
            "{at}: the topic of a start that did not complete stayed: {:?} {:?}, described {:?}",
            n.dst.get(&tp(0)).map(|h| h.read().log_end_offset()),
            n.dst.get(&tp(1)).map(|h| h.read().log_end_offset()),
            n.mirror.describe()
        );
        return false;
    }
    for p in 0..2 {
        let st = stored(n, w.id, p).unwrap();
        assert_eq!(
            st.state,
            S::Stopped,
            "{at}: partly started: states {states:?}"
        );
        assert_eq!(
            st.last_mirror_epoch,
            LeaderEpoch(0),
            "{at}: the LME was lost"
        );
        assert!(
            !n.dst.get(&tp(p)).unwrap().read().is_read_only(),
            "{at}: partition {p} of a start that did not complete stayed read-only"
        );
        assert_eq!(leo(n, p), Offset(5), "{at}: partition {p}");
    }
    let mut configs = n.dest.topic_overrides("orders");
    configs.sort();
    assert_eq!(
        configs,
        vec![
            ("retention.bytes".to_string(), "123456789".to_string()),
            ("retention.ms".to_string(), "3600000".to_string())
        ],
        "{at}: the topic's own configs were not put back"
    );
    false
}

fn crash_at_every_sync(failed_over: bool, chunk_bytes: Option<usize>) {
    let (_, _, total) = start_crashing_after(failed_over, chunk_bytes, None);
    assert!(total >= 4, "the start completed {total} syncs");
    let mut outcomes = vec![];
    for k in 0..=total {
        let at = format!("crash after {k} of the start's {total} syncs");
        let (w, n, _) = start_crashing_after(failed_over, chunk_bytes, Some(k));
        let started = check_all_or_nothing(&w, &n, failed_over, &at);
        for _ in 0..3 {
            n.mirror.drive();
        }
        if started {
            common::catch_up(&n.mirror);
            assert_eq!(
                n.mirror.topic_states("orders"),
                vec![S::Mirroring, S::Mirroring],
                "{at}"
            );
        } else if failed_over {
            for p in 0..2 {
                assert_eq!(
                    leo(&n, p),
                    Offset(5),
                    "{at}: partition {p}'s local records were truncated for a start that did not complete"
                );
            }
        }
        // The start, repeated, completes.
        n.mirror.start_topics(&["orders".into()]).unwrap();
        common::catch_up(&n.mirror);
        assert_eq!(
            n.mirror.topic_states("orders"),
            vec![S::Mirroring, S::Mirroring],
            "{at}: the repeated start"
        );
        assert!(n.store.start_intents(MIRROR).is_empty(), "{at}");
        outcomes.push(started);
    }
    assert_eq!(
        outcomes.last(),
        Some(&true),
        "a start whose every sync completed did not take effect"
    );
    assert!(
        outcomes.iter().filter(|s| !**s).count() >= 3,
        "too few crash points put the start back: {outcomes:?}"
    );
}

#[test]
fn a_failed_over_topic_is_wholly_started_or_wholly_as_it_was() {
    crash_at_every_sync(true, None);
}

#[test]
fn a_new_topic_is_wholly_started_or_absent() {
    crash_at_every_sync(false, None);
}

/// As above with the intent written in chunks (its two states' values are 24 bytes each): a
/// crash between the chunks' writes leaves no intent, and the start has changed nothing yet.
#[test]
fn a_failed_over_topic_whose_intent_is_in_chunks_is_wholly_started_or_as_it_was() {
    crash_at_every_sync(true, Some(40));
}

/// The intent key's partition for the tests' topic id is where the intent goes; a state of an
/// older build (no intent) loads as before.
#[test]
fn the_start_intent_is_deleted_once_the_start_completes() {
    let (w, n) = world(true, None);
    n.mirror.start_topics(&["orders".into()]).unwrap();
    assert!(n.store.start_intent(MIRROR, w.id).is_none());
    assert_eq!(StartIntent::key_of(MIRROR, w.id).partition, -1);
}
