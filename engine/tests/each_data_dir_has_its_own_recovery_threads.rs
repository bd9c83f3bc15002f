//! Bug: `num.recovery.threads.per.data.dir` (`LogManagerConfig::recovery_threads`, documented as
//! "× data dirs") was the number of threads for all data directories together: a broker with
//! several directories opened and recovered their logs with the threads of one, so its start
//! after a crash took that many times longer than Kafka's, and a directory slow to recover held
//! up the others' logs. Kafka's `loadLogs` gives each directory a pool of that many threads.

use crate::common;

use common::*;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_segment::io::{IoResult, OpenMode, SimStorage, Storage, StorageFile};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

/// The simulated storage, noting which thread opened each `.log` file of which data directory.
#[derive(Debug)]
struct Recording {
    inner: SimStorage,
    /// Data directory → the threads that opened `.log` files in it.
    log_opens: Mutex<BTreeMap<PathBuf, BTreeSet<String>>>,
}

impl Storage for Recording {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn open(&self, path: &Path, mode: OpenMode) -> IoResult<Arc<dyn StorageFile>> {
        if path.extension().is_some_and(|x| x == "log") {
            let data_dir = path.parent().and_then(Path::parent).unwrap().to_path_buf();
            let thread: ThreadId = std::thread::current().id();
            self.log_opens
                .lock()
                .unwrap()
                .entry(data_dir)
                .or_default()
                .insert(format!("{thread:?}"));
        }
        self.inner.open(path, mode)
    }
    fn rename(&self, from: &Path, to: &Path) -> IoResult<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> IoResult<()> {
        self.inner.remove(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn sync_dir(&self, dir: &Path) -> IoResult<()> {
        self.inner.sync_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> IoResult<Vec<PathBuf>> {
        self.inner.list_dir(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> IoResult<()> {
        self.inner.create_dir_all(dir)
    }
}

#[test]
fn each_data_dir_recovers_on_threads_of_its_own() {
    let two = TwoDirSim::new();
    let (mgr, _) = two.open();
    orders_with_two_records(&mgr, 4);
    let dirs: BTreeSet<PathBuf> = mgr
        .partitions()
        .iter()
        .map(|h| h.data_dir().to_path_buf())
        .collect();
    assert_eq!(dirs.len(), 2, "partitions in both data directories");
    drop(mgr); // a crash: every log is recovered at the next start

    let storage = Arc::new(Recording {
        inner: (*two.sim).clone(),
        log_opens: Mutex::default(),
    });
    let mut cfg = LogManagerConfig::new(two.d1.path());
    cfg.data_dirs = vec![two.d1.path().to_path_buf(), two.d2.path().to_path_buf()];
    cfg.default_log_config = small_config();
    cfg.recovery_threads = 1;
    let (mgr, report) = LogManager::open(cfg, storage.clone(), clock()).unwrap();
    assert_eq!(report.unclean_logs, 4);
    assert_eq!(mgr.partitions().len(), 4);

    let opens = storage.log_opens.lock().unwrap();
    let d1 = &opens[two.d1.path()];
    let d2 = &opens[two.d2.path()];
    assert_eq!(d1.len(), 1, "one recovery thread per directory: {opens:?}");
    assert_eq!(d2.len(), 1, "one recovery thread per directory: {opens:?}");
    assert!(
        d1.is_disjoint(d2),
        "each directory has a recovery thread of its own: {opens:?}"
    );
}
