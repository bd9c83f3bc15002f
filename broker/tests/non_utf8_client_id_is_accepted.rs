//! Kafka reads the request header's `client_id` with `new String(bytes, UTF_8)`, which replaces
//! invalid sequences: a client id that is not valid UTF-8 (e.g. Latin-1 "é", byte 0xE9) is
//! accepted. mirrorlog's header decoder (`kafka-protocol`'s `String`) rejects it, so every
//! request of such a client closes its connection — ApiVersions included.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use mirrorlog_broker::server::frame::{Decoded, decode_request};

#[test]
fn a_client_id_that_is_not_utf8_is_accepted() {
    // ApiVersions v0, header v1: key, version, correlation id, client id "caf\xe9"; empty body.
    let mut f = BytesMut::new();
    f.put_i16(ApiKey::ApiVersions as i16);
    f.put_i16(0);
    f.put_i32(7);
    f.put_i16(4);
    f.put_slice(b"caf\xe9");
    let supported = |k: ApiKey| (k == ApiKey::ApiVersions).then_some((0, 3));
    match decode_request(Bytes::from(f), &supported) {
        Ok(Decoded::Request { header, .. }) => assert_eq!(header.correlation_id, 7),
        Ok(other) => panic!("unexpected {other:?}"),
        Err(e) => panic!("refused: {e} ({:?})", std::error::Error::source(&e)),
    }
}
