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
