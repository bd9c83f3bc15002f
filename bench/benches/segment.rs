//! Criterion micro benchmarks of the segment layer, each beside its raw baseline:
//!
//! - `segment_append_16k`: `ActiveSegment::append` of one ~16 KiB batch through the pwrite
//!   backend, beside `raw_pwrite` (std `write_all_at` of the same bytes into a plain file). Both
//!   append to one growing file across samples and roll to a fresh one every 64 MiB (creating
//!   and deleting files is not timed; the first touch of a new segment's indexes is).
//! - `offset_index_lookup`: `OffsetIndex::lookup` on a full 10 MiB index (1,310,720 entries) with
//!   pseudo-random targets, beside `vec_binary_search` over the same entries in a `Vec`.
//! - `find_batch`: `find_batch` (index lookup + header reads) on a sealed 64 MiB segment through
//!   the pwrite backend.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mirrorlog_bench::fixtures::{BatchRun, batch_run, batches_for};
use mirrorlog_index::{FilePosition, Offset, OffsetIndex};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::segment::{ActiveSegment, SealedSegment, SegmentConfig};
use std::fs::OpenOptions;
use std::hint::black_box;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Batches per file: ~64 MiB, then the next append goes to a fresh file.
const BATCHES_PER_FILE: usize = 4096;

/// A file being appended to across criterion's samples: the next batch index and the open file
/// (a segment or a plain file). Rolling to a fresh file (create, delete the old one) is not timed.
struct Appender<F> {
    root: PathBuf,
    next: usize,
    file: Option<F>,
}

impl<F> Appender<F> {
    fn new(root: &Path) -> Self {
        Appender {
            root: root.to_path_buf(),
            next: 0,
            file: None,
        }
    }

    /// Appends `iters` batches with `append(file, batch index)`, opening files with `open`;
    /// returns the time of the appends alone.
    fn run(
        &mut self,
        iters: u64,
        mut open: impl FnMut(&Path) -> F,
        mut append: impl FnMut(&mut F, usize),
    ) -> Duration {
        let mut total = Duration::ZERO;
        let mut left = iters as usize;
        while left > 0 {
            if self.file.is_none() || self.next == BATCHES_PER_FILE {
                let dir = self.root.join("current");
                self.file = None;
                if dir.exists() {
                    std::fs::remove_dir_all(&dir).unwrap();
                }
                std::fs::create_dir(&dir).unwrap();
                self.file = Some(open(&dir));
                self.next = 0;
            }
            let n = left.min(BATCHES_PER_FILE - self.next);
            let f = self.file.as_mut().expect("opened above");
            let t = Instant::now();
            for i in self.next..self.next + n {
                append(f, i);
            }
            total += t.elapsed();
            self.next += n;
            left -= n;
        }
        total
    }
}

fn segment_append(c: &mut Criterion) {
    let run: BatchRun = batch_run(Offset(0), BATCHES_PER_FILE);
    let root = tempfile::Builder::new()
        .prefix("mirrorlog-bench-criterion-")
        .tempdir()
        .unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut g = c.benchmark_group("segment_append_16k");
    g.throughput(Throughput::Bytes(run.batch_bytes as u64));
    let mut raw = Appender::new(&root.path().join("raw"));
    std::fs::create_dir(&raw.root).unwrap();
    g.bench_function("raw_pwrite", |b| {
        b.iter_custom(|iters| {
            raw.run(
                iters,
                |dir| {
                    OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create_new(true)
                        .open(dir.join("raw"))
                        .unwrap()
                },
                |f, i| {
                    f.write_all_at(&run.batch(i), (i * run.batch_bytes) as u64)
                        .unwrap()
                },
            )
        })
    });
    drop(raw);
    let mut seg = Appender::new(&root.path().join("segment"));
    std::fs::create_dir(&seg.root).unwrap();
    g.bench_function("pwrite_backend", |b| {
        b.iter_custom(|iters| {
            seg.run(
                iters,
                |dir| {
                    ActiveSegment::create(
                        storage.clone(),
                        dir,
                        Offset(0),
                        SegmentConfig::default(),
                        0,
                    )
                    .unwrap()
                },
                |s, i| s.append(run.batch(i)).unwrap(),
            )
        })
    });
    drop(seg);
    g.finish();
}

/// Deterministic pseudo-random targets in `0..end`.
fn targets(n: usize, end: i64) -> Vec<i64> {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % end as u64) as i64
        })
        .collect()
}

fn index_lookup(c: &mut Criterion) {
    let dir = tempfile::Builder::new()
        .prefix("mirrorlog-bench-criterion-")
        .tempdir()
        .unwrap();
    let mut index = OffsetIndex::open(
        dir.path().join("00000000000000000000.index"),
        Offset(0),
        10 << 20,
        true,
    )
    .unwrap();
    let n = index.max_entries();
    let mut entries: Vec<(i64, u32)> = Vec::with_capacity(n);
    for i in 0..n {
        let (offset, position) = (i as i64 * 16 + 15, i as u32 * 1024);
        index
            .append(Offset(offset), FilePosition(position))
            .unwrap();
        entries.push((offset, position));
    }
    let lookups = targets(1 << 16, n as i64 * 16 + 16);
    let mut g = c.benchmark_group("offset_index_lookup");
    g.throughput(Throughput::Elements(1));
    let mut k = 0usize;
    g.bench_function("vec_binary_search", |b| {
        b.iter(|| {
            k = (k + 1) & (lookups.len() - 1);
            let t = black_box(lookups[k]);
            match entries.partition_point(|e| e.0 <= t) {
                0 => (0, 0),
                i => entries[i - 1],
            }
        })
    });
    g.bench_function("offset_index", |b| {
        b.iter(|| {
            k = (k + 1) & (lookups.len() - 1);
            index.lookup(Offset(black_box(lookups[k])))
        })
    });
    g.finish();

    // find_batch on a sealed 64 MiB segment.
    let seg_dir = dir.path().join("segment");
    std::fs::create_dir(&seg_dir).unwrap();
    let run = batch_run(Offset(0), batches_for(64 << 20));
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let mut seg = ActiveSegment::create(
        storage.clone(),
        &seg_dir,
        Offset(0),
        SegmentConfig::default(),
        0,
    )
    .unwrap();
    for i in 0..run.chunks(64) {
        seg.append(run.chunk(i, 64)).unwrap();
    }
    drop(seg.seal().unwrap());
    let sealed =
        SealedSegment::open(storage, &seg_dir, Offset(0), SegmentConfig::default(), 0).unwrap();
    let finds = targets(1 << 16, run.next_offset().get());
    let mut g = c.benchmark_group("find_batch_64mib");
    g.throughput(Throughput::Elements(1));
    g.bench_function("pwrite_backend", |b| {
        b.iter(|| {
            k = (k + 1) & (finds.len() - 1);
            sealed.find_batch(Offset(black_box(finds[k]))).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, segment_append, index_lookup);
criterion_main!(benches);
