//! Seeded simulation of a mirror (TigerBeetle's VOPR style): one seed drives an in-process
//! source cluster ([`EngineSource`]) and a destination (an engine [`LogManager`] on the simulated
//! storage, so a crash keeps only what was synced) through random steps, and the invariants are
//! checked after every one of them.
//!
//! Steps: produce on the source (plain batches, transactions with COMMIT/ABORT markers), fetch
//! rounds, metadata syncs, source leader changes (epoch bumps), unclean elections on the source
//! (truncation and a new epoch), deletion of a source topic, network errors, corrupt batches,
//! destination crashes and restarts (the manager reopened from `__mirror_state`), pause, resume,
//! stop and start again at random points, manual recovers, the clock moving on (retries),
//! client produce to the destination, and rolling restarts of the source that move every
//! partition's leader and may upgrade or downgrade it across Fetch v12.
//!
//! Each seed picks whether its source starts below Fetch v12 (Kafka before 2.7): its fetches then
//! carry no `LastFetchedEpoch` and answer no `DivergingEpoch`, so the mirror must find a
//! divergence the way Kafka's `ReplicaFetcherThread` does with such a leader, by asking
//! OffsetForLeaderEpoch before it fetches a partition that enters MIRRORING or whose source
//! leader changed.
//!
//! Invariants (DESIGN.md 1–8, KIP-1279 §3, §7–9):
//! - every destination batch is byte-identical to the source's batch at the same offset — the
//!   destination is a prefix of the source — except from an offset where the source truncated
//!   (an unclean election there) while the destination held more; such a divergence is either
//!   truncated away (`mirror.support.unclean.leader.election=true`) or leaves the partition
//!   FAILED, which the final heal checks;
//! - DLE ≥ SLE: a MIRRORING partition's leader epoch is at or above the source epoch the mirror
//!   last synced, and a destination partition's leader epoch never goes down;
//! - every state change persisted in `__mirror_state` follows the transition table, its state
//!   epoch grows, and what the manager reports is the last persisted state;
//! - a partition is read-only (a client produce gets refused) in every state but STOPPED;
//! - a STOPPED partition holds a MIRROR_PID_RESET barrier after its mirrored data.
//!
//! At the end every fault is lifted and the mirror healed: each live partition still mirrored
//! must be MIRRORING and identical to the source (or FAILED for a divergence without unclean
//! election support, or for a deleted source topic).
//!
//! A failure prints its seed; `MIRRORLOG_SIM_SEED=<seed>` replays one,
//! `MIRRORLOG_SIM_SEEDS=<n>` sets how many seeds run (default 20), `MIRRORLOG_SIM_STEPS=<n>` the
//! steps per seed (default 300).

mod common;

use bytes::Bytes;
use common::Dest;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, TimestampMs, TopicId, TopicPartition,
};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::SourceError;
use mirrorlog_mirror::state::{
    KEY_TYPE_START_INTENT, MIRROR_STATE_TOPIC, MirrorPartitionState as S, MirrorStateStore,
    PartitionMirrorState, RetryBackoff, StateKey, decode_key, decode_value,
};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::batch::{Batches, ControlRecord, ControlRecordType};
use mirrorlog_segment::io::{PwriteStorage, SimStorage, Storage, TornTail};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const T0: i64 = 1_700_000_000_000;
const MIRROR: &str = "sim";
const STATE_PARTITIONS: i32 = 3;
/// The state store's compaction threshold here (default 10,000): low enough that the
/// simulation's state writes trigger rewrites.
const STATE_DIRTY_RECORDS: u64 = 8;
/// The source topics: name, partitions, topic id byte.
const TOPICS: &[(&str, i32, u8)] = &[("orders", 2, 1), ("payments", 1, 2)];
/// The topic a run may delete on the source.
const DELETABLE: &str = "payments";

/// What the simulation knows about one mirrored partition.
#[derive(Debug, Default)]
struct PartModel {
    /// The source truncated at this offset (an unclean election) while the destination held
    /// more: from here on the two may differ until the destination truncates.
    diverged_from: Option<Offset>,
    /// The destination's log end when it was stopped (its mirrored part).
    stopped_at: Option<Offset>,
    /// The source leader epoch at the mirror's last successful sync (reset by a restart: a new
    /// manager knows no source epoch before its first sync).
    synced_source_epoch: Option<LeaderEpoch>,
    /// The highest leader epoch the destination partition reported.
    max_dle: LeaderEpoch,
    /// Source producers: id → next sequence; `open` when a transaction is open.
    producers: BTreeMap<i64, (i32, bool)>,
    /// Producer ids start here (moved on after an unclean election, whose truncation makes the
    /// source forget sequences).
    pid_base: i64,
    /// OffsetForLeaderEpoch questions answered before the source's last unclean election that
    /// left the destination ahead of it.
    questions_at_divergence: u64,
}

struct Sim {
    rng: SmallRng,
    ule: bool,
    clock: Arc<ManualClock>,
    _src_dir: tempfile::TempDir,
    dst_dir: tempfile::TempDir,
    src: Arc<LogManager>,
    source: Arc<EngineSource>,
    /// What the mirror talks to: `source`, below Fetch v12 while `below_fetch_v12` holds.
    mirror_source: Arc<common::Hooked>,
    below_fetch_v12: Arc<AtomicBool>,
    epoch_questions: Arc<AtomicU64>,
    storage: SimStorage,
    dst: Arc<LogManager>,
    mirror: Arc<MirrorManager>,
    parts: BTreeMap<TopicPartition, PartModel>,
    /// A deleted source topic's batches, as they were when it was deleted.
    deleted: BTreeMap<TopicPartition, Vec<(Offset, Bytes)>>,
    /// The last persisted state of each key, and how far each `__mirror_state` partition was
    /// read.
    history: HashMap<StateKey, PartitionMirrorState>,
    state_read: BTreeMap<i32, Offset>,
    trace: Vec<String>,
    seen: Coverage,
}

/// What a run went through, so the test can tell that the seeds reach the interesting cases.
#[derive(Debug, Default, Clone, Copy)]
struct Coverage {
    crashes: u32,
    stops: u32,
    divergences: u32,
    divergences_resolved: u32,
    epoch_bumps: u32,
    failed: u32,
    transactions: u32,
    /// Checks that found the state topic's log start moved past what they had read (its
    /// compaction stand-in ran).
    state_rewrites: u32,
    /// Seeds whose source was below Fetch v12 at some point, and the divergences found and
    /// resolved (the destination a prefix of the source again) while it was: only
    /// OffsetForLeaderEpoch, or a fetch past the source's end, can have found those.
    seeds_below_fetch_v12: u32,
    divergences_below_fetch_v12: u32,
    divergences_resolved_below_fetch_v12: u32,
    /// Of those, resolved after OffsetForLeaderEpoch questions since the divergence.
    divergences_resolved_by_epoch_questions: u32,
    /// Source rolling restarts that moved it across Fetch v12 (upgrades and downgrades).
    version_changes: u32,
}

impl Coverage {
    fn add(&mut self, o: Coverage) {
        self.crashes += o.crashes;
        self.stops += o.stops;
        self.divergences += o.divergences;
        self.divergences_resolved += o.divergences_resolved;
        self.epoch_bumps += o.epoch_bumps;
        self.failed += o.failed;
        self.transactions += o.transactions;
        self.state_rewrites += o.state_rewrites;
        self.seeds_below_fetch_v12 += o.seeds_below_fetch_v12;
        self.divergences_below_fetch_v12 += o.divergences_below_fetch_v12;
        self.divergences_resolved_below_fetch_v12 += o.divergences_resolved_below_fetch_v12;
        self.divergences_resolved_by_epoch_questions += o.divergences_resolved_by_epoch_questions;
        self.version_changes += o.version_changes;
    }
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn config(ule: bool) -> MirrorConfig {
    let mut c = MirrorConfig::new(MIRROR);
    c.support_unclean_leader_election = ule;
    c.partition_fetch_max_bytes = 4096;
    c.response_max_bytes = 8192;
    c.retry = RetryBackoff {
        seed: 7,
        ..RetryBackoff::default()
    };
    c
}

/// Every batch of a log from its start: `(base offset, bytes)`.
fn batches(h: &PartitionHandle) -> Vec<(Offset, Bytes)> {
    let log = h.read();
    let mut out = vec![];
    let mut next = log.log_start_offset();
    let leo = log.log_end_offset();
    while next < leo {
        let info = log
            .read(next, 1 << 20, FetchIsolation::LogEnd, true)
            .unwrap();
        let Some(r) = info.records else { break };
        let bytes = r.slice.read_all().unwrap();
        let before = next;
        for b in Batches::new(bytes.clone()) {
            let b = b.unwrap();
            let start = b.position() as usize;
            out.push((b.base_offset(), bytes.slice(start..start + b.size_bytes())));
            next = b.next_offset();
        }
        assert!(next > before, "a read returned no whole batch at {before}");
    }
    out
}

fn is_pid_reset(batch: &Bytes) -> bool {
    let Some(Ok(b)) = Batches::new(batch.clone()).next() else {
        return false;
    };
    if !b.is_control() {
        return false;
    }
    b.records()
        .ok()
        .and_then(|mut rs| rs.next())
        .and_then(|r| r.ok())
        .and_then(|r| ControlRecord::parse(&r).ok())
        .is_some_and(|c| c.kind == ControlRecordType::MirrorPidReset)
}

fn open_dst(
    dir: &std::path::Path,
    storage: &SimStorage,
    clock: &Arc<ManualClock>,
) -> Arc<LogManager> {
    let s: Arc<dyn Storage> = Arc::new(storage.clone());
    let (m, _) = LogManager::open(LogManagerConfig::new(dir), s, clock.clone()).unwrap();
    Arc::new(m)
}

/// A directory for the engines' metadata files (topic configs, checkpoints), which bypass the
/// storage trait and are synced for real: on tmpfs when there is one, where a sync costs nothing
/// (the crash model is the simulated storage's; a slow shared disk would only slow the run).
fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(d) = tempfile::Builder::new()
            .prefix("mirror-sim")
            .tempdir_in(shm)
    {
        return d;
    }
    tempfile::tempdir().unwrap()
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let mut rng = SmallRng::seed_from_u64(seed);
        let ule = rng.random_bool(0.5);
        let below_fetch_v12 = Arc::new(AtomicBool::new(rng.random_bool(0.5)));
        let clock = ManualClock::new(T0);
        let src_dir = scratch_dir();
        let dst_dir = scratch_dir();
        let (src, _) = LogManager::open(
            LogManagerConfig::new(src_dir.path()),
            Arc::new(PwriteStorage::new()),
            clock.clone(),
        )
        .unwrap();
        let src = Arc::new(src);
        let mut parts = BTreeMap::new();
        for (t, n, id) in TOPICS {
            for p in 0..*n {
                src.create(&tp(t, p), TopicId([*id; 16]), LogConfig::default())
                    .unwrap();
                parts.insert(
                    tp(t, p),
                    PartModel {
                        pid_base: 1000 * (p as i64 + 1) * *id as i64,
                        max_dle: LeaderEpoch::NONE,
                        ..PartModel::default()
                    },
                );
            }
        }
        let source = EngineSource::new(src.clone(), "source-cluster", 1);
        let epoch_questions = Arc::new(AtomicU64::new(0));
        let mirror_source = Arc::new(common::Hooked {
            inner: source.clone(),
            hooks: common::Hooks {
                below_fetch_v12_now: Some(below_fetch_v12.clone()),
                epoch_questions: Some(epoch_questions.clone()),
                ..common::Hooks::default()
            },
        });
        let storage = SimStorage::new();
        let dst = open_dst(dst_dir.path(), &storage, &clock);
        let store = Arc::new(MirrorStateStore::open(dst.clone(), STATE_PARTITIONS).unwrap());
        // Low, so the state topic's rewrites run between crashes too.
        store.set_compaction_min_dirty_records(STATE_DIRTY_RECORDS);
        let mirror = MirrorManager::new(
            config(ule),
            mirror_source.clone(),
            dst.clone(),
            Arc::new(Dest(dst.clone())),
            store,
            clock.clone(),
        )
        .unwrap();
        let mut sim = Sim {
            rng,
            ule,
            clock,
            _src_dir: src_dir,
            dst_dir,
            src,
            source,
            mirror_source,
            below_fetch_v12,
            epoch_questions,
            storage,
            dst,
            mirror,
            parts,
            deleted: BTreeMap::new(),
            history: HashMap::new(),
            state_read: BTreeMap::new(),
            trace: vec![],
            seen: Coverage::default(),
        };
        sim.seen.seeds_below_fetch_v12 = sim.is_below_fetch_v12() as u32;
        for _ in 0..3 {
            sim.produce();
        }
        let names: Vec<String> = TOPICS.iter().map(|t| t.0.to_string()).collect();
        sim.mirror.start_topics(&names).unwrap();
        sim
    }

    fn is_below_fetch_v12(&self) -> bool {
        self.below_fetch_v12.load(Ordering::Relaxed)
    }

    fn note(&mut self, s: String) {
        self.trace.push(s);
    }

    fn live_partitions(&self) -> Vec<TopicPartition> {
        self.parts
            .keys()
            .filter(|k| !self.deleted.contains_key(*k))
            .cloned()
            .collect()
    }

    fn pick<T: Clone>(&mut self, v: &[T]) -> Option<T> {
        if v.is_empty() {
            return None;
        }
        Some(v[self.rng.random_range(0..v.len())].clone())
    }

    fn src_handle(&self, k: &TopicPartition) -> Arc<PartitionHandle> {
        self.src.get(k).unwrap()
    }

    fn dst_handle(&self, k: &TopicPartition) -> Option<Arc<PartitionHandle>> {
        self.dst.get(k)
    }

    // --- steps --------------------------------------------------------------------------------

    /// A client (or the transaction coordinator) writes to a source partition at its current
    /// leader epoch.
    fn produce(&mut self) {
        let live = self.live_partitions();
        let Some(k) = self.pick(&live) else { return };
        let h = self.src_handle(&k);
        let epoch = h.read().leader_epoch().max(LeaderEpoch(0));
        let now = TimestampMs(T0 + self.rng.random_range(0..1_000_000));
        let kind = self.rng.random_range(0..10);
        let model = self.parts.get_mut(&k).unwrap();
        let (bytes, origin, what) = if kind < 6 {
            let n = self.rng.random_range(1..6);
            (
                common::plain_batch(n, self.rng.random_bool(0.3), now),
                LeaderOrigin::Client,
                "plain".to_string(),
            )
        } else {
            let pid = model.pid_base + self.rng.random_range(0..3);
            let (seq, open) = *model.producers.get(&pid).unwrap_or(&(0, false));
            if open && kind >= 8 {
                let commit = kind == 9;
                let b =
                    BatchBuilder::end_txn_marker(ProducerId(pid), ProducerEpoch(0), commit, 0, now)
                        .build()
                        .into_bytes();
                (
                    b,
                    LeaderOrigin::Coordinator,
                    format!("marker pid {pid} commit {commit}"),
                )
            } else {
                let n = self.rng.random_range(1..4);
                (
                    common::transactional_batch(pid, seq, n, now),
                    LeaderOrigin::Client,
                    format!("txn pid {pid} seq {seq}"),
                )
            }
        };
        let r = {
            let mut log = h.write();
            let r = log.append_as_leader(bytes, epoch, origin);
            let leo = log.log_end_offset();
            log.update_high_watermark(leo);
            r
        };
        let model = self.parts.get_mut(&k).unwrap();
        match (&r, what.split(' ').next().unwrap()) {
            (Ok(info), "txn") => {
                let pid: i64 = what.split(' ').nth(2).unwrap().parse().unwrap();
                let e = model.producers.entry(pid).or_insert((0, false));
                e.0 += info.record_count as i32;
                e.1 = true;
            }
            (Ok(_), "marker") => {
                self.seen.transactions += 1;
                let pid: i64 = what.split(' ').nth(2).unwrap().parse().unwrap();
                model.producers.entry(pid).or_insert((0, false)).1 = false;
            }
            _ => {}
        }
        self.note(format!(
            "produce {k} epoch {epoch} {what}: {:?}",
            r.map(|i| i.first_offset)
        ));
    }

    fn fetch(&mut self) {
        self.mirror.drive();
        let n = self.mirror.fetch_round(0);
        self.note(format!("fetch round: {n} bytes"));
    }

    fn sync(&mut self) {
        // The epochs the sync will see (nothing else runs meanwhile).
        let epochs: Vec<(TopicPartition, LeaderEpoch)> = self
            .live_partitions()
            .into_iter()
            .map(|k| {
                let e = self
                    .src_handle(&k)
                    .read()
                    .leader_epoch()
                    .max(LeaderEpoch(0));
                (k, e)
            })
            .collect();
        let r = self.mirror.sync();
        if r.is_ok() {
            for (k, e) in epochs {
                self.parts.get_mut(&k).unwrap().synced_source_epoch = Some(e);
            }
        }
        self.note(format!("sync: {r:?}"));
    }

    fn leader_change(&mut self) {
        let live = self.live_partitions();
        let Some(k) = self.pick(&live) else { return };
        self.new_source_leader(&k);
    }

    /// `k`'s source partition moves to a new leader (a new leader epoch, nothing lost).
    fn new_source_leader(&mut self, k: &TopicPartition) {
        let h = self.src_handle(k);
        let mut log = h.write();
        let next = LeaderEpoch(log.leader_epoch().get().max(0) + 1);
        log.assign_leader_epoch(next).unwrap();
        drop(log);
        self.note(format!("source leader change {k} → epoch {next}"));
    }

    /// The source cluster restarts broker by broker, which moves every partition's leader; half
    /// the time it comes back on the other side of Fetch v12 (upgraded from, or downgraded to, a
    /// version before Kafka 2.7).
    fn source_rolling_restart(&mut self) {
        let below = self.is_below_fetch_v12() != self.rng.random_bool(0.5);
        if below != self.is_below_fetch_v12() {
            self.seen.version_changes += 1;
        }
        self.below_fetch_v12.store(below, Ordering::Relaxed);
        if below {
            self.seen.seeds_below_fetch_v12 = 1;
        }
        self.note(format!(
            "source rolling restart, now {} Fetch v12",
            if below { "below" } else { "at or above" }
        ));
        for k in self.live_partitions() {
            self.new_source_leader(&k);
        }
    }

    fn unclean_election(&mut self) {
        let live = self.live_partitions();
        let Some(k) = self.pick(&live) else { return };
        let h = self.src_handle(&k);
        let (start, leo) = {
            let log = h.read();
            (log.log_start_offset().get(), log.log_end_offset().get())
        };
        let to = Offset(self.rng.random_range(start..=leo));
        self.source
            .unclean_election(&k.topic, k.partition, to)
            .unwrap();
        let new_leo = h.read().log_end_offset();
        let dest_leo = self
            .dst_handle(&k)
            .map_or(Offset(0), |d| d.read().log_end_offset());
        let model = self.parts.get_mut(&k).unwrap();
        if dest_leo > new_leo {
            self.seen.divergences += 1;
            if self.below_fetch_v12.load(Ordering::Relaxed) {
                self.seen.divergences_below_fetch_v12 += 1;
            }
            model.questions_at_divergence = self.epoch_questions.load(Ordering::Relaxed);
            model.diverged_from = Some(model.diverged_from.map_or(new_leo, |d| d.min(new_leo)));
        }
        // The truncation made the source forget producer sequences: new producers from here.
        model.producers.clear();
        model.pid_base += 100;
        self.note(format!(
            "unclean election on the source {k}: truncated to {new_leo} (asked {to}), destination at {dest_leo}"
        ));
        // Sometimes the new leader's first writes end right at the destination's log end and
        // go on in a new batch there, which the mirror's next fetch asks for: only a divergence
        // check (or a fenced fetch) keeps it from appending that batch over the records the
        // source lost.
        let gap = dest_leo.get() - new_leo.get();
        if gap > 0 && gap <= 64 && self.rng.random_bool(0.5) {
            let epoch = h.read().leader_epoch();
            let now = TimestampMs(T0 + self.rng.random_range(0..1_000_000));
            let next = self.rng.random_range(1..4);
            let mut log = h.write();
            let r = [gap as i32, next].map(|n| {
                log.append_as_leader(
                    common::plain_batch(n, false, now),
                    epoch,
                    LeaderOrigin::Client,
                )
                .map(|i| i.first_offset)
            });
            let leo = log.log_end_offset();
            log.update_high_watermark(leo);
            drop(log);
            self.note(format!(
                "the new leader of {k} writes {gap} records, then {next}: {r:?}"
            ));
        }
    }

    fn delete_source_topic(&mut self) {
        if self.deleted.keys().any(|k| k.topic == DELETABLE) {
            return;
        }
        for k in self
            .parts
            .keys()
            .filter(|k| k.topic == DELETABLE)
            .cloned()
            .collect::<Vec<_>>()
        {
            let snapshot = batches(&self.src_handle(&k));
            self.src.delete(&k).unwrap();
            self.deleted.insert(k, snapshot);
        }
        self.note(format!("source topic {DELETABLE} deleted"));
    }

    fn network_errors(&mut self) {
        let n = self.rng.random_range(1..4);
        self.source.fail_next_calls(
            n,
            SourceError::Unreachable("simulated network error".into()),
        );
        self.note(format!("the next {n} source calls fail"));
    }

    fn corrupt(&mut self) {
        let live = self.live_partitions();
        let Some(k) = self.pick(&live) else { return };
        self.source.corrupt_next_fetch(&k.topic, k.partition);
        self.note(format!("the next fetch of {k} is corrupt"));
    }

    /// The destination broker crashes: only synced bytes survive (a torn tail sometimes), and a
    /// new manager is opened over `__mirror_state`.
    fn crash_and_restart(&mut self) {
        self.mirror.shutdown();
        let torn = self.rng.random_range(0..300usize);
        let crashed = self.storage.crash(if torn < 100 {
            TornTail::None
        } else {
            TornTail::KeepUnsynced {
                file_contains: ".log".into(),
                bytes: torn,
            }
        });
        self.storage = crashed;
        let dst = open_dst(self.dst_dir.path(), &self.storage, &self.clock);
        let store = Arc::new(MirrorStateStore::open(dst.clone(), STATE_PARTITIONS).unwrap());
        store.set_compaction_min_dirty_records(STATE_DIRTY_RECORDS);
        let mirror = MirrorManager::new(
            config(self.ule),
            self.mirror_source.clone(),
            dst.clone(),
            Arc::new(Dest(dst.clone())),
            store,
            self.clock.clone(),
        )
        .unwrap();
        self.mirror = mirror;
        self.dst = dst;
        for m in self.parts.values_mut() {
            m.synced_source_epoch = None;
        }
        self.seen.crashes += 1;
        self.note(format!("destination crash (torn tail {torn}) and restart"));
    }

    fn topic(&mut self) -> String {
        let names: Vec<String> = TOPICS.iter().map(|t| t.0.to_string()).collect();
        self.pick(&names).unwrap()
    }

    fn pause(&mut self) {
        let t = self.topic();
        let r = self.mirror.pause_topic(&t);
        self.note(format!("pause {t}: {r:?}"));
    }

    fn resume(&mut self) {
        let t = self.topic();
        let r = self.mirror.resume_topic(&t);
        self.note(format!("resume {t}: {r:?}"));
    }

    fn stop(&mut self) {
        let t = self.topic();
        let before: Vec<(TopicPartition, Offset, S)> = self
            .mirror
            .describe()
            .into_iter()
            .filter(|s| s.topic == t)
            .map(|s| (tp(&s.topic, s.partition), s.log_end_offset, s.state))
            .collect();
        let r = self.mirror.stop_topic(&t);
        let after = self.states();
        for (k, leo, was) in before {
            if was != S::Stopped && after.get(&k) == Some(&S::Stopped) {
                self.parts.get_mut(&k).unwrap().stopped_at = Some(leo);
                self.seen.stops += 1;
            }
        }
        self.note(format!("stop {t}: {r:?}"));
    }

    fn start_again(&mut self) {
        let t = self.topic();
        let r = self.mirror.start_topics(std::slice::from_ref(&t));
        if r.is_ok() {
            for (k, m) in self.parts.iter_mut() {
                if k.topic == t {
                    // Until LOG_ALIGNMENT truncates them, the local writes after the stop stay.
                    if let Some(at) = m.stopped_at.take() {
                        m.diverged_from = Some(m.diverged_from.map_or(at, |d| d.min(at)));
                    }
                }
            }
        }
        self.note(format!("start {t}: {r:?}"));
    }

    fn recover(&mut self) {
        let t = self.topic();
        let r = self.mirror.recover_topic(&t);
        self.note(format!("recover {t}: {r:?}"));
    }

    fn tick_clock(&mut self) {
        let ms = self.rng.random_range(0..5_000);
        self.clock.advance(ms);
        self.note(format!("clock +{ms} ms"));
    }

    /// A client produces to a destination partition: refused unless STOPPED.
    fn client_produce_to_destination(&mut self) {
        let states = self.states();
        let keys: Vec<TopicPartition> = states.keys().cloned().collect();
        let Some(k) = self.pick(&keys) else { return };
        let Some(h) = self.dst_handle(&k) else { return };
        let state = states[&k];
        let b = BatchBuilder::new()
            .record(TimestampMs(T0), None, Some(b"local"))
            .build()
            .into_bytes();
        let epoch = h.read().leader_epoch().max(LeaderEpoch(0));
        let r = h.write().append_as_leader(b, epoch, LeaderOrigin::Client);
        assert_eq!(
            r.is_ok(),
            state == S::Stopped,
            "client produce to {k} in {state:?}: {r:?}"
        );
        self.note(format!(
            "client produce to the destination {k} ({state:?}): ok={}",
            r.is_ok()
        ));
    }

    fn step(&mut self) {
        match self.rng.random_range(0..100) {
            0..=24 => self.produce(),
            25..=46 => self.fetch(),
            47..=55 => self.sync(),
            56..=61 => self.leader_change(),
            62..=63 => self.unclean_election(),
            64 => self.delete_source_topic(),
            65..=69 => self.network_errors(),
            70..=72 => self.corrupt(),
            73..=75 => self.crash_and_restart(),
            76..=78 => self.pause(),
            79..=82 => self.resume(),
            83 => self.stop(),
            84..=85 => self.start_again(),
            86..=88 => self.recover(),
            89..=93 => self.tick_clock(),
            94 => self.source_rolling_restart(),
            _ => self.client_produce_to_destination(),
        }
    }

    // --- invariants ---------------------------------------------------------------------------

    fn states(&self) -> BTreeMap<TopicPartition, S> {
        self.mirror
            .describe()
            .into_iter()
            .map(|s| (tp(&s.topic, s.partition), s.state))
            .collect()
    }

    /// Every `__mirror_state` record written since the last check follows the table.
    fn check_history(&mut self) {
        for p in 0..STATE_PARTITIONS {
            let h = self.dst.get(&tp(MIRROR_STATE_TOPIC, p)).unwrap();
            let mut from = *self.state_read.get(&p).unwrap_or(&Offset(0));
            let log = h.read();
            let leo = log.log_end_offset();
            // The store's compaction stand-in rewrote the live states at the end and moved the
            // log start past records this check never read: for each key, the transitions in
            // between are gone, so its next record needs only a higher state epoch.
            let mut skipped: std::collections::HashSet<StateKey> = Default::default();
            if log.log_start_offset() > from {
                from = log.log_start_offset();
                skipped = self.history.keys().cloned().collect();
                self.seen.state_rewrites += 1;
            }
            // A crash keeps every acknowledged (durable) record, so the log never shrinks.
            assert!(
                leo >= from,
                "{MIRROR_STATE_TOPIC}-{p} lost records: {leo} < {from}"
            );
            let mut next = from;
            while next < leo {
                let info = log
                    .read(next, 1 << 20, FetchIsolation::LogEnd, true)
                    .unwrap();
                let Some(r) = info.records else { break };
                for b in Batches::new(r.slice.read_all().unwrap()) {
                    let b = b.unwrap();
                    for rec in b.records().unwrap() {
                        let rec = rec.unwrap();
                        if rec.offset < next {
                            continue;
                        }
                        let key_bytes = rec.key.as_deref().unwrap();
                        // A start's intent (written before it moves a partition, deleted once
                        // complete) is no partition state.
                        if key_bytes[..2] == KEY_TYPE_START_INTENT.to_be_bytes() {
                            continue;
                        }
                        let key = decode_key(key_bytes).unwrap();
                        let value = decode_value(&key, rec.value.as_deref().unwrap()).unwrap();
                        // Without mirror.support.unclean.leader.election a divergence must
                        // leave the partition FAILED: it never truncates (ULE_RECOVERY).
                        assert!(
                            self.ule || value.state != S::UleRecovery,
                            "{key:?}: ULE_RECOVERY with mirror.support.unclean.leader.election=false"
                        );
                        if let Some(prev) = self.history.get(&key) {
                            // A rewrite of the latest state (the same state epoch can only be
                            // the same write).
                            if *prev == value {
                                continue;
                            }
                            if skipped.remove(&key) {
                                assert!(
                                    value.state_epoch > prev.state_epoch,
                                    "{key:?}: state epoch {} after {} (across a rewrite)",
                                    value.state_epoch,
                                    prev.state_epoch
                                );
                                self.history.insert(key, value);
                                continue;
                            }
                            assert!(
                                prev.state.can_transition_to(value.state),
                                "{key:?}: {:?} → {:?} is not in the table",
                                prev.state,
                                value.state
                            );
                            assert!(
                                value.state_epoch > prev.state_epoch,
                                "{key:?}: state epoch {} after {}",
                                value.state_epoch,
                                prev.state_epoch
                            );
                        }
                        self.history.insert(key, value);
                    }
                    next = b.next_offset();
                }
            }
            drop(log);
            self.state_read.insert(p, next);
        }
    }

    fn check(&mut self) {
        self.check_history();
        let ids: HashMap<String, [u8; 16]> = TOPICS
            .iter()
            .map(|(t, _, id)| (t.to_string(), [*id; 16]))
            .collect();
        for st in self.mirror.describe() {
            let k = tp(&st.topic, st.partition);
            // What the manager reports is what it persisted last.
            let key = StateKey {
                mirror: MIRROR.into(),
                topic_id: ids[&st.topic],
                partition: st.partition,
            };
            if st.state == S::Failed {
                self.seen.failed += 1;
            }
            let persisted = self
                .history
                .get(&key)
                .unwrap_or_else(|| panic!("{k} has no persisted state"));
            assert_eq!(
                (persisted.state, persisted.state_epoch),
                (st.state, st.state_epoch),
                "{k}: reported state differs from the persisted one"
            );
            let Some(dest) = self.dst_handle(&k) else {
                continue;
            };
            // Read-only unless STOPPED.
            assert_eq!(
                dest.read().is_read_only(),
                st.state != S::Stopped,
                "{k} in {:?}: read-only flag",
                st.state
            );
            // DLE ≥ SLE, and the destination's epoch never goes down.
            let dle = dest.read().leader_epoch();
            let model = self.parts.get_mut(&k).unwrap();
            assert!(
                dle >= model.max_dle,
                "{k}: leader epoch went down from {} to {dle}",
                model.max_dle
            );
            if dle > model.max_dle {
                self.seen.epoch_bumps += 1;
            }
            model.max_dle = dle;
            if st.state == S::Mirroring
                && let Some(sle) = model.synced_source_epoch
            {
                assert!(
                    dle >= sle,
                    "{k}: MIRRORING with leader epoch {dle} below the source's {sle}"
                );
            }
            // Prefix of the source (or of what the source held when its topic was deleted).
            let dest_batches = batches(&dest);
            let source_batches = match self.deleted.get(&k) {
                Some(s) => s.clone(),
                None => batches(&self.src.get(&k).unwrap()),
            };
            let model = self.parts.get_mut(&k).unwrap();
            let limit = match (st.state, model.stopped_at) {
                (S::Stopped, Some(at)) => at,
                (S::Stopped, None) => Offset(-1),
                _ => Offset(i64::MAX),
            };
            let by_base: HashMap<Offset, &Bytes> =
                source_batches.iter().map(|(o, b)| (*o, b)).collect();
            let mismatch = dest_batches
                .iter()
                .filter(|(o, _)| *o < limit)
                .find(|(o, b)| by_base.get(o) != Some(&b))
                .map(|(o, _)| *o);
            match (mismatch, model.diverged_from) {
                (None, _) => {
                    if st.state != S::Stopped && model.diverged_from.take().is_some() {
                        self.seen.divergences_resolved += 1;
                        if self.below_fetch_v12.load(Ordering::Relaxed) {
                            self.seen.divergences_resolved_below_fetch_v12 += 1;
                            if self.epoch_questions.load(Ordering::Relaxed)
                                > model.questions_at_divergence
                            {
                                self.seen.divergences_resolved_by_epoch_questions += 1;
                            }
                        }
                    }
                }
                (Some(at), Some(from)) if at >= from => {}
                (Some(at), d) => panic!(
                    "{k} ({:?}): destination batch at {at} is not the source's (divergence allowed from {d:?})",
                    st.state
                ),
            }
            // A stopped partition ends its mirrored data with the MIRROR_PID_RESET barrier.
            if st.state == S::Stopped
                && let Some(at) = model.stopped_at
            {
                assert!(
                    dest_batches
                        .iter()
                        .any(|(o, b)| *o >= at && is_pid_reset(b)),
                    "{k}: STOPPED without a MIRROR_PID_RESET at or after {at}"
                );
            }
        }
    }

    /// Lifts every fault and drives the mirror until it settles; then every live partition
    /// still mirrored is MIRRORING and identical to the source, or FAILED for a reason the run
    /// caused.
    fn heal_and_check(&mut self) {
        self.source
            .fail_next_calls(0, SourceError::Unreachable(String::new()));
        let names: Vec<String> = TOPICS.iter().map(|t| t.0.to_string()).collect();
        for t in &names {
            let _ = self.mirror.resume_topic(t);
        }
        for _ in 0..6 {
            for t in &names {
                let _ = self.mirror.recover_topic(t);
            }
            self.sync();
            for _ in 0..40 {
                self.fetch();
            }
            self.clock.advance(60_000);
            self.check();
        }
        for st in self.mirror.describe() {
            let k = tp(&st.topic, st.partition);
            let model = &self.parts[&k];
            if self.deleted.contains_key(&k) {
                assert!(
                    matches!(st.state, S::Failed | S::Stopped | S::Mirroring),
                    "{k}: {:?}",
                    st.state
                );
                continue;
            }
            match st.state {
                S::Stopped | S::Paused => {}
                S::Failed => {
                    let f = st.failure.clone().unwrap_or_default();
                    assert!(
                        !self.ule
                            && model.diverged_from.is_some()
                            && f.contains("mirror.support.unclean.leader.election"),
                        "{k} FAILED after healing: {f}"
                    );
                }
                S::Mirroring => {
                    let dest = self.dst_handle(&k).unwrap();
                    assert_eq!(
                        batches(&dest),
                        batches(&self.src.get(&k).unwrap()),
                        "{k}: MIRRORING but not caught up after healing"
                    );
                }
                other => panic!("{k} in {other:?} after healing"),
            }
        }
    }
}

fn run(seed: u64, steps: usize) -> Coverage {
    let mut sim = Sim::new(seed);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        sim.check();
        for _ in 0..steps {
            sim.step();
            sim.check();
        }
        sim.heal_and_check();
    }));
    if let Err(e) = r {
        let keep = env_u64("MIRRORLOG_SIM_TRACE").unwrap_or(25) as usize;
        let tail: Vec<&String> = sim.trace.iter().rev().take(keep).collect();
        eprintln!(
            "simulation failed: MIRRORLOG_SIM_SEED={seed} (ule={}, source below Fetch v12 at the end: {}); last steps, newest first:",
            sim.ule,
            sim.is_below_fetch_v12()
        );
        for t in tail {
            eprintln!("  {t}");
        }
        std::panic::resume_unwind(e);
    }
    sim.seen
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a non-negative integer"))
    })
}

#[test]
fn a_mirror_keeps_its_invariants_under_random_faults_on_both_sides() {
    let steps = env_u64("MIRRORLOG_SIM_STEPS").unwrap_or(300) as usize;
    if let Some(seed) = env_u64("MIRRORLOG_SIM_SEED") {
        run(seed, steps);
        return;
    }
    let seeds = env_u64("MIRRORLOG_SIM_SEEDS").unwrap_or(20);
    let mut seen = Coverage::default();
    for seed in 0..seeds {
        seen.add(run(seed, steps));
    }
    eprintln!("{seeds} seeds × {steps} steps: {seen:?}");
    // The default seeds must reach every interesting case, or the run proves little.
    if seeds >= 20 && steps >= 300 {
        let Coverage {
            crashes,
            stops,
            divergences,
            divergences_resolved,
            epoch_bumps,
            failed,
            transactions,
            state_rewrites,
            seeds_below_fetch_v12,
            divergences_below_fetch_v12,
            divergences_resolved_below_fetch_v12,
            divergences_resolved_by_epoch_questions,
            version_changes,
        } = seen;
        for (what, n) in [
            ("crashes", crashes),
            ("stops", stops),
            ("divergences", divergences),
            ("divergences resolved", divergences_resolved),
            ("epoch bumps", epoch_bumps),
            ("FAILED partitions", failed),
            ("transactions", transactions),
            ("state topic rewrites", state_rewrites),
            ("seeds with a source below Fetch v12", seeds_below_fetch_v12),
            ("divergences below Fetch v12", divergences_below_fetch_v12),
            (
                "divergences resolved below Fetch v12",
                divergences_resolved_below_fetch_v12,
            ),
            (
                "divergences resolved after OffsetForLeaderEpoch questions",
                divergences_resolved_by_epoch_questions,
            ),
            ("source version changes", version_changes),
        ] {
            assert!(n > 0, "no {what} in {seeds} seeds: {seen:?}");
        }
    }
}
