//! Scenario: an operator runs a mirror between two `mirrorlog serve` processes with nothing but
//! `mirrorlog mirrors`: create it, start topics by name and by pattern (and a later topic is
//! discovered), watch it catch up, pause and resume, fail a topic over (it becomes writable),
//! see a deleted source topic FAILED and recover it, restart the destination (the mirror and
//! its states come back and a MIRRORING partition resumes from its log end instead of copying
//! again), fail everything over and delete the mirror. Every error of the MM14 matrix the CLI can
//! reach is checked by exit status and Kafka error name. Destination batches are compared with
//! the source's, byte for byte at identical offsets, over the Kafka protocol.
//!
//! Waits poll `--describe --json` for a condition, with a generous hang guard; no timing
//! decides the outcome.

mod common;

use bytes::Bytes;
use common::{Serve, free_port};
use mirrorlog_broker::client::{Client, ClientError};
use mirrorlog_broker::mirror_rpc::{
    DescribeClusterMirrorsRequest, LastMirrorEpochLookup, MirrorRequest, MirrorResponse,
};
use mirrorlog_broker::source_client::{KafkaSource, KafkaSourceConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_mirror::source::{FetchRequest, OffsetSpec, PartitionFetch, SourceCluster};
use mirrorlog_segment::{BatchBuilder, Batches, Compression};
use serde_json::Value;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One `mirrorlog mirrors` run: exit code, stdout, stderr.
fn cli(dest: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .args(["mirrors", "--bootstrap-server", dest])
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run mirrorlog mirrors");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Borrows owned arguments.
fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Runs the CLI and expects success.
fn ok(dest: &str, args: &[&str]) -> String {
    let (code, out, err) = cli(dest, args);
    assert_eq!(code, 0, "mirrors {args:?} failed:\n{out}\n{err}");
    out
}

/// Runs the CLI and expects exit status 1 with Kafka error `name` on stderr.
fn fails_with(dest: &str, args: &[&str], name: &str) -> String {
    let (code, out, err) = cli(dest, args);
    assert_eq!(
        code, 1,
        "mirrors {args:?} should fail with {name}:\n{out}\n{err}"
    );
    assert!(
        err.contains(&format!("error: {name}: ")),
        "mirrors {args:?}: expected {name}, got:\n{err}"
    );
    err
}

/// The mirror's partitions from `--describe --json`: (topic, partition) → the JSON object.
fn partitions(dest: &str, mirror: &str) -> Vec<Value> {
    let out = ok(dest, &["--describe", "--mirror", mirror, "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["mirrors"][0]["partitions"].as_array().unwrap().clone()
}

fn find<'a>(parts: &'a [Value], topic: &str, p: i64) -> Option<&'a Value> {
    parts
        .iter()
        .find(|x| x["topic"] == topic && x["partition"].as_i64() == Some(p))
}

/// Polls `--describe` until `cond` holds (hang guard only).
fn wait_for(dest: &str, mirror: &str, what: &str, cond: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let parts = partitions(dest, mirror);
        if cond(&parts) {
            return parts;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last describe: {parts:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until `topic-p` is MIRRORING with its destination log end at `end`.
fn wait_mirrored(dest: &str, mirror: &str, topic: &str, p: i64, end: i64) {
    wait_for(dest, mirror, &format!("{topic}-{p} at {end}"), |parts| {
        find(parts, topic, p).is_some_and(|x| {
            x["state"] == "MIRRORING" && x["destination_offset"].as_i64() == Some(end)
        })
    });
}

fn batch(records: usize, codec: Compression, tag: &str) -> Bytes {
    let mut b = BatchBuilder::new().compression(codec);
    for i in 0..records {
        let value = format!("{tag}-{i}-{}", "v".repeat(100));
        b.append(
            TimestampMs(1_700_000_000_000 + i as i64),
            Some(format!("k{i}").as_bytes()),
            Some(value.as_bytes()),
            &[],
        );
    }
    b.build().into_bytes()
}

/// Produces `batches` batches of 10 records; returns the log end after them.
fn produce(c: &mut Client, topic: &str, p: i32, batches: usize, tag: &str) -> i64 {
    let mut end = 0;
    for i in 0..batches {
        let codec = if i % 2 == 0 {
            Compression::None
        } else {
            Compression::Lz4
        };
        end = c
            .produce(topic, p, batch(10, codec, &format!("{tag}{i}")), -1, None)
            .unwrap()
            + 10;
    }
    end
}

/// A Kafka-protocol reader of one broker (the mirror's own wire client).
fn reader(addr: &str) -> Arc<KafkaSource> {
    KafkaSource::new(KafkaSourceConfig::new(vec![addr.to_string()])).unwrap()
}

/// The batches of `topic-p` in `[from, end)`, as the broker serves them, and the topic id.
fn batches(r: &KafkaSource, topic: &str, p: i32, from: i64, end: i64) -> (Vec<u8>, [u8; 16]) {
    let md = r.metadata(Some(&[topic.to_string()])).unwrap();
    let t = &md.topics[0];
    let leader = t
        .partitions
        .iter()
        .find(|x| x.partition == p)
        .unwrap()
        .leader;
    let mut out = vec![];
    let mut at = from;
    while at < end {
        let req = FetchRequest {
            partitions: vec![PartitionFetch {
                topic: topic.into(),
                topic_id: t.id,
                partition: p,
                fetch_offset: Offset(at),
                last_fetched_epoch: LeaderEpoch::NONE,
                current_leader_epoch: LeaderEpoch::NONE,
                max_bytes: 1 << 20,
            }],
            max_wait_ms: 0,
            min_bytes: 1,
            max_bytes: 1 << 20,
        };
        let resp = r.fetch(leader, &req).unwrap();
        let d = &resp.partitions[0];
        assert_eq!(d.error, 0, "fetch {topic}-{p} at {at}");
        let before = at;
        for b in Batches::new(d.records.clone()) {
            let b = b.unwrap();
            if b.base_offset().get() >= end {
                return (out, t.id);
            }
            out.extend_from_slice(b.as_bytes());
            at = b.next_offset().get();
        }
        assert!(at > before, "no progress reading {topic}-{p} at {at}");
    }
    (out, t.id)
}

/// Source and destination hold the same bytes for `topic-p` in `[from, end)`, under the same
/// topic id.
fn assert_identical(
    src: &KafkaSource,
    dst: &KafkaSource,
    topic: &str,
    p: i32,
    from: i64,
    end: i64,
) {
    let (s, sid) = batches(src, topic, p, from, end);
    let (d, did) = batches(dst, topic, p, from, end);
    assert_eq!(
        sid, did,
        "{topic}: the destination topic has the source's topic id"
    );
    assert!(!s.is_empty());
    assert!(
        s == d,
        "{topic}-{p}: destination bytes differ in [{from}, {end})"
    );
}

#[test]
fn an_operator_runs_a_mirror_end_to_end_with_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst_dir = dir.path().join("dst");
    let dst_port = free_port();
    let mut dst = Serve::start(&dst_dir, dst_port);
    let d = dst.addr.clone();
    let d = d.as_str();

    let mut sc = Client::connect(&src.addr).unwrap();
    sc.create_topic("orders", 2, &[]).unwrap();
    sc.create_topic("payments", 1, &[("retention.ms", "86400000")])
        .unwrap();
    let mut orders_end = [
        produce(&mut sc, "orders", 0, 6, "a"),
        produce(&mut sc, "orders", 1, 4, "b"),
    ];
    let mut payments_end = produce(&mut sc, "payments", 0, 5, "p");

    // Create, and the create errors.
    let out = ok(d, &["--list"]);
    assert_eq!(out.lines().count(), 1, "only the header: {out}");
    let create = |name: &str, config: &str| -> Vec<String> {
        let mut v: Vec<String> = [
            "--create",
            "--mirror",
            name,
            "--source-bootstrap",
            &src.addr,
        ]
        .map(String::from)
        .to_vec();
        if !config.is_empty() {
            v.extend(["--config".to_string(), config.to_string()]);
        }
        v
    };
    ok(
        d,
        &args(&create("east", "mirror.metadata.refresh.interval.ms=200")),
    );
    fails_with(
        d,
        &args(&create("east", "")),
        "CLUSTER_MIRROR_ALREADY_EXISTS",
    );
    let bad = create("west", "mirror.num.replica.fetchers=0");
    let err = fails_with(d, &args(&bad), "INVALID_CONFIG");
    assert!(
        err.contains("mirror.num.replica.fetchers 0 is outside 1..=64"),
        "{err}"
    );
    fails_with(d, &args(&create("west", "colour=blue")), "INVALID_CONFIG");

    // Start by name and by pattern, with the start errors.
    let out = ok(d, &["--start", "--mirror", "east", "--topics", "orders"]);
    assert!(out.contains("Topic orders started"), "{out}");
    ok(d, &["--start", "--mirror", "east", "--topics", "orders"]);
    let start_errors: [(&str, &str, &str, &str); 4] = [
        ("nope", "--topics", "orders", "UNKNOWN_CLUSTER_MIRROR"),
        ("east", "--topics", "missing", "UNKNOWN_TOPIC_OR_PARTITION"),
        ("east", "--topics", "__consumer_offsets", "INVALID_REQUEST"),
        ("east", "--pattern", "(bad", "INVALID_REGULAR_EXPRESSION"),
    ];
    for (mirror, how, what, error) in start_errors {
        fails_with(d, &["--start", "--mirror", mirror, how, what], error);
    }
    let out = ok(d, &["--start", "--mirror", "east", "--pattern", "pay.*"]);
    assert!(out.contains("Topic payments started"), "{out}");
    wait_mirrored(d, "east", "orders", 0, orders_end[0]);
    wait_mirrored(d, "east", "orders", 1, orders_end[1]);
    wait_mirrored(d, "east", "payments", 0, payments_end);

    // A topic created later on the source is discovered by the include pattern.
    sc.create_topic("payouts", 1, &[]).unwrap();
    let payouts_end = produce(&mut sc, "payouts", 0, 2, "q");
    wait_mirrored(d, "east", "payouts", 0, payouts_end);
    let listed: Value = serde_json::from_str(&ok(d, &["--list", "--json"])).unwrap();
    let east = &listed["mirrors"][0];
    assert_eq!(east["mirror"], "east");
    assert_eq!(east["source_bootstrap"], src.addr.as_str());
    assert!(east["source_cluster_id"].is_string());
    assert_eq!(
        east["topics"],
        serde_json::json!(["orders", "payments", "payouts"])
    );

    // Topic configs followed the source.
    let dst_reader = reader(d);
    let src_reader = reader(&src.addr);
    let cfgs = dst_reader.topic_configs("payments").unwrap();
    assert!(
        cfgs.contains(&("retention.ms".to_string(), "86400000".to_string())),
        "{cfgs:?}"
    );

    // Pause and resume, with their errors.
    let out = ok(d, &["--pause", "--mirror", "east", "--topics", "orders"]);
    assert!(out.contains("Topic orders paused"), "{out}");
    ok(d, &["--pause", "--mirror", "east", "--topics", "orders"]);
    fails_with(
        d,
        &["--stop", "--mirror", "east", "--topics", "orders"],
        "MIRROR_TOPIC_ALREADY_PAUSED",
    );
    orders_end[0] = produce(&mut sc, "orders", 0, 3, "c");
    let parts = partitions(d, "east");
    assert_eq!(find(&parts, "orders", 0).unwrap()["state"], "PAUSED");
    ok(d, &["--resume", "--mirror", "east", "--topics", "orders"]);
    ok(d, &["--resume", "--mirror", "east", "--topics", "orders"]);
    wait_mirrored(d, "east", "orders", 0, orders_end[0]);

    for (p, end) in orders_end.iter().enumerate() {
        assert_identical(&src_reader, &dst_reader, "orders", p as i32, 0, *end);
    }
    assert_identical(&src_reader, &dst_reader, "payments", 0, 0, payments_end);

    // Read-only until stopped; stop = failover makes it writable.
    let mut dc = Client::connect(d).unwrap();
    match dc.produce("orders", 0, batch(1, Compression::None, "local"), -1, None) {
        Err(ClientError::Kafka { code: 134, .. }) => {}
        other => panic!("produce to a mirror topic must be READ_ONLY_TOPIC (134): {other:?}"),
    }
    fails_with(
        d,
        &["--delete", "--mirror", "east"],
        "CLUSTER_MIRROR_NOT_EMPTY",
    );
    let out = ok(d, &["--stop", "--mirror", "east", "--topics", "orders"]);
    assert!(out.contains("Topic orders stopped"), "{out}");
    let parts = partitions(d, "east");
    for (p, end) in orders_end.iter().enumerate() {
        let x = find(&parts, "orders", p as i64).unwrap();
        assert_eq!(x["state"], "STOPPED");
        assert!(x["last_mirror_epoch"].as_i64().unwrap() >= 0, "{x}");
        assert_eq!(x["last_mirror_offset"].as_i64(), Some(*end), "{x}");
    }
    // After the ABORT markers and the MIRROR_PID_RESET batch, local writes go on.
    let local = dc
        .produce("orders", 0, batch(1, Compression::None, "local"), -1, None)
        .unwrap();
    assert!(local > orders_end[0], "{local}");

    // Failback's question (spec §8): the old source, now the new destination, asks for the
    // last mirror epoch of its topic by topic id and its own cluster id.
    let orders_id = src_reader
        .metadata(Some(&["orders".to_string()]))
        .unwrap()
        .topics[0]
        .id;
    let payments_id = src_reader
        .metadata(Some(&["payments".to_string()]))
        .unwrap()
        .topics[0]
        .id;
    let lookup = |cluster: &str| {
        let req = MirrorRequest::DescribeClusterMirrors(DescribeClusterMirrorsRequest {
            mirror_names: Some(vec![]),
            cluster_id: Some(cluster.to_string()),
            last_mirror_epoch_lookups: vec![
                LastMirrorEpochLookup {
                    topic_id: orders_id,
                    partitions: vec![0, 1],
                },
                LastMirrorEpochLookup {
                    topic_id: payments_id,
                    partitions: vec![0],
                },
            ],
            ..Default::default()
        });
        match Client::connect(d).unwrap().mirror_call(&req).unwrap() {
            MirrorResponse::DescribeClusterMirrors(r) => r.last_mirror_epochs,
            other => panic!("{other:?}"),
        }
    };
    let source_cluster = east["source_cluster_id"].as_str().unwrap().to_string();
    let answer = lookup(&source_cluster);
    for (p, end) in orders_end.iter().enumerate() {
        let a = &answer[0].partitions[p];
        assert_eq!(a.error_code, 0, "{a:?}");
        assert!(a.last_mirror_epoch >= 0);
        assert_eq!(a.last_mirror_offset, *end);
    }
    assert_eq!(
        answer[1].partitions[0].error_code, 146,
        "payments is still mirrored: MIRROR_TOPIC_NOT_STOPPED"
    );
    let answer = lookup("another-cluster");
    assert_eq!(
        answer[0].partitions[0].error_code, 3,
        "no mirror from that cluster"
    );

    // The matrix on a stopped topic, and on topics no mirror holds.
    let matrix: [(&str, &str, &str, &str); 6] = [
        ("--stop", "east", "orders", "TOPIC_NOT_IN_CLUSTER_MIRROR"),
        ("--pause", "east", "orders", "MIRROR_TOPIC_BEING_STOPPED"),
        ("--resume", "east", "orders", "MIRROR_TOPIC_NOT_PAUSED"),
        ("--recover", "east", "orders", "INVALID_REQUEST"),
        ("--stop", "east", "elsewhere", "UNKNOWN_CLUSTER_MIRROR"),
        ("--resume", "nope", "orders", "UNKNOWN_CLUSTER_MIRROR"),
    ];
    for (verb, mirror, topic, error) in matrix {
        fails_with(d, &[verb, "--mirror", mirror, "--topics", topic], error);
    }

    // A deleted source topic fails its partition (seen missing on two syncs); recover retries.
    sc.delete_topic("payouts").unwrap();
    let parts = wait_for(d, "east", "payouts FAILED", |parts| {
        find(parts, "payouts", 0).is_some_and(|x| x["state"] == "FAILED")
    });
    let failed = find(&parts, "payouts", 0).unwrap();
    assert!(
        failed["error_message"]
            .as_str()
            .unwrap()
            .contains("was deleted"),
        "{failed}"
    );
    assert_eq!(
        failed["retry_attempt"], -1,
        "a deleted topic is not retried by itself"
    );
    let out = ok(d, &["--describe", "--mirror", "east", "--failed"]);
    let rows: Vec<&str> = out.lines().skip(2).collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert!(
        rows[0].starts_with("payouts") && rows[0].contains("FAILED"),
        "{out}"
    );
    let out = ok(d, &["--recover", "--mirror", "east", "--all-topics"]);
    assert!(out.contains("Topic payouts recovered"), "{out}");

    // Restart the destination while the source moves on: its log start passes what the
    // destination holds and more records arrive. A partition copied again would be truncated
    // and restarted at the source's log start (a new segment at offset 20, the old segment file
    // gone); one that resumes from its log end keeps its first segment, byte for byte, and only
    // moves its log start up to follow the source.
    let before_restart = batches(&dst_reader, "payments", 0, 0, payments_end).0;
    assert_eq!(dst.stop(), Some(0));
    let first_segment = dst_dir.join("payments-0").join("00000000000000000000.log");
    assert!(
        std::fs::read(&first_segment)
            .unwrap()
            .starts_with(&before_restart)
    );
    let source_log_start = sc.delete_records("payments", 0, 20).unwrap();
    assert_eq!(source_log_start, 20);
    payments_end = produce(&mut sc, "payments", 0, 3, "r");
    let dst = Serve::start(&dst_dir, dst_port);
    let d = dst.addr.as_str();
    let parts = partitions(d, "east");
    assert_eq!(
        find(&parts, "orders", 0).unwrap()["state"],
        "STOPPED",
        "{parts:?}"
    );
    assert_eq!(
        find(&parts, "orders", 1).unwrap()["state"],
        "STOPPED",
        "{parts:?}"
    );
    wait_mirrored(d, "east", "payments", 0, payments_end);
    let dst_reader = reader(d);
    assert!(
        std::fs::read(&first_segment)
            .unwrap()
            .starts_with(&before_restart),
        "the restarted mirror copied payments again"
    );
    let (start, _) = dst_reader
        .list_offset("payments", 0, OffsetSpec::Earliest)
        .unwrap();
    assert_eq!(
        start,
        Offset(20),
        "the destination's log start follows the source's"
    );
    assert_identical(&src_reader, &dst_reader, "payments", 0, 20, payments_end);

    // Mass failover, then the mirror can go.
    let out = ok(d, &["--stop", "--mirror", "east", "--all-topics"]);
    assert!(out.contains("Topic payments stopped"), "{out}");
    assert!(
        !out.contains("Topic orders"),
        "already stopped: skipped: {out}"
    );
    ok(d, &["--delete", "--mirror", "east"]);
    let out = ok(d, &["--list"]);
    assert!(!out.contains("east"), "{out}");
    fails_with(
        d,
        &["--describe", "--mirror", "east"],
        "UNKNOWN_CLUSTER_MIRROR",
    );
    drop(src);
}
