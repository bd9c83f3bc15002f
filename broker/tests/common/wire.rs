//! Any request sent over the wire to a running broker, one connection per request.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

/// One request frame: the size, the header (client id `wire-test`) and `r` as `key` `version`.
pub fn frame<Req: Encodable>(key: ApiKey, version: i16, correlation_id: i32, r: &Req) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(key as i16)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_static_str("wire-test")))
        .encode(&mut buf, key.request_header_version(version))
        .unwrap();
    r.encode(&mut buf, version).unwrap();
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.to_vec()
}

/// Sends `r` as `key` `version` on a new connection and decodes the whole answer.
pub fn call<Req: Encodable, Resp: Decodable>(
    addr: SocketAddr,
    key: ApiKey,
    version: i16,
    r: &Req,
) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(&frame(key, version, 1, r)).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    let mut body = Bytes::from(body);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).unwrap();
    assert_eq!(header.correlation_id, 1);
    let resp = Resp::decode(&mut body, version).unwrap();
    assert!(!body.has_remaining(), "the whole answer decoded");
    resp
}

/// CreateTopics v7 of one-partition topics named `names` (replication factor −1), with
/// `timeout_ms` and `validate_only`: each answered entry as `(name, error code)`.
pub fn create_topics(
    addr: SocketAddr,
    names: &[&str],
    timeout_ms: i32,
    validate_only: bool,
) -> Vec<(String, i16)> {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse, TopicName};
    let mut r = CreateTopicsRequest::default();
    r.timeout_ms = timeout_ms;
    r.validate_only = validate_only;
    r.topics = names
        .iter()
        .map(|n| {
            let mut t = CreatableTopic::default();
            t.name = TopicName(StrBytes::from_string(n.to_string()));
            t.num_partitions = 1;
            t.replication_factor = -1;
            t
        })
        .collect();
    let resp: CreateTopicsResponse = call(addr, ApiKey::CreateTopics, 7, &r);
    resp.topics
        .iter()
        .map(|t| (t.name.0.to_string(), t.error_code))
        .collect()
}
