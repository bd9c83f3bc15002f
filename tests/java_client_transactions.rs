//! Kafka's own Java transactional producer (kafka-clients 4.3.0) against `mirrorlog serve`:
//! commits and aborts read by read_committed and read_uncommitted consumers, the LSO an open
//! transaction holds (endOffsets), transactions of two producers interleaved with a plain one in
//! three codecs and read through tiny fetches, consume-transform-produce with
//! sendOffsetsToTransaction, fencing by a second producer, offsets sent with the group metadata
//! of a stale generation or of a member that left (KIP-447: refused), a pending offset commit,
//! and the coordinator aborting a transaction past its timeout. Scenario code:
//! `tests/kafka-java/ProducerConsumerScenarios.java`.

mod common;

use common::java::JavaClient;
use common::{Serve, free_port};

fn run_clean(scenarios: &str, oks: &[&str]) {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&[scenarios, &broker.addr]);
    for ok in oks {
        assert!(out.lines().any(|l| l.starts_with(ok)), "no {ok:?}:\n{out}");
    }
    assert!(
        out.lines().any(|l| l == "client log: 0 warnings, 0 errors"),
        "the client logged problems:\n{out}"
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

#[test]
fn commits_aborts_and_the_lso_seen_by_both_isolation_levels() {
    run_clean(
        "txn+interleaved",
        &["ok txn 18 committed of 30", "ok interleaved 65 of 90"],
    );
}

#[test]
fn consume_transform_produce_fencing_zombie_offsets_and_pending_offsets() {
    run_clean(
        "ctp+fencing+stable+zombie",
        &["ok ctp 60", "ok fencing", "ok stable", "ok zombie"],
    );
}

/// Waits for the coordinator's abort of timed-out transactions, which runs every 10 s
/// (the default `transaction.abort.timed.out.transaction.cleanup.interval.ms`).
#[test]
fn a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() {
    run_clean("txn_timeout", &["ok txn_timeout"]);
}
