//! Scenario: fail over from A to B, write on B, then fail back: A mirrors the topic from B
//! again. A asks B for the last mirror epoch of B's mirror from A (DescribeClusterMirrors with
//! A's cluster id), keeps what B already holds from it, and copies only what B wrote after the
//! failover — it does not copy the topic again from offset 0.
//!
//! How "not again from 0" is observed: before failing back, A's log start is moved to 20
//! (DeleteRecords) while B still holds offsets 0..20. A copy from scratch would restart A's log
//! at B's log start, 0; an aligned A keeps its log start at 20.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::{Client, ClientError};
use mirrorlog_index::Offset;
use mirrorlog_mirror::source::{OffsetSpec, SourceCluster};
use mirrorlog_segment::Compression;

#[test]
fn a_failback_copies_only_what_the_other_side_wrote_after_the_failover() {
    let dir = tempfile::tempdir().unwrap();
    let a = Serve::start(&dir.path().join("a"), free_port());
    let b = Serve::start(&dir.path().join("b"), free_port());
    let (aa, ba) = (a.addr.as_str(), b.addr.as_str());
    let mut ac = Client::connect(aa).unwrap();
    ac.create_topic("orders", 1, &[]).unwrap();
    let a_end = produce(&mut ac, "orders", 0, 5, "a");

    // A → B, then fail over to B and write there.
    let refresh = "mirror.metadata.refresh.interval.ms=200";
    let create = |on: &str, name: &str, from: &str| {
        ok(
            on,
            &[
                "--create",
                "--mirror",
                name,
                "--source-bootstrap",
                from,
                "--config",
                refresh,
            ],
        )
    };
    create(ba, "from-a", aa);
    ok(ba, &["--start", "--mirror", "from-a", "--topics", "orders"]);
    wait_mirrored(ba, "from-a", "orders", 0, a_end);
    ok(ba, &["--stop", "--mirror", "from-a", "--topics", "orders"]);
    let mut bc = Client::connect(ba).unwrap();
    let b_end = produce(&mut bc, "orders", 0, 3, "b");
    assert!(
        b_end > a_end + 1,
        "the stop's markers, then B's own batches"
    );

    // A's log start moves past offsets B still holds.
    assert_eq!(ac.delete_records("orders", 0, 20).unwrap(), 20);

    // Fail back: A mirrors orders from B. Its own topic (same topic id) becomes a mirror topic.
    create(aa, "from-b", ba);
    ok(aa, &["--start", "--mirror", "from-b", "--topics", "orders"]);
    wait_mirrored(aa, "from-b", "orders", 0, b_end);

    let (ar, br) = (reader(aa), reader(ba));
    let (start, _) = ar.list_offset("orders", 0, OffsetSpec::Earliest).unwrap();
    assert_eq!(
        start,
        Offset(20),
        "A copied the topic again from B's offset 0"
    );
    assert_identical(&ar, &br, "orders", 0, 20, b_end);
    match ac.produce("orders", 0, batch(1, Compression::None, "x"), -1, None) {
        Err(ClientError::Kafka { code: 134, .. }) => {}
        other => panic!("A's orders is a mirror topic now: {other:?}"),
    }

    // Failing back onto a topic the other side still mirrors from us is refused: B mirrors
    // payments from A (not stopped), so A's LOG_ALIGNMENT gets MIRROR_TOPIC_NOT_STOPPED and the
    // partition is FAILED with that reason instead of throwing B's copy away.
    ac.create_topic("payments", 1, &[]).unwrap();
    let p_end = produce(&mut ac, "payments", 0, 2, "p");
    ok(
        ba,
        &["--start", "--mirror", "from-a", "--topics", "payments"],
    );
    wait_mirrored(ba, "from-a", "payments", 0, p_end);
    ok(
        aa,
        &["--start", "--mirror", "from-b", "--topics", "payments"],
    );
    let parts = wait_for(aa, "from-b", "payments FAILED", |parts| {
        find(parts, "payments", 0).is_some_and(|x| x["state"] == "FAILED")
    });
    let why = find(&parts, "payments", 0).unwrap()["error_message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(why.contains("MIRROR_TOPIC_NOT_STOPPED"), "{why}");
    drop((a, b));
}
