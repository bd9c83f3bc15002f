//! `produce` and `consume` in quick mode against mirrorlog alone (no peers): a real Kafka client
//! (librdkafka) against an in-process broker, so the scenarios cannot rot. Checks the JSON
//! contract of DESIGN.md §6, never a timing.

use mirrorlog_bench::harness::Opts;
use mirrorlog_bench::scenarios::produce_consume::{consume_with, produce_with};
use serde_json::Value;

const QUICK: Opts = Opts {
    quick: true,
    json: true,
};

fn check_contract(line: &Value, scenario: &str) {
    let obj = line.as_object().expect("a JSON object");
    assert_eq!(obj["scenario"], scenario, "{line}");
    assert!(
        obj["variant"].as_str().is_some_and(|v| !v.is_empty()),
        "{line}"
    );
    // No peer ran: mirrorlog's figures alone.
    assert_eq!(obj["baseline"], "none", "{line}");
    for k in ["mb_per_s", "baseline_mb_per_s", "ratio"] {
        let x = obj
            .get(k)
            .and_then(Value::as_f64)
            .unwrap_or_else(|| panic!("{k} missing or not a number: {line}"));
        assert!(x.is_finite() && x > 0.0, "{k} = {x}: {line}");
    }
    assert_eq!(obj["record_bytes"], 1024, "{line}");
    assert!(obj.get("skipped_peers").is_none(), "{line}");
}

#[test]
fn produce_quick_reports_both_acks_variants() {
    let reports = produce_with(QUICK, &[], vec![]).expect("produce");
    let lines: Vec<Value> = reports.iter().map(|r| r.to_json()).collect();
    let variants: Vec<&str> = lines
        .iter()
        .map(|l| l["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["acks=1", "acks=all"], "{lines:?}");
    for l in &lines {
        check_contract(l, "produce");
        for k in ["p50_us", "p99_us"] {
            assert!(l[k].as_f64().is_some_and(|x| x > 0.0), "{k}: {l}");
        }
        assert!(l["p50_us"].as_f64() <= l["p99_us"].as_f64(), "{l}");
        assert_eq!(l["records_per_round"], 2048, "{l}");
    }
    // The fdatasync reference rides on the acks=all line only.
    assert!(lines[0].get("fdatasync_p99_us").is_none(), "{}", lines[0]);
    for k in [
        "fdatasync_p50_us",
        "fdatasync_p99_us",
        "p99_vs_fdatasync_p99",
    ] {
        assert!(
            lines[1][k].as_f64().is_some_and(|x| x > 0.0),
            "{k}: {}",
            lines[1]
        );
    }
}

#[test]
fn consume_quick_reads_everything_back() {
    let reports = consume_with(QUICK, &[], vec![]).expect("consume");
    assert_eq!(reports.len(), 1);
    let line = reports[0].to_json();
    check_contract(&line, "consume");
    assert_eq!(line["variant"], "from-beginning", "{line}");
    assert_eq!(line["records"], 4096, "{line}");
}

#[test]
fn a_peer_that_is_missing_is_skipped_not_fatal() {
    // SAFETY-free: no environment changes; the peer is asked for by kind, and on a machine
    // without it installed the scenario must still report mirrorlog's figures.
    let skipped = vec![(
        "example-peer".to_string(),
        "not installed: test".to_string(),
    )];
    let reports = consume_with(QUICK, &[], skipped).expect("consume");
    let line = reports[0].to_json();
    assert_eq!(line["baseline"], "none", "{line}");
    assert_eq!(
        line["skipped_peers"]["example-peer"], "not installed: test",
        "{line}"
    );
}
