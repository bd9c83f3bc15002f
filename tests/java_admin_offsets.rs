//! Kafka's Java AdminClient (kafka-clients 4.3.0) reads and trims partition offsets on
//! `mirrorlog serve`: listOffsets earliest, latest, forTimestamp, maxTimestamp and
//! earliestLocal under both isolation levels with a transaction open (the last stable offset
//! and the timestamp lookups stop at its first record), latestTiered (ListOffsets v9, not
//! advertised: refused at once), and deleteRecords up to an offset, beyond the high watermark
//! and up to the high watermark (`AdminScenarios offsets`).

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_lists_offsets_and_deletes_records() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["offsets", &broker.addr]);
    // Records 0..3 at base+0, +5000, +3000, +4000; then a transaction's record 4 at +6000.
    assert_printed(
        &out,
        &[
            ("empty.earliest", "0@-1"),
            ("empty.latest", "0@-1"),
            ("empty.max", "-1@-1"),
            ("earliest", "0@-1"),
            ("latest.uncommitted", "5@-1"),
            ("latest.committed", "4@-1"),
            ("ts.base+3500", "1@base+5000"),
            ("ts.base", "0@base+0"),
            ("ts.after_all", "-1@-1"),
            ("ts.base+5500.committed", "-1@-1"),
            ("ts.base+5500.uncommitted", "4@base+6000"),
            ("max.uncommitted", "4@base+6000"),
            ("max.committed", "-1@-1"),
            ("earliest_local", "0@-1"),
            ("latest_tiered", "UnsupportedVersionException"),
            // The commit marker is offset 5.
            ("after_commit.latest.committed", "6@-1"),
            ("unknown", "UnknownTopicOrPartitionException"),
            ("delete_records", "ok:2"),
            ("after_delete.earliest", "2@-1"),
            ("after_delete.ts.base", "2@base+3000"),
            ("delete_records.beyond", "OffsetOutOfRangeException"),
            ("delete_records.hw", "ok:6"),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
