//! `mirror`: the mirror's data path between two brokers over loopback, both `RunningBroker`s in
//! this process, the mirror created through the broker's `Mirrors` API (as CreateClusterMirror
//! does) with its own wire client to the source.
//!
//! - **catch-up**: a source topic holding N bytes (2 GiB; 8 MiB with `--quick`) in 16 KiB
//!   batches of incompressible records; each round starts a fresh destination broker, creates the
//!   mirror, starts the topic and times until the destination's log end equals the source's.
//!   Baseline, in the same rounds: N bytes sent on one loopback TCP connection in 1 MiB writes
//!   (target: ratio ≥ 0.5). Each round's set-up is reported beside it (`steps_ms`, medians,
//!   and `rounds_steps_ms`: when the destination broker had started, the mirror was created,
//!   the topic start returned, the first bytes and the last byte landed, in ms from the
//!   round's start), as the baseline has no set-up.
//! - **steady-lag**: a client produces to the source (acks=1, over loopback) at a fixed rate
//!   (64 MB/s for 10 s; 4 MB/s for 1 s quick) while the mirror follows; each batch's delay from its append on the source to
//!   the destination's log end passing it is recorded (p50/p99/max in `extra`). Ratio: the
//!   produce schedule's duration ÷ the time until the destination holds all of it (1.0 = the
//!   mirror keeps up; the baseline is the schedule itself).
//! - **many-partitions**: P partitions (10,000; 200 quick) of 64 KiB each caught up in one round
//!   with 4 fetcher threads and 1 MiB responses; the process's peak RSS growth over the round
//!   (`VmHWM` after resetting it through `/proc/self/clear_refs`) against the fetcher bound
//!   threads × source nodes × response bytes + 64 MiB, the source being one broker
//!   (`rss_ratio_to_bound` ≤ 1 is the target). The source
//!   broker is a child process (this binary again, run with `MIRRORLOG_BENCH_MIRROR_SOURCE`
//!   set), so the growth is the destination broker's and its mirror's (including the 10,000 destination partitions' own
//!   memory). Beside it, from another child process, the peak RSS growth of a broker that
//!   creates the same partitions and appends the same bytes locally: the difference
//!   (`mirror_rss_overhead_mib`) is what mirroring adds (`overhead_ratio_to_bound`). Throughput
//!   ratio against the same bytes over raw TCP.
//!
//! Scratch space: both brokers' data under one [`scratch_dir`] (set `TMPDIR` to a tmpfs to keep
//! the disk out of it).
//!
//! `MIRRORLOG_BENCH_MIRROR_ONLY=catch-up` (a comma-separated list of variants) runs only those:
//! measuring a change to the catch-up takes many runs on a noisy machine, and the whole scenario
//! takes minutes.

use crate::harness::{Opts, Report, interleave, percentile_us, round3, scratch_dir, time};
use anyhow::{Context, Result, bail};
use bytes::Bytes;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::PartitionHandle;
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicPartition};
use mirrorlog_segment::BatchBuilder;
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Records per batch and bytes per record value: 16 KiB batches.
const RECORDS_PER_BATCH: usize = 16;
const VALUE_BYTES: usize = 1000;
/// Hang guard of every wait; never a verdict.
const DEADLINE: Duration = Duration::from_secs(600);
const CHUNK: usize = 1 << 20;

/// One 16 KiB batch of incompressible records (the engine assigns its offsets on append).
fn batch(seed: u64) -> Bytes {
    let mut x = seed | 1;
    let mut b = BatchBuilder::new();
    let mut value = vec![0u8; VALUE_BYTES];
    for i in 0..RECORDS_PER_BATCH {
        for v in value.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *v = x as u8;
        }
        b.append(
            TimestampMs(1_700_000_000_000 + i as i64),
            None,
            Some(&value),
            &[],
        );
    }
    b.build().into_bytes()
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

/// Appends `batch` to a source partition as its leader would, moving the high watermark (a
/// single-node source: everything appended is replicated).
fn append(h: &PartitionHandle, batch: &Bytes) -> Offset {
    let mut log = h.write();
    let epoch = log.leader_epoch().max(LeaderEpoch(0));
    log.append_as_leader(batch.clone(), epoch, LeaderOrigin::Client)
        .expect("append to the source");
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    leo
}

/// A source broker holding topic `topic` with `partitions` partitions of `bytes_per_partition`
/// each.
fn source(
    dir: &Path,
    topic: &str,
    partitions: i32,
    bytes_per_partition: u64,
) -> Result<RunningBroker> {
    let b = RunningBroker::start_local(dir, 1)?;
    // Retention off: the maintenance thread must not delete what the mirror is timed copying.
    let mut client = Client::connect(&b.addr.to_string())?;
    // 10,000 partitions take this disk ~50 s to create (every file and directory synced).
    client.set_timeout(std::time::Duration::from_secs(600))?;
    client.create_topic(
        topic,
        partitions,
        &[("retention.ms", "-1"), ("retention.bytes", "-1")],
    )?;
    let batches: Vec<Bytes> = (0..8).map(|i| batch(0x9e37_79b9 + i)).collect();
    let per = bytes_per_partition.div_ceil(batches[0].len() as u64);
    for p in 0..partitions {
        let h = b
            .broker
            .logs
            .get(&tp(topic, p))
            .context("source partition")?;
        for i in 0..per {
            append(&h, &batches[i as usize % batches.len()]);
        }
    }
    Ok(b)
}

/// When each step of [`destination`] returned: the broker started, the mirror created, the
/// topic started (its partitions created and handed to the fetchers).
#[derive(Clone, Copy)]
struct SetUp {
    broker_started: Instant,
    mirror_created: Instant,
    topic_started: Instant,
}

/// A fresh destination broker with mirror `m` of `source` mirroring `topic`.
fn destination(
    dir: &Path,
    source: &str,
    topic: &str,
    settings: &[(&str, String)],
) -> Result<RunningBroker> {
    destination_timed(dir, source, topic, settings).map(|(d, _)| d)
}

/// [`destination`], also saying when each of its steps returned.
fn destination_timed(
    dir: &Path,
    source: &str,
    topic: &str,
    settings: &[(&str, String)],
) -> Result<(RunningBroker, SetUp)> {
    let d = RunningBroker::start_local(dir, 2)?;
    let broker_started = Instant::now();
    let mut configs: BTreeMap<String, String> = BTreeMap::new();
    configs.insert("bootstrap.servers".into(), source.to_string());
    for (k, v) in settings {
        configs.insert((*k).into(), v.clone());
    }
    let m = d
        .broker
        .mirrors
        .create_durable(&d.broker, "bench", configs)
        .map_err(|e| anyhow::anyhow!("create the mirror: {e}"))?;
    let mirror_created = Instant::now();
    m.start_topics(&[topic.to_string()])
        .map_err(|e| anyhow::anyhow!("start mirroring {topic}: {e}"))?;
    let set_up = SetUp {
        broker_started,
        mirror_created,
        topic_started: Instant::now(),
    };
    Ok((d, set_up))
}

fn log_end(b: &RunningBroker, k: &TopicPartition) -> Offset {
    b.broker
        .logs
        .get(k)
        .map_or(Offset(-1), |h| h.read().log_end_offset())
}

/// Waits until every partition of `topic` on `dst` has the source's log end; returns when
/// [`wait_for`] first saw bytes there.
fn wait_caught_up(
    src: &RunningBroker,
    dst: &RunningBroker,
    topic: &str,
    partitions: i32,
) -> Option<Instant> {
    let targets: Vec<(TopicPartition, Offset)> = (0..partitions)
        .map(|p| (tp(topic, p), log_end(src, &tp(topic, p))))
        .collect();
    wait_for(dst, &targets)
}

/// Waits until each partition on `dst` reaches its log end in `targets`, and checks that it
/// holds everything from offset 0 (nothing skipped by a moved log start). Returns the first look
/// that saw a partition's log end past 0 (`None` when every target was empty): until then the
/// looks are [`Pace::MIN`] apart, so it is the first byte's arrival to within about that.
fn wait_for(dst: &RunningBroker, targets: &[(TopicPartition, Offset)]) -> Option<Instant> {
    let start = Instant::now();
    for (k, _) in targets {
        while dst.broker.logs.get(k).is_none() {
            assert!(start.elapsed() < DEADLINE, "the mirror never created {k}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let mut i = 0;
    let mut pace = Pace::new();
    let mut first_byte = None;
    while i < targets.len() {
        let (k, end) = &targets[i];
        let leo = log_end(dst, k);
        if first_byte.is_none() && leo > Offset(0) {
            first_byte = Some(Instant::now());
        }
        if leo >= *end {
            i += 1;
            pace = Pace::new();
            continue;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{k} did not catch up: {leo} of {end}"
        );
        std::thread::sleep(pace.next_sleep(leo, *end));
    }
    for (k, _) in targets {
        let start = dst
            .broker
            .logs
            .get(k)
            .map_or(Offset(-1), |h| h.read().log_start_offset());
        assert_eq!(start, Offset(0), "{k} starts at {start}: not a full copy");
    }
    first_byte
}

/// How long [`wait_for`] sleeps between looks at a log end: half the time left at the rate
/// seen since the last look, between [`Pace::MIN`] and [`Pace::MAX`]. Polling every millisecond
/// cost 3–6% of one CPU during the timed rounds (work the raw TCP baseline does not have, on a
/// 2-core machine whose CPUs are the mirror's bottleneck); this wakes about 50 times in a 2 s
/// round instead of 2,000. Half of what is left never overshoots while the rate stays within 2×
/// of the last interval's, and the sleeps shrink to `MIN` near the end: the last byte is seen at
/// most `MIN` (1 ms) late, as with the 1 ms poll. Only a rate more than doubling between two
/// looks can make it late by more, at most `MAX` (50 ms).
struct Pace {
    last: Option<(Instant, Offset)>,
}

impl Pace {
    const MIN: Duration = Duration::from_millis(1);
    const MAX: Duration = Duration::from_millis(50);

    fn new() -> Self {
        Self { last: None }
    }

    /// The sleep before the next look, the log end being `leo` of `end` now.
    fn next_sleep(&mut self, leo: Offset, end: Offset) -> Duration {
        let now = Instant::now();
        let Some((t0, o0)) = self.last.replace((now, leo)) else {
            return Self::MIN;
        };
        let (done, elapsed) = (leo.get() - o0.get(), now - t0);
        if done <= 0 || elapsed.is_zero() {
            return Self::MIN;
        }
        let left = elapsed.mul_f64((end.get() - leo.get()) as f64 / done as f64);
        (left / 2).clamp(Self::MIN, Self::MAX)
    }
}

/// The baseline: `len` bytes on one loopback TCP connection, 1 MiB writes, until the reader got
/// them all.
fn raw_tcp(len: u64) -> Duration {
    let (mut s, reader) = crate::scenarios::fetch_send::sink().expect("loopback");
    let buf = vec![0x5au8; CHUNK];
    let t = Instant::now();
    let mut sent = 0u64;
    while sent < len {
        let k = CHUNK.min((len - sent) as usize);
        s.write_all(&buf[..k]).expect("write");
        sent += k as u64;
    }
    drop(s);
    let got = reader.join().expect("reader");
    let d = t.elapsed();
    assert_eq!(got, len);
    d
}

/// The groups of threads whose CPU time a catch-up round reports apart, by the start of the
/// thread's name (`/proc` keeps its first 15 bytes): the destination mirror's applier and
/// fetcher (mirror "bench"), and the brokers' connection threads (in a catch-up, almost all of
/// it the source's, answering the fetches). `other` is the rest of the process (the destination
/// starting, the waiting thread, threads that ended within the round).
const THREAD_GROUPS: [(&str, &str); 3] = [
    ("applier", "mirror-bench-ap"),
    ("fetcher", "mirror-bench-fe"),
    ("connections", "mirrorlog-conn-"),
];

/// CPU time of each live thread of this process (id → group index in [`THREAD_GROUPS`] or
/// `None`, time on CPU), from `/proc/self/task/*/{comm,schedstat}`. Empty where `/proc` is not
/// there; a thread that ends while it is read is left out.
fn thread_cpu() -> BTreeMap<u64, (Option<usize>, Duration)> {
    let mut out = BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<u64>().ok()) else {
            continue;
        };
        let (Ok(comm), Ok(stat)) = (
            std::fs::read_to_string(t.path().join("comm")),
            std::fs::read_to_string(t.path().join("schedstat")),
        ) else {
            continue;
        };
        // schedstat: time on CPU (ns), time waiting for a CPU (ns), timeslices.
        let Some(ns) = stat.split_whitespace().next().and_then(|v| v.parse().ok()) else {
            continue;
        };
        let group = THREAD_GROUPS
            .iter()
            .position(|(_, prefix)| comm.trim_end().starts_with(prefix));
        out.insert(tid, (group, Duration::from_nanos(ns)));
    }
    out
}

/// CPU time per [`THREAD_GROUPS`] entry, then `other`, between two [`thread_cpu`] readings and
/// over a process CPU time of `total` (`other` takes what the groups do not explain).
fn group_cpu(
    before: &BTreeMap<u64, (Option<usize>, Duration)>,
    after: &BTreeMap<u64, (Option<usize>, Duration)>,
    total: Duration,
) -> [Duration; THREAD_GROUPS.len() + 1] {
    let mut out = [Duration::ZERO; THREAD_GROUPS.len() + 1];
    for (tid, (group, t)) in after {
        let Some(g) = group else { continue };
        let t0 = before
            .get(tid)
            .filter(|(g0, _)| g0 == group)
            .map_or(Duration::ZERO, |(_, t0)| *t0);
        out[*g] += t.saturating_sub(t0);
    }
    let grouped: Duration = out.iter().sum();
    out[THREAD_GROUPS.len()] = total.saturating_sub(grouped);
    out
}

/// This process's CPU time so far (user and system, every thread).
fn process_cpu() -> Duration {
    // SAFETY: an all-zero `rusage` is valid, and `getrusage` only writes into the live one given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: see above; RUSAGE_SELF is always a valid `who`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    assert_eq!(rc, 0, "getrusage");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn source_bytes(b: &RunningBroker, topic: &str, partitions: i32) -> u64 {
    (0..partitions)
        .map(|p| {
            b.broker
                .logs
                .get(&tp(topic, p))
                .map_or(0, |h| h.read().size_bytes())
        })
        .sum()
}

/// What one catch-up round measured: the CPU time, the whole process's and split by
/// [`THREAD_GROUPS`] (then `other`), and when each step of the round was reached.
struct RoundCpu {
    total: Duration,
    by_group: [Duration; THREAD_GROUPS.len() + 1],
    steps: [Duration; ROUND_STEPS.len()],
}

/// The steps of a catch-up round, each reported as the time from the round's start (before the
/// destination broker starts) until it was reached: the set-up ([`SetUp`]), the first bytes on
/// the destination (seen by [`wait_for`], to within a millisecond) and the last byte (the
/// round's time). The raw TCP baseline has no set-up: until the first byte it is all the
/// mirror's own latency.
const ROUND_STEPS: [&str; 5] = [
    "broker_started",
    "mirror_created",
    "topic_started",
    "first_byte",
    "last_byte",
];

/// One catch-up round: a fresh destination with `settings`, timed until it holds the source.
fn catch_up_round(
    root: &Path,
    round: &mut u32,
    src: &RunningBroker,
    topic: &str,
    settings: &[(&str, String)],
    cpu: &mut Vec<RoundCpu>,
) -> Duration {
    *round += 1;
    let dir = root.join(format!("dest-{round}"));
    let threads0 = thread_cpu();
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let (b, set_up) =
        destination_timed(&dir, &src.addr.to_string(), topic, settings).expect("destination");
    let first_byte = wait_caught_up(src, &b, topic, 1);
    let d = t0.elapsed();
    let total = process_cpu() - cpu0;
    // Read before the destination shuts down: its threads (and the source's connection thread
    // serving it) are still there.
    let by_group = group_cpu(&threads0, &thread_cpu(), total);
    let since = |at: Instant| at.saturating_duration_since(t0);
    let steps = [
        since(set_up.broker_started),
        since(set_up.mirror_created),
        since(set_up.topic_started),
        first_byte.map_or(d, since),
        d,
    ];
    if std::env::var_os(crate::harness::VERBOSE_ENV).is_some() {
        let ms: Vec<String> = ROUND_STEPS
            .iter()
            .zip(steps)
            .map(|(name, t)| format!("{name} {:.1}", t.as_secs_f64() * 1e3))
            .collect();
        eprintln!(
            "catch-up round {round} (ms from its start): {}",
            ms.join(", ")
        );
    }
    cpu.push(RoundCpu {
        total,
        by_group,
        steps,
    });
    b.shutdown().expect("destination shutdown");
    std::fs::remove_dir_all(&dir).expect("remove the destination");
    d
}

/// `catch-up` with the default fetch sizes (1 MiB per partition, 16 MiB per response) and
/// `catch-up-fetch-8mib` with 8 MiB per partition: a one-partition catch-up sends one partition's
/// worth per round trip.
fn catch_up(opts: Opts, root: &Path) -> Result<Vec<Report>> {
    let n: u64 = if opts.quick { 8 << 20 } else { 2 << 30 };
    let topic = "catch-up";
    let src = source(&root.join("source"), topic, 1, n)?;
    let bytes = source_bytes(&src, topic, 1);
    let rounds = 3;
    let round = std::cell::RefCell::new(0u32);
    let big = [("fetch.max.bytes", (8u32 << 20).to_string())];
    // The process's CPU time over each round (both brokers are in it), the warm-up first.
    let (mut cpu_default, mut cpu_larger) = (vec![], vec![]);
    let mut default = || {
        catch_up_round(
            root,
            &mut round.borrow_mut(),
            &src,
            topic,
            &[],
            &mut cpu_default,
        )
    };
    let mut larger = || {
        catch_up_round(
            root,
            &mut round.borrow_mut(),
            &src,
            topic,
            &big,
            &mut cpu_larger,
        )
    };
    let mut base = || raw_tcp(bytes);
    let only_default = only().is_some_and(|v| v.iter().all(|o| o != "catch-up-fetch-8mib"));
    let t = if only_default {
        interleave(rounds, &mut [&mut base, &mut default])
    } else {
        interleave(rounds, &mut [&mut base, &mut default, &mut larger])
    };
    src.shutdown()?;
    let mib = bytes as f64 / (1 << 20) as f64;
    // Medians over the timed rounds (the warm-up left out), each figure on its own: the group
    // medians need not add up to the total's.
    let median_ms_per_mib = |cpu: &[RoundCpu], of: &dyn Fn(&RoundCpu) -> Duration| {
        let mut ms: Vec<f64> = cpu
            .iter()
            .skip(1)
            .map(|r| of(r).as_secs_f64() * 1e3 / mib)
            .collect();
        ms.sort_by(f64::total_cmp);
        ms.get(ms.len() / 2).map_or(0.0, |&m| round3(m))
    };
    let cpu_ms_per_mib = |cpu: &[RoundCpu]| median_ms_per_mib(cpu, &|r| r.total);
    let by_thread = |cpu: &[RoundCpu]| {
        let mut m = serde_json::Map::new();
        let names = THREAD_GROUPS.iter().map(|(n, _)| *n).chain(["other"]);
        for (i, name) in names.enumerate() {
            m.insert(
                name.into(),
                json!(median_ms_per_mib(cpu, &|r| r.by_group[i])),
            );
        }
        serde_json::Value::Object(m)
    };
    // Every round's steps (the warm-up first), and the timed rounds' median of each.
    let steps = |cpu: &[RoundCpu]| {
        let ms = |t: Duration| round3(t.as_secs_f64() * 1e3);
        let rounds: Vec<serde_json::Value> = cpu
            .iter()
            .map(|r| {
                let m: serde_json::Map<String, serde_json::Value> = ROUND_STEPS
                    .iter()
                    .zip(r.steps)
                    .map(|(name, t)| ((*name).to_string(), json!(ms(t))))
                    .collect();
                serde_json::Value::Object(m)
            })
            .collect();
        let median: serde_json::Map<String, serde_json::Value> = ROUND_STEPS
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let mut v: Vec<Duration> = cpu.iter().skip(1).map(|r| r.steps[i]).collect();
                v.sort();
                let m = v.get(v.len() / 2).map_or(0.0, |&t| ms(t));
                ((*name).to_string(), json!(m))
            })
            .collect();
        (json!(rounds), serde_json::Value::Object(median))
    };
    let report = |variant: &str, ours: Duration, fetch: u32, cpu: &[RoundCpu]| Report {
        scenario: "mirror",
        variant: variant.into(),
        baseline: "raw-tcp-1-connection",
        bytes,
        ours,
        base: t[0],
        extra: vec![
            ("partitions", json!(1)),
            ("partition_fetch_max_bytes", json!(fetch)),
            ("target_ratio", json!(0.5)),
            ("cpu_ms_per_mib", json!(cpu_ms_per_mib(cpu))),
            ("cpu_ms_per_mib_by_thread", by_thread(cpu)),
            ("steps_ms", steps(cpu).1),
            ("rounds_steps_ms", steps(cpu).0),
        ],
    };
    let mut out = vec![report("catch-up", t[1], 1 << 20, &cpu_default)];
    if let Some(&larger) = t.get(2) {
        out.push(report("catch-up-fetch-8mib", larger, 8 << 20, &cpu_larger));
    }
    Ok(out)
}

/// [`ONLY_ENV`]'s variants, when set.
fn only() -> Option<Vec<String>> {
    let v = std::env::var(ONLY_ENV).ok()?;
    Some(v.split(',').map(|s| s.trim().to_string()).collect())
}

/// Whether a variant whose name starts with `prefix` runs.
fn runs(prefix: &str) -> bool {
    only().is_none_or(|v| v.iter().any(|o| o.starts_with(prefix)))
}

/// A comma-separated list of the variants to run (`catch-up`, `catch-up-fetch-8mib`,
/// `steady-lag`, `many-partitions`), for measuring one at a time; unset: all of them.
const ONLY_ENV: &str = "MIRRORLOG_BENCH_MIRROR_ONLY";

fn steady_lag(opts: Opts, root: &Path) -> Result<Report> {
    let (rate, seconds): (u64, u64) = if opts.quick {
        (4_000_000, 1)
    } else {
        (64_000_000, 10)
    };
    let topic = "steady";
    let src = source(&root.join("lag-source"), topic, 1, 0)?;
    let dst = destination(&root.join("lag-dest"), &src.addr.to_string(), topic, &[])?;
    // Wait for the mirror to be fetching (the partition exists and is caught up on nothing).
    let k = tp(topic, 0);
    let start = Instant::now();
    while dst.broker.logs.get(&k).is_none() {
        assert!(start.elapsed() < DEADLINE, "the mirror never created {k}");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Produced over the wire (acks=1), so the source's fetch long-poll wakes up as it would for
    // a client's produce.
    let mut client = Client::connect(&src.addr.to_string())?;
    let b = batch(0x51ed);
    let total_batches = rate * seconds / b.len() as u64;
    let interval = Duration::from_secs_f64(b.len() as f64 / rate as f64);
    // The watcher records, for each batch, when the destination's log end passed it.
    let appended = Arc::new(Appended::default());
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (appended, done, dst_h) = (appended.clone(), done.clone(), dst.broker.clone());
        let k = k.clone();
        std::thread::spawn(move || {
            let mut delays = vec![];
            let mut next = 0usize;
            let start = Instant::now();
            loop {
                let leo = dst_h
                    .logs
                    .get(&k)
                    .map_or(Offset(0), |h| h.read().log_end_offset());
                let now = Instant::now();
                let list = appended.snapshot_from(next);
                for (end, at) in list {
                    if leo < end {
                        break;
                    }
                    delays.push(now - at);
                    next += 1;
                }
                if done.load(Ordering::Acquire) && next as u64 == total_batches {
                    return (delays, now);
                }
                assert!(
                    start.elapsed() < DEADLINE,
                    "the mirror fell behind for good"
                );
                std::thread::sleep(Duration::from_micros(500));
            }
        })
    };
    let t0 = Instant::now();
    for i in 0..total_batches {
        let due = t0 + interval * i as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let base = client.produce(topic, 0, b.clone(), 1, None)?;
        appended.push(Offset(base + RECORDS_PER_BATCH as i64), Instant::now());
    }
    let produced = t0.elapsed();
    done.store(true, Ordering::Release);
    let (delays, last) = watcher.join().expect("watcher");
    let delivered = last - t0;
    drop(client);
    dst.shutdown()?;
    src.shutdown()?;
    let max_ms = delays.iter().max().map_or(0.0, |d| d.as_secs_f64() * 1e3);
    Ok(Report {
        scenario: "mirror",
        variant: format!("steady-lag-{}mb-s", rate / 1_000_000),
        baseline: "produce-schedule",
        bytes: total_batches * b.len() as u64,
        ours: delivered,
        base: produced,
        extra: vec![
            ("rate_mb_per_s", json!(rate / 1_000_000)),
            (
                "lag_p50_ms",
                json!(round3(percentile_us(&delays, 0.5) / 1e3)),
            ),
            (
                "lag_p99_ms",
                json!(round3(percentile_us(&delays, 0.99) / 1e3)),
            ),
            ("lag_max_ms", json!(round3(max_ms))),
        ],
    })
}

/// `VmHWM` and `VmRSS` of this process, in bytes.
fn memory() -> Result<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| -> Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("no {name} in /proc/self/status"))?;
        let kb: u64 = line
            .split_whitespace()
            .nth(1)
            .context("no value")?
            .parse()?;
        Ok(kb * 1024)
    };
    Ok((field("VmHWM:")?, field("VmRSS:")?))
}

/// Resets `VmHWM` to the current RSS (Linux ≥ 4.0).
fn reset_peak_rss() -> Result<()> {
    std::fs::write("/proc/self/clear_refs", b"5").context("resetting VmHWM")?;
    Ok(())
}

/// The environment variable that makes `mirrorlog-bench mirror` a source broker for
/// many-partitions instead (`dir<TAB>topic<TAB>partitions<TAB>bytes per partition`): it prints
/// `address log-end bytes` on one line and serves until its stdin closes. A separate process:
/// 10,000 partitions on each side do not fit one process's file descriptors, and the
/// destination's RSS is then the mirror's alone.
const SOURCE_ENV: &str = "MIRRORLOG_BENCH_MIRROR_SOURCE";

/// The environment variable that makes `mirrorlog-bench mirror` measure the memory of the same
/// partitions without a mirror (`dir<TAB>partitions<TAB>bytes per partition`): a fresh broker
/// creates them and appends the same bytes to each locally; it prints its peak RSS growth in
/// bytes. A separate process, so no memory the allocator kept from an earlier phase hides it.
const LOCAL_ENV: &str = "MIRRORLOG_BENCH_MIRROR_LOCAL";

fn local_partitions(spec: &str) -> Result<()> {
    let f: Vec<&str> = spec.split('\t').collect();
    let [dir, partitions, per] = f[..] else {
        bail!("{LOCAL_ENV}={spec:?}: want dir, partitions, bytes per partition");
    };
    reset_peak_rss()?;
    let (_, before) = memory()?;
    let b = source(Path::new(dir), "many", partitions.parse()?, per.parse()?)?;
    let (peak, _) = memory()?;
    println!("{}", peak.saturating_sub(before));
    std::io::stdout().flush()?;
    b.shutdown()
}

/// Runs this binary's `mirror` scenario with `env` set and returns its first line of output.
fn child(env: &str, value: String) -> Result<(std::process::Child, String)> {
    let mut c = std::process::Command::new(std::env::current_exe()?)
        .arg("mirror")
        .env(env, value)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("starting a {env} process"))?;
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(c.stdout.take().context("stdout")?),
        &mut line,
    )?;
    Ok((c, line))
}

fn finish(mut c: std::process::Child) -> Result<()> {
    drop(c.stdin.take());
    let status = c.wait()?;
    anyhow::ensure!(status.success(), "a child process failed: {status}");
    Ok(())
}

fn serve_source(spec: &str) -> Result<()> {
    let f: Vec<&str> = spec.split('\t').collect();
    let [dir, topic, partitions, per] = f[..] else {
        bail!("{SOURCE_ENV}={spec:?}: want dir, topic, partitions, bytes per partition");
    };
    let partitions: i32 = partitions.parse()?;
    let src = source(Path::new(dir), topic, partitions, per.parse()?)?;
    let end = log_end(&src, &tp(topic, 0));
    for p in 1..partitions {
        anyhow::ensure!(log_end(&src, &tp(topic, p)) == end, "uneven partitions");
    }
    println!(
        "{} {} {}",
        src.addr,
        end.get(),
        source_bytes(&src, topic, partitions)
    );
    std::io::stdout().flush()?;
    let mut rest = String::new();
    std::io::stdin().read_to_string(&mut rest)?;
    src.shutdown()
}

fn many_partitions(opts: Opts, root: &Path) -> Result<Report> {
    let partitions: i32 = if opts.quick { 200 } else { 10_000 };
    let per_partition: u64 = 64 << 10;
    let threads = 4u64;
    // The fetchers are per source node (`mirror.num.replica.fetchers` each); the source is
    // one broker.
    let source_nodes = 1u64;
    let response = 1u64 << 20;
    let topic = "many";
    let (local, line) = child(
        LOCAL_ENV,
        format!(
            "{}\t{partitions}\t{per_partition}",
            root.join("many-local").display()
        ),
    )?;
    let local_growth: u64 = line
        .trim()
        .parse()
        .with_context(|| format!("the local-partitions process said {line:?}"))?;
    finish(local)?;
    std::fs::remove_dir_all(root.join("many-local"))?;
    let (source_process, line) = child(
        SOURCE_ENV,
        format!(
            "{}\t{topic}\t{partitions}\t{per_partition}",
            root.join("many-source").display()
        ),
    )?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let [addr, end, bytes] = f[..] else {
        bail!("the source process said {line:?}");
    };
    let (addr, end, bytes) = (
        addr.to_string(),
        Offset(end.parse()?),
        bytes.parse::<u64>()?,
    );
    let base = raw_tcp(bytes);
    reset_peak_rss()?;
    let (_, rss_before) = memory()?;
    let settings = [
        ("mirror.num.replica.fetchers", threads.to_string()),
        ("fetch.response.max.bytes", response.to_string()),
    ];
    let dir = root.join("many-dest");
    let targets: Vec<(TopicPartition, Offset)> =
        (0..partitions).map(|p| (tp(topic, p), end)).collect();
    let mut dst = None;
    let ours = time(|| {
        let d = destination(&dir, &addr, topic, &settings).expect("destination");
        wait_for(&d, &targets);
        dst = Some(d);
    });
    let (peak, _) = memory()?;
    let growth = peak.saturating_sub(rss_before);
    let bound = threads * source_nodes * response + (64 << 20);
    if let Some(d) = dst {
        d.shutdown()?;
    }
    finish(source_process)?;
    // Signed: at small partition counts the two processes' other allocations dominate.
    let overhead = growth as i64 - local_growth as i64;
    let mib = |b: i64| json!(round3(b as f64 / (1 << 20) as f64));
    Ok(Report {
        scenario: "mirror",
        variant: format!("many-partitions-{partitions}"),
        baseline: "raw-tcp-1-connection",
        bytes,
        ours,
        base,
        extra: vec![
            ("partitions", json!(partitions)),
            ("source_nodes", json!(source_nodes)),
            ("peak_rss_growth_mib", mib(growth as i64)),
            ("local_partitions_rss_growth_mib", mib(local_growth as i64)),
            ("mirror_rss_overhead_mib", mib(overhead)),
            ("rss_bound_mib", json!(bound >> 20)),
            (
                "rss_ratio_to_bound",
                json!(round3(growth as f64 / bound as f64)),
            ),
            (
                "overhead_ratio_to_bound",
                json!(round3(overhead as f64 / bound as f64)),
            ),
        ],
    })
}

/// Runs the scenario.
///
/// # Errors
/// Not enough scratch space, or a broker that fails to start.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    if let Ok(spec) = std::env::var(SOURCE_ENV) {
        serve_source(&spec)?;
        return Ok(vec![]);
    }
    if let Ok(spec) = std::env::var(LOCAL_ENV) {
        local_partitions(&spec)?;
        return Ok(vec![]);
    }
    let need: u64 = if opts.quick { 64 << 20 } else { 5 << 30 };
    let dir = scratch_dir("mirror", need)?;
    if !Path::new("/proc/self/clear_refs").exists() {
        bail!("the mirror scenario measures peak RSS through /proc/self/clear_refs (Linux)");
    }
    let mut reports = vec![];
    if runs("catch-up") {
        reports.extend(catch_up(opts, dir.path())?);
    }
    if runs("steady-lag") {
        reports.push(steady_lag(opts, dir.path())?);
    }
    if runs("many-partitions") {
        reports.push(many_partitions(opts, dir.path())?);
    }
    Ok(reports)
}

/// An append-only list of `(batch end offset, append time)` shared by the producer and the
/// watcher (a mutex: the producer appends a few thousand times a second at most).
#[derive(Debug, Default)]
struct Appended(std::sync::Mutex<Vec<(Offset, Instant)>>);

impl Appended {
    fn push(&self, end: Offset, at: Instant) {
        self.0.lock().expect("lock").push((end, at));
    }
    fn snapshot_from(&self, from: usize) -> Vec<(Offset, Instant)> {
        let v = self.0.lock().expect("lock");
        v.get(from..).map_or(vec![], <[_]>::to_vec)
    }
}
