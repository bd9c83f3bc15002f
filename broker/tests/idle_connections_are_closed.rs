//! `connections.max.idle.ms`: a connection that sends nothing — or only part of a request — for
//! that long is closed, as Kafka's socket server closes idle channels, so silent connections
//! cannot hold every `max_connections` slot (and its threads) for ever.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::Encodable;
use mirrorlog_broker::server::{Handler, RequestContext, Server, ServerConfig};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

struct Versions;

impl Handler for Versions {
    fn handle(
        &self,
        _ctx: &RequestContext,
        _header: &RequestHeader,
        _request: RequestKind,
    ) -> Option<ResponseKind> {
        Some(ResponseKind::ApiVersions(ApiVersionsResponse::default()))
    }

    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)> {
        (api == ApiKey::ApiVersions).then_some((0, 3))
    }
}

fn api_versions_v0(correlation_id: i32) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(ApiKey::ApiVersions as i16)
        .with_request_api_version(0)
        .with_correlation_id(correlation_id)
        .encode(&mut buf, 1)
        .unwrap();
    RequestKind::ApiVersions(ApiVersionsRequest::default())
        .encode(&mut buf, 0)
        .unwrap();
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.to_vec()
}

/// Reads until the server closes the connection (the test's own bound is generous: it only
/// guards against a hang, the server's idle timeout is what closes it).
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn silent_and_half_sent_connections_are_closed_after_the_idle_timeout() {
    let server = Server::bind(
        ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            idle_timeout_ms: 300,
            ..ServerConfig::default()
        },
        Arc::new(Versions),
    )
    .unwrap();
    let addr = server.local_addr();
    let handle = server.shutdown_handle();
    let runner = std::thread::spawn(move || server.run());

    let mut silent = TcpStream::connect(addr).unwrap();
    let mut half = TcpStream::connect(addr).unwrap();
    half.write_all(&api_versions_v0(1)[..6]).unwrap();
    // A connection that sends a request is answered (and then, silent, closed as well).
    let mut busy = TcpStream::connect(addr).unwrap();
    busy.write_all(&api_versions_v0(2)).unwrap();
    let mut size = [0u8; 4];
    busy.read_exact(&mut size).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    busy.read_exact(&mut body).unwrap();

    assert!(
        closed_by_server(&mut silent),
        "a silent connection is closed"
    );
    assert!(closed_by_server(&mut half), "a half-sent request is closed");
    assert!(
        closed_by_server(&mut busy),
        "silent after its answer, closed too"
    );

    handle.shutdown();
    runner.join().unwrap().unwrap();
}

#[test]
fn an_idle_timeout_of_zero_is_refused() {
    let e = ServerConfig {
        idle_timeout_ms: 0,
        ..ServerConfig::default()
    }
    .validate()
    .unwrap_err();
    assert!(e.to_string().contains("connections.max.idle.ms"), "{e}");
}
