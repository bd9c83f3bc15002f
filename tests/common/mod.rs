//! Helpers for the end-to-end tests: start and stop `mirrorlog serve`, find the client tools
//! that scripts/test.sh installs.
#![allow(dead_code)]

pub mod java;
pub mod mirrors;
pub mod tmpfs;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `mirrorlog serve`.
pub struct Serve {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// The data directory.
    pub dir: PathBuf,
    /// What reads the broker's stderr to its end, when captured.
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// A free local port for a broker this test starts (bound then released; the broker binds it
/// next). Taken below Linux's ephemeral range (32768..61000), so no client's outgoing
/// connection takes it in between, and never twice in one test binary, whose tests run side by
/// side (the kernel's `:0` answer could hand two of them one port: a broker then failed with
/// "Address already in use").
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const FIRST: u32 = 20_000;
    const SPAN: u32 = 12_000;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    // Test binaries run one after another, each from its own place in the span.
    let start = std::process::id().wrapping_mul(7919) % SPAN;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FIRST + (start + n) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {FIRST}..{}", FIRST + SPAN);
}

impl Serve {
    /// Starts a broker on `dir` at `port` and waits until it listens.
    pub fn start(dir: &Path, port: u16) -> Serve {
        Serve::start_logging(dir, port, "warn")
    }

    /// As [`start`](Self::start), logging at `level` (`RUST_LOG`).
    pub fn start_logging(dir: &Path, port: u16, level: &str) -> Serve {
        Serve::start_with(dir, port, level, &[])
    }

    /// As [`start_logging`](Self::start_logging), with more `mirrorlog serve` arguments.
    pub fn start_with(dir: &Path, port: u16, level: &str, args: &[&str]) -> Serve {
        Serve::spawn(dir, port, level, args, false)
    }

    /// As [`start_logging`](Self::start_logging), keeping the broker's stderr (its log) for
    /// [`stop_reading_stderr`](Self::stop_reading_stderr).
    pub fn start_capturing_stderr(dir: &Path, port: u16, level: &str) -> Serve {
        Serve::spawn(dir, port, level, &[], true)
    }

    fn spawn(dir: &Path, port: u16, level: &str, args: &[&str], capture: bool) -> Serve {
        let addr = format!("127.0.0.1:{port}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
            .args(["serve", "--data-dir"])
            .arg(dir)
            .args(["--listen", &addr])
            .args(args)
            .env("RUST_LOG", level)
            .stdout(Stdio::piped())
            .stderr(if capture {
                Stdio::piped()
            } else {
                Stdio::inherit()
            })
            .spawn()
            .expect("start mirrorlog serve");
        let stderr = child.stderr.take().map(|mut from| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = std::io::Read::read_to_string(&mut from, &mut text);
                text
            })
        });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("listening on") {
                    let _ = tx.send(());
                }
            }
        });
        // A hang guard only; the broker normally listens within a second.
        rx.recv_timeout(Duration::from_secs(120))
            .expect("broker did not start listening");
        Serve {
            child: Some(child),
            addr,
            dir: dir.to_path_buf(),
            stderr,
        }
    }

    /// [`stop`](Self::stop), then the whole stderr of a broker started by
    /// [`start_capturing_stderr`](Self::start_capturing_stderr).
    pub fn stop_reading_stderr(&mut self) -> (Option<i32>, String) {
        let code = self.stop();
        let reader = self.stderr.take().expect("stderr was not captured");
        (code, reader.join().expect("stderr reader"))
    }

    /// SIGTERM and wait: a clean shutdown. Returns the exit status code.
    pub fn stop(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        // SAFETY: signalling our own child by pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            if let Some(s) = child.try_wait().unwrap() {
                return s.code();
            }
            assert!(
                Instant::now() < deadline,
                "broker did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL: a crash.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The client in `client`, connecting to `addr` first when there is none; `None` (after a
/// 50 ms pause) when the server does not answer, so a producer loop against a server that is
/// being killed and restarted retries on its next turn. Set `client` to `None` after a failed
/// request to reconnect.
pub fn reconnecting<'a>(
    client: &'a mut Option<mirrorlog_broker::client::Client>,
    addr: &str,
) -> Option<&'a mut mirrorlog_broker::client::Client> {
    if client.is_none() {
        match mirrorlog_broker::client::Client::connect(addr) {
            Ok(c) => *client = Some(c),
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(50));
                return None;
            }
        }
    }
    client.as_mut()
}

/// The Python with confluent-kafka that scripts/test.sh prepared (`MIRRORLOG_PYTHON`).
///
/// # Panics
/// `MIRRORLOG_PYTHON` is unset and `MIRRORLOG_SKIP_CLIENT_TESTS` is not: a client test must not
/// pass without running (the README's test command, `scripts/test.sh`, sets it up). With
/// `MIRRORLOG_SKIP_CLIENT_TESTS=1` the test is skipped knowingly, saying so.
pub fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MIRRORLOG_PYTHON") {
        return Some(PathBuf::from(p));
    }
    assert!(
        std::env::var_os("MIRRORLOG_SKIP_CLIENT_TESTS").is_some(),
        "MIRRORLOG_PYTHON is unset: run scripts/test.sh (it installs confluent-kafka in a venv \
         and sets it), or set MIRRORLOG_SKIP_CLIENT_TESTS=1 to skip the Python client tests"
    );
    eprintln!("skipped (MIRRORLOG_SKIP_CLIENT_TESTS): no MIRRORLOG_PYTHON");
    None
}

/// Runs `tests/clients/scenarios.py SUBCOMMAND ARGS…`, returns stdout; panics with stderr on
/// failure.
pub fn scenario(python: &Path, args: &[&str]) -> String {
    run_client_script(python, "scenarios.py", args, &[])
}

/// splitmix64: enough randomness for a crash schedule, reproducible from a printed seed.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A duration in `[lo, hi)` milliseconds.
    pub fn between_ms(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(lo + self.next() % (hi - lo))
    }
}

/// A numeric environment variable (panics on a non-number), or `None` when unset.
pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number"))
    })
}

/// The seed `var` names, or one drawn from the clock (print it, so a failure can be replayed).
pub fn seed_from_env(var: &str) -> u64 {
    env_u64(var).unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    })
}

/// Runs the client scenario script `tests/clients/{script}` with `program` (a Python or
/// `node`), `args` and the extra environment `env`; returns the last line of its stdout.
///
/// # Panics
/// The script fails (its stdout and stderr are in the message).
pub fn client_script(program: &Path, script: &str, args: &[&str], env: &[(&str, &Path)]) -> String {
    let stdout = run_client_script(program, script, args, env);
    stdout.trim().lines().last().unwrap_or_default().to_string()
}

/// As [`client_script`], returning the whole stdout.
fn run_client_script(program: &Path, script: &str, args: &[&str], env: &[(&str, &Path)]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    let mut cmd = Command::new(program);
    cmd.arg(path).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the client script");
    assert!(
        out.status.success(),
        "{script} {args:?} failed:\n--- stdout\n{}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs each of `phases` (`PHASE BOOTSTRAP`) with `run` against one broker, then stops it
/// cleanly.
pub fn phases_against_one_broker(run: impl Fn(&[&str]) -> String, phases: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let bs = broker.addr.clone();
    for phase in phases {
        run(&[phase, &bs]);
    }
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}

/// A client's consumer group of two across a broker restart: `group_phase1 BOOTSTRAP` (the
/// group rebalances when a member leaves and commits some of the records, printing
/// `{"committed_total": N}` last), the broker stopped and started again on the same directory
/// and port, then `group_phase2 BOOTSTRAP N` (a new member resumes from the commits).
pub fn group_resumes_after_a_restart(run: impl Fn(&[&str]) -> String, max_committed: i64) {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let out = run(&["group_phase1", &broker.addr]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let committed = v["committed_total"].as_i64().unwrap();
    assert!(
        committed > 0 && committed <= max_committed,
        "committed {committed}"
    );
    assert_eq!(broker.stop(), Some(0));
    let broker = Serve::start(dir.path(), port);
    run(&["group_phase2", &broker.addr, &committed.to_string()]);
}
