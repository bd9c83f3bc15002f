//! `log-peers`: mirrorlog's partition log beside two embedded log engines from crates.io,
//! `commitlog` 0.2 and `raft-engine` 0.4 (TiKV's), on one workload — 1 KiB incompressible
//! records in 16-record (~16 KiB) batches — each in three phases with a raw baseline from the
//! same interleaved rounds:
//!
//! - `*-sync-end`: every batch appended, one sync at the end (baseline `raw_pwrite+fdatasync_end`:
//!   the same bytes with 16 KiB `pwrite`s and one `fdatasync`);
//! - `*-sync-per-batch`: a sync after every batch (baseline `raw_pwrite+fdatasync_per_batch`);
//! - `*-read`: everything read back, warm, from a log written beforehand (baseline `raw_pread`:
//!   1 MiB `pread`s of a file of the same bytes);
//! - `*-read-cold`: the same, after every file of each log (and the baseline's file) was dropped
//!   from the page cache (`posix_fadvise(DONTNEED)` after its `fdatasync`, untimed) at the start
//!   of every round, so the bytes come from the disk. Pages a log keeps mapped (mirrorlog's and
//!   commitlog's indexes) stay. raft-engine serves `get` from its memtable, so its cold read is
//!   still a memory read (its line says so with `reads_from: "memtable"`).
//!
//! How each is driven:
//!
//! | engine | append | sync | read |
//! |---|---|---|---|
//! | mirrorlog | `PartitionLog::append_as_follower` of one Kafka batch (16 records) | `PartitionLog::flush` (`fdatasync` of the active segment) | `PartitionLog::read` of 1 MiB, the slice read out into one reused buffer (`FileSlice::read_into`), its batch headers walked |
//! | commitlog | `CommitLog::append` of a `MessageBuf` of 16 messages | `CommitLog::flush` **does not fsync** (it writes out its buffers and msyncs nothing durable), so the scenario then calls `fdatasync` on every segment and index file itself | `CommitLog::read` of 1 MiB at a time |
//! | raft-engine | `Engine::write` of a `LogBatch` of 16 `put`s (region 1, 8-byte keys) | `write(…, sync = true)`, or `Engine::sync` at the end | `Engine::get` of every key — raft-engine keeps put key-values in its memtable, so this reads memory |
//!
//! `ratio` is against the raw baseline; mirrorlog's lines also carry `ratio_vs_commitlog` and
//! `ratio_vs_raft_engine` (mirrorlog's throughput ÷ the peer's, same phase, same rounds).
//! Sizes: 1 GiB per phase (65 536 batches; `sync-per-batch` is 65 536 syncs per engine per
//! round, several minutes in all), `MIRRORLOG_BENCH_LOG_PEERS_MIB` overrides it; `--quick`
//! 1 MiB.

use crate::fixtures::{BatchRun, batch_run_in_epoch, batches_for};
use crate::harness::{Opts, Report, interleave, scratch_dir};
use crate::scenarios::append::{EPOCH, fresh_log};
use anyhow::Result;
use commitlog::message::{MessageBuf, MessageSet};
use commitlog::{CommitLog, LogOptions, ReadLimit};
use mirrorlog_engine::clock::{Clock, SystemClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, PartitionLog, ReplicaOrigin};
use mirrorlog_index::Offset;
use mirrorlog_segment::io::{PwriteStorage, Storage, ZeroAheadConfig, ZeroAheadStorage};
use serde_json::json;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCENARIO: &str = "log-peers";
/// Bytes of one record.
const RECORD: usize = 1024;
/// Records per batch.
const PER_BATCH: usize = 16;
const ENGINES: [&str; 3] = ["mirrorlog", "commitlog", "raft-engine"];

/// How a phase syncs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sync {
    End,
    PerBatch,
}

/// The records of batch `i`: 16 slices of 1 KiB of the (incompressible) run.
fn records(run: &BatchRun, i: usize) -> Vec<&[u8]> {
    let start = i * run.batch_bytes;
    (0..PER_BATCH)
        .map(|j| &run.bytes[start + j * RECORD..start + (j + 1) * RECORD])
        .collect()
}

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    let big = if opts.quick {
        1 << 20
    } else {
        std::env::var("MIRRORLOG_BENCH_LOG_PEERS_MIB")
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(1024)
            << 20
    };
    let rounds = if opts.quick { 2 } else { 3 };
    let run_big = batch_run_in_epoch(Offset(0), batches_for(big), EPOCH);
    let scratch = scratch_dir(SCENARIO, 8 * run_big.len_bytes())?;
    let root = scratch.path();
    // The engine's default buffered backend: pwrite with zeros ahead of synced `.log` files
    // (`log.preallocate`, on by default in the log manager).
    let storage: Arc<dyn Storage> = Arc::new(ZeroAheadStorage::new(
        Arc::new(PwriteStorage::new()),
        ZeroAheadConfig::default(),
    )?);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut reports = Vec::new();
    for (phase, run, sync) in [
        ("sync-end", &run_big, Sync::End),
        ("sync-per-batch", &run_big, Sync::PerBatch),
    ] {
        if !opts.quick {
            eprintln!("{SCENARIO}: {phase}, {} batches per round", run.count);
        }
        let dir = root.join(phase);
        let mut base = || raw_write_round(&dir.join("raw"), run, sync);
        let mut ml = || mirrorlog_write_round(&storage, &clock, &dir.join("ml"), run, sync);
        let mut cl = || commitlog_write_round(&dir.join("cl"), run, sync);
        let mut re = || raft_engine_write_round(&dir.join("re"), run, sync);
        std::fs::create_dir_all(&dir)?;
        let medians = interleave(rounds, &mut [&mut base, &mut ml, &mut cl, &mut re]);
        let baseline = match sync {
            Sync::End => "raw_pwrite+fdatasync_end",
            Sync::PerBatch => "raw_pwrite+fdatasync_per_batch",
        };
        reports.extend(phase_reports(phase, baseline, run, &medians));
    }

    // Read back: each engine's log written once, then read whole in every round.
    let dir = root.join("read");
    std::fs::create_dir_all(&dir)?;
    let run = &run_big;
    let raw_path = dir.join("raw");
    std::fs::write(&raw_path, &run.bytes)?;
    let ml_log = mirrorlog_write(&storage, &clock, &dir.join("ml"), run, Sync::End);
    let cl_log = commitlog_write(&dir.join("cl"), run, Sync::End);
    let re_log = raft_engine_write(&dir.join("re"), run, Sync::End);
    for (phase, cold) in [("read", false), ("read-cold", true)] {
        let evict = |path: &Path| {
            if cold {
                drop_from_page_cache(path);
            }
        };
        let mut base = || {
            evict(&raw_path);
            raw_read_round(&raw_path, run.len_bytes())
        };
        let mut ml = || {
            evict(&dir.join("ml"));
            mirrorlog_read_round(&ml_log, run)
        };
        let mut cl = || {
            evict(&dir.join("cl"));
            commitlog_read_round(&cl_log, run)
        };
        let mut re = || {
            evict(&dir.join("re"));
            raft_engine_read_round(&re_log, run)
        };
        let medians = interleave(rounds, &mut [&mut base, &mut ml, &mut cl, &mut re]);
        let mut phase_lines = phase_reports(phase, "raw_pread", run, &medians);
        if cold && let Some(re_line) = phase_lines.get_mut(2) {
            re_line.extra.push(("reads_from", json!("memtable")));
        }
        reports.extend(phase_lines);
    }
    Ok(reports)
}

/// `fdatasync`s and then drops from the page cache every file under `path` (a file or a
/// directory, recursively): clean pages nobody maps go, so the next read comes from the disk.
fn drop_from_page_cache(path: &Path) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).expect("list a log directory") {
            drop_from_page_cache(&entry.expect("an entry").path());
        }
        return;
    }
    let f = File::open(path).expect("open a file to evict");
    f.sync_data().expect("fdatasync before evicting");
    // SAFETY: a plain syscall on a descriptor we own; no memory is passed.
    let r = unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
            0,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    assert_eq!(r, 0, "posix_fadvise(DONTNEED) of {}", path.display());
}

/// One report per engine of a phase: `medians` = [baseline, mirrorlog, commitlog, raft-engine].
fn phase_reports(
    phase: &str,
    baseline: &'static str,
    run: &BatchRun,
    medians: &[Duration],
) -> Vec<Report> {
    ENGINES
        .iter()
        .enumerate()
        .map(|(i, engine)| {
            let mut extra = vec![
                ("engine", json!(engine)),
                ("phase", json!(phase)),
                ("batches", json!(run.count)),
                ("records_per_batch", json!(PER_BATCH)),
                ("record_bytes", json!(RECORD)),
            ];
            if i == 0 {
                let ours = medians[1].as_secs_f64();
                extra.push((
                    "ratio_vs_commitlog",
                    json!(crate::harness::round3(medians[2].as_secs_f64() / ours)),
                ));
                extra.push((
                    "ratio_vs_raft_engine",
                    json!(crate::harness::round3(medians[3].as_secs_f64() / ours)),
                ));
            }
            Report {
                scenario: SCENARIO,
                variant: format!("{engine}-{phase}"),
                baseline,
                bytes: run.len_bytes(),
                ours: medians[i + 1],
                base: medians[0],
                extra,
            }
        })
        .collect()
}

/// The baseline's write: 16 KiB `pwrite`s (one per batch) into a fresh file, `fdatasync` per
/// batch or at the end.
fn raw_write_round(path: &Path, run: &BatchRun, sync: Sync) -> Duration {
    let f = crate::harness::create_file(path);
    let t = Instant::now();
    for i in 0..run.count {
        f.write_all_at(&run.batch(i), (i * run.batch_bytes) as u64)
            .expect("pwrite");
        if sync == Sync::PerBatch {
            f.sync_data().expect("fdatasync");
        }
    }
    f.sync_data().expect("fdatasync");
    let d = t.elapsed();
    drop(f);
    std::fs::remove_file(path).expect("remove the baseline file");
    d
}

fn raw_read_round(path: &Path, len: u64) -> Duration {
    let f = File::open(path).expect("open the baseline file");
    let mut buf = vec![0u8; 1 << 20];
    let t = Instant::now();
    let mut pos = 0u64;
    while pos < len {
        let n = f.read_at(&mut buf, pos).expect("pread");
        assert!(n > 0, "baseline file shorter than written");
        pos += n as u64;
    }
    t.elapsed()
}

/// Times `write`, then removes `dir`.
fn timed_in<T>(dir: &Path, write: impl FnOnce() -> T) -> Duration {
    let t = Instant::now();
    let log = write();
    let d = t.elapsed();
    drop(log);
    std::fs::remove_dir_all(dir).expect("remove the round's directory");
    d
}

fn mirrorlog_write(
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    dir: &Path,
    run: &BatchRun,
    sync: Sync,
) -> PartitionLog {
    let config = LogConfig {
        read_only: true,
        ..LogConfig::default()
    };
    let mut log = fresh_log(storage, clock, dir, config);
    for i in 0..run.count {
        log.append_as_follower(run.batch(i), ReplicaOrigin::Mirror)
            .expect("mirrorlog append");
        if sync == Sync::PerBatch {
            log.flush().expect("mirrorlog flush");
        }
    }
    log.flush().expect("mirrorlog flush");
    log
}

fn mirrorlog_write_round(
    storage: &Arc<dyn Storage>,
    clock: &Arc<dyn Clock>,
    dir: &Path,
    run: &BatchRun,
    sync: Sync,
) -> Duration {
    // Every engine creates its log inside the timed part.
    timed_in(dir, || mirrorlog_write(storage, clock, dir, run, sync))
}

fn mirrorlog_read_round(log: &PartitionLog, run: &BatchRun) -> Duration {
    let mut buf = Vec::new();
    let t = Instant::now();
    let mut at = Offset(0);
    let mut bytes = 0usize;
    while at < log.log_end_offset() {
        let info = log
            .read(at, 1 << 20, FetchIsolation::LogEnd, true)
            .expect("mirrorlog read");
        let data = info.records.expect("records below the log end");
        data.slice.read_into(&mut buf).expect("read the slice");
        // The batch headers (baseOffset at 0, batchLength at 8, lastOffsetDelta at 23).
        let mut pos = 0;
        while pos + 27 <= buf.len() {
            let be = |at: usize, n: usize| {
                buf[pos + at..pos + at + n]
                    .iter()
                    .fold(0i64, |v, b| (v << 8) | i64::from(*b))
            };
            let size = 12 + be(8, 4) as usize;
            if pos + size > buf.len() {
                // The byte limit cut this batch: the next read starts at it.
                break;
            }
            bytes += size;
            at = Offset(be(0, 8) + be(23, 4) + 1);
            pos += size;
        }
    }
    let d = t.elapsed();
    assert_eq!(bytes as u64, run.len_bytes());
    d
}

/// `fdatasync`s every file of a commitlog directory (its `flush` does not).
fn sync_commitlog_files(dir: &Path) {
    for entry in std::fs::read_dir(dir).expect("list the commitlog directory") {
        let path = entry.expect("an entry").path();
        File::open(&path)
            .and_then(|f| f.sync_data())
            .expect("fdatasync a commitlog file");
    }
}

fn commitlog_write(dir: &Path, run: &BatchRun, sync: Sync) -> CommitLog {
    let mut log = CommitLog::new(LogOptions::new(dir)).expect("open commitlog");
    // The active segment (segments are 1 GB by default: one file for these sizes).
    let mut active: Option<File> = None;
    for i in 0..run.count {
        let mut buf = MessageBuf::default();
        for r in records(run, i) {
            buf.push(r).expect("a message");
        }
        log.append(&mut buf).expect("commitlog append");
        if sync == Sync::PerBatch {
            log.flush().expect("commitlog flush");
            let f = active.get_or_insert_with(|| {
                File::open(dir.join(format!("{:020}.log", 0))).expect("the active segment")
            });
            f.sync_data().expect("fdatasync the commitlog segment");
        }
    }
    log.flush().expect("commitlog flush");
    sync_commitlog_files(dir);
    log
}

fn commitlog_write_round(dir: &Path, run: &BatchRun, sync: Sync) -> Duration {
    timed_in(dir, || commitlog_write(dir, run, sync))
}

fn commitlog_read_round(log: &CommitLog, run: &BatchRun) -> Duration {
    let t = Instant::now();
    let mut next = 0u64;
    let mut bytes = 0usize;
    let end = log.next_offset();
    while next < end {
        let buf = log
            .read(next, ReadLimit::max_bytes(1 << 20))
            .expect("commitlog read");
        for m in buf.iter() {
            bytes += m.payload().len();
            next = m.offset() + 1;
        }
    }
    let d = t.elapsed();
    assert_eq!(bytes, run.count * PER_BATCH * RECORD);
    d
}

fn raft_engine_write(dir: &Path, run: &BatchRun, sync: Sync) -> raft_engine::Engine {
    let config = raft_engine::Config {
        dir: dir.to_str().expect("a UTF-8 path").to_string(),
        ..raft_engine::Config::default()
    };
    let engine = raft_engine::Engine::open(config).expect("open raft-engine");
    for i in 0..run.count {
        let mut batch = raft_engine::LogBatch::default();
        for (j, r) in records(run, i).into_iter().enumerate() {
            let key = ((i * PER_BATCH + j) as u64).to_be_bytes().to_vec();
            batch.put(1, key, r.to_vec()).expect("a put");
        }
        engine
            .write(&mut batch, sync == Sync::PerBatch)
            .expect("raft-engine write");
    }
    engine.sync().expect("raft-engine sync");
    engine
}

fn raft_engine_write_round(dir: &Path, run: &BatchRun, sync: Sync) -> Duration {
    timed_in(dir, || raft_engine_write(dir, run, sync))
}

fn raft_engine_read_round(engine: &raft_engine::Engine, run: &BatchRun) -> Duration {
    let t = Instant::now();
    let mut bytes = 0usize;
    for k in 0..(run.count * PER_BATCH) as u64 {
        bytes += engine
            .get(1, &k.to_be_bytes())
            .expect("every key was put")
            .len();
    }
    let d = t.elapsed();
    assert_eq!(bytes, run.count * PER_BATCH * RECORD);
    d
}
