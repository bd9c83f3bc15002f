//! A full disk on the mirror's destination. Two `mirrorlog serve` processes: the source on an
//! ordinary temp dir, the destination's data dir on a 16 MiB tmpfs; a mirror made with the CLI;
//! a producer (acks=all) writes more to the source than the destination can hold.
//!
//! While the destination is full its mirror partitions say so precisely (FAILED, retried with
//! backoff, the reason naming the storage error), the broker stays up and keeps serving reads of
//! its other topic, and what it mirrored before is a byte-identical prefix of the source. Then:
//!
//! 1. the tmpfs is filled to its last page (the `__mirror_state` writes that record the failures
//!    and retries fail too: the partitions are FAILED in memory and retried all the same), then
//!    grown (`mount -o remount,size=…`), and the mirror resumes by itself;
//! 2. or the destination is SIGKILLed while full to the last page, the tmpfs grown, and the
//!    destination restarted;
//!
//! and either way ends byte-identical to the source at identical offsets.
//!
//! Mounting needs root (CAP_SYS_ADMIN), which CI has; elsewhere set
//! `MIRRORLOG_SKIP_MOUNT_TESTS=1` to skip this test knowingly.

mod common;

use bytes::Bytes;
use common::mirrors::*;
use common::tmpfs::Tmpfs;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::{BatchBuilder, Compression};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

const TOPIC: &str = "events";
const PARTITIONS: i32 = 2;
/// Batches the producer writes: 1,400 × ~16.5 KiB ≈ 23 MiB, more than the 16 MiB destination.
const BATCHES: usize = 1_400;
const RECORDS_PER_BATCH: usize = 16;

/// A record of about 1 KiB that names its batch and place.
fn batch(n: usize) -> Bytes {
    // Every eighth batch compressed, so both kinds cross the full mark.
    let codec = if n % 8 == 7 {
        Compression::Lz4
    } else {
        Compression::None
    };
    let mut b = BatchBuilder::new().compression(codec);
    for i in 0..RECORDS_PER_BATCH {
        let mut v = format!("batch{n:06}-record{i:02}:").into_bytes();
        v.resize(1024, b'a' + (n % 26) as u8);
        b.append(
            TimestampMs(1_700_000_000_000 + n as i64),
            None,
            Some(&v),
            &[],
        );
    }
    b.build().into_bytes()
}

/// The two brokers and the mirror `m` of [`TOPIC`], with a producer writing to the source.
struct Scenario {
    // Dropped in this order: the brokers before the tmpfs under the destination.
    src: Serve,
    dst: Serve,
    dst_port: u16,
    /// The destination's `mirrorlog serve` arguments.
    dst_args: Vec<String>,
    fs: Tmpfs,
    /// The destination's own topic, `local`, and its log end.
    local_end: i64,
    producer: Option<JoinHandle<Vec<i64>>>,
    stop_producer: Arc<AtomicBool>,
    _dir: tempfile::TempDir,
}

impl Scenario {
    /// Starts everything and waits until a mirror partition fails on the full disk; `None` when
    /// the tmpfs cannot be mounted and the test is skipped. The destination runs with
    /// `dst_config` (a `server.properties` text) if given.
    fn until_full(dst_config: Option<&str>) -> Option<Scenario> {
        let dir = tempfile::tempdir().unwrap();
        let fs = Tmpfs::mount(&dir.path().join("dst"), "16m")?;
        let src = Serve::start(&dir.path().join("src"), free_port());
        let dst_port = free_port();
        let mut dst_args = vec![];
        if let Some(text) = dst_config {
            let path = dir.path().join("dst.properties");
            std::fs::write(&path, text).unwrap();
            dst_args = vec!["--config".to_string(), path.display().to_string()];
        }
        let dst = Serve::start_with(&fs.0, dst_port, "warn", &args(&dst_args));
        let d = dst.addr.clone();

        // A topic of the destination's own, read while the disk is full.
        let mut dc = Client::connect(&d).unwrap();
        dc.create_topic("local", 1, &[]).unwrap();
        let local_end = produce(&mut dc, "local", 0, 3, "local");

        let mut sc = Client::connect(&src.addr).unwrap();
        // Small segments (the mirror copies the config): rolls, new log and index files, near
        // the full mark too.
        sc.create_topic(TOPIC, PARTITIONS, &[("segment.bytes", "1048576")])
            .unwrap();
        create_mirror(
            &d,
            "m",
            &src.addr,
            &[
                // Short backoffs: many retries while the disk is full, and a quick resume.
                "mirror.failed.retry.initial.backoff.ms=20",
                "mirror.failed.retry.max.backoff.ms=100",
                // The test is not about the attempt limit: no partition may run out of attempts
                // while the disk stays full under a slow machine.
                "mirror.failed.retry.max.attempts=100000",
            ],
        );
        ok(&d, &["--start", "--mirror", "m", "--topics", TOPIC]);

        let stop_producer = Arc::new(AtomicBool::new(false));
        let stop = stop_producer.clone();
        let addr = src.addr.clone();
        let producer = std::thread::spawn(move || {
            let mut c = Client::connect(&addr).unwrap();
            let mut ends = vec![0i64; PARTITIONS as usize];
            for n in 0..BATCHES {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let p = n % PARTITIONS as usize;
                let base = c.produce(TOPIC, p as i32, batch(n), -1, None).unwrap();
                assert_eq!(base, ends[p], "the source appends at its log end");
                ends[p] = base + RECORDS_PER_BATCH as i64;
            }
            ends
        });
        let s = Scenario {
            src,
            dst,
            dst_port,
            dst_args,
            fs,
            local_end,
            producer: Some(producer),
            stop_producer,
            _dir: dir,
        };
        let parts = wait_for(
            &d,
            "m",
            "a mirror partition failing on the full disk",
            |parts| parts.iter().any(|x| !x["error_message"].is_null()),
        );
        s.check_while_full(&parts);
        Some(s)
    }

    /// The destination fails precisely and loses nothing while full.
    fn check_while_full(&self, parts: &[Value]) {
        let d = self.dst.addr.clone();
        for x in parts.iter().filter(|x| !x["error_message"].is_null()) {
            let msg = x["error_message"].as_str().unwrap();
            assert!(
                msg.contains("No space left on device"),
                "the reason names the storage error: {x:#}"
            );
            assert!(
                x["state"] == "FAILED" || x["state"] == "MIRRORING",
                "FAILED, or MIRRORING again on a retry: {x:#}"
            );
            assert!(
                x["retry_attempt"].as_i64().unwrap() >= 1,
                "retried automatically, not given up on: {x:#}"
            );
        }
        // The destination serves its own topic, whole.
        let r = reader(&d);
        let (local, _) = batches(&r, "local", 0, 0, self.local_end);
        assert!(!local.is_empty(), "the destination's own topic reads back");
        // What it mirrored is a byte-identical prefix of the source's log.
        let src = reader(&self.src.addr);
        for p in 0..PARTITIONS {
            let end = find(&partitions(&d, "m"), TOPIC, p as i64).unwrap()["destination_offset"]
                .as_i64()
                .unwrap();
            if end > 0 {
                assert_identical(&src, &r, TOPIC, p, 0, end);
            }
        }
    }

    /// Takes every page still free with a file of its own: from now on the `__mirror_state`
    /// writes that record failures and retries fail too, once the page they write into is full.
    /// The partitions say so, and go on failing and retrying (with backoff) in memory.
    fn fill_to_the_last_page(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.fs.0.join("filler")).unwrap();
        for chunk in [64 * 1024, 4096, 1] {
            let buf = vec![0u8; chunk];
            while f.write_all(&buf).is_ok() {}
        }
        let d = self.dst.addr.clone();
        let parts = wait_for(&d, "m", "a failure that could not be recorded", |parts| {
            parts.iter().any(|x| {
                x["error_message"].as_str().is_some_and(|m| {
                    m.contains("could not be persisted") || m.contains("could not be recorded")
                })
            })
        });
        self.check_while_full(&parts);
    }

    /// The producer's work done: each partition's source log end.
    fn source_ends(&mut self) -> Vec<i64> {
        self.producer.take().unwrap().join().unwrap()
    }

    /// Every mirror partition MIRRORING at the source's log end, byte-identical to it, and the
    /// destination's own topic still whole.
    fn ends_identical(&self, ends: &[i64]) {
        let d = self.dst.addr.clone();
        for (p, end) in ends.iter().enumerate() {
            wait_mirrored(&d, "m", TOPIC, p as i64, *end);
        }
        let (src, dst) = (reader(&self.src.addr), reader(&d));
        for (p, end) in ends.iter().enumerate() {
            assert_identical(&src, &dst, TOPIC, p as i32, 0, *end);
        }
        let (local, _) = batches(&dst, "local", 0, 0, self.local_end);
        assert!(!local.is_empty());
        for x in partitions(&d, "m") {
            assert!(x["error_message"].is_null(), "no failure left: {x:#}");
        }
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        self.stop_producer.store(true, Ordering::SeqCst);
    }
}

#[test]
fn a_full_destination_fails_precisely_and_resumes_by_itself_when_space_returns() {
    full_then_grown(None);
}

#[test]
fn a_full_direct_io_destination_fails_precisely_and_resumes_by_itself() {
    full_then_grown(Some("log.io.mode=direct\n"));
}

/// Scenario 1 of the module docs, the destination configured with `dst_config` if given.
fn full_then_grown(dst_config: Option<&str>) {
    let Some(mut s) = Scenario::until_full(dst_config) else {
        return;
    };
    s.fill_to_the_last_page();
    let ends = s.source_ends();
    s.fs.grow("256m");
    s.ends_identical(&ends);
}

#[test]
fn a_destination_killed_while_full_restarts_on_a_grown_disk_and_catches_up() {
    killed_while_full(None);
}

#[test]
fn a_direct_io_destination_killed_while_full_restarts_and_catches_up() {
    killed_while_full(Some("log.io.mode=direct\n"));
}

/// Scenario 2 of the module docs, the destination configured with `dst_config` if given.
fn killed_while_full(dst_config: Option<&str>) {
    let Some(mut s) = Scenario::until_full(dst_config) else {
        return;
    };
    s.fill_to_the_last_page();
    s.dst.kill();
    let ends = s.source_ends();
    s.fs.grow("256m");
    s.dst = Serve::start_with(&s.fs.0, s.dst_port, "warn", &args(&s.dst_args));
    s.ends_identical(&ends);
}
