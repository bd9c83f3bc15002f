//! `produce`/`consume` print one line per (variant, peer): lines are told apart by
//! (`scenario`, `variant`, `baseline`) (produce_consume.rs module docs). The gate keys lines by
//! `scenario/variant` only, so it rejects a run with two peers installed and compares a ratio
//! against one peer with a ratio against another (or against `none`).

use mirrorlog_bench::compare::{compare, parse_lines};

/// What `mirrorlog-bench produce --json` prints with Tansu and noida-db installed.
const TWO_PEERS: &str = r#"
{"scenario":"produce","variant":"acks=1","mb_per_s":90.0,"baseline":"tansu","baseline_mb_per_s":100.0,"ratio":0.9}
{"scenario":"produce","variant":"acks=1","mb_per_s":90.0,"baseline":"noida-db","baseline_mb_per_s":30.0,"ratio":3.0}
"#;

#[test]
fn a_run_with_two_peers_can_be_parsed() {
    let parsed = parse_lines("two-peers.json", TWO_PEERS);
    assert!(
        parsed.is_ok(),
        "valid produce output rejected: {:#}",
        parsed.unwrap_err()
    );
    assert_eq!(parsed.unwrap().len(), 2);
}

#[test]
fn a_ratio_is_never_compared_against_a_ratio_to_another_baseline() {
    // Baseline run: ours is 3x noida-db. Current run: noida-db not installed, so the line is
    // mirrorlog alone (`baseline: "none"`, ratio 1) — and ours also got 3x slower against
    // tansu in a run where only tansu was there. Neither comparison is meaningful.
    let base = parse_lines(
        "base.json",
        r#"{"scenario":"produce","variant":"acks=1","baseline":"noida-db","ratio":3.0}"#,
    )
    .unwrap();
    let cur = parse_lines(
        "cur.json",
        r#"{"scenario":"produce","variant":"acks=1","baseline":"tansu","ratio":2.9}"#,
    )
    .unwrap();
    let cmp = compare(&base, &cur, 0.1).unwrap();
    assert!(
        cmp.deltas.is_empty(),
        "compared a ratio vs noida-db with a ratio vs tansu: {:?}",
        cmp.deltas
    );
}
