//! `recovery`: reopening a whole partition log after an unclean shutdown —
//! `PartitionLog::open(.., Shutdown::Unclean, OpenOffsets::default())`: recovery point 0, so
//! every segment is scanned batch by batch (CRC32C and header checked, offset and time indexes
//! rebuilt, producer state and epoch cache replayed), sealed segments re-sealed, the log flushed
//! and a producer snapshot taken — beside `raw_read_crc32c`: `pread` of the same `.log` files in
//! 1 MiB chunks into one reused buffer and CRC32C of every byte. Target ratio ≥ 0.7.
//!
//! The log (full: 2 GiB, quick: 16 MiB) is written once through a [`PartitionLog`] with leader
//! appends of ~16 KiB client batches (16 records of 1 KiB, incompressible, no producer id) and
//! dropped without `close` (as a crash leaves it: no clean-shutdown marker, no checkpoint).
//! Segments are the default 1 GiB (quick: 4 MiB), so the log has 2+ segments. The benchmark then
//! `fsync`s the files itself, so no writeback runs under the measurement. Every round reopens the
//! log through each backend (variants `io_uring`, `pwrite`) and drops it again without `close`,
//! and scans it raw, in interleaved order. **Warm page cache** for both (`"cache": "warm"`): the
//! files were just written and fit in memory; dropping the cache would need root, would disturb
//! everything else on the machine, and measures the disk rather than our code.
//!
//! The segment-level scenario (one segment's `recover`) is `segment-recovery`.

use crate::fixtures::{batch_16k, batches_for};
use crate::harness::{Opts, Report, interleave_against, scratch_dir};
use crate::scenarios::append::{EPOCH, fresh_log};
use crate::scenarios::segment_append::backends;
use anyhow::Result;
use bytes::Bytes;
use mirrorlog_engine::clock::{Clock, SystemClock};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{LeaderOrigin, OpenOffsets, PartitionLog, Shutdown};
use mirrorlog_segment::Compression;
use mirrorlog_segment::io::default_storage;
use mirrorlog_segment::segment::LOG_SUFFIX;
use serde_json::json;
use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCENARIO: &str = "recovery";
/// The baseline's read size.
const CHUNK: usize = 1 << 20;

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    let target: u64 = if opts.quick { 16 << 20 } else { 2 << 30 };
    let rounds = if opts.quick { 3 } else { 7 };
    let mut config = LogConfig::default();
    if opts.quick {
        config.segment.segment_bytes_max = 4 << 20;
    }
    let scratch = scratch_dir(SCENARIO, target + (256 << 20))?;
    let dir = scratch.path().join("bench-0");
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);

    // Write the log, then "crash": drop it without close.
    let template = batch_16k(Compression::None, 1024);
    let batches = batches_for(target) as u64;
    let (next_offset, size, segments) = {
        let mut log = fresh_log(&default_storage(), &clock, &dir, config.clone());
        for _ in 0..batches {
            let b = Bytes::from(template.as_bytes().to_vec());
            log.append_as_leader(b, EPOCH, LeaderOrigin::Client)?;
        }
        (log.log_end_offset(), log.size_bytes(), log.segment_count())
    };
    sync_files(&dir)?;
    let logs = log_files(&dir)?;
    anyhow::ensure!(logs.len() == segments, "{logs:?}: expected {segments}");
    if !opts.quick {
        eprintln!(
            "{SCENARIO}: {} MiB log of {batches} batches in {segments} segments, {rounds} \
             rounds, warm cache",
            size >> 20
        );
    }

    let backends = backends();
    let mut raw = || raw_read_crc32c(&logs);
    let mut ours: Vec<Box<dyn FnMut() -> Duration + '_>> = Vec::new();
    for b in &backends {
        let (dir, clock, config) = (&dir, &clock, &config);
        ours.push(Box::new(move || {
            let t = Instant::now();
            let (log, report) = PartitionLog::open(
                b.clone(),
                dir,
                "bench-0",
                config.clone(),
                clock.clone(),
                Shutdown::Unclean,
                OpenOffsets::default(),
            )
            .expect("recover the log");
            let d = t.elapsed();
            assert_eq!(report.segments_recovered, segments, "{report:?}");
            assert_eq!(report.bytes_truncated, 0, "{report:?}");
            assert_eq!(log.log_end_offset(), next_offset);
            drop(log); // unclean again: the next round recovers everything once more
            d
        }));
    }
    let (base, medians) = interleave_against(rounds, &mut raw, &mut ours);
    Ok(backends
        .iter()
        .enumerate()
        .map(|(i, b)| Report {
            scenario: SCENARIO,
            variant: b.name().to_string(),
            baseline: "raw_read_crc32c",
            bytes: size,
            ours: medians[i],
            base,
            extra: vec![
                ("cache", json!("warm")),
                ("log_bytes", json!(size)),
                ("segments", json!(segments)),
                ("segment_bytes", json!(config.segment.segment_bytes_max)),
                ("batches", json!(batches)),
                ("rounds", json!(rounds)),
            ],
        })
        .collect())
}

/// `fsync`s every file in `dir`, so that no writeback of the setup runs under the measurement.
fn sync_files(dir: &Path) -> Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_file() {
            File::open(&p)?.sync_all()?;
        }
    }
    Ok(())
}

/// The `.log` files of `dir`, in offset order.
fn log_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.to_str().is_some_and(|s| s.ends_with(LOG_SUFFIX)) {
            v.push(p);
        }
    }
    v.sort();
    Ok(v)
}

/// The baseline: each file opened, `pread` in 1 MiB chunks into one buffer, CRC32C of every byte.
fn raw_read_crc32c(paths: &[PathBuf]) -> Duration {
    let t = Instant::now();
    let mut buf = vec![0u8; CHUNK];
    let mut crc = 0u32;
    for path in paths {
        let f = File::open(path).expect("open a log");
        let mut pos = 0u64;
        loop {
            let n = f.read_at(&mut buf, pos).expect("pread");
            if n == 0 {
                break;
            }
            crc = mirrorlog_index::crc32c_append(crc, &buf[..n]);
            pos += n as u64;
        }
    }
    black_box(crc);
    t.elapsed()
}
