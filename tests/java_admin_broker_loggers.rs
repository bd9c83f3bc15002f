//! A running broker's log levels as Kafka's dynamic broker loggers (BROKER_LOGGER, KIP-412),
//! as `kafka-configs.sh --entity-type broker-loggers` reads and changes them: Kafka's Java
//! AdminClient (kafka-clients 4.3.0) describes `mirrorlog serve`'s loggers (root and each
//! crate's), is refused a bad level, an unknown logger, a DELETE of root and an APPEND with
//! Kafka's messages, sets `mirrorlog_broker` to DEBUG and deletes it again
//! (`AdminScenarios loggers`). The broker's stderr shows the listener's debug line for a
//! connection opened while the level is DEBUG, and for none opened before or after. Requests
//! naming another node go out by hand (the Admin client would wait for that node to appear):
//! INVALID_REQUEST with Kafka's message.

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

/// One request (header v1) on a new connection: the connection's local address and the
/// response body (after the correlation id).
fn call(addr: &str, api_key: i16, version: i16, body: &[u8]) -> (SocketAddr, Vec<u8>) {
    let mut frame = vec![];
    frame.extend_from_slice(&api_key.to_be_bytes());
    frame.extend_from_slice(&version.to_be_bytes());
    frame.extend_from_slice(&7i32.to_be_bytes());
    frame.extend_from_slice(&(-1i16).to_be_bytes());
    frame.extend_from_slice(body);
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.write_all(&(frame.len() as i32).to_be_bytes()).unwrap();
    conn.write_all(&frame).unwrap();
    let mut len = [0u8; 4];
    conn.read_exact(&mut len).unwrap();
    let mut resp = vec![0u8; i32::from_be_bytes(len) as usize];
    conn.read_exact(&mut resp).unwrap();
    assert_eq!(resp[..4], 7i32.to_be_bytes(), "correlation id");
    (conn.local_addr().unwrap(), resp.split_off(4))
}

/// A connection the broker certainly accepted (it answered ApiVersions on it): its local
/// address, which the listener's "connection opened" line names.
fn connection(addr: &str) -> String {
    call(addr, 18, 0, &[]).0.to_string()
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as i16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// The first result's (error code, message) of a DescribeConfigs v1 or IncrementalAlterConfigs
/// v0 response: both start throttle time, result count, error code, nullable message.
fn first_error(resp: &[u8]) -> (i16, String) {
    let code = i16::from_be_bytes([resp[8], resp[9]]);
    let len = i16::from_be_bytes([resp[10], resp[11]]);
    let message = if len < 0 {
        String::new()
    } else {
        String::from_utf8(resp[12..12 + len as usize].to_vec()).unwrap()
    };
    (code, message)
}

/// DescribeConfigs v1 of BROKER_LOGGER `name`.
fn describe_loggers(addr: &str, name: &str) -> (i16, String) {
    let mut body = 1i32.to_be_bytes().to_vec();
    body.push(8);
    string(&mut body, name);
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.push(0);
    first_error(&call(addr, 32, 1, &body).1)
}

/// IncrementalAlterConfigs v0 of BROKER_LOGGER `name`: SET `mirrorlog_broker` to DEBUG.
fn set_logger(addr: &str, name: &str) -> (i16, String) {
    let mut body = 1i32.to_be_bytes().to_vec();
    body.push(8);
    string(&mut body, name);
    body.extend_from_slice(&1i32.to_be_bytes());
    string(&mut body, "mirrorlog_broker");
    body.push(0);
    string(&mut body, "DEBUG");
    body.push(0);
    first_error(&call(addr, 44, 0, &body).1)
}

const INVALID_REQUEST: i16 = 42;

#[test]
fn the_java_admin_client_reads_and_changes_the_broker_loggers() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start_capturing_stderr(dir.path(), free_port(), "info");
    let addr = broker.addr.clone();
    let before = connection(&addr);

    let invalid = "InvalidConfigurationException: Cannot set the log level of mirrorlog_broker to";
    let levels = "as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, \
                  INFO, TRACE, WARN";
    assert_printed(
        &java.run(&["loggers", &addr, "set"]),
        &[
            (
                "before.root",
                "INFO DYNAMIC_BROKER_LOGGER_CONFIG default=false ro=false sensitive=false \
                 type=UNKNOWN doc=false synonyms=[]",
            ),
            (
                "before.mirrorlog_broker",
                "INFO DYNAMIC_BROKER_LOGGER_CONFIG default=false ro=false sensitive=false \
                 type=UNKNOWN doc=false synonyms=[]",
            ),
            ("before.mirrorlog_engine", "INFO"),
            ("set.bad_level", &format!("{invalid} VERBOSE {levels}")),
            ("set.lower_case", &format!("{invalid} debug {levels}")),
            (
                "set.unknown_logger",
                "InvalidConfigurationException: Logger kafka.server does not exist!",
            ),
            (
                "delete.root",
                "InvalidRequestException: Removing the log level of the root logger is not allowed",
            ),
            (
                "append",
                "InvalidRequestException: APPEND operation is not allowed for the BROKER_LOGGER \
                 resource",
            ),
            ("validate_only", "ok"),
            ("set", "ok"),
            ("after.set.root", "INFO"),
            ("after.set.mirrorlog_broker", "DEBUG"),
        ],
    );
    let during = connection(&addr);
    assert_eq!(
        describe_loggers(&addr, "2"),
        (
            INVALID_REQUEST,
            "Unexpected broker id, expected 1 but received 2".to_string()
        )
    );
    assert_eq!(
        describe_loggers(&addr, ""),
        (INVALID_REQUEST, "Broker id must not be empty".to_string())
    );
    assert_eq!(
        set_logger(&addr, "2"),
        (
            INVALID_REQUEST,
            "Unexpected node id. Expected 1, but received 2".to_string()
        )
    );
    assert_printed(
        &java.run(&["loggers", &addr, "delete"]),
        &[("delete", "ok"), ("after.delete.mirrorlog_broker", "INFO")],
    );
    let after = connection(&addr);

    let (code, log) = broker.stop_reading_stderr();
    assert_eq!(code, Some(0), "clean exit on SIGTERM");
    // The peer named whole: `127.0.0.1:4000` is not `127.0.0.1:40001`.
    let opened = |peer: &str| {
        log.lines().any(|l| {
            l.contains("connection opened")
                && l.match_indices(peer)
                    .any(|(at, _)| !l[at + peer.len()..].starts_with(|c: char| c.is_ascii_digit()))
        })
    };
    assert!(!opened(&before), "debug line before the SET:\n{log}");
    assert!(opened(&during), "no debug line while DEBUG:\n{log}");
    assert!(!opened(&after), "debug line after the DELETE:\n{log}");
    for line in [
        "Updated the log level of mirrorlog_broker to DEBUG",
        "Unset the log level of mirrorlog_broker",
    ] {
        assert!(log.contains(line), "{line}:\n{log}");
    }
}
