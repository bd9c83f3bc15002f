//! Scenario: requests a hostile or broken client sends — a 14-byte Metadata request declaring
//! i32::MAX topics (which makes the protocol decoder ask for ~154 GB), an oversized frame, a
//! truncated frame, garbage — each closes only its own connection; the broker keeps serving, and
//! the data already acknowledged is intact.

mod common;

use common::{Serve, free_port};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn closed_without_answer(mut s: TcpStream) {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut buf = [0u8; 4];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "the broker answered instead of closing");
}

fn api_versions_works(addr: &str) {
    let mut s = TcpStream::connect(addr).unwrap();
    // ApiVersions v0: api key 18, version 0, correlation 7, null client id, empty body.
    s.write_all(&[0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff])
        .unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    assert_eq!(&body[..4], &[0, 0, 0, 7], "correlation id echoed");
    assert_eq!(&body[4..6], &[0, 0], "error code NONE");
}

#[test]
fn hostile_frames_close_their_connection_and_the_broker_survives() {
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let addr = broker.addr.clone();
    api_versions_works(&addr);

    // Metadata v1 declaring i32::MAX topics in a 14-byte body.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&[
        0, 0, 0, 14, 0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff,
    ])
    .unwrap();
    closed_without_answer(s);
    api_versions_works(&addr);

    // A frame larger than socket.request.max.bytes (100 MiB).
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&[0x7f, 0xff, 0xff, 0xff, 0, 3]).unwrap();
    closed_without_answer(s);

    // A negative size.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0xfe]).unwrap();
    closed_without_answer(s);

    // An unknown API key.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&[0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff])
        .unwrap();
    closed_without_answer(s);

    // Garbage body for Produce v9.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&[0, 0, 0, 12, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0xde, 0xad])
        .unwrap();
    closed_without_answer(s);

    // A truncated frame, then the client goes away.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(&[0, 0, 1, 0, 0, 3, 0, 1]).unwrap();
    drop(s);

    api_versions_works(&addr);
    assert_eq!(broker.stop(), Some(0), "still shuts down cleanly");
}

/// The (api key, min version, max version) triples an ApiVersions v0 answer advertises.
fn advertised(addr: &str) -> Vec<(i16, i16, i16)> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&[0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff])
        .unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    let i16_at = |p: usize| i16::from_be_bytes([body[p], body[p + 1]]);
    let n = i32::from_be_bytes(body[6..10].try_into().unwrap()) as usize;
    (0..n)
        .map(|i| {
            let p = 10 + 6 * i;
            (i16_at(p), i16_at(p + 2), i16_at(p + 4))
        })
        .collect()
}

/// Sends one request frame (`key`, `version`, correlation id `corr`, `header_tail` after the
/// correlation id, then `body`) and returns whether the broker answered it (a frame with that
/// correlation id) rather than closing the connection. Anything else — a hang, a wrong
/// correlation id — fails the test.
fn answered_or_closed(
    addr: &str,
    key: i16,
    version: i16,
    corr: i32,
    header_tail: &[u8],
    body: &[u8],
) -> bool {
    let mut frame = vec![];
    frame.extend_from_slice(&key.to_be_bytes());
    frame.extend_from_slice(&version.to_be_bytes());
    frame.extend_from_slice(&corr.to_be_bytes());
    frame.extend_from_slice(header_tail);
    frame.extend_from_slice(body);
    let mut s = TcpStream::connect(addr).unwrap();
    // A hang guard only: the verdict is answered or closed, whenever it comes.
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut out = (frame.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&frame);
    if s.write_all(&out).is_err() {
        return false; // closed while we were still writing
    }
    let mut len = [0u8; 4];
    match s.read_exact(&mut len) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ) =>
        {
            return false;
        }
        Err(e) => panic!("api {key} v{version}: no answer and no close: {e}"),
    }
    let mut resp = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut resp).unwrap();
    assert_eq!(
        i32::from_be_bytes(resp[..4].try_into().unwrap()),
        corr,
        "api {key} v{version}: answer to another request"
    );
    true
}

/// Peak resident memory of a process, from /proc.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

#[test]
fn a_corpus_of_malformed_requests_for_every_api_and_version_is_answered_or_closed() {
    let dir = tempfile::tempdir().unwrap();
    // Every closed connection logs a warning: thousands here.
    let mut broker = Serve::start_logging(dir.path(), free_port(), "error");
    let addr = broker.addr.clone();
    let apis = advertised(&addr);
    assert!(apis.len() >= 28, "advertised {} APIs", apis.len());

    // Bodies: empty, short and long garbage, arrays and strings claiming i32::MAX elements in
    // both the classic (i32) and compact (unsigned varint) encodings, and all-0xff.
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut garbage = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect()
    };
    let bodies: Vec<Vec<u8>> = vec![
        vec![],
        garbage(3),
        garbage(64),
        garbage(4096),
        [0x7f, 0xff, 0xff, 0xff].repeat(16),
        [0xff, 0xff, 0xff, 0xff, 0x07].repeat(16),
        vec![0xff; 256],
    ];
    // Header tails: a null client id (header v1, non-flexible), and a client id plus an empty
    // tagged-field section (header v2, flexible).
    let tails: [&[u8]; 2] = [&[0xff, 0xff], &[0, 1, b'x', 0]];
    let (mut answered, mut closed) = (0, 0);
    let mut corr = 0;
    for &(key, min, max) in &apis {
        // Every advertised version, plus one below and one above the range.
        for version in (min - 1)..=(max + 1) {
            for tail in tails {
                for body in &bodies {
                    corr += 1;
                    if answered_or_closed(&addr, key, version, corr, tail, body) {
                        answered += 1;
                    } else {
                        closed += 1;
                    }
                }
            }
        }
    }
    eprintln!("{answered} answered, {closed} closed");
    assert!(closed > 0 && answered > 0);
    api_versions_works(&addr);
    // Nothing above sized an allocation from the wire: a fresh broker peaks far below this.
    let peak = peak_rss_kib(broker.pid().unwrap());
    assert!(peak < 512 * 1024, "peak RSS {peak} KiB after the corpus");
    assert_eq!(broker.stop(), Some(0), "still shuts down cleanly");
}
