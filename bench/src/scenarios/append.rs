//! `append`: engine appends — [`PartitionLog`] with its producer state, epoch cache, indexes and
//! checks — of ~16 KiB batches (16 records of 1 KiB, incompressible, no producer id), beside raw
//! `pwrite` of the same bytes (std `FileExt::write_all_at` of the same buffers at increasing
//! positions, into as many fresh files as the variant writes).
//!
//! Variants, all measured in the same interleaved rounds with their baselines:
//!
//! - `leader`: `append_as_leader(batch, epoch, LeaderOrigin::Client)`, one client batch (base
//!   offset 0) per call, into one fresh log. The input is one **distinct, uniquely owned `Bytes`
//!   per batch**, built before the timed part (`"input": "unique"`), so an append that stamps
//!   offsets in place may keep the buffer without copying it; whether it copies is the engine's
//!   business, and shows in the ratio. Baseline `raw_pwrite_owned`: the same batches, also as
//!   distinct owned buffers built before the timed part, each written with one 16 KiB `pwrite`
//!   into one file and dropped after its write — the engine frees each batch after appending it,
//!   and freeing 16 KiB heap blocks one by one costs glibc heap trims (`brk`) that a writer of
//!   slices of one buffer does not pay, so both sides pay them. `ratio_vs_raw_pwrite_shared` is
//!   the ratio against the `mirror` baseline instead (slices of one buffer, nothing freed).
//! - `mirror`: `append_as_follower(batch, ReplicaOrigin::Mirror)` of the source's batches (real
//!   offsets from the log end, leader epoch set), one batch per call, into one fresh read-only
//!   log. Baseline `raw_pwrite`: the same slices of one buffer (a fetch response), one 16 KiB
//!   `pwrite` each, into one file.
//! - `mirror-1mib`: the same with 64 batches (~1 MiB, what one fetch response holds per
//!   partition) per call; the engine writes each call in one `pwrite`, so its baseline is raw
//!   `pwrite` of the same ~1 MiB buffers (`raw_pwrite_1mib`).
//! - `1000-partitions`: the `leader` append round-robin over 1000 partitions of one
//!   [`LogManager`], through each [`PartitionHandle`]'s
//!   lock. `segment.index.bytes` is 64 KiB for these logs (`"index_bytes"`): the default 10 MiB
//!   would preallocate 1000 × 2 × 10 MiB = 20 GiB of sparse index files. Baseline
//!   `raw_pwrite_owned_per_partition`: the owned buffers of `leader`'s baseline written round-robin
//!   over 1000 fresh files, each in a directory of its own as a partition's log is (ext4 spreads
//!   directories over block groups, and writes to 1000 files in 1000 directories ran ~15% slower
//!   than to 1000 files in one). Quick mode uses 100 partitions (variant `100-partitions`):
//!   creating a partition costs several `fsync`s.
//!
//! Each round creates its logs (or files) in a fresh directory, times only the appends, then
//! deletes everything, so dirty pages are dropped rather than written back: buffered appends
//! measure the page cache, not the disk. Log creation (index preallocation, directory syncs) and
//! the leader epoch (assigned at creation, as on becoming leader) are outside the timed part.
//! The backend is the engine's default (`MIRRORLOG_IO` may force one), named in `"storage"`.

use crate::fixtures::{BatchRun, batch_16k, batch_run_in_epoch, batches_for, client_batches};
use crate::harness::{Opts, Report, interleave, round3, scratch_dir};
use anyhow::Result;
use bytes::Bytes;
use mirrorlog_engine::clock::{Clock, SystemClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, ReplicaOrigin, Shutdown};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_segment::io::{Storage, default_storage};
use mirrorlog_segment::{Compression, RecordBatch};
use serde_json::json;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCENARIO: &str = "append";
/// Partitions of the `1000-partitions` variant (quick: 100, variant `100-partitions`: creating
/// a partition costs several `fsync`s).
const PARTITIONS: usize = 1000;
const QUICK_PARTITIONS: usize = 100;
/// `segment.index.bytes` of the `1000-partitions` logs.
pub const SMALL_INDEX_BYTES: u32 = 64 << 10;
/// Batches per call in `mirror-1mib`: 64 × ~16 KiB ≈ 1 MiB.
const COALESCE: usize = 64;
/// The leader epoch of every append (and of the mirrored source batches).
pub const EPOCH: LeaderEpoch = LeaderEpoch(3);

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    let target: u64 = if opts.quick { 4 << 20 } else { 512 << 20 };
    let rounds = if opts.quick { 3 } else { 7 };
    let template = batch_16k(Compression::None, 1024);
    let run = batch_run_in_epoch(Offset(0), batches_for(target), EPOCH);
    let bytes = run.len_bytes();
    let count = run.count;
    let partitions_n = if opts.quick {
        QUICK_PARTITIONS
    } else {
        PARTITIONS
    };
    // At most one round's files exist at a time, plus the small-index logs' preallocation.
    let scratch = scratch_dir(
        SCENARIO,
        4 * bytes + partitions_n as u64 * 2 * SMALL_INDEX_BYTES as u64,
    )?;
    let root = scratch.path();
    let storage = default_storage();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    if !opts.quick {
        eprintln!(
            "{SCENARIO}: {} MiB per round ({count} batches of {} bytes), {rounds} rounds, \
             backend {}",
            bytes >> 20,
            run.batch_bytes,
            storage.name()
        );
    }

    let mut raw_1 = || raw_round(&root.join("raw-1"), calls(&run, 1), 1);
    let mut raw_1_owned = || raw_round(&root.join("raw-1-owned"), owned_batches(&run), 1);
    let mut raw_1m = || raw_round(&root.join("raw-1m"), calls(&run, COALESCE), 1);
    let mut raw_n_owned = || raw_round(&root.join("raw-n"), owned_batches(&run), partitions_n);
    let mut leader = || leader_round(&storage, &clock, &root.join("leader"), &template, count);
    let mut mirror = || mirror_round(&storage, &clock, &root.join("mirror"), &run, 1);
    let mut mirror_1m = || mirror_round(&storage, &clock, &root.join("mirror-1m"), &run, COALESCE);
    let mut partitions = || {
        partitions_round(
            &storage,
            &clock,
            &root.join("partitions"),
            &template,
            count,
            partitions_n,
        )
    };
    let medians = interleave(
        rounds,
        &mut [
            &mut raw_1,
            &mut raw_1_owned,
            &mut raw_1m,
            &mut raw_n_owned,
            &mut leader,
            &mut mirror,
            &mut mirror_1m,
            &mut partitions,
        ],
    );
    let [
        raw_1,
        raw_1_owned,
        raw_1m,
        raw_n_owned,
        leader,
        mirror,
        mirror_1m,
        partitions,
    ] = medians[..]
    else {
        unreachable!("eight closures, eight medians")
    };

    let common = |files: usize, write_bytes: usize| {
        vec![
            ("storage", json!(storage.name())),
            ("batch_bytes", json!(run.batch_bytes)),
            ("batches", json!(count)),
            ("bytes_per_round", json!(bytes)),
            ("write_bytes", json!(write_bytes)),
            ("files", json!(files)),
            ("rounds", json!(rounds)),
        ]
    };
    let report = |variant: &str, baseline, ours, base, extra| Report {
        scenario: SCENARIO,
        variant: variant.to_string(),
        baseline,
        bytes,
        ours,
        base,
        extra,
    };
    let mut leader_extra = common(1, run.batch_bytes);
    leader_extra.push(("input", json!("unique")));
    leader_extra.push((
        "ratio_vs_raw_pwrite_shared",
        json!(round3(raw_1.as_secs_f64() / leader.as_secs_f64())),
    ));
    let mut partitions_extra = common(partitions_n, run.batch_bytes);
    partitions_extra.push(("input", json!("unique")));
    partitions_extra.push(("index_bytes", json!(SMALL_INDEX_BYTES)));
    Ok(vec![
        report(
            "leader",
            "raw_pwrite_owned",
            leader,
            raw_1_owned,
            leader_extra,
        ),
        report(
            "mirror",
            "raw_pwrite",
            mirror,
            raw_1,
            common(1, run.batch_bytes),
        ),
        report(
            "mirror-1mib",
            "raw_pwrite_1mib",
            mirror_1m,
            raw_1m,
            common(1, COALESCE * run.batch_bytes),
        ),
        report(
            &format!("{partitions_n}-partitions"),
            "raw_pwrite_owned_per_partition",
            partitions,
            raw_n_owned,
            partitions_extra,
        ),
    ])
}

/// Opens a fresh log in `dir` (created here) as a broker does for a new partition, with the
/// leader epoch [`EPOCH`] already in its cache.
pub(crate) fn fresh_log(
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    dir: &Path,
    config: LogConfig,
) -> PartitionLog {
    std::fs::create_dir(dir).expect("create the log directory");
    let (mut log, _) = PartitionLog::open(
        storage.clone(),
        dir,
        "bench-0",
        config,
        clock.clone(),
        Shutdown::Clean,
        OpenOffsets::default(),
    )
    .expect("open a fresh log");
    log.assign_leader_epoch(EPOCH).expect("assign the epoch");
    log
}

/// One `leader` round: `count` client batches appended to a fresh log; returns the time of the
/// appends alone.
fn leader_round(
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    dir: &Path,
    template: &RecordBatch,
    count: usize,
) -> Duration {
    let mut log = fresh_log(storage, clock, dir, LogConfig::default());
    let batches = client_batches(template, count);
    let t = Instant::now();
    for b in batches {
        log.append_as_leader(b, EPOCH, LeaderOrigin::Client)
            .expect("leader append");
    }
    let d = t.elapsed();
    let per = template.last_offset_delta() as i64 + 1;
    assert_eq!(log.log_end_offset(), Offset(count as i64 * per));
    drop(log);
    std::fs::remove_dir_all(dir).expect("remove the round's directory");
    d
}

/// One `mirror` round: the run appended to a fresh read-only log `per_call` batches at a time.
fn mirror_round(
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    dir: &Path,
    run: &BatchRun,
    per_call: usize,
) -> Duration {
    let config = LogConfig {
        read_only: true,
        ..LogConfig::default()
    };
    let mut log = fresh_log(storage, clock, dir, config);
    let calls = calls(run, per_call);
    let t = Instant::now();
    for b in calls {
        log.append_as_follower(b, ReplicaOrigin::Mirror)
            .expect("mirror append");
    }
    let d = t.elapsed();
    assert_eq!(log.log_end_offset(), run.next_offset());
    assert_eq!(log.size_bytes(), run.len_bytes());
    drop(log);
    std::fs::remove_dir_all(dir).expect("remove the round's directory");
    d
}

/// One `1000-partitions` round: a fresh log manager with `partitions` partitions, `count`
/// client batches appended round-robin. Only the appends are timed.
fn partitions_round(
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    dir: &Path,
    template: &RecordBatch,
    count: usize,
    partitions: usize,
) -> Duration {
    let (mgr, _) = LogManager::open(LogManagerConfig::new(dir), storage.clone(), clock.clone())
        .expect("open the log manager");
    let handles = create_partitions(&mgr, partitions);
    let batches = client_batches(template, count);
    let t = Instant::now();
    for (i, b) in batches.into_iter().enumerate() {
        handles[i % partitions]
            .write()
            .append_as_leader(b, EPOCH, LeaderOrigin::Client)
            .expect("leader append");
    }
    let d = t.elapsed();
    let appended: u64 = handles.iter().map(|h| h.read().size_bytes()).sum();
    assert_eq!(appended, (count * template.size_bytes()) as u64);
    drop(handles);
    drop(mgr); // no shutdown: nothing is flushed, the directory goes next
    std::fs::remove_dir_all(dir).expect("remove the round's directory");
    d
}

/// `partitions` partitions of topic `bench` created in `mgr` as the `1000-partitions` variant
/// has them (`segment.index.bytes` [`SMALL_INDEX_BYTES`], leader epoch [`EPOCH`] assigned).
pub fn create_partitions(mgr: &LogManager, partitions: usize) -> Vec<Arc<PartitionHandle>> {
    let mut config = LogConfig::default();
    config.segment.index_bytes_max = SMALL_INDEX_BYTES;
    (0..partitions)
        .map(|p| {
            let tp = TopicPartition {
                topic: "bench".into(),
                partition: p as i32,
            };
            let h = mgr
                .create(&tp, TopicId([7; 16]), config.clone())
                .expect("create a partition");
            h.write().assign_leader_epoch(EPOCH).expect("assign epoch");
            h
        })
        .collect()
}

/// The run cut into the buffers one call takes.
pub(crate) fn calls(run: &BatchRun, per_call: usize) -> Vec<Bytes> {
    (0..run.chunks(per_call))
        .map(|i| run.chunk(i, per_call))
        .collect()
}

/// One baseline round: `files` fresh files in `dir` — each in a directory of its own when there
/// are several, as partitions are (ext4 spreads directories over block groups, which costs the
/// writes something) — the buffers written round-robin over them with `write_all_at` at
/// increasing positions, each dropped right after its write (as the engine drops what it
/// appended). Only the writes are timed; everything is deleted afterwards.
fn raw_round(dir: &Path, bufs: Vec<Bytes>, files: usize) -> Duration {
    std::fs::create_dir(dir).expect("create the round's directory");
    let fs: Vec<File> = (0..files)
        .map(|i| {
            let path = if files == 1 {
                dir.join("00000000000000000000.log")
            } else {
                let sub = dir.join(format!("bench-{i}"));
                std::fs::create_dir(&sub).expect("create a partition directory");
                sub.join("00000000000000000000.log")
            };
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(path)
                .expect("create a baseline file")
        })
        .collect();
    let mut pos = vec![0u64; files];
    let t = Instant::now();
    for (i, b) in bufs.into_iter().enumerate() {
        let f = i % files;
        fs[f].write_all_at(&b, pos[f]).expect("pwrite");
        pos[f] += b.len() as u64;
    }
    let d = t.elapsed();
    drop(fs);
    std::fs::remove_dir_all(dir).expect("remove the round's directory");
    d
}

/// The run's batches as distinct, uniquely owned buffers (what the leader variants are given).
fn owned_batches(run: &BatchRun) -> Vec<Bytes> {
    (0..run.count)
        .map(|i| Bytes::from(run.batch(i).to_vec()))
        .collect()
}
