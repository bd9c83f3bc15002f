//! Scenario: a real short write. With `RLIMIT_FSIZE` set (and `SIGXFSZ` ignored) the kernel
//! writes up to the limit and returns a short count; the next write fails with `EFBIG`. Every
//! real backend must resubmit the remainder, then report `EFBIG` as a `write_at` error, having
//! written exactly the bytes below the limit; a durable batch must not report success.
//! (One scenario per file: the limit is process-wide.)

use std::sync::Arc;

use bytes::Bytes;
use mirrorlog_segment::io::{IoOp, OpenMode, PwriteStorage, Storage, UringConfig, UringStorage};

const LIMIT: u64 = 10_000;

fn backends() -> Vec<Arc<dyn Storage>> {
    let mut v: Vec<Arc<dyn Storage>> = vec![Arc::new(PwriteStorage::new())];
    if let Ok(u) = UringStorage::new() {
        v.push(Arc::new(u));
    }
    if let Ok(u) = UringStorage::with_config(UringConfig {
        rings: 1,
        ring_entries: 2,
    }) {
        v.push(Arc::new(u));
    }
    v
}

/// Set in the child process that runs the scenario.
const CHILD: &str = "MIRRORLOG_FSIZE_LIMIT_CHILD";
const NAME: &str = "a_write_crossing_the_file_size_limit_fails_with_efbig_after_writing_up_to_it";

#[test]
fn a_write_crossing_the_file_size_limit_fails_with_efbig_after_writing_up_to_it() {
    if std::env::var_os(CHILD).is_none() {
        // The limit applies to every file the process writes, the harness's own output
        // included when the suite's output goes to a file: the scenario runs in a child whose
        // output is a pipe.
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "the scenario failed (or did not run): {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    // SAFETY: plain libc calls; this child process runs only this test.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: LIMIT,
            rlim_max: libc::RLIM_INFINITY,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    for storage in backends() {
        for durable in [false, true] {
            for nbufs in [1usize, 3] {
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("f");
                let f = storage.open(&path, OpenMode::CreateNew).unwrap();
                let bufs: Vec<Bytes> = (0..nbufs)
                    .map(|i| Bytes::from(vec![i as u8 + 1; 12_000 / nbufs]))
                    .collect();
                let err = f
                    .write_all_at(&bufs, 0, durable)
                    .expect_err("a write past RLIMIT_FSIZE must fail");
                let what = format!("{} durable={durable} bufs={nbufs}", storage.name());
                assert_eq!(err.op, IoOp::WriteAt, "{what}: {err}");
                assert_eq!(
                    err.source.raw_os_error(),
                    Some(libc::EFBIG),
                    "{what}: {err}"
                );
                assert_eq!(f.len().unwrap(), LIMIT, "{what}");
            }
        }
    }
}
