//! Scenario: the index files of every segment are deleted while the broker is down. Even a clean
//! reopen notices and rebuilds them from the log; every offset is then found through them.

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, ReplicaOrigin, Shutdown};
use mirrorlog_index::Offset;
use mirrorlog_segment::Compression;

#[test]
fn missing_indexes_are_rebuilt_from_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut log = open(dir.path(), small_config(), clock.clone(), Shutdown::Clean);
    for i in 0..150 {
        log.append_as_follower(
            replica_batch(i * 3, 3, 0, Compression::None, T0),
            ReplicaOrigin::Replication,
        )
        .unwrap();
    }
    log.close().unwrap();
    let mut removed = 0;
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension()
            .is_some_and(|x| x == "index" || x == "timeindex")
        {
            std::fs::remove_file(p).unwrap();
            removed += 1;
        }
    }
    assert!(removed >= 4);
    let log = open(dir.path(), small_config(), clock, Shutdown::Clean);
    assert_eq!(log.log_end_offset(), Offset(450));
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            assert!(
                p.with_extension("index").exists(),
                "{} has its index back",
                p.display()
            );
        }
    }
    for o in (0..450).step_by(7) {
        let d = log
            .read(Offset(o), 1, FetchIsolation::LogEnd, true)
            .unwrap()
            .records
            .unwrap();
        assert!(d.first_batch_offset.get() <= o && o < d.first_batch_offset.get() + 3);
    }
}
