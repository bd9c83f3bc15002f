//! `batch-validate`: `RecordBatch::validate()` on 16 KiB batches beside a raw CRC32C pass over
//! the same bytes. Target ratio ≥ 0.9: the header checks must be negligible next to the CRC.

use crate::fixtures::batch_16k;
use crate::harness::{Opts, Report, alternate, time};
use mirrorlog_segment::Compression;
use std::hint::black_box;

/// Runs the scenario.
pub fn run(opts: Opts) -> Vec<Report> {
    let batch = batch_16k(Compression::None, 1024);
    let bytes = batch.as_bytes().clone();
    let iters = if opts.quick { 2_000 } else { 100_000 };
    let rounds = if opts.quick { 5 } else { 15 };
    let (ours, base) = alternate(
        rounds,
        || {
            time(|| {
                for _ in 0..iters {
                    black_box(&batch).validate().expect("valid batch");
                }
            })
        },
        || {
            time(|| {
                for _ in 0..iters {
                    black_box(crc32c::crc32c(black_box(&bytes[21..])));
                }
            })
        },
    );
    vec![Report {
        scenario: "batch-validate",
        variant: "16KiB".into(),
        baseline: "raw_crc32c",
        bytes: bytes.len() as u64 * iters,
        ours,
        base,
        extra: vec![],
    }]
}
