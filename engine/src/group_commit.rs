//! Group commit: concurrent durable appends, on one partition or many, share `fdatasync`s.
//!
//! A durable append is acknowledged only once its bytes are durable (DESIGN.md §4). Paying one
//! `fdatasync` per append caps a partition at one append per sync latency (~0.1–0.2 ms on the
//! reference disk); with group commit, every caller that asks while its file is being synced is
//! served by that file's next sync, so N concurrent writers of one file cost about one sync per
//! sync latency instead of N, and the syncs of different files run side by side (concurrent
//! `fdatasync`s on one file system also share its journal commits).
//!
//! # How it works
//!
//! Leader/follower without a dedicated thread (no thread hop on the sync path), on one
//! `parking_lot` mutex:
//!
//! - [`GroupCommit::sync`] attaches the caller to its file's *queued ticket* — the one request
//!   for the file's next sync, created by the first caller and joined by the others (files are
//!   identified by their `Arc` allocation) — and waits.
//! - A ticket is *ready* when its file has no sync in flight. A *round* starts every ready ticket,
//!   oldest first, up to [`GroupCommitConfig::max_batch_files`] syncs in flight in total. A round
//!   starts as soon as a ticket is ready and a slot is free: led by a waiting caller (who first
//!   waits up to [`GroupCommitConfig::max_wait_us`] for more tickets, when that is set), or, with
//!   `max_wait_us = 0`, directly by the thread whose sync just finished and freed the slot.
//! - Each started ticket is synced — once, with [`StorageFile::sync_data`], outside the lock —
//!   by one of its own waiters; when that returns, all its waiters are woken with the result and
//!   the file's next ticket, if callers queued one meanwhile, becomes ready at once.
//!
//! So a file never has more than one sync in flight and one ticket queued, and there is no
//! barrier between files: a slow sync of one file does not hold back the next sync of another.
//! With `max_wait_us = 0` (the default) there is no deliberate delay anywhere.
//!
//! A file whose [`StorageFile::shares_syncs`] is true (the direct-I/O backend's `.log` files,
//! whose ring already serves all concurrent waiters with one write or sync) is synced by each
//! caller directly: counted in `requests`, never in `syncs` or `rounds` (but a failure is
//! remembered as for any file: see "Guarantee").
//!
//! # Guarantee
//!
//! `sync(file)` returning `Ok(())` means: a `sync_data` of `file` that **started after this call
//! began** completed successfully. So every write to `file` that completed before the call (and
//! the file length it set) is durable. Writes that run concurrently with the call may or may not
//! be covered, and nothing is promised for writes issued after it returns. A request never joins
//! a sync already in progress, only a queued one. There is no ordering between files: each file's
//! syncs are independent. Two `Arc`s opened separately on one path are two files here (synced
//! separately, which is correct but shares nothing).
//!
//! `Err` means that sync failed; every caller waiting for the same sync gets the same error (op,
//! path and OS error copied). After a failed `fdatasync` the kernel may have dropped dirty pages,
//! and a later sync of the same file can succeed without bringing them back (Linux reports a
//! failed write-back once per open file description); so a failure means the file's durable
//! content is unknown, and the owner of the file (the segment) must stop using it and recover, as
//! `ActiveSegment` does.
//!
//! **A failure is sticky per file**, because the owner learns of it only when a waiter returns,
//! while the file's next sync would otherwise start at once and could return `Ok` for appends
//! written after the lost ones — acknowledged, then cut off by recovery at the hole (PostgreSQL
//! and Kafka likewise treat a failed `fsync` as fatal for the file or log directory). From the
//! failure on, the ticket already queued for the file and every later request for it fail at
//! once with a copy of the same error, without a sync. The memory is per `Arc` allocation: it
//! holds a `Weak`, which keeps the allocation (not the file) alive, so a new file can never be
//! mistaken for a failed one that was dropped; entries of dropped files are pruned (at every
//! recorded failure, and by a sweep every as many requests as there are entries), so what is
//! kept stays bounded by the failed files still open. The storage file remembers its failure
//! too (every backend, `mirrorlog_segment::io` docs: "Durability"), which also covers the file's
//! syncs outside the group commit (a segment flush, a roll's seal); the memory here saves the
//! queued waiters a call and counts them (`refused`).
//!
//! # Bounds
//!
//! At most `max_batch_files` syncs are in flight at once. Each file has at most one queued
//! ticket, and every ticket has at least one caller blocked on it, so the number of tickets never
//! exceeds the number of threads blocked in [`GroupCommit::sync`]; a ticket is freed when its
//! last waiter returns. The failed files remembered are at most the failed files still open,
//! plus the ones dropped since the last sweep (see "Guarantee").

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use mirrorlog_segment::io::{IoError, IoOp, StorageFile};
use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::config::{ConfigError, InvalidReason};

/// Group-commit settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommitConfig {
    /// The most syncs in flight at once, over all files (one per file at most); tickets beyond
    /// wait for a slot, oldest first. Default 1024; range 1 ..= 65536.
    pub max_batch_files: usize,
    /// How long a round's leader waits for more tickets before starting it, in microseconds; the
    /// wait ends early once enough tickets are ready to fill every free slot. Default 0 (no
    /// deliberate delay: a file's next sync starts as soon as its previous one finished);
    /// range 0 ..= 1000000 (1 s).
    pub max_wait_us: u64,
}

impl Default for GroupCommitConfig {
    fn default() -> Self {
        GroupCommitConfig {
            max_batch_files: 1024,
            max_wait_us: 0,
        }
    }
}

/// The largest accepted [`GroupCommitConfig::max_batch_files`].
const MAX_BATCH_FILES_LIMIT: usize = 1 << 16;
/// The largest accepted [`GroupCommitConfig::max_wait_us`] (1 s).
const MAX_WAIT_US_LIMIT: u64 = 1_000_000;

impl GroupCommitConfig {
    /// Rejects out-of-range settings.
    ///
    /// # Errors
    /// [`ConfigError::InvalidValue`] for the first setting out of its range, naming the setting,
    /// the value and the range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=MAX_BATCH_FILES_LIMIT).contains(&self.max_batch_files) {
            return Err(ConfigError::InvalidValue {
                key: "group_commit.max_batch_files".to_owned(),
                value: self.max_batch_files.to_string(),
                reason: InvalidReason::OutOfRange {
                    found: i64::try_from(self.max_batch_files).unwrap_or(i64::MAX),
                    min: 1,
                    max: MAX_BATCH_FILES_LIMIT as i64,
                    why: None,
                },
            });
        }
        if self.max_wait_us > MAX_WAIT_US_LIMIT {
            return Err(ConfigError::InvalidValue {
                key: "group_commit.max_wait_us".to_owned(),
                value: self.max_wait_us.to_string(),
                reason: InvalidReason::OutOfRange {
                    found: i64::try_from(self.max_wait_us).unwrap_or(i64::MAX),
                    min: 0,
                    max: MAX_WAIT_US_LIMIT as i64,
                    why: None,
                },
            });
        }
        Ok(())
    }
}

/// What a [`GroupCommit::sync`] can fail with.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum GroupCommitError {
    /// The `fdatasync` serving this request failed: the operation, the file and the OS error,
    /// as [`StorageFile::sync_data`] reported them (a copy for each waiter). The file's durable
    /// content is now unknown (module docs).
    #[error(transparent)]
    Sync(IoError),
}

/// Counters since [`GroupCommit::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupCommitStats {
    /// [`GroupCommit::sync`] calls (counted as they are queued).
    pub requests: u64,
    /// `sync_data` calls issued (successful or not). Once every request has returned,
    /// `requests - refused - syncs` is the number of syncs saved by sharing.
    pub syncs: u64,
    /// Requests failed without a sync because an earlier sync of their file failed (module
    /// docs: "Guarantee"): the waiters of the ticket queued when it failed, and every later one.
    pub refused: u64,
    /// Rounds started (each starts one or more syncs at once).
    pub rounds: u64,
}

/// Where a ticket stands.
enum Phase {
    /// Waiting for its round: new requests for the file join it.
    Queued,
    /// Started by a round; `claimed` once one of its waiters is running the sync.
    Started { claimed: bool },
    /// Synced, with the result every waiter gets.
    Done(Result<(), IoError>),
}

/// One sync of one file, and the callers waiting for it.
struct Ticket {
    file: Arc<dyn StorageFile>,
    phase: Phase,
    /// Callers waiting for this ticket; the last one to see it done removes it.
    waiters: usize,
    /// The waiters sleep here (always with the state mutex).
    cv: Arc<Condvar>,
}

/// A file whose sync failed (module docs: "Guarantee").
struct FailedFile {
    /// Whether the file is still open; also pins its allocation, so its address (the key) is
    /// never reused by another file while this entry exists.
    file: Weak<dyn StorageFile>,
    /// The first failure, copied to every later request.
    error: IoError,
}

#[derive(Default)]
struct State {
    tickets: HashMap<u64, Ticket>,
    next_ticket: u64,
    /// The queued ticket of each file, so requests for one file share it.
    queued_by_file: HashMap<usize, u64>,
    /// Queued tickets whose file has no sync in flight, oldest first: what a round starts.
    ready: VecDeque<u64>,
    /// Files with a sync in flight (started, not done).
    syncing: HashSet<usize>,
    /// A leader is waiting (`max_wait_us`) for more tickets before starting a round.
    gathering: bool,
    /// Files whose sync failed, by identity: their requests fail at once.
    failed: HashMap<usize, FailedFile>,
    /// Requests (while `failed` is not empty) until the next sweep of dropped failed files.
    requests_until_sweep: usize,
    stats: GroupCommitStats,
}

impl State {
    fn ticket(&mut self, id: u64) -> &mut Ticket {
        self.tickets
            .get_mut(&id)
            .expect("a ticket lives while it has waiters")
    }

    /// A copy of the failure of file `key`, if a sync of it failed. Also counts the request
    /// towards the next sweep of dropped failed files.
    fn failure_of(&mut self, key: usize) -> Option<IoError> {
        if self.failed.is_empty() {
            return None;
        }
        // The caller holds the file, and an entry pins its allocation: a hit is this file.
        let hit = self.failed.get(&key).map(|f| f.error.copy());
        self.requests_until_sweep = self.requests_until_sweep.saturating_sub(1);
        if self.requests_until_sweep == 0 {
            self.prune_failed();
        }
        hit
    }

    /// Remembers that a sync of `file` (identity `key`) failed with `error`, keeping the first
    /// failure, and fails the ticket queued for it meanwhile (its waiters return `error`).
    fn record_failure(&mut self, key: usize, file: &Arc<dyn StorageFile>, error: &IoError) {
        self.prune_failed();
        self.failed.entry(key).or_insert_with(|| FailedFile {
            file: Arc::downgrade(file),
            error: error.copy(),
        });
        self.requests_until_sweep = self.failed.len();
        if let Some(id) = self.queued_by_file.remove(&key) {
            let ticket = self.ticket(id);
            debug_assert!(matches!(ticket.phase, Phase::Queued));
            ticket.phase = Phase::Done(Err(error.copy()));
            ticket.cv.notify_all();
            let waiters = ticket.waiters as u64;
            self.stats.refused += waiters;
        }
    }

    /// Forgets the failed files that were dropped (nobody can ask for them again).
    fn prune_failed(&mut self) {
        self.failed.retain(|_, f| f.file.strong_count() > 0);
        self.requests_until_sweep = self.failed.len();
    }
}

/// The identity of a file: its `Arc` allocation (a live ticket holds a clone, so the address
/// cannot be reused by another file while the file is queued or syncing).
fn file_key(file: &Arc<dyn StorageFile>) -> usize {
    Arc::as_ptr(file).cast::<()>() as usize
}

/// Shares `fdatasync`s among concurrent callers, across files (module docs). `Send + Sync`;
/// share it as `Arc<GroupCommit>`.
pub struct GroupCommit {
    config: GroupCommitConfig,
    state: Mutex<State>,
    /// A gathering leader sleeps here until enough tickets are ready or its wait ends.
    gather_cv: Condvar,
}

impl fmt::Debug for GroupCommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupCommit")
            .field("config", &self.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl GroupCommit {
    /// A group committer with `config`.
    ///
    /// # Panics
    ///
    /// If `config` is invalid ([`GroupCommitConfig::validate`]): settings are checked where they
    /// are read, so an invalid one here is a programmer error.
    pub fn new(config: GroupCommitConfig) -> Arc<Self> {
        if let Err(e) = config.validate() {
            panic!("invalid GroupCommitConfig: {e}");
        }
        Arc::new(GroupCommit {
            config,
            state: Mutex::new(State::default()),
            gather_cv: Condvar::new(),
        })
    }

    /// The settings this committer was built with.
    pub fn config(&self) -> GroupCommitConfig {
        self.config
    }

    /// Blocks until `file` has been `fdatasync`ed by a sync that started after this call, so
    /// everything written to it before the call is durable (module docs: "Guarantee").
    /// Concurrent callers share syncs: all the callers that queue for a file while it is being
    /// synced are served by its next sync, one `sync_data` whatever their number.
    ///
    /// # Errors
    ///
    /// [`GroupCommitError::Sync`] when that sync failed; every caller served by it gets the
    /// error, callers of other files are unaffected. A failure is sticky: every later call for
    /// the same file (the same `Arc` allocation) fails at once with a copy of it, without a sync.
    ///
    /// # Panics
    ///
    /// If `file.sync_data()` panics, in the thread that called it; the other callers waiting
    /// for that sync get an error instead of waiting forever.
    pub fn sync(&self, file: &Arc<dyn StorageFile>) -> Result<(), GroupCommitError> {
        let key = file_key(file);
        let mut st = self.state.lock();
        st.stats.requests += 1;
        if let Some(e) = st.failure_of(key) {
            st.stats.refused += 1;
            return Err(GroupCommitError::Sync(e));
        }
        if file.shares_syncs() {
            // The file groups concurrent syncs itself (direct I/O): tickets and rounds would
            // only serialise waiters that its ring serves together.
            drop(st);
            let result = file.sync_data();
            if let Err(e) = &result {
                // Sticky here too, whatever the backend keeps: not every sync of a direct file
                // records its failure in the file.
                self.state.lock().record_failure(key, file, e);
            }
            return result.map_err(GroupCommitError::Sync);
        }
        let id = match st.queued_by_file.get(&key).copied() {
            Some(id) => {
                st.ticket(id).waiters += 1;
                id
            }
            None => {
                let id = st.next_ticket;
                st.next_ticket += 1;
                st.tickets.insert(
                    id,
                    Ticket {
                        file: Arc::clone(file),
                        phase: Phase::Queued,
                        waiters: 1,
                        cv: Arc::new(Condvar::new()),
                    },
                );
                st.queued_by_file.insert(key, id);
                // A file with a sync in flight gets its ticket ready when that sync ends.
                if !st.syncing.contains(&key) {
                    self.make_ready(&mut st, id);
                }
                id
            }
        };
        let cv = Arc::clone(&st.ticket(id).cv);
        loop {
            let can_start = self.can_start_round(&st);
            let ticket = st.ticket(id);
            match &mut ticket.phase {
                Phase::Done(result) => {
                    let result = result.as_ref().map(|_| ()).map_err(IoError::copy);
                    ticket.waiters -= 1;
                    if ticket.waiters == 0 {
                        st.tickets.remove(&id);
                    }
                    return result.map_err(GroupCommitError::Sync);
                }
                Phase::Started { claimed } if !*claimed => {
                    *claimed = true;
                    let file = Arc::clone(&ticket.file);
                    self.sync_one(&mut st, id, key, &file);
                }
                Phase::Queued if can_start => self.lead(&mut st),
                Phase::Started { .. } | Phase::Queued => cv.wait(&mut st),
            }
        }
    }

    /// Counters since creation.
    pub fn stats(&self) -> GroupCommitStats {
        self.state.lock().stats
    }

    /// How many more syncs may start now.
    fn free_slots(&self, st: &State) -> usize {
        self.config.max_batch_files - st.syncing.len()
    }

    /// Whether a round could start now: something ready, a free slot, no leader gathering.
    fn can_start_round(&self, st: &State) -> bool {
        !st.gathering && !st.ready.is_empty() && self.free_slots(st) > 0
    }

    /// Appends a queued ticket to the ready list, waking a gathering leader once it has enough.
    fn make_ready(&self, st: &mut State, id: u64) {
        st.ready.push_back(id);
        if st.gathering && st.ready.len() >= self.free_slots(st) {
            self.gather_cv.notify_one();
        }
    }

    /// Starts a round after the optional gathering wait. Called by a waiter of a queued ticket
    /// when [`Self::can_start_round`].
    fn lead(&self, st: &mut MutexGuard<'_, State>) {
        if self.config.max_wait_us > 0 {
            st.gathering = true;
            let deadline = Instant::now() + Duration::from_micros(self.config.max_wait_us);
            while st.ready.len() < self.free_slots(st)
                && !self.gather_cv.wait_until(st, deadline).timed_out()
            {}
            st.gathering = false;
        }
        self.start_round(st);
    }

    /// Starts a sync for every ready ticket, oldest first, as far as free slots allow; wakes
    /// one waiter of each to run it (a no-op for the caller's own ticket: it claims it itself
    /// when it loops).
    fn start_round(&self, st: &mut State) {
        let n = st.ready.len().min(self.free_slots(st));
        if n == 0 {
            return;
        }
        for _ in 0..n {
            let id = st.ready.pop_front().expect("n <= ready.len()");
            let ticket = st.ticket(id);
            ticket.phase = Phase::Started { claimed: false };
            ticket.cv.notify_one();
            let key = file_key(&ticket.file);
            st.queued_by_file.remove(&key);
            let fresh = st.syncing.insert(key);
            assert!(fresh, "a ready ticket's file has no sync in flight");
        }
        st.stats.rounds += 1;
    }

    /// Runs the claimed ticket `id`'s sync of `file` (identity `key`) with the lock released,
    /// publishes the result, then lets the file's next ticket and the waiting rounds go on.
    fn sync_one(
        &self,
        st: &mut MutexGuard<'_, State>,
        id: u64,
        key: usize,
        file: &Arc<dyn StorageFile>,
    ) {
        st.stats.syncs += 1;
        let outcome =
            MutexGuard::unlocked(st, || catch_unwind(AssertUnwindSafe(|| file.sync_data())));
        let (result, panic) = match outcome {
            Ok(result) => (result, None),
            Err(payload) => {
                let e = IoError::new(
                    IoOp::SyncData,
                    file.path(),
                    io::Error::other("sync_data panicked; durability unknown"),
                );
                (Err(e), Some(payload))
            }
        };
        let ticket = st.ticket(id);
        if let Err(e) = &result {
            tracing::warn!(error = %e, waiters = ticket.waiters, "group commit: sync failed; the file's later requests fail too");
        }
        let failure = result.as_ref().err().map(IoError::copy);
        ticket.phase = Phase::Done(result);
        ticket.cv.notify_all();
        let was_syncing = st.syncing.remove(&key);
        assert!(was_syncing, "a started ticket's file is syncing");
        if let Some(e) = failure {
            // Before the queued ticket can start: its sync might return `Ok` (module docs).
            st.record_failure(key, file, &e);
        }
        if let Some(&next) = st.queued_by_file.get(&key) {
            self.make_ready(st, next);
        }
        if self.can_start_round(st) {
            if self.config.max_wait_us == 0 {
                // No gathering: start the next round here rather than wake a thread to do it.
                self.start_round(st);
            } else {
                let front = *st
                    .ready
                    .front()
                    .expect("can_start_round: ready is non-empty");
                st.ticket(front).cv.notify_one();
            }
        }
        if let Some(payload) = panic {
            // The ticket is done and accounted for; now fail this caller. Unwinding drops the
            // caller's guard, which unlocks (parking_lot does not poison).
            let ticket = st.ticket(id);
            ticket.waiters -= 1;
            if ticket.waiters == 0 {
                st.tickets.remove(&id);
            }
            resume_unwind(payload);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use mirrorlog_segment::io::{Fault, FaultKind, OpenMode, SimStorage, Storage};
    use std::os::fd::RawFd;
    use std::path::{Path, PathBuf};

    fn sim_file(sim: &SimStorage, name: &str) -> Arc<dyn StorageFile> {
        sim.create_dir_all(Path::new("/d")).unwrap();
        sim.open(&PathBuf::from("/d").join(name), OpenMode::CreateOrOpen)
            .unwrap()
    }

    #[test]
    fn the_default_config_is_valid_and_has_no_deliberate_delay() {
        let c = GroupCommitConfig::default();
        c.validate().unwrap();
        assert_eq!(c.max_batch_files, 1024);
        assert_eq!(c.max_wait_us, 0);
    }

    #[test]
    fn out_of_range_settings_are_rejected_with_their_name() {
        let zero = GroupCommitConfig {
            max_batch_files: 0,
            ..Default::default()
        };
        assert!(
            zero.validate()
                .unwrap_err()
                .to_string()
                .contains("max_batch_files")
        );
        let long = GroupCommitConfig {
            max_wait_us: 1_000_001,
            ..Default::default()
        };
        assert!(
            long.validate()
                .unwrap_err()
                .to_string()
                .contains("max_wait_us")
        );
    }

    #[test]
    #[should_panic(expected = "invalid GroupCommitConfig")]
    fn building_with_an_invalid_config_is_a_programmer_error() {
        GroupCommit::new(GroupCommitConfig {
            max_batch_files: 0,
            max_wait_us: 0,
        });
    }

    #[test]
    fn a_lone_request_is_one_round_and_one_sync() {
        let sim = SimStorage::new();
        let f = sim_file(&sim, "a.log");
        let gc = GroupCommit::new(GroupCommitConfig::default());
        f.write_at(Bytes::from_static(b"abc"), 0).unwrap();
        gc.sync(&f).unwrap();
        assert_eq!(
            gc.stats(),
            GroupCommitStats {
                requests: 1,
                syncs: 1,
                rounds: 1,
                refused: 0,
            }
        );
        assert_eq!(sim.durable_bytes(Path::new("/d/a.log")).unwrap(), b"abc");
        assert!(gc.state.lock().tickets.is_empty(), "tickets are freed");
    }

    #[test]
    fn a_gathering_leader_still_syncs_alone_when_nobody_else_comes() {
        let sim = SimStorage::new();
        let f = sim_file(&sim, "a.log");
        let gc = GroupCommit::new(GroupCommitConfig {
            max_batch_files: 8,
            max_wait_us: 200,
        });
        for i in 0..3u8 {
            f.write_at(Bytes::from(vec![i]), u64::from(i)).unwrap();
            gc.sync(&f).unwrap();
        }
        assert_eq!(sim.durable_bytes(Path::new("/d/a.log")).unwrap(), [0, 1, 2]);
        assert_eq!(gc.stats().rounds, 3);
    }

    #[test]
    fn a_failed_file_is_forgotten_once_dropped_and_never_confused_with_a_new_one() {
        let sim = SimStorage::new();
        sim.inject(Fault::new(IoOp::SyncData, FaultKind::Eio).on_path("bad.log"));
        let gc = GroupCommit::new(GroupCommitConfig::default());
        let bad = sim_file(&sim, "bad.log");
        gc.sync(&bad).unwrap_err();
        gc.sync(&bad).unwrap_err();
        let key = file_key(&bad);
        drop(bad);
        assert_eq!(gc.state.lock().failed.len(), 1, "not swept yet");
        // The entry pins the dropped file's allocation, so no new file gets its address.
        let good = sim_file(&sim, "good.log");
        assert_ne!(file_key(&good), key);
        gc.sync(&good).unwrap();
        assert!(
            gc.state.lock().failed.is_empty(),
            "swept within one request"
        );
        // Reopened, the path is a new file: it is synced.
        let again = sim_file(&sim, "bad.log");
        gc.sync(&again).unwrap();
        let stats = gc.stats();
        assert_eq!((stats.requests, stats.syncs, stats.refused), (4, 3, 1));
    }

    /// A file whose `sync_data` panics: a programmer error in a backend must not strand the
    /// other waiters.
    #[derive(Debug)]
    struct PanickingFile;

    impl StorageFile for PanickingFile {
        fn path(&self) -> &Path {
            Path::new("/panics")
        }
        fn write_at(&self, _: Bytes, _: u64) -> mirrorlog_segment::io::IoResult<()> {
            Ok(())
        }
        fn write_all_at(
            &self,
            _: &[Bytes],
            _: u64,
            _: bool,
        ) -> mirrorlog_segment::io::IoResult<()> {
            Ok(())
        }
        fn read_at(&self, _: &mut [u8], _: u64) -> mirrorlog_segment::io::IoResult<usize> {
            Ok(0)
        }
        fn sync_data(&self) -> mirrorlog_segment::io::IoResult<()> {
            panic!("backend bug")
        }
        fn set_len(&self, _: u64) -> mirrorlog_segment::io::IoResult<()> {
            Ok(())
        }
        fn len(&self) -> mirrorlog_segment::io::IoResult<u64> {
            Ok(0)
        }
        fn raw_fd(&self) -> Option<RawFd> {
            None
        }
    }

    #[test]
    fn a_panicking_sync_panics_its_caller_and_leaves_the_committer_usable() {
        let gc = GroupCommit::new(GroupCommitConfig::default());
        let bad: Arc<dyn StorageFile> = Arc::new(PanickingFile);
        let gc2 = Arc::clone(&gc);
        let joined = std::thread::spawn(move || gc2.sync(&bad)).join();
        assert!(joined.is_err(), "the panic reaches the caller");
        let sim = SimStorage::new();
        let f = sim_file(&sim, "ok.log");
        gc.sync(&f).unwrap();
        let st = gc.state.lock();
        assert!(st.tickets.is_empty() && st.ready.is_empty() && st.syncing.is_empty());
        assert!(st.queued_by_file.is_empty());
    }
}
