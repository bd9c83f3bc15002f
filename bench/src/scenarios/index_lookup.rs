//! `index-lookup`: offset translation, in ns per lookup (extra field `ns_per_op`; `mb_per_s` counts
//! 8 bytes — one index entry — per lookup, so it is lookups/s × 8 / 10⁶). The ratio is
//! baseline time ÷ our time, higher is better, as everywhere.
//!
//! - `offset_index`: `OffsetIndex::lookup` on a full index (10 MiB, 1,310,720 entries; quick:
//!   1 MiB) with uniformly random targets, beside `vec_binary_search`: `partition_point` over a
//!   `Vec<(i64, u32)>` of the same entries in memory.
//! - `find_batch-<backend>`: `SegmentReader::find_batch` on a sealed 64 MiB segment (quick:
//!   4 MiB) of ~16 KiB batches — index lookup, then reading batch headers from the `.log` through
//!   the backend until the batch holding the target — beside `vec_binary_search+pread_header`:
//!   the same search over an in-memory copy of the index entries, then the same header reads
//!   with plain `pread` on a `std::fs::File`. Warm page cache.

use crate::fixtures::{batch_run, batches_for};
use crate::harness::{Opts, Report, alternate, scratch_dir, time};
use crate::scenarios::segment_append::backends;
use anyhow::{Result, ensure};
use mirrorlog_index::{FilePosition, Offset, OffsetIndex};
use mirrorlog_segment::io::storage_by_name;
use mirrorlog_segment::segment::{
    ActiveSegment, LOG_SUFFIX, SealedSegment, SegmentConfig, segment_path,
};
use serde_json::json;
use std::fs::File;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

const SCENARIO: &str = "index-lookup";
/// Bytes per offset-index entry, the unit `mb_per_s` counts.
const ENTRY_BYTES: u64 = 8;

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    let index_bytes: u64 = if opts.quick { 1 << 20 } else { 10 << 20 };
    let segment_bytes: u64 = if opts.quick { 4 << 20 } else { 64 << 20 };
    let scratch = scratch_dir(SCENARIO, index_bytes * 4 + segment_bytes * 2)?;
    let mut reports = vec![offset_index(opts, scratch.path(), index_bytes)?];
    reports.extend(find_batch(opts, scratch.path(), segment_bytes)?);
    Ok(reports)
}

/// Deterministic uniformly distributed targets in `0..end` (xorshift64).
fn targets(n: usize, end: i64, seed: u64) -> Vec<i64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % end as u64) as i64
        })
        .collect()
}

/// The baseline's search: the entry with the largest offset ≤ `target`, `(base, 0)` if none.
fn vec_lookup(entries: &[(i64, u32)], base: i64, target: i64) -> (i64, u32) {
    match entries.partition_point(|e| e.0 <= target) {
        0 => (base, 0),
        n => entries[n - 1],
    }
}

fn ns_per_op(d: Duration, ops: usize) -> f64 {
    crate::harness::round3(d.as_secs_f64() * 1e9 / ops as f64)
}

fn offset_index(opts: Opts, dir: &Path, index_bytes: u64) -> Result<Report> {
    let lookups = if opts.quick { 50_000 } else { 1_000_000 };
    let rounds = if opts.quick { 3 } else { 9 };
    let mut index = OffsetIndex::open(
        dir.join("00000000000000000000.index"),
        Offset(0),
        index_bytes,
        true,
    )?;
    // Entries as a segment of 16-record, 1 KiB-spaced batches would make them (positions must
    // stay below 2 GiB: 1,310,720 × 1024 does).
    let n = index.max_entries();
    let mut entries = Vec::with_capacity(n);
    for i in 0..n {
        let (offset, position) = (i as i64 * 16 + 15, i as u32 * 1024);
        index.append(Offset(offset), FilePosition(position))?;
        entries.push((offset, position));
    }
    ensure!(index.is_full(), "the index should be full");
    let targets = targets(lookups, n as i64 * 16 + 16, 0x2545_f491_4f6c_dd1d);
    for &t in targets.iter().take(10_000) {
        let (o, p) = index.lookup(Offset(t));
        ensure!(
            (o.get(), p.get()) == vec_lookup(&entries, 0, t),
            "index and baseline disagree on target {t}"
        );
    }
    let (ours, base) = alternate(
        rounds,
        || {
            time(|| {
                let mut acc = 0u64;
                for &t in &targets {
                    let (o, p) = index.lookup(Offset(black_box(t)));
                    acc = acc.wrapping_add(o.get() as u64 ^ p.get() as u64);
                }
                black_box(acc);
            })
        },
        || {
            time(|| {
                let mut acc = 0u64;
                for &t in &targets {
                    let (o, p) = vec_lookup(&entries, 0, black_box(t));
                    acc = acc.wrapping_add(o as u64 ^ p as u64);
                }
                black_box(acc);
            })
        },
    );
    Ok(Report {
        scenario: SCENARIO,
        variant: "offset_index".into(),
        baseline: "vec_binary_search",
        bytes: lookups as u64 * ENTRY_BYTES,
        ours,
        base,
        extra: vec![
            ("ns_per_op", json!(ns_per_op(ours, lookups))),
            ("baseline_ns_per_op", json!(ns_per_op(base, lookups))),
            ("index_bytes", json!(index_bytes)),
            ("entries", json!(n)),
            ("lookups", json!(lookups)),
        ],
    })
}

/// The baseline of `find_batch`: search the in-memory entries, then read 61-byte batch headers
/// with `pread` from that position until the batch whose last offset is ≥ `target`; returns its
/// position.
fn raw_find(file: &File, size: u64, entries: &[(i64, u32)], target: i64) -> Option<u32> {
    let (_, mut pos) = vec_lookup(entries, 0, target);
    let mut h = [0u8; 61];
    while pos as u64 + 61 <= size {
        file.read_exact_at(&mut h, pos as u64)
            .expect("pread header");
        let base = i64::from_be_bytes(h[0..8].try_into().expect("8 bytes"));
        let length = i32::from_be_bytes(h[8..12].try_into().expect("4 bytes"));
        let delta = i32::from_be_bytes(h[23..27].try_into().expect("4 bytes"));
        if base + delta as i64 >= target {
            return Some(pos);
        }
        pos += 12 + length as u32;
    }
    None
}

fn find_batch(opts: Opts, root: &Path, segment_bytes: u64) -> Result<Vec<Report>> {
    let lookups = if opts.quick { 5_000 } else { 100_000 };
    let rounds = if opts.quick { 3 } else { 9 };
    let dir = root.join("segment");
    std::fs::create_dir(&dir)?;
    let run = batch_run(Offset(0), batches_for(segment_bytes));
    let pwrite = storage_by_name("pwrite").expect("the pwrite backend always exists");
    let mut seg = ActiveSegment::create(pwrite, &dir, Offset(0), SegmentConfig::default(), 0)?;
    for i in 0..run.chunks(64) {
        seg.append(run.chunk(i, 64))?;
    }
    let sealed = seg.seal()?;
    let index = sealed.offset_index();
    let entries: Vec<(i64, u32)> = (0..index.entries())
        .map(|i| {
            let (o, p) = index.entry(i).expect("entry within the index");
            (o.get(), p.get())
        })
        .collect();
    let size = sealed.size_bytes() as u64;
    drop(sealed);
    let targets = targets(lookups, run.next_offset().get(), 0x9e37_79b9_7f4a_7c15);
    let file = File::open(segment_path(&dir, Offset(0), LOG_SUFFIX))?;

    let mut reports = Vec::new();
    for storage in backends() {
        let name = storage.name();
        let seg = SealedSegment::open(storage, &dir, Offset(0), SegmentConfig::default(), 0)?;
        for &t in targets.iter().take(1_000) {
            let ours = seg.find_batch(Offset(t))?.map(|l| l.position.get());
            ensure!(
                ours == raw_find(&file, size, &entries, t),
                "find_batch and baseline disagree on target {t}"
            );
        }
        let (ours, base) = alternate(
            rounds,
            || {
                time(|| {
                    let mut acc = 0u64;
                    for &t in &targets {
                        let loc = seg.find_batch(Offset(black_box(t))).expect("find_batch");
                        acc = acc.wrapping_add(loc.map_or(0, |l| l.position.as_u64()));
                    }
                    black_box(acc);
                })
            },
            || {
                time(|| {
                    let mut acc = 0u64;
                    for &t in &targets {
                        let pos = raw_find(&file, size, &entries, black_box(t));
                        acc = acc.wrapping_add(pos.unwrap_or(0) as u64);
                    }
                    black_box(acc);
                })
            },
        );
        reports.push(Report {
            scenario: SCENARIO,
            variant: format!("find_batch-{name}"),
            baseline: "vec_binary_search+pread_header",
            bytes: lookups as u64 * ENTRY_BYTES,
            ours,
            base,
            extra: vec![
                ("ns_per_op", json!(ns_per_op(ours, lookups))),
                ("baseline_ns_per_op", json!(ns_per_op(base, lookups))),
                ("segment_bytes", json!(size)),
                ("entries", json!(entries.len())),
                ("lookups", json!(lookups)),
            ],
        });
    }
    Ok(reports)
}
