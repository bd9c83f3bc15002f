//! Soak: mirroring under load with periodic crashes on both sides, then a failover with a
//! consumer group moving from the source to the destination.
//!
//! Two `mirrorlog serve` processes; a mirror created with `mirrorlog mirrors`. A producer writes
//! acks=all batches to the source throughout (reconnecting when it dies; a produce that fails is
//! counted, not retried), a confluent-kafka consumer group reads and commits on the source, and
//! every 1–3 s (seeded) the source or the destination is SIGKILLed and restarted. At the end the
//! mirror drains, the group's last offsets are synced, the topic fails over, and the same group
//! finishes reading on the destination. The report (stderr, one JSON line) counts records
//! produced (acknowledged), on the source, mirrored, consumed in each phase, lost and duplicated.
//!
//! Verdict: every acknowledged record is on the destination once, at its source offset with its
//! bytes; none is lost to the consumer (read in one phase or the other); no record is read twice
//! within a phase; and a record read in both phases lies in the documented at-least-once window:
//! between the offset the destination group resumed from and where the source consumer was —
//! what it read after the mirror's last group-offset sync (`mirror.metadata.refresh.interval.ms`).
//!
//! `MIRRORLOG_SOAK_SECS` (default 20; the README's soak uses 600) sets the crash phase's length,
//! `MIRRORLOG_SOAK_SEED` replays a crash schedule. Needs `MIRRORLOG_PYTHON` (scripts/test.sh
//! sets it); without it the test fails, unless `MIRRORLOG_SKIP_CLIENT_TESTS` is set (then it
//! says so and checks nothing).

mod common;

use common::mirrors::{batches, create_mirror, find, ok, partitions, reader};
use common::{Rng, Serve, env_u64, free_port, python, reconnecting, seed_from_env};
use mirrorlog_broker::client::Client;
use mirrorlog_index::TimestampMs;
use mirrorlog_mirror::source::{OffsetSpec, SourceCluster};
use mirrorlog_segment::{BatchBuilder, Batches, Compression};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const TOPIC: &str = "soak";
const PARTITIONS: i32 = 3;
const GROUP: &str = "soak-group";
const RECORDS_PER_BATCH: usize = 10;
const REFRESH_MS: u64 = 500;

fn value(n: u64, i: usize) -> String {
    format!("b{n:08}-r{i}-{}", "s".repeat(64 + (n % 200) as usize))
}

fn batch(n: u64) -> bytes::Bytes {
    let codec = if n.is_multiple_of(3) {
        Compression::Zstd
    } else {
        Compression::None
    };
    let mut b = BatchBuilder::new().compression(codec);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for i in 0..RECORDS_PER_BATCH {
        b.append(TimestampMs(now), None, Some(value(n, i).as_bytes()), &[]);
    }
    b.build().into_bytes()
}

/// What the producer thread saw: acknowledged (batch, partition, base offset) and failed calls.
#[derive(Default)]
struct Produced {
    acked: Vec<(u64, i32, i64)>,
    failed: u64,
}

fn produce_until(addr: String, stop: Arc<AtomicBool>) -> Produced {
    let mut out = Produced::default();
    let mut client: Option<Client> = None;
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let Some(c) = reconnecting(&mut client, &addr) else {
            continue;
        };
        let p = (n % PARTITIONS as u64) as i32;
        match c.produce(TOPIC, p, batch(n), -1, None) {
            Ok(base) => out.acked.push((n, p, base)),
            Err(_) => {
                out.failed += 1;
                client = None;
            }
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(4));
    }
    out
}

/// (partition, offset) → value of every record of the destination's partitions.
fn destination_records(addr: &str) -> BTreeMap<(i32, i64), String> {
    let r = reader(addr);
    let mut out = BTreeMap::new();
    for p in 0..PARTITIONS {
        let (end, _) = r.list_offset(TOPIC, p, OffsetSpec::Latest).unwrap();
        let (bytes, _) = batches(&r, TOPIC, p, 0, end.get());
        for b in Batches::new(bytes.into()) {
            let b = b.unwrap();
            if b.is_control() {
                continue;
            }
            for (i, rec) in b.records().unwrap().enumerate() {
                let rec = rec.unwrap();
                let v = String::from_utf8(rec.value.unwrap().to_vec()).unwrap();
                out.insert((p, b.base_offset().get() + i as i64), v);
            }
        }
    }
    out
}

fn run_py(py: &Path, args: &[&str]) -> std::process::Child {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/soak.py");
    Command::new(py)
        .arg(script)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run soak.py")
}

fn finish(child: std::process::Child, what: &str) {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "soak.py {what} failed: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// [partition, offset, value] triples of a soak.py output file.
fn consumed(file: &Path) -> Vec<(i32, i64, String)> {
    let v: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    v["consumed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t[0].as_i64().unwrap() as i32,
                t[1].as_i64().unwrap(),
                t[2].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn mirroring_under_load_with_crashes_on_both_sides_loses_nothing() {
    let Some(py) = python() else { return };
    let secs = env_u64("MIRRORLOG_SOAK_SECS").unwrap_or(20);
    let seed = seed_from_env("MIRRORLOG_SOAK_SEED");
    eprintln!("soak: {secs} s of crashes, MIRRORLOG_SOAK_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let (src_dir, dst_dir) = (dir.path().join("src"), dir.path().join("dst"));
    let (src_port, dst_port) = (free_port(), free_port());
    let mut src = Serve::start_logging(&src_dir, src_port, "error");
    let mut dst = Serve::start_logging(&dst_dir, dst_port, "error");
    let (s, d) = (src.addr.clone(), dst.addr.clone());
    Client::connect(&s)
        .unwrap()
        .create_topic(TOPIC, PARTITIONS, &[])
        .unwrap();
    create_mirror(
        &d,
        "soak",
        &s,
        &[
            &format!("mirror.metadata.refresh.interval.ms={REFRESH_MS}"),
            "mirror.failed.retry.initial.backoff.ms=100",
            "mirror.failed.retry.max.backoff.ms=1000",
        ],
    );
    ok(&d, &["--start", "--mirror", "soak", "--topics", TOPIC]);

    let stop = Arc::new(AtomicBool::new(false));
    let producer = {
        let (addr, stop) = (s.clone(), stop.clone());
        std::thread::spawn(move || produce_until(addr, stop))
    };
    let src_out = dir.path().join("source-consumer.json");
    let stopfile = dir.path().join("stop-consumer");
    let source_consumer = run_py(
        &py,
        &[
            "consume_source",
            &s,
            TOPIC,
            GROUP,
            src_out.to_str().unwrap(),
            stopfile.to_str().unwrap(),
        ],
    );

    // Crashes on both sides.
    let (mut src_kills, mut dst_kills) = (0, 0);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(secs) {
        std::thread::sleep(rng.between_ms(1000, 3000));
        let down = rng.between_ms(0, 500);
        if rng.next().is_multiple_of(2) {
            src.kill();
            std::thread::sleep(down);
            src = Serve::start_logging(&src_dir, src_port, "error");
            src_kills += 1;
        } else {
            dst.kill();
            std::thread::sleep(down);
            dst = Serve::start_logging(&dst_dir, dst_port, "error");
            dst_kills += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    let produced = producer.join().unwrap();
    std::fs::write(&stopfile, b"").unwrap();
    finish(source_consumer, "consume_source");
    assert!(!produced.acked.is_empty(), "nothing was acknowledged");

    // Drain: every partition MIRRORING at the source's end, twice in a row a refresh apart.
    let source_ends: HashMap<i32, i64> = {
        let r = reader(&s);
        (0..PARTITIONS)
            .map(|p| {
                let (end, _) = r.list_offset(TOPIC, p, OffsetSpec::Latest).unwrap();
                (p, end.get())
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let parts = partitions(&d, "soak");
        let drained = (0..PARTITIONS).all(|p| {
            find(&parts, TOPIC, p as i64).is_some_and(|x| {
                x["state"] == "MIRRORING"
                    && x["destination_offset"].as_i64() == Some(source_ends[&p])
            })
        });
        if drained {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the mirror did not drain: {parts:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Two refreshes: the group's final commit on the source is synced (or the window says so).
    std::thread::sleep(Duration::from_millis(3 * REFRESH_MS));
    ok(&d, &["--stop", "--mirror", "soak", "--topics", TOPIC]);
    let dst_out = dir.path().join("dest-consumer.json");
    finish(
        run_py(
            &py,
            &["consume_dest", &d, TOPIC, GROUP, dst_out.to_str().unwrap()],
        ),
        "consume_dest",
    );

    // Producer → destination: every acknowledged batch, at its offset, with its bytes, once.
    let dest = destination_records(&d);
    let mut where_of: HashMap<String, (i32, i64)> = HashMap::new();
    for (&(p, off), v) in &dest {
        assert!(
            where_of.insert(v.clone(), (p, off)).is_none(),
            "{v:.12} twice on the destination"
        );
    }
    let mut lost = 0;
    for &(n, p, base) in &produced.acked {
        for i in 0..RECORDS_PER_BATCH {
            let want = value(n, i);
            if dest.get(&(p, base + i as i64)) != Some(&want) {
                lost += 1;
            }
        }
    }
    let acked_records = produced.acked.len() * RECORDS_PER_BATCH;
    let unacked_present = dest.len() - (acked_records - lost);

    // Consumer: phase 1 on the source, phase 2 on the destination.
    let phase1 = consumed(&src_out);
    let phase2 = consumed(&dst_out);
    for (phase, recs) in [("source", &phase1), ("destination", &phase2)] {
        let mut seen = HashMap::new();
        for (p, off, v) in recs.iter() {
            if let Some(prev) = seen.insert(v.clone(), (*p, *off)) {
                panic!("{phase} consumer read {v:.12} twice ({prev:?} and {p}-{off})");
            }
        }
    }
    // Where the destination group resumed, and how far the source consumer had read.
    let mut resumed: HashMap<i32, i64> = HashMap::new();
    for (p, off, _) in &phase2 {
        let e = resumed.entry(*p).or_insert(*off);
        *e = (*e).min(*off);
    }
    let mut read_to: HashMap<i32, i64> = HashMap::new();
    for (p, off, _) in &phase1 {
        let e = read_to.entry(*p).or_insert(off + 1);
        *e = (*e).max(off + 1);
    }
    let in_phase1: HashMap<&str, (i32, i64)> = phase1
        .iter()
        .map(|(p, o, v)| (v.as_str(), (*p, *o)))
        .collect();
    let mut duplicated = 0;
    for (p, off, v) in &phase2 {
        if in_phase1.contains_key(v.as_str()) {
            duplicated += 1;
            assert!(
                *off >= resumed[p] && *off < read_to[p],
                "{v:.12} at {p}-{off} read twice outside the window [{}, {})",
                resumed[p],
                read_to[p]
            );
        }
    }
    let in_phase2: std::collections::HashSet<&str> =
        phase2.iter().map(|(_, _, v)| v.as_str()).collect();
    let lost_to_consumer = produced
        .acked
        .iter()
        .flat_map(|&(n, _, _)| (0..RECORDS_PER_BATCH).map(move |i| value(n, i)))
        .filter(|v| !in_phase1.contains_key(v.as_str()) && !in_phase2.contains(v.as_str()))
        .count();

    let report = json!({
        "seconds": secs,
        "seed": seed,
        "source_kills": src_kills,
        "destination_kills": dst_kills,
        "produced_acknowledged": acked_records,
        "produce_calls_failed": produced.failed,
        "unacknowledged_but_present": unacked_present,
        "mirrored": dest.len(),
        "consumed_on_source": phase1.len(),
        "consumed_on_destination": phase2.len(),
        "lost": lost,
        "lost_to_consumer": lost_to_consumer,
        "duplicated_at_consumer": duplicated,
    });
    eprintln!("soak report: {report}");
    assert_eq!(lost, 0, "acknowledged records missing on the destination");
    assert_eq!(
        lost_to_consumer, 0,
        "acknowledged records the consumer never got"
    );
    assert!(
        unacked_present as u64 <= produced.failed * RECORDS_PER_BATCH as u64,
        "{unacked_present} records nobody acknowledged or failed"
    );
    assert!(src_kills + dst_kills > 0);
    assert_eq!(dst.stop(), Some(0));
    assert_eq!(src.stop(), Some(0));
}
