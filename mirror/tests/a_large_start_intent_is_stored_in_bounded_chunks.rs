//! Scenario: a start of a topic of thousands of partitions, each with a stored state that
//! carries a long failure reason, records its start intent; and the power is cut between the
//! writes of such an intent.
//!
//! The intent held every partition's previous state in one `__mirror_state` record: 10000
//! partitions with 1000-byte reasons made a 10.5 MB record (ten times Kafka's default
//! `max.message.bytes`), and 105000 of them a batch over `segment.bytes`, which the engine
//! refused, so the start failed. Now a value over `intent_chunk_bytes` is written as chunks and
//! then a head naming them, and a crash between the writes leaves the intent stored before it
//! (or none), whole.

use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::FetchIsolation;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::TopicPartition;
use mirrorlog_mirror::state::{
    INTENT_CHUNK_BYTES, KEY_TYPE_START_INTENT_CHUNK, MIRROR_STATE_TOPIC, MirrorStateStore,
    PartitionMirrorState, RetryBackoff, StartIntent, TopicBefore, encode_intent_value,
};
use mirrorlog_segment::Batches;
use mirrorlog_segment::io::{PwriteStorage, SimStorage, Storage, TornTail};
use std::path::Path;
use std::sync::Arc;

const PARTITIONS: i32 = 3;
const ID: [u8; 16] = [7; 16];
/// A chunk key of mirror `east`: type, name length, name, topic id, partition, generation,
/// index.
const CHUNK_KEY_BYTES: usize = 2 + 2 + 4 + 16 + 4 + 4 + 4;

fn open(dir: &Path, storage: Arc<dyn Storage>) -> (Arc<LogManager>, MirrorStateStore) {
    let (mgr, _) =
        LogManager::open(LogManagerConfig::new(dir), storage, ManualClock::new(1_000)).unwrap();
    let mgr = Arc::new(mgr);
    let store = MirrorStateStore::open(mgr.clone(), PARTITIONS).unwrap();
    (mgr, store)
}

/// An intent of a topic of `partitions` partitions, each FAILED with a reason of
/// `reason_bytes` bytes (its text tells intents apart).
fn intent(partitions: i32, reason_bytes: usize, text: &str) -> StartIntent {
    let reason: String = text.chars().cycle().take(reason_bytes).collect();
    let partitions = (0..partitions)
        .map(|p| {
            let mut st = PartitionMirrorState::new("east", ID, p);
            st.fail(&reason, true, 0, 1, &RetryBackoff::default())
                .unwrap();
            (p, Some(st))
        })
        .collect();
    StartIntent {
        mirror: "east".into(),
        topic_id: ID,
        topic: "orders".into(),
        topic_before: TopicBefore::ReadOnly,
        configs_before: vec![("retention.ms".into(), "1".into())],
        partitions,
    }
}

/// Every `__mirror_state` batch: its size and its records' (key type, key and value size).
fn batches(mgr: &LogManager) -> Vec<(usize, Vec<(i16, usize)>)> {
    let mut out = vec![];
    for p in 0..PARTITIONS {
        let tp = TopicPartition {
            topic: MIRROR_STATE_TOPIC.into(),
            partition: p,
        };
        let h = mgr.get(&tp).unwrap();
        let log = h.read();
        let mut next = log.log_start_offset();
        while next < log.log_end_offset() {
            let info = log
                .read(next, 1 << 20, FetchIsolation::LogEnd, true)
                .unwrap();
            let bytes = info.records.unwrap().slice.read_all().unwrap();
            for batch in Batches::new(bytes) {
                let batch = batch.unwrap();
                let records = (batch.records().unwrap())
                    .map(|r| {
                        let r = r.unwrap();
                        let key = r.key.unwrap();
                        let size = key.len() + r.value.map_or(0, |v| v.len());
                        (i16::from_be_bytes([key[0], key[1]]), size)
                    })
                    .collect();
                out.push((batch.size_bytes(), records));
                next = batch.next_offset();
            }
        }
    }
    out
}

/// 10000 partitions with 1000-byte reasons: no record or batch over the chunk size (and so
/// none near Kafka's 1 MiB), the intent back whole after a reopen, and none (no chunk either)
/// after its deletion.
#[test]
fn an_intent_of_ten_thousand_failed_partitions_is_stored_in_bounded_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let (mgr, store) = open(dir.path(), Arc::new(PwriteStorage::new()));
    let big = intent(
        10_000,
        1000,
        "the source answered UNKNOWN_TOPIC_OR_PARTITION ",
    );
    store.put_start_intent(&big).unwrap();
    let written = batches(&mgr);
    let largest = written.iter().map(|(b, _)| *b).max().unwrap();
    assert!(
        largest <= INTENT_CHUNK_BYTES + 1024,
        "a batch of {largest} bytes"
    );
    let chunks = (written.iter().flat_map(|(_, r)| r))
        .filter(|(t, _)| *t == KEY_TYPE_START_INTENT_CHUNK)
        .count();
    assert!(chunks >= 20, "{chunks} chunks");
    drop(store);
    let (mgr, store) = open(dir.path(), Arc::new(PwriteStorage::new()));
    assert_eq!(store.start_intents("east"), vec![big.clone()]);
    assert!(store.delete_start_intent(&big.key()).unwrap());
    drop(store);
    let (_mgr, store) = open(dir.path(), Arc::new(PwriteStorage::new()));
    assert!(store.start_intents("east").is_empty());
    // Every chunk was tombstoned (in one batch), after the head.
    let last = batches(&mgr)
        .into_iter()
        .map(|(_, r)| r)
        .rfind(|r| r.iter().all(|(t, _)| *t == KEY_TYPE_START_INTENT_CHUNK))
        .unwrap();
    assert_eq!(last.len(), chunks);
    assert!(last.iter().all(|(_, size)| *size == CHUNK_KEY_BYTES));
}

/// The power cut after each sync of a chunked intent's write over an older chunked intent of
/// the same key, then of its deletion: after each crash the store opens, and holds the older
/// intent or the new one (none, for the deletion), whole; a later write and the compaction
/// stand-in leave out the chunks no head names.
#[test]
fn a_crash_between_the_chunks_writes_leaves_one_intent_whole() {
    let old = intent(4, 100, "old ");
    let new = intent(6, 100, "new ");
    let setup = || {
        let dir = tempfile::tempdir().unwrap();
        let sim = SimStorage::new();
        let (_, store) = open(dir.path(), Arc::new(sim.clone()));
        store.set_intent_chunk_bytes(300);
        store.put_start_intent(&old).unwrap();
        (dir, sim, store)
    };
    let run = |halt: Option<u64>, delete: bool| {
        let (dir, sim, store) = setup();
        if delete {
            store.put_start_intent(&new).unwrap();
        }
        let base = sim.syncs_completed();
        if let Some(k) = halt {
            sim.halt_after_syncs(base + k);
        }
        let r = if delete {
            store.delete_start_intent(&new.key()).map(drop)
        } else {
            store.put_start_intent(&new)
        };
        let done = sim.syncs_completed() - base;
        if halt.is_none() {
            r.unwrap();
        }
        drop(store);
        let crashed = sim.crash(TornTail::None);
        (dir, crashed, done)
    };
    let old_chunks = encode_intent_value(&old).len().div_ceil(300);
    for delete in [false, true] {
        let (_, _, total) = run(None, delete);
        // Chunks, then the head, then the older chunks' tombstones; the head's tombstone,
        // then its chunks'.
        let least = if delete { 2 } else { 5 };
        assert!(total >= least, "delete {delete}: {total} syncs");
        let mut seen = vec![];
        for k in 0..=total {
            let at = format!("delete {delete}: crash after {k} of {total} syncs");
            let (dir, crashed, _) = run(Some(k), delete);
            let (mgr, store) = open(dir.path(), Arc::new(crashed.clone()));
            let got = store.start_intents("east");
            let which = match got.as_slice() {
                [] if delete => "none",
                [i] if *i == old && !delete => "old",
                [i] if *i == new => "new",
                other => panic!("{at}: {other:?}"),
            };
            seen.push(which);
            // Writing again over what the crash left, with the compaction stand-in running at
            // each write: the log keeps that intent and only the chunks its head names.
            store.set_intent_chunk_bytes(300);
            store.set_compaction_min_dirty_records(1);
            store.put_start_intent(&old).unwrap();
            let chunks = (batches(&mgr).iter().flat_map(|(_, r)| r.clone()))
                .filter(|(t, size)| *t == KEY_TYPE_START_INTENT_CHUNK && *size > CHUNK_KEY_BYTES)
                .count();
            assert_eq!(chunks, old_chunks, "{at}: chunks with a value in the log");
            drop((store, mgr));
            let (_, store) = open(dir.path(), Arc::new(crashed));
            assert_eq!(store.start_intents("east"), vec![old.clone()], "{at}");
        }
        let whole = if delete {
            ["new", "none"]
        } else {
            ["old", "new"]
        };
        assert_eq!(seen.first(), Some(&whole[0]), "{seen:?}");
        assert_eq!(seen.last(), Some(&whole[1]), "{seen:?}");
    }
}
