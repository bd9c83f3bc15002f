//! Fuzzes everything the broker does with the bytes of an untrusted connection before a handler
//! sees them: frame reading (size prefix, bounds, truncation), request header decoding with the
//! header version the api key and version call for, the version checks, body decoding of every
//! API, and the KIP-511 ApiVersions answers, which must always encode. The mirror RPCs (keys
//! 94–106, decoded by `mirror_rpc`, not the protocol crate) go through the same door: a body
//! that decodes must encode back to a body that decodes to the same request.
//! No input may panic, hang or allocate without bound.
#![no_main]

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use libfuzzer_sys::fuzz_target;
use mirrorlog_broker::mirror_rpc::{MirrorApiKey, MirrorRequest};
use mirrorlog_broker::server::frame::{
    Decoded, decode_request_with_mirror, encode_response, read_frame,
};

/// As in the broker binary: the protocol decoder sizes arrays from the wire before checking, so
/// huge never-touched allocations must be address space only (see `mirrorlog_broker::alloc`).
#[global_allocator]
static ALLOCATOR: mirrorlog_broker::alloc::NoReserveForHuge =
    mirrorlog_broker::alloc::NoReserveForHuge;

/// Every API at every version the codec knows, except ApiVersions, which stops at 3 so that v4
/// takes the UNSUPPORTED_VERSION path.
fn supported(api: ApiKey) -> Option<(i16, i16)> {
    if api == ApiKey::ApiVersions {
        return Some((0, 3));
    }
    let range = api.valid_versions();
    Some((range.min, range.max))
}

/// Every mirror RPC, at the one version the codec has.
fn mirror_supported(_: MirrorApiKey) -> Option<(i16, i16)> {
    Some(MirrorApiKey::VERSIONS)
}

fn exercise(frame: Bytes) {
    match decode_request_with_mirror(frame, &supported, &mirror_supported) {
        Ok(Decoded::Answer(a)) => {
            encode_response(a.correlation_id, a.api_key, a.version, &a.body)
                .expect("a server-made answer always encodes");
        }
        Ok(Decoded::Mirror {
            api_key, request, ..
        }) => {
            let again = MirrorRequest::decode(api_key, &request.encode())
                .expect("an encoded mirror request decodes");
            assert_eq!(again, request);
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    // As one request frame, without its size prefix.
    exercise(Bytes::copy_from_slice(data));
    // As a connection's byte stream: frames until the bytes run out or one is refused.
    let mut stream = data;
    for _ in 0..64 {
        match read_frame(&mut stream, 1 << 20) {
            Ok(Some(frame)) => exercise(frame),
            _ => break,
        }
    }
});
