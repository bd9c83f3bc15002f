//! `produce` (acks=all) reports `p99_vs_fdatasync_p99` — p99 latency ÷ the same run's
//! `fdatasync` p99, lower is better, target ≤ 2 — but the gate only knows latency ratios named
//! `…_vs_baseline_p99`, so a tripled produce latency passes `compare`.

use mirrorlog_bench::compare::{compare, parse_lines};

#[test]
fn a_tripled_produce_p99_ratio_fails_the_gate() {
    let base = parse_lines(
        "base.json",
        r#"{"scenario":"produce","variant":"acks=all","baseline":"none","ratio":1.0,"p99_us":900.0,"fdatasync_p99_us":600.0,"p99_vs_fdatasync_p99":1.5}"#,
    )
    .unwrap();
    let cur = parse_lines(
        "cur.json",
        r#"{"scenario":"produce","variant":"acks=all","baseline":"none","ratio":1.0,"p99_us":2700.0,"fdatasync_p99_us":600.0,"p99_vs_fdatasync_p99":4.5}"#,
    )
    .unwrap();
    let cmp = compare(&base, &cur, 0.1).unwrap();
    assert!(
        !cmp.passed(),
        "p99_vs_fdatasync_p99 went 1.5 -> 4.5 and the gate passed: {:?}",
        cmp.deltas
    );
}
