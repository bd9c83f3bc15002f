//! Scenarios with a real Kafka client: aiokafka 0.14 (asyncio) against `mirrorlog serve`
//! (`tests/clients/aiokafka_scenarios.py`). scripts/test.sh installs it in the venv it points
//! `MIRRORLOG_PYTHON` at; without it these tests panic unless `MIRRORLOG_SKIP_CLIENT_TESTS` is
//! set. A scenario fails on a wrong answer and on any warning or error the client logs.

mod common;

use common::{Serve, free_port, python};
use std::path::Path;

/// Runs one phase of `tests/clients/aiokafka_scenarios.py`; returns its last stdout line.
fn run(py: &Path, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/aiokafka_scenarios.py");
    let out = std::process::Command::new(py)
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "aiokafka_scenarios.py {args:?} failed:\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout.trim().lines().last().unwrap_or_default().to_string()
}

#[test]
fn idempotent_codecs_admin_offsets_and_transactions() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let bs = broker.addr.clone();
    for phase in ["codecs", "admin", "offsets", "txn"] {
        run(&py, &[phase, &bs]);
    }
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

#[test]
fn a_consumer_group_rebalances_and_resumes_after_a_restart() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let out = run(&py, &["group_phase1", &broker.addr]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let committed = v["committed_total"].as_i64().unwrap();
    assert!(committed > 0 && committed < 400, "committed {committed}");
    assert_eq!(broker.stop(), Some(0));
    let broker = Serve::start(dir.path(), port);
    run(&py, &["group_phase2", &broker.addr, &committed.to_string()]);
}
