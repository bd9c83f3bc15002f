//! Scenarios with a real Kafka client: kafkajs 2.2 (Node) against `mirrorlog serve`
//! (`tests/clients/kafkajs_scenarios.js`). scripts/test.sh installs kafkajs and its codecs with
//! npm and points `MIRRORLOG_NODE_MODULES` at them; without it these tests panic unless
//! `MIRRORLOG_SKIP_CLIENT_TESTS` is set. A scenario fails on a wrong answer and on any warning or
//! error kafkajs logs.

mod common;

use common::{Serve, free_port};
use std::path::{Path, PathBuf};

/// The `node_modules` directory with kafkajs that scripts/test.sh prepared.
///
/// # Panics
/// `MIRRORLOG_NODE_MODULES` is unset and `MIRRORLOG_SKIP_CLIENT_TESTS` is not: a client test
/// must not pass without running.
fn node_modules() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MIRRORLOG_NODE_MODULES") {
        return Some(PathBuf::from(p));
    }
    assert!(
        std::env::var_os("MIRRORLOG_SKIP_CLIENT_TESTS").is_some(),
        "MIRRORLOG_NODE_MODULES is unset: run scripts/test.sh (it installs kafkajs with npm and \
         sets it), or set MIRRORLOG_SKIP_CLIENT_TESTS=1 to skip the kafkajs tests"
    );
    eprintln!("skipped (MIRRORLOG_SKIP_CLIENT_TESTS): no MIRRORLOG_NODE_MODULES");
    None
}

/// Runs one phase of `tests/clients/kafkajs_scenarios.js`; returns its last stdout line.
fn run(modules: &Path, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/kafkajs_scenarios.js");
    let out = std::process::Command::new("node")
        .arg(script)
        .args(args)
        .env("MIRRORLOG_NODE_MODULES", modules)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "kafkajs_scenarios.js {args:?} failed:\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout.trim().lines().last().unwrap_or_default().to_string()
}

#[test]
fn idempotent_codecs_admin_offsets_and_transactions() {
    let Some(modules) = node_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let bs = broker.addr.clone();
    for phase in ["codecs", "admin", "offsets", "txn"] {
        run(&modules, &[phase, &bs]);
    }
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

#[test]
fn a_consumer_group_rebalances_and_resumes_after_a_restart() {
    let Some(modules) = node_modules() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let out = run(&modules, &["group_phase1", &broker.addr]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let committed = v["committed_total"].as_i64().unwrap();
    assert!(committed > 0 && committed < 400, "committed {committed}");
    assert_eq!(broker.stop(), Some(0));
    let broker = Serve::start(dir.path(), port);
    run(
        &modules,
        &["group_phase2", &broker.addr, &committed.to_string()],
    );
}
