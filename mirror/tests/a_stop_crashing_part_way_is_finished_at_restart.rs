//! Scenario: a mirror partition holding two open transactions of the source is stopped
//! (failover, KIP-1279 §9: STOPPING, epoch bump, an ABORT marker per open transaction, one
//! MIRROR_PID_RESET, STOPPED) and the power is cut at every point one of the stop's writes
//! becomes durable, with nothing, part or all of the unsynced log tail surviving; the node
//! restarts from what the crash left and the operator stops the topic again.
//!
//! Whatever the crash point, the stop completes with the mirrored records intact, every open
//! transaction aborted (an ABORT marker for each, none left open), exactly one MIRROR_PID_RESET
//! after the mirrored records, and the partition writable.
//!
//! Bug: a crash after the last STOPPED was persisted but before the topic was stored writable
//! left a failed-over topic read-only for good: the restore claims only topics with a
//! partition not STOPPED, and a stop of a STOPPED topic changes nothing. Now the mirror makes
//! such a topic writable when it starts running (`MirrorManager::open_stopped_topics`).

use crate::common;

use common::{Dest, T0, log_bytes, manager, orders as tp};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicId,
};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::state::{MirrorPartitionState as S, MirrorStateStore};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::batch::{Batches, ControlRecordType};
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
use std::sync::Arc;

const MIRROR: &str = "east";
/// The source's open transactions.
const OPEN: [i64; 2] = [9, 10];

struct Node {
    /// The source's and the destination's data dirs (kept while the node lives).
    _dirs: Option<(tempfile::TempDir, tempfile::TempDir)>,
    sim: SimStorage,
    dst: Arc<LogManager>,
    mirror: Arc<MirrorManager>,
}

fn node(dir: &std::path::Path, source: &Arc<EngineSource>, sim: SimStorage) -> Node {
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let (dst, _) = LogManager::open(LogManagerConfig::new(dir), storage, ManualClock::new(T0))
        .expect("the destination reopens after the crash");
    let dst = Arc::new(dst);
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 2).unwrap());
    let mirror = MirrorManager::new(
        MirrorConfig::new(MIRROR),
        source.clone(),
        dst.clone(),
        Arc::new(Dest(dst.clone())),
        store,
        ManualClock::new(T0),
    )
    .unwrap();
    Node {
        _dirs: None,
        sim,
        dst,
        mirror,
    }
}

fn append(src: &LogManager, batch: bytes::Bytes) {
    let h = src.get(&tp(0)).unwrap();
    let mut log = h.write();
    log.append_as_leader(batch, LeaderEpoch(3), LeaderOrigin::Client)
        .unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
}

/// Stops `orders` (mirrored: 3 records, then a record of each open transaction) with the power
/// cut after `syncs` completed syncs (`None`: never) and `torn` unsynced bytes of the
/// partition's files surviving; restarts and stops again. Returns the restarted node, the
/// source's records and how many syncs the first stop completed.
fn stop_crashing_after(syncs: Option<u64>, torn: usize) -> (Node, bytes::Bytes, u64) {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    src.create(&tp(0), TopicId([1; 16]), Default::default())
        .unwrap();
    common::produce_to(&src, &tp(0), b"v", 3);
    for pid in OPEN {
        append(
            &src,
            BatchBuilder::new()
                .producer(ProducerId(pid), ProducerEpoch(0), Sequence(0))
                .transactional(true)
                .record(TimestampMs(T0), None, Some(b"open"))
                .build()
                .into_bytes(),
        );
    }
    let source = EngineSource::new(src.clone(), "source-cluster", 1);
    let n = node(b.path(), &source, SimStorage::new());
    n.mirror.start_topics(&["orders".into()]).unwrap();
    for _ in 0..3 {
        n.mirror.sync().unwrap();
        n.mirror.drive();
        n.mirror.fetch_round(0);
    }
    let mirrored = log_bytes(&src.get(&tp(0)).unwrap());
    assert_eq!(log_bytes(&n.dst.get(&tp(0)).unwrap()), mirrored);
    // Durable before the stop (a crash may lose what was mirrored since the last flush, as
    // any unflushed append: the source still holds it).
    n.dst.get(&tp(0)).unwrap().write().flush().unwrap();
    let base = n.sim.syncs_completed();
    if let Some(k) = syncs {
        n.sim.halt_after_syncs(base + k);
    }
    let answered = n.mirror.stop_topic("orders");
    let done = n.sim.syncs_completed() - base;
    if syncs.is_none() {
        answered.unwrap();
    }
    let crashed = n.sim.crash(TornTail::KeepUnsynced {
        file_contains: "orders-0".into(),
        bytes: torn,
    });
    n.mirror.shutdown();
    drop(n);
    let mut n = node(b.path(), &source, crashed);
    // What `run` does first, once every mirror of the broker is restored.
    n.mirror.open_stopped_topics();
    // The operator stops it again (a stop the crash cut short is STOPPING, or MIRRORING when
    // its STOPPING was not durable yet; a completed one is STOPPED).
    n.mirror.drive();
    n.mirror.stop_topic("orders").unwrap();
    n._dirs = Some((a, b));
    (n, mirrored, done)
}

fn check(n: &Node, mirrored: &bytes::Bytes, at: &str) {
    assert_eq!(n.mirror.topic_states("orders"), vec![S::Stopped], "{at}");
    let h = n.dst.get(&tp(0)).unwrap();
    assert!(!h.read().is_read_only(), "{at}: not writable");
    let bytes = log_bytes(&h);
    assert!(
        bytes.starts_with(mirrored),
        "{at}: the mirrored records changed"
    );
    let mut aborted = vec![];
    let mut resets = 0;
    for batch in Batches::new(bytes.slice(mirrored.len()..)) {
        let batch = batch.unwrap();
        match batch.control_record().unwrap().map(|c| c.kind) {
            Some(ControlRecordType::Abort) => {
                assert_eq!(resets, 0, "{at}: an ABORT marker after the barrier");
                aborted.push(batch.producer_id().get());
            }
            Some(ControlRecordType::MirrorPidReset) => resets += 1,
            other => panic!("{at}: the stop wrote {other:?}"),
        }
    }
    aborted.sort();
    aborted.dedup();
    assert_eq!(
        aborted, OPEN,
        "{at}: not every open transaction was aborted"
    );
    assert_eq!(resets, 1, "{at}: one MIRROR_PID_RESET per partition");
    let log = h.read();
    assert_eq!(log.producer_state().ongoing_txns().count(), 0, "{at}");
    assert!(log.log_end_offset() > Offset(5), "{at}");
}

#[test]
fn a_stop_cut_at_any_durable_point_is_finished_by_the_next_stop() {
    let (n, mirrored, total) = stop_crashing_after(None, 0);
    check(&n, &mirrored, "no crash");
    assert!(total >= 3, "the stop completed {total} syncs");
    for k in 0..=total {
        // Nothing, part of an ABORT marker, one marker, both, all of the unsynced tail.
        for torn in [0, 40, 80, 160, 240, 1 << 20] {
            let (n, mirrored, _) = stop_crashing_after(Some(k), torn);
            check(
                &n,
                &mirrored,
                &format!("crash after {k} of the stop's {total} syncs, {torn} torn bytes"),
            );
        }
    }
}
