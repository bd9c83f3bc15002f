//! Bug: an I/O error reading one partition's `topic.config`, listing a partition directory, or
//! creating or listing a data directory itself makes `LogManager::open` fail as a whole, so one
//! bad disk keeps the partitions on the healthy disks from being served. Kafka's
//! `LogManager.loadLogs` (and `createAndValidateLogDirs` before it) handles any `IOException`
//! of a data directory by taking that directory offline (`LogDirFailureChannel`) and loads the
//! others — as this manager already does for an I/O error while a log is opened
//! (`load_io_error_fails_every_dir.rs`). A stored topic config that reads but names an invalid
//! value still fails the start, as Kafka's `LogConfig.fromProps` does for a topic's overrides.
//!
//! The tests may run as root, which reads any directory whatever its mode: the partition-dir
//! case is then run again in a child process as an unprivileged user.

use crate::common;

use bytes::Bytes;
use common::*;
use mirrorlog_engine::error::EngineResult;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, TOPIC_CONFIG_FILE};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{Fault, FaultKind, IoOp, OpenMode, SimStorage, Storage};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Two data directories, one partition of `orders` in each, written and shut down cleanly.
struct TwoDirs {
    _root: tempfile::TempDir,
    d1: PathBuf,
    d2: PathBuf,
    sim: Arc<SimStorage>,
    in_d1: TopicPartition,
    in_d2: TopicPartition,
}

impl TwoDirs {
    fn new() -> TwoDirs {
        let root = tempfile::tempdir().unwrap();
        let d1 = root.path().join("d1");
        let d2 = root.path().join("d2");
        let sim = Arc::new(SimStorage::new());
        let mut t = TwoDirs {
            _root: root,
            d1,
            d2,
            sim,
            in_d1: TopicPartition {
                topic: "orders".into(),
                partition: 0,
            },
            in_d2: TopicPartition {
                topic: "orders".into(),
                partition: 1,
            },
        };
        let mgr = t.open().unwrap();
        let mut placed = vec![];
        for p in 0..2 {
            let tp = TopicPartition {
                topic: "orders".into(),
                partition: p,
            };
            let h = mgr
                .create(&tp, TopicId([p as u8 + 1; 16]), small_config())
                .unwrap();
            h.append_as_leader_durable(client_batch(2, T0), LeaderEpoch(0), LeaderOrigin::Client)
                .unwrap();
            placed.push((tp, h.data_dir().to_path_buf()));
        }
        for (tp, dir) in placed {
            if dir == t.d1 {
                t.in_d1 = tp;
            } else {
                assert_eq!(dir, t.d2);
                t.in_d2 = tp;
            }
        }
        assert_ne!(t.in_d1, t.in_d2, "one partition in each dir");
        mgr.shutdown().unwrap();
        t
    }

    fn open(&self) -> EngineResult<LogManager> {
        let mut cfg = LogManagerConfig::new(&self.d1);
        cfg.data_dirs = vec![self.d1.clone(), self.d2.clone()];
        cfg.default_log_config = small_config();
        let storage: Arc<dyn Storage> = self.sim.clone();
        LogManager::open(cfg, storage, clock()).map(|(m, _)| m)
    }

    fn partition_dir_in_d2(&self) -> PathBuf {
        self.d2.join(self.in_d2.to_string())
    }

    /// Opens with d2 failing as the test arranged: d1's partition is served, d2 is offline
    /// with a reason naming `what`.
    fn assert_only_d2_offline(&self, what: &str) {
        let mgr = self
            .open()
            .expect("the healthy data dir is opened; the failing one goes offline");
        assert_eq!(
            mgr.get(&self.in_d1).unwrap().read().log_end_offset(),
            Offset(2)
        );
        let offline = mgr.offline_dirs();
        assert_eq!(offline.len(), 1, "only d2 is offline: {offline:?}");
        assert_eq!(offline[0].0, self.d2);
        assert!(
            offline[0].1.contains(what),
            "the reason names {what}: {}",
            offline[0].1
        );
        // The online dir keeps working: appends, and new partitions are placed there.
        mgr.append_durable(&self.in_d1, client_batch(1, T0), LeaderEpoch(0))
            .unwrap();
        let new = TopicPartition {
            topic: "new".into(),
            partition: 0,
        };
        let h = mgr.create(&new, TopicId([9; 16]), small_config()).unwrap();
        assert_eq!(h.data_dir(), self.d1);
        drop(h);
        mgr.shutdown().unwrap();
    }
}

#[test]
fn an_unreadable_topic_config_takes_only_its_data_dir_offline() {
    let t = TwoDirs::new();
    // Reading it fails (the file lives in the storage, as the logs' files do).
    let f = t.partition_dir_in_d2().join(TOPIC_CONFIG_FILE);
    t.sim
        .inject(Fault::new(IoOp::Open, FaultKind::Eio).on_path(f.to_str().unwrap()));
    t.assert_only_d2_offline(TOPIC_CONFIG_FILE);
}

#[test]
fn a_topic_config_with_an_invalid_value_still_fails_the_start() {
    let t = TwoDirs::new();
    let f = t.partition_dir_in_d2().join(TOPIC_CONFIG_FILE);
    let file = t.sim.open(&f, OpenMode::ReadWrite).unwrap();
    file.set_len(0).unwrap();
    file.write_all_at(&[Bytes::from_static(b"retention.ms=-7\n")], 0, true)
        .unwrap();
    drop(file);
    let err = t
        .open()
        .expect_err("an invalid stored config fails the start, as Kafka");
    assert!(err.to_string().contains("retention.ms"), "{err}");
    // Naming the file, so the operator knows which partition's value to change.
    assert!(err.to_string().contains(&f.display().to_string()), "{err}");
}

#[test]
fn a_data_dir_that_is_not_a_directory_goes_offline_alone() {
    let t = TwoDirs::new();
    std::fs::remove_dir_all(&t.d2).unwrap();
    std::fs::write(&t.d2, b"not a directory").unwrap();
    t.assert_only_d2_offline(&t.d2.display().to_string());
}

const CHILD: &str = "MIRRORLOG_TEST_UNPRIVILEGED_CHILD";
const UNLISTABLE_TEST: &str = "an_unlistable_partition_dir_takes_only_its_data_dir_offline";

/// Whether `dir` (mode 0o300: writable and searchable, not readable) can still be listed —
/// as root can.
fn listing_ignores_modes(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok()
}

#[test]
fn an_unlistable_partition_dir_takes_only_its_data_dir_offline() {
    let t = TwoDirs::new();
    let p = t.partition_dir_in_d2();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o300)).unwrap();
    if listing_ignores_modes(&p) {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(
            std::env::var_os(CHILD).is_none(),
            "the unprivileged child can still list a 0o300 directory"
        );
        // Privileged: run this test again as `nobody`, with its own directories, from a copy
        // of this binary that `nobody` can execute wherever the target directory is.
        use std::os::unix::process::CommandExt;
        let bin_dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = bin_dir.path().join("unprivileged-child");
        std::fs::copy(std::env::current_exe().unwrap(), &bin).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let out = std::process::Command::new(&bin)
            .args(["--exact", UNLISTABLE_TEST, "--test-threads=1"])
            .current_dir(bin_dir.path())
            .env(CHILD, "1")
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the unprivileged run failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    // `partition.metadata` and `topic.config` still open (the directory is searchable); only
    // listing the directory fails, with EACCES.
    t.assert_only_d2_offline(&p.display().to_string());
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}
