//! `batch-validate`: `RecordBatch::validate()` on 16 KiB batches beside a raw CRC32C pass over
//! the same bytes. Target ratio ≥ 0.9: the header checks must be negligible next to the CRC.
//! Both sides use the workspace's one CRC-32C (`mirrorlog_index::crc`); `"crc32c_kernel"` names
//! the kernel it picked on this CPU.

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
                    black_box(mirrorlog_index::crc32c(black_box(&bytes[21..])));
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
        // Which CRC-32C kernel both sides ran (`mirrorlog_index::crc`): it differs by CPU.
        extra: vec![(
            "crc32c_kernel",
            serde_json::json!(mirrorlog_index::crc::kernel()),
        )],
    }]
}
