//! `Report::to_json` rounds `ratio` to 3 decimals, an absolute quantum of 0.001. Ratios far
//! below 1 are real (`mirror --quick` prints `many-partitions-200` with `"ratio":0.002`), and for
//! them the quantum is larger than the gate's tolerance: a third of the throughput can go and
//! `compare` sees 0.002 -> 0.002 and passes.

use mirrorlog_bench::compare::{compare, parse_lines};
use mirrorlog_bench::harness::Report;
use std::time::Duration;

fn line(ours: Duration) -> String {
    Report {
        scenario: "mirror",
        variant: "many-partitions-200".into(),
        baseline: "raw-tcp-1-connection",
        bytes: 13_107_200,
        ours,
        base: Duration::from_millis(9),
        extra: vec![],
    }
    .to_json()
    .to_string()
}

#[test]
fn a_third_less_throughput_at_a_small_ratio_fails_the_gate() {
    // ratio 9 ms / 3.75 s = 0.0024, then 9 ms / 5.6 s = 0.0016: 33% worse.
    let before = line(Duration::from_millis(3750));
    let after = line(Duration::from_millis(5600));
    let base = parse_lines("base.json", &before).unwrap();
    let cur = parse_lines("cur.json", &after).unwrap();
    let cmp = compare(&base, &cur, 0.1).unwrap();
    assert!(
        !cmp.passed(),
        "throughput fell by a third and the gate passed: {before} -> {after}"
    );
}
