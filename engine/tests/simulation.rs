//! Seeded simulation of one partition log against a simple in-memory model.
//!
//! One seed drives a random workload on the simulated storage backend: client appends
//! (plain, idempotent, transactional), coordinator markers, mirror appends of a source's batches
//! (with their own producer ids and epochs), MIRROR_PID_RESET barriers, leader-epoch bumps, rolls,
//! truncations, DeleteRecords, flushes, crashes with torn tails, and clean reopens. After every
//! step the log is checked against the model: offsets, every record value, the producers held
//! (none from before the last reset), the last stable offset, epoch-cache order, and
//! log start ≤ high watermark ≤ log end. After a crash the log must be a prefix of the model that
//! holds everything flushed.
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

/// The log-start checkpoint a log manager keeps: written at each flush (the periodic checkpoint)
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
    kind: Kind,
}

#[derive(Debug, Default)]
struct Model {
    batches: Vec<MBatch>,
    log_start: i64,
    /// The highest log start so far: producer state may forget producers below it, and a crash
    /// can bring the log start back down (its checkpoint lags) without bringing them back.
    log_start_high: i64,
}

impl Model {
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
        for b in &self.batches {
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
        open
    }
    /// Every transaction as (first offset, marker offset or i64::MAX while open); a reset ends
    /// the open ones.
    fn txn_spans(&self) -> Vec<(i64, i64)> {
        let mut open: BTreeMap<i64, i64> = BTreeMap::new();
        let mut out = vec![];
        for b in &self.batches {
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
        out.extend(open.into_values().map(|f| (f, i64::MAX)));
        out
    }

    /// Aborted transactions as (producer, first offset, marker offset) with a marker at or after
    /// `from`: what the transaction index must hold.
    fn aborted(&self, from: i64) -> Vec<(i64, i64, i64)> {
        let mut open: BTreeMap<i64, i64> = BTreeMap::new();
        let mut out = vec![];
        for b in &self.batches {
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
        self.log_start = self.log_start.min(end);
        self.log_start_high = self.log_start_high.min(end);
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
    /// The offsets a log manager would have checkpointed at the last flush (the log start is
    /// in `log_start_checkpoint`).
    checkpoint: OpenOffsets,
    log_start_checkpoint: Arc<CheckpointedLogStart>,
    flushed_leo: i64,
    steps: usize,
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
                    kind: Kind::Marker { pid, commit },
                }
            } else {
                let n = self.rng.random_range(1..4);
                let values = self.values(n);
                let (e, s) = {
                    // Sequences continue across this append's own batches too.
                    let mut m = Model {
                        batches: self.model.batches.clone(),
                        log_start: 0,
                        log_start_high: 0,
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
            kind: Kind::Reset,
        });
    }

    fn flush(&mut self) {
        self.log().flush().unwrap();
        let log = self.log.as_ref().unwrap();
        self.checkpoint = OpenOffsets {
            log_start_offset: log.log_start_offset(),
            recovery_point: log.recovery_point(),
            high_watermark: log.high_watermark(),
        };
        *self.log_start_checkpoint.0.lock().unwrap() = log.log_start_offset();
        self.flushed_leo = log.log_end_offset().get();
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
        let storage: Arc<dyn Storage> = Arc::new(self.sim.clone());
        let offsets = OpenOffsets {
            log_start_offset: *self.log_start_checkpoint.0.lock().unwrap(),
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
        self.model.truncate_to(leo);
        self.model.log_start = log.log_start_offset().get();
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

    fn step(&mut self) {
        self.steps += 1;
        self.clock.advance(self.rng.random_range(0..50));
        let open = self.model.open_txns();
        let op = self.rng.random_range(0..100);
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
                if hi > lo {
                    let t = self.rng.random_range(lo..=hi);
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
                // DeleteRecords never into a transaction that is open or could reopen (by a
                // truncation of its marker): past its start, Kafka's rebuild of producer state
                // (replay from the log start when no snapshot covers it) forgets where the
                // transaction began, and so does ours. The model keeps to the defined part.
                let (lo, hi) = (self.model.log_start, self.model.leo());
                if hi > lo {
                    let mut t = self.rng.random_range(lo..=hi);
                    let spans = self.model.txn_spans();
                    let bases = self.log().segment_base_offsets();
                    // After a crash the log start may fall back to the base of the segment that
                    // holds it (its checkpoint lags), so keep clear of that whole range too.
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
                        self.model.log_start = t;
                        self.model.log_start_high = self.model.log_start_high.max(t);
                    }
                }
            }
            80..=89 => self.flush(),
            90..=94 => self.crash(),
            _ => self.clean_reopen(),
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

    fn check(&mut self) {
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

fn run(seed: u64, steps: usize) {
    let mut s = Sim::new(seed);
    for _ in 0..steps {
        s.step();
    }
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
    for seed in seeds {
        let r = std::panic::catch_unwind(|| run(seed, 250));
        if let Err(e) = r {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!(
                "simulation seed {seed} failed: {msg}\nreplay: MIRRORLOG_SIM_SEED={seed} cargo test -p mirrorlog-engine --test simulation"
            );
        }
    }
}
