//! A zero write that fails part-way (a full disk) must not leave zeros past the logical end: it
//! used to, as neither `give_up` nor the seal/close trim cut them when the appends had outrun the
//! zeros. A cleanly closed segment then did not reopen (a zero batch length where its end should
//! be), or, reopened, took the next append after those zeros, where a later crash's recovery
//! stopped and cut that acknowledged append (found in review). `RLIMIT_FSIZE` stands in for the full disk (a short `pwrite`,
//! then `EFBIG`, exactly as `ENOSPC` behaves). One test per binary: the limit is per process.

mod common;

use common::batch;
use mirrorlog_index::Offset;
use mirrorlog_segment::io::{PwriteStorage, Storage, ZeroAheadConfig, ZeroAheadStorage};
use mirrorlog_segment::segment::{ActiveSegment, LOG_SUFFIX, SegmentConfig, segment_path};
use std::sync::Arc;

#[test]
fn a_failed_zero_piece_does_not_cost_a_flushed_append_after_a_clean_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let za = Arc::new(
        ZeroAheadStorage::new(
            Arc::new(PwriteStorage::new()),
            ZeroAheadConfig {
                min_window_bytes: 64 << 10,
                max_window_bytes: 64 << 10,
                max_bytes_per_sync: 1 << 30,
                max_bytes_per_second: 64 << 30,
            },
        )
        .unwrap(),
    );
    let storage: Arc<dyn Storage> = za.clone();
    let config = SegmentConfig::default();
    let log = segment_path(dir.path(), Offset(0), LOG_SUFFIX);
    let mut seg = ActiveSegment::create(storage.clone(), dir.path(), Offset(0), config, 0).unwrap();
    if !format!("{:?}", seg.log_file()).starts_with("ZeroAheadFile") {
        eprintln!("skipped: the temp dir is tmpfs");
        return;
    }
    seg.append(batch(0, 10, 100, 1000)).unwrap();
    let a_end = u64::from(seg.size_bytes());
    // The disk fills up one block into the first piece of zeros.
    let limit = a_end.next_multiple_of(4096) + 4096;
    // SAFETY: plain libc calls on plain-old-data structs.
    let old = unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let mut old: libc::rlimit = std::mem::zeroed();
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut old), 0);
        let lim = libc::rlimit {
            rlim_cur: limit,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
        old
    };
    seg.flush().unwrap();
    za.wait_idle();
    // Space returns (retention deleted something).
    // SAFETY: as above.
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &old), 0) };
    // Clean close, as `PartitionLog::close` does it.
    seg.flush().unwrap();
    seg.log_file().finish_appends().unwrap();
    drop(seg);
    let on_disk = std::fs::metadata(&log).unwrap().len();
    // Clean reopen: the indexes are trusted, no scan.
    eprintln!("cleanly closed .log: {on_disk} bytes on disk for {a_end} bytes of batches");
    let mut seg = match ActiveSegment::open(storage.clone(), dir.path(), Offset(0), config, 0) {
        Ok(s) => s,
        Err(e) => panic!(
            "the cleanly closed segment ({on_disk} bytes on disk, {a_end} of batches) does not reopen: {e:?}"
        ),
    };
    let next = seg.next_offset();
    seg.append(batch(next.0, 10, 100, 2000)).unwrap();
    seg.flush().unwrap(); // acknowledged: durable
    let size = seg.size_bytes();
    std::mem::forget(seg); // crash
    let mut seg =
        ActiveSegment::open_for_recovery(storage.clone(), dir.path(), Offset(0), config, 0)
            .unwrap();
    let report = seg.recover(|_, _| Ok(())).unwrap();
    assert_eq!(
        (on_disk, report.batches, report.stopped_by.as_deref()),
        (a_end, 2, None),
        "closed file {on_disk} bytes for a log of {a_end}; second append went to {size}; \
         recovery: {report:?}"
    );
}
