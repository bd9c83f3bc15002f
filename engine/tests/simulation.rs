//! Seeded simulation of one partition log against a simple in-memory model.
//!
//! One seed drives a random workload on the simulated storage backend: client appends
//! (plain, idempotent, transactional), coordinator markers, mirror appends of a source's batches
//! (with their own producer ids and epochs), MIRROR_PID_RESET barriers, leader-epoch bumps, rolls,
//! truncations (some below the log start), full truncations (`truncate_fully_and_start_at`, as a
//! follower or a mirror does when the leader's log start is past its end: below the log start,
//! inside the log, at its end or above it; some followed by a crash), DeleteRecords and time
//! retention (some raising the log start above the flushed end), flushes, periodic checkpoints of the log start, recovery
//! point and high watermark without a flush (as `LogManager::checkpoint`), crashes with torn
//! tails, and clean reopens. After every step the log is checked against the model: offsets,
//! every record value, the producers held (none from before the last reset), the last stable
//! offset, epoch-cache order, and log start ≤ high watermark ≤ log end. After a crash the log
//! must be a prefix of the model that holds everything flushed, with Kafka's recovery rule: a
//! checkpointed log start above the recovered end restarts the log empty at that log start (no
//! offset below it is handed out again); the log-start checkpoint never lags a truncation that
//! lowered the log start, so a crash never raises the log start it had. The test prints how often
//! each of these paths ran.
//!
//! A failure prints its seed; replay one with `MIRRORLOG_SIM_SEED=<seed>`; run more with
//! `MIRRORLOG_SIM_SEEDS=<n>` (default 24 seeds × 250 steps).

mod common;

use bytes::Bytes;
use common::T0;
use mirrorlog_engine::clock::{Clock, ManualClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::error::EngineResult;
use mirrorlog_engine::log::{
    FetchIsolation, LeaderOrigin, LogStartListener, OpenOffsets, PartitionLog, ReplicaOrigin,
    Shutdown,
};
use mirrorlog_index::{LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};
use mirrorlog_segment::{BatchBuilder, Compression};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

use std::sync::{Arc, Mutex};

/// The log-start checkpoint a log manager keeps: written at each periodic checkpoint (and flush)
/// and, as the manager's listener does, at once whenever a truncation lowers the log start.
#[derive(Debug)]
struct CheckpointedLogStart(Mutex<Offset>);

impl LogStartListener for CheckpointedLogStart {
    fn log_start_lowered(&self, new_start: Offset) -> EngineResult<()> {
        *self.0.lock().unwrap() = new_start;
        Ok(())
    }
}

#[derive(Debug, Clone)]
enum Kind {
    Data {
        pid: Option<(i64, i16, i32)>,
        txn: bool,
        values: Vec<String>,
    },
    Marker {
        pid: i64,
        commit: bool,
    },
    Reset,
}

#[derive(Debug, Clone)]
struct MBatch {
    base: i64,
    last: i64,
    epoch: i32,
    /// The batch's (max) timestamp: the clock when it was built (the clock never goes back).
    ts: i64,
    kind: Kind,
}

#[derive(Debug, Default)]
struct Model {
    batches: Vec<MBatch>,
    log_start: i64,
    /// The highest log start so far: producer state may forget producers below it, and a crash
    /// can bring the log start back down (its checkpoint lags) without bringing them back.
    log_start_high: i64,
    /// What the log-start checkpoint must hold: the log start at the last checkpoint, lowered at
    /// once by every truncation below it (never raised in between).
    checkpointed_start: i64,
    /// Where a truncation below the log start emptied the readable log (its end and new start):
    /// the log rebuilds its producer state from there, as Kafka's `rebuildProducerState` replays
    /// from the log start, so a transaction still open at that point is forgotten (no longer
    /// holding back the LSO, never completed) — unless a crash's recovery brings it back, when
    /// the floor is dropped (`Sim::sync_txn_floors`). Increasing: a truncation drops the floors
    /// past it.
    txn_floors: Vec<i64>,
}

impl Model {
    /// Passes the floors at or below `offset` (see [`Model::txn_floors`]): whether any was.
    fn pass_floors(
        floors: &mut std::iter::Peekable<std::slice::Iter<'_, i64>>,
        offset: i64,
    ) -> bool {
        let mut passed = false;
        while floors.next_if(|f| **f <= offset).is_some() {
            passed = true;
        }
        passed
    }
    fn leo(&self) -> i64 {
        self.batches
            .last()
            .map_or(self.log_start.max(0), |b| b.last + 1)
            .max(self.log_start)
    }
    fn values(&self) -> Vec<(i64, String)> {
        let mut out = vec![];
        for b in &self.batches {
            if let Kind::Data { values, .. } = &b.kind {
                for (i, v) in values.iter().enumerate() {
                    let o = b.base + i as i64;
                    if o >= self.log_start {
                        out.push((o, v.clone()));
                    }
                }
            }
        }
        out
    }
    /// Producers seen since the last reset, in batches ending at or after `from`.
    fn producers(&self, from: i64) -> BTreeSet<i64> {
        let start = self
            .batches
            .iter()
            .rposition(|b| matches!(b.kind, Kind::Reset))
            .map_or(0, |i| i + 1);
        let mut s = BTreeSet::new();
        for b in self.batches[start..].iter().filter(|b| b.last >= from) {
            match &b.kind {
                Kind::Data {
                    pid: Some((p, ..)), ..
                } => {
                    s.insert(*p);
                }
                Kind::Marker { pid, .. } => {
                    s.insert(*pid);
                }
                _ => {}
            }
        }
        s
    }
    /// First offsets of open transactions (a reset drops those opened before it).
    fn open_txns(&self) -> BTreeMap<i64, i64> {
        let mut open = BTreeMap::new();
        let mut floors = self.txn_floors.iter().peekable();
        for b in &self.batches {
            if Self::pass_floors(&mut floors, b.base) {
                open.clear();
            }
            match &b.kind {
                Kind::Data {
                    pid: Some((p, ..)),
                    txn: true,
                    ..
                } => {
                    open.entry(*p).or_insert(b.base);
                }
                Kind::Marker { pid, .. } => {
                    open.remove(pid);
                }
                Kind::Reset => open.clear(),
                _ => {}
            }
        }
        if floors.next().is_some() {
            open.clear();
        }
        open
    }
    /// Every transaction as (first offset, marker offset or i64::MAX while open); a reset ends
    /// the open ones.
    fn txn_spans(&self) -> Vec<(i64, i64)> {
        let mut open: BTreeMap<i64, i64> = BTreeMap::new();
        let mut out = vec![];
        let mut floors = self.txn_floors.iter().peekable();
        for b in &self.batches {
            if Self::pass_floors(&mut floors, b.base) {
                open.clear();
            }
            match &b.kind {
                Kind::Data {
                    pid: Some((p, ..)),
                    txn: true,
                    ..
                } => {
                    open.entry(*p).or_insert(b.base);
                }
                Kind::Marker { pid, .. } => {
                    if let Some(f) = open.remove(pid) {
                        out.push((f, b.base));
                    }
                }
                Kind::Reset => {
                    out.extend(std::mem::take(&mut open).into_values().map(|f| (f, b.base)))
                }
                _ => {}
            }
        }
        if floors.next().is_some() {
            open.clear();
        }
        out.extend(open.into_values().map(|f| (f, i64::MAX)));
        out
    }

    /// Aborted transactions as (producer, first offset, marker offset) with a marker at or after
    /// `from`: what the transaction index must hold.
    fn aborted(&self, from: i64) -> Vec<(i64, i64, i64)> {
        let mut open: BTreeMap<i64, i64> = BTreeMap::new();
        let mut out = vec![];
        let mut floors = self.txn_floors.iter().peekable();
        for b in &self.batches {
            if Self::pass_floors(&mut floors, b.base) {
                open.clear();
            }
            match &b.kind {
                Kind::Data {
                    pid: Some((p, ..)),
                    txn: true,
                    ..
                } => {
                    open.entry(*p).or_insert(b.base);
                }
                Kind::Marker { pid, commit } => {
                    if let Some(f) = open.remove(pid)
                        && !commit
                        && b.base >= from
                    {
                        out.push((*pid, f, b.base));
                    }
                }
                Kind::Reset => open.clear(),
                _ => {}
            }
        }
        out.sort();
        out
    }

    /// Next (epoch, sequence) for an idempotent producer, from what the log holds.
    fn next_seq(&self, pid: i64) -> (i16, i32) {
        for b in self.batches.iter().rev() {
            if let Kind::Data {
                pid: Some((p, e, s)),
                values,
                ..
            } = &b.kind
                && *p == pid
            {
                return (*e, s + values.len() as i32);
            }
        }
        (0, 0)
    }
    fn truncate_to(&mut self, offset: i64) {
        // Batch-granular: the end is the base of the first batch removed, which may fall below
        // the target and even below the log start (which then follows it).
        let end = match self.batches.iter().find(|b| b.last >= offset) {
            Some(first_removed) => first_removed.base,
            None => return,
        };
        self.batches.retain(|b| b.last < offset);
        self.txn_floors.retain(|f| *f <= end);
        if end < self.log_start {
            // The log start goes down, and its checkpoint with it before the truncation returns.
            self.checkpointed_start = end;
            // Nothing is left to read: the producer state is rebuilt from here.
            self.txn_floors.push(end);
        }
        self.log_start = self.log_start.min(end);
        self.log_start_high = self.log_start_high.min(end);
    }
}

impl Model {
    /// Kafka's `truncateFullyAndStartAt`: nothing left, the log (start and end) at `offset`.
    fn truncate_fully_and_start_at(&mut self, offset: i64) {
        if offset < self.log_start {
            // Lowered: the checkpoint follows before the truncation returns.
            self.checkpointed_start = offset;
        }
        self.batches.clear();
        self.txn_floors.clear();
        self.log_start = offset;
        // No batch below it is left, so no producer below it need be remembered.
        self.log_start_high = offset;
    }
}

struct Sim {
    rng: SmallRng,
    sim: SimStorage,
    dir: tempfile::TempDir,
    clock: Arc<ManualClock>,
    log: Option<PartitionLog>,
    model: Model,
    epoch: i32,
    /// The offsets a log manager would have checkpointed at the last checkpoint (the log start
    /// is in `log_start_checkpoint`).
    checkpoint: OpenOffsets,
    log_start_checkpoint: Arc<CheckpointedLogStart>,
    flushed_leo: i64,
    steps: usize,
    stats: Stats,
}

/// What a run exercised, summed over the seeds in the test's summary.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    /// Periodic checkpoints taken without a flush.
    checkpoints: u64,
    /// DeleteRecords that raised the log start above the durable (flushed) end.
    delete_records_above_durable: u64,
    /// Retention runs that raised the log start.
    retention_raises: u64,
    /// Truncations below the log start.
    truncations_below_start: u64,
    /// Crashes with a checkpointed log start above the durable end.
    crashes_start_above_durable: u64,
    /// Crashes after which the log restarted empty at its checkpointed log start.
    restarts: u64,
    /// Full truncations (`truncate_fully_and_start_at`) below the log start, between it and the
    /// log end, at the log end and above it.
    full_truncations: [u64; 4],
    /// Crashes right after a full truncation (and a few unflushed appends at most).
    crashes_after_full_truncation: u64,
}

impl std::ops::AddAssign for Stats {
    fn add_assign(&mut self, o: Stats) {
        self.checkpoints += o.checkpoints;
        self.delete_records_above_durable += o.delete_records_above_durable;
        self.retention_raises += o.retention_raises;
        self.crashes_start_above_durable += o.crashes_start_above_durable;
        self.truncations_below_start += o.truncations_below_start;
        self.restarts += o.restarts;
        for (a, b) in self.full_truncations.iter_mut().zip(o.full_truncations) {
            *a += b;
        }
        self.crashes_after_full_truncation += o.crashes_after_full_truncation;
    }
}

/// The regular files directly in `dir` with their bytes (the real directory holds no others).
fn real_files(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            assert!(path.is_file(), "unexpected {}", path.display());
            assert!(
                !path.ends_with("leader-epoch-checkpoint"),
                "the epoch checkpoint bypasses the simulated storage: {}",
                path.display()
            );
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect()
}

fn config() -> LogConfig {
    let mut c = LogConfig::default();
    c.segment.segment_bytes_max = 2048;
    c.segment.index_interval_bytes = 200;
    c.segment.index_bytes_max = 1024;
    c.producer_id_expiration_ms = i32::MAX as i64;
    c.timestamp_after_max_ms = i64::MAX;
    c
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let sim = SimStorage::new();
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(T0);
        let storage: Arc<dyn Storage> = Arc::new(sim.clone());
        let (mut log, _) = PartitionLog::open(
            storage,
            dir.path(),
            "sim-0",
            config(),
            clock.clone(),
            Shutdown::Clean,
            OpenOffsets::default(),
        )
        .unwrap();
        let log_start_checkpoint = Arc::new(CheckpointedLogStart(Mutex::new(Offset(0))));
        log.set_log_start_listener(Some(log_start_checkpoint.clone()));
        Sim {
            rng: SmallRng::seed_from_u64(seed),
            sim,
            dir,
            clock,
            log: Some(log),
            model: Model::default(),
            epoch: 0,
            checkpoint: OpenOffsets::default(),
            log_start_checkpoint,
            flushed_leo: 0,
            steps: 0,
            stats: Stats::default(),
        }
    }

    fn log(&mut self) -> &mut PartitionLog {
        self.log.as_mut().unwrap()
    }

    fn values(&mut self, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| format!("v{}", self.rng.random_range(0..1_000_000u32)))
            .collect()
    }

    fn codec(&mut self) -> Compression {
        [
            Compression::None,
            Compression::None,
            Compression::Gzip,
            Compression::Lz4,
            Compression::Zstd,
            Compression::Snappy,
        ][self.rng.random_range(0..6)]
    }

    fn build(
        &mut self,
        base: i64,
        epoch: i32,
        pid: Option<(i64, i16, i32)>,
        txn: bool,
        values: &[String],
    ) -> Bytes {
        let codec = self.codec();
        let mut b = BatchBuilder::new()
            .base_offset(Offset(base))
            .partition_leader_epoch(LeaderEpoch(epoch))
            .compression(codec)
            .transactional(txn);
        if let Some((p, e, s)) = pid {
            b = b.producer(ProducerId(p), ProducerEpoch(e), Sequence(s));
        }
        for v in values {
            b.append(
                TimestampMs(self.clock.now_ms()),
                None,
                Some(v.as_bytes()),
                &[],
            );
        }
        b.build().into_bytes()
    }

    fn leader_data(&mut self, pid: Option<i64>, txn: bool) {
        let n = self.rng.random_range(1..6);
        let values = self.values(n);
        let pid = pid.map(|p| {
            let (e, s) = self.model.next_seq(p);
            (p, e, s)
        });
        let bytes = self.build(0, -1, pid, txn, &values);
        let epoch = self.epoch;
        let info = self
            .log()
            .append_as_leader(bytes, LeaderEpoch(epoch), LeaderOrigin::Client)
            .unwrap();
        assert!(!info.duplicate);
        assert_eq!(info.first_offset.get(), self.model.leo());
        self.model.batches.push(MBatch {
            base: info.first_offset.get(),
            last: info.last_offset.get(),
            epoch,
            ts: self.clock.now_ms(),
            kind: Kind::Data { pid, txn, values },
        });
    }

    fn marker(&mut self, pid: i64, commit: bool) {
        let (e, _) = self.model.next_seq(pid);
        let bytes = BatchBuilder::end_txn_marker(
            ProducerId(pid),
            ProducerEpoch(e),
            commit,
            0,
            TimestampMs(self.clock.now_ms()),
        )
        .build()
        .into_bytes();
        let epoch = self.epoch;
        let info = self
            .log()
            .append_as_leader(bytes, LeaderEpoch(epoch), LeaderOrigin::Coordinator)
            .unwrap();
        self.model.batches.push(MBatch {
            base: info.first_offset.get(),
            last: info.last_offset.get(),
            epoch,
            ts: self.clock.now_ms(),
            kind: Kind::Marker { pid, commit },
        });
    }

    fn mirror(&mut self) {
        // A source's batches: its own producer ids (1000+), transactions, markers, epochs.
        let k = self.rng.random_range(1..5);
        let mut bytes = vec![];
        let mut base = self.model.leo();
        let mut added = vec![];
        for _ in 0..k {
            let pid = 1000 + self.rng.random_range(0..3i64);
            let open = self.model.open_txns().contains_key(&pid) || added.iter().any(|b: &MBatch| matches!(&b.kind, Kind::Data { pid: Some((p, ..)), txn: true, .. } if *p == pid));
            let epoch = self.epoch;
            let b = if open && self.rng.random_bool(0.4) {
                let (e, _) = self.model.next_seq(pid);
                let x = BatchBuilder::end_txn_marker(
                    ProducerId(pid),
                    ProducerEpoch(e),
                    self.rng.random_bool(0.5),
                    0,
                    TimestampMs(self.clock.now_ms()),
                )
                .base_offset(Offset(base))
                .partition_leader_epoch(LeaderEpoch(epoch));
                let commit = matches!(
                    x.build().control_record().unwrap().unwrap().kind,
                    mirrorlog_segment::ControlRecordType::Commit
                );
                bytes.extend_from_slice(x.build().as_bytes());
                MBatch {
                    base,
                    last: base,
                    epoch,
                    ts: self.clock.now_ms(),
                    kind: Kind::Marker { pid, commit },
                }
            } else {
                let n = self.rng.random_range(1..4);
                let values = self.values(n);
                let (e, s) = {
                    // Sequences continue across this append's own batches too.
                    let mut m = Model {
                        batches: self.model.batches.clone(),
                        ..Model::default()
                    };
                    m.batches.extend(added.iter().cloned());
                    m.next_seq(pid)
                };
                let txn = open || self.rng.random_bool(0.3);
                let x = self.build(base, epoch, Some((pid, e, s)), txn, &values);
                bytes.extend_from_slice(&x);
                MBatch {
                    base,
                    last: base + n as i64 - 1,
                    epoch,
                    ts: self.clock.now_ms(),
                    kind: Kind::Data {
                        pid: Some((pid, e, s)),
                        txn,
                        values,
                    },
                }
            };
            base = b.last + 1;
            added.push(b);
        }
        self.log()
            .append_as_follower(bytes.into(), ReplicaOrigin::Mirror)
            .unwrap();
        self.model.batches.extend(added);
    }

    fn reset(&mut self) {
        let bytes =
            BatchBuilder::mirror_pid_reset(Some("source"), TimestampMs(self.clock.now_ms()))
                .build()
                .into_bytes();
        let epoch = self.epoch;
        let info = self
            .log()
            .append_as_leader(bytes, LeaderEpoch(epoch), LeaderOrigin::Coordinator)
            .unwrap();
        self.model.batches.push(MBatch {
            base: info.first_offset.get(),
            last: info.last_offset.get(),
            epoch,
            ts: self.clock.now_ms(),
            kind: Kind::Reset,
        });
    }

    fn flush(&mut self) {
        self.log().flush().unwrap();
        self.flushed_leo = self.log.as_ref().unwrap().log_end_offset().get();
        self.write_checkpoints();
    }

    /// The log manager's periodic checkpoint (`LogManager::checkpoint`): the log start,
    /// recovery point and high watermark as they are now, with no flush, so the log start and
    /// high watermark can be above what a crash keeps.
    fn write_checkpoints(&mut self) {
        let log = self.log.as_ref().unwrap();
        self.checkpoint = OpenOffsets {
            log_start_offset: log.log_start_offset(),
            recovery_point: log.recovery_point(),
            high_watermark: log.high_watermark(),
        };
        *self.log_start_checkpoint.0.lock().unwrap() = log.log_start_offset();
        self.model.checkpointed_start = self.model.log_start;
    }

    /// Retention by time (`delete_old_segments` with a `retention.ms` drawn to cut after a
    /// random sealed segment). The model predicts the segments that go from the batches'
    /// timestamps and the segment layout, and keeps the cut out of transactions as
    /// DeleteRecords does.
    fn retention(&mut self) {
        let bases: Vec<i64> = self
            .log()
            .segment_base_offsets()
            .iter()
            .map(|b| b.get())
            .collect();
        if bases.len() < 2 {
            return;
        }
        let now = self.clock.now_ms();
        // Largest timestamp of each sealed segment (None: no batch, its age is the file's).
        let largest: Vec<Option<i64>> = bases
            .windows(2)
            .map(|w| {
                self.model
                    .batches
                    .iter()
                    .filter(|b| b.base >= w[0] && b.base < w[1])
                    .map(|b| b.ts)
                    .max()
            })
            .collect();
        let j = self.rng.random_range(0..largest.len());
        let Some(cut_ts) = largest[j] else { return };
        let retention_ms = now - cut_ts - 1;
        if retention_ms < 0 {
            return;
        }
        // As the engine: segments wholly below the log start go first, then segments from the
        // front while older than retention.ms.
        let lo = self.model.log_start;
        let mut k = 0;
        while k < largest.len() && bases[k + 1] <= lo {
            k += 1;
        }
        while k < largest.len() {
            match largest[k] {
                Some(ts) if now - ts > retention_ms => k += 1,
                Some(_) => break,
                None => return,
            }
        }
        let mut new_start = lo.max(bases[k]);
        if k == largest.len() {
            // Every sealed segment goes: the active one too when it holds batches this old and
            // the high watermark is at the log end (Kafka's `deleteSegments` rolls it first).
            let last = bases[k];
            let active_ts = self
                .model
                .batches
                .iter()
                .filter(|b| b.base >= last)
                .map(|b| b.ts)
                .max();
            let leo = self.log().log_end_offset().get();
            if active_ts.is_some_and(|ts| now - ts > retention_ms)
                && self.log().high_watermark().get() >= leo
            {
                new_start = lo.max(leo);
            }
        }
        if self
            .model
            .txn_spans()
            .iter()
            .any(|(f, e)| *f < new_start && *e >= new_start)
        {
            return;
        }
        let mut c = config();
        c.retention_ms = retention_ms;
        self.log().update_config(c).unwrap();
        self.log().delete_old_segments().unwrap();
        self.log().update_config(config()).unwrap();
        if new_start > lo {
            self.stats.retention_raises += 1;
        }
        self.model.log_start = new_start;
        self.model.log_start_high = self.model.log_start_high.max(new_start);
    }

    fn crash(&mut self) {
        let torn = self.rng.random_range(0..200usize);
        drop(self.log.take());
        let crashed = self.sim.crash(if torn < 20 {
            TornTail::None
        } else {
            TornTail::KeepUnsynced {
                file_contains: ".log".into(),
                bytes: torn,
            }
        });
        self.sim = crashed;
        let checkpointed_start = self.log_start_checkpoint.0.lock().unwrap().get();
        assert_eq!(
            checkpointed_start, self.model.checkpointed_start,
            "the log-start checkpoint lags a change the model made durable"
        );
        if checkpointed_start > self.flushed_leo {
            self.stats.crashes_start_above_durable += 1;
        }
        // What recovery keeps, learnt from a copy of the crashed files opened with no log start
        // (the torn tail decides it; the model cannot). The index files live in the real
        // directory, outside the simulated storage: they are put back as they were after the
        // probe, so it cannot change what the real reopen finds. (Producer snapshots and the
        // leader-epoch checkpoint are in the simulated storage: the crash decides them.)
        let saved = real_files(self.dir.path());
        let probe = self.sim.crash(TornTail::None);
        let (probe, _) = PartitionLog::open(
            Arc::new(probe),
            self.dir.path(),
            "sim-0",
            config(),
            self.clock.clone(),
            Shutdown::Unclean,
            OpenOffsets {
                log_start_offset: Offset(0),
                ..self.checkpoint
            },
        )
        .unwrap();
        let recovered_end = probe.log_end_offset().get();
        let first_base = probe.segment_base_offsets()[0].get();
        drop(probe);
        for e in std::fs::read_dir(self.dir.path()).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        for (path, bytes) in saved {
            std::fs::write(path, bytes).unwrap();
        }
        let start_before = self.model.log_start;
        let storage: Arc<dyn Storage> = Arc::new(self.sim.clone());
        let offsets = OpenOffsets {
            log_start_offset: Offset(checkpointed_start),
            ..self.checkpoint
        };
        let (log, _) = PartitionLog::open(
            storage,
            self.dir.path(),
            "sim-0",
            config(),
            self.clock.clone(),
            Shutdown::Unclean,
            offsets,
        )
        .unwrap();
        let leo = log.log_end_offset().get();
        assert!(
            leo >= self.flushed_leo,
            "lost flushed data: log end {leo} < flushed {}",
            self.flushed_leo
        );
        assert!(
            leo <= self.model.leo(),
            "log end {leo} beyond what was appended ({})",
            self.model.leo()
        );
        if recovered_end < checkpointed_start {
            // Kafka's rule: the checkpointed log start is above the recovered end (DeleteRecords
            // or retention raised it into a tail the crash lost), so the log restarts empty at
            // that log start and no offset below it is handed out again.
            self.stats.restarts += 1;
            self.model.batches.clear();
            self.model.log_start = checkpointed_start;
            self.model.log_start_high = self.model.log_start_high.max(checkpointed_start);
        } else {
            self.model.truncate_to(recovered_end);
            self.model.log_start = checkpointed_start.max(first_base);
        }
        assert_eq!(leo, self.model.leo(), "log end after the crash");
        assert_eq!(
            log.log_start_offset().get(),
            self.model.log_start,
            "log start after the crash (recovered end {recovered_end}, checkpointed start {checkpointed_start})"
        );
        // The checkpoint never lags a lowered log start, so a crash never hides records made
        // durable at or above the log start it had.
        assert!(
            self.model.log_start <= start_before,
            "the crash raised the log start from {start_before} to {}",
            self.model.log_start
        );
        self.log = Some(log);
        self.after_reopen();
    }

    fn clean_reopen(&mut self) {
        let log = self.log.take().unwrap();
        let offsets = OpenOffsets {
            log_start_offset: log.log_start_offset(),
            recovery_point: log.log_end_offset(),
            high_watermark: log.high_watermark(),
        };
        log.close().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(self.sim.clone());
        let (log, _) = PartitionLog::open(
            storage,
            self.dir.path(),
            "sim-0",
            config(),
            self.clock.clone(),
            Shutdown::Clean,
            offsets,
        )
        .unwrap();
        self.log = Some(log);
        self.after_reopen();
    }

    fn after_reopen(&mut self) {
        let listener = self.log_start_checkpoint.clone();
        self.log().set_log_start_listener(Some(listener));
        self.flush();
        self.epoch = self.epoch.max(
            self.log
                .as_ref()
                .unwrap()
                .epoch_cache()
                .latest_epoch()
                .map_or(0, |e| e.get()),
        );
    }

    /// DeleteRecords (`maybe_increment_log_start_offset`) to a random offset, or to the high
    /// watermark (the log end here, above what is flushed when acks=1 appends are not yet on
    /// disk).
    fn delete_records(&mut self, to_hw: bool) {
        // DeleteRecords never into a transaction that is open or could reopen (by a
        // truncation of its marker): past its start, Kafka's rebuild of producer state
        // (replay from the log start when no snapshot covers it) forgets where the
        // transaction began, and so does ours. The model keeps to the defined part.
        let (lo, hi) = (self.model.log_start, self.model.leo());
        if hi > lo {
            let mut t = if to_hw {
                hi
            } else {
                self.rng.random_range(lo..=hi)
            };
            let spans = self.model.txn_spans();
            let bases = self.log().segment_base_offsets();
            // After a crash the log start may fall back (its checkpoint lags) to the
            // checkpointed one, or to the base of the first segment left — the one that holds
            // it once a retention check deleted those below — so keep clear of that whole
            // range too.
            let floor = |t: i64| {
                bases
                    .iter()
                    .rev()
                    .map(|b| b.get())
                    .find(|b| *b <= t)
                    .unwrap_or(0)
            };
            while let Some(first) = spans
                .iter()
                .filter(|(f, e)| *f < t && *e >= floor(t))
                .map(|(f, _)| *f)
                .min()
            {
                t = first;
            }
            if t >= lo {
                self.log()
                    .maybe_increment_log_start_offset(Offset(t))
                    .unwrap();
                if t > lo && t > self.flushed_leo {
                    self.stats.delete_records_above_durable += 1;
                }
                self.model.log_start = t;
                self.model.log_start_high = self.model.log_start_high.max(t);
            }
        }
    }

    /// acks=1 appends (not flushed), DeleteRecords up to the high watermark, the periodic
    /// checkpoint, then a crash that loses (most of) the unflushed tail: recovery finds the
    /// checkpointed log start above its end.
    fn delete_records_into_lost_tail(&mut self) {
        for _ in 0..self.rng.random_range(1..4) {
            self.leader_data(None, false);
        }
        let leo = self.model.leo();
        self.log().update_high_watermark(Offset(leo));
        self.delete_records(true);
        self.write_checkpoints();
        self.crash();
    }

    /// A follower's (or a mirror's) `truncate_fully_and_start_at`: the leader's log start is
    /// past its end, or it restarts below the source's log start. The new start is drawn below
    /// the log start, inside the log, at its end, at a segment's base (the active segment is
    /// then emptied in place) or above the end. As Kafka's `UnifiedLog.truncateFullyAndStartAt`:
    /// every segment goes, the epoch cache and producer state are cleared, and the log start,
    /// high watermark, LSO, recovery point and log end are all the new offset, durably (a crash
    /// right after shows the empty log there; a lowered log start is checkpointed before any
    /// segment goes).
    fn truncate_fully(&mut self) {
        let (lo, hi) = (self.model.log_start, self.model.leo());
        let bases = self.log().segment_base_offsets();
        let (kind, n) = match self.rng.random_range(0..5) {
            0 if lo > 0 => (0, self.rng.random_range(0..lo)),
            1 if hi > lo => (1, self.rng.random_range(lo..hi)),
            2 => (2, hi),
            3 => {
                let b = bases[self.rng.random_range(0..bases.len())].get();
                (usize::from(b >= lo) + usize::from(b >= hi), b)
            }
            _ => (3, hi + self.rng.random_range(1..40)),
        };
        let kind = if kind == 1 && n >= hi { 2 } else { kind };
        self.stats.full_truncations[kind] += 1;
        self.log().truncate_fully_and_start_at(Offset(n)).unwrap();
        self.model.truncate_fully_and_start_at(n);
        // Durable at once, whether below or above what was flushed.
        self.flushed_leo = n;
        // Batches a new leader appends carry its own epoch; keep ours at least as high.
        self.epoch += 1;
        let log = self.log.as_ref().unwrap();
        assert_eq!(
            log.log_start_offset(),
            Offset(n),
            "log start after full truncation"
        );
        assert_eq!(
            log.log_end_offset(),
            Offset(n),
            "log end after full truncation"
        );
        assert_eq!(log.high_watermark(), Offset(n), "HW after full truncation");
        assert_eq!(
            log.last_stable_offset(),
            Offset(n),
            "LSO after full truncation"
        );
        assert_eq!(
            log.recovery_point(),
            Offset(n),
            "recovery point after full truncation"
        );
        assert_eq!(log.segment_base_offsets(), vec![Offset(n)], "segments");
        assert!(
            log.epoch_cache().entries().is_empty(),
            "epoch cache after full truncation: {:?}",
            log.epoch_cache().entries()
        );
        assert_eq!(
            log.producer_state().producers().count(),
            0,
            "producers after full truncation"
        );
        assert_eq!(
            log.producer_state().ongoing_txns().count(),
            0,
            "open transactions after full truncation"
        );
        assert!(
            log.producer_state().snapshots().unwrap().is_empty(),
            "producer snapshots after full truncation"
        );
    }

    /// A full truncation, perhaps a few appends (flushed or not) and a checkpoint, then a crash.
    fn truncate_fully_then_crash(&mut self) {
        self.truncate_fully();
        let start = self.model.log_start;
        let appends = self.rng.random_range(0..3);
        for _ in 0..appends {
            match self.rng.random_range(0..3) {
                0 => self.leader_data(None, false),
                1 => self.mirror(),
                _ => {
                    let pid = self.rng.random_range(1..4i64);
                    self.leader_data(Some(pid), true)
                }
            }
        }
        if self.rng.random_bool(0.3) {
            self.flush();
        }
        if self.rng.random_bool(0.3) {
            self.write_checkpoints();
        }
        self.stats.crashes_after_full_truncation += 1;
        self.crash();
        // Whatever the crash kept of the appends, the log still starts where the truncation
        // put it: the old segments are gone for good, and a lowered log start was
        // checkpointed before any of them went.
        let log = self.log.as_ref().unwrap();
        assert_eq!(
            log.log_start_offset().get(),
            start,
            "log start after a crash right after a full truncation"
        );
        if appends == 0 {
            assert_eq!(log.log_end_offset().get(), start, "log end");
            assert!(log.epoch_cache().entries().is_empty());
            assert_eq!(log.producer_state().producers().count(), 0);
        }
    }

    fn step(&mut self) {
        self.steps += 1;
        self.clock.advance(self.rng.random_range(0..50));
        let open = self.model.open_txns();
        let op = self.rng.random_range(0..121);
        if std::env::var_os("MIRRORLOG_SIM_TRACE").is_some() {
            eprintln!(
                "step {} op {op} leo {} start {}",
                self.steps,
                self.model.leo(),
                self.model.log_start
            );
        }
        match op {
            0..=19 => self.leader_data(None, false),
            20..=29 => {
                let pid = self.rng.random_range(1..4i64);
                if !open.contains_key(&pid) {
                    self.leader_data(Some(pid), false)
                }
            }
            30..=39 => {
                let pid = self.rng.random_range(1..4i64);
                self.leader_data(Some(pid), true)
            }
            40..=45 => {
                if let Some(&pid) = open.keys().find(|p| **p < 1000) {
                    let commit = self.rng.random_bool(0.5);
                    self.marker(pid, commit);
                }
            }
            46..=62 => self.mirror(),
            63..=65 => self.reset(),
            66..=68 => {
                self.epoch += 1;
                let e = self.epoch;
                self.log().assign_leader_epoch(LeaderEpoch(e)).unwrap();
            }
            69..=71 => {
                let leo = self.model.leo();
                self.log().roll(Offset(leo)).unwrap();
            }
            72..=76 => {
                let (lo, hi) = (self.model.log_start, self.model.leo());
                let first = self.log().segment_base_offsets()[0].get();
                // Sometimes below the log start (a follower truncating to a new leader's shorter
                // log): the log start goes down with the end, durably before the truncation
                // returns. Not below the first segment, where the model's batch-granular cut
                // would differ from the engine's full truncation at the target.
                let target = if first < lo && self.rng.random_bool(0.25) {
                    self.stats.truncations_below_start += 1;
                    Some(self.rng.random_range(first..lo))
                } else {
                    (hi > lo).then(|| self.rng.random_range(lo..=hi))
                };
                if let Some(t) = target {
                    self.log().truncate_to(Offset(t)).unwrap();
                    self.model.truncate_to(t);
                    // Truncation is durable at once; what was flushed beyond it is gone on purpose.
                    self.flushed_leo = self.flushed_leo.min(self.model.leo());
                    // The leader's epochs at or after the cut are gone with it; later appends
                    // use a new one.
                    self.epoch += 1;
                }
            }
            77..=79 => {
                let to_hw = self.rng.random_bool(0.3);
                self.delete_records(to_hw);
            }
            80..=89 => self.flush(),
            90..=94 => self.crash(),
            95..=99 => self.clean_reopen(),
            100..=107 => {
                self.stats.checkpoints += 1;
                self.write_checkpoints();
            }
            108..=109 => self.delete_records_into_lost_tail(),
            110..=114 => self.retention(),
            115..=118 => self.truncate_fully(),
            _ => self.truncate_fully_then_crash(),
        }
        // Checked before the high watermark is moved to the log end below: that update clamps
        // into [log start, log end], so checking only afterwards could never fail.
        let log = self.log.as_ref().unwrap();
        assert!(
            log.log_start_offset() <= log.high_watermark()
                && log.high_watermark() <= log.log_end_offset(),
            "after op {op}: high watermark {} outside [log start {}, log end {}]",
            log.high_watermark(),
            log.log_start_offset(),
            log.log_end_offset()
        );
        // Likewise the last stable offset: checked against the model only once the high
        // watermark is the log end, where a bound by the log end passes for one by the HW.
        assert!(
            log.last_stable_offset() <= log.high_watermark(),
            "after op {op}: last stable offset {} above the high watermark {}",
            log.last_stable_offset(),
            log.high_watermark()
        );
        let leo = self.model.leo();
        self.log().update_high_watermark(Offset(leo));
        self.check();
    }

    /// After a truncation below the log start the log forgets the transactions open across it
    /// (Kafka's `truncateAndReload` rebuilds producer state from the new log start), but the
    /// recovery after a crash brings them back when it scans the segment holding their first
    /// batches (Kafka's `LogSegment.recover` feeds every batch of a segment it recovers to producer
    /// state, those below the log start too). Which of the two the log did depends on which
    /// segments it recovered: the model keeps the floors (dropping the newest first) that give the
    /// log's open transactions, and leaves them as they are when none does (the check then fails).
    fn sync_txn_floors(&mut self) {
        if self.model.txn_floors.is_empty() {
            return;
        }
        let ongoing: BTreeMap<i64, i64> = self
            .log
            .as_ref()
            .unwrap()
            .producer_state()
            .ongoing_txns()
            .map(|t| (t.producer_id.get(), t.first_offset.get()))
            .collect();
        let all = self.model.txn_floors.clone();
        for k in (0..=all.len()).rev() {
            self.model.txn_floors = all[..k].to_vec();
            if self.model.open_txns() == ongoing {
                return;
            }
        }
        self.model.txn_floors = all;
    }

    fn check(&mut self) {
        self.sync_txn_floors();
        let log = self.log.as_ref().unwrap();
        assert_eq!(log.log_end_offset().get(), self.model.leo(), "log end");
        assert_eq!(
            log.log_start_offset().get(),
            self.model.log_start,
            "log start"
        );
        assert!(
            log.log_start_offset() <= log.high_watermark()
                && log.high_watermark() <= log.log_end_offset()
        );
        assert_eq!(
            common::values(log, log.log_start_offset()),
            self.model.values(),
            "record values"
        );
        let held: BTreeSet<i64> = log
            .producer_state()
            .producers()
            .map(|e| e.producer_id.get())
            .collect();
        // Never a producer from before the last MIRROR_PID_RESET (nor one never seen); always every
        // producer of the readable log after it. Producers only below the log start may or may not
        // survive (Kafka keeps them only while a snapshot holds them).
        let allowed = self.model.producers(i64::MIN);
        let required = self
            .model
            .producers(self.model.log_start.max(self.model.log_start_high));
        assert!(
            held.is_subset(&allowed),
            "producers held {held:?} beyond those since the last reset {allowed:?}"
        );
        assert!(
            required.is_subset(&held),
            "producers held {held:?} miss some of the readable log's {required:?}; model tail {:?}; snapshots {:?}",
            &self.model.batches[self.model.batches.len().saturating_sub(12)..],
            log.producer_state()
                .snapshots()
                .unwrap()
                .iter()
                .map(|s| s.offset)
                .collect::<Vec<_>>()
        );
        let want_lso = self
            .model
            .open_txns()
            .values()
            .min()
            .copied()
            .map_or(self.model.leo(), |f| f.max(self.model.log_start));
        assert_eq!(
            log.last_stable_offset().get(),
            want_lso,
            "last stable offset: model open {:?}, log ongoing {:?}",
            self.model.open_txns(),
            log.producer_state().ongoing_txns().collect::<Vec<_>>()
        );
        let entries = log.epoch_cache().entries();
        for w in entries.windows(2) {
            assert!(
                w[0].epoch < w[1].epoch && w[0].start_offset < w[1].start_offset,
                "epoch cache order {entries:?}"
            );
        }
        if let Some(last) = entries.last() {
            assert!(last.start_offset.get() <= self.model.leo());
        }
        // Every batch's epoch is what the epoch cache says for its offset.
        let from = self.model.log_start.max(self.model.log_start_high);
        for b in self
            .model
            .batches
            .iter()
            .filter(|b| b.base >= from && b.epoch >= 0)
        {
            assert_eq!(
                log.epoch_at(Offset(b.base)),
                Some(LeaderEpoch(b.epoch)),
                "epoch of batch at {}",
                b.base
            );
        }
        // The transaction index holds exactly the aborted transactions.
        let mut held: Vec<(i64, i64, i64)> = log
            .collect_aborted_txns(log.log_start_offset(), log.log_end_offset())
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t.producer_id.get(),
                    t.first_offset.get(),
                    t.last_offset.get(),
                )
            })
            .collect();
        held.sort();
        assert_eq!(
            held,
            self.model.aborted(self.model.log_start),
            "aborted transactions"
        );
        // Reads through the isolation levels agree with the offsets.
        let r = log
            .read(
                log.log_start_offset(),
                64,
                FetchIsolation::TxnCommitted,
                true,
            )
            .unwrap();
        assert_eq!(r.last_stable_offset.get(), want_lso);
    }
}

fn run(seed: u64, steps: usize) -> Stats {
    let mut s = Sim::new(seed);
    for _ in 0..steps {
        s.step();
    }
    s.stats
}

#[test]
fn seeded_simulation_matches_the_model() {
    let seeds: Vec<u64> = match std::env::var("MIRRORLOG_SIM_SEED") {
        Ok(s) => vec![s.parse().expect("MIRRORLOG_SIM_SEED is a number")],
        Err(_) => {
            let n: u64 = std::env::var("MIRRORLOG_SIM_SEEDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(24);
            (0..n).map(|i| 0x5eed_0000 + i).collect()
        }
    };
    let mut total = Stats::default();
    let n = seeds.len();
    let mut failed = vec![];
    for seed in seeds {
        match std::panic::catch_unwind(|| run(seed, 250)) {
            Ok(stats) => total += stats,
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                eprintln!("simulation seed {seed} failed: {msg}");
                failed.push(seed);
            }
        }
    }
    println!("simulation summary over {n} seeds: {total:?}");
    assert!(
        failed.is_empty(),
        "simulation seeds failed: {failed:?}\nreplay one: MIRRORLOG_SIM_SEED=<seed> cargo test -p mirrorlog-engine --test simulation"
    );
    if n >= 24 {
        assert!(
            total.restarts > 0
                && total.retention_raises > 0
                && total.full_truncations.iter().all(|n| *n > 0)
                && total.crashes_after_full_truncation > 0,
            "the workload no longer exercises the restart at the checkpointed log start, retention or full truncations: {total:?}"
        );
    }
}
