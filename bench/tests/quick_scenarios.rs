//! Every harness scenario runs in quick mode in the test suite, so none can rot.

use std::process::Command;

#[test]
fn batch_validate_quick_prints_the_contract_fields() {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog-bench"))
        .args(["batch-validate", "--quick", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    for k in [
        "scenario",
        "variant",
        "mb_per_s",
        "baseline",
        "baseline_mb_per_s",
        "ratio",
    ] {
        assert!(v.get(k).is_some(), "missing {k} in {v}");
    }
    assert_eq!(v["scenario"], "batch-validate");
    assert!(v["ratio"].as_f64().unwrap() > 0.0);
}

/// Runs `scenario --quick --json` and returns its lines, each checked for the DESIGN.md §6
/// contract fields, its scenario name and a positive ratio (timing never decides a test).
fn quick_json(scenario: &str) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog-bench"))
        .args([scenario, "--quick", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty(), "{scenario} printed nothing");
    for v in &lines {
        for k in [
            "scenario",
            "variant",
            "mb_per_s",
            "baseline",
            "baseline_mb_per_s",
            "ratio",
        ] {
            assert!(v.get(k).is_some(), "missing {k} in {v}");
        }
        assert_eq!(v["scenario"], scenario);
        assert!(v["ratio"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["mb_per_s"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["baseline_mb_per_s"].as_f64().unwrap() > 0.0, "{v}");
    }
    lines
}

fn variants(lines: &[serde_json::Value]) -> Vec<&str> {
    lines
        .iter()
        .map(|v| v["variant"].as_str().unwrap())
        .collect()
}

#[test]
fn segment_append_quick_prints_the_contract_fields() {
    let lines = quick_json("segment-append");
    let names = variants(&lines);
    for v in ["pwrite", "pwrite-coalesced", "pwrite-durable"] {
        assert!(names.contains(&v), "no {v} variant in {names:?}");
    }
    for v in &lines {
        let name = v["variant"].as_str().unwrap();
        if name.ends_with("-durable") {
            assert_eq!(v["baseline"], "raw_pwrite+fdatasync");
            for k in ["p50_us", "p99_us", "baseline_p99_us"] {
                assert!(v[k].as_f64().unwrap() > 0.0, "{k} in {v}");
            }
        } else {
            assert_eq!(v["baseline"], "raw_pwrite");
        }
        if name.ends_with("-coalesced") {
            assert!(v["ratio_vs_raw_pwrite_1mib"].as_f64().unwrap() > 0.0, "{v}");
        }
    }
}

#[test]
fn index_lookup_quick_prints_the_contract_fields_and_ns_per_op() {
    let lines = quick_json("index-lookup");
    let names = variants(&lines);
    for v in ["offset_index", "find_batch-pwrite"] {
        assert!(names.contains(&v), "no {v} variant in {names:?}");
    }
    for v in &lines {
        assert!(v["ns_per_op"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["baseline_ns_per_op"].as_f64().unwrap() > 0.0, "{v}");
    }
}

#[test]
fn recovery_quick_prints_the_contract_fields() {
    let lines = quick_json("recovery");
    assert!(variants(&lines).contains(&"pwrite"), "{lines:?}");
    for v in &lines {
        assert_eq!(v["baseline"], "raw_read_crc32c");
        assert_eq!(v["cache"], "warm");
    }
}
