//! Helpers for the mirror scenarios: run `mirrorlog mirrors`, poll `--describe --json`, produce
//! batches with the Rust client, and read a partition's batches over the Kafka protocol to
//! compare two brokers byte for byte.

use bytes::Bytes;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::source_client::{KafkaSource, KafkaSourceConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use mirrorlog_mirror::source::{FetchRequest, PartitionFetch, SourceCluster};
use mirrorlog_segment::{BatchBuilder, Batches, Compression};
use serde_json::Value;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One `mirrorlog mirrors` run: exit code, stdout, stderr.
pub fn cli(dest: &str, args: &[&str]) -> (i32, String, String) {
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

/// Creates mirror `name` on `dest` from `source` with `configs` (`KEY=VALUE` each).
pub fn create_mirror(dest: &str, name: &str, source: &str, configs: &[&str]) {
    let mut args = vec!["--create", "--mirror", name, "--source-bootstrap", source];
    for c in configs {
        args.extend(["--config", c]);
    }
    ok(dest, &args);
}

/// Borrows owned arguments.
pub fn args(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// Runs the CLI and expects success.
pub fn ok(dest: &str, args: &[&str]) -> String {
    let (code, out, err) = cli(dest, args);
    assert_eq!(code, 0, "mirrors {args:?} failed:\n{out}\n{err}");
    out
}

/// Runs the CLI and expects exit status 1 with Kafka error `name` on stderr.
pub fn fails_with(dest: &str, args: &[&str], name: &str) -> String {
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
pub fn partitions(dest: &str, mirror: &str) -> Vec<Value> {
    let out = ok(dest, &["--describe", "--mirror", mirror, "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["mirrors"][0]["partitions"].as_array().unwrap().clone()
}

pub fn find<'a>(parts: &'a [Value], topic: &str, p: i64) -> Option<&'a Value> {
    parts
        .iter()
        .find(|x| x["topic"] == topic && x["partition"].as_i64() == Some(p))
}

/// Polls `--describe` until `cond` holds (hang guard only).
pub fn wait_for(
    dest: &str,
    mirror: &str,
    what: &str,
    cond: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
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
pub fn wait_mirrored(dest: &str, mirror: &str, topic: &str, p: i64, end: i64) {
    wait_for(dest, mirror, &format!("{topic}-{p} at {end}"), |parts| {
        find(parts, topic, p).is_some_and(|x| {
            x["state"] == "MIRRORING" && x["destination_offset"].as_i64() == Some(end)
        })
    });
}

pub fn batch(records: usize, codec: Compression, tag: &str) -> Bytes {
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
pub fn produce(c: &mut Client, topic: &str, p: i32, batches: usize, tag: &str) -> i64 {
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
pub fn reader(addr: &str) -> Arc<KafkaSource> {
    KafkaSource::new(KafkaSourceConfig::new(vec![addr.to_string()])).unwrap()
}

/// The batches of `topic-p` in `[from, end)`, as the broker serves them, and the topic id.
pub fn batches(r: &KafkaSource, topic: &str, p: i32, from: i64, end: i64) -> (Vec<u8>, [u8; 16]) {
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
pub fn assert_identical(
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
