//! `direct-append`: the direct-I/O append path ([`DirectStorage`]) beside two raw baselines
//! measured in the same interleaved rounds:
//!
//! - `raw_odirect_seq_qd16` (the ratio's baseline, fio-style): the same bytes, rounded up to
//!   16 KiB, written as 16 KiB `O_DIRECT` writes through io_uring at queue depth 16 into a file
//!   preallocated with `fallocate` (outside the timed part), then one `fdatasync`.
//! - `raw_odsync_16k`: one thread writing 16 KiB at a time with `O_DIRECT | O_DSYNC` into a
//!   preallocated file, each write's latency recorded: one durable device write.
//!   `baseline_p50_us` / `baseline_p99_us` are its percentiles; `odsync_mb_per_s` its
//!   throughput; `buffered_odsync_p99_us` the p99 of the same write without `O_DIRECT`
//!   (page cache + writeback + journal commit), for reference.
//!
//! Variants (each with its own [`DirectStorage`], 1 KiB records in ~16 KiB batches):
//!
//! - `segment-dsync`, `segment-fdatasync`: `ActiveSegment::append` of every batch, then one
//!   `flush`: streaming throughput of the appender with each durability mode.
//! - `segment-durable-dsync`, `segment-durable-fdatasync`: `append_durable` of every batch from
//!   one thread: each call returns once durable; `p50_us` / `p99_us` per call.
//! - `engine-D-writers-W-partitions-P` (`D` = `dsync` or `fdatasync`):
//!   `PartitionHandle::append_as_leader_durable` from `W` writer threads over `P` partitions of
//!   one `LogManager` with `log.io.mode=direct` — the writes and syncs of every partition go
//!   through one ring, each writer waiting for its own bytes; `p50_us` / `p99_us` per append.
//!   Shapes: `dsync` with W/P = 1/1, 8/1, 64/1, 64/8, 64/64 and `fdatasync` with 1/1, 64/1, 64/64;
//!   `--quick` runs `dsync` 1/1 and 8/8 and `fdatasync` 8/8, with 2 MiB preallocation steps.
//!
//! `ratio` is throughput ÷ the `O_DIRECT` sequential write's (target ≥ 0.8 for durable appends);
//! `p99_vs_baseline_p99` is `p99_us ÷ baseline_p99_us` (target ≤ 1.5). Data really reaches the
//! disk; each round's files are deleted afterwards. Segment/log creation is outside the timed
//! part, and so is the preallocation of a new segment file (done when it is created).

use crate::fixtures::{batch_16k, batch_run_in_epoch};
use crate::harness::{Opts, Report, interleave, percentile_us, round3, scratch_dir};
use crate::scenarios::append::EPOCH;
use crate::scenarios::durable_append::writers_round;
use crate::scenarios::segment_append::segment_round;
use anyhow::Result;
use io_uring::{IoUring, opcode, types};
use mirrorlog_engine::clock::{Clock, SystemClock};
use mirrorlog_engine::manager::{IoMode, LogManagerConfig};
use mirrorlog_index::Offset;
use mirrorlog_segment::Compression;
use mirrorlog_segment::io::{
    DirectConfig, DirectDurability, DirectStorage, PwriteStorage, Storage,
};
use serde_json::json;
use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SCENARIO: &str = "direct-append";
const BASELINE: &str = "raw_odirect_seq_qd16";
/// The raw baselines' write size and queue depth.
const RAW_WRITE: usize = 16 << 10;
const RAW_DEPTH: usize = 16;
/// (durability, writers, partitions) of the engine variants: every shape with the default
/// `dsync`, the extreme ones with `fdatasync` too, so the default is chosen by measurement.
const ENGINE: &[(DirectDurability, usize, usize)] = &[
    (DirectDurability::Dsync, 1, 1),
    (DirectDurability::Dsync, 8, 1),
    (DirectDurability::Dsync, 64, 1),
    (DirectDurability::Dsync, 64, 8),
    (DirectDurability::Dsync, 64, 64),
    (DirectDurability::Fdatasync, 1, 1),
    (DirectDurability::Fdatasync, 64, 1),
    (DirectDurability::Fdatasync, 64, 64),
];
/// The engine shapes of `--quick` (creating 64 partitions costs several syncs each).
const ENGINE_QUICK: &[(DirectDurability, usize, usize)] = &[
    (DirectDurability::Dsync, 1, 1),
    (DirectDurability::Dsync, 8, 8),
    (DirectDurability::Fdatasync, 8, 8),
];

/// A zeroed heap buffer aligned to 4 KiB, for `O_DIRECT`.
pub(crate) struct Aligned {
    ptr: *mut u8,
    len: usize,
}

impl Aligned {
    /// `bytes` copied into a buffer rounded up to a multiple of 16 KiB.
    pub(crate) fn copy_of(bytes: &[u8]) -> Aligned {
        let len = bytes.len().div_ceil(RAW_WRITE).max(1) * RAW_WRITE;
        let layout = Layout::from_size_align(len, 4096).expect("layout");
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        // SAFETY: `ptr` holds `len >= bytes.len()` bytes we own.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
        Aligned { ptr, len }
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` initialised bytes we own.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `copy_of` with this layout.
        unsafe {
            dealloc(
                self.ptr,
                Layout::from_size_align(self.len, 4096).expect("layout"),
            )
        }
    }
}

/// What the measured rounds of one closure saw.
#[derive(Default)]
struct Seen {
    latencies: Vec<Duration>,
    warm: bool,
}

impl Seen {
    fn record(&mut self, lat: Vec<Duration>) {
        if std::mem::replace(&mut self.warm, true) {
            self.latencies.extend(lat);
        }
    }
}

fn direct_storage(durability: DirectDurability, quick: bool) -> Result<Arc<dyn Storage>> {
    let mut config = DirectConfig {
        durability,
        ..DirectConfig::default()
    };
    if quick {
        // Quick rounds write ~1 MiB: a 64 MiB preallocation per segment would dominate them.
        config.preallocate_bytes = 2 << 20;
    }
    Ok(Arc::new(DirectStorage::new(
        Arc::new(PwriteStorage::new()),
        config,
    )?))
}

/// Runs the scenario.
pub fn run(opts: Opts) -> Result<Vec<Report>> {
    // A multiple of 64, so every writer count splits it evenly.
    let appends: usize = if opts.quick { 64 } else { 1024 };
    let rounds = if opts.quick { 2 } else { 5 };
    let run = batch_run_in_epoch(Offset(0), appends, EPOCH);
    let bytes = run.len_bytes();
    let aligned = Aligned::copy_of(&run.bytes);
    let template = batch_16k(Compression::None, 1024);
    let scratch = scratch_dir(SCENARIO, 8 * bytes + (256 << 20))?;
    let root = scratch.path();
    if !opts.quick {
        eprintln!(
            "{SCENARIO}: {appends} batches of {} bytes per round, {rounds} rounds",
            run.batch_bytes
        );
    }

    let mut base_seen = Seen::default();
    let mut base = || raw_direct_seq_round(&root.join("raw-seq"), &aligned, RAW_DEPTH);
    let mut odsync_seen = Seen::default();
    let mut odsync_time = Vec::new();
    let mut odsync = || {
        let mut lat = Vec::new();
        let d = raw_odsync_round(&root.join("raw-odsync"), &aligned, true, &mut lat);
        odsync_seen.record(lat);
        odsync_time.push(d);
        d
    };
    let mut buffered_seen = Seen::default();
    let mut buffered = || {
        let mut lat = Vec::new();
        let d = raw_odsync_round(&root.join("raw-dsync"), &aligned, false, &mut lat);
        buffered_seen.record(lat);
        d
    };
    let _ = &mut base_seen;

    struct Variant {
        name: String,
        durability: DirectDurability,
        kind: Kind,
    }
    #[derive(Clone, Copy)]
    enum Kind {
        Segment { durable: bool },
        Engine { writers: usize, partitions: usize },
    }
    let mut variants = Vec::new();
    for d in [DirectDurability::Dsync, DirectDurability::Fdatasync] {
        variants.push(Variant {
            name: format!("segment-{}", d.as_str()),
            durability: d,
            kind: Kind::Segment { durable: false },
        });
        variants.push(Variant {
            name: format!("segment-durable-{}", d.as_str()),
            durability: d,
            kind: Kind::Segment { durable: true },
        });
    }
    let engine = if opts.quick { ENGINE_QUICK } else { ENGINE };
    for &(durability, writers, partitions) in engine {
        variants.push(Variant {
            name: format!(
                "engine-{}-writers-{writers}-partitions-{partitions}",
                durability.as_str()
            ),
            durability,
            kind: Kind::Engine {
                writers,
                partitions,
            },
        });
    }
    let storages: Vec<Arc<dyn Storage>> = variants
        .iter()
        .map(|v| direct_storage(v.durability, opts.quick))
        .collect::<Result<_>>()?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut seen: Vec<Seen> = variants.iter().map(|_| Seen::default()).collect();
    let mut ours: Vec<Box<dyn FnMut() -> Duration + '_>> = Vec::new();
    for ((v, seen), storage) in variants.iter().zip(seen.iter_mut()).zip(&storages) {
        let dir = root.join(&v.name);
        let (run, template, clock) = (&run, &template, &clock);
        match v.kind {
            Kind::Segment { durable } => ours.push(Box::new(move || {
                let mut lat = Vec::new();
                let d = segment_round(storage, &dir, run, 1, durable, !durable, &mut lat);
                seen.record(lat);
                d
            })),
            Kind::Engine {
                writers,
                partitions,
            } => ours.push(Box::new(move || {
                let mut config = LogManagerConfig::new(&dir);
                config.io_mode = IoMode::Direct;
                let r = writers_round(
                    config, storage, clock, template, appends, writers, partitions,
                );
                seen.record(r.latencies);
                r.elapsed
            })),
        }
    }
    let mut all: Vec<&mut dyn FnMut() -> Duration> = vec![&mut base, &mut odsync, &mut buffered];
    for f in ours.iter_mut() {
        all.push(f.as_mut());
    }
    let medians = interleave(rounds, &mut all);
    drop(all);
    drop(ours);

    let odsync_median = crate::harness::median(odsync_time.clone());
    let base_p50 = percentile_us(&odsync_seen.latencies, 0.50);
    let base_p99 = percentile_us(&odsync_seen.latencies, 0.99);
    let buffered_p99 = percentile_us(&buffered_seen.latencies, 0.99);
    let odsync_mb_per_s = round3(aligned.len as f64 / odsync_median.as_secs_f64() / 1e6);
    Ok(variants
        .iter()
        .zip(&seen)
        .enumerate()
        .map(|(i, (v, s))| {
            let mut extra = vec![
                ("durability", json!(v.durability.as_str())),
                ("batch_bytes", json!(run.batch_bytes)),
                ("batches_per_round", json!(appends)),
                ("rounds", json!(rounds)),
                ("baseline_p50_us", json!(base_p50)),
                ("baseline_p99_us", json!(base_p99)),
                ("odsync_mb_per_s", json!(odsync_mb_per_s)),
                ("buffered_odsync_p99_us", json!(buffered_p99)),
            ];
            if let Kind::Engine {
                writers,
                partitions,
            } = v.kind
            {
                extra.push(("writers", json!(writers)));
                extra.push(("partitions", json!(partitions)));
            }
            if !s.latencies.is_empty() {
                let p99 = percentile_us(&s.latencies, 0.99);
                extra.push(("p50_us", json!(percentile_us(&s.latencies, 0.50))));
                extra.push(("p99_us", json!(p99)));
                extra.push(("p99_vs_baseline_p99", json!(round3(p99 / base_p99))));
            }
            Report {
                scenario: SCENARIO,
                variant: v.name.clone(),
                baseline: BASELINE,
                bytes,
                ours: medians[i + 3],
                base: medians[0],
                extra,
            }
        })
        .collect())
}

/// Opens `path` fresh with `O_DIRECT` (plus `extra` flags), preallocated to `len` bytes.
fn preallocated(path: &Path, len: usize, extra: i32) -> File {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(extra)
        .open(path)
        .expect("create the baseline file");
    // SAFETY: plain system call on a descriptor we own.
    let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, len as libc::off_t) };
    assert_eq!(rc, 0, "fallocate: {}", std::io::Error::last_os_error());
    f.sync_all().expect("fsync the preallocation");
    f
}

/// fio-style: 16 KiB `O_DIRECT` writes at queue depth `depth` through io_uring, then one
/// `fdatasync`. Preallocation is outside the timed part.
fn raw_direct_seq_round(path: &Path, data: &Aligned, depth: usize) -> Duration {
    let f = preallocated(path, data.len, libc::O_DIRECT);
    let mut ring = IoUring::new(64).expect("io_uring");
    let fd = types::Fd(f.as_raw_fd());
    let chunks = data.len / RAW_WRITE;
    let (mut next, mut done, mut in_flight) = (0usize, 0usize, 0usize);
    let t = Instant::now();
    while done < chunks {
        while in_flight < depth && next < chunks {
            let off = next * RAW_WRITE;
            // SAFETY: the pointer stays valid (`data` outlives the loop, which reaps every
            // completion).
            let ptr = unsafe { data.ptr.add(off) };
            let e = opcode::Write::new(fd, ptr, RAW_WRITE as u32)
                .offset(off as u64)
                .build()
                .user_data(next as u64);
            // SAFETY: as above.
            unsafe { ring.submission().push(&e) }.expect("room in the ring");
            next += 1;
            in_flight += 1;
        }
        ring.submit_and_wait(1).expect("submit");
        for c in ring.completion() {
            assert_eq!(c.result(), RAW_WRITE as i32, "direct write");
            done += 1;
            in_flight -= 1;
        }
    }
    f.sync_data().expect("fdatasync");
    let d = t.elapsed();
    drop(f);
    std::fs::remove_file(path).expect("remove the baseline file");
    d
}

/// One thread, 16 KiB `O_DSYNC` writes (with `O_DIRECT` when `direct`) at increasing positions
/// of a preallocated file; pushes each write's latency.
fn raw_odsync_round(
    path: &Path,
    data: &Aligned,
    direct: bool,
    lat: &mut Vec<Duration>,
) -> Duration {
    let flags = libc::O_DSYNC | if direct { libc::O_DIRECT } else { 0 };
    let f = preallocated(path, data.len, flags);
    let buf = data.as_slice();
    let t = Instant::now();
    for (i, chunk) in buf.chunks(RAW_WRITE).enumerate() {
        let t0 = Instant::now();
        f.write_all_at(chunk, (i * RAW_WRITE) as u64)
            .expect("write");
        lat.push(t0.elapsed());
    }
    let d = t.elapsed();
    drop(f);
    std::fs::remove_file(path).expect("remove the baseline file");
    d
}
