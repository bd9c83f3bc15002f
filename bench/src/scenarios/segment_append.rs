//! `segment-append`: ~16 KiB batches (16 records of 1 KiB, incompressible) appended to one fresh
//! segment through each I/O backend, beside raw `pwrite` of the same bytes into a fresh file
//! (std `FileExt::write_all_at` of the same 16 KiB buffers at increasing positions).
//!
//! Variants, all measured in the same interleaved rounds (so they are comparable with each other,
//! not only with the baseline):
//!
//! - `io_uring`, `pwrite`: one `ActiveSegment::append` per 16 KiB batch.
//! - `io_uring-coalesced`, `pwrite-coalesced`: one `append` per 64 batches (~1 MiB), one write
//!   system call or SQE each. Their ratio is still against the 16 KiB raw pwrite (what an
//!   uncoalesced writer gets); `raw_pwrite_1mib_mb_per_s` and `ratio_vs_raw_pwrite_1mib` give the
//!   raw figure at the same write size, i.e. the segment's own overhead at 1 MiB.
//! - `io_uring-durable`, `pwrite-durable`: `append_durable` of ~1 MiB at a time, beside raw
//!   `pwrite` + `fdatasync` of the same 1 MiB buffers, with per-call latency percentiles.
//!
//! Each round creates the segment (or file) in a fresh directory, times only the appends, then
//! deletes it, so dirty pages are dropped rather than written back and the disk stays empty.
//! Buffered variants measure the page cache, not the disk. Segment creation (index
//! preallocation, directory sync) is outside the timed part.

use crate::fixtures::{BatchRun, batch_run, batches_for};
use crate::harness::{
    Opts, Report, interleave, interleave_against, percentile_us, round3, scratch_dir,
};
use anyhow::Result;
use bytes::Bytes;
use mirrorlog_index::Offset;
use mirrorlog_segment::io::{Storage, storage_by_name};
use mirrorlog_segment::segment::{ActiveSegment, SegmentConfig};
use serde_json::json;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCENARIO: &str = "segment-append";
/// Batches per call in the coalesced and durable variants: 64 × ~16 KiB ≈ 1 MiB.
const COALESCE: usize = 64;

/// The backends available on this kernel, io_uring first.
pub(crate) fn backends() -> Vec<Arc<dyn Storage>> {
    let mut v = Vec::new();
    for name in ["io_uring", "pwrite"] {
        match storage_by_name(name) {
            Some(s) => v.push(s),
            None => eprintln!("{SCENARIO}: backend {name} unavailable here; skipping it"),
        }
    }
    v
}

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    let mut reports = buffered(opts)?;
    reports.extend(durable(opts)?);
    Ok(reports)
}

fn buffered(opts: Opts) -> Result<Vec<Report>> {
    let target: u64 = if opts.quick { 4 << 20 } else { 256 << 20 };
    let rounds = if opts.quick { 3 } else { 9 };
    let run = batch_run(Offset(0), batches_for(target));
    let bytes = run.len_bytes();
    // At most one round's file exists at a time; keep room for a few anyway.
    let scratch = scratch_dir(SCENARIO, 4 * bytes)?;
    let root = scratch.path();
    let backends = backends();
    if !opts.quick {
        eprintln!(
            "{SCENARIO}: {} MiB per round, {rounds} rounds, backends {:?}",
            bytes >> 20,
            backends.iter().map(|b| b.name()).collect::<Vec<_>>()
        );
    }

    let mut raw_16k = || raw_round(&root.join("raw-16k"), &run, 1, false, &mut Vec::new());
    let mut raw_1m = || raw_round(&root.join("raw-1m"), &run, COALESCE, false, &mut Vec::new());
    let mut ours: Vec<Box<dyn FnMut() -> Duration + '_>> = Vec::new();
    for b in &backends {
        for per_call in [1, COALESCE] {
            let dir = root.join(format!("{}-{per_call}", b.name()));
            let run = &run;
            ours.push(Box::new(move || {
                segment_round(b, &dir, run, per_call, false, false, &mut Vec::new())
            }));
        }
    }
    let mut all: Vec<&mut dyn FnMut() -> Duration> = vec![&mut raw_16k, &mut raw_1m];
    for f in ours.iter_mut() {
        all.push(f.as_mut());
    }
    let medians = interleave(rounds, &mut all);
    let (base_16k, base_1m) = (medians[0], medians[1]);

    let mut reports = Vec::new();
    let mut i = 2;
    for b in &backends {
        for per_call in [1, COALESCE] {
            let coalesced = per_call > 1;
            let mut extra = vec![
                ("write_bytes", json!(per_call * run.batch_bytes)),
                ("batch_bytes", json!(run.batch_bytes)),
                ("bytes_per_round", json!(bytes)),
                ("rounds", json!(rounds)),
            ];
            if coalesced {
                extra.push((
                    "raw_pwrite_1mib_mb_per_s",
                    json!(round3(bytes as f64 / base_1m.as_secs_f64() / 1e6)),
                ));
                extra.push((
                    "ratio_vs_raw_pwrite_1mib",
                    json!(round3(base_1m.as_secs_f64() / medians[i].as_secs_f64())),
                ));
            }
            reports.push(Report {
                scenario: SCENARIO,
                variant: if coalesced {
                    format!("{}-coalesced", b.name())
                } else {
                    b.name().to_string()
                },
                baseline: "raw_pwrite",
                bytes,
                ours: medians[i],
                base: base_16k,
                extra,
            });
            i += 1;
        }
    }
    Ok(reports)
}

fn durable(opts: Opts) -> Result<Vec<Report>> {
    let target: u64 = if opts.quick { 2 << 20 } else { 64 << 20 };
    let rounds = if opts.quick { 3 } else { 7 };
    let run = batch_run(Offset(0), batches_for(target));
    let bytes = run.len_bytes();
    let scratch = scratch_dir(SCENARIO, 4 * bytes)?;
    let root = scratch.path();
    let backends = backends();

    // Latencies of every measured call (the warm-up round's are dropped).
    let mut base_lat = Vec::new();
    let mut base_warm = true;
    let mut raw = || {
        let mut lat = Vec::new();
        let d = raw_round(&root.join("raw"), &run, COALESCE, true, &mut lat);
        if !std::mem::take(&mut base_warm) {
            base_lat.extend(lat);
        }
        d
    };
    let mut lats: Vec<Vec<Duration>> = vec![Vec::new(); backends.len()];
    let mut ours: Vec<Box<dyn FnMut() -> Duration + '_>> = Vec::new();
    for (b, out) in backends.iter().zip(lats.iter_mut()) {
        let dir = root.join(b.name());
        let run = &run;
        let mut warm = true;
        ours.push(Box::new(move || {
            let mut lat = Vec::new();
            let d = segment_round(b, &dir, run, COALESCE, true, false, &mut lat);
            if !std::mem::take(&mut warm) {
                out.extend(lat);
            }
            d
        }));
    }
    let (base, medians) = interleave_against(rounds, &mut raw, &mut ours);
    drop(ours);

    let mut reports = Vec::new();
    for (i, (b, lat)) in backends.iter().zip(&lats).enumerate() {
        reports.push(Report {
            scenario: SCENARIO,
            variant: format!("{}-durable", b.name()),
            baseline: "raw_pwrite+fdatasync",
            bytes,
            ours: medians[i],
            base,
            extra: vec![
                ("write_bytes", json!(COALESCE * run.batch_bytes)),
                ("bytes_per_round", json!(bytes)),
                ("rounds", json!(rounds)),
                ("p50_us", json!(percentile_us(lat, 0.50))),
                ("p99_us", json!(percentile_us(lat, 0.99))),
                ("baseline_p50_us", json!(percentile_us(&base_lat, 0.50))),
                ("baseline_p99_us", json!(percentile_us(&base_lat, 0.99))),
            ],
        });
    }
    Ok(reports)
}

/// The run cut into the buffers one call takes.
fn calls(run: &BatchRun, per_call: usize) -> Vec<Bytes> {
    (0..run.chunks(per_call))
        .map(|i| run.chunk(i, per_call))
        .collect()
}

/// One round of ours: a fresh segment in `dir`, every batch appended `per_call` batches at a
/// time (durably or not, plus one `flush` at the end when `flush`); returns the time of the
/// appends (and flush) alone, and pushes each call's latency to `lat` when durable. Deletes the
/// segment afterwards.
pub(crate) fn segment_round(
    storage: &Arc<dyn Storage>,
    dir: &Path,
    run: &BatchRun,
    per_call: usize,
    durable: bool,
    flush: bool,
    lat: &mut Vec<Duration>,
) -> Duration {
    std::fs::create_dir(dir).expect("create the round's directory");
    let mut seg =
        ActiveSegment::create(storage.clone(), dir, run.base, SegmentConfig::default(), 0)
            .expect("create the segment");
    let bufs = calls(run, per_call);
    let t = Instant::now();
    for b in bufs {
        if durable {
            let t0 = Instant::now();
            seg.append_durable(b).expect("durable append");
            lat.push(t0.elapsed());
        } else {
            seg.append(b).expect("append");
        }
    }
    if flush {
        seg.flush().expect("flush");
    }
    let d = t.elapsed();
    assert_eq!(seg.next_offset(), run.next_offset());
    assert_eq!(seg.size_bytes() as u64, run.len_bytes());
    drop(seg);
    std::fs::remove_dir_all(dir).expect("remove the round's directory");
    d
}

/// One round of the baseline: a fresh file at `path`, the same buffers written with
/// `write_all_at` at increasing positions (plus `fdatasync` after each when durable). Deletes the
/// file afterwards.
fn raw_round(
    path: &Path,
    run: &BatchRun,
    per_call: usize,
    durable: bool,
    lat: &mut Vec<Duration>,
) -> Duration {
    let f = crate::harness::create_file(path);
    let bufs = calls(run, per_call);
    let mut pos = 0u64;
    let t = Instant::now();
    for b in &bufs {
        let t0 = durable.then(Instant::now);
        f.write_all_at(b, pos).expect("pwrite");
        if let Some(t0) = t0 {
            f.sync_data().expect("fdatasync");
            lat.push(t0.elapsed());
        }
        pos += b.len() as u64;
    }
    let d = t.elapsed();
    drop(f);
    std::fs::remove_file(path).expect("remove the baseline file");
    d
}
