//! `segment-recovery`: reopening the active segment after an unclean shutdown —
//! `ActiveSegment::open_for_recovery` + `recover` (scan every batch, check its CRC32C and header,
//! rebuild the offset and time indexes) — beside `raw_read_crc32c`: `pread` of the same file in 1 MiB chunks into one reused
//! buffer and CRC32C of every byte. Target ratio ≥ 0.7.
//!
//! One segment of ~16 KiB batches (full: 1 GiB, quick: 8 MiB) is written once through the
//! segment (flushed, indexes left untrimmed as a crash leaves them, never sealed), then every
//! round recovers it through each backend (variants `io_uring`, `pwrite`) and scans it raw, in
//! interleaved order. **Warm page cache** for both (`"cache": "warm"`): the file was just written
//! and fits in memory; dropping the cache would need root and would disturb everything else on
//! the machine, and it measures the disk, not our code. The engine-level scenario (a whole
//! partition log reopened after a crash) is `recovery`.

use crate::fixtures::{batch_run, batches_for};
use crate::harness::{Opts, Report, interleave_against, scratch_dir};
use crate::scenarios::segment_append::backends;
use anyhow::Result;
use mirrorlog_index::Offset;
use mirrorlog_segment::io::storage_by_name;
use mirrorlog_segment::segment::{ActiveSegment, LOG_SUFFIX, SegmentConfig, segment_path};
use serde_json::json;
use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

const SCENARIO: &str = "segment-recovery";
/// The baseline's read size (the segment scanner's default chunk too).
const CHUNK: usize = 1 << 20;

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    let target: u64 = if opts.quick { 8 << 20 } else { 1 << 30 };
    let rounds = if opts.quick { 3 } else { 7 };
    let scratch = scratch_dir(SCENARIO, target + (64 << 20))?;
    let dir = scratch.path();
    let (batches, next_offset, size) = {
        let run = batch_run(Offset(0), batches_for(target));
        let pwrite = storage_by_name("pwrite").expect("the pwrite backend always exists");
        let mut seg = ActiveSegment::create(pwrite, dir, Offset(0), SegmentConfig::default(), 0)?;
        for i in 0..run.chunks(64) {
            seg.append(run.chunk(i, 64))?;
        }
        // Durable, so no writeback runs under the measurement; then dropped unsealed.
        seg.flush()?;
        (run.count as u64, run.next_offset(), run.len_bytes())
    };
    let log = segment_path(dir, Offset(0), LOG_SUFFIX);
    if !opts.quick {
        eprintln!(
            "{SCENARIO}: {} MiB segment of {batches} batches, {rounds} rounds, warm cache",
            size >> 20
        );
    }

    let backends = backends();
    let mut raw = || raw_read_crc32c(&log);
    let mut ours: Vec<Box<dyn FnMut() -> Duration + '_>> = Vec::new();
    for b in &backends {
        ours.push(Box::new(move || {
            let t = Instant::now();
            let mut seg = ActiveSegment::open_for_recovery(
                b.clone(),
                dir,
                Offset(0),
                SegmentConfig::default(),
                0,
            )
            .expect("open the segment");
            let report = seg.recover(|_, _| Ok(())).expect("recover");
            let d = t.elapsed();
            assert_eq!(report.batches, batches, "{report:?}");
            assert_eq!(report.truncated_bytes, 0, "{report:?}");
            assert_eq!(seg.next_offset(), next_offset);
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
                ("segment_bytes", json!(size)),
                ("batches", json!(batches)),
                ("rounds", json!(rounds)),
            ],
        })
        .collect())
}

/// The baseline: open the file, `pread` it in 1 MiB chunks into one buffer, CRC32C every byte.
fn raw_read_crc32c(path: &Path) -> Duration {
    let t = Instant::now();
    let f = File::open(path).expect("open the log");
    let mut buf = vec![0u8; CHUNK];
    let mut pos = 0u64;
    let mut crc = 0u32;
    loop {
        let n = f.read_at(&mut buf, pos).expect("pread");
        if n == 0 {
            break;
        }
        crc = mirrorlog_index::crc32c_append(crc, &buf[..n]);
        pos += n as u64;
    }
    black_box(crc);
    t.elapsed()
}
