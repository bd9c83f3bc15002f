//! The partition log: Kafka's `UnifiedLog`, with the mirror-aware append path of KIP-1279.
//!
//! A [`PartitionLog`] owns one partition directory: its sealed segments and the active one, the
//! leader-epoch cache, the producer state and the offsets (log start, high watermark, recovery
//! point). Mutations take `&mut self` — the single writer is in the type — and reads take `&self`;
//! the [`LogManager`](crate::manager::LogManager) puts each log behind a lock.
//!
//! - `append.rs`: appends by origin (client and coordinator as leader; replication and mirror as
//!   follower), rolling, flush policy;
//! - `read.rs`: reads by offset bounded by the log end, high watermark or last stable offset,
//!   aborted transactions for READ_COMMITTED, offset lookups (ListOffsets);
//! - `maintain.rs`: offsets (high watermark, log start, LSO), truncation, retention, flush;
//! - this file: opening a directory, including recovery after an unclean shutdown.

mod append;
mod maintain;
mod read;

pub use append::{LeaderOrigin, LogAppendInfo, ReplicaOrigin};
pub use read::{FetchDataInfo, FetchIsolation, LogPosition, OffsetLookup};

/// A log position a sync is about to cover, taken with [`PartitionLog::flush_point`] before the
/// sync and handed to [`PartitionLog::mark_flushed`] after it; a truncation in between voids it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushPoint {
    offset: Offset,
    truncations: u64,
}

impl FlushPoint {
    /// The offset below which the sync covers the log.
    pub fn offset(&self) -> Offset {
        self.offset
    }
}

use crate::clock::Clock;
use crate::config::LogConfig;
use crate::delayed_removal::DelayedRemovals;
use crate::epoch_cache::LeaderEpochCache;
use crate::error::{EngineError, EngineResult};
use crate::producer_state::{AppendOrigin, BatchInfo, ProducerStateManager};
use maintain::DeletedFiles;
use mirrorlog_index::{AbortedTxn, LeaderEpoch, Offset, offset_from_file_name};
use mirrorlog_segment::RecordBatch;
use mirrorlog_segment::io::{Storage, create_dir_all_durably};
use mirrorlog_segment::segment::{
    ActiveSegment, INDEX_SUFFIX, LOG_SUFFIX, SealedSegment, SegmentConfig, SegmentReader,
    TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX, segment_path,
};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How the log was left last time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shutdown {
    /// The clean-shutdown marker was present: indexes and snapshots are trusted after a sanity
    /// check.
    Clean,
    /// Crash or kill: every segment from the one holding `recovery_point` on is scanned.
    Unclean,
}

/// Where a log starts when opened: the offsets the log manager keeps in its checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOffsets {
    /// `log-start-offset-checkpoint` entry (or 0).
    pub log_start_offset: Offset,
    /// `recovery-point-offset-checkpoint` entry (or 0): everything below is known durable.
    pub recovery_point: Offset,
    /// `replication-offset-checkpoint` entry (or 0).
    pub high_watermark: Offset,
}

impl Default for OpenOffsets {
    fn default() -> Self {
        OpenOffsets {
            log_start_offset: Offset(0),
            recovery_point: Offset(0),
            high_watermark: Offset(0),
        }
    }
}

/// What opening a log did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Segments opened.
    pub segments: usize,
    /// Segments scanned batch by batch.
    pub segments_recovered: usize,
    /// Bytes cut off corrupt or torn tails.
    pub bytes_truncated: u64,
    /// Segments deleted because they followed a corrupt one.
    pub segments_deleted: usize,
    /// Why recovery truncated, with positions.
    pub problems: Vec<String>,
}

/// Told by a [`PartitionLog`] when its log start offset is about to go down (a truncation below
/// it), before the log lets go of its `&mut self`: the log manager makes the lowered value
/// durable in its `log-start-offset-checkpoint` there, so that a crash cannot bring back the
/// older, higher log start above records appended after the truncation (recovery restarts a log
/// whose end is below its checkpointed log start at that log start). See
/// [`PartitionLog::set_log_start_listener`].
pub trait LogStartListener: Send + Sync + std::fmt::Debug {
    /// The log start is going down to `new_start`; an error fails the truncation.
    ///
    /// # Errors
    /// The value could not be made durable.
    fn log_start_lowered(&self, new_start: Offset) -> EngineResult<()>;
}

/// Told by a [`PartitionLog`] when a storage failure left it in a state it cannot vouch for (a
/// truncation that failed part-way, a log-start move or retention whose files failed, a roll
/// that could not seal the old segment): the log refuses every
/// write and read from then on ([`PartitionLog::failure`]), and the log manager's listener takes
/// the log's data directory offline, as Kafka's `LogDirFailureChannel` does for any
/// `IOException` of a log. See [`PartitionLog::set_failure_listener`].
pub trait LogFailureListener: Send + Sync + std::fmt::Debug {
    /// The log failed; `reason` names it, what it was doing and the storage error.
    fn log_failed(&self, reason: &str);
}

/// One partition's log. See the module docs.
#[derive(Debug)]
pub struct PartitionLog {
    name: String,
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    config: LogConfig,
    sealed: BTreeMap<Offset, SealedSegment>,
    active: ActiveSegment,
    log_start_offset: Offset,
    high_watermark: Offset,
    recovery_point: Offset,
    /// Truncations so far (in memory): voids a [`FlushPoint`] taken before one.
    truncations: u64,
    /// The log manager deleted the partition (DeleteTopics): writes are refused, so a caller
    /// still holding it (a produce that looked it up just before) cannot write into a directory
    /// being removed.
    deleted: bool,
    epochs: LeaderEpochCache,
    /// The lowest leader epoch the partition may report, raised by a mirror's epoch bumps
    /// (KIP-1279 §7); see [`PartitionLog::leader_epoch`]. In memory only: the mirror persists
    /// it in `__mirror_state` and raises it again when it reopens.
    leader_epoch_floor: LeaderEpoch,
    producers: ProducerStateManager,
    last_flush_ms: i64,
    /// Told when the log start goes down; see [`LogStartListener`].
    log_start_listener: Option<Arc<dyn LogStartListener>>,
    /// Why the log refuses all use, once a storage failure left it inconsistent (in memory; a
    /// reopen recovers it from its files); see [`LogFailureListener`].
    failed: Option<String>,
    /// Told when the log fails; see [`LogFailureListener`].
    failure_listener: Option<Arc<dyn LogFailureListener>>,
    /// Deleted segments' files and producer snapshots, renamed `.deleted`, until
    /// `file.delete.delay.ms` lets them be removed ([`PartitionLog::remove_deleted_files`]).
    /// In memory: an open removes the `.deleted` files it finds.
    deleted_files: DelayedRemovals<DeletedFiles>,
    /// Each new segment's roll jitter (`segment.jitter.ms`), drawn at random per segment.
    jitter: SegmentJitter,
}

/// Draws each new or opened segment's roll jitter, as Kafka's `LogConfig.randomSegmentJitter`
/// does for every `LogSegment` it creates or loads (`ThreadLocalRandom`). Seeded from the OS's
/// randomness at open, so that partitions created together do not roll together; a test
/// reseeds it ([`PartitionLog::seed_segment_jitter`]) to make the draws reproducible. SplitMix64:
/// the draws only spread rolls in time, nothing depends on their quality.
#[derive(Debug, Clone)]
struct SegmentJitter {
    state: u64,
}

impl SegmentJitter {
    fn from_entropy() -> Self {
        // A v4 UUID is 122 bits from the OS's random source (`getrandom`).
        let (hi, lo) = uuid::Uuid::new_v4().as_u64_pair();
        SegmentJitter { state: hi ^ lo }
    }

    /// A draw in `0..2^31`, as Kafka's `Utils.abs(nextInt())`: a jitter is at most
    /// 2^31 - 1 ms however large `segment.jitter.ms` is, as in Kafka.
    fn next_int(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) >> 33
    }

    /// The topic's segment settings with a fresh jitter for one segment.
    fn segment_config(&mut self, config: &LogConfig) -> SegmentConfig {
        config.segment_config_for_roll(self.next_int())
    }
}

impl PartitionLog {
    /// Opens (or creates) the log in `dir`. `name` is `topic-partition`, for messages. After an
    /// unclean shutdown every segment from the one holding the recovery point on is scanned and
    /// its indexes rebuilt; the first corrupt or torn batch truncates the log there. The epoch
    /// cache is trimmed to the log end, and producer state is loaded from the newest snapshot and
    /// the log replayed after it.
    ///
    /// # Errors
    /// A storage failure, or files that cannot be made consistent (an unreadable snapshot is
    /// deleted and rebuilt from the log instead; a corrupt batch truncates; neither fails).
    pub fn open(
        storage: Arc<dyn Storage>,
        dir: &Path,
        name: &str,
        config: LogConfig,
        clock: Arc<dyn Clock>,
        shutdown: Shutdown,
        offsets: OpenOffsets,
    ) -> EngineResult<(PartitionLog, LoadReport)> {
        config.validate()?;
        // A new directory's name is durable only once its parent is synced: without that a
        // crash could lose the whole log, flushed segments included.
        create_dir_all_durably(&*storage, dir)?;
        let mut jitter = SegmentJitter::from_entropy();
        let now = clock.now_ms();
        let mut report = LoadReport::default();

        // Leftovers of interrupted deletions and compactions go; the logs we have decide the
        // segments. `.log` files live in the storage backend; indexes, snapshots and
        // checkpoints are regular files beside them.
        let mut bases = vec![];
        let mut swaps = vec![];
        let mut min_cleaned: Option<Offset> = None;
        for p in storage.list_dir(dir)? {
            let n = file_name(&p);
            if n.ends_with(".cleaned")
                && let Some(base) = offset_from_file_name(&n)
            {
                min_cleaned = Some(min_cleaned.map_or(base, |m| m.min(base)));
            }
            if n.ends_with(LOG_SWAP_SUFFIX)
                && let Some(base) = offset_from_file_name(&n)
            {
                swaps.push((base, p));
            } else if is_leftover(&n) {
                storage.remove(&p)?;
            } else if let Some(base) = n
                .ends_with(LOG_SUFFIX)
                .then(|| offset_from_file_name(&n))
                .flatten()
            {
                bases.push(base);
            }
        }
        // A `.log.swap` is a finished replacement of the segments it covers (Kafka's cleaner
        // `replaceSegments`: `.cleaned` → `.swap`, old segments deleted, `.swap` → `.log`): as
        // Kafka's `LogLoader`, complete the swap — the segments it overlaps go, it becomes the
        // `.log` (its indexes are rebuilt below, being absent).
        for (base, swap) in swaps {
            // As Kafka's `removeTempFilesAndCollectSwapFiles`: a `.swap` at or above the lowest
            // `.cleaned` offset is part of a split whose lower parts never became `.swap` (the
            // rename goes from the highest offset down): the old segment is still whole, so
            // the swap goes.
            if min_cleaned.is_some_and(|m| base >= m) {
                storage.remove(&swap)?;
                continue;
            }
            // The indexes at the swap's base belong to the old segment there, whose `.log` may
            // already be gone: they are rebuilt for the swapped-in segment.
            for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX] {
                remove_file(&segment_path(dir, base, suffix))?;
            }
            let file = storage.open(&swap, mirrorlog_segment::io::OpenMode::Read)?;
            let len = file.len()?;
            let mut last = None;
            for b in mirrorlog_segment::scan::FileBatches::new(&*file, 0, len) {
                match b {
                    Ok(b) => last = Some(b.last_offset()),
                    Err(_) => break,
                }
            }
            drop(file);
            let Some(last) = last else {
                storage.remove(&swap)?;
                continue;
            };
            for old in bases.iter().copied().filter(|b| *b >= base && *b <= last) {
                storage.remove(&segment_path(dir, old, LOG_SUFFIX))?;
                for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX] {
                    remove_file(&segment_path(dir, old, suffix))?;
                }
            }
            bases.retain(|b| !(*b >= base && *b <= last));
            storage.rename(&swap, &segment_path(dir, base, LOG_SUFFIX))?;
            storage.sync_dir(dir)?;
            bases.push(base);
        }
        bases.sort();
        std::fs::create_dir_all(dir).map_err(|e| dir_error(dir, e))?;
        for entry in std::fs::read_dir(dir).map_err(|e| dir_error(dir, e))? {
            let p = entry.map_err(|e| dir_error(dir, e))?.path();
            let n = file_name(&p);
            let stray_index = [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX]
                .iter()
                .any(|suffix| {
                    n.ends_with(suffix)
                        && offset_from_file_name(&n).is_some_and(|b| !bases.contains(&b))
                });
            if (is_leftover(&n) || stray_index) && !n.ends_with(LOG_SUFFIX) {
                remove_file(&p)?;
            }
        }
        let mut epochs = LeaderEpochCache::with_storage(storage.clone(), dir)?;
        let mut producers = ProducerStateManager::with_storage(
            storage.clone(),
            dir,
            config.producer_id_expiration_ms,
        );

        if bases.is_empty() {
            let start = offsets.log_start_offset.max(Offset(0));
            let seg_config = jitter.segment_config(&config);
            let active = ActiveSegment::create(storage.clone(), dir, start, seg_config, now)?;
            // The segment starts at the log start, which is the log end too: as Kafka's
            // `LogLoader`, entries from there on go and the last epoch below it stays, moved to
            // it (a crash inside a full truncation keeps the epoch its records were written in).
            // A cache these trims leave as it is stays unwritten, as Kafka writes the checkpoint
            // only when the cache changes: a new partition pays no durable write for it.
            trim_epochs_at_open(&mut epochs, start, start)?;
            producers.truncate_fully_and_start_at(start)?;
            let log = PartitionLog {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                storage,
                clock,
                config,
                sealed: BTreeMap::new(),
                active,
                log_start_offset: start,
                high_watermark: start,
                recovery_point: start,
                truncations: 0,
                deleted: false,
                epochs,
                leader_epoch_floor: LeaderEpoch::NONE,
                producers,
                last_flush_ms: now,
                log_start_listener: None,
                failed: None,
                failure_listener: None,
                deleted_files: DelayedRemovals::default(),
                jitter,
            };
            report.segments = 1;
            return Ok((log, report));
        }

        // Which segments must be scanned: after an unclean shutdown, every one from the segment
        // holding the recovery point; always, one whose index is missing or fails its check.
        let recover_from = match shutdown {
            Shutdown::Clean => None,
            Shutdown::Unclean => {
                let rp = offsets.recovery_point;
                Some(
                    bases
                        .iter()
                        .rev()
                        .find(|b| **b <= rp)
                        .copied()
                        .unwrap_or(bases[0]),
                )
            }
        };
        let last = *bases.last().expect("non-empty");
        let mut sealed = BTreeMap::new();
        let mut active: Option<ActiveSegment> = None;
        let mut to_recover: Vec<Offset> = vec![];
        for &base in &bases {
            // Each segment loaded draws its own jitter, as Kafka's `LogSegment.open`.
            let seg_config = jitter.segment_config(&config);
            let indexes_present = segment_path(dir, base, INDEX_SUFFIX).exists()
                && segment_path(dir, base, TIME_INDEX_SUFFIX).exists();
            let must = recover_from.is_some_and(|r| base >= r) || !indexes_present;
            if must {
                to_recover.push(base);
                continue;
            }
            if base == last {
                let a = ActiveSegment::open(storage.clone(), dir, base, seg_config, now)?;
                if a.sanity_check().is_err() {
                    drop(a);
                    to_recover.push(base);
                } else {
                    active = Some(a);
                }
            } else {
                match SealedSegment::open(storage.clone(), dir, base, seg_config, now) {
                    Ok(s) if s.sanity_check().is_ok() => {
                        sealed.insert(base, s);
                    }
                    _ => to_recover.push(base),
                }
            }
        }
        report.segments = bases.len();

        // Producer state up to the first segment to recover (or the whole log).
        let first_recover = to_recover.first().copied();
        let log_start = offsets.log_start_offset.max(bases[0]);
        let replay_to =
            first_recover.unwrap_or_else(|| active.as_ref().map_or(last, |a| a.next_offset()));
        let from = producers.truncate_and_reload(log_start, replay_to, now)?;
        for s in sealed.values() {
            replay_segment(&mut producers, s, from, replay_to)?;
        }
        if let Some(a) = &active {
            replay_segment(&mut producers, a, from, replay_to)?;
        }

        // Recover in order; a segment that had to be truncated ends the log.
        let mut truncated_at: Option<Offset> = None;
        let mut replayed_to = first_recover.unwrap_or(Offset(i64::MAX));
        for &base in &to_recover {
            let seg_config = jitter.segment_config(&config);
            if truncated_at.is_none() {
                // Sealed segments kept between the recovered ones were not replayed above
                // (producer state only went up to the first recovered segment): replay them
                // in order before this one.
                for s in sealed.range(replayed_to..base).map(|(_, s)| s) {
                    replay_segment(&mut producers, s, replayed_to, base)?;
                }
                // Past this segment's base: it is replayed by its recovery below.
                replayed_to = Offset(base.get() + 1);
            }
            if truncated_at.is_some() {
                // Everything after a truncated segment is gone.
                let a =
                    ActiveSegment::open_for_recovery(storage.clone(), dir, base, seg_config, now)?;
                a.delete()?;
                report.segments_deleted += 1;
                continue;
            }
            let mut seg =
                ActiveSegment::open_for_recovery(storage.clone(), dir, base, seg_config, now)?;
            let r = seg.recover(|seg, batch| {
                recover_batch(&mut producers, &mut epochs, seg, batch).map_err(|e| {
                    use mirrorlog_segment::segment::SegmentError;
                    match e {
                        // A storage failure stays one (an entry or checkpoint write that failed
                        // takes the directory offline, as Kafka's `loadLogs` does with an
                        // `IOException`; it does not stop the other directories' start).
                        EngineError::Segment(e) => e,
                        EngineError::Index(e) => SegmentError::Index(e),
                        e => SegmentError::Inconsistent {
                            path: seg.log_path().to_path_buf(),
                            reason: e.to_string(),
                        },
                    }
                })
            })?;
            report.segments_recovered += 1;
            // A zero-filled tail (preallocated, never written) is a clean end, not lost data.
            report.bytes_truncated += r.truncated_bytes - r.zero_tail_bytes;
            if let Some(p) = r.stopped_by {
                // The segment's own warning names the file, the reason and the bytes cut; as
                // Kafka's `removeAndDeleteSegmentsAsync` ("Deleting segments as part of log
                // recovery"), say which later segments go with it: their records, flushed or
                // not, are lost.
                let later: Vec<String> = bases
                    .iter()
                    .filter(|b| **b > base)
                    .map(|b| b.to_string())
                    .collect();
                if !later.is_empty() {
                    tracing::warn!(
                        log = %name,
                        truncated_to = %seg.next_offset(),
                        "deleting the {} segments after segment {base} as part of recovery, which truncated it: {}",
                        later.len(),
                        later.join(", ")
                    );
                }
                report
                    .problems
                    .push(format!("{}: {p}", seg.log_path().display()));
                if base != last {
                    truncated_at = Some(base);
                }
            }
            if base == last || truncated_at.is_some() {
                // The last segment may already be open as the active one (its indexes were
                // fine): after a truncation here it is past the end and must go too.
                if let Some(old) = active.replace(seg)
                    && old.base_offset() != base
                {
                    old.delete()?;
                    report.segments_deleted += 1;
                }
            } else {
                sealed.insert(base, seg.seal()?);
            }
        }
        if truncated_at.is_none() {
            // Sealed segments after the last recovered one (a clean log whose index check
            // failed in an earlier segment).
            for s in sealed.range(replayed_to..).map(|(_, s)| s) {
                replay_segment(&mut producers, s, replayed_to, Offset(i64::MAX))?;
            }
            if let Some(a) = active.as_ref().filter(|a| a.base_offset() >= replayed_to)
                && !to_recover.contains(&a.base_offset())
            {
                replay_segment(&mut producers, a, replayed_to, Offset(i64::MAX))?;
            }
        }
        // A recovered active segment replaced a sealed one: sealed entries past it must go.
        let mut active = match active {
            Some(a) => a,
            None => {
                // Every segment was sealed (a clean log whose last segment failed to open as
                // active is handled above); reopen the last as active.
                let (_, s) = sealed.pop_last().expect("at least one segment");
                s.reopen_active()?
            }
        };
        let active_base = active.base_offset();
        let later: Vec<Offset> = sealed.range(active_base..).map(|(b, _)| *b).collect();
        for b in later {
            sealed.remove(&b).expect("present").delete()?;
            report.segments_deleted += 1;
        }
        if active.sanity_check().is_err() {
            active.recover(|_, _| Ok(()))?;
        }

        let log_end = active.next_offset();
        // A checkpointed log start can be above the end (DeleteRecords moved it into a tail that
        // a crash then lost): as Kafka's `deleteSegmentsIfLogStartGreaterThanLogEnd`, the log
        // restarts empty at the log start below, so that no offset below it is handed out again.
        // This relies on the checkpoint never lagging a decrease of the log start: a truncation
        // below it tells the log's `LogStartListener`, through which the log manager writes the
        // lowered value before anything can be appended after it (an embedder of a bare log
        // must do the same).
        let restart_at = (log_start > log_end).then_some(log_start);
        let log_start = log_start.min(log_end);
        trim_epochs_at_open(&mut epochs, log_end, log_start)?;
        let hw = offsets.high_watermark.clamp(log_start, log_end);
        producers.on_high_watermark_updated(hw);
        let mut log = PartitionLog {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            storage,
            clock,
            config,
            sealed,
            active,
            log_start_offset: log_start,
            high_watermark: hw,
            recovery_point: log_end,
            truncations: 0,
            deleted: false,
            epochs,
            leader_epoch_floor: LeaderEpoch::NONE,
            producers,
            last_flush_ms: now,
            log_start_listener: None,
            failed: None,
            failure_listener: None,
            deleted_files: DelayedRemovals::default(),
            jitter,
        };
        if let Some(start) = restart_at {
            tracing::warn!(
                log = %log.name,
                "deleting all segments: the log end {log_end} is below the log start {start}"
            );
            log.truncate_fully_and_start_at(start)?;
            log.truncations = 0;
            report.segments_deleted += report.segments;
        }
        if report.segments_recovered > 0 {
            log.flush()?;
            log.producers.take_snapshot()?;
            tracing::info!(
                log = %log.name,
                segments = report.segments_recovered,
                truncated_bytes = report.bytes_truncated,
                log_end = %log_end,
                "recovered"
            );
        }
        Ok((log, report))
    }

    /// Reseeds the draws of the next segments' roll jitters (`segment.jitter.ms`), which are
    /// random otherwise, so that a test or a simulation gets the same jitters for one seed.
    pub fn seed_segment_jitter(&mut self, seed: u64) {
        self.jitter = SegmentJitter { state: seed };
    }

    /// `topic-partition`.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The partition directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The topic configuration in force.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }
    /// Whether client appends are refused (a mirror topic).
    pub fn is_read_only(&self) -> bool {
        self.config.read_only
    }
    /// The next offset to be written.
    pub fn log_end_offset(&self) -> Offset {
        self.active.next_offset()
    }
    /// The first offset readable.
    pub fn log_start_offset(&self) -> Offset {
        self.log_start_offset
    }
    /// The high watermark.
    pub fn high_watermark(&self) -> Offset {
        self.high_watermark
    }
    /// Everything below is durable.
    pub fn recovery_point(&self) -> Offset {
        self.recovery_point
    }
    /// The leader-epoch cache.
    pub fn epoch_cache(&self) -> &LeaderEpochCache {
        &self.epochs
    }
    /// The partition's leader epoch, as the controller would hold it: the latest epoch-cache
    /// entry, or the floor a mirror raised it to ([`PartitionLog::raise_leader_epoch`]) when
    /// that is higher; [`LeaderEpoch::NONE`] for a new log never bumped. A mirror keeps the
    /// source's batch epochs in its cache (so divergence detection works) while its own leader
    /// epoch stays at or above the source's (KIP-1279 §7). Truncations keep it: it never goes
    /// down while the log is open.
    pub fn leader_epoch(&self) -> LeaderEpoch {
        let latest = self.epochs.latest_epoch().unwrap_or(LeaderEpoch::NONE);
        latest.max(self.leader_epoch_floor)
    }
    /// Raises the partition's leader epoch to at least `min` without touching the epoch cache
    /// (a controller's leader-epoch bump on a partition whose log holds another cluster's
    /// epochs). Never lowers it; returns the leader epoch after.
    pub fn raise_leader_epoch(&mut self, min: LeaderEpoch) -> LeaderEpoch {
        if min > self.leader_epoch_floor {
            self.leader_epoch_floor = min;
        }
        self.leader_epoch()
    }
    /// The producer state.
    pub fn producer_state(&self) -> &ProducerStateManager {
        &self.producers
    }
    /// Total bytes of all segments.
    pub fn size_bytes(&self) -> u64 {
        self.segments().map(|s| s.size_bytes() as u64).sum()
    }
    /// Number of segments, the active one included.
    pub fn segment_count(&self) -> usize {
        self.sealed.len() + 1
    }
    /// Base offsets of all segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<Offset> {
        self.segments().map(|s| s.base_offset()).collect()
    }

    /// Offsets appended since the last flush, as Kafka's `unflushedMessages`: the log end less
    /// the recovery point (what `flush.messages` counts).
    fn unflushed_messages(&self) -> i64 {
        self.log_end_offset().get() - self.recovery_point.get()
    }

    /// All segments, oldest first.
    fn segments(&self) -> impl Iterator<Item = &SegmentReader> {
        self.sealed
            .values()
            .map(|s| &**s)
            .chain(std::iter::once(&*self.active))
    }

    /// Segments that may hold offsets ≥ `offset`, oldest first.
    fn segments_from(&self, offset: Offset) -> impl Iterator<Item = &SegmentReader> {
        let floor = self
            .sealed
            .range(..=offset)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(Offset(i64::MIN));
        self.sealed
            .range(floor..)
            .map(|(_, s)| &**s)
            .chain(std::iter::once(&*self.active))
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string()
}

/// A replacement segment log not yet swapped in (Kafka's log cleaner).
const LOG_SWAP_SUFFIX: &str = ".log.swap";

fn is_leftover(name: &str) -> bool {
    [".deleted", ".cleaned", ".swap", ".tmp"]
        .iter()
        .any(|s| name.ends_with(s))
}

fn dir_error(dir: &Path, e: std::io::Error) -> EngineError {
    EngineError::Directory {
        path: dir.to_path_buf(),
        reason: e.to_string(),
    }
}

fn remove_file(p: &Path) -> EngineResult<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(EngineError::Index(mirrorlog_index::Error::Io {
            op: "remove stray file",
            path: p.to_path_buf(),
            source,
        })),
    }
}

/// Trims the epoch cache an open found to the log it loaded, as Kafka's `LogLoader.load`: the
/// entries starting at or past the log end go (`truncateFromEnd`), then those below the log
/// start, the last of them kept at the log start (`truncateFromStart`). Writes the checkpoint
/// only when an entry changes.
fn trim_epochs_at_open(
    epochs: &mut LeaderEpochCache,
    log_end: Offset,
    log_start: Offset,
) -> EngineResult<()> {
    epochs.truncate_from_end(log_end)?;
    if let Some(e) = epochs.earliest_entry()
        && e.start_offset < log_start
    {
        epochs.truncate_from_start(log_start)?;
    }
    Ok(())
}

/// Replays the batches of `seg` in `[from, to)` into producer state (no index work).
///
/// The batches are framed, not checked against their CRC: `seg` is one recovery does not scan
/// (below the recovery point, or the log was shut down cleanly), and, as Kafka's
/// `rebuildProducerState` reads such segments' headers unchecked, a record whose bytes rotted
/// there must not fail the open (it is served as it is, for the consumer's CRC check to find).
/// A batch that cannot be framed still fails it, as in Kafka.
fn replay_segment(
    producers: &mut ProducerStateManager,
    seg: &SegmentReader,
    from: Offset,
    to: Offset,
) -> EngineResult<()> {
    if seg.size_bytes() == 0 || from >= to {
        return Ok(());
    }
    for b in seg.batches().verify(false) {
        let b = b.map_err(|e| match e {
            mirrorlog_segment::scan::ScanError::Batch(e) => EngineError::Corrupt(e),
            mirrorlog_segment::scan::ScanError::Io(e) => EngineError::from(e),
        })?;
        if b.last_offset() < from {
            continue;
        }
        if b.base_offset() >= to {
            break;
        }
        if b.is_legacy() {
            // No producer in a legacy entry (Kafka's `rebuildProducerState` skips them).
            continue;
        }
        if let Some(c) = producers.replay(&BatchInfo::from_batch(&b)?, AppendOrigin::Replication) {
            // Its transaction-index entry was written when the marker was first appended.
            producers.complete_txn(&c);
        }
    }
    Ok(())
}

/// One batch seen by recovery: epoch cache, producer state, transaction index.
fn recover_batch(
    producers: &mut ProducerStateManager,
    epochs: &mut LeaderEpochCache,
    seg: &mut ActiveSegment,
    batch: &RecordBatch,
) -> EngineResult<()> {
    if batch.is_legacy() {
        // An older Kafka's entry (magic 0 or 1) has no leader epoch and no producer: as
        // Kafka's `LogSegment.recover`, only v2 batches reach the epoch cache and producer state.
        return Ok(());
    }
    let epoch = batch.partition_leader_epoch();
    if epoch.get() >= 0 && epochs.latest_epoch().is_none_or(|l| epoch > l) {
        epochs.assign(epoch, batch.base_offset())?;
    }
    let info = BatchInfo::from_batch(batch)?;
    if let Some(c) = producers.replay(&info, AppendOrigin::Replication) {
        record_completed_txn(producers, seg, &c)?;
    }
    Ok(())
}

/// Records a completed transaction: an aborted one gets a transaction-index entry in the
/// segment holding its marker; both leave the ongoing set.
///
/// The marker is in the segment already: a failed entry write poisons the segment and is a
/// storage failure of the data directory, a full disk included
/// ([`SegmentError::TxnIndexAppend`](mirrorlog_segment::segment::SegmentError::TxnIndexAppend)),
/// as Kafka's `updateTxnIndex` failure is. The recovery point stays below the marker (the
/// segment refuses to flush) and the next open's recovery writes the entry.
fn record_completed_txn(
    producers: &mut ProducerStateManager,
    seg: &mut ActiveSegment,
    c: &crate::producer_state::CompletedTxn,
) -> EngineResult<()> {
    let lso = producers.last_stable_offset(c);
    if c.is_aborted {
        seg.append_aborted_txn(AbortedTxn {
            producer_id: c.producer_id,
            first_offset: c.first_offset,
            last_offset: c.last_offset,
            last_stable_offset: lso,
        })?;
    }
    producers.complete_txn(c);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use mirrorlog_segment::io::PwriteStorage;

    /// The roll jitters of the segments after five rolls of a log seeded with `seed`.
    fn jitters_of_rolls(seed: u64) -> Vec<i64> {
        let dir = tempfile::tempdir().unwrap();
        let mut config = LogConfig::default();
        config.segment.segment_ms = 1_000_000;
        config.segment_jitter_ms = 500_000;
        let (mut log, _) = PartitionLog::open(
            Arc::new(PwriteStorage::new()),
            dir.path(),
            "t-0",
            config,
            ManualClock::new(1_700_000_000_000),
            Shutdown::Clean,
            OpenOffsets::default(),
        )
        .unwrap();
        log.seed_segment_jitter(seed);
        (1..=5)
            .map(|base| {
                log.roll(Offset(base)).unwrap();
                log.active.config().roll_jitter_ms
            })
            .collect()
    }

    #[test]
    fn each_rolled_segment_draws_its_own_jitter_reproducibly_per_seed() {
        let jitters = jitters_of_rolls(7);
        assert!(
            jitters.iter().all(|j| (0..500_000).contains(j)),
            "{jitters:?}"
        );
        assert!(
            jitters.windows(2).any(|w| w[0] != w[1]),
            "one jitter for every segment: {jitters:?}"
        );
        assert_eq!(
            jitters,
            jitters_of_rolls(7),
            "the same seed draws the same jitters"
        );
        assert_ne!(jitters, jitters_of_rolls(8));
    }
}
