//! Group commit against the simulated backend: durability of what a returned sync covers,
//! sharing of syncs among concurrent writers, error delivery, and liveness.
//!
//! No assertion depends on timing. Where a test needs requests to queue while a sync runs, a
//! [`GatedFile`] holds that sync until the test has seen the requests arrive (through
//! `GroupCommit::stats`), so the schedule is forced rather than hoped for. The only clock is a
//! generous hang guard that turns a deadlock into a failure instead of a stuck test run.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mirrorlog_engine::group_commit::{
    GroupCommit, GroupCommitConfig, GroupCommitError, GroupCommitStats,
};
use mirrorlog_segment::io::{
    Fault, FaultKind, IoOp, IoResult, OpenMode, SimStorage, Storage, StorageFile,
};

const HANG_GUARD: Duration = Duration::from_secs(120);
/// `EIO` on Linux.
const EIO: i32 = 5;

fn open(sim: &SimStorage, name: &str) -> Arc<dyn StorageFile> {
    sim.create_dir_all(Path::new("/d")).unwrap();
    sim.open(&path(name), OpenMode::CreateOrOpen).unwrap()
}

fn path(name: &str) -> PathBuf {
    PathBuf::from("/d").join(name)
}

/// Waits until `cond` holds; panics (naming `what`) only if it never does.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < HANG_GUARD, "hang guard: never saw {what}");
        thread::sleep(Duration::from_millis(1));
    }
}

/// Asserts that `record` is in the durable bytes of `name` at `pos`.
fn assert_durable(sim: &SimStorage, name: &str, pos: usize, record: &[u8]) {
    let durable = sim.durable_bytes(&path(name)).unwrap();
    assert!(
        durable.len() >= pos + record.len() && &durable[pos..pos + record.len()] == record,
        "{name}: record at {pos} not durable after its sync returned"
    );
}

/// Asserts that `result` is the `EIO` of a failed `sync_data` of `name`, as every request served
/// by (or after) that sync gets it.
fn assert_sync_eio(result: Result<(), GroupCommitError>, name: &str, who: &str) {
    match result {
        Err(GroupCommitError::Sync(e)) => {
            assert_eq!(e.op, IoOp::SyncData, "{who}");
            assert_eq!(e.path, path(name), "{who}");
            assert_eq!(e.source.raw_os_error(), Some(EIO), "{who}");
        }
        other => panic!("{who} got {other:?}"),
    }
}

/// Holds every `sync_data` of the files sharing it until [`Gate::open`]; counts them.
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    open: bool,
    /// Gated syncs that started.
    entered: usize,
    /// Gated syncs running now, and the most seen at once.
    running: usize,
    running_max: usize,
}

impl Gate {
    /// How many gated syncs have started.
    fn entered(&self) -> usize {
        self.state.lock().unwrap().entered
    }

    /// The most gated syncs seen running at once.
    fn running_max(&self) -> usize {
        self.state.lock().unwrap().running_max
    }

    fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.cv.notify_all();
    }

    /// Runs `sync` as a gated sync: held before or after it until the gate opens.
    fn run(&self, hold: Hold, sync: impl FnOnce() -> IoResult<()>) -> IoResult<()> {
        {
            let mut st = self.state.lock().unwrap();
            st.entered += 1;
            st.running += 1;
            st.running_max = st.running_max.max(st.running);
        }
        let result = match hold {
            Hold::BeforeSync => {
                self.wait_open();
                sync()
            }
            Hold::AfterSync => {
                let r = sync();
                self.wait_open();
                r
            }
        };
        self.state.lock().unwrap().running -= 1;
        result
    }

    fn wait_open(&self) {
        let mut st = self.state.lock().unwrap();
        let start = Instant::now();
        while !st.open {
            assert!(
                start.elapsed() < HANG_GUARD,
                "hang guard: gate never opened"
            );
            st = self
                .cv
                .wait_timeout(st, Duration::from_millis(10))
                .unwrap()
                .0;
        }
    }
}

/// When a gated sync is held: before the inner `sync_data` or after it completed.
#[derive(Debug, Clone, Copy)]
enum Hold {
    BeforeSync,
    AfterSync,
}

/// A file that delegates to a simulated one, its syncs held by a [`Gate`] until it opens.
#[derive(Debug)]
struct GatedFile {
    inner: Arc<dyn StorageFile>,
    gate: Arc<Gate>,
    hold: Hold,
    /// What [`StorageFile::shares_syncs`] answers (true: synced by each caller directly).
    shares_syncs: bool,
}

fn gated(inner: Arc<dyn StorageFile>, gate: &Arc<Gate>, hold: Hold) -> Arc<dyn StorageFile> {
    Arc::new(GatedFile {
        inner,
        gate: Arc::clone(gate),
        hold,
        shares_syncs: false,
    })
}

impl StorageFile for GatedFile {
    fn path(&self) -> &Path {
        self.inner.path()
    }
    fn write_at(&self, buf: Bytes, pos: u64) -> IoResult<()> {
        self.inner.write_at(buf, pos)
    }
    fn write_all_at(&self, bufs: &[Bytes], pos: u64, durable: bool) -> IoResult<()> {
        self.inner.write_all_at(bufs, pos, durable)
    }
    fn read_at(&self, buf: &mut [u8], pos: u64) -> IoResult<usize> {
        self.inner.read_at(buf, pos)
    }
    fn sync_data(&self) -> IoResult<()> {
        self.gate.run(self.hold, || self.inner.sync_data())
    }
    fn set_len(&self, len: u64) -> IoResult<()> {
        self.inner.set_len(len)
    }
    fn len(&self) -> IoResult<u64> {
        self.inner.len()
    }
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        self.inner.raw_fd()
    }
    fn shares_syncs(&self) -> bool {
        self.shares_syncs
    }
}

/// Starts a sync of `file` on its own thread.
fn spawn_sync(
    gc: &Arc<GroupCommit>,
    file: &Arc<dyn StorageFile>,
) -> thread::JoinHandle<Result<(), GroupCommitError>> {
    let (gc, file) = (Arc::clone(gc), Arc::clone(file));
    thread::spawn(move || gc.sync(&file))
}

#[test]
fn a_returned_sync_makes_every_earlier_write_durable() {
    let sim = SimStorage::new();
    let f = open(&sim, "a.log");
    let gc = GroupCommit::new(GroupCommitConfig::default());
    f.write_at(Bytes::from_static(b"hello "), 0).unwrap();
    f.write_all_at(
        &[Bytes::from_static(b"wor"), Bytes::from_static(b"ld")],
        6,
        false,
    )
    .unwrap();
    assert_eq!(sim.durable_bytes(&path("a.log")).unwrap(), b"");
    gc.sync(&f).unwrap();
    assert_eq!(sim.durable_bytes(&path("a.log")).unwrap(), b"hello world");
    f.write_at(Bytes::from_static(b"!"), 11).unwrap();
    gc.sync(&f).unwrap();
    assert_eq!(sim.durable_bytes(&path("a.log")).unwrap(), b"hello world!");
    assert_eq!(sim.syncs_completed(), 2);
}

#[test]
fn concurrent_writers_on_eight_files_share_syncs_and_every_sync_covers_its_write() {
    const THREADS: usize = 64;
    const FILES: usize = 8;
    const SYNCS_PER_THREAD: usize = 200;
    const RECORD: usize = 8;
    let sim = SimStorage::new();
    // Every sync is held until each thread has asked for its first sync. Those 64 requests then
    // sit on at most 16 tickets (per file: one syncing, one queued), so syncs must be shared.
    let gate = Arc::new(Gate::default());
    let files: Vec<Arc<dyn StorageFile>> = (0..FILES)
        .map(|i| gated(open(&sim, &format!("{i}.log")), &gate, Hold::BeforeSync))
        .collect();
    let gc = GroupCommit::new(GroupCommitConfig::default());

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (gc, sim) = (Arc::clone(&gc), sim.clone());
            let file = Arc::clone(&files[t % FILES]);
            thread::spawn(move || {
                let name = format!("{}.log", t % FILES);
                let slot = t / FILES;
                for i in 0..SYNCS_PER_THREAD {
                    let mut record = [0u8; RECORD];
                    record[..4].copy_from_slice(&(t as u32).to_be_bytes());
                    record[4..].copy_from_slice(&(i as u32).to_be_bytes());
                    let pos = (slot * SYNCS_PER_THREAD + i) * RECORD;
                    file.write_at(Bytes::copy_from_slice(&record), pos as u64)
                        .unwrap();
                    gc.sync(&file).unwrap();
                    assert_durable(&sim, &name, pos, &record);
                }
            })
        })
        .collect();

    wait_until("every thread's first request", || {
        gc.stats().requests >= THREADS as u64
    });
    assert_eq!(gc.stats().requests, THREADS as u64, "no sync completed yet");
    gate.open();
    for w in workers {
        w.join().unwrap();
    }

    let stats = gc.stats();
    let requests = (THREADS * SYNCS_PER_THREAD) as u64;
    assert_eq!(stats.requests, requests);
    assert_eq!(stats.syncs, sim.syncs_completed(), "no sync failed");
    assert!(
        sim.syncs_completed() < requests,
        "no sync was shared: {stats:?}"
    );
    assert!(stats.rounds <= stats.syncs);
}

#[test]
fn a_failed_sync_reaches_exactly_the_waiters_of_that_file() {
    const BAD_WAITERS: u64 = 6;
    const GOOD_WAITERS: u64 = 5;
    let sim = SimStorage::new();
    let gate = Arc::new(Gate::default());
    let bad = gated(open(&sim, "bad.log"), &gate, Hold::BeforeSync);
    let good = gated(open(&sim, "good.log"), &gate, Hold::BeforeSync);
    bad.write_at(Bytes::from_static(b"lost?"), 0).unwrap();
    good.write_at(Bytes::from_static(b"kept"), 0).unwrap();
    // The first sync of bad.log succeeds; the second, shared by all BAD_WAITERS, fails.
    sim.inject(
        Fault::new(IoOp::SyncData, FaultKind::Eio)
            .on_path("bad.log")
            .after(1),
    );
    let gc = GroupCommit::new(GroupCommitConfig::default());

    // One sync of each file is held in flight while the other requests queue behind it.
    let first_bad = spawn_sync(&gc, &bad);
    let first_good = spawn_sync(&gc, &good);
    wait_until("both first syncs to start", || gate.entered() == 2);
    let bad_waiters: Vec<_> = (0..BAD_WAITERS).map(|_| spawn_sync(&gc, &bad)).collect();
    let good_waiters: Vec<_> = (0..GOOD_WAITERS).map(|_| spawn_sync(&gc, &good)).collect();
    wait_until("every request queued", || {
        gc.stats().requests == 2 + BAD_WAITERS + GOOD_WAITERS
    });
    gate.open();

    first_bad.join().unwrap().unwrap();
    first_good.join().unwrap().unwrap();
    for w in bad_waiters {
        assert_sync_eio(w.join().unwrap(), "bad.log", "a waiter of the failed sync");
    }
    for w in good_waiters {
        w.join().unwrap().unwrap();
    }
    assert_eq!(sim.durable_bytes(&path("good.log")).unwrap(), b"kept");
    let stats = gc.stats();
    assert_eq!(stats.requests, 2 + BAD_WAITERS + GOOD_WAITERS);
    assert_eq!(stats.syncs, 4, "two syncs per file, however many waiters");

    // The fault fired once, but the failure is sticky: the kernel may have dropped the pages a
    // new sync would report as durable, so a later request gets the same error, without a sync.
    bad.write_at(Bytes::from_static(b"!"), 5).unwrap();
    assert_sync_eio(gc.sync(&bad), "bad.log", "a request after the failure");
    assert_eq!(
        sim.durable_bytes(&path("bad.log")).unwrap(),
        b"lost?",
        "no sync after it"
    );
    let stats = gc.stats();
    assert_eq!((stats.syncs, stats.refused), (4, 1));
    gc.sync(&good).unwrap();
}

#[test]
fn a_request_queued_behind_a_failed_sync_gets_its_error_not_a_fresh_sync() {
    const QUEUED: u64 = 3;
    let sim = SimStorage::new();
    let gate = Arc::new(Gate::default());
    let f = gated(open(&sim, "a.log"), &gate, Hold::BeforeSync);
    // The first sync fails and, as Linux does, drops the dirty pages: a sync after it would
    // succeed without bringing them back.
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails).on_path("a.log"));
    let gc = GroupCommit::new(GroupCommitConfig::default());
    f.write_at(Bytes::from_static(b"first"), 0).unwrap();
    let first = spawn_sync(&gc, &f);
    wait_until("the first sync to start", || gate.entered() == 1);
    // Appends written while that sync runs queue one ticket for the file's next sync.
    f.write_at(Bytes::from_static(b"second"), 5).unwrap();
    let queued: Vec<_> = (0..QUEUED).map(|_| spawn_sync(&gc, &f)).collect();
    wait_until("every request queued", || gc.stats().requests == 1 + QUEUED);
    gate.open();

    assert_sync_eio(
        first.join().unwrap(),
        "a.log",
        "the waiter of the failed sync",
    );
    for w in queued {
        assert_sync_eio(
            w.join().unwrap(),
            "a.log",
            "a request queued at the failure",
        );
    }
    assert_eq!(gate.entered(), 1, "no sync of the file after its failure");
    assert_eq!(sim.durable_bytes(&path("a.log")).unwrap(), b"");
    let stats = gc.stats();
    assert_eq!((stats.syncs, stats.refused), (1, QUEUED));
}

#[test]
fn a_file_that_shares_syncs_stays_failed_after_a_failed_sync() {
    let sim = SimStorage::new();
    // An open gate holds nothing; it counts the syncs that reach the file.
    let probe = Arc::new(Gate::default());
    probe.open();
    let f: Arc<dyn StorageFile> = Arc::new(GatedFile {
        inner: open(&sim, "direct.log"),
        gate: Arc::clone(&probe),
        hold: Hold::BeforeSync,
        shares_syncs: true,
    });
    let other = open(&sim, "other.log");
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::Eio).on_path("direct.log"));
    let gc = GroupCommit::new(GroupCommitConfig::default());
    f.write_at(Bytes::from_static(b"x"), 0).unwrap();
    assert_sync_eio(gc.sync(&f), "direct.log", "the failed sync");
    assert_sync_eio(gc.sync(&f), "direct.log", "a request after the failure");
    assert_eq!(probe.entered(), 1, "no sync of the file after its failure");
    gc.sync(&other).unwrap();
}

#[test]
fn a_request_made_while_its_file_syncs_waits_for_the_next_sync() {
    let sim = SimStorage::new();
    let gate = Arc::new(Gate::default());
    // Syncs complete, then are held before returning: a write made now is not in the first.
    let f = gated(open(&sim, "a.log"), &gate, Hold::AfterSync);
    let gc = GroupCommit::new(GroupCommitConfig::default());
    f.write_at(Bytes::from_static(b"first"), 0).unwrap();
    let first = spawn_sync(&gc, &f);
    wait_until("the first sync to complete", || gate.entered() == 1);
    assert_eq!(sim.durable_bytes(&path("a.log")).unwrap(), b"first");

    f.write_at(Bytes::from_static(b"second"), 5).unwrap();
    let second = spawn_sync(&gc, &f);
    wait_until("the second request", || gc.stats().requests == 2);
    gate.open();
    first.join().unwrap().unwrap();
    second.join().unwrap().unwrap();
    assert_eq!(
        sim.durable_bytes(&path("a.log")).unwrap(),
        b"firstsecond",
        "the second request was not served by the sync already running"
    );
    assert_eq!(gc.stats().syncs, 2);
}

#[test]
fn one_sync_serves_every_request_queued_behind_the_running_one() {
    const QUEUED: u64 = 10;
    let sim = SimStorage::new();
    let gate = Arc::new(Gate::default());
    let f = gated(open(&sim, "a.log"), &gate, Hold::BeforeSync);
    let gc = GroupCommit::new(GroupCommitConfig::default());
    let first = spawn_sync(&gc, &f);
    wait_until("the first sync to start", || gate.entered() == 1);
    let queued: Vec<_> = (0..QUEUED).map(|_| spawn_sync(&gc, &f)).collect();
    wait_until("every request queued", || gc.stats().requests == 1 + QUEUED);
    gate.open();
    first.join().unwrap().unwrap();
    for w in queued {
        w.join().unwrap().unwrap();
    }
    assert_eq!(
        gc.stats(),
        GroupCommitStats {
            requests: 1 + QUEUED,
            syncs: 2,
            rounds: 2,
            ..GroupCommitStats::default()
        }
    );
}

#[test]
fn no_more_than_max_batch_files_syncs_run_at_once() {
    const FILES: usize = 5;
    let sim = SimStorage::new();
    let gate = Arc::new(Gate::default());
    let files: Vec<_> = (0..FILES)
        .map(|i| gated(open(&sim, &format!("{i}.log")), &gate, Hold::BeforeSync))
        .collect();
    let gc = GroupCommit::new(GroupCommitConfig {
        max_batch_files: 2,
        max_wait_us: 0,
    });
    let waiters: Vec<_> = files.iter().map(|f| spawn_sync(&gc, f)).collect();
    wait_until("every request queued", || {
        gc.stats().requests == FILES as u64
    });
    wait_until("two syncs in flight", || gate.entered() == 2);
    gate.open();
    for w in waiters {
        w.join().unwrap().unwrap();
    }
    assert_eq!(gate.running_max(), 2);
    let stats = gc.stats();
    assert_eq!(stats.syncs, FILES as u64);
    assert!(stats.rounds >= 3, "5 files, 2 at a time: {stats:?}");
}

#[test]
fn many_threads_on_one_file_never_deadlock() {
    const THREADS: usize = 32;
    const SYNCS_PER_THREAD: usize = 100;
    let sim = SimStorage::new();
    let f = open(&sim, "hot.log");
    let gc = GroupCommit::new(GroupCommitConfig::default());
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (gc, sim, f) = (Arc::clone(&gc), sim.clone(), Arc::clone(&f));
            thread::spawn(move || {
                for i in 0..SYNCS_PER_THREAD {
                    let pos = (t * SYNCS_PER_THREAD + i) * 4;
                    let record = ((t * SYNCS_PER_THREAD + i) as u32).to_be_bytes();
                    f.write_at(Bytes::copy_from_slice(&record), pos as u64)
                        .unwrap();
                    gc.sync(&f).unwrap();
                    assert_durable(&sim, "hot.log", pos, &record);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let stats = gc.stats();
    assert_eq!(stats.requests, (THREADS * SYNCS_PER_THREAD) as u64);
    assert!(stats.syncs <= stats.requests);
    assert_eq!(stats.syncs, stats.rounds, "one file: one sync per round");
}

#[test]
fn small_batches_and_gathering_leaders_stay_live_under_contention() {
    const THREADS: usize = 16;
    const FILES: usize = 4;
    const SYNCS_PER_THREAD: usize = 50;
    for config in [
        GroupCommitConfig {
            max_batch_files: 1,
            max_wait_us: 0,
        },
        GroupCommitConfig {
            max_batch_files: 3,
            max_wait_us: 50,
        },
    ] {
        let sim = SimStorage::new();
        // An open gate holds nothing; it only counts syncs running at once.
        let probe = Arc::new(Gate::default());
        probe.open();
        let files: Vec<_> = (0..FILES)
            .map(|i| gated(open(&sim, &format!("{i}.log")), &probe, Hold::BeforeSync))
            .collect();
        let gc = GroupCommit::new(config);
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (gc, sim) = (Arc::clone(&gc), sim.clone());
                let f = Arc::clone(&files[t % FILES]);
                thread::spawn(move || {
                    for i in 0..SYNCS_PER_THREAD {
                        let pos = ((t / FILES) * SYNCS_PER_THREAD + i) * 2;
                        let record = [t as u8, i as u8];
                        f.write_at(Bytes::copy_from_slice(&record), pos as u64)
                            .unwrap();
                        gc.sync(&f).unwrap();
                        assert_durable(&sim, &format!("{}.log", t % FILES), pos, &record);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        let stats = gc.stats();
        assert_eq!(stats.requests, (THREADS * SYNCS_PER_THREAD) as u64);
        assert!(
            stats.syncs <= stats.rounds * config.max_batch_files as u64,
            "{config:?}: {stats:?}"
        );
        assert!(probe.running_max() <= config.max_batch_files, "{config:?}");
    }
}
