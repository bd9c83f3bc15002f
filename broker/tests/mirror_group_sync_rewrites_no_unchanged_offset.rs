//! Bug: every group offset sync (each `mirror.metadata.refresh.interval.ms`, 5 s by default)
//! committed every synced group's offset of every mirrored partition again, unchanged or not:
//! one `__consumer_offsets` record per group and partition per refresh, for as long as the
//! mirror runs (measured: 3 groups on one partition, 3 records a sync with nothing changed;
//! 100 groups on 1000 partitions would be 20,000 records a second).
//!
//! Now an offset the destination already holds (offset, leader epoch and metadata) is not
//! committed again; a changed one is.

use crate::common;

use common::mirror_groups::{commit_orders, committed_orders, mirrored_orders};
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::group::OFFSETS_TOPIC;

/// Records in `__consumer_offsets`, all partitions.
fn offsets_records(b: &Broker) -> i64 {
    let n = b.topics.get(OFFSETS_TOPIC).unwrap().partitions;
    (0..n)
        .map(|p| {
            let h = b.partition(OFFSETS_TOPIC, p).unwrap();
            let log = h.read();
            log.log_end_offset().get()
        })
        .sum()
}

#[test]
fn a_sync_commits_only_the_offsets_that_changed() {
    let dir = tempfile::tempdir().unwrap();
    let (src, dst, mirror) = mirrored_orders(dir.path(), 10, |_| {});
    for (g, o) in [("g0", 3), ("g1", 5), ("g2", 7)] {
        commit_orders(src.addr, g, o, "m");
    }
    mirror.sync_groups().unwrap().unwrap();
    assert_eq!(committed_orders(dst.addr, "g2"), (7, "m".to_string()));

    let before = offsets_records(&dst.broker);
    mirror.sync_groups().unwrap().unwrap();
    assert_eq!(
        offsets_records(&dst.broker),
        before,
        "nothing written for offsets the destination holds"
    );

    commit_orders(src.addr, "g1", 6, "m");
    mirror.sync_groups().unwrap().unwrap();
    assert_eq!(committed_orders(dst.addr, "g1"), (6, "m".to_string()));
    assert_eq!(
        offsets_records(&dst.broker),
        before + 1,
        "only the changed offset is written"
    );
    drop(mirror);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
