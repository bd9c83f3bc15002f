//! `connections.max.idle.ms` covers a peer that stops reading too: Kafka's selector sees no
//! activity on a channel whose response cannot be written and expires it like a silent one.
//! Here a client asks for a 32 MiB answer and reads none of it; the only connection slot
//! (`max_connections` 1) must come free, so that another client is served.

use crate::common;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ApiVersionsResponse, FetchRequest, FetchResponse, RequestHeader,
    RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::server::{Handler, RequestContext, Server, ServerConfig};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIG_ANSWER_BYTES: usize = 32 << 20;

/// Answers a Fetch with one partition of `BIG_ANSWER_BYTES` record bytes, ApiVersions plainly.
struct BigFetch;

impl Handler for BigFetch {
    fn handle(
        &self,
        _ctx: &RequestContext,
        _header: &RequestHeader,
        request: RequestKind,
    ) -> Option<ResponseKind> {
        Some(match request {
            RequestKind::Fetch(_) => {
                ResponseKind::Fetch(FetchResponse::default().with_responses(vec![
                    FetchableTopicResponse::default()
                        .with_topic(TopicName(StrBytes::from_static_str("t")))
                        .with_partitions(vec![
                            PartitionData::default()
                                .with_records(Some(Bytes::from(vec![0u8; BIG_ANSWER_BYTES]))),
                        ]),
                ]))
            }
            _ => ResponseKind::ApiVersions(ApiVersionsResponse::default()),
        })
    }

    fn supported_versions(&self, api: ApiKey) -> Option<(i16, i16)> {
        match api {
            ApiKey::ApiVersions => Some((0, 3)),
            ApiKey::Fetch => Some((4, 4)),
            _ => None,
        }
    }
}

/// Whether a new connection gets its ApiVersions answered (false: closed, or no answer within
/// 30 s; with the only slot held it waits in the listen backlog).
fn served(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect(addr) else {
        return false;
    };
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let request = common::wire::frame(ApiKey::ApiVersions, 0, 2, &ApiVersionsRequest::default());
    if s.write_all(&request).is_err() {
        return false;
    }
    let mut size = [0u8; 4];
    s.read_exact(&mut size).is_ok()
}

#[test]
fn a_peer_that_reads_none_of_its_answer_frees_its_slot_after_the_idle_timeout() {
    let server = Server::bind(
        ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            idle_timeout_ms: 300,
            max_connections: 1,
            ..ServerConfig::default()
        },
        Arc::new(BigFetch),
    )
    .unwrap();
    let addr = server.local_addr();
    let handle = server.shutdown_handle();
    let runner = std::thread::spawn(move || server.run());

    let mut stuck = TcpStream::connect(addr).unwrap();
    stuck
        .write_all(&common::wire::frame(
            ApiKey::Fetch,
            4,
            1,
            &FetchRequest::default(),
        ))
        .unwrap();
    // `stuck` reads nothing: its answer's write stops once the socket buffers are full.

    // The test's own bound is generous: it only guards against a hang.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut ok = served(addr);
    while !ok && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        ok = served(addr);
    }
    assert!(
        ok,
        "the connection reading nothing still holds the only slot"
    );

    // The unread connection was closed: reading on, it ends before its whole answer.
    stuck
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stuck.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("reading the unread connection: {e}"),
        }
    }
    assert!(got < BIG_ANSWER_BYTES, "got the whole answer: {got} bytes");

    drop(stuck);
    handle.shutdown();
    runner.join().unwrap().unwrap();
}
