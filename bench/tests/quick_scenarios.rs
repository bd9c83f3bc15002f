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
