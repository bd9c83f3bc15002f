//! `fetch-send`: how a fetch should put segment bytes on the wire. The same file range goes over
//! one loopback TCP connection two ways, alternating, in the same run: `sendfile(2)` (zero copy)
//! and the broker's current path, `pread` into a buffer then `write` (one copy). The variant is
//! sendfile, the baseline pread+write: ratio > 1 means sendfile is faster. DESIGN.md §4 saw
//! sendfile slower than read+write on this machine's loopback; this keeps measuring it so the
//! broker's choice follows the numbers. Chunks of 1 MiB (a typical fetch response).

use crate::harness::{Opts, Report, alternate, scratch_dir};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

const CHUNK: usize = 1 << 20;

/// A loopback connection whose far end a thread drains; the thread returns the bytes read.
pub(crate) fn sink() -> std::io::Result<(TcpStream, std::thread::JoinHandle<u64>)> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let reader = std::thread::spawn(move || {
        let (mut s, _) = l.accept().expect("accept");
        let mut buf = vec![0u8; CHUNK];
        let mut n = 0u64;
        loop {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return n,
                Ok(k) => n += k as u64,
            }
        }
    });
    let s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    Ok((s, reader))
}

fn send_with_sendfile(file: &std::fs::File, len: u64) -> Duration {
    let (s, reader) = sink().expect("loopback");
    let t = Instant::now();
    let mut off: libc::off_t = 0;
    while (off as u64) < len {
        let want = CHUNK.min((len - off as u64) as usize);
        // SAFETY: both descriptors are open for the whole call; `off` is a valid pointer the
        // kernel advances by the bytes sent.
        let r = unsafe { libc::sendfile(s.as_raw_fd(), file.as_raw_fd(), &mut off, want) };
        assert!(
            r > 0,
            "sendfile failed: {}",
            std::io::Error::last_os_error()
        );
    }
    drop(s);
    let got = reader.join().expect("reader");
    let d = t.elapsed();
    assert_eq!(got, len);
    d
}

fn send_with_pread(file: &std::fs::File, len: u64, buf: &mut [u8]) -> Duration {
    let (mut s, reader) = sink().expect("loopback");
    let t = Instant::now();
    let mut off = 0u64;
    while off < len {
        let want = CHUNK.min((len - off) as usize);
        file.read_exact_at(&mut buf[..want], off).expect("pread");
        s.write_all(&buf[..want]).expect("write");
        off += want as u64;
    }
    drop(s);
    let got = reader.join().expect("reader");
    let d = t.elapsed();
    assert_eq!(got, len);
    d
}

/// Runs the scenario.
pub fn run(opts: Opts) -> Vec<Report> {
    let len: u64 = if opts.quick { 8 << 20 } else { 256 << 20 };
    let dir = scratch_dir("fetch-send", len + (64 << 20)).expect("scratch dir");
    let path = dir.path().join("segment.log");
    {
        let mut f = std::fs::File::create(&path).expect("create");
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut block = vec![0u8; CHUNK];
        for _ in 0..len / CHUNK as u64 {
            for b in block.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            f.write_all(&block).expect("write");
        }
    }
    let file = std::fs::File::open(&path).expect("open");
    let mut buf = vec![0u8; CHUNK];
    let rounds = if opts.quick { 3 } else { 9 };
    let (ours, base) = alternate(
        rounds,
        || send_with_sendfile(&file, len),
        || send_with_pread(&file, len, &mut buf),
    );
    vec![Report {
        scenario: "fetch-send",
        variant: "sendfile".into(),
        baseline: "pread+write",
        bytes: len,
        ours,
        base,
        extra: vec![("cache", serde_json::json!("warm"))],
    }]
}
