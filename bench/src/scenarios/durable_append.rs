//! `durable-append`: concurrent writer threads, each calling
//! [`PartitionHandle::append_as_leader_durable`](mirrorlog_engine::manager::PartitionHandle::append_as_leader_durable) in a loop — one ~16 KiB client batch (16 records
//! of 1 KiB, no producer id) per call, acknowledged only once durable: appended under the
//! partition's lock, then an `fdatasync` shared through the log manager's `GroupCommit` outside
//! it. Beside `raw_pwrite+fdatasync`: one thread writing the same batches into one fresh file with
//! `pwrite` + `fdatasync` per batch.
//!
//! Variants (`W` writers over `P` partitions, writer `i` on partition `i mod P`):
//!
//! - `writers-1`, `writers-8`, `writers-64`: 1, 8 and 64 writers on one partition — throughput
//!   should grow with writers as appends share syncs;
//! - `writers-64-partitions-8`, `writers-64-partitions-64`: 64 writers over 8 and 64 partitions
//!   (syncs of different files run side by side).
//!
//! Every round writes the same number of batches (`appends_per_round`, split evenly over the
//! writers) into a fresh log manager in a fresh directory; the timed part runs from releasing the
//! writers (already spawned, waiting on a barrier) to the last one finishing. `mb_per_s` is bytes
//! acknowledged per second; `p50_us`/`p99_us` are per-append latencies (call to durable return)
//! over every measured round; `baseline_p50_us`/`baseline_p99_us` are the baseline's
//! `pwrite + fdatasync` latencies. `p99_vs_baseline_p99` is `p99_us ÷ baseline_p99_us` (target
//! ≤ 2). The group commit's counters, summed over the measured rounds, are `gc_requests`
//! (appends that asked for a sync: one whose append a sync begun after it already covered asks
//! for none), `gc_syncs` and `appends_per_sync`. Data is really written to the disk here (each round's
//! files are deleted afterwards).

use crate::fixtures::{BatchRun, batch_16k, batch_run_in_epoch, client_batches};
use crate::harness::{Opts, Report, interleave, percentile_us, round3, scratch_dir};
use crate::scenarios::append::EPOCH;
use anyhow::Result;
use mirrorlog_engine::clock::{Clock, SystemClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{Storage, default_storage};
use mirrorlog_segment::{Compression, RecordBatch};
use serde_json::json;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

const SCENARIO: &str = "durable-append";
/// (writers, partitions) of each variant.
const VARIANTS: &[(usize, usize)] = &[(1, 1), (8, 1), (64, 1), (64, 8), (64, 64)];

fn variant_name(writers: usize, partitions: usize) -> String {
    if partitions == 1 {
        format!("writers-{writers}")
    } else {
        format!("writers-{writers}-partitions-{partitions}")
    }
}

/// What the measured rounds of one variant saw.
#[derive(Default)]
struct Seen {
    latencies: Vec<Duration>,
    requests: u64,
    syncs: u64,
    warm: bool,
}

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    // A multiple of 64, so every writer count splits it evenly.
    let appends: usize = if opts.quick { 128 } else { 4096 };
    let rounds = if opts.quick { 3 } else { 5 };
    let template = batch_16k(Compression::None, 1024);
    let run = batch_run_in_epoch(Offset(0), appends, EPOCH);
    let bytes = run.len_bytes();
    let scratch = scratch_dir(SCENARIO, 4 * bytes)?;
    let root = scratch.path();
    let storage = default_storage();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    if !opts.quick {
        eprintln!(
            "{SCENARIO}: {appends} durable appends of {} bytes per round, {rounds} rounds, \
             backend {}",
            run.batch_bytes,
            storage.name()
        );
    }

    let mut base_seen = Seen::default();
    let mut base = || {
        let mut lat = Vec::new();
        let d = raw_durable_round(&root.join("raw"), &run, &mut lat);
        if std::mem::replace(&mut base_seen.warm, true) {
            base_seen.latencies.extend(lat);
        }
        d
    };
    let mut seen: Vec<Seen> = VARIANTS.iter().map(|_| Seen::default()).collect();
    let mut ours: Vec<Box<dyn FnMut() -> Duration + '_>> = Vec::new();
    for (&(writers, partitions), seen) in VARIANTS.iter().zip(seen.iter_mut()) {
        let dir = root.join(variant_name(writers, partitions));
        let (storage, clock, template) = (&storage, &clock, &template);
        ours.push(Box::new(move || {
            durable_round(
                storage, clock, &dir, template, appends, writers, partitions, seen,
            )
        }));
    }
    let mut all: Vec<&mut dyn FnMut() -> Duration> = vec![&mut base];
    for f in ours.iter_mut() {
        all.push(f.as_mut());
    }
    let medians = interleave(rounds, &mut all);
    drop(all);
    drop(ours);

    let base_p50 = percentile_us(&base_seen.latencies, 0.50);
    let base_p99 = percentile_us(&base_seen.latencies, 0.99);
    Ok(VARIANTS
        .iter()
        .zip(&seen)
        .enumerate()
        .map(|(i, (&(writers, partitions), s))| {
            let p99 = percentile_us(&s.latencies, 0.99);
            Report {
                scenario: SCENARIO,
                variant: variant_name(writers, partitions),
                baseline: "raw_pwrite+fdatasync",
                bytes,
                ours: medians[i + 1],
                base: medians[0],
                extra: vec![
                    ("storage", json!(storage.name())),
                    ("writers", json!(writers)),
                    ("partitions", json!(partitions)),
                    ("batch_bytes", json!(run.batch_bytes)),
                    ("appends_per_round", json!(appends)),
                    ("rounds", json!(rounds)),
                    ("p50_us", json!(percentile_us(&s.latencies, 0.50))),
                    ("p99_us", json!(p99)),
                    ("baseline_p50_us", json!(base_p50)),
                    ("baseline_p99_us", json!(base_p99)),
                    ("p99_vs_baseline_p99", json!(round3(p99 / base_p99))),
                    ("gc_requests", json!(s.requests)),
                    ("gc_syncs", json!(s.syncs)),
                    (
                        "appends_per_sync",
                        json!(round3(s.latencies.len() as f64 / s.syncs.max(1) as f64)),
                    ),
                ],
            }
        })
        .collect())
}

/// One round of a variant: a fresh log manager in `dir` with `partitions` partitions, `writers`
/// threads each appending `appends / writers` batches durably. Returns the wall time from the
/// writers' start to the last one's end; adds latencies and group-commit counters to `seen`
/// (except on the warm-up round).
#[allow(clippy::too_many_arguments)]
fn durable_round(
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    dir: &Path,
    template: &RecordBatch,
    appends: usize,
    writers: usize,
    partitions: usize,
    seen: &mut Seen,
) -> Duration {
    let r = writers_round(
        LogManagerConfig::new(dir),
        storage,
        clock,
        template,
        appends,
        writers,
        partitions,
    );
    if std::mem::replace(&mut seen.warm, true) {
        seen.latencies.extend(r.latencies);
        seen.requests += r.requests;
        seen.syncs += r.syncs;
    }
    r.elapsed
}

/// What one [`writers_round`] measured.
pub(crate) struct WritersRound {
    /// From releasing the writers to the last one finishing.
    pub elapsed: Duration,
    /// Every append's latency (call to durable return).
    pub latencies: Vec<Duration>,
    /// Group-commit sync requests and syncs during the round.
    pub requests: u64,
    pub syncs: u64,
}

/// A fresh log manager opened with `config` (its first data dir is the round's directory,
/// removed afterwards) with `partitions` partitions, `writers` threads (writer `i` on partition
/// `i mod partitions`) each calling `append_as_leader_durable` on `appends / writers` client
/// batches.
pub(crate) fn writers_round(
    config: LogManagerConfig,
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    template: &RecordBatch,
    appends: usize,
    writers: usize,
    partitions: usize,
) -> WritersRound {
    let dir = config.data_dirs[0].clone();
    let (mgr, _) =
        LogManager::open(config, storage.clone(), clock.clone()).expect("open the log manager");
    let handles: Vec<_> = (0..partitions)
        .map(|p| {
            let tp = TopicPartition {
                topic: "bench".into(),
                partition: p as i32,
            };
            let h = mgr
                .create(&tp, TopicId([9; 16]), LogConfig::default())
                .expect("create a partition");
            h.write().assign_leader_epoch(EPOCH).expect("assign epoch");
            h
        })
        .collect();
    let before = mgr.group_commit().stats();
    let inputs: Vec<_> = (0..writers)
        .map(|_| client_batches(template, appends / writers))
        .collect();
    let start = Barrier::new(writers + 1);
    let (elapsed, latencies) = std::thread::scope(|s| {
        let threads: Vec<_> = inputs
            .into_iter()
            .enumerate()
            .map(|(w, batches)| {
                let h = handles[w % partitions].clone();
                let start = &start;
                s.spawn(move || {
                    let mut lat = Vec::with_capacity(batches.len());
                    start.wait();
                    for b in batches {
                        let t0 = Instant::now();
                        h.append_as_leader_durable(b, EPOCH, LeaderOrigin::Client)
                            .expect("durable append");
                        lat.push(t0.elapsed());
                    }
                    lat
                })
            })
            .collect();
        start.wait();
        let t = Instant::now();
        let lat: Vec<Duration> = threads
            .into_iter()
            .flat_map(|t| t.join().expect("writer thread"))
            .collect();
        (t.elapsed(), lat)
    });
    let after = mgr.group_commit().stats();
    let appended: u64 = handles.iter().map(|h| h.read().size_bytes()).sum();
    assert_eq!(appended, (appends * template.size_bytes()) as u64);
    drop(handles);
    drop(mgr);
    std::fs::remove_dir_all(&dir).expect("remove the round's directory");
    WritersRound {
        elapsed,
        latencies,
        requests: after.requests - before.requests,
        syncs: after.syncs - before.syncs,
    }
}

/// One baseline round: a fresh file, every batch of the run written with `pwrite` at increasing
/// positions, each followed by `fdatasync`; pushes each pair's latency to `lat`.
fn raw_durable_round(path: &Path, run: &BatchRun, lat: &mut Vec<Duration>) -> Duration {
    let f = crate::harness::create_file(path);
    let mut pos = 0u64;
    let t = Instant::now();
    for i in 0..run.count {
        let b = run.batch(i);
        let t0 = Instant::now();
        f.write_all_at(&b, pos).expect("pwrite");
        f.sync_data().expect("fdatasync");
        lat.push(t0.elapsed());
        pos += b.len() as u64;
    }
    let d = t.elapsed();
    drop(f);
    std::fs::remove_file(path).expect("remove the baseline file");
    d
}
