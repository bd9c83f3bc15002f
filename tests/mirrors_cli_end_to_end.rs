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

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::{Client, ClientError};
use mirrorlog_broker::mirror_rpc::{
    DescribeClusterMirrorsRequest, LastMirrorEpochLookup, MirrorRequest, MirrorResponse,
    ReadMirrorStatesRequest, TopicPartitions,
};
use mirrorlog_index::Offset;
use mirrorlog_mirror::source::{OffsetSpec, SourceCluster};
use mirrorlog_segment::Compression;
use serde_json::Value;

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
    // Every setting is described with its effective value, the source client's left at their
    // defaults too, as Kafka's DescribeConfigs lists defaults.
    let described: Value =
        serde_json::from_str(&ok(d, &["--describe", "--mirror", "east", "--json"])).unwrap();
    let configs = &described["mirrors"][0]["configs"];
    for (key, value) in [
        ("mirror.metadata.refresh.interval.ms", "200"),
        ("mirror.num.replica.fetchers", "1"),
        ("bootstrap.servers", src.addr.as_str()),
        ("client.id", "mirrorlog-mirror"),
        ("request.timeout.ms", "30000"),
        ("socket.connection.setup.timeout.ms", "10000"),
        ("retry.backoff.ms", "100"),
        ("retry.backoff.max.ms", "1000"),
    ] {
        assert_eq!(configs[key], value, "{key} in {configs}");
    }
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

    // ReadMirrorStates: the coordinator's view, state bytes and all.
    let req = MirrorRequest::ReadMirrorStates(ReadMirrorStatesRequest {
        mirror_name: "east".into(),
        topics: vec![TopicPartitions {
            name: "orders".into(),
            partitions: vec![0, 9],
        }],
    });
    let MirrorResponse::ReadMirrorStates(states) =
        Client::connect(d).unwrap().mirror_call(&req).unwrap()
    else {
        panic!("not a ReadMirrorStates answer");
    };
    let parts = &states.topics[0].partitions;
    assert_eq!(
        (parts[0].error_code, parts[0].state),
        (0, 7),
        "STOPPED is 7"
    );
    assert!(parts[0].last_mirror_epoch >= 0 && parts[0].state_epoch > 0);
    assert_eq!(parts[1].error_code, 3, "no partition 9");

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
