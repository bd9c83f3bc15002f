//! Graceful shutdown must not hang on a client that stops reading.
//!
//! `ShutdownHandle::shutdown` only shuts down the *read* half of each connection; a connection
//! thread blocked in `write_all` of a response the peer never reads (its receive window and our
//! send buffer full) is never woken, and `Server::run` waits for it forever. Kafka's socket
//! server closes every channel on shutdown; a stuck peer cannot keep the broker up.

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use mirrorlog_broker::server::{Handler, RequestContext, Server, ServerConfig};
use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// Answers ApiVersions with a ~1.2 MB response.
struct BigAnswers;

impl Handler for BigAnswers {
    fn handle(
        &self,
        _ctx: &RequestContext,
        _header: &RequestHeader,
        _request: RequestKind,
    ) -> Option<ResponseKind> {
        let keys = (0..200_000)
            .map(|_| ApiVersion::default().with_api_key(18).with_max_version(3))
            .collect();
        Some(ResponseKind::ApiVersions(
            ApiVersionsResponse::default().with_api_keys(keys),
        ))
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
        .with_client_id(Some(StrBytes::from_static_str("slow-reader")))
        .encode(&mut buf, 1)
        .unwrap();
    RequestKind::ApiVersions(ApiVersionsRequest::default())
        .encode(&mut buf, 0)
        .unwrap();
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.to_vec()
}

#[test]
fn shutdown_does_not_hang_on_a_client_that_does_not_read() {
    let server = Server::bind(
        ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ServerConfig::default()
        },
        Arc::new(BigAnswers),
    )
    .unwrap();
    let addr = server.local_addr();
    let handle = server.shutdown_handle();
    let (tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(server.run().map_err(|e| e.to_string()));
    });

    // ~48 MB of answers, none of them read: far more than the socket buffers hold.
    let mut s = TcpStream::connect(addr).unwrap();
    for i in 0..40 {
        s.write_all(&api_versions_v0(i)).unwrap();
    }
    // Give the server time to fill the buffers and block in its write.
    std::thread::sleep(Duration::from_secs(2));

    handle.shutdown();
    match done.recv_timeout(Duration::from_secs(20)) {
        Ok(r) => r.unwrap(),
        Err(_) => panic!("Server::run did not return within 20 s of shutdown"),
    }
    drop(s);
}
