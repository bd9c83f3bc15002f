//! Scenario: transactions across a mirror between two `mirrorlog serve` processes, read by a real
//! client. On the source: plain records, a committed transaction, an aborted one, and one left
//! open. The mirror copies all of it byte for byte; then the topic fails over (stop) while the
//! third transaction is still open. On the destination a READ_COMMITTED consumer (confluent-kafka)
//! sees the plain and committed records only — not the aborted transaction and not a record of
//! the one the failover cut off, which the stop aborted — and its last stable offset equals the
//! high watermark (nothing left open). READ_UNCOMMITTED sees every data record.
//!
//! Needs `MIRRORLOG_PYTHON` (scripts/test.sh sets it); without it the test fails, unless
//! `MIRRORLOG_SKIP_CLIENT_TESTS` is set (then it says so and checks nothing).

mod common;

use common::mirrors::{assert_identical, create_mirror, ok, reader, wait_mirrored};
use common::{Serve, free_port, python, scenario};
use mirrorlog_broker::client::Client;
use mirrorlog_index::{ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use serde_json::Value;

const TOPIC: &str = "ledger";

/// `b` with 3 records `tag-0` … `tag-2`, encoded.
fn three_records(mut b: BatchBuilder, tag: &str) -> bytes::Bytes {
    for i in 0..3 {
        b.append(
            TimestampMs(1_700_000_000_000),
            None,
            Some(format!("{tag}-{i}").as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

fn plain(c: &mut Client, tag: &str) -> i64 {
    c.produce(TOPIC, 0, three_records(BatchBuilder::new(), tag), -1, None)
        .unwrap()
}

/// Produces one transactional batch of 3 records `tag-i`; returns the next sequence.
fn txn_batch(c: &mut Client, txn: &str, pid: i64, epoch: i16, seq: i32, tag: &str) -> i32 {
    let b = BatchBuilder::new()
        .producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(seq))
        .transactional(true);
    c.produce(TOPIC, 0, three_records(b, tag), -1, Some(txn))
        .unwrap();
    seq + 3
}

fn read(py: &std::path::Path, addr: &str, isolation: &str) -> (Vec<String>, Value) {
    let out = scenario(py, &["consume_values", addr, TOPIC, isolation]);
    let v: Value = serde_json::from_str(out.trim().lines().last().unwrap()).unwrap();
    let values = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_string())
        .collect();
    (values, v["ends"].clone())
}

#[test]
fn a_failover_with_a_transaction_open_leaves_read_committed_readers_only_whole_transactions() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let (s, d) = (src.addr.as_str(), dst.addr.as_str());
    let mut c = Client::connect(s).unwrap();
    c.create_topic(TOPIC, 1, &[]).unwrap();

    plain(&mut c, "plain-a");
    let txn = "ledger-writer";
    let (pid, epoch) = c.init_producer_id(Some(txn)).unwrap();
    let mut seq = 0;
    for (tag, commit) in [("committed", true), ("aborted", false)] {
        c.add_partitions_to_txn(txn, pid, epoch, TOPIC, &[0])
            .unwrap();
        seq = txn_batch(&mut c, txn, pid, epoch, seq, &format!("{tag}-1"));
        plain(&mut c, &format!("plain-during-{tag}"));
        seq = txn_batch(&mut c, txn, pid, epoch, seq, &format!("{tag}-2"));
        c.end_txn(txn, pid, epoch, commit).unwrap();
    }
    // Left open: the failover will cut it off.
    c.add_partitions_to_txn(txn, pid, epoch, TOPIC, &[0])
        .unwrap();
    txn_batch(&mut c, txn, pid, epoch, seq, "open");
    let end = plain(&mut c, "plain-b") + 3;

    create_mirror(d, "east", s, &["mirror.metadata.refresh.interval.ms=200"]);
    ok(d, &["--start", "--mirror", "east", "--topics", TOPIC]);
    wait_mirrored(d, "east", TOPIC, 0, end);
    assert_identical(&reader(s), &reader(d), TOPIC, 0, 0, end);
    // Before the failover the destination's readers are bounded by the same open transaction.
    let (before, _) = read(&py, d, "read_committed");
    assert!(
        !before.iter().any(|v| v.starts_with("plain-b")),
        "{before:?}"
    );

    ok(d, &["--stop", "--mirror", "east", "--topics", TOPIC]);
    let (committed, ends) = read(&py, d, "read_committed");
    let want: Vec<String> = [
        "plain-a",
        "committed-1",
        "plain-during-committed",
        "committed-2",
        "plain-during-aborted",
        "plain-b",
    ]
    .iter()
    .flat_map(|t| (0..3).map(move |i| format!("{t}-{i}")))
    .collect();
    assert_eq!(
        committed, want,
        "READ_COMMITTED on the destination after the failover"
    );
    assert_eq!(
        ends["read_committed"], ends["read_uncommitted"],
        "no transaction left open: LSO == HW"
    );
    let (all, _) = read(&py, d, "read_uncommitted");
    assert_eq!(all.len(), want.len() + 9, "{all:?}");
    assert!(all.iter().any(|v| v == "open-0"));
}
