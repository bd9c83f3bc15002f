//! Scenario: the io_uring backend creates its rings lazily, one per pool slot, on the first
//! operation that lands on an empty slot. When that creation fails — here because the process
//! has no free file descriptor left (`EMFILE`; `ENOMEM` is the other usual cause) — the
//! operation itself fails with that error, although a ring that already exists sits idle and
//! could serve it. A write to an already open file then fails with `EMFILE`, which the engine
//! treats as a storage failure (segment poisoned, log directory offline).
//! (One scenario per file: the descriptor limit is process-wide.)

use std::sync::Arc;

use bytes::Bytes;
use mirrorlog_segment::io::{OpenMode, Storage, StorageFile, UringConfig, UringStorage};

#[test]
fn a_write_is_served_by_an_existing_idle_ring_when_a_new_ring_cannot_be_created() {
    // As segment/tests/io_backends.rs: io_uring missing fails the test unless skipping was
    // asked for, so the scenario cannot pass without running.
    if std::env::var_os("MIRRORLOG_SKIP_IO_URING_TESTS").is_some_and(|v| v == "1") {
        eprintln!("MIRRORLOG_SKIP_IO_URING_TESTS=1: skipping");
        return;
    }
    let storage = UringStorage::with_config(UringConfig {
        rings: 2,
        ring_entries: 4,
    })
    .unwrap_or_else(|e| {
        panic!("io_uring unavailable ({e}); set MIRRORLOG_SKIP_IO_URING_TESTS=1 to skip")
    });
    assert_eq!(storage.rings_created(), 1, "the probe ring is kept");
    let dir = tempfile::tempdir().unwrap();
    let f: Arc<dyn StorageFile> = storage
        .open(&dir.path().join("f"), OpenMode::CreateNew)
        .unwrap();

    // No descriptor can be created any more: the lowest free one is at the limit.
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain libc calls on valid arguments.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut old), 0);
        let free = libc::dup(0);
        assert!(free >= 0);
        libc::close(free);
        let lim = libc::rlimit {
            rlim_cur: free as libc::rlim_t,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }

    // Fresh threads take consecutive slot hints, so one of two lands on the empty slot 1.
    let results: Vec<_> = (0..2u64)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || f.write_at(Bytes::from_static(b"abcd"), i * 4))
                .join()
                .unwrap()
        })
        .collect();

    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &old), 0);
    }
    for (i, r) in results.iter().enumerate() {
        assert!(
            r.is_ok(),
            "write {i} failed although ring 0 was idle: {}",
            r.as_ref().unwrap_err()
        );
    }
    assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"abcdabcd");
}
