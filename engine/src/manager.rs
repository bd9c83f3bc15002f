//! The log manager: many partitions across one or more data directories, laid out as Kafka lays
//! them out.
//!
//! ```text
//! <data dir>/
//!   .kafka_cleanshutdown              present only after a clean shutdown
//!   recovery-point-offset-checkpoint  topic partition offset   (everything below is durable)
//!   log-start-offset-checkpoint       topic partition offset
//!   replication-offset-checkpoint     topic partition offset   (high watermarks)
//!   <topic>-<partition>/              partition.metadata, segments, snapshots, epoch checkpoint,
//!                                     topic.config (below)
//!   <topic>-<partition>.<id>-delete/  a deleted partition, removed `file.delete.delay.ms` later
//! ```
//!
//! The clean-shutdown marker is an empty file, written and fsynced (through the manager's
//! `Storage`, its name made durable by a sync of the data directory) last at a clean shutdown
//! (recent Kafka versions put the broker epoch in it, KIP-966; whether a directory needs
//! recovery is decided, there as here, by its existence alone). The checkpoint files and
//! `partition.metadata` are Kafka's, documented in `index/FORMAT.md`. The three offset
//! checkpoints are read and written through the manager's [`Storage`], as Kafka's
//! `CheckpointFile` writes them (`.tmp` written and synced, renamed over the file, the data
//! directory synced), so their durability is the storage's.
//!
//! # `topic.config`
//!
//! Not a Kafka file (Kafka keeps topic overrides in the controller's metadata log): the
//! partition's own topic settings, in every partition directory of the topic that has any.
//! UTF-8 text, one `key=value` per line, `\n`-terminated, in
//! [`LogConfig::SUPPORTED_TOPIC_KEYS`] order; blank lines and lines starting with `#` are
//! skipped on reading; a line without `=` fails the start (README, "Reliability"). Keys are Kafka
//! topic config names with the value as DescribeConfigs reports it; a key is written when it is
//! one of the topic's overrides ([`LogConfig::overrides`]) or differs from the broker defaults,
//! so an override equal to today's default stays one. One extra line,
//! `mirrorlog.read.only=true`, marks a mirror topic (client produce refused). A missing file
//! means the broker defaults and writable. Read and written through the manager's `Storage`, as
//! `partition.metadata` is. Replaced atomically: written to `topic.config.tmp`,
//! fsynced, renamed over `topic.config`, the partition directory fsynced; a crash leaves the
//! old or the new file (a stale `.tmp` is overwritten). No checksum.
//!
//! A partition directory with log files but no `partition.metadata` (a Kafka data directory
//! older than 2.8, or a lost file: `create` writes it before any log data) is loaded under the
//! topic id of the topic's lowest partition that has the file, or a new id when none has,
//! written and logged as a warning; not for a mirror topic (read-only), whose id is its source
//! topic's and keys its `__mirror_state` records: its data directory goes offline instead, as
//! for a garbled `partition.metadata`.
//!
//! On open, a data dir without the clean-shutdown marker has each of its logs recovered from its
//! recovery point, several logs in parallel, with progress logged. The marker is removed before
//! the directory's logs are loaded (a crash, or a failure of the directory, from then on makes
//! the next start recover it) and written again by [`LogManager::shutdown`].
//!
//! Each partition sits behind a lock in a [`PartitionHandle`]. A durable append takes the lock
//! only to append, then waits for its `fdatasync` outside it through the shared
//! [`GroupCommit`], so concurrent durable appends, on one
//! partition or many, share syncs.
//!
//! # Offline data directories
//! As Kafka's `LogDirFailureChannel` does, the first storage failure that leaves a file's
//! contents unknown — a failed `fdatasync` (Linux may have dropped the dirty pages, so a later
//! successful sync would pretend they were written), or a failed write other than running out
//! of space — takes the partition's whole data directory offline ([`LogDir`]): every partition
//! in it then refuses appends with [`EngineError::LogDirOffline`] (`KAFKA_STORAGE_ERROR`), the
//! manager stops writing checkpoints there and a shutdown leaves no clean-shutdown marker, so the
//! next start recovers it. Running out of space while writing is not such a failure: the segment
//! cuts the partial write off again and the append can be retried once space returns. Two
//! exceptions, out of space included: the transaction index, whose entry is written after the
//! ABORT marker is in the log (any failure there takes the directory offline, as in Kafka, and
//! the next start's recovery writes the entry); and a truncation that fails part-way: the log
//! itself fails and tells the manager ([`LogFailureListener`]), whoever held its lock — a broker
//! handler, the mirror — so the directory goes offline without every caller having to see to it.
//!
//! # I/O mode (`log.io.mode`)
//!
//! [`LogManagerConfig::io_mode`] picks how segment `.log` files are written:
//!
//! - `buffered` (the default, and Kafka's choice): through the page cache with the storage
//!   backend given to [`LogManager::open`] (`pwrite` unless `MIRRORLOG_IO` says otherwise); a
//!   durable append pays `fdatasync`. With [`LogManagerConfig::preallocate`] (`log.preallocate`,
//!   on by default) the backend is wrapped in [`ZeroAheadStorage`]: written zeros are kept ahead
//!   of every synced active `.log`, so that `fdatasync` writes the appended data and commits no
//!   file-system metadata.
//! - `direct`: the backend is wrapped in [`DirectStorage`] (settings
//!   [`LogManagerConfig::direct`]): active segments are preallocated and appended with
//!   `O_DIRECT` through one io_uring reactor, whose every submission carries the pending writes
//!   and syncs of all partitions — the group commit's per-file syncs become waits on that ring.
//!   Needs a file system with `O_DIRECT` (not tmpfs) and io_uring; measured by
//!   `mirrorlog-bench direct-append`.

use crate::checkpoint_io::{index_io, read_if_exists, replace_durably};
use crate::clock::Clock;
use crate::config::LogConfig;
use crate::delayed_removal::DelayedRemovals;
use crate::epoch_cache::LeaderEpochCache;
use crate::error::{EngineError, EngineResult};
use crate::group_commit::{GroupCommit, GroupCommitConfig};
use crate::log::{
    LeaderOrigin, LogAppendInfo, LogFailureListener, LogStartListener, OpenOffsets, PartitionLog,
    ReplicaOrigin, Shutdown,
};
use bytes::Bytes;
use mirrorlog_index::checkpoint::{decode_offset_checkpoint, encode_offset_checkpoint};
use mirrorlog_index::{
    ErrorChain, LeaderEpoch, Offset, PartitionMetadata, TopicId, TopicPartition,
};
use mirrorlog_segment::io::{
    DirectConfig, DirectDurability, DirectStorage, OpenMode, SimStorage, Storage, ZeroAheadConfig,
    ZeroAheadStorage, create_dir_all_durably,
};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// Kafka's clean-shutdown marker file name.
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// Recovery points.
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
/// Log start offsets.
pub const LOG_START_CHECKPOINT: &str = "log-start-offset-checkpoint";
/// High watermarks.
pub const HIGH_WATERMARK_CHECKPOINT: &str = "replication-offset-checkpoint";

/// Log manager settings.
#[derive(Debug, Clone)]
pub struct LogManagerConfig {
    /// `log.dirs`: one or more data directories. At least one.
    pub data_dirs: Vec<PathBuf>,
    /// `num.recovery.threads.per.data.dir`: the threads that open (and recover) each data
    /// directory's logs, a pool per directory, as Kafka's. Default 2; range 1 ..= 64.
    pub recovery_threads: usize,
    /// The broker-level topic defaults.
    pub default_log_config: LogConfig,
    /// Group commit settings.
    pub group_commit: GroupCommitConfig,
    /// `log.io.mode`: how `.log` files are written. Default [`IoMode::Buffered`]; values
    /// `buffered`, `direct` (see the module docs).
    pub io_mode: IoMode,
    /// Settings of the direct mode (ignored when buffered); `log.io.direct.durability`
    /// (`dsync`, the default, or `fdatasync`) sets its durability. Defaults and ranges:
    /// [`DirectConfig`].
    pub direct: DirectConfig,
    /// `log.preallocate` (buffered mode only): keep written zeros ahead of the appends of every
    /// active `.log` file that is synced, so that a durable append's `fdatasync` writes data
    /// only and commits no file-system metadata ([`ZeroAheadStorage`]). Default
    /// [`LogManagerConfig::DEFAULT_PREALLOCATE`]. Kafka's key of the same name preallocates
    /// whole segments as sparse files, which does not spare that commit; the effect on disk is
    /// the same: an active `.log` may end in zeros after a crash, cut by recovery, and sealed or
    /// cleanly closed files are exact. Ignored on the simulated backend and on file systems
    /// without `O_DIRECT` (tmpfs), where it would gain nothing.
    pub preallocate: bool,
    /// Window sizes of `preallocate`. Defaults and ranges: [`ZeroAheadConfig`].
    pub zero_ahead: ZeroAheadConfig,
    /// `log.retention.check.interval.ms`: how often [`LogManager::maintain`] applies retention
    /// (Kafka's `kafka-log-retention` task, `cleanupLogs`); the other upkeep runs at every call.
    /// Default 300000 (5 minutes); range 1 ..= i64::MAX.
    pub retention_check_interval_ms: i64,
    /// `log.initial.task.delay.ms` (a Kafka internal setting): the first retention check comes
    /// this long after the open. Default 30000; range 0 ..= i64::MAX.
    pub initial_task_delay_ms: i64,
}

/// `log.io.mode`: how segment `.log` files are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoMode {
    /// Through the page cache, as Kafka does; durable appends pay `fdatasync`. The default.
    #[default]
    Buffered,
    /// `O_DIRECT` through io_uring, preallocated files, a tail cache for readers.
    Direct,
}

impl IoMode {
    /// `"buffered"` or `"direct"`.
    pub fn as_str(self) -> &'static str {
        match self {
            IoMode::Buffered => "buffered",
            IoMode::Direct => "direct",
        }
    }

    /// Parses a `log.io.mode` value.
    ///
    /// # Errors
    /// A message naming the setting, the value and the valid ones.
    pub fn parse(s: &str) -> Result<IoMode, String> {
        match s {
            "buffered" => Ok(IoMode::Buffered),
            "direct" => Ok(IoMode::Direct),
            other => Err(format!(
                "log.io.mode={other}: expected `buffered` or `direct`"
            )),
        }
    }
}

/// Parses a `log.io.direct.durability` value (`dsync` or `fdatasync`).
///
/// # Errors
/// A message naming the setting, the value and the valid ones.
pub fn parse_direct_durability(s: &str) -> Result<DirectDurability, String> {
    DirectDurability::parse(s)
        .ok_or_else(|| format!("log.io.direct.durability={s}: expected `dsync` or `fdatasync`"))
}

impl LogManagerConfig {
    /// Defaults for one data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        LogManagerConfig {
            data_dirs: vec![data_dir.into()],
            recovery_threads: 2,
            default_log_config: LogConfig::default(),
            group_commit: GroupCommitConfig::default(),
            io_mode: IoMode::Buffered,
            direct: DirectConfig::default(),
            preallocate: Self::DEFAULT_PREALLOCATE,
            zero_ahead: ZeroAheadConfig::default(),
            retention_check_interval_ms: Self::DEFAULT_RETENTION_CHECK_INTERVAL_MS,
            initial_task_delay_ms: Self::DEFAULT_INITIAL_TASK_DELAY_MS,
        }
    }

    /// Default of [`LogManagerConfig::retention_check_interval_ms`] (Kafka's).
    pub const DEFAULT_RETENTION_CHECK_INTERVAL_MS: i64 = 300_000;
    /// Default of [`LogManagerConfig::initial_task_delay_ms`] (Kafka's).
    pub const DEFAULT_INITIAL_TASK_DELAY_MS: i64 = 30_000;

    /// Default of [`LogManagerConfig::preallocate`].
    pub const DEFAULT_PREALLOCATE: bool = true;

    /// Rejects out-of-range settings.
    ///
    /// # Errors
    /// A message naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        if self.data_dirs.is_empty() {
            return Err("log.dirs must name at least one directory".into());
        }
        if !(1..=64).contains(&self.recovery_threads) {
            return Err(format!(
                "recovery threads {} is outside 1..=64",
                self.recovery_threads
            ));
        }
        if self.retention_check_interval_ms < 1 {
            return Err(format!(
                "log.retention.check.interval.ms {} is outside 1..={}",
                self.retention_check_interval_ms,
                i64::MAX
            ));
        }
        if self.initial_task_delay_ms < 0 {
            return Err(format!(
                "log.initial.task.delay.ms {} is outside 0..={}",
                self.initial_task_delay_ms,
                i64::MAX
            ));
        }
        self.default_log_config
            .validate()
            .map_err(|e| e.to_string())?;
        self.group_commit.validate().map_err(|e| e.to_string())?;
        self.zero_ahead.validate()?;
        self.direct
            .validate()
            .map_err(|e| format!("log.io.direct: {e}"))
    }
}

/// An append that is written but not yet known durable; see
/// [`PartitionHandle::append_as_leader_unsynced`].
#[derive(Debug, Clone)]
pub struct PendingSync {
    file: Arc<dyn mirrorlog_segment::io::StorageFile>,
    last: Offset,
    /// The log's truncation count right after the append: a different count at the wait means
    /// the append may have been truncated away.
    truncations: u64,
}

/// A data directory and whether it is still usable; shared by every partition in it. See the
/// module docs ("Offline data directories").
#[derive(Debug)]
pub struct LogDir {
    path: PathBuf,
    /// The storage its checkpoint files are written and read through (the manager's).
    storage: Arc<dyn Storage>,
    /// Why it went offline; set once, never cleared (a restart recovers the directory).
    offline: std::sync::OnceLock<String>,
    /// The offsets of every partition in the directory, as their logs last published them: what
    /// its checkpoints are written from, without taking any log's lock (a truncation writes the
    /// log-start checkpoint while it holds its own log's write lock).
    published: Mutex<BTreeMap<TopicPartition, Arc<PublishedOffsets>>>,
    /// Serialises the writes of this directory's checkpoints: every writer goes through the same
    /// `.tmp` path of each checkpoint file, and a later snapshot must not be overwritten by an
    /// earlier one (each writer reads the published offsets under it).
    checkpoint_lock: Mutex<()>,
}

/// A log's checkpointed offsets, published by its [`PartitionHandle`] whenever a write guard on
/// the log is released (and the log start also when a truncation is about to lower it), so that
/// checkpoints need no log lock.
#[derive(Debug)]
struct PublishedOffsets {
    log_start: AtomicI64,
    recovery_point: AtomicI64,
    high_watermark: AtomicI64,
}

impl PublishedOffsets {
    fn of(log: &PartitionLog) -> Arc<PublishedOffsets> {
        Arc::new(PublishedOffsets {
            log_start: AtomicI64::new(log.log_start_offset().get()),
            recovery_point: AtomicI64::new(log.recovery_point().get()),
            high_watermark: AtomicI64::new(log.high_watermark().get()),
        })
    }

    fn publish(&self, log: &PartitionLog) {
        self.log_start
            .store(log.log_start_offset().get(), Ordering::SeqCst);
        self.recovery_point
            .store(log.recovery_point().get(), Ordering::SeqCst);
        self.high_watermark
            .store(log.high_watermark().get(), Ordering::SeqCst);
    }
}

/// Which checkpoint files [`LogDir::write_checkpoints`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checkpoints {
    All,
    LogStartOnly,
}

impl LogDir {
    fn new(path: PathBuf, storage: Arc<dyn Storage>) -> Arc<LogDir> {
        Arc::new(LogDir {
            path,
            storage,
            offline: std::sync::OnceLock::new(),
            published: Mutex::new(BTreeMap::new()),
            checkpoint_lock: Mutex::new(()),
        })
    }

    /// Writes the directory's checkpoints from the published offsets through the storage (tmp +
    /// fsync + rename + directory fsync, see [`write_offset_checkpoint`]). Takes no log lock, so
    /// it may be called with one held.
    fn write_checkpoints(&self, which: Checkpoints) -> EngineResult<()> {
        let _one_writer = self.checkpoint_lock.lock();
        let mut rp = BTreeMap::new();
        let mut ls = BTreeMap::new();
        let mut hw = BTreeMap::new();
        for (tp, p) in self.published.lock().iter() {
            rp.insert(tp.clone(), Offset(p.recovery_point.load(Ordering::SeqCst)));
            ls.insert(tp.clone(), Offset(p.log_start.load(Ordering::SeqCst)));
            hw.insert(tp.clone(), Offset(p.high_watermark.load(Ordering::SeqCst)));
        }
        let write = |name: &str, offsets| {
            write_offset_checkpoint(&*self.storage, &self.path.join(name), offsets)
        };
        if which == Checkpoints::All {
            write(RECOVERY_POINT_CHECKPOINT, &rp)?;
        }
        write(LOG_START_CHECKPOINT, &ls)?;
        if which == Checkpoints::All {
            write(HIGH_WATERMARK_CHECKPOINT, &hw)?;
        }
        Ok(())
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the directory is offline, if it is.
    pub fn offline_reason(&self) -> Option<&str> {
        self.offline.get().map(String::as_str)
    }

    /// Takes the directory offline (the first reason is kept).
    pub fn take_offline(&self, reason: String) {
        if self.offline.set(reason.clone()).is_ok() {
            tracing::error!(dir = %self.path.display(), "log dir offline: {reason}");
        }
    }

    fn check(&self) -> EngineResult<()> {
        match self.offline.get() {
            None => Ok(()),
            Some(reason) => Err(EngineError::LogDirOffline {
                path: self.path.clone(),
                reason: reason.clone(),
            }),
        }
    }
}

/// A managed log's [`LogStartListener`]: a log start going down is written to the data dir's
/// log-start checkpoint at once, with the log's write lock still held, so no append can land
/// after the truncation before the lowered value is durable. A failed write takes the directory
/// offline (appends through the handle are refused from then on). It is the log's
/// [`LogFailureListener`] too.
#[derive(Debug)]
struct LogStartCheckpointer {
    tp: TopicPartition,
    dir: Arc<LogDir>,
    published: Arc<PublishedOffsets>,
}

impl LogStartListener for LogStartCheckpointer {
    fn log_start_lowered(&self, new_start: Offset) -> EngineResult<()> {
        self.dir.check()?;
        self.published
            .log_start
            .fetch_min(new_start.get(), Ordering::SeqCst);
        let r = self.dir.write_checkpoints(Checkpoints::LogStartOnly);
        if let Err(e) = &r {
            self.dir.take_offline(format!(
                "{}: writing the log start {new_start} to {LOG_START_CHECKPOINT}: {}",
                self.tp,
                ErrorChain(e)
            ));
        }
        r
    }
}

/// A failed log (a truncation or log-start move left part-way by a storage failure) takes its
/// data directory offline, whoever called it: the log manager, a broker handler or the mirror
/// holding the log's write guard.
impl LogFailureListener for LogStartCheckpointer {
    fn log_failed(&self, reason: &str) {
        self.dir.take_offline(reason.to_string());
    }
}

/// Whether `e` leaves a file in an unknown state, so that its data directory must go offline:
/// any storage failure except running out of space while writing, which the segment undoes.
/// That includes the files beside the segments a log writes through the storage (the
/// leader-epoch checkpoint, producer snapshots), whose failures come as the index crate's
/// [`Io`](mirrorlog_index::Error::Io) errors: a failed sync there is a failed sync all the same
/// (as Kafka's `LogDirFailureChannel` takes any `IOException` of a checkpoint). A failed
/// transaction-index entry always does, out of space included: its ABORT marker is already in the
/// log, which nothing undoes.
pub(crate) fn takes_dir_offline(e: &EngineError) -> bool {
    use mirrorlog_segment::io::IoOp;
    use mirrorlog_segment::segment::SegmentError;
    match e {
        EngineError::Segment(SegmentError::Io(io)) => !(io.op == IoOp::WriteAt && io.is_no_space()),
        EngineError::Segment(SegmentError::Failed { .. } | SegmentError::TxnIndexAppend { .. }) => {
            true
        }
        // An index file's failure inside a segment operation (a sync of its indexes when it is
        // sealed) is one all the same.
        EngineError::Index(mirrorlog_index::Error::Io { source, .. })
        | EngineError::Segment(SegmentError::Index(mirrorlog_index::Error::Io {
            source, ..
        })) => source.kind() != std::io::ErrorKind::StorageFull,
        _ => false,
    }
}

/// One partition: its log behind a lock, and where it lives.
#[derive(Debug)]
pub struct PartitionHandle {
    tp: TopicPartition,
    topic_id: TopicId,
    dir: Arc<LogDir>,
    log: RwLock<PartitionLog>,
    group_commit: Arc<GroupCommit>,
    /// The log's offsets for the checkpoints, refreshed when a write guard is released.
    published: Arc<PublishedOffsets>,
}

/// Exclusive access to a managed log ([`PartitionHandle::write`]): derefs to the
/// [`PartitionLog`]; on release it publishes the log's offsets for the data dir's checkpoints,
/// and takes the data dir offline if a storage failure under it poisoned the log.
#[derive(Debug)]
pub struct PartitionLogWriteGuard<'a> {
    guard: parking_lot::RwLockWriteGuard<'a, PartitionLog>,
    handle: &'a PartitionHandle,
}

impl std::ops::Deref for PartitionLogWriteGuard<'_> {
    type Target = PartitionLog;
    fn deref(&self) -> &PartitionLog {
        &self.guard
    }
}

impl std::ops::DerefMut for PartitionLogWriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut PartitionLog {
        &mut self.guard
    }
}

impl Drop for PartitionLogWriteGuard<'_> {
    fn drop(&mut self) {
        // Still under the lock: publications follow the order of the log's writers.
        self.handle.published.publish(&self.guard);
        // A storage failure that poisoned the log under this guard (a failed write or sync, a
        // failed transaction-index entry) takes the directory offline before anyone else gets
        // the lock, whichever path wrote: the mirror appends through the guard, not through the
        // handle's append methods, and a poisoned log must not be fetched or checkpointed as if
        // whole (Kafka handles an `IOException` inside `UnifiedLog` itself).
        if self.handle.dir.offline_reason().is_none()
            && let Err(e) = self.guard.check_usable()
        {
            self.handle
                .dir
                .take_offline(format!("{}: {}", self.handle.tp, ErrorChain(&e)));
        }
    }
}

impl PartitionHandle {
    /// The topic and partition.
    pub fn topic_partition(&self) -> &TopicPartition {
        &self.tp
    }
    /// The topic id from `partition.metadata`.
    pub fn topic_id(&self) -> TopicId {
        self.topic_id
    }
    /// The data directory holding it.
    pub fn data_dir(&self) -> &Path {
        &self.dir.path
    }

    /// Fails with [`EngineError::LogDirOffline`] when the partition's data directory went
    /// offline. Appends through this handle check it themselves; readers going through
    /// [`read`](Self::read) call it first, as a fetch must not serve an offline directory.
    ///
    /// # Errors
    /// The directory is offline.
    pub fn check_online(&self) -> EngineResult<()> {
        self.dir.check()
    }

    /// Passes `r` through, taking the data directory offline first when its error leaves a
    /// file in an unknown state.
    fn noting_failure<T>(&self, r: EngineResult<T>) -> EngineResult<T> {
        if let Err(e) = &r
            && takes_dir_offline(e)
        {
            self.dir
                .take_offline(format!("{}: {}", self.tp, ErrorChain(e)));
        }
        r
    }
    /// Shared access to the log (reads).
    pub fn read(&self) -> parking_lot::RwLockReadGuard<'_, PartitionLog> {
        self.log.read()
    }
    /// Exclusive access to the log (appends, truncation, offsets). Releasing it publishes the
    /// log's offsets for the next checkpoint; a truncation below the log start writes the
    /// log-start checkpoint itself before it returns.
    pub fn write(&self) -> PartitionLogWriteGuard<'_> {
        PartitionLogWriteGuard {
            guard: self.log.write(),
            handle: self,
        }
    }

    /// Wraps `log` for the manager: its offsets published in `dir`, its log-start decreases
    /// made durable there.
    fn new(
        tp: TopicPartition,
        topic_id: TopicId,
        dir: Arc<LogDir>,
        mut log: PartitionLog,
        group_commit: Arc<GroupCommit>,
    ) -> PartitionHandle {
        let published = PublishedOffsets::of(&log);
        let listener = Arc::new(LogStartCheckpointer {
            tp: tp.clone(),
            dir: dir.clone(),
            published: published.clone(),
        });
        log.set_log_start_listener(Some(listener.clone()));
        log.set_failure_listener(Some(listener));
        dir.published.lock().insert(tp.clone(), published.clone());
        PartitionHandle {
            tp,
            topic_id,
            dir,
            log: RwLock::new(log),
            group_commit,
            published,
        }
    }

    /// Appends as leader and returns once the batch is durable: the log's lock is held only for
    /// the append; the `fdatasync` is shared with every other durable append in flight.
    /// "Returned Ok" means the batch survives a crash of the process or the machine.
    ///
    /// # Errors
    /// As [`PartitionLog::append_as_leader`], plus a failed sync (the partition must then be
    /// reopened; its acknowledged data is intact).
    pub fn append_as_leader_durable(
        &self,
        records: Bytes,
        epoch: LeaderEpoch,
        origin: LeaderOrigin,
    ) -> EngineResult<LogAppendInfo> {
        let (info, pending) = self.append_as_leader_unsynced(records, epoch, origin)?;
        if let Some(pending) = pending {
            self.wait_durable(pending)?;
        }
        Ok(info)
    }

    /// The first half of [`append_as_leader_durable`](Self::append_as_leader_durable): appends
    /// as leader and returns what still has to be synced (`None` for a duplicate, which is
    /// already durable or being synced by its first append). Lets a caller append several
    /// requests in order and wait for their syncs later, so they share one group-commit round.
    ///
    /// # Errors
    /// As [`PartitionLog::append_as_leader`].
    pub fn append_as_leader_unsynced(
        &self,
        records: Bytes,
        epoch: LeaderEpoch,
        origin: LeaderOrigin,
    ) -> EngineResult<(LogAppendInfo, Option<PendingSync>)> {
        self.check_online()?;
        let mut log = self.write();
        let info = self.noting_failure(log.append_as_leader(records, epoch, origin))?;
        let pending = (!info.duplicate).then(|| PendingSync {
            file: log.active_log_file(),
            last: info.last_offset,
            truncations: log.truncations(),
        });
        Ok((info, pending))
    }

    /// The second half of [`append_as_leader_durable`](Self::append_as_leader_durable): returns
    /// once the append behind `pending` is durable.
    ///
    /// # Errors
    /// A failed sync (the partition must then be reopened; its acknowledged data is intact), or
    /// [`EngineError::TruncatedBeforeDurable`] when the log was truncated after the append (the
    /// append may be gone, so it is not acknowledged).
    pub fn wait_durable(&self, pending: PendingSync) -> EngineResult<()> {
        self.sync(pending)
    }

    /// As [`append_as_leader_durable`](Self::append_as_leader_durable), for a replica append.
    ///
    /// # Errors
    /// As [`PartitionLog::append_as_follower`], plus a failed sync.
    pub fn append_as_follower_durable(
        &self,
        records: Bytes,
        origin: ReplicaOrigin,
    ) -> EngineResult<LogAppendInfo> {
        self.check_online()?;
        let (info, pending) = {
            let mut log = self.write();
            let info = self.noting_failure(log.append_as_follower(records, origin))?;
            let pending = PendingSync {
                file: log.active_log_file(),
                last: info.last_offset,
                truncations: log.truncations(),
            };
            (info, pending)
        };
        if info.batch_count > 0 {
            self.sync(pending)?;
        }
        Ok(info)
    }

    fn sync(&self, pending: PendingSync) -> EngineResult<()> {
        let PendingSync {
            file,
            last,
            truncations,
        } = pending;
        self.check_online()?;
        // What the sync below will have made durable: every append below the log end has been
        // written (appends write under the log lock) and the sync starts after this point, so
        // while `file` is still the active segment's it covers the whole log (sealed segments
        // were synced when they were sealed). A caller that already finds its append below the
        // recovery point was covered by another's sync and needs none of its own; so callers
        // waiting one after another (a connection's acks=all requests, answered in order) still
        // share one sync, as concurrent ones do through the group commit.
        let covered = {
            let log = self.log.read();
            // A truncation since the append may have removed it (and offsets up to `last` may
            // now hold other batches, so neither the recovery point nor the file says anything
            // about it).
            if log.truncations() != truncations {
                return Err(EngineError::TruncatedBeforeDurable {
                    partition: self.tp.to_string(),
                    last_offset: last,
                });
            }
            if log.recovery_point() > last {
                return Ok(());
            }
            // A truncation before the mark voids this point (bytes below it could be rewritten
            // after the sync started): `mark_flushed` then leaves the recovery point alone.
            if std::ptr::addr_eq(Arc::as_ptr(&log.active_log_file()), Arc::as_ptr(&file)) {
                log.flush_point(log.log_end_offset())
            } else {
                log.flush_point(last.next())
            }
        };
        if let Err(e) = self.group_commit.sync(&file) {
            let reason = format!("{}: group commit sync failed: {}", self.tp, ErrorChain(&e));
            self.dir.take_offline(reason.clone());
            return Err(EngineError::LogDirOffline {
                path: self.dir.path.clone(),
                reason,
            });
        }
        let mut log = self.write();
        // A flush of the same file racing this sync (`maintain`, a checkpoint) may have been the
        // one told of a failed write-back: Linux reports it once per open file description, so
        // this sync's `Ok` does not prove the bytes durable. Such a flush takes the directory
        // offline before it lets go of the log lock, so look before acknowledging.
        self.check_online()?;
        log.mark_flushed(covered);
        Ok(())
    }
}

/// What opening the data directories found.
#[derive(Debug, Clone, Default)]
pub struct ManagerLoadReport {
    /// Logs opened.
    pub logs: usize,
    /// Logs that went through recovery (their dir had no clean-shutdown marker).
    pub unclean_logs: usize,
    /// Bytes cut off corrupt or torn tails, summed.
    pub bytes_truncated: u64,
    /// Problems recovery found, per log.
    pub problems: Vec<String>,
}

/// The log manager. See the module docs.
#[derive(Debug)]
pub struct LogManager {
    config: LogManagerConfig,
    storage: Arc<dyn Storage>,
    clock: Arc<dyn Clock>,
    /// One per `config.data_dirs` entry, in the same order.
    dirs: Vec<Arc<LogDir>>,
    logs: RwLock<BTreeMap<TopicPartition, Arc<PartitionHandle>>>,
    /// Partitions of directories that went offline while loading and whose logs were not
    /// loaded (see [`LogManager::offline_partitions`]): they stay offline, never created again
    /// in another directory.
    offline_partitions: BTreeMap<TopicPartition, Arc<LogDir>>,
    group_commit: Arc<GroupCommit>,
    /// Serialises creation, deletion and config changes (not appends).
    admin: Mutex<()>,
    /// When [`maintain`](LogManager::maintain) next applies retention (clock ms).
    next_retention_check_ms: AtomicI64,
    /// Deleted partitions' `-delete` directories (with their data directory), until the broker's
    /// `file.delete.delay.ms` lets [`maintain`](LogManager::maintain) remove them.
    deleted_dirs: Mutex<DelayedRemovals<(Arc<LogDir>, PathBuf)>>,
}

/// Parses a partition directory name `<topic>-<partition>`.
pub fn parse_partition_dir(name: &str) -> Option<TopicPartition> {
    let (topic, partition) = name.rsplit_once('-')?;
    let partition: i32 = partition.parse().ok()?;
    if topic.is_empty()
        || partition < 0
        || !topic
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return None;
    }
    Some(TopicPartition {
        topic: topic.to_string(),
        partition,
    })
}

impl LogManager {
    /// Opens every partition in the data directories, recovering the logs of directories that
    /// were not shut down cleanly, in parallel.
    ///
    /// # Errors
    /// An invalid configuration, an unreadable directory, or a log that cannot be opened.
    pub fn open(
        config: LogManagerConfig,
        storage: Arc<dyn Storage>,
        clock: Arc<dyn Clock>,
    ) -> EngineResult<(LogManager, ManagerLoadReport)> {
        config.validate().map_err(|reason| EngineError::Directory {
            path: config.data_dirs[0].clone(),
            reason,
        })?;
        let storage = Self::storage_for_mode(&config, storage)?;
        let group_commit = GroupCommit::new(config.group_commit);
        let dirs: Vec<Arc<LogDir>> = config
            .data_dirs
            .iter()
            .map(|d| LogDir::new(d.clone(), storage.clone()))
            .collect();
        // A log to open: its data directory, its directory, whether the data directory was
        // shut down cleanly, its checkpointed offsets.
        type Job = (Arc<LogDir>, PathBuf, TopicPartition, bool, OpenOffsets);
        let mut jobs: Vec<Job> = vec![];
        // The partitions of directories that go offline while loading, as far as they can be
        // known, so that they stay offline instead of being created anew elsewhere.
        let mut offline_partitions: BTreeMap<TopicPartition, Arc<LogDir>> = BTreeMap::new();
        // Topics with a partition directory holding log files but no `partition.metadata`.
        let mut topics_without_metadata: BTreeSet<String> = BTreeSet::new();
        // As Kafka's `loadLogs`: a deleted partition's directory found at start is removed
        // `file.delete.delay.ms` after it, not at once.
        let mut deleted_dirs = DelayedRemovals::default();
        'dirs: for (data_dir, dir) in config.data_dirs.iter().zip(&dirs) {
            // As Kafka's `loadLogs` (and `createAndValidateLogDirs`): an I/O failure creating,
            // reading or listing one data directory takes that directory offline, and none of
            // its logs is loaded; the other directories are.
            let first_job = jobs.len();
            macro_rules! or_offline {
                ($r:expr) => {
                    match $r {
                        Ok(v) => v,
                        Err(e) => {
                            let e = EngineError::from(e);
                            dir.take_offline(format!(
                                "loading {}: {}",
                                data_dir.display(),
                                ErrorChain(&e)
                            ));
                            let known = jobs.drain(first_job..).map(|job| job.2);
                            let named = partitions_of_offline_dir(&*storage, data_dir);
                            for tp in known.chain(named) {
                                offline_partitions.insert(tp, dir.clone());
                            }
                            continue 'dirs;
                        }
                    }
                };
            }
            // As Kafka's `createAndValidateLogDirs`: a data directory created here has its
            // parent synced, or a crash could lose it with every partition placed in it. Through
            // the storage first, so that a real backend finds it missing and syncs.
            or_offline!(create_dir_all_durably(&*storage, data_dir));
            or_offline!(std::fs::create_dir_all(data_dir).map_err(|e| dir_err(data_dir, e)));
            let marker = data_dir.join(CLEAN_SHUTDOWN_FILE);
            let clean = storage.exists(&marker);
            // As Kafka's `loadLogs` (KAFKA-10471): the marker goes before any log of the
            // directory is loaded, so a crash while loading, or a directory that fails while
            // loading (offline from then on), is recovered at the next start.
            if clean {
                or_offline!(storage.remove(&marker));
                or_offline!(storage.sync_dir(data_dir));
            }
            // As Kafka's `CheckpointFileWithFailureHandler.read`: a checkpoint that cannot be
            // read, or does not parse (Kafka's `CheckpointFile` reports a malformed line or
            // version as an `IOException`), takes the directory offline, and not the other
            // directories. Ignored, a garbled log-start checkpoint would open the logs at their
            // first segment and serve the records DeleteRecords removed (and the start's own
            // checkpoint would then write that lower log start over the file).
            let read = |name: &str| {
                read_offset_checkpoint(&*storage, &data_dir.join(name))
                    .map_err(|e| format!("{name}: {}", ErrorChain(&e)))
            };
            let read_all = || -> Result<_, String> {
                Ok((
                    read(RECOVERY_POINT_CHECKPOINT)?,
                    read(LOG_START_CHECKPOINT)?,
                    read(HIGH_WATERMARK_CHECKPOINT)?,
                ))
            };
            let (rp, ls, hw) = match read_all() {
                Ok(cps) => cps,
                Err(reason) => {
                    dir.take_offline(reason);
                    for tp in partitions_of_offline_dir(&*storage, data_dir) {
                        offline_partitions.insert(tp, dir.clone());
                    }
                    continue;
                }
            };
            for entry in or_offline!(std::fs::read_dir(data_dir).map_err(|e| dir_err(data_dir, e)))
            {
                let path = or_offline!(entry.map_err(|e| dir_err(data_dir, e))).path();
                if !path.is_dir() {
                    continue;
                }
                let name = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("")
                    .to_string();
                if name.ends_with("-delete") {
                    let delay = config.default_log_config.file_delete_delay_ms;
                    deleted_dirs.schedule(clock.now_ms(), delay, (dir.clone(), path));
                    continue;
                }
                // As Kafka's `loadLogs`: the KRaft metadata log of a data directory taken over
                // from a Kafka broker is not a partition; it is left as it is.
                let Some(tp) = parse_partition_dir(&name).filter(|tp| !is_kafka_metadata_log(tp))
                else {
                    continue;
                };
                // `create` writes `partition.metadata` before any log data: a directory without
                // it and without segments is what a crash in the middle of `create` leaves.
                if !storage.exists(&PartitionMetadata::path_in(&path)) {
                    if !has_log_files(&*storage, &path) {
                        tracing::warn!(
                            "removing {}: left by an interrupted create",
                            path.display()
                        );
                        or_offline!(remove_dir(&*storage, &path));
                        continue;
                    }
                    topics_without_metadata.insert(tp.topic.clone());
                }
                let offsets = OpenOffsets {
                    log_start_offset: ls.get(&tp).copied().unwrap_or(Offset(0)),
                    recovery_point: rp.get(&tp).copied().unwrap_or(Offset(0)),
                    high_watermark: hw.get(&tp).copied().unwrap_or(Offset(0)),
                };
                jobs.push((dir.clone(), path, tp, clean, offsets));
            }
        }
        let missing_ids = ids_for_missing_metadata(
            &*storage,
            &config.default_log_config,
            &topics_without_metadata,
            jobs.iter().map(|j| (&j.2, j.1.as_path())),
            &offline_partitions,
        );
        let total = jobs.len();
        let done = AtomicUsize::new(0);
        let results = Mutex::new(Vec::with_capacity(total));
        // As Kafka's `loadLogs`: each data directory has its own pool of
        // `num.recovery.threads.per.data.dir` threads, so directories recover side by side and
        // a slow one does not hold up the others' logs.
        let mut queues: Vec<Mutex<Vec<Job>>> = dirs.iter().map(|_| Mutex::new(vec![])).collect();
        for job in jobs {
            let i = dirs
                .iter()
                .position(|d| Arc::ptr_eq(d, &job.0))
                .expect("a job's directory is one of the data directories");
            queues[i].get_mut().push(job);
        }
        let work = |queue: &Mutex<Vec<Job>>| {
            loop {
                let Some((dir, path, tp, clean, offsets)) = queue.lock().pop() else {
                    break;
                };
                let dir_of_job = Arc::clone(&dir);
                let r = Self::open_one(
                    &config,
                    &storage,
                    &clock,
                    &group_commit,
                    dir,
                    &path,
                    &tp,
                    clean,
                    offsets,
                    &missing_ids,
                );
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if !clean || n.is_multiple_of(100) || n == total {
                    tracing::info!(
                        "loaded log {n}/{total} ({tp}{})",
                        if clean { "" } else { ", recovered" }
                    );
                }
                results.lock().push((dir_of_job, tp, clean, r));
            }
        };
        let work = &work;
        std::thread::scope(|s| {
            for queue in &queues {
                for _ in 0..config.recovery_threads.min(queue.lock().len()) {
                    s.spawn(move || work(queue));
                }
            }
        });
        let mut report = ManagerLoadReport::default();
        let mut logs: BTreeMap<TopicPartition, Arc<PartitionHandle>> = BTreeMap::new();
        for (dir, tp, clean, r) in results.into_inner() {
            let (handle, load) = match r {
                Ok(x) => x,
                // As Kafka's `loadLogs`: an I/O failure takes the log's directory offline and
                // the other directories are still served. So does a garbled leader-epoch
                // checkpoint or `partition.metadata`: Kafka reads both through a failure handler
                // for which a malformed line is an `IOException` of the directory.
                Err(e)
                    if is_io_failure(&e)
                        || matches!(
                            e,
                            EngineError::Index(mirrorlog_index::Error::Corrupt { .. })
                        ) =>
                {
                    dir.take_offline(format!("loading {tp}: {}", ErrorChain(&e)));
                    offline_partitions.insert(tp, dir);
                    continue;
                }
                Err(e) => return Err(e),
            };
            report.logs += 1;
            if !clean {
                report.unclean_logs += 1;
            }
            report.bytes_truncated += load.bytes_truncated;
            report.problems.extend(load.problems);
            if let Some(first) = logs.get(&tp) {
                // As Kafka: which copy is current cannot be told, so refuse to pick one.
                return Err(EngineError::Directory {
                    path: handle.data_dir().join(tp.to_string()),
                    reason: format!(
                        "duplicate log directories for {tp}: also in {}",
                        first.data_dir().display()
                    ),
                });
            }
            logs.insert(tp, Arc::new(handle));
        }
        offline_partitions.retain(|tp, _| !logs.contains_key(tp));
        let next_retention_check_ms =
            AtomicI64::new(clock.now_ms().saturating_add(config.initial_task_delay_ms));
        let mgr = LogManager {
            config,
            storage,
            clock,
            dirs,
            logs: RwLock::new(logs),
            offline_partitions,
            group_commit,
            admin: Mutex::new(()),
            next_retention_check_ms,
            deleted_dirs: Mutex::new(deleted_dirs),
        };
        mgr.checkpoint()?;
        Ok((mgr, report))
    }

    /// The backend for `config.io_mode`: when buffered, `storage` itself, or wrapped in a
    /// [`ZeroAheadStorage`] with `preallocate`; when direct, wrapped in a [`DirectStorage`]
    /// (unless it already is one).
    fn storage_for_mode(
        config: &LogManagerConfig,
        storage: Arc<dyn Storage>,
    ) -> EngineResult<Arc<dyn Storage>> {
        match config.io_mode {
            IoMode::Buffered if !config.preallocate || storage.name() == SimStorage::NAME => {
                Ok(storage)
            }
            IoMode::Buffered => match ZeroAheadStorage::new(storage, config.zero_ahead) {
                Ok(z) => Ok(Arc::new(z)),
                Err(e) => Err(EngineError::Directory {
                    path: config.data_dirs[0].clone(),
                    reason: format!("log.preallocate=true: {e}"),
                }),
            },
            IoMode::Direct if storage.name() == DirectStorage::NAME => Ok(storage),
            IoMode::Direct => match DirectStorage::new(storage, config.direct) {
                Ok(d) => Ok(Arc::new(d)),
                Err(e) => Err(EngineError::Directory {
                    path: config.data_dirs[0].clone(),
                    reason: format!("log.io.mode=direct: {e}"),
                }),
            },
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn open_one(
        config: &LogManagerConfig,
        storage: &Arc<dyn Storage>,
        clock: &Arc<dyn Clock>,
        group_commit: &Arc<GroupCommit>,
        dir: Arc<LogDir>,
        path: &Path,
        tp: &TopicPartition,
        clean: bool,
        offsets: OpenOffsets,
        missing_ids: &BTreeMap<String, Result<MissingTopicId, String>>,
    ) -> EngineResult<(PartitionHandle, crate::log::LoadReport)> {
        let topic_id = match read_partition_metadata(&**storage, path)? {
            Some(meta) => meta.topic_id,
            None => write_missing_metadata(&**storage, path, tp, missing_ids.get(&tp.topic))?,
        };
        let shutdown = if clean {
            Shutdown::Clean
        } else {
            Shutdown::Unclean
        };
        let log_config = topic_config(&**storage, path, &config.default_log_config)?;
        let (log, load) = PartitionLog::open(
            storage.clone(),
            path,
            &tp.to_string(),
            log_config,
            clock.clone(),
            shutdown,
            offsets,
        )
        .map_err(|e| match e {
            // `PartitionLog::open` builds this variant only from a failed `std::fs` call on the
            // partition directory (creating or listing it): a storage failure, which takes the
            // data directory offline rather than fail the whole start.
            EngineError::Directory { path, reason } => EngineError::Segment(
                mirrorlog_segment::segment::SegmentError::Io(mirrorlog_segment::io::IoError::new(
                    mirrorlog_segment::io::IoOp::ListDir,
                    path,
                    std::io::Error::other(reason),
                )),
            ),
            e => e,
        })?;
        Ok((
            PartitionHandle::new(tp.clone(), topic_id, dir, log, group_commit.clone()),
            load,
        ))
    }

    /// The partition, if it exists and was loaded. A partition of a data directory that went
    /// offline before its log was loaded is not here: see [`lookup`](Self::lookup).
    pub fn get(&self, tp: &TopicPartition) -> Option<Arc<PartitionHandle>> {
        self.logs.read().get(tp).cloned()
    }

    /// The partition, `None` when no data directory holds it, or
    /// [`EngineError::LogDirOffline`] when its directory is offline: whether it went offline
    /// after the log was loaded, or while loading, before (then the partition has no handle,
    /// and [`create`](Self::create) refuses it). Kafka answers `KAFKA_STORAGE_ERROR` for such a
    /// partition, not `UNKNOWN_TOPIC_OR_PARTITION`.
    ///
    /// # Errors
    /// The partition's data directory is offline.
    pub fn lookup(&self, tp: &TopicPartition) -> EngineResult<Option<Arc<PartitionHandle>>> {
        if let Some(h) = self.get(tp) {
            h.check_online()?;
            return Ok(Some(h));
        }
        match self.offline_partitions.get(tp) {
            Some(dir) => Err(dir
                .check()
                .err()
                .unwrap_or_else(|| EngineError::LogDirOffline {
                    path: dir.path.clone(),
                    reason: "offline".into(),
                })),
            None => Ok(None),
        }
    }

    /// The partitions of data directories that went offline while loading whose logs were not
    /// loaded, with their directory: the partition directories the data directory listed
    /// before it failed, or, when it could not be listed, those its checkpoint files name.
    pub fn offline_partitions(&self) -> Vec<(TopicPartition, PathBuf)> {
        self.offline_partitions
            .iter()
            .map(|(tp, d)| (tp.clone(), d.path.clone()))
            .collect()
    }

    /// The online partition: [`lookup`](Self::lookup), with `None` an error.
    fn online(&self, tp: &TopicPartition) -> EngineResult<Arc<PartitionHandle>> {
        self.lookup(tp)?.ok_or_else(|| unknown(tp))
    }

    /// Every partition.
    pub fn partitions(&self) -> Vec<Arc<PartitionHandle>> {
        self.logs.read().values().cloned().collect()
    }

    /// The shared group commit.
    pub fn group_commit(&self) -> &Arc<GroupCommit> {
        &self.group_commit
    }

    /// The clock the logs use.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The broker-level topic defaults.
    pub fn default_log_config(&self) -> &LogConfig {
        &self.config.default_log_config
    }

    /// Creates a partition (or returns the existing one with the same topic id): picks the data
    /// directory holding the fewest partitions, writes `partition.metadata` before any log data,
    /// and stores the topic's config overrides and an empty `leader-epoch-checkpoint` (Kafka's new
    /// log has one) beside it.
    ///
    /// # Errors
    /// The partition exists with another topic id; [`EngineError::LogDirOffline`] when it lives
    /// in a data directory that went offline while loading (Kafka never recreates an offline
    /// replica in another directory: the next start, the directory repaired, loads it again);
    /// storage failures.
    pub fn create(
        &self,
        tp: &TopicPartition,
        topic_id: TopicId,
        config: LogConfig,
    ) -> EngineResult<Arc<PartitionHandle>> {
        let _g = self.admin.lock();
        if let Some(h) = self.get(tp) {
            if h.topic_id == topic_id {
                return Ok(h);
            }
            return Err(EngineError::Directory {
                path: h.data_dir().join(tp.to_string()),
                reason: format!("exists with topic id {}, not {topic_id}", h.topic_id),
            });
        }
        if self.offline_partitions.contains_key(tp) {
            self.lookup(tp)?;
        }
        if is_kafka_metadata_log(tp) {
            // The next start would not load it (see `open`).
            return Err(EngineError::Directory {
                path: PathBuf::from(tp.to_string()),
                reason: "__cluster_metadata is Kafka's metadata log, not a topic".into(),
            });
        }
        config.validate()?;
        // Partitions per directory, by identity: hashing every partition's path here made the
        // n-th create cost n path hashes (55% of the instructions of creating 1000 partitions,
        // under callgrind).
        let mut counts = vec![0usize; self.dirs.len()];
        for h in self.logs.read().values() {
            if let Some(i) = self.dirs.iter().position(|d| Arc::ptr_eq(d, &h.dir)) {
                counts[i] += 1;
            }
        }
        // The online directory with the fewest partitions, as Kafka places new logs.
        let dir = self
            .dirs
            .iter()
            .zip(&counts)
            .filter(|(d, _)| d.offline_reason().is_none())
            .min_by_key(|(_, n)| **n)
            .map(|(d, _)| d.clone());
        let Some(dir) = dir else {
            return Err(EngineError::LogDirOffline {
                path: self.dirs[0].path.clone(),
                reason: "every data directory is offline".into(),
            });
        };
        let data_dir = dir.path.clone();
        let path = data_dir.join(tp.to_string());
        std::fs::create_dir_all(&path).map_err(|e| dir_err(&path, e))?;
        // Through the storage, which must hold the directory (durably) before its files.
        create_dir_all_durably(&*self.storage, &path)?;
        // `topic.config` before `partition.metadata`: a directory with `partition.metadata` is a
        // finished create at the next start (one without it nor segments is removed), so a crash
        // in between must not leave a partition that opens with the broker defaults.
        write_topic_config(
            &*self.storage,
            &path,
            &config,
            &self.config.default_log_config,
        )?;
        // Kafka's new log has an empty epoch checkpoint; created before `partition.metadata`,
        // whose directory sync makes its name durable, so a finished create always has it.
        LeaderEpochCache::create_empty_checkpoint(&*self.storage, &path)?;
        replace_durably(
            &*self.storage,
            &PartitionMetadata::path_in(&path),
            PartitionMetadata { topic_id }.encode().into_bytes(),
        )?;
        let (log, _) = PartitionLog::open(
            self.storage.clone(),
            &path,
            &tp.to_string(),
            config,
            self.clock.clone(),
            Shutdown::Clean,
            OpenOffsets::default(),
        )?;
        sync_dir(&data_dir)?;
        let h = Arc::new(PartitionHandle::new(
            tp.clone(),
            topic_id,
            dir,
            log,
            self.group_commit.clone(),
        ));
        self.logs.write().insert(tp.clone(), h.clone());
        Ok(h)
    }

    /// Makes `tp` keep every record whatever the broker defaults become: `retention.ms` and
    /// `retention.bytes` −1, stored as the topic's own settings (so a later
    /// `log.retention.*` change cannot reach it). For internal topics, whose owners rebuild
    /// their state from every record (mirrorlog has no log compaction). Writes only when
    /// something changes: a partition created with
    /// [`LogConfig::keeping_every_record`](crate::config::LogConfig::keeping_every_record)
    /// costs nothing here.
    ///
    /// # Errors
    /// Unknown partition, its data directory offline, storage failure.
    pub fn keep_every_record(&self, tp: &TopicPartition) -> EngineResult<()> {
        let h = self.online(tp)?;
        let current = h.read().config().clone();
        let next = current.keeping_every_record()?;
        if next != current {
            self.update_config(tp, next)?;
        }
        Ok(())
    }

    /// Changes a partition's topic config and stores it.
    ///
    /// # Errors
    /// Unknown partition, its data directory offline (nothing is written there), invalid
    /// config, storage failure.
    pub fn update_config(&self, tp: &TopicPartition, config: LogConfig) -> EngineResult<()> {
        // `topic.config` is rewritten through one temporary file name: two writers at once
        // would rename each other's file away (or store the older config last).
        let _g = self.admin.lock();
        let h = self.online(tp)?;
        write_topic_config(
            &*self.storage,
            &h.data_dir().join(tp.to_string()),
            &config,
            &self.config.default_log_config,
        )?;
        h.write().update_config(config)
    }

    /// Deletes a partition: its directory is renamed `<tp>.<id>-delete` (so a crash cannot bring
    /// it back), and removed once the broker's `file.delete.delay.ms` has passed (by
    /// [`maintain`](Self::maintain); at once when 0), as Kafka's `asyncDelete` queues it for
    /// `deleteLogs`. A fetch still reading it keeps its open files meanwhile; a restart before
    /// then removes it the delay after the start.
    ///
    /// # Errors
    /// Unknown partition or storage failure.
    pub fn delete(&self, tp: &TopicPartition) -> EngineResult<()> {
        let _g = self.admin.lock();
        let h = self.logs.write().remove(tp).ok_or_else(|| unknown(tp))?;
        h.dir.published.lock().remove(tp);
        // Waits for a write in progress; later writes through a handle taken before are refused
        // (not failed as storage errors, which would take the whole data dir offline).
        h.write().mark_deleted();
        let path = h.data_dir().join(tp.to_string());
        // As Kafka's `logDirNameWithSuffixCappedLength`: the topic part is cut so the name fits
        // in 255 bytes (topic names are ASCII, up to 249 characters).
        let suffix = format!("-{}.{}-delete", tp.partition, h.topic_id);
        let keep = tp.topic.len().min(255usize.saturating_sub(suffix.len()));
        let gone = h.data_dir().join(format!("{}{suffix}", &tp.topic[..keep]));
        let dir = h.dir.clone();
        drop(h);
        if let Err(e) = std::fs::rename(&path, &gone) {
            // The partition is already gone from the manager but still on disk: as Kafka's
            // `maybeHandleIOException` does, the directory goes offline rather than let the
            // partition quietly come back at the next start.
            let e = dir_err(&path, e);
            dir.take_offline(format!("deleting {tp}: {}", ErrorChain(&e)));
            return Err(e);
        }
        if self.storage.name() == SimStorage::NAME {
            // The simulated backend keeps `.log` files itself: move its view of the directory
            // too, or `remove_dir` below finds nothing under the new name.
            self.storage.rename(&path, &gone)?;
        }
        // Through the storage: it is the storage's view of the name that must not come back
        // (for the real backends the same `fsync` of the data directory).
        self.storage
            .sync_dir(&gone.parent().map(Path::to_path_buf).unwrap_or_default())?;
        // As Kafka's `asyncDelete`: the checkpoints drop the partition once its directory is
        // renamed, before anything is removed. A removal that fails must not leave its log start
        // checkpointed: a partition created again under the name (offsets from 0) would inherit
        // it, and a crash before the next checkpoint restarts that log empty at the stale log
        // start (a checkpointed log start above the end reads as a lost tail).
        self.checkpoint()?;
        let delay = self.config.default_log_config.file_delete_delay_ms;
        if delay == 0 {
            return self.remove_deleted_dir(&dir, &gone);
        }
        let now = self.clock.now_ms();
        self.deleted_dirs.lock().schedule(now, delay, (dir, gone));
        Ok(())
    }

    /// Removes a deleted partition's renamed `-delete` directory, as Kafka's `UnifiedLog.delete`:
    /// under `maybeHandleIOException`, so a failure takes the data directory offline (the next
    /// start finds the directory and queues it again), and nothing is removed from a data
    /// directory already offline.
    fn remove_deleted_dir(&self, dir: &LogDir, path: &Path) -> EngineResult<()> {
        if dir.offline_reason().is_some() {
            return Ok(());
        }
        remove_dir(&*self.storage, path).inspect_err(|e| {
            dir.take_offline(format!(
                "removing the deleted partition {}: {}",
                path.display(),
                ErrorChain(e)
            ));
        })
    }

    /// The data directories that went offline, with why.
    pub fn offline_dirs(&self) -> Vec<(PathBuf, String)> {
        self.dirs
            .iter()
            .filter_map(|d| Some((d.path.clone(), d.offline_reason()?.to_string())))
            .collect()
    }

    /// Writes the three offset checkpoints of every online data dir (tmp + fsync + rename).
    /// A directory whose write fails with an I/O error goes offline, as Kafka's
    /// `CheckpointFileWithFailureHandler` reports it to the `LogDirFailureChannel`; running out
    /// of space leaves it online (its previous checkpoints are intact, and the next call writes
    /// them again). Either way the other directories are still written.
    ///
    /// # Errors
    /// The first storage failure.
    pub fn checkpoint(&self) -> EngineResult<()> {
        let mut first_err = None;
        for dir in self.dirs.iter().filter(|d| d.offline_reason().is_none()) {
            if let Err(e) = dir.write_checkpoints(Checkpoints::All) {
                if takes_dir_offline(&e) {
                    dir.take_offline(format!("writing its checkpoints: {}", ErrorChain(&e)));
                } else {
                    tracing::warn!(dir = %dir.path.display(), "checkpoints not written: {}", ErrorChain(&e));
                }
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Periodic upkeep: flush by `flush.ms`, producer expiry, retention when
    /// [`retention_check_interval_ms`](LogManagerConfig::retention_check_interval_ms) has passed
    /// since the last check (the first [`initial_task_delay_ms`](LogManagerConfig::initial_task_delay_ms)
    /// after the open, as Kafka schedules `cleanupLogs`), the removal of deleted segments'
    /// `.deleted` files and of deleted partitions' `-delete` directories once
    /// `file.delete.delay.ms` has passed, checkpoints. Returns the number of segments deleted.
    ///
    /// # Errors
    /// The first storage failure (the other partitions are still processed).
    pub fn maintain(&self) -> EngineResult<usize> {
        let now = self.clock.now_ms();
        let due = self.next_retention_check_ms.load(Ordering::Relaxed);
        let retention = now >= due
            && self
                .next_retention_check_ms
                .compare_exchange(
                    due,
                    now.saturating_add(self.config.retention_check_interval_ms),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok();
        let mut deleted = 0;
        let mut first_err = None;
        for h in self.partitions() {
            if h.check_online().is_err() {
                continue;
            }
            let mut log = h.write();
            if log.is_deleted() {
                // Deleted since the snapshot above: its files are gone with its directory.
                continue;
            }
            let r = h.noting_failure((|| -> EngineResult<usize> {
                log.maybe_flush_by_time()?;
                log.remove_expired_producers();
                let deleted = if retention {
                    log.delete_old_segments()?
                } else {
                    0
                };
                // Files of segments deleted earlier, once `file.delete.delay.ms` has passed.
                log.remove_deleted_files()?;
                Ok(deleted)
            })());
            match r {
                Ok(n) => deleted += n,
                Err(e) => {
                    tracing::error!(partition = %h.tp, "maintenance failed: {}", ErrorChain(&e));
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Err(e) = self.remove_deleted_dirs(now) {
            first_err.get_or_insert(e);
        }
        self.checkpoint()?;
        match first_err {
            Some(e) => Err(e),
            None => Ok(deleted),
        }
    }

    /// Removes the `-delete` directories whose delay has passed (Kafka's `deleteLogs`), each
    /// dropped from the queue whatever happens, as Kafka's `take()`: one in a data directory
    /// gone offline is left (the next start finds it again), and a failed removal takes its
    /// data directory offline and is not tried again until then.
    ///
    /// # Errors
    /// The first failed removal (the due ones after it are still removed).
    fn remove_deleted_dirs(&self, now: i64) -> EngineResult<()> {
        let mut first_err = None;
        self.deleted_dirs.lock().remove_due(now, |(dir, path)| {
            if let Err(e) = self.remove_deleted_dir(dir, path) {
                first_err.get_or_insert(e);
            }
            Ok::<(), EngineError>(())
        })?;
        first_err.map_or(Ok(()), Err)
    }

    /// Clean shutdown: every log flushed and closed with a producer snapshot, checkpoints
    /// written, then the clean-shutdown marker, so the next open skips recovery. Logs in an
    /// offline directory are dropped untouched and that directory gets no marker: the next open
    /// recovers it. As Kafka's `LogManager.shutdown`, each directory stands alone: a storage
    /// failure in one (a log's flush or close failing) takes it offline, or at least keeps its
    /// marker off, and the others are still flushed, checkpointed, closed and marked clean.
    ///
    /// # Errors
    /// The first storage failure (the directories it did not touch are still marked clean).
    pub fn shutdown(self) -> EngineResult<()> {
        let mut first_err = self.checkpoint_after_flush().err();
        let logs = std::mem::take(&mut *self.logs.write());
        // Directories with a log that failed to close: its files are not vouched for.
        let mut not_clean: Vec<Arc<LogDir>> = vec![];
        for (_, h) in logs {
            let h = Arc::try_unwrap(h).map_err(|h| EngineError::Directory {
                path: h.data_dir().to_path_buf(),
                reason: format!("{} is still in use at shutdown", h.tp),
            })?;
            if h.check_online().is_ok() {
                let dir = h.dir.clone();
                if let Err(e) = h.log.into_inner().close() {
                    if takes_dir_offline(&e) {
                        dir.take_offline(format!("closing its logs: {}", ErrorChain(&e)));
                    }
                    not_clean.push(dir);
                    first_err.get_or_insert(e);
                }
            }
        }
        for dir in self.dirs.iter().filter(|d| {
            d.offline_reason().is_none() && !not_clean.iter().any(|n| Arc::ptr_eq(n, d))
        }) {
            let data_dir = &dir.path;
            // Through the storage, as every other file of the directory: created, synced, and
            // its name made durable by the directory's sync.
            let marker = data_dir.join(CLEAN_SHUTDOWN_FILE);
            let r = self
                .storage
                .open(&marker, OpenMode::CreateOrOpen)
                .and_then(|file| file.sync_data())
                .and_then(|()| self.storage.sync_dir(data_dir));
            if let Err(e) = r {
                first_err.get_or_insert(e.into());
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Flushes every log of the online directories, then writes their checkpoints; a failure
    /// takes its log's directory offline (when it leaves a file in an unknown state) and the
    /// other logs and directories go on. Returns the first failure.
    fn checkpoint_after_flush(&self) -> EngineResult<()> {
        let mut first_err = None;
        for h in self.partitions() {
            if h.check_online().is_ok() {
                // The failure is noted under the log lock (as `maintain` does), so a durable
                // append's sync that raced this flush sees the directory offline when it marks.
                let mut log = h.write();
                let r = log.flush();
                if let Err(e) = h.noting_failure(r) {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Err(e) = self.checkpoint() {
            first_err.get_or_insert(e);
        }
        first_err.map_or(Ok(()), Err)
    }

    /// Append as leader to a partition, durable on return (see
    /// [`PartitionHandle::append_as_leader_durable`]).
    ///
    /// # Errors
    /// Unknown partition, or the append's errors.
    pub fn append_durable(
        &self,
        tp: &TopicPartition,
        records: Bytes,
        epoch: LeaderEpoch,
    ) -> EngineResult<LogAppendInfo> {
        self.get(tp)
            .ok_or_else(|| unknown(tp))?
            .append_as_leader_durable(records, epoch, LeaderOrigin::Client)
    }
}

/// The file beside a partition's segments that holds its topic's own settings (format in the
/// module docs, "`topic.config`").
pub const TOPIC_CONFIG_FILE: &str = "topic.config";

/// The `partition.metadata` of the partition directory `path`, read through `storage`; `None`
/// when there is none.
fn read_partition_metadata(
    storage: &dyn Storage,
    path: &Path,
) -> EngineResult<Option<PartitionMetadata>> {
    let f = PartitionMetadata::path_in(path);
    let Some(bytes) = read_if_exists(storage, &f)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| mirrorlog_index::Error::Corrupt {
        path: f.clone(),
        position: e.valid_up_to() as u64,
        reason: "not valid UTF-8".into(),
    })?;
    Ok(Some(PartitionMetadata::decode(&f, text)?))
}

/// The topic id a partition directory without `partition.metadata` gets (see
/// [`ids_for_missing_metadata`]).
#[derive(Debug, Clone, Copy)]
struct MissingTopicId {
    topic_id: TopicId,
    /// The partition of the topic whose `partition.metadata` gave it; `None` for a new id.
    from_partition: Option<i32>,
}

/// The topic ids for partition directories that hold log files but no `partition.metadata`,
/// for each topic of `topics` (`partitions`: every partition directory to load, with its path).
///
/// Not what our own crash leaves (`create` writes the file, durably, before any log data): a
/// data directory of a Kafka older than 2.8, or a lost file. Kafka (KRaft) loads such a log
/// without a topic id, and its first metadata image then finds it stray (`isStrayKraftReplica`)
/// and sets it aside while the controller's metadata recreates the replica; a single node has no
/// controller to recreate it from, so the log is kept under the topic's id, which is:
///
/// - the id of the topic's lowest partition that has `partition.metadata` (the registry takes a
///   topic's id from its lowest partition; two ids in one topic would be two topics);
/// - none has one: a new id, one per topic, unless the id may be known elsewhere — a mirror
///   topic's (read-only) is its source topic's and keys its `__mirror_state` records, which
///   its mirror would skip under a new id (the topic left read-only, mirrored by nothing); and
///   a partition of the topic in an offline directory may hold the real one. Then `Err` with
///   the reason: no id is invented, and the directory goes offline as for a garbled file.
fn ids_for_missing_metadata<'a>(
    storage: &dyn Storage,
    defaults: &LogConfig,
    topics: &BTreeSet<String>,
    partitions: impl Iterator<Item = (&'a TopicPartition, &'a Path)>,
    offline: &BTreeMap<TopicPartition, Arc<LogDir>>,
) -> BTreeMap<String, Result<MissingTopicId, String>> {
    let mut by_topic: BTreeMap<&str, Vec<(i32, &Path)>> = BTreeMap::new();
    for (tp, path) in partitions.filter(|(tp, _)| topics.contains(&tp.topic)) {
        by_topic
            .entry(&tp.topic)
            .or_default()
            .push((tp.partition, path));
    }
    let mut ids = BTreeMap::new();
    for (topic, mut parts) in by_topic {
        parts.sort_unstable_by_key(|(p, _)| *p);
        // A sibling's file that cannot be read is its own partition's failure, found again
        // when that partition loads.
        let sibling = parts.iter().find_map(|(p, path)| {
            let meta = read_partition_metadata(storage, path).ok().flatten()?;
            Some(MissingTopicId {
                topic_id: meta.topic_id,
                from_partition: Some(*p),
            })
        });
        let id = match sibling {
            Some(id) => Ok(id),
            None if offline.keys().any(|tp| tp.topic == topic) => Err(format!(
                "partition.metadata is missing and no partition of topic {topic} that loads has \
                 one; a partition in an offline data directory may hold its topic id"
            )),
            None if parts.iter().any(|(_, path)| {
                topic_config(storage, path, defaults).is_ok_and(|c| c.read_only)
            }) =>
            {
                Err(format!(
                    "partition.metadata is missing and no partition of topic {topic} has one; \
                     it is a mirror topic, whose topic id is its source topic's and keys its \
                     __mirror_state records: write partition.metadata with that id \
                     (\"version: 0\\ntopic_id: <id>\\n\")"
                ))
            }
            None => Ok(MissingTopicId {
                topic_id: TopicId(*uuid::Uuid::new_v4().as_bytes()),
                from_partition: None,
            }),
        };
        ids.insert(topic.to_string(), id);
    }
    ids
}

/// Writes `partition.metadata` for the partition directory `path`, which has none, with the id
/// [`ids_for_missing_metadata`] decided, durably (as `create` writes it), and logs it. A topic
/// whose id cannot be decided fails as a garbled file does (its data directory goes offline).
fn write_missing_metadata(
    storage: &dyn Storage,
    path: &Path,
    tp: &TopicPartition,
    id: Option<&Result<MissingTopicId, String>>,
) -> EngineResult<TopicId> {
    let file = PartitionMetadata::path_in(path);
    let id = match id {
        Some(Ok(id)) => *id,
        Some(Err(reason)) => {
            return Err(EngineError::Index(mirrorlog_index::Error::Corrupt {
                path: file,
                position: 0,
                reason: reason.clone(),
            }));
        }
        // The file appeared after the listing found it missing: read it.
        None => {
            return read_partition_metadata(storage, path)?
                .map(|m| m.topic_id)
                .ok_or_else(|| EngineError::Directory {
                    path: path.to_path_buf(),
                    reason: "partition.metadata is missing".into(),
                });
        }
    };
    replace_durably(
        storage,
        &file,
        PartitionMetadata {
            topic_id: id.topic_id,
        }
        .encode()
        .into_bytes(),
    )?;
    match id.from_partition {
        Some(p) => tracing::warn!(
            "{tp}: partition.metadata was missing; wrote topic id {} from partition {p} of the topic",
            id.topic_id
        ),
        None => tracing::warn!(
            "{tp}: partition.metadata was missing, and no partition of the topic has one; wrote \
             a new topic id {} (a client or a mirror on another cluster that knew the old one \
             sees the topic as deleted and recreated)",
            id.topic_id
        ),
    }
    Ok(id.topic_id)
}

fn topic_config(
    storage: &dyn Storage,
    path: &Path,
    defaults: &LogConfig,
) -> EngineResult<LogConfig> {
    let f = path.join(TOPIC_CONFIG_FILE);
    // A file that cannot be read is a storage failure (its data directory goes offline, as
    // Kafka's `loadLogs` treats an `IOException`); one that reads but does not parse, or names
    // an invalid value, fails the start, as Kafka's `LogConfig.fromProps` does for a topic's
    // stored overrides.
    let Some(bytes) = read_if_exists(storage, &f)? else {
        return Ok(defaults.clone());
    };
    let text = String::from_utf8(bytes).map_err(|e| EngineError::Directory {
        path: f.clone(),
        reason: format!("not UTF-8: {e}"),
    })?;
    let mut pairs = vec![];
    let mut read_only = false;
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (k, v) = line.split_once('=').ok_or_else(|| EngineError::Directory {
            path: f.clone(),
            reason: format!("line {line:?} is not key=value"),
        })?;
        if k == "mirrorlog.read.only" {
            read_only = v == "true";
        } else {
            pairs.push((k.to_string(), v.to_string()));
        }
    }
    // Named by its file: the operator must find which partition's stored value to change (a
    // value an older build took, such as a `segment.index.bytes` below today's floor).
    let mut c = defaults
        .with_topic_overrides(pairs)
        .map_err(|e| EngineError::Directory {
            path: f.clone(),
            reason: e.to_string(),
        })?;
    c.read_only = read_only;
    Ok(c)
}

fn write_topic_config(
    storage: &dyn Storage,
    path: &Path,
    config: &LogConfig,
    defaults: &LogConfig,
) -> EngineResult<()> {
    let base: HashMap<&str, String> = defaults.to_kafka_pairs().into_iter().collect();
    let mut text = String::new();
    for (k, v) in config.to_kafka_pairs() {
        // The topic's own settings: an explicit override stays one even while it equals the
        // broker default (so a later default change does not move it).
        if config.overrides.contains(k) || base.get(k) != Some(&v) {
            text.push_str(&format!("{k}={v}\n"));
        }
    }
    if config.read_only {
        text.push_str("mirrorlog.read.only=true\n");
    }
    // Through the storage: `.tmp` written and synced, renamed over the file, the directory
    // synced.
    replace_durably(storage, &path.join(TOPIC_CONFIG_FILE), text.into_bytes())?;
    Ok(())
}

fn unknown(tp: &TopicPartition) -> EngineError {
    EngineError::Directory {
        path: PathBuf::from(tp.to_string()),
        reason: "no such partition".into(),
    }
}

fn dir_err(p: &Path, e: std::io::Error) -> EngineError {
    EngineError::Directory {
        path: p.to_path_buf(),
        reason: e.to_string(),
    }
}

fn sync_dir(dir: &Path) -> EngineResult<()> {
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| dir_err(dir, e))
}

/// Whether `tp` names Kafka's KRaft metadata log (`__cluster_metadata-0` in a data directory of
/// a broker in combined mode), which Kafka's `loadLogs` does not load as a partition.
fn is_kafka_metadata_log(tp: &TopicPartition) -> bool {
    tp.topic == "__cluster_metadata"
}

/// Whether `e` is a failure of the storage under a log (not a problem with its contents).
fn is_io_failure(e: &EngineError) -> bool {
    use mirrorlog_segment::segment::SegmentError;
    matches!(
        e,
        EngineError::Segment(
            SegmentError::Io(_)
                | SegmentError::Failed { .. }
                | SegmentError::TxnIndexAppend { .. }
                | SegmentError::Index(mirrorlog_index::Error::Io { .. })
        ) | EngineError::Index(mirrorlog_index::Error::Io { .. })
    )
}

/// The partitions of a data directory that went offline while loading, as far as they can be
/// known: the partition directories it lists, or, when it cannot be listed (completely), also
/// those its offset checkpoints name.
fn partitions_of_offline_dir(storage: &dyn Storage, data_dir: &Path) -> BTreeSet<TopicPartition> {
    let mut found = BTreeSet::new();
    let listed = std::fs::read_dir(data_dir).and_then(|entries| {
        for entry in entries {
            let entry = entry?;
            if entry.file_type().is_ok_and(|t| !t.is_dir()) {
                continue;
            }
            if let Some(name) = entry.file_name().to_str()
                && !name.ends_with("-delete")
                && let Some(tp) = parse_partition_dir(name)
                && !is_kafka_metadata_log(&tp)
            {
                found.insert(tp);
            }
        }
        Ok(())
    });
    if listed.is_err() {
        for name in [
            RECOVERY_POINT_CHECKPOINT,
            LOG_START_CHECKPOINT,
            HIGH_WATERMARK_CHECKPOINT,
        ] {
            if let Ok(cp) = read_offset_checkpoint(storage, &data_dir.join(name)) {
                found.extend(cp.into_keys());
            }
        }
    }
    found
}

/// The offsets in the checkpoint file at `path`, read through `storage`; a missing file has none.
fn read_offset_checkpoint(
    storage: &dyn Storage,
    path: &Path,
) -> Result<BTreeMap<TopicPartition, Offset>, mirrorlog_index::Error> {
    match read_if_exists(storage, path).map_err(index_io)? {
        Some(bytes) => decode_offset_checkpoint(path, &bytes),
        None => Ok(BTreeMap::new()),
    }
}

/// Replaces the checkpoint file at `path` with `offsets` through `storage`, as Kafka's
/// `CheckpointFile.write` does (`.tmp` written and synced, renamed over the file, the data
/// directory synced): a crash keeps the old file or the new one, and the new one once this
/// returns. The caller serialises writers of one file (they share its `.tmp`).
fn write_offset_checkpoint(
    storage: &dyn Storage,
    path: &Path,
    offsets: &BTreeMap<TopicPartition, Offset>,
) -> Result<(), mirrorlog_index::Error> {
    let text = encode_offset_checkpoint(offsets);
    replace_durably(storage, path, text.into_bytes()).map_err(index_io)
}

fn has_log_files(storage: &dyn Storage, dir: &Path) -> bool {
    match storage.list_dir(dir) {
        Ok(files) => files
            .iter()
            .any(|f| f.extension().is_some_and(|x| x == "log")),
        // A directory the storage does not hold has no log files: the simulated storage lost
        // the creation of a directory that `create` had made on disk before a crash (a real
        // backend, the directory gone since it was listed). Any other failure counts as having
        // some, so that the partition is opened and its directory taken offline, not removed.
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

fn remove_dir(storage: &dyn Storage, dir: &Path) -> EngineResult<()> {
    // `.log` files may live in the storage backend (the simulated one keeps them in memory).
    if let Ok(files) = storage.list_dir(dir) {
        for f in files {
            storage.remove(&f)?;
        }
    }
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(dir_err(dir, e)),
    }
}
