//! The measuring loop every scenario shares: run ours and the baseline alternately, several
//! rounds, take medians, print one JSON line (or a human line) per variant.

use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Command-line options every scenario takes.
#[derive(Debug, Clone, Copy)]
pub struct Opts {
    /// Small sizes, so the scenario runs in seconds (tests and CI).
    pub quick: bool,
    /// One JSON object per line.
    pub json: bool,
}

/// One variant's result.
#[derive(Debug, Clone)]
pub struct Report {
    /// Scenario name (`segment-append`, …).
    pub scenario: &'static str,
    /// Variant (`io_uring`, `pwrite`, …).
    pub variant: String,
    /// What the baseline was.
    pub baseline: &'static str,
    /// Bytes processed per round.
    pub bytes: u64,
    /// Median round time of ours.
    pub ours: Duration,
    /// Median round time of the baseline.
    pub base: Duration,
    /// Extra fields (latency percentiles, ns/op, …).
    pub extra: Vec<(&'static str, Value)>,
}

impl Report {
    /// MB/s (10^6 bytes) of ours.
    pub fn mb_per_s(&self) -> f64 {
        mb_per_s(self.bytes, self.ours)
    }
    /// MB/s of the baseline.
    pub fn baseline_mb_per_s(&self) -> f64 {
        mb_per_s(self.bytes, self.base)
    }
    /// ours ÷ baseline throughput: higher is better.
    pub fn ratio(&self) -> f64 {
        self.base.as_secs_f64() / self.ours.as_secs_f64().max(1e-12)
    }

    /// The JSON object of DESIGN.md §6.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "scenario": self.scenario,
            "variant": self.variant,
            "mb_per_s": round3(self.mb_per_s()),
            "baseline": self.baseline,
            "baseline_mb_per_s": round3(self.baseline_mb_per_s()),
            "ratio": round_ratio(self.ratio()),
        });
        let obj = v.as_object_mut().expect("object");
        for (k, x) in &self.extra {
            obj.insert((*k).to_string(), x.clone());
        }
        v
    }

    /// Prints the report as JSON or as a line for humans.
    pub fn print(&self, opts: Opts) {
        if opts.json {
            println!("{}", self.to_json());
        } else {
            println!(
                "{:<16} {:<24} {:>10.1} MB/s   baseline {:<22} {:>10.1} MB/s   ratio {:.3}",
                self.scenario,
                self.variant,
                self.mb_per_s(),
                self.baseline,
                self.baseline_mb_per_s(),
                self.ratio()
            );
        }
    }
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64().max(1e-12) / 1e6
}

/// Rounds to 3 decimals for stable JSON.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Rounds a ratio for JSON: 3 decimals, or 4 significant digits when that keeps more. The gate
/// compares ratios relatively, so a ratio far below 1 (0.002) must not lose most of its
/// precision to an absolute 0.001 quantum.
pub fn round_ratio(x: f64) -> f64 {
    if !x.is_finite() || x == 0.0 {
        return x;
    }
    let decimals = (3 - x.abs().log10().floor() as i32).clamp(3, 15);
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// The median of some durations.
pub fn median(mut v: Vec<Duration>) -> Duration {
    assert!(!v.is_empty(), "median of nothing");
    v.sort();
    v[v.len() / 2]
}

/// Runs `ours` and `base` alternately `rounds` times (after one warm-up each) and returns the
/// median durations. Each closure does one round and returns how long its measured part took.
pub fn alternate(
    rounds: usize,
    mut ours: impl FnMut() -> Duration,
    mut base: impl FnMut() -> Duration,
) -> (Duration, Duration) {
    ours();
    base();
    let mut o = Vec::with_capacity(rounds);
    let mut b = Vec::with_capacity(rounds);
    for i in 0..rounds {
        // Alternate which goes first, so neither always runs on a warmer cache.
        if i % 2 == 0 {
            o.push(ours());
            b.push(base());
        } else {
            b.push(base());
            o.push(ours());
        }
    }
    (median(o), median(b))
}

/// Times `f`.
pub fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

/// Set this environment variable to have [`interleave`] print every round's time of every
/// closure (by index) to stderr: to see the spread behind a median.
pub const VERBOSE_ENV: &str = "MIRRORLOG_BENCH_VERBOSE";

/// Runs every closure once as a warm-up, then `rounds` rounds in which each runs once — in a
/// fresh (deterministic) shuffled order each round, so none always runs first or right after the
/// same neighbour, whose leftovers (freed pages, kernel workers) it would otherwise always
/// inherit — and returns each closure's median, in the order given. Several variants and their
/// baselines measured in the same rounds see the same machine conditions.
pub fn interleave(rounds: usize, fs: &mut [&mut dyn FnMut() -> Duration]) -> Vec<Duration> {
    let n = fs.len();
    let verbose = std::env::var_os(VERBOSE_ENV).is_some();
    for (i, f) in fs.iter_mut().enumerate() {
        let d = f();
        if verbose {
            eprintln!("warm-up: closure {i}: {:.3} ms", d.as_secs_f64() * 1e3);
        }
    }
    let mut times: Vec<Vec<Duration>> = (0..n).map(|_| Vec::with_capacity(rounds)).collect();
    let mut order: Vec<usize> = (0..n).collect();
    let mut x: u64 = 0x853c_49e6_748f_ea9b;
    for _ in 0..rounds {
        // Fisher–Yates with xorshift64.
        for k in (1..n).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(k, (x % (k as u64 + 1)) as usize);
        }
        for &i in &order {
            let d = fs[i]();
            if verbose {
                eprintln!("round: closure {i}: {:.3} ms", d.as_secs_f64() * 1e3);
            }
            times[i].push(d);
        }
    }
    times.into_iter().map(median).collect()
}

/// [`interleave`] for one baseline against several variants of ours: the baseline's median and
/// each variant's, in order.
pub fn interleave_against<'a>(
    rounds: usize,
    base: &mut dyn FnMut() -> Duration,
    ours: &mut [Box<dyn FnMut() -> Duration + 'a>],
) -> (Duration, Vec<Duration>) {
    let mut all: Vec<&mut dyn FnMut() -> Duration> = vec![base];
    for f in ours.iter_mut() {
        all.push(f.as_mut());
    }
    let mut medians = interleave(rounds, &mut all);
    let base = medians.remove(0);
    (base, medians)
}

/// The `p`-th percentile (0.0 ..= 1.0, nearest rank) of some durations, in microseconds.
pub fn percentile_us(v: &[Duration], p: f64) -> f64 {
    assert!(!v.is_empty(), "percentile of nothing");
    let mut v = v.to_vec();
    v.sort();
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    round3(v[rank - 1].as_secs_f64() * 1e6)
}

/// A fresh directory under the system temp dir (removed with everything in it when the returned
/// guard drops, also on panic), after checking that its file system has `need_bytes` free plus
/// a 2 GiB margin: a benchmark must never fill the disk.
pub fn scratch_dir(name: &str, need_bytes: u64) -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("mirrorlog-bench-{name}-"))
        .tempdir()?;
    let free = free_bytes(dir.path())?;
    let want = need_bytes + (2 << 30);
    anyhow::ensure!(
        free >= want,
        "{}: {} MiB free, the benchmark needs {} MiB (with a 2 GiB margin)",
        dir.path().display(),
        free >> 20,
        want >> 20
    );
    Ok(dir)
}

/// Creates the file `path` (read-write; it must not exist): a baseline's fresh file.
///
/// # Panics
/// When the file exists or cannot be created (a benchmark has nothing to fall back to).
pub fn create_file(path: &std::path::Path) -> std::fs::File {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
        .unwrap_or_else(|e| panic!("create {}: {e}", path.display()))
}

/// Bytes available to an unprivileged user on the file system holding `path`.
pub fn free_bytes(path: &std::path::Path) -> anyhow::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: `statvfs` is plain old data, so all-zero is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid, exclusively borrowed out-parameter.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}
