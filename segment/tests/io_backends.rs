//! One behavioural suite run against every I/O backend (io_uring with the default and with a tiny
//! ring, pwrite, simulated), plus the simulated backend's faults and crashes.
//!
//! Set `MIRRORLOG_SKIP_IO_URING_TESTS=1` to skip the io_uring runs on a machine that forbids
//! io_uring (they fail otherwise, so a silently missing backend cannot pass).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use mirrorlog_segment::io::{
    Fault, FaultKind, IoError, IoOp, OpenMode, PwriteStorage, SimStorage, Storage, StorageFile,
    TornTail, UringConfig, UringStorage, create_dir_all_durably,
};

/// A backend and a directory to play in.
struct Fixture {
    storage: Arc<dyn Storage>,
    root: PathBuf,
    name: &'static str,
    has_fd: bool,
    _tmp: Option<tempfile::TempDir>,
}

impl Fixture {
    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn create(&self, name: &str) -> Arc<dyn StorageFile> {
        self.storage
            .open(&self.path(name), OpenMode::CreateNew)
            .unwrap()
    }

    fn read_all(&self, name: &str) -> Vec<u8> {
        let f = self.storage.open(&self.path(name), OpenMode::Read).unwrap();
        let mut buf = vec![0u8; f.len().unwrap() as usize];
        f.read_exact_at(&mut buf, 0).unwrap();
        buf
    }
}

fn real(storage: Arc<dyn Storage>, name: &'static str) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    Fixture {
        storage,
        root: tmp.path().to_path_buf(),
        name,
        has_fd: true,
        _tmp: Some(tmp),
    }
}

fn skip_uring() -> bool {
    std::env::var_os("MIRRORLOG_SKIP_IO_URING_TESTS").is_some_and(|v| v == "1")
}

fn uring_with(config: UringConfig) -> Option<Fixture> {
    if skip_uring() {
        eprintln!("MIRRORLOG_SKIP_IO_URING_TESTS=1: skipping");
        return None;
    }
    let storage = UringStorage::with_config(config).unwrap_or_else(|e| {
        panic!("io_uring unavailable ({e}); set MIRRORLOG_SKIP_IO_URING_TESTS=1 to skip")
    });
    Some(real(Arc::new(storage), "io_uring"))
}

fn uring() -> Option<Fixture> {
    uring_with(UringConfig::default())
}

/// Four-entry rings, two of them: every batch above three buffers is chunked, and threads
/// outnumber rings.
fn uring_tiny() -> Option<Fixture> {
    uring_with(UringConfig {
        rings: 2,
        ring_entries: 4,
    })
}

fn pwrite() -> Option<Fixture> {
    Some(real(Arc::new(PwriteStorage::new()), "pwrite"))
}

fn sim() -> Option<Fixture> {
    let storage = SimStorage::new();
    let root = PathBuf::from("/sim/root");
    storage.create_dir_all(&root).unwrap();
    Some(Fixture {
        storage: Arc::new(storage),
        root,
        name: "simulated",
        has_fd: false,
        _tmp: None,
    })
}

fn assert_names(err: &IoError, op: IoOp, path: &Path) {
    assert_eq!(err.op, op, "{err}");
    assert_eq!(err.path, path, "{err}");
    let shown = err.to_string();
    assert!(shown.contains(op.as_str()), "{shown}");
    assert!(shown.contains(&path.display().to_string()), "{shown}");
}

/// Deterministic, position-dependent bytes.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(seed as u32) as u8)
        .collect()
}

/// The shared suite: each function is one behaviour every backend must have.
mod suite {
    use super::*;

    pub fn reports_its_name(fx: &Fixture) {
        assert_eq!(fx.storage.name(), fx.name);
    }

    pub fn create_new_on_an_existing_file_fails_with_already_exists(fx: &Fixture) {
        fx.create("a.log");
        let err = fx
            .storage
            .open(&fx.path("a.log"), OpenMode::CreateNew)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_names(&err, IoOp::Create, &fx.path("a.log"));
    }

    pub fn opening_a_missing_file_fails_with_not_found(fx: &Fixture) {
        for mode in [OpenMode::Read, OpenMode::ReadWrite] {
            let err = fx.storage.open(&fx.path("missing"), mode).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::NotFound);
            assert_names(&err, IoOp::Open, &fx.path("missing"));
        }
        let in_missing_dir = fx.path("no-dir/a.log");
        let err = fx
            .storage
            .open(&in_missing_dir, OpenMode::CreateOrOpen)
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_names(&err, IoOp::Create, &in_missing_dir);
    }

    pub fn create_or_open_keeps_existing_contents(fx: &Fixture) {
        let f = fx
            .storage
            .open(&fx.path("a"), OpenMode::CreateOrOpen)
            .unwrap();
        assert_eq!(f.len().unwrap(), 0);
        assert!(f.is_empty().unwrap());
        f.write_at(Bytes::from_static(b"hello"), 0).unwrap();
        drop(f);
        let again = fx
            .storage
            .open(&fx.path("a"), OpenMode::CreateOrOpen)
            .unwrap();
        assert_eq!(again.len().unwrap(), 5);
        let rw = fx.storage.open(&fx.path("a"), OpenMode::ReadWrite).unwrap();
        rw.write_at(Bytes::from_static(b"J"), 0).unwrap();
        assert_eq!(fx.read_all("a"), b"Jello");
    }

    pub fn writes_through_a_read_only_handle_fail(fx: &Fixture) {
        fx.create("a")
            .write_at(Bytes::from_static(b"x"), 0)
            .unwrap();
        let ro = fx.storage.open(&fx.path("a"), OpenMode::Read).unwrap();
        let err = ro.write_at(Bytes::from_static(b"y"), 0).unwrap_err();
        assert_names(&err, IoOp::WriteAt, &fx.path("a"));
        assert_eq!(fx.read_all("a"), b"x");
    }

    pub fn write_at_and_read_at_round_trip(fx: &Fixture) {
        let f = fx.create("a");
        let data = pattern(1, 10_000);
        f.write_at(Bytes::from(data.clone()), 0).unwrap();
        f.write_at(Bytes::from_static(b"MID"), 5000).unwrap();
        let mut want = data;
        want[5000..5003].copy_from_slice(b"MID");
        let mut got = vec![0u8; 10_000];
        f.read_exact_at(&mut got, 0).unwrap();
        assert_eq!(got, want);
        let mut part = [0u8; 7];
        assert_eq!(f.read_at(&mut part, 4998).unwrap(), 7);
        assert_eq!(&part, &want[4998..5005]);
        assert_eq!(f.path(), fx.path("a"));
        assert_eq!(f.raw_fd().is_some(), fx.has_fd);
    }

    pub fn writing_past_the_end_leaves_a_zero_filled_gap(fx: &Fixture) {
        let f = fx.create("a");
        f.write_at(Bytes::from_static(b"ab"), 0).unwrap();
        f.write_at(Bytes::from_static(b"yz"), 10).unwrap();
        assert_eq!(f.len().unwrap(), 12);
        assert_eq!(fx.read_all("a"), b"ab\0\0\0\0\0\0\0\0yz");
    }

    pub fn reads_are_short_at_end_of_file(fx: &Fixture) {
        let f = fx.create("a");
        f.write_at(Bytes::from_static(b"0123456789"), 0).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(f.read_at(&mut buf, 6).unwrap(), 4);
        assert_eq!(&buf[..4], b"6789");
        assert_eq!(f.read_at(&mut buf, 10).unwrap(), 0);
        assert_eq!(f.read_at(&mut buf, 1000).unwrap(), 0);
        let err = f.read_exact_at(&mut buf, 6).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_names(&err, IoOp::ReadAt, &fx.path("a"));
        // Into a fresh buffer (uninitialised on backends with a descriptor): the same answers.
        assert_eq!(f.read_exact_vec(4, 6).unwrap(), b"6789");
        assert_eq!(f.read_exact_vec(0, 10).unwrap(), b"");
        let err = f.read_exact_vec(8, 6).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert_names(&err, IoOp::ReadAt, &fx.path("a"));
        let big = pattern(3, 3 << 20);
        f.write_at(Bytes::from(big.clone()), 10).unwrap();
        assert_eq!(f.read_exact_vec(big.len(), 10).unwrap(), big);
    }

    pub fn write_all_at_lays_many_buffers_back_to_back(fx: &Fixture) {
        // More buffers than the default ring's 128 entries, of uneven sizes, some empty.
        let bufs: Vec<Bytes> = (0..300usize)
            .map(|i| Bytes::from(pattern(i as u8, (i * 37) % 301)))
            .collect();
        let f = fx.create("a");
        f.write_at(Bytes::from_static(b"head"), 0).unwrap();
        f.write_all_at(&bufs, 4, false).unwrap();
        let mut want = b"head".to_vec();
        for b in &bufs {
            want.extend_from_slice(b);
        }
        assert_eq!(fx.read_all("a"), want);
    }

    pub fn write_all_at_with_no_buffers_writes_nothing(fx: &Fixture) {
        let f = fx.create("a");
        f.write_all_at(&[], 100, false).unwrap();
        f.write_all_at(&[], 100, true).unwrap();
        f.write_all_at(&[Bytes::new(), Bytes::new()], 50, true)
            .unwrap();
        assert_eq!(f.len().unwrap(), 0);
    }

    pub fn durable_write_all_at_of_large_buffers_round_trips(fx: &Fixture) {
        let mib = 1 << 20;
        let bufs: Vec<Bytes> = (0..5u8).map(|i| Bytes::from(pattern(i, mib))).collect();
        let f = fx.create("a");
        f.write_all_at(&bufs, 0, true).unwrap();
        f.write_all_at(&bufs[..2], 5 * mib as u64, true).unwrap();
        assert_eq!(f.len().unwrap(), 7 * mib as u64);
        let mut got = vec![0u8; mib];
        for (i, want) in bufs.iter().chain(&bufs[..2]).enumerate() {
            f.read_exact_at(&mut got, (i * mib) as u64).unwrap();
            assert!(got == want[..], "MiB {i} differs");
        }
    }

    pub fn sync_data_succeeds_and_keeps_contents(fx: &Fixture) {
        let f = fx.create("a");
        f.write_at(Bytes::from_static(b"abc"), 0).unwrap();
        f.sync_data().unwrap();
        f.sync_data().unwrap();
        assert_eq!(fx.read_all("a"), b"abc");
    }

    pub fn set_len_truncates_and_extends_with_zeros(fx: &Fixture) {
        let f = fx.create("a");
        f.write_at(Bytes::from_static(b"0123456789"), 0).unwrap();
        f.set_len(4).unwrap();
        assert_eq!(f.len().unwrap(), 4);
        assert_eq!(fx.read_all("a"), b"0123");
        f.set_len(8).unwrap();
        assert_eq!(fx.read_all("a"), b"0123\0\0\0\0");
        f.write_at(Bytes::from_static(b"x"), 9).unwrap();
        assert_eq!(fx.read_all("a"), b"0123\0\0\0\0\0x");
    }

    pub fn rename_moves_a_file_and_replaces_the_target(fx: &Fixture) {
        fx.create("a")
            .write_at(Bytes::from_static(b"A"), 0)
            .unwrap();
        fx.create("b")
            .write_at(Bytes::from_static(b"B"), 0)
            .unwrap();
        let held = fx.storage.open(&fx.path("a"), OpenMode::Read).unwrap();
        fx.storage.rename(&fx.path("a"), &fx.path("b")).unwrap();
        assert!(!fx.storage.exists(&fx.path("a")));
        assert_eq!(fx.read_all("b"), b"A");
        // An open handle follows the file.
        let mut one = [0u8; 1];
        assert_eq!(held.read_at(&mut one, 0).unwrap(), 1);
        assert_eq!(&one, b"A");
        let err = fx.storage.rename(&fx.path("a"), &fx.path("c")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_names(&err, IoOp::Rename, &fx.path("a"));
    }

    pub fn remove_deletes_a_file_and_a_missing_one_is_not_found(fx: &Fixture) {
        let f = fx.create("a");
        f.write_at(Bytes::from_static(b"still readable"), 0)
            .unwrap();
        assert!(fx.storage.exists(&fx.path("a")));
        fx.storage.remove(&fx.path("a")).unwrap();
        assert!(!fx.storage.exists(&fx.path("a")));
        let mut buf = [0u8; 5];
        f.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"still");
        let err = fx.storage.remove(&fx.path("a")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_names(&err, IoOp::Remove, &fx.path("a"));
        let err = fx.storage.open(&fx.path("a"), OpenMode::Read).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }

    pub fn list_dir_is_sorted_and_includes_directories(fx: &Fixture) {
        for name in [
            "00000000000000000100.log",
            "00000000000000000000.log",
            "b.index",
        ] {
            fx.create(name);
        }
        fx.storage.create_dir_all(&fx.path("sub/deeper")).unwrap();
        fx.storage
            .open(&fx.path("sub/deeper/x"), OpenMode::CreateNew)
            .unwrap();
        let listed = fx.storage.list_dir(&fx.root).unwrap();
        assert_eq!(
            listed,
            vec![
                fx.path("00000000000000000000.log"),
                fx.path("00000000000000000100.log"),
                fx.path("b.index"),
                fx.path("sub"),
            ]
        );
        assert_eq!(
            fx.storage.list_dir(&fx.path("sub")).unwrap(),
            vec![fx.path("sub/deeper")]
        );
        assert!(fx.storage.exists(&fx.path("sub/deeper")));
        let err = fx.storage.list_dir(&fx.path("nope")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_names(&err, IoOp::ListDir, &fx.path("nope"));
    }

    pub fn create_dir_all_is_idempotent(fx: &Fixture) {
        fx.storage.create_dir_all(&fx.path("x/y")).unwrap();
        fx.storage.create_dir_all(&fx.path("x/y")).unwrap();
        fx.storage.create_dir_all(&fx.path("x")).unwrap();
        assert_eq!(
            fx.storage.list_dir(&fx.path("x")).unwrap(),
            vec![fx.path("x/y")]
        );
    }

    pub fn sync_dir_succeeds_on_a_directory_and_fails_on_a_missing_one(fx: &Fixture) {
        fx.create("a");
        fx.storage.sync_dir(&fx.root).unwrap();
        let err = fx.storage.sync_dir(&fx.path("nope")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert_names(&err, IoOp::SyncDir, &fx.path("nope"));
    }

    pub fn concurrent_writers_to_different_files_do_not_interfere(fx: &Fixture) {
        const THREADS: u8 = 6;
        const WRITES: usize = 60;
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let storage = Arc::clone(&fx.storage);
                let path = fx.path(&format!("t{t}.log"));
                s.spawn(move || {
                    let f = storage.open(&path, OpenMode::CreateNew).unwrap();
                    for i in 0..WRITES {
                        let chunk = Bytes::from(pattern(t.wrapping_add(i as u8), 100));
                        let pos = (i * 300) as u64;
                        if i % 3 == 0 {
                            f.write_at(chunk, pos).unwrap();
                            f.write_at(Bytes::from(vec![t; 200]), pos + 100).unwrap();
                        } else {
                            let bufs = [chunk, Bytes::from(vec![t; 200])];
                            f.write_all_at(&bufs, pos, i % 3 == 1).unwrap();
                        }
                    }
                    f.sync_data().unwrap();
                });
            }
        });
        for t in 0..THREADS {
            let got = fx.read_all(&format!("t{t}.log"));
            assert_eq!(got.len(), WRITES * 300);
            for i in 0..WRITES {
                let rec = &got[i * 300..(i + 1) * 300];
                assert_eq!(rec[..100], pattern(t.wrapping_add(i as u8), 100)[..]);
                assert!(rec[100..].iter().all(|&b| b == t), "thread {t} write {i}");
            }
        }
    }

    pub fn one_shared_file_takes_writes_from_several_threads(fx: &Fixture) {
        const THREADS: usize = 4;
        const SLOTS: usize = 64;
        const SLOT_BYTES: usize = 512;
        let f = fx.create("shared.log");
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let f = Arc::clone(&f);
                s.spawn(move || {
                    // Thread t owns every THREADS-th slot.
                    for slot in (t..SLOTS).step_by(THREADS) {
                        let half = SLOT_BYTES / 2;
                        let bufs = [
                            Bytes::from(vec![slot as u8; half]),
                            Bytes::from(vec![!(slot as u8); half]),
                        ];
                        f.write_all_at(&bufs, (slot * SLOT_BYTES) as u64, slot % 5 == 0)
                            .unwrap();
                        let mut back = vec![0u8; SLOT_BYTES];
                        f.read_exact_at(&mut back, (slot * SLOT_BYTES) as u64)
                            .unwrap();
                        assert_eq!(back[..half], bufs[0][..]);
                    }
                });
            }
        });
        let got = fx.read_all("shared.log");
        assert_eq!(got.len(), SLOTS * SLOT_BYTES);
        for slot in 0..SLOTS {
            let rec = &got[slot * SLOT_BYTES..(slot + 1) * SLOT_BYTES];
            assert!(rec[..SLOT_BYTES / 2].iter().all(|&b| b == slot as u8));
            assert!(rec[SLOT_BYTES / 2..].iter().all(|&b| b == !(slot as u8)));
        }
    }
}

/// Generates one `#[test]` per suite function for a backend fixture.
macro_rules! backend_suite {
    ($backend:ident, $fixture:expr, [$($case:ident),* $(,)?]) => {
        mod $backend {
            use super::*;
            $(
                #[test]
                fn $case() {
                    if let Some(fx) = $fixture {
                        suite::$case(&fx);
                    }
                }
            )*
        }
    };
}

macro_rules! all_backends {
    ($($case:ident),* $(,)?) => {
        backend_suite!(io_uring, uring(), [$($case),*]);
        backend_suite!(io_uring_tiny_rings, uring_tiny(), [$($case),*]);
        backend_suite!(pwrite, pwrite(), [$($case),*]);
        backend_suite!(simulated, sim(), [$($case),*]);
    };
}

all_backends!(
    reports_its_name,
    create_new_on_an_existing_file_fails_with_already_exists,
    opening_a_missing_file_fails_with_not_found,
    create_or_open_keeps_existing_contents,
    writes_through_a_read_only_handle_fail,
    write_at_and_read_at_round_trip,
    writing_past_the_end_leaves_a_zero_filled_gap,
    reads_are_short_at_end_of_file,
    write_all_at_lays_many_buffers_back_to_back,
    write_all_at_with_no_buffers_writes_nothing,
    durable_write_all_at_of_large_buffers_round_trips,
    sync_data_succeeds_and_keeps_contents,
    set_len_truncates_and_extends_with_zeros,
    rename_moves_a_file_and_replaces_the_target,
    remove_deletes_a_file_and_a_missing_one_is_not_found,
    list_dir_is_sorted_and_includes_directories,
    create_dir_all_is_idempotent,
    sync_dir_succeeds_on_a_directory_and_fails_on_a_missing_one,
    concurrent_writers_to_different_files_do_not_interfere,
    one_shared_file_takes_writes_from_several_threads,
);

/// Faults and crashes: the simulated backend only.
mod simulated_faults {
    use super::*;

    const DIR: &str = "/data/topic-0";

    fn setup() -> (SimStorage, PathBuf, Arc<dyn StorageFile>) {
        let sim = SimStorage::new();
        let dir = PathBuf::from(DIR);
        create_dir_all_durably(&sim, &dir).unwrap();
        let path = dir.join("00000000000000000000.log");
        let f = sim.open(&path, OpenMode::CreateNew).unwrap();
        sim.sync_dir(&dir).unwrap();
        f.write_all_at(&[Bytes::from_static(b"durable-")], 0, true)
            .unwrap();
        (sim, path, f)
    }

    fn durable_after_crash(sim: &SimStorage, path: &Path) -> Vec<u8> {
        sim.crash(TornTail::None).file_bytes(path).unwrap()
    }

    #[test]
    fn eio_on_write_names_file_and_op_and_writes_nothing() {
        let (sim, path, f) = setup();
        sim.inject(Fault::new(IoOp::WriteAt, FaultKind::Eio));
        let err = f.write_at(Bytes::from_static(b"lost"), 8).unwrap_err();
        assert_names(&err, IoOp::WriteAt, &path);
        assert_eq!(err.source.raw_os_error(), Some(libc::EIO));
        assert_eq!(sim.file_bytes(&path).unwrap(), b"durable-");
        assert_eq!(durable_after_crash(&sim, &path), b"durable-");
    }

    #[test]
    fn enospc_on_a_batch_write_is_recognised_as_no_space() {
        let (sim, path, f) = setup();
        sim.inject(Fault::new(IoOp::WriteAt, FaultKind::NoSpace).on_path(".log"));
        let bufs = [Bytes::from_static(b"aa"), Bytes::from_static(b"bb")];
        let err = f.write_all_at(&bufs, 8, true).unwrap_err();
        assert!(err.is_no_space(), "{err}");
        assert_names(&err, IoOp::WriteAt, &path);
        assert_eq!(sim.file_bytes(&path).unwrap(), b"durable-");
        assert_eq!(durable_after_crash(&sim, &path), b"durable-");
    }

    #[test]
    fn a_short_write_lands_its_first_bytes_then_fails() {
        let (sim, path, f) = setup();
        sim.inject(Fault::new(
            IoOp::WriteAt,
            FaultKind::ShortWrite { bytes: 3 },
        ));
        let bufs = [Bytes::from_static(b"ab"), Bytes::from_static(b"cdef")];
        let err = f.write_all_at(&bufs, 8, true).unwrap_err();
        assert_names(&err, IoOp::WriteAt, &path);
        assert_eq!(err.source.raw_os_error(), Some(libc::EIO));
        assert_eq!(sim.file_bytes(&path).unwrap(), b"durable-abc");
        // The failed write was not synced: a crash keeps only what was durable.
        assert_eq!(durable_after_crash(&sim, &path), b"durable-");
    }

    #[test]
    fn a_failed_sync_drops_the_dirty_data() {
        let (sim, path, f) = setup();
        f.write_at(Bytes::from_static(b"dirty"), 8).unwrap();
        sim.inject(Fault::new(IoOp::SyncData, FaultKind::SyncFails));
        let err = f.sync_data().unwrap_err();
        assert_names(&err, IoOp::SyncData, &path);
        assert_eq!(err.source.raw_os_error(), Some(libc::EIO));
        assert_eq!(sim.file_bytes(&path).unwrap(), b"durable-");
        // A later sync of the file fails the same way (it would otherwise succeed, with the
        // lost bytes gone); one through a new handle succeeds and does not resurrect them.
        let again = f.sync_data().unwrap_err();
        assert_names(&again, IoOp::SyncData, &path);
        assert_eq!(again.source.raw_os_error(), Some(libc::EIO));
        sim.open(&path, OpenMode::ReadWrite)
            .unwrap()
            .sync_data()
            .unwrap();
        assert_eq!(durable_after_crash(&sim, &path), b"durable-");
    }

    #[test]
    fn a_sync_fault_on_a_durable_batch_leaves_the_writes_unsynced() {
        let (sim, path, f) = setup();
        sim.inject(Fault::new(IoOp::SyncData, FaultKind::Eio));
        let err = f
            .write_all_at(&[Bytes::from_static(b"acked?")], 8, true)
            .unwrap_err();
        assert_names(&err, IoOp::SyncData, &path);
        assert_eq!(sim.file_bytes(&path).unwrap(), b"durable-acked?");
        assert_eq!(durable_after_crash(&sim, &path), b"durable-");
    }

    #[test]
    fn every_operation_can_fail_with_eio_naming_its_path() {
        let (sim, path, f) = setup();
        let dir = PathBuf::from(DIR);
        let other = dir.join("other.log");
        let eio = |op| sim.inject(Fault::new(op, FaultKind::Eio));
        let check = |r: Result<(), IoError>, op: IoOp, p: &Path| {
            assert_names(&r.unwrap_err(), op, p);
        };
        eio(IoOp::Open);
        check(sim.open(&path, OpenMode::Read).map(drop), IoOp::Open, &path);
        eio(IoOp::Create);
        check(
            sim.open(&other, OpenMode::CreateNew).map(drop),
            IoOp::Create,
            &other,
        );
        assert!(!sim.exists(&other), "a faulted create creates nothing");
        eio(IoOp::ReadAt);
        check(f.read_at(&mut [0u8; 4], 0).map(drop), IoOp::ReadAt, &path);
        eio(IoOp::SetLen);
        check(f.set_len(0), IoOp::SetLen, &path);
        eio(IoOp::Len);
        check(f.len().map(drop), IoOp::Len, &path);
        eio(IoOp::Rename);
        check(sim.rename(&path, &other), IoOp::Rename, &path);
        eio(IoOp::Remove);
        check(sim.remove(&path), IoOp::Remove, &path);
        eio(IoOp::SyncDir);
        check(sim.sync_dir(&dir), IoOp::SyncDir, &dir);
        eio(IoOp::ListDir);
        check(sim.list_dir(&dir).map(drop), IoOp::ListDir, &dir);
        eio(IoOp::CreateDir);
        check(
            sim.create_dir_all(&dir.join("x")),
            IoOp::CreateDir,
            &dir.join("x"),
        );
        assert_eq!(sim.pending_faults(), 0);
        // Nothing happened to the file: name and bytes intact, live and durable.
        assert_eq!(
            sim.list_dir(&dir).unwrap(),
            vec![dir.join("00000000000000000000.log")]
        );
        assert_eq!(sim.file_bytes(&path).unwrap(), b"durable-");
        assert_eq!(durable_after_crash(&sim, &path), b"durable-");
    }

    #[test]
    fn a_fault_restricted_to_a_path_spares_other_files() {
        let (sim, path, f) = setup();
        let index = sim
            .open(
                &PathBuf::from(DIR).join("00000000000000000000.index"),
                OpenMode::CreateNew,
            )
            .unwrap();
        sim.inject(Fault::new(IoOp::WriteAt, FaultKind::Eio).on_path(".index"));
        f.write_at(Bytes::from_static(b"x"), 8).unwrap();
        let err = index.write_at(Bytes::from_static(b"y"), 0).unwrap_err();
        assert!(err.path.to_string_lossy().ends_with(".index"));
        assert_eq!(sim.file_bytes(&path).unwrap(), b"durable-x");
    }

    #[test]
    fn a_crash_keeps_exactly_the_durable_bytes() {
        let (sim, path, f) = setup();
        f.write_at(Bytes::from_static(b"synced"), 8).unwrap();
        f.sync_data().unwrap();
        f.write_at(Bytes::from_static(b"-unsynced"), 14).unwrap();
        f.write_at(Bytes::from_static(b"D"), 0).unwrap(); // overwrite inside the durable range
        assert_eq!(sim.file_bytes(&path).unwrap(), b"Durable-synced-unsynced");
        let after = sim.crash(TornTail::None);
        assert_eq!(after.file_bytes(&path).unwrap(), b"durable-synced");
        assert_eq!(after.durable_bytes(&path).unwrap(), b"durable-synced");
        // The crashed storage is a working file system.
        let g = after.open(&path, OpenMode::ReadWrite).unwrap();
        g.write_at(Bytes::from_static(b"!"), 14).unwrap();
        assert_eq!(after.file_bytes(&path).unwrap(), b"durable-synced!");
        assert_eq!(sim.file_bytes(&path).unwrap(), b"Durable-synced-unsynced");
    }

    #[test]
    fn a_torn_tail_keeps_the_first_unsynced_bytes_of_matching_files() {
        let (sim, path, f) = setup();
        let index_path = PathBuf::from(DIR).join("00000000000000000000.index");
        let index = sim.open(&index_path, OpenMode::CreateNew).unwrap();
        sim.sync_dir(Path::new(DIR)).unwrap();
        f.write_at(Bytes::from_static(b"0123456789"), 8).unwrap();
        index.write_at(Bytes::from_static(b"idx"), 0).unwrap();
        let torn = |bytes| TornTail::KeepUnsynced {
            file_contains: ".log".into(),
            bytes,
        };
        let after = sim.crash(torn(4));
        assert_eq!(after.file_bytes(&path).unwrap(), b"durable-0123");
        assert_eq!(after.file_bytes(&index_path).unwrap(), b"", "not matched");
        let after = sim.crash(torn(100));
        assert_eq!(after.file_bytes(&path).unwrap(), b"durable-0123456789");
        let after = sim.crash(torn(0));
        assert_eq!(after.file_bytes(&path).unwrap(), b"durable-");
    }

    #[test]
    fn names_become_durable_only_at_sync_dir() {
        let sim = SimStorage::new();
        let dir = PathBuf::from(DIR);
        create_dir_all_durably(&sim, &dir).unwrap();
        let a = dir.join("a.log");
        let b = dir.join("b.log");
        let f = sim.open(&a, OpenMode::CreateNew).unwrap();
        f.write_all_at(&[Bytes::from_static(b"A")], 0, true)
            .unwrap();
        assert!(
            !sim.crash(TornTail::None).exists(&a),
            "created but the directory was never synced"
        );
        sim.sync_dir(&dir).unwrap();
        assert_eq!(sim.crash(TornTail::None).file_bytes(&a).unwrap(), b"A");

        sim.rename(&a, &b).unwrap();
        let after = sim.crash(TornTail::None);
        assert!(
            after.exists(&a) && !after.exists(&b),
            "unsynced rename reverts"
        );
        sim.sync_dir(&dir).unwrap();
        let after = sim.crash(TornTail::None);
        assert!(!after.exists(&a));
        assert_eq!(after.file_bytes(&b).unwrap(), b"A");

        sim.remove(&b).unwrap();
        assert!(
            sim.crash(TornTail::None).exists(&b),
            "unsynced remove reverts"
        );
        sim.sync_dir(&dir).unwrap();
        assert!(!sim.crash(TornTail::None).exists(&b));
        assert_eq!(sim.list_dir(&dir).unwrap(), Vec::<PathBuf>::new());
    }

    #[test]
    fn a_directory_chain_survives_a_crash_only_when_created_durably() {
        let sim = SimStorage::new();
        sim.create_dir_all(Path::new("/plain/topic-0")).unwrap();
        create_dir_all_durably(&sim, Path::new("/durable/topic-0")).unwrap();
        let after = sim.crash(TornTail::None);
        assert!(
            !after.exists(Path::new("/plain/topic-0")),
            "/plain was never synced"
        );
        assert!(after.exists(Path::new("/durable/topic-0")));
        let syncs = sim.syncs_completed();
        create_dir_all_durably(&sim, Path::new("/durable/topic-0")).unwrap();
        assert_eq!(
            sim.syncs_completed(),
            syncs,
            "an existing directory costs no sync"
        );
    }

    #[test]
    fn halting_after_the_kth_sync_crashes_with_exactly_that_state() {
        // A workload of four durable appends, each one sync; crash after each k.
        let appends: [&[u8]; 4] = [b"a", b"bb", b"ccc", b"dddd"];
        for k in 0..=appends.len() as u64 {
            let sim = SimStorage::new();
            let dir = PathBuf::from(DIR);
            create_dir_all_durably(&sim, &dir).unwrap();
            let path = dir.join("x.log");
            let f = sim.open(&path, OpenMode::CreateNew).unwrap();
            sim.sync_dir(&dir).unwrap();
            let base = sim.syncs_completed(); // the directories' syncs
            sim.halt_after_syncs(base + k);
            let mut acked = Vec::new();
            let mut pos = 0;
            for a in appends {
                match f.write_all_at(&[Bytes::from_static(a)], pos, true) {
                    Ok(()) => acked.extend_from_slice(a),
                    Err(e) => {
                        assert_eq!(e.op, IoOp::SyncData);
                        break;
                    }
                }
                pos += a.len() as u64;
            }
            assert_eq!(sim.syncs_completed(), base + k);
            let after = sim.crash(TornTail::None);
            assert_eq!(after.file_bytes(&path).unwrap(), acked, "k = {k}");
            let want: Vec<u8> = appends[..k as usize].concat();
            assert_eq!(acked, want);
        }
    }
}
