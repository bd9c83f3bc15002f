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

/// Holds the first `sync_data` of any file sharing it until [`Gate::open`].
#[derive(Debug, Default)]
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    used: bool,
    entered: bool,
    open: bool,
}

impl Gate {
    /// Whether the held sync has started.
    fn entered(&self) -> bool {
        self.state.lock().unwrap().entered
    }

    fn open(&self) {
        self.state.lock().unwrap().open = true;
        self.cv.notify_all();
    }

    /// Called at the start of every gated `sync_data`: holds the first one.
    fn pass(&self) {
        let mut st = self.state.lock().unwrap();
        if st.used {
            return;
        }
        st.used = true;
        st.entered = true;
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

/// A file that delegates to a simulated one, with its first sync held by a [`Gate`].
#[derive(Debug)]
struct GatedFile {
    inner: Arc<dyn StorageFile>,
    gate: Arc<Gate>,
    hold: Hold,
}

fn gated(inner: Arc<dyn StorageFile>, gate: &Arc<Gate>, hold: Hold) -> Arc<dyn StorageFile> {
    Arc::new(GatedFile {
        inner,
        gate: Arc::clone(gate),
        hold,
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
        match self.hold {
            Hold::BeforeSync => {
                self.gate.pass();
                self.inner.sync_data()
            }
            Hold::AfterSync => {
                let r = self.inner.sync_data();
                self.gate.pass();
                r
            }
        }
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
    // The first sync of the run is held until every thread has asked for its first sync, so
    // those 64 requests (on at most 8 + 8 distinct queued-or-running files) must share syncs.
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

    wait_until("the first sync start", || gate.entered());
    wait_until("every thread's first request", || {
        gc.stats().requests >= THREADS as u64
    });
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
    let blocker = gated(open(&sim, "gate.log"), &gate, Hold::BeforeSync);
    let bad = open(&sim, "bad.log");
    let good = open(&sim, "good.log");
    bad.write_at(Bytes::from_static(b"lost?"), 0).unwrap();
    good.write_at(Bytes::from_static(b"kept"), 0).unwrap();
    sim.inject(Fault::new(IoOp::SyncData, FaultKind::Eio).on_path("bad.log"));
    let gc = GroupCommit::new(GroupCommitConfig::default());

    // Round 1 (the blocker) is held while all the other requests queue: they then share
    // round 2, one sync per file.
    let first = spawn_sync(&gc, &blocker);
    wait_until("the blocker's sync start", || gate.entered());
    let bad_waiters: Vec<_> = (0..BAD_WAITERS).map(|_| spawn_sync(&gc, &bad)).collect();
    let good_waiters: Vec<_> = (0..GOOD_WAITERS).map(|_| spawn_sync(&gc, &good)).collect();
    wait_until("every request queued", || {
        gc.stats().requests == 1 + BAD_WAITERS + GOOD_WAITERS
    });
    gate.open();

    first.join().unwrap().unwrap();
    for w in bad_waiters {
        match w.join().unwrap() {
            Err(GroupCommitError::Sync(e)) => {
                assert_eq!(e.op, IoOp::SyncData);
                assert_eq!(e.path, path("bad.log"));
                assert_eq!(e.source.raw_os_error(), Some(EIO));
            }
            other => panic!("a waiter of the failed file got {other:?}"),
        }
    }
    for w in good_waiters {
        w.join().unwrap().unwrap();
    }
    assert_eq!(sim.durable_bytes(&path("good.log")).unwrap(), b"kept");
    assert_eq!(sim.durable_bytes(&path("bad.log")).unwrap(), b"");
    assert_eq!(
        gc.stats(),
        GroupCommitStats {
            requests: 1 + BAD_WAITERS + GOOD_WAITERS,
            syncs: 3,
            rounds: 2
        },
        "one sync per distinct file"
    );

    // The fault fired once; a later request is served by a new sync.
    gc.sync(&bad).unwrap();
    assert_eq!(sim.durable_bytes(&path("bad.log")).unwrap(), b"lost?");
}

#[test]
fn a_request_made_while_its_file_syncs_waits_for_the_next_sync() {
    let sim = SimStorage::new();
    let gate = Arc::new(Gate::default());
    // The first sync completes, then is held before returning: a write made now is not in it.
    let f = gated(open(&sim, "a.log"), &gate, Hold::AfterSync);
    let gc = GroupCommit::new(GroupCommitConfig::default());
    f.write_at(Bytes::from_static(b"first"), 0).unwrap();
    let first = spawn_sync(&gc, &f);
    wait_until("the first sync to complete", || gate.entered());
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
fn a_round_takes_at_most_max_batch_files_files() {
    let sim = SimStorage::new();
    let gate = Arc::new(Gate::default());
    let blocker = gated(open(&sim, "gate.log"), &gate, Hold::BeforeSync);
    let files: Vec<_> = (0..5).map(|i| open(&sim, &format!("{i}.log"))).collect();
    let gc = GroupCommit::new(GroupCommitConfig {
        max_batch_files: 2,
        max_wait_us: 0,
    });
    let first = spawn_sync(&gc, &blocker);
    wait_until("the blocker's sync start", || gate.entered());
    let rest: Vec<_> = files.iter().map(|f| spawn_sync(&gc, f)).collect();
    wait_until("every request queued", || gc.stats().requests == 6);
    gate.open();
    first.join().unwrap().unwrap();
    for w in rest {
        w.join().unwrap().unwrap();
    }
    // Round 1: the blocker; then the five queued files in rounds of 2, 2 and 1.
    assert_eq!(
        gc.stats(),
        GroupCommitStats {
            requests: 6,
            syncs: 6,
            rounds: 4
        }
    );
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
        let files: Vec<_> = (0..FILES)
            .map(|i| open(&sim, &format!("{i}.log")))
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
    }
}
