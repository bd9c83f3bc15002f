//! Scenario: the log manager with `log.io.mode=direct` — durable appends from many threads over
//! several partitions (segments rolling, so sealed segments are trimmed), reads served while
//! appending, a clean shutdown that leaves every `.log` exactly its length, and a crash (the
//! process gone without closing anything) whose preallocated zero tails recovery ends the logs
//! at cleanly, with every acknowledged append kept. Reopened in buffered mode too: the files are
//! the same files.

use crate::common;

use common::*;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{IoMode, LogManager, LogManagerConfig, ManagerLoadReport};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{DirectDurability, PwriteStorage, Storage};
use std::path::Path;
use std::sync::Arc;

fn tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: "direct".into(),
        partition: p,
    }
}

fn manager(
    dir: &Path,
    mode: IoMode,
    durability: DirectDurability,
) -> (LogManager, ManagerLoadReport) {
    let mut cfg = LogManagerConfig::new(dir);
    cfg.default_log_config = small_config();
    cfg.io_mode = mode;
    cfg.direct.durability = durability;
    cfg.direct.preallocate_bytes = 64 << 10;
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    LogManager::open(cfg, storage, clock()).unwrap()
}

/// Every `.log` under `dir` with its length on disk.
fn log_files(dir: &Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = vec![];
    for part in std::fs::read_dir(dir).unwrap() {
        let part = part.unwrap().path();
        if !part.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&part).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "log") {
                let len = std::fs::metadata(&f).unwrap().len();
                out.push((f, len));
            }
        }
    }
    out.sort();
    out
}

/// Records per appended batch (~500 bytes a batch, so 4 KiB segments roll).
const RECORDS: i64 = 40;

/// 4 writers × 3 partitions, 30 durable appends each of `RECORDS` records.
fn append_durably(mgr: &LogManager) {
    std::thread::scope(|s| {
        for w in 0..4 {
            s.spawn(move || {
                for i in 0..30 {
                    let h = mgr.get(&tp((w + i) % 3)).unwrap();
                    h.append_as_leader_durable(
                        client_batch(RECORDS as usize, T0),
                        LeaderEpoch(0),
                        LeaderOrigin::Client,
                    )
                    .unwrap();
                    // A reader near the head (served from the tail cache or the file).
                    let log = h.read();
                    let leo = log.log_end_offset();
                    let got = values(&log, Offset(leo.get() - 3));
                    assert_eq!(got.len(), 3);
                    assert_eq!(got[2].1, format!("v{}", RECORDS - 1));
                }
            });
        }
    });
}

/// `MIRRORLOG_SKIP_IO_URING_TESTS=1` skips the tests that need io_uring on a machine that
/// forbids it (as `segment/tests/io_backends.rs` does).
fn skip_uring() -> bool {
    std::env::var_os("MIRRORLOG_SKIP_IO_URING_TESTS").is_some_and(|v| v == "1")
}

#[test]
fn direct_mode_survives_clean_shutdowns_and_crashes_with_every_acknowledged_append() {
    if skip_uring() {
        return;
    }
    for durability in [DirectDurability::Dsync, DirectDurability::Fdatasync] {
        let dir = tempfile::tempdir().unwrap();
        let (mgr, _) = manager(dir.path(), IoMode::Direct, durability);
        for p in 0..3 {
            mgr.create(&tp(p), TopicId([p as u8 + 1; 16]), small_config())
                .unwrap();
        }
        append_durably(&mgr);
        // 120 appends over 3 partitions.
        for p in 0..3 {
            let leo = mgr.get(&tp(p)).unwrap().read().log_end_offset();
            assert_eq!(leo, Offset(40 * RECORDS));
        }
        mgr.shutdown().unwrap();
        // Clean: every `.log`, sealed or active, is exactly its batches (no preallocated zeros);
        // the 4 KiB segments rolled, so there are several per partition.
        let files = log_files(dir.path());
        assert!(files.len() > 6, "{files:?}");
        for (f, len) in &files {
            let bytes = std::fs::read(f).unwrap();
            assert!(
                *len > 0 && !bytes.ends_with(&[0u8; 64]),
                "{f:?} ends in zeros"
            );
        }

        // Reopen in direct mode, append, then crash: nothing is closed or trimmed.
        let (mgr, report) = manager(dir.path(), IoMode::Direct, durability);
        assert_eq!(report.unclean_logs, 0);
        append_durably(&mgr);
        let active_untrimmed = log_files(dir.path())
            .iter()
            .any(|(_, len)| *len == 64 << 10);
        assert!(
            active_untrimmed,
            "active segments are preallocated while open"
        );
        std::mem::forget(mgr);

        // Recovery (buffered this time) keeps every acknowledged append; the zero tails are a
        // clean end, not a problem.
        let (mgr, report) = manager(dir.path(), IoMode::Buffered, durability);
        assert_eq!(report.unclean_logs, 3);
        assert_eq!(report.bytes_truncated, 0, "{:?}", report.problems);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        for p in 0..3 {
            let h = mgr.get(&tp(p)).unwrap();
            let log = h.read();
            assert_eq!(log.log_end_offset(), Offset(80 * RECORDS), "{durability:?}");
            let all = values(&log, Offset(0));
            assert_eq!(all.len(), 80 * RECORDS as usize);
            assert!(all.iter().enumerate().all(|(i, (o, _))| *o == i as i64));
        }
        mgr.shutdown().unwrap();
        for (f, _) in log_files(dir.path()) {
            let bytes = std::fs::read(&f).unwrap();
            assert!(!bytes.ends_with(&[0u8; 64]), "{f:?} ends in zeros");
        }
    }
}

#[test]
fn io_mode_and_direct_durability_parse_their_documented_values() {
    use mirrorlog_engine::manager::parse_direct_durability;
    assert_eq!(IoMode::parse("buffered"), Ok(IoMode::Buffered));
    assert_eq!(IoMode::parse("direct"), Ok(IoMode::Direct));
    assert_eq!(IoMode::default(), IoMode::Buffered);
    let e = IoMode::parse("mmap").unwrap_err();
    assert!(
        e.contains("log.io.mode=mmap") && e.contains("buffered"),
        "{e}"
    );
    assert_eq!(
        parse_direct_durability("dsync"),
        Ok(DirectDurability::Dsync)
    );
    assert_eq!(
        parse_direct_durability("fdatasync"),
        Ok(DirectDurability::Fdatasync)
    );
    assert!(parse_direct_durability("fsync").is_err());
    let mut cfg = LogManagerConfig::new("/tmp/x");
    cfg.direct.chunk_bytes = 100;
    let e = cfg.validate().unwrap_err();
    assert!(e.starts_with("log.io.direct: chunk_bytes"), "{e}");
}
