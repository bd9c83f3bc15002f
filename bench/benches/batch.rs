//! Criterion micro benchmarks of the batch codec: `validate()` on 16 KiB batches beside a raw
//! CRC32C pass over the same bytes (the baseline: validation should cost nothing but the CRC), and
//! iterating the records of an uncompressed 16 KiB batch (keys and values are slices, not copies).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mirrorlog_bench::fixtures::batch_16k;
use mirrorlog_segment::Compression;
use std::hint::black_box;

fn validate(c: &mut Criterion) {
    let batch = batch_16k(Compression::None, 1024);
    let bytes = batch.as_bytes().clone();
    let mut g = c.benchmark_group("batch_16k");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("raw_crc32c", |b| {
        b.iter(|| mirrorlog_index::crc32c(black_box(&bytes[21..])))
    });
    g.bench_function("validate", |b| {
        b.iter(|| black_box(&batch).validate().unwrap())
    });
    g.bench_function("iterate_records", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for r in black_box(&batch).records().unwrap() {
                n += r.unwrap().value.map_or(0, |v| v.len());
            }
            n
        })
    });
    g.finish();
}

criterion_group!(benches, validate);
criterion_main!(benches);
