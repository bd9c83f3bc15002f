//! Helpers for the engine's scenario tests.
#![allow(dead_code)]

use bytes::Bytes;
use mirrorlog_engine::clock::{Clock, ManualClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_index::{
    AbortedTxn, LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs,
};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::{BatchBuilder, Compression};
use std::path::Path;
use std::sync::Arc;

pub const T0: i64 = 1_700_000_000_000;

pub fn clock() -> Arc<ManualClock> {
    ManualClock::new(T0)
}

pub fn small_config() -> LogConfig {
    let mut c = LogConfig::default();
    c.segment.segment_bytes_max = 4096;
    c.segment.index_interval_bytes = 256;
    c.segment.index_bytes_max = 4096;
    c
}

pub fn open(
    dir: &Path,
    config: LogConfig,
    clock: Arc<dyn Clock>,
    shutdown: Shutdown,
) -> PartitionLog {
    open_with(
        Arc::new(PwriteStorage::new()),
        dir,
        config,
        clock,
        shutdown,
        OpenOffsets::default(),
    )
}

pub fn open_with(
    storage: Arc<dyn Storage>,
    dir: &Path,
    config: LogConfig,
    clock: Arc<dyn Clock>,
    shutdown: Shutdown,
    offsets: OpenOffsets,
) -> PartitionLog {
    PartitionLog::open(storage, dir, "t-0", config, clock, shutdown, offsets)
        .unwrap()
        .0
}

/// Reopens the log in `dir` after a crash (`Shutdown::Unclean`) with `small_config` and the
/// checkpointed `offsets`, with the load report.
pub fn reopen_unclean(
    dir: &Path,
    clock: Arc<dyn Clock>,
    offsets: OpenOffsets,
) -> (PartitionLog, mirrorlog_engine::log::LoadReport) {
    PartitionLog::open(
        Arc::new(PwriteStorage::new()),
        dir,
        "t-0",
        small_config(),
        clock,
        Shutdown::Unclean,
        offsets,
    )
    .unwrap()
}

/// [`reopen_unclean`] with no checkpointed offsets, checking that recovery found no problem and
/// cut nothing.
pub fn reopen_unclean_intact(dir: &Path, clock: Arc<dyn Clock>) -> PartitionLog {
    let (log, report) = reopen_unclean(dir, clock, OpenOffsets::default());
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.bytes_truncated, 0);
    log
}

/// A client batch (base offset 0) of `n` records `v{i}`.
pub fn client_batch(n: usize, ts: i64) -> Bytes {
    let mut b = BatchBuilder::new();
    for i in 0..n {
        b.append(
            TimestampMs(ts),
            Some(format!("k{i}").as_bytes()),
            Some(format!("v{i}").as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

/// An idempotent or transactional client batch.
pub fn producer_batch(pid: i64, epoch: i16, seq: i32, n: usize, txn: bool, ts: i64) -> Bytes {
    let mut b = BatchBuilder::new()
        .producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(seq))
        .transactional(txn);
    for i in 0..n {
        b.append(
            TimestampMs(ts),
            None,
            Some(format!("p{pid}-{}", seq as usize + i).as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

/// A replica batch as a leader wrote it: offsets and epoch set.
pub fn replica_batch(base: i64, n: usize, epoch: i32, codec: Compression, ts: i64) -> Bytes {
    let mut b = BatchBuilder::new()
        .base_offset(Offset(base))
        .partition_leader_epoch(LeaderEpoch(epoch))
        .compression(codec);
    for i in 0..n {
        b.append(
            TimestampMs(ts + i as i64),
            None,
            Some(format!("r{}", base + i as i64).as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

pub fn marker(pid: i64, epoch: i16, commit: bool, ts: i64) -> Bytes {
    BatchBuilder::end_txn_marker(
        ProducerId(pid),
        ProducerEpoch(epoch),
        commit,
        0,
        TimestampMs(ts),
    )
    .build()
    .into_bytes()
}

/// Appends producer 42's batches `from..to` (one record each, epoch 1, at `T0`).
pub fn append_producer_42(log: &mut PartitionLog, from: i32, to: i32) {
    for seq in from..to {
        log.append_as_leader(
            producer_batch(42, 1, seq, 1, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
}

/// A log in `dir` (`small_config`, opened clean) of producer 42's 100 two-record batches,
/// sequences 0..200, over several segments.
pub fn producer_42_log(dir: &Path, clock: Arc<dyn Clock>) -> PartitionLog {
    let mut log = open(dir, small_config(), clock, Shutdown::Clean);
    for i in 0..100 {
        log.append_as_leader(
            producer_batch(42, 1, i * 2, 2, false, T0),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    log
}

/// A log in `dir` of 200 two-record replica batches (offsets 0..400, leader epoch 0) over at
/// least four segments of `small_config`, closed cleanly. Returns its segments' base offsets.
pub fn closed_replica_log(dir: &Path, clock: Arc<dyn Clock>) -> Vec<Offset> {
    let mut log = open(dir, small_config(), clock, Shutdown::Clean);
    for i in 0..200 {
        log.append_as_follower(
            replica_batch(i * 2, 2, 0, Compression::None, T0),
            mirrorlog_engine::log::ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 4);
    log.close().unwrap();
    bases
}

/// Flips a bit 40 bytes into the third batch of the segment at `base` in `dir` (its CRC no
/// longer matches). Returns that batch as it was.
pub fn corrupt_third_batch(dir: &Path, base: Offset) -> mirrorlog_segment::RecordBatch {
    let victim = dir.join(format!("{:020}.log", base.get()));
    let mut bytes = std::fs::read(&victim).unwrap();
    let batches: Vec<_> = mirrorlog_segment::batch::Batches::new(bytes.clone().into())
        .map(|b| b.unwrap())
        .collect();
    let bad = batches[2].clone();
    bytes[bad.position() as usize + 40] ^= 0x01;
    std::fs::write(&victim, &bytes).unwrap();
    bad
}

/// Every record value readable from `start` to the log end, in order.
pub fn values(log: &PartitionLog, start: Offset) -> Vec<(i64, String)> {
    use mirrorlog_engine::log::FetchIsolation;
    let mut out = vec![];
    let mut at = start;
    while at < log.log_end_offset() {
        let info = log.read(at, 1 << 20, FetchIsolation::LogEnd, true).unwrap();
        let Some(d) = info.records else { break };
        let bytes = d.slice.read_all().unwrap();
        let mut last = at;
        for b in mirrorlog_segment::batch::Batches::new(bytes) {
            let b = b.unwrap();
            if !b.is_control() {
                for r in b.records().unwrap() {
                    let r = r.unwrap();
                    if r.offset >= at {
                        out.push((
                            r.offset.get(),
                            String::from_utf8_lossy(r.value.as_deref().unwrap_or(b"")).into_owned(),
                        ));
                    }
                }
            }
            last = b.next_offset();
        }
        at = last;
    }
    out
}

/// Two data directories (`d1`, `d2`) on one simulated storage, for the tests of a directory
/// that fails while the others keep working.
pub struct TwoDirSim {
    pub d1: tempfile::TempDir,
    pub d2: tempfile::TempDir,
    pub sim: Arc<mirrorlog_segment::io::SimStorage>,
}

impl TwoDirSim {
    pub fn new() -> TwoDirSim {
        TwoDirSim {
            d1: tempfile::tempdir().unwrap(),
            d2: tempfile::tempdir().unwrap(),
            sim: Arc::new(mirrorlog_segment::io::SimStorage::new()),
        }
    }

    /// A `LogManager` over both directories: `small_config`, one recovery thread.
    pub fn open(
        &self,
    ) -> (
        mirrorlog_engine::manager::LogManager,
        mirrorlog_engine::manager::ManagerLoadReport,
    ) {
        let mut cfg = mirrorlog_engine::manager::LogManagerConfig::new(self.d1.path());
        cfg.data_dirs = vec![self.d1.path().to_path_buf(), self.d2.path().to_path_buf()];
        cfg.default_log_config = small_config();
        cfg.recovery_threads = 1;
        let storage: Arc<dyn Storage> = self.sim.clone();
        mirrorlog_engine::manager::LogManager::open(cfg, storage, clock()).unwrap()
    }
}

/// Creates `orders-0` .. `orders-{n - 1}` (topic id `[7; 16]`, `small_config`) in `mgr`, two
/// records each, appended without a sync.
pub fn orders_with_two_records(mgr: &mirrorlog_engine::manager::LogManager, n: i32) {
    for p in 0..n {
        let h = mgr
            .create(
                &orders(p),
                mirrorlog_index::TopicId([7; 16]),
                small_config(),
            )
            .unwrap();
        h.write()
            .append_as_leader(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
            .unwrap();
    }
}

/// Partition `p` of topic `orders`.
pub fn orders(p: i32) -> mirrorlog_index::TopicPartition {
    mirrorlog_index::TopicPartition {
        topic: "orders".into(),
        partition: p,
    }
}

/// A single-directory `LogManager` in `dir` over the simulated storage `sim`, `small_config`.
pub fn sim_manager(
    sim: &mirrorlog_segment::io::SimStorage,
    dir: &Path,
) -> mirrorlog_engine::manager::LogManager {
    let mut cfg = mirrorlog_engine::manager::LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    mirrorlog_engine::manager::LogManager::open(cfg, storage, clock())
        .unwrap()
        .0
}

/// Partition `orders-0` (topic id `[7; 16]`, `small_config`) of a [`sim_manager`] in a temporary
/// directory of its own: the directory, the storage, the manager and the partition.
pub fn sim_orders() -> (
    tempfile::TempDir,
    mirrorlog_segment::io::SimStorage,
    mirrorlog_engine::manager::LogManager,
    Arc<mirrorlog_engine::manager::PartitionHandle>,
) {
    let d = tempfile::tempdir().unwrap();
    let sim = mirrorlog_segment::io::SimStorage::new();
    let mgr = sim_manager(&sim, d.path());
    let h = mgr
        .create(
            &orders(0),
            mirrorlog_index::TopicId([7; 16]),
            small_config(),
        )
        .unwrap();
    (d, sim, mgr, h)
}

/// A batch of one record with key `k` and `value`, at `T0`.
pub fn keyed_batch(value: &str) -> Bytes {
    let mut b = BatchBuilder::new();
    b.append(TimestampMs(T0), Some(b"k"), Some(value.as_bytes()), &[]);
    b.build().into_bytes()
}

/// `tp`'s entry in `dir`'s `log-start-offset-checkpoint` as a crash of `sim` now would keep it
/// (the checkpoint lives in the manager's storage).
pub fn checkpointed_log_start(
    sim: &mirrorlog_segment::io::SimStorage,
    dir: &Path,
    tp: &mirrorlog_index::TopicPartition,
) -> Option<Offset> {
    let path = dir.join(mirrorlog_engine::manager::LOG_START_CHECKPOINT);
    let crashed = sim.crash(mirrorlog_segment::io::TornTail::None);
    let bytes = crashed.file_bytes(&path).unwrap_or_default();
    mirrorlog_index::checkpoint::decode_offset_checkpoint(&path, &bytes)
        .unwrap()
        .get(tp)
        .copied()
}

/// A single-directory `LogManager` in `dir` on the pwrite backend, `small_config`.
pub fn pwrite_manager(dir: &Path) -> mirrorlog_engine::manager::LogManager {
    let mut cfg = mirrorlog_engine::manager::LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    mirrorlog_engine::manager::LogManager::open(cfg, storage, clock())
        .unwrap()
        .0
}

/// Producer 1's aborted transaction as its leader appends it, at `T0`: two transactional
/// records from the client (offsets 0 and 1), then the coordinator's ABORT marker (offset 2).
pub fn aborted_txn() -> [(Bytes, LeaderOrigin); 2] {
    [
        (producer_batch(1, 0, 0, 2, true, T0), LeaderOrigin::Client),
        (marker(1, 0, false, T0), LeaderOrigin::Coordinator),
    ]
}

/// The aborted transactions a READ_COMMITTED fetch of the whole log lists once the high
/// watermark is at `hw`.
pub fn read_committed_aborted(log: &mut PartitionLog, hw: Offset) -> Option<Vec<AbortedTxn>> {
    log.update_high_watermark(hw);
    log.read(Offset(0), 1 << 20, FetchIsolation::TxnCommitted, true)
        .unwrap()
        .aborted_transactions
}

/// A log in `dir` with every batch indexed (`index.interval.bytes` 0, so Kafka's index-based
/// upper bound of a read's aborted transactions is exact) holding 50 transactions of producer 1,
/// each one record then an ABORT marker (offsets 2i, 2i+1), all below the high watermark (100).
pub fn fifty_aborted_txns_every_batch_indexed(dir: &Path) -> PartitionLog {
    let mut c = small_config();
    c.segment.index_interval_bytes = 0;
    let mut log = open(dir, c, clock(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    for i in 0..50 {
        log.append_as_leader(
            producer_batch(1, 0, i, 1, true, T0),
            e,
            LeaderOrigin::Client,
        )
        .unwrap();
        log.append_as_leader(marker(1, 0, false, T0), e, LeaderOrigin::Coordinator)
            .unwrap();
    }
    log.update_high_watermark(Offset(100));
    assert_eq!(log.last_stable_offset(), Offset(100));
    log
}
