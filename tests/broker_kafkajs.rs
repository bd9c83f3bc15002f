//! Scenarios with a real Kafka client: kafkajs 2.2 (Node) against `mirrorlog serve`
//! (`tests/clients/kafkajs_scenarios.js`). scripts/test.sh installs kafkajs and its codecs with
//! npm and points `MIRRORLOG_NODE_MODULES` at them; without it these tests panic unless
//! `MIRRORLOG_SKIP_CLIENT_TESTS` is set. A scenario fails on a wrong answer and on any warning or
//! error kafkajs logs.

mod common;

use common::{group_resumes_after_a_restart, phases_against_one_broker};
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

#[test]
fn idempotent_codecs_admin_offsets_and_transactions() {
    let Some(modules) = node_modules() else {
        return;
    };
    let env = [("MIRRORLOG_NODE_MODULES", modules.as_path())];
    let run = |args: &[&str]| {
        common::client_script(Path::new("node"), "kafkajs_scenarios.js", args, &env)
    };
    phases_against_one_broker(run, &["codecs", "admin", "offsets", "txn"]);
}

#[test]
fn a_consumer_group_rebalances_and_resumes_after_a_restart() {
    let Some(modules) = node_modules() else {
        return;
    };
    let env = [("MIRRORLOG_NODE_MODULES", modules.as_path())];
    let run = |args: &[&str]| {
        common::client_script(Path::new("node"), "kafkajs_scenarios.js", args, &env)
    };
    group_resumes_after_a_restart(run, 399);
}
