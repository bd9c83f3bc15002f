//! Scenario: the source adds a partition to `orders`, which mirror `east` owns. East's sync
//! checks that it owns the topic, then creates and starts the new partition. In between, an
//! operator stops `orders` on east (the claim is released) and mirror `west` starts it. East
//! then started the new partition anyway: a LOG_ALIGNMENT partition of a topic west owns,
//! which east's drive skips (not its topic) and which keeps east from ever being deleted.
//! Partition growth now takes the locks a start takes and checks the claim under them; the
//! stop waits for the growth, then stops every partition, the new one included.
//!
//! The stop and west's start run on a thread started from inside east's growth (the
//! destination's `ensure_mirror_topic`). Fixed, that thread waits on east's locks until the
//! growth is done, so the hook's wait for it ends at its bound (the outcome does not depend on
//! it); unfixed, the thread finishes inside the window.

use crate::common;

use common::{Dest, T0, manager};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::claims::TopicClaims;
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{DestinationTopics, MirrorConfig, MirrorError, MirrorManager};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use parking_lot::Mutex;
use std::sync::Arc;
use std::time::Duration;

fn tp(t: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: t.into(),
        partition,
    }
}

type Hook = Box<dyn FnOnce() + Send>;

/// [`Dest`] that runs a hook once, when asked to grow a topic to two partitions.
#[derive(Debug)]
struct HookedDest {
    inner: Dest,
    hook: Mutex<Option<HookBox>>,
}

struct HookBox(Hook);

impl std::fmt::Debug for HookBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hook")
    }
}

impl DestinationTopics for HookedDest {
    fn ensure_mirror_topic(&self, name: &str, id: [u8; 16], partitions: i32) -> Result<(), String> {
        if partitions == 2
            && let Some(HookBox(hook)) = self.hook.lock().take()
        {
            hook();
        }
        self.inner.ensure_mirror_topic(name, id, partitions)
    }
    fn topic_name_for_id(&self, id: [u8; 16]) -> Option<String> {
        self.inner.topic_name_for_id(id)
    }
    fn apply_topic_configs(
        &self,
        name: &str,
        configs: &[(String, String)],
        removed: &[String],
    ) -> Result<(), String> {
        self.inner.apply_topic_configs(name, configs, removed)
    }
    fn set_read_only(&self, name: &str, read_only: bool) -> Result<(), String> {
        self.inner.set_read_only(name, read_only)
    }
}

fn mirror(
    name: &str,
    source: &Arc<EngineSource>,
    dst: &Arc<LogManager>,
    topics: Arc<dyn DestinationTopics>,
    store: &Arc<MirrorStateStore>,
    claims: &Arc<TopicClaims>,
) -> Arc<MirrorManager> {
    MirrorManager::new_with_claims(
        MirrorConfig::new(name),
        source.clone(),
        dst.clone(),
        topics,
        store.clone(),
        ManualClock::new(T0),
        claims.clone(),
    )
    .unwrap()
}

#[test]
fn a_partition_added_while_the_topic_changes_hands_is_not_started_by_the_old_owner() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    src.create(&tp("orders", 0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 4).unwrap());
    let claims = Arc::new(TopicClaims::new());
    let east_dest = Arc::new(HookedDest {
        inner: Dest(dst.clone()),
        hook: Mutex::new(None),
    });
    let east = mirror("east", &source, &dst, east_dest.clone(), &store, &claims);
    let west = mirror(
        "west",
        &source,
        &dst,
        Arc::new(Dest(dst.clone())),
        &store,
        &claims,
    );
    east.start_topics(&["orders".into()]).unwrap();
    east.drive();
    assert_eq!(east.topic_states("orders"), [S::Mirroring]);

    // The source grows; east's next sync adds the partition.
    src.create(&tp("orders", 1), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    let (done_tx, done_rx) = crossbeam_channel::bounded(1);
    let racer: Arc<Mutex<Option<std::thread::JoinHandle<_>>>> = Arc::new(Mutex::new(None));
    {
        let (east, west, racer) = (east.clone(), west.clone(), racer.clone());
        *east_dest.hook.lock() = Some(HookBox(Box::new(move || {
            let handle = std::thread::spawn(move || {
                let stopped = east.stop_topic("orders");
                let started = west.start_topics(&["orders".into()]);
                let _ = done_tx.send(());
                (stopped, started)
            });
            *racer.lock() = Some(handle);
            // Only a bound: fixed, the thread cannot finish before the growth is done.
            let _ = done_rx.recv_timeout(Duration::from_secs(5));
        })));
    }
    east.sync().unwrap();
    let handle = racer
        .lock()
        .take()
        .expect("the growth reached the destination");
    let (stopped, started): (Result<(), MirrorError>, Result<(), MirrorError>) =
        handle.join().unwrap();
    stopped.unwrap();
    started.unwrap();

    assert_eq!(claims.owner("orders").as_deref(), Some("west"));
    assert!(
        east.topic_states("orders").iter().all(|s| *s == S::Stopped),
        "east started a partition of a topic west owns: {:?}",
        east.topic_states("orders")
    );
    assert_eq!(
        west.topic_states("orders"),
        [S::LogAlignment, S::LogAlignment]
    );
    assert!(east.close_to_new_topics().is_ok(), "east can be deleted");
}
