//! Kafka's own Java KafkaProducer/KafkaConsumer (kafka-clients 4.3.0, the reference client)
//! against `mirrorlog serve`: idempotent produce in every codec read back byte for byte,
//! acks=0/1, offset lookups, seeks, out-of-range positions and DeleteRecords, LogAppendTime and
//! timestamp bounds, a record larger than the fetch limits, metadata and pattern subscription,
//! a fetch session through reassignments and pause/resume, an idempotent producer after
//! DeleteRecords removed all it wrote, and what a group consumer does with each
//! `group.protocol`. The scenarios are in
//! `tests/kafka-java/ProducerConsumerScenarios.java`; each throws on a failed check, and the
//! client's own WARN/ERROR log lines are counted.

mod common;

use common::java::JavaClient;
use common::{Serve, free_port};

/// The client's own WARN and ERROR line counts, from the program's last line.
fn client_log(out: &str) -> (u32, u32) {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix("client log: "))
        .unwrap_or_else(|| panic!("no client log line:\n{out}"));
    let n: Vec<u32> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
    (n[0], n[1])
}

#[test]
fn an_idempotent_producer_in_every_codec_reads_back_byte_identical() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["codecs", &broker.addr]);
    assert!(out.contains("ok codecs"), "{out}");
    assert_eq!(
        client_log(&out),
        (0, 0),
        "the client logged problems:\n{out}"
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
    // On disk: each topic's batches in its codec, from one idempotent producer.
    for line in out.lines().filter_map(|l| l.strip_prefix("codec ")) {
        let f: Vec<&str> = line.split(' ').collect();
        let (codec, topic) = (f[0], f[1]);
        let dump = std::process::Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
            .args(["dump", "--json"])
            .arg(dir.path().join(format!("{topic}-0")))
            .output()
            .unwrap();
        assert!(dump.status.success(), "{dump:?}");
        let batches: Vec<serde_json::Value> = String::from_utf8(dump.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["type"] == "batch")
            .collect();
        assert!(batches.len() > 1, "{codec}: {} batches", batches.len());
        let records: i64 = batches
            .iter()
            .map(|b| b["record_count"].as_i64().unwrap())
            .sum();
        assert_eq!(records, 300, "{codec}");
        for b in &batches {
            assert_eq!(b["compression"], codec, "{b}");
            assert!(b["producer_id"].as_i64().unwrap() >= 0, "idempotent: {b}");
            assert_eq!(b["transactional"], false, "{b}");
        }
    }
}

#[test]
fn acks_0_and_1_offset_lookups_seeks_timestamps_large_records_metadata_and_fetch_sessions() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&[
        "offsets+validation+large+metadata+session+idem_delete",
        &broker.addr,
    ]);
    for ok in [
        "ok offsets",
        "ok validation",
        "ok large",
        "ok metadata",
        "ok session",
        "ok idem_delete",
    ] {
        assert!(out.lines().any(|l| l == ok), "no {ok:?}:\n{out}");
    }
    assert_eq!(
        client_log(&out),
        (0, 0),
        "the client logged problems:\n{out}"
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

/// 4.3's default `group.protocol` is still `classic`, which works; `consumer` (KIP-848) needs
/// ConsumerGroupHeartbeat, which this broker does not have: the client must fail with its
/// clear message, not hang.
#[test]
fn the_default_group_protocol_works_and_the_consumer_protocol_fails_clearly() {
    let Some(java) = JavaClient::compile("ProducerConsumerScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    for mode in ["default", "classic"] {
        let out = java.run(&["protocol", &broker.addr, mode]);
        assert!(
            out.contains(&format!("ok protocol {mode} consumed 1")),
            "{out}"
        );
        assert_eq!(
            client_log(&out),
            (0, 0),
            "the client logged problems:\n{out}"
        );
    }
    let out = java.run(&["protocol", &broker.addr, "consumer"]);
    assert!(
        out.contains(
            "error protocol consumer org.apache.kafka.common.errors.UnsupportedVersionException: \
             The cluster does not support the new CONSUMER group protocol"
        ),
        "{out}"
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
