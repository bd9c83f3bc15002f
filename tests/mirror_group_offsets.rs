//! Scenario: a mirror syncs consumer group offsets on its own, on every metadata refresh, with
//! the double clamp (the review thread's VK12): a source commit ahead of what the destination
//! holds is committed at the destination's high watermark, never past it, so a consumer that
//! fails over skips nothing; `mirror.groups.exclude` keeps a group out; a failed-over (STOPPED)
//! partition is left to its local consumers. On the way, `--failover-report` says what a stop
//! would cost each group and which open transaction it would abort.
//!
//! "Not synced" is observed after a later sync that is visible: a marker commit on a partition
//! that is still mirrored arrives only after the sync pass that would have carried the other.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;
use mirrorlog_index::{ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Waits until the destination's committed offset of `group` on `topic-0` is `want`.
fn wait_committed(dest: &str, group: &str, topic: &str, want: i64) {
    let mut c = Client::connect(dest).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = c.fetch_offsets(group, topic, &[0]).unwrap()[0].1;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{group} on {topic}: {got}, waiting for {want}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn committed(dest: &str, group: &str, topic: &str) -> i64 {
    Client::connect(dest)
        .unwrap()
        .fetch_offsets(group, topic, &[0])
        .unwrap()[0]
        .1
}

#[test]
fn group_offsets_follow_the_source_clamped_to_what_the_destination_holds() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let mut dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.clone();
    let d = d.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    for t in ["orders", "payments"] {
        sc.create_topic(t, 1, &[]).unwrap();
    }
    let orders_end = produce(&mut sc, "orders", 0, 5, "o");
    let payments_end = produce(&mut sc, "payments", 0, 2, "p");
    sc.commit_offsets("billing", "orders", &[(0, 30, -1)])
        .unwrap();
    sc.commit_offsets("billing", "payments", &[(0, 5, -1)])
        .unwrap();
    sc.commit_offsets("audit-tool", "orders", &[(0, 10, -1)])
        .unwrap();

    create_mirror(
        d,
        "east",
        &src.addr,
        &[
            "mirror.metadata.refresh.interval.ms=200",
            "mirror.groups.exclude=audit-.*",
        ],
    );
    ok(
        d,
        &["--start", "--mirror", "east", "--topics", "orders,payments"],
    );
    wait_mirrored(d, "east", "orders", 0, orders_end);
    wait_mirrored(d, "east", "payments", 0, payments_end);
    wait_committed(d, "billing", "orders", 30);
    wait_committed(d, "billing", "payments", 5);

    // VK12: the source's consumer runs ahead of the mirror (paused here); its commit arrives
    // clamped to the destination's high watermark.
    ok(d, &["--pause", "--mirror", "east", "--topics", "orders"]);
    let ahead = produce(&mut sc, "orders", 0, 3, "o2");
    sc.commit_offsets("billing", "orders", &[(0, ahead, -1)])
        .unwrap();
    wait_committed(d, "billing", "orders", orders_end);
    assert!(ahead > orders_end);

    // The failover report, now: billing would lose the records the destination lacks on
    // orders and re-read nothing; a transaction left open on payments would be aborted.
    let (pid, epoch) = sc.init_producer_id(Some("tx-open")).unwrap();
    sc.add_partitions_to_txn("tx-open", pid, epoch, "payments", &[0])
        .unwrap();
    let mut txn = BatchBuilder::new()
        .producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(0))
        .transactional(true);
    for i in 0..4 {
        txn.append(
            TimestampMs(1_700_000_000_000),
            None,
            Some(format!("t{i}").as_bytes()),
            &[],
        );
    }
    let txn_at = sc
        .produce("payments", 0, txn.build().into_bytes(), -1, Some("tx-open"))
        .unwrap();
    wait_mirrored(d, "east", "payments", 0, txn_at + 4);
    let report: Value =
        serde_json::from_str(&ok(d, &["--failover-report", "--mirror", "east", "--json"])).unwrap();
    // Both clusters up: every group read, the report complete (exit status 0, checked by `ok`).
    assert_eq!(report["complete"], true, "{report}");
    assert_eq!(
        report["unreadable_groups"],
        serde_json::json!([]),
        "{report}"
    );
    let row = |topic: &str| {
        report["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["group"] == "billing" && g["topic"] == topic)
            .unwrap_or_else(|| panic!("billing on {topic}: {report}"))
            .clone()
    };
    let orders = row("orders");
    assert_eq!(orders["source_committed"], ahead);
    assert_eq!(orders["destination_committed"], orders_end);
    assert_eq!(orders["redelivered"], 0);
    assert_eq!(orders["not_on_destination"], ahead - orders_end);
    assert_eq!(row("payments")["not_on_destination"], 0);
    assert!(
        !report["groups"].to_string().contains("audit-tool"),
        "excluded: {report}"
    );
    let open = &report["open_transactions"];
    assert_eq!(open.as_array().unwrap().len(), 1, "{report}");
    assert_eq!(open[0]["topic"], "payments");
    assert_eq!(open[0]["producer_id"], pid);
    assert_eq!(open[0]["first_offset"], txn_at);
    let human = ok(d, &["--failover-report", "--mirror", "east"]);
    assert!(
        human.contains("Open transactions the stop would abort:"),
        "{human}"
    );
    ok(d, &["--resume", "--mirror", "east", "--topics", "orders"]);
    wait_mirrored(d, "east", "orders", 0, ahead);
    wait_committed(d, "billing", "orders", ahead);
    assert_eq!(
        committed(d, "audit-tool", "orders"),
        -1,
        "mirror.groups.exclude keeps audit-tool out"
    );

    // Failover: orders is local now; source commits to it are no longer copied.
    ok(d, &["--stop", "--mirror", "east", "--topics", "orders"]);
    sc.commit_offsets("billing", "orders", &[(0, 3, -1)])
        .unwrap();
    for marker in [6, 7] {
        sc.commit_offsets("billing", "payments", &[(0, marker, -1)])
            .unwrap();
        wait_committed(d, "billing", "payments", marker);
    }
    assert_eq!(committed(d, "billing", "orders"), ahead);
    assert_eq!(
        dst.stop(),
        Some(0),
        "a clean shutdown with mirrors and their group sync"
    );
    drop(src);
}
