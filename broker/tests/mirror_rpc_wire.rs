//! Scenario: the mirror RPCs over a real socket of a real broker — ApiVersions advertises the
//! keys it serves (and not 97, WriteMirrorStates or BumpLeaderEpochs), a well-formed request is
//! answered with response header v1, and a malformed body closes that connection only, while
//! the broker goes on serving others.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse, RequestHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
use mirrorlog_broker::client::Client;
use mirrorlog_broker::mirror_rpc::{
    CreateClusterMirrorRequest, ListClusterMirrorsRequest, MirrorApiKey, MirrorRequest,
    MirrorResponse,
};
use mirrorlog_broker::running::RunningBroker;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn read_frame(s: &mut TcpStream) -> Option<Bytes> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).ok()?;
    let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).ok()?;
    Some(Bytes::from(buf))
}

fn api_versions(s: &mut TcpStream) -> ApiVersionsResponse {
    let mut body = BytesMut::new();
    body.put_i32(0);
    RequestHeader::default()
        .with_request_api_key(ApiKey::ApiVersions as i16)
        .with_request_api_version(3)
        .with_correlation_id(1)
        .encode(&mut body, 2)
        .unwrap();
    ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("test"))
        .with_client_software_version(StrBytes::from_static_str("1"))
        .encode(&mut body, 3)
        .unwrap();
    let len = (body.len() - 4) as i32;
    body[..4].copy_from_slice(&len.to_be_bytes());
    s.write_all(&body).unwrap();
    let mut resp = read_frame(s).expect("an ApiVersions answer");
    let _correlation = bytes::Buf::get_i32(&mut resp);
    ApiVersionsResponse::decode(&mut resp, 3).unwrap()
}

#[test]
fn mirror_rpcs_are_advertised_answered_and_malformed_ones_close_only_their_connection() {
    let dir = tempfile::tempdir().unwrap();
    let b = RunningBroker::start_local(dir.path(), 1).unwrap();
    let addr = b.addr.to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();

    let advertised: Vec<(i16, i16, i16)> = api_versions(&mut s)
        .api_keys
        .iter()
        .filter(|k| k.api_key >= 93)
        .map(|k| (k.api_key, k.min_version, k.max_version))
        .collect();
    assert_eq!(
        advertised,
        [94, 95, 96, 98, 99, 100, 102, 103, 104, 106].map(|k| (k, 0, 0))
    );

    // Well-formed: answered, the connection stays usable.
    let mut c = Client::connect(&addr).unwrap();
    let list = MirrorRequest::ListClusterMirrors(ListClusterMirrorsRequest {
        include_topic_names: true,
    });
    match c.mirror_call(&list).unwrap() {
        MirrorResponse::ListClusterMirrors(r) => {
            assert_eq!(r.error_code, 0);
            assert!(r.mirrors.is_empty());
        }
        other => panic!("{other:?}"),
    }
    let create = MirrorRequest::CreateClusterMirror(CreateClusterMirrorRequest {
        mirror_name: "m".into(),
        configs: vec![],
    });
    match c.mirror_call(&create).unwrap() {
        MirrorResponse::CreateClusterMirror(r) => {
            assert_eq!(r.error_code, 40, "no bootstrap.servers: INVALID_CONFIG");
            assert!(r.error_message.unwrap().contains("bootstrap.servers"));
        }
        other => panic!("{other:?}"),
    }

    // Malformed: a Create body announcing a 2^31-element config array in a few bytes.
    let mut f = create.to_frame(5, "hostile").to_vec();
    let body_at = f.len() - 2; // configs [] (1 byte) and the tag section (1 byte)
    f.truncate(body_at);
    f.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x07, 0]);
    let len = (f.len() - 4) as i32;
    f[..4].copy_from_slice(&len.to_be_bytes());
    s.write_all(&f).unwrap();
    assert!(read_frame(&mut s).is_none(), "the connection must close");

    // A key the broker does not serve (BumpLeaderEpochs) also closes, without a panic.
    let mut s2 = TcpStream::connect(&addr).unwrap();
    s2.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let bump = MirrorRequest::BumpLeaderEpochs(Default::default());
    assert_eq!(bump.api_key(), MirrorApiKey::BumpLeaderEpochs);
    s2.write_all(&bump.to_frame(6, "x")).unwrap();
    assert!(read_frame(&mut s2).is_none());

    // Others are still served.
    assert!(matches!(
        c.mirror_call(&list).unwrap(),
        MirrorResponse::ListClusterMirrors(_)
    ));
    b.shutdown().unwrap();
}
