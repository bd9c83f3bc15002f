//! Scenario: two mirrors of the *same* source cluster on one destination (one shared
//! [`TopicClaims`] table, as a broker's mirrors share). Both include patterns match `orders`;
//! both pass every per-topic check (same name, same topic id), so without an owner per topic
//! both took it and two fetchers appended to one log. KIP-1279: a topic belongs to one mirror
//! at a time; a second start fails (TOPIC_ALREADY_IN_CLUSTER_MIRROR) unless the first STOPPED
//! it. Driven explicitly (`discover`, `drive`, `fetch_round`): no timing decides anything.

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
use mirrorlog_mirror::manager::{MirrorConfig, MirrorError, MirrorManager};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use mirrorlog_segment::{BatchBuilder, Compression};
use std::sync::Arc;

struct World {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    src: Arc<LogManager>,
    dst: Arc<LogManager>,
    source: Arc<EngineSource>,
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
    World {
        _dirs: (a, b),
        src,
        dst,
        source,
    }
}

/// Mirror `name` of the world's source, with `include` as `mirror.topics.include`, on `store`
/// and `claims`.
fn mirror(
    w: &World,
    name: &str,
    include: &str,
    store: &Arc<MirrorStateStore>,
    claims: &Arc<TopicClaims>,
) -> Arc<MirrorManager> {
    let mut c = MirrorConfig::new(name);
    c.set("mirror.topics.include", include).unwrap();
    MirrorManager::new_with_claims(
        c,
        w.source.clone(),
        w.dst.clone(),
        Arc::new(Dest(w.dst.clone())),
        store.clone(),
        ManualClock::new(T0),
        claims.clone(),
    )
    .unwrap()
}

fn produce(w: &World, n: usize, tag: &str) {
    let mut b = BatchBuilder::new().compression(Compression::None);
    for i in 0..n {
        b.append(
            TimestampMs(T0 + i as i64),
            None,
            Some(format!("{tag}{i}").as_bytes()),
            &[],
        );
    }
    let h = w.src.get(&tp("orders")).unwrap();
    let mut log = h.write();
    log.append_as_leader(b.build().into_bytes(), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

fn bytes(m: &LogManager) -> Bytes {
    log_bytes(&m.get(&tp("orders")).unwrap())
}

fn held_by_another(r: Result<(), MirrorError>, owner: &str) {
    match r {
        Err(MirrorError::HeldByAnotherMirror { topic, owner: o }) => {
            assert_eq!((topic.as_str(), o.as_str()), ("orders", owner));
        }
        other => panic!("expected orders held by {owner}, got {other:?}"),
    }
}

#[test]
fn a_topic_both_patterns_match_is_mirrored_by_one_mirror_only() {
    let w = world();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let east = mirror(&w, "east", "ord.*", &store, &claims);
    let west = mirror(&w, "west", "orders", &store, &claims);
    produce(&w, 3, "a");

    assert_eq!(east.discover().unwrap(), ["orders"]);
    assert_eq!(
        west.discover().unwrap(),
        Vec::<String>::new(),
        "west's discovery took a topic east mirrors"
    );
    assert!(west.topic_names().is_empty());
    held_by_another(west.start_topics(&["orders".into()]), "east");
    west.sync().unwrap();
    assert!(west.topic_names().is_empty(), "a sync took it");
    assert_eq!(claims.owner("orders").as_deref(), Some("east"));

    catch_up(&east);
    catch_up(&west);
    produce(&w, 2, "b");
    catch_up(&east);
    catch_up(&west);
    assert_eq!(bytes(&w.dst), bytes(&w.src), "one writer, an exact copy");
}

#[test]
fn a_topic_the_first_mirror_stops_can_be_taken_by_the_second() {
    let w = world();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let east = mirror(&w, "east", "ord.*", &store, &claims);
    let west = mirror(&w, "west", "ord.*", &store, &claims);
    produce(&w, 3, "a");
    east.discover().unwrap();
    catch_up(&east);
    assert!(west.discover().unwrap().is_empty());

    // Failover on east: the topic is writable, owned by nobody; west may mirror it now.
    east.stop_topic("orders").unwrap();
    assert!(!w.dst.get(&tp("orders")).unwrap().read().is_read_only());
    assert_eq!(claims.owner("orders"), None);
    assert_eq!(west.discover().unwrap(), ["orders"]);
    assert!(w.dst.get(&tp("orders")).unwrap().read().is_read_only());
    produce(&w, 2, "b");
    catch_up(&west);
    assert_eq!(west.topic_states("orders"), [S::Mirroring]);
    assert_eq!(bytes(&w.dst), bytes(&w.src));
    // And now east may not take it back while west mirrors it.
    held_by_another(east.start_topics(&["orders".into()]), "west");
    held_by_another(east.recover_topic("orders").map(|_| ()), "west");
    assert_eq!(east.topic_states("orders"), [S::Stopped]);
}

#[test]
fn a_deleted_mirror_leaves_its_topics_to_the_others() {
    let w = world();
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let east = mirror(&w, "east", "ord.*", &store, &claims);
    let west = mirror(&w, "west", "ord.*", &store, &claims);
    produce(&w, 3, "a");
    east.discover().unwrap();
    catch_up(&east);
    assert!(west.discover().unwrap().is_empty());

    east.stop_topic("orders").unwrap();
    east.close_to_new_topics().unwrap();
    east.shutdown();
    east.delete_states().unwrap();
    assert!(claims.owned_by("east").is_empty());
    assert_eq!(west.discover().unwrap(), ["orders"]);
    produce(&w, 2, "b");
    catch_up(&west);
    assert_eq!(bytes(&w.dst), bytes(&w.src));
}

/// An older build let both mirrors take `orders` (each with a table of its own here). After a
/// restart on one shared table, the mirror restored first keeps it; the other's partition is
/// FAILED for good, never fetched, never aligned, and its stop touches no log.
#[test]
fn two_mirrors_restored_on_one_topic_resume_only_one() {
    let w = world();
    produce(&w, 3, "a");
    {
        let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
        let east = mirror(&w, "east", "", &store, &Arc::new(TopicClaims::new()));
        let west = mirror(&w, "west", "", &store, &Arc::new(TopicClaims::new()));
        east.start_topics(&["orders".into()]).unwrap();
        west.start_topics(&["orders".into()]).unwrap();
        catch_up(&east);
        assert_eq!(east.topic_states("orders"), [S::Mirroring]);
        assert_eq!(west.topic_states("orders"), [S::LogAlignment]);
    }

    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let east = mirror(&w, "east", "", &store, &claims);
    let west = mirror(&w, "west", "", &store, &claims);
    assert_eq!(claims.owner("orders").as_deref(), Some("east"));
    assert_eq!(east.topic_states("orders"), [S::Mirroring]);
    assert_eq!(west.topic_states("orders"), [S::Failed]);
    let failure = west.describe()[0].failure.clone().unwrap();
    assert!(
        failure.contains("cluster mirror east") && failure.contains("older build"),
        "{failure}"
    );
    assert_eq!(west.describe()[0].retry_attempt, -1, "not retryable");

    // Source leaders come with a sync (west's finds nothing of its own to do).
    east.sync().unwrap();
    west.sync().unwrap();
    assert_eq!(west.topic_states("orders"), [S::Failed]);
    produce(&w, 2, "b");
    catch_up(&east);
    catch_up(&west);
    assert_eq!(bytes(&w.dst), bytes(&w.src), "west wrote nothing");
    held_by_another(west.recover_topic("orders").map(|_| ()), "east");
    let leader_epoch = w.dst.get(&tp("orders")).unwrap().read().leader_epoch();
    west.stop_topic("orders").unwrap();
    assert_eq!(west.topic_states("orders"), [S::Stopped]);
    let dest = w.dst.get(&tp("orders")).unwrap();
    assert!(dest.read().is_read_only(), "east still mirrors it");
    assert_eq!(
        dest.read().leader_epoch(),
        leader_epoch,
        "no stop sequence on east's log"
    );
    produce(&w, 1, "c");
    catch_up(&east);
    assert_eq!(bytes(&w.dst), bytes(&w.src));

    // The state it left: a restart resumes east alone again.
    drop((east, west));
    let store = Arc::new(MirrorStateStore::open(w.dst.clone(), 4).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let west = mirror(&w, "west", "", &store, &claims);
    let east = mirror(&w, "east", "", &store, &claims);
    assert_eq!(west.topic_states("orders"), [S::Stopped]);
    assert_eq!(east.topic_states("orders"), [S::Mirroring]);
    assert_eq!(claims.owner("orders").as_deref(), Some("east"));
}
