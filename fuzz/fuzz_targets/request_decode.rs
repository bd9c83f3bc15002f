//! Fuzzes everything the broker does with the bytes of an untrusted connection before a handler
//! sees them: frame reading (size prefix, bounds, truncation), request header decoding with the
//! header version the api key and version call for, the version checks, body decoding of every
//! API, and the KIP-511 ApiVersions answers, which must always encode.
//! No input may panic, hang or allocate without bound.
#![no_main]

use bytes::Bytes;
use kafka_protocol::messages::ApiKey;
use libfuzzer_sys::fuzz_target;
use mirrorlog_broker::server::frame::{Decoded, decode_request, encode_response, read_frame};

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

fn exercise(frame: Bytes) {
    if let Ok(Decoded::Answer(a)) = decode_request(frame, &supported) {
        encode_response(a.correlation_id, a.api_key, a.version, &a.body)
            .expect("a server-made answer always encodes");
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
