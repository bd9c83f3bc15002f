//! Scenario: before creating a mirror, an operator runs `mirrorlog mirrors --preflight` against
//! a source and a destination that disagree: a topic name taken on the destination by another
//! topic, a topic missing on the source, a pattern that matches nothing, a group on both sides.
//! Each shows up as a finding and a FAIL makes the exit status 1; a clean plan exits 0; after
//! mirroring, the same topic on both sides (same topic id) is reported as such.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;
use serde_json::Value;

fn findings(dest: &str, args: &[&str]) -> (i32, Vec<(String, String, String)>) {
    let mut all = vec!["--preflight", "--json"];
    all.extend_from_slice(args);
    let (code, out, err) = cli(dest, &all);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    let rows = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["check"].as_str().unwrap().to_string(),
                f["subject"].as_str().unwrap().to_string(),
                f["result"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (code, rows)
}

fn has(rows: &[(String, String, String)], check: &str, subject: &str, result: &str) -> bool {
    rows.iter()
        .any(|(c, s, r)| c == check && s == subject && r == result)
}

#[test]
fn preflight_reports_conflicts_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    let mut dc = Client::connect(d).unwrap();
    for t in ["orders", "payments", "clash"] {
        sc.create_topic(t, 1, &[]).unwrap();
    }
    dc.create_topic("clash", 1, &[]).unwrap();
    let end = produce(&mut sc, "orders", 0, 2, "o");
    sc.commit_offsets("billing", "orders", &[(0, 0, -1)])
        .unwrap();
    dc.commit_offsets("billing", "clash", &[(0, 0, -1)])
        .unwrap();
    sc.commit_offsets("solo", "orders", &[(0, 5, -1)]).unwrap();
    sc.commit_offsets("audit-x", "orders", &[(0, 5, -1)])
        .unwrap();

    let sb = src.addr.as_str();
    let (code, rows) = findings(
        d,
        &[
            "--source-bootstrap",
            sb,
            "--topics",
            "orders,clash,missing",
            "--config",
            "mirror.groups.exclude=audit-.*",
        ],
    );
    assert_eq!(code, 1, "{rows:?}");
    assert!(
        rows.iter().any(|(c, _, r)| c == "clusters" && r == "OK"),
        "{rows:?}"
    );
    assert!(has(&rows, "topic-name", "orders", "OK"), "{rows:?}");
    assert!(has(&rows, "topic-name", "clash", "FAIL"), "{rows:?}");
    assert!(has(&rows, "topic", "missing", "FAIL"), "{rows:?}");
    assert!(has(&rows, "group", "solo", "OK"), "{rows:?}");
    assert!(
        has(&rows, "group", "billing", "WARN"),
        "on both sides: {rows:?}"
    );
    assert!(
        !rows.iter().any(|(_, s, _)| s == "audit-x"),
        "excluded groups are not checked: {rows:?}"
    );
    let (code, rows) = findings(d, &["--source-bootstrap", sb, "--pattern", "zzz.*"]);
    assert_eq!(code, 1);
    assert!(has(&rows, "pattern", "zzz.*", "FAIL"), "{rows:?}");
    let (code, rows) = findings(d, &["--source-bootstrap", sb, "--pattern", "pay.*"]);
    assert_eq!(code, 0, "{rows:?}");
    assert!(has(&rows, "topic-name", "payments", "OK"), "{rows:?}");

    // Nothing was created by the checks; now mirror orders and check again.
    let out = ok(d, &["--list"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    ok(
        d,
        &["--create", "--mirror", "east", "--source-bootstrap", sb],
    );
    ok(d, &["--start", "--mirror", "east", "--topics", "orders"]);
    wait_mirrored(d, "east", "orders", 0, end);
    let (code, rows) = findings(d, &["--source-bootstrap", sb, "--topics", "orders"]);
    assert_eq!(code, 0, "{rows:?}");
    assert!(has(&rows, "topic-name", "orders", "WARN"), "{rows:?}");
    // The human table, too.
    let out = ok(
        d,
        &[
            "--preflight",
            "--source-bootstrap",
            sb,
            "--topics",
            "orders",
        ],
    );
    assert!(out.starts_with("CHECK"), "{out}");
    drop((src, dst));
}
