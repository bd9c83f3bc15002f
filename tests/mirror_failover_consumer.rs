//! Scenario: the review thread's VK12 — a consumer group that ran ahead of the mirror on the
//! source (its committed offset is past the destination's log end) fails over to the
//! destination with `auto.offset.reset=latest`. The mirror's group sync committed the offset
//! clamped to the destination's high watermark, so the consumer (confluent-kafka) resumes inside
//! the log and receives every record written on the destination after the failover; with the
//! source's offset it would get OFFSET_OUT_OF_RANGE, reset to the end and skip them. The source
//! is killed before the failover, as in a disaster.
//!
//! Needs `MIRRORLOG_PYTHON` (scripts/test.sh sets it); without it the test says so and checks
//! nothing.

mod common;

use common::mirrors::*;
use common::{Serve, free_port, python};
use mirrorlog_broker::client::Client;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn committed(c: &mut Client, group: &str) -> i64 {
    c.fetch_offsets(group, "orders", &[0]).unwrap()[0].1
}

/// Waits until the destination's committed offset of `group` is `want` (hang guard only).
fn wait_committed(dest: &str, group: &str, want: i64) {
    let mut c = Client::connect(dest).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while committed(&mut c, group) != want {
        assert!(Instant::now() < deadline, "{group}: waiting for {want}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_consumer_that_ran_ahead_fails_over_without_skipping_a_record() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    sc.create_topic("orders", 1, &[]).unwrap();
    let mirrored = produce(&mut sc, "orders", 0, 10, "a");
    sc.commit_offsets("billing", "orders", &[(0, mirrored, -1)])
        .unwrap();
    create_mirror(
        d,
        "east",
        &src.addr,
        &["mirror.metadata.refresh.interval.ms=200"],
    );
    ok(d, &["--start", "--mirror", "east", "--topics", "orders"]);
    wait_mirrored(d, "east", "orders", 0, mirrored);
    wait_committed(d, "billing", mirrored);

    // The mirror falls behind (paused) while billing reads on and commits on the source.
    ok(d, &["--pause", "--mirror", "east", "--topics", "orders"]);
    let ahead = produce(&mut sc, "orders", 0, 5, "b");
    sc.commit_offsets("billing", "orders", &[(0, ahead, -1)])
        .unwrap();
    // Two visible syncs of a marker group after that commit: the pass that saw billing's new
    // offset has finished.
    for marker in [1, 2] {
        sc.commit_offsets("marker", "orders", &[(0, marker, -1)])
            .unwrap();
        wait_committed(d, "marker", marker);
    }
    let mut dc = Client::connect(d).unwrap();
    assert_eq!(
        committed(&mut dc, "billing"),
        mirrored,
        "clamped, not {ahead}"
    );

    // Disaster: the source dies with the mirror behind. A paused topic is resumed before it is
    // stopped (MM14); with the source gone nothing more arrives. Fail over, write on the
    // destination, move the consumers there.
    src.kill();
    ok(d, &["--resume", "--mirror", "east", "--topics", "orders"]);
    ok(d, &["--stop", "--mirror", "east", "--topics", "orders"]);
    let first_local = produce(&mut dc, "orders", 0, 1, "local") - 10;
    produce(&mut dc, "orders", 0, 1, "local2");
    assert!(
        ahead > first_local + 20,
        "the source's offset is past the destination's end"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/failover_consumer.py");
    let out = Command::new(&py)
        .arg(script)
        .args([d, "billing", "orders", "20"])
        .output()
        .unwrap();
    if !out.status.success() {
        panic!(
            "failover_consumer.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    let offsets: Vec<i64> = v["offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_i64().unwrap())
        .collect();
    let want: Vec<i64> = (first_local..first_local + 20).collect();
    assert_eq!(
        offsets, want,
        "every record written after the failover, none skipped"
    );
}
