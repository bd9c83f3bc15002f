//! Request frames in, response frames out: the socket-free half of the server, so that it can be
//! unit tested and fuzzed on its own.
//!
//! ```text
//! request  = int32 size | request header (v1, or v2 for flexible versions) | request body
//! response = int32 size | response header (v0, or v1 for flexible versions) | response body
//! ```
//!
//! What Apache Kafka does, and so what we do (`SocketServer`, `RequestContext`, `KafkaApis`,
//! `ApiVersionsRequest`):
//! - a size below zero or above `socket.request.max.bytes` closes the connection before the body
//!   is read (`InvalidReceiveException`);
//! - an unknown api key, a header that does not parse, or a body that does not parse closes the
//!   connection (`InvalidRequestException` → `processChannelException`);
//! - a version the broker does not support closes the connection, **except** for ApiVersions
//!   (`ApiKeys.isVersionEnabled` accepts any ApiVersions version): an ApiVersions request at an
//!   unsupported version is not parsed and is answered with an ApiVersionsResponse **v0** body
//!   carrying `UNSUPPORTED_VERSION` and the supported versions (KIP-511), so that a client that
//!   opens with a newer ApiVersions (kafka-python opens with v4) can retry with one we speak;
//! - an ApiVersions v3+ request whose `ClientSoftwareName` or `ClientSoftwareVersion` does not
//!   match `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?` is answered with `INVALID_REQUEST`
//!   at the request's version;
//! - an ApiVersions response always carries response header v0, whatever its version.

use crate::mirror_rpc::{CodecError, MirrorApiKey, MirrorRequest};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, FetchResponse, RequestHeader, RequestKind, ResponseHeader,
    ResponseKind,
};
use kafka_protocol::protocol::buf::ByteBufMut;
use kafka_protocol::protocol::{Decodable, Encodable};
use std::fmt;
use std::io::{self, Read};

/// Bytes of the `int32 size` that opens every frame.
pub const SIZE_PREFIX_BYTES: usize = 4;

/// The body buffer starts at this size and doubles up to the announced size, so that a peer that
/// announces a large request and sends little costs little memory.
const INITIAL_BODY_CAPACITY_BYTES: usize = 64 * 1024;

/// The error type that decoding and encoding failures carry as their source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a request frame could not be read off the connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadFrameError {
    /// The size prefix is negative.
    #[error("invalid request size {size}: negative")]
    NegativeSize {
        /// The announced size.
        size: i32,
    },
    /// The size prefix is above `socket.request.max.bytes`.
    #[error("invalid request size {size}: larger than socket.request.max.bytes ({max})")]
    TooLarge {
        /// The announced size.
        size: i32,
        /// The configured bound.
        max: usize,
    },
    /// The peer closed the connection inside the size prefix.
    #[error("connection closed after {received} of the 4 bytes of a request size")]
    TruncatedSize {
        /// Bytes of the prefix received.
        received: usize,
    },
    /// The peer closed the connection inside the body.
    #[error("connection closed after {received} of the {expected} bytes of a request")]
    TruncatedBody {
        /// The announced size.
        expected: usize,
        /// Bytes of the body received.
        received: usize,
    },
    /// The read failed.
    #[error("reading a request")]
    Io(#[from] io::Error),
}

/// Reads one request frame: the `int32 size` and then exactly that many bytes.
///
/// Returns `Ok(None)` when the peer closed the connection cleanly between frames. A size below
/// zero or above `request_max_bytes` is rejected before any of the body is read.
pub fn read_frame<R: Read>(
    r: &mut R,
    request_max_bytes: usize,
) -> Result<Option<Bytes>, ReadFrameError> {
    let mut size_bytes = [0u8; SIZE_PREFIX_BYTES];
    let mut received = 0;
    while received < SIZE_PREFIX_BYTES {
        match r.read(&mut size_bytes[received..]) {
            Ok(0) if received == 0 => return Ok(None),
            Ok(0) => return Err(ReadFrameError::TruncatedSize { received }),
            Ok(n) => received += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    let size = i32::from_be_bytes(size_bytes);
    let Ok(len) = usize::try_from(size) else {
        return Err(ReadFrameError::NegativeSize { size });
    };
    if len > request_max_bytes {
        return Err(ReadFrameError::TooLarge {
            size,
            max: request_max_bytes,
        });
    }
    let mut body: Vec<u8> = Vec::new();
    let mut filled = 0;
    while filled < len {
        if filled == body.len() {
            let next = len.min((body.len() * 2).max(INITIAL_BODY_CAPACITY_BYTES));
            body.reserve_exact(next - body.len());
            body.resize(next, 0);
        }
        match r.read(&mut body[filled..]) {
            Ok(0) => {
                return Err(ReadFrameError::TruncatedBody {
                    expected: len,
                    received: filled,
                });
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Some(Bytes::from(body)))
}

/// Why a request frame was refused: each one closes the connection, as in Kafka.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The frame cannot hold an api key and version.
    #[error("request of {len} bytes is too short for a request header")]
    TooShort {
        /// The frame's size.
        len: usize,
    },
    /// The api key is not one the codec knows.
    #[error("unknown api key {api_key} (version {api_version})")]
    UnknownApiKey {
        /// The raw api key.
        api_key: i16,
        /// The raw api version.
        api_version: i16,
    },
    /// The request header does not parse.
    #[error("malformed request header for {api_key:?} v{api_version}")]
    Header {
        /// The api key.
        api_key: ApiKey,
        /// The api version.
        api_version: i16,
        /// What the decoder said.
        #[source]
        source: BoxError,
    },
    /// The broker does not implement this version of the API (never raised for ApiVersions).
    #[error("{api_key:?} v{api_version} is not supported (supported: {})", VersionsDisplay(*supported))]
    UnsupportedVersion {
        /// The api key.
        api_key: ApiKey,
        /// The api version.
        api_version: i16,
        /// The request's correlation id.
        correlation_id: i32,
        /// What the handler supports, `None` if not the API at all.
        supported: Option<(i16, i16)>,
    },
    /// A mirror RPC (API keys 94–106, [`crate::mirror_rpc`]) the handler does not serve at this
    /// version (or at all).
    #[error("{api_key:?} (api key {}) v{api_version} is not supported (supported: {})", *api_key as i16, VersionsDisplay(*supported))]
    MirrorUnsupportedVersion {
        /// The api key.
        api_key: MirrorApiKey,
        /// The api version.
        api_version: i16,
        /// What the handler supports.
        supported: Option<(i16, i16)>,
    },
    /// A mirror RPC's request header v2 does not parse.
    #[error("malformed request header for {api_key:?} v{api_version}")]
    MirrorHeader {
        /// The api key.
        api_key: MirrorApiKey,
        /// The api version.
        api_version: i16,
        /// What the decoder said.
        #[source]
        source: BoxError,
    },
    /// A mirror RPC's body does not parse.
    #[error("malformed {api_key:?} v{api_version} request body (correlation id {correlation_id})")]
    MirrorBody {
        /// The api key.
        api_key: MirrorApiKey,
        /// The api version.
        api_version: i16,
        /// The request's correlation id.
        correlation_id: i32,
        /// Which field and byte, and why.
        #[source]
        source: CodecError,
    },
    /// The request body does not parse at its version.
    #[error("malformed {api_key:?} v{api_version} request body (correlation id {correlation_id})")]
    Body {
        /// The api key.
        api_key: ApiKey,
        /// The api version.
        api_version: i16,
        /// The request's correlation id.
        correlation_id: i32,
        /// What the decoder said.
        #[source]
        source: BoxError,
    },
}

struct VersionsDisplay(Option<(i16, i16)>);

impl fmt::Display for VersionsDisplay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some((min, max)) => write!(f, "{min}..={max}"),
            None => f.write_str("none"),
        }
    }
}

/// A response the server gives itself, without asking the handler (the KIP-511 ApiVersions
/// answers).
#[derive(Debug)]
pub struct Answer {
    /// The request's correlation id, echoed.
    pub correlation_id: i32,
    /// The API the response belongs to (decides the response header version).
    pub api_key: ApiKey,
    /// The version to encode the body at (0 for an `UNSUPPORTED_VERSION` answer).
    pub version: i16,
    /// The body.
    pub body: ResponseKind,
}

/// A request frame, decoded.
#[derive(Debug)]
pub enum Decoded {
    /// A request for the handler.
    Request {
        /// The decoded header.
        header: RequestHeader,
        /// The header's api key, typed.
        api_key: ApiKey,
        /// The decoded body.
        request: RequestKind,
    },
    /// An answer to send without involving the handler.
    Answer(Answer),
    /// A mirror RPC (API keys 94–106), decoded by [`crate::mirror_rpc`].
    Mirror {
        /// The decoded header (v2).
        header: RequestHeader,
        /// The api key.
        api_key: MirrorApiKey,
        /// The decoded body.
        request: MirrorRequest,
    },
}

/// Decodes one request frame (everything after the `int32 size`).
///
/// `supported` gives the versions of an API the broker implements (the handler's
/// `supported_versions`). May panic only if the codec does; the server runs it under
/// `catch_unwind`.
pub fn decode_request(
    frame: Bytes,
    supported: &dyn Fn(ApiKey) -> Option<(i16, i16)>,
) -> Result<Decoded, FrameError> {
    decode_request_with_mirror(frame, supported, &|_| None)
}

/// [`decode_request`], also for the mirror RPCs (API keys 94–106, which the `kafka-protocol`
/// crate does not know): `mirror_supported` gives the versions the handler serves. A mirror
/// request is parsed with request header v2 (every mirror RPC is flexible from v0) and its
/// body by [`MirrorRequest::decode`]; an unsupported version, a bad header or a bad body is a
/// [`FrameError`] (the connection closes, the reason logged), never a panic.
pub fn decode_request_with_mirror(
    mut frame: Bytes,
    supported: &dyn Fn(ApiKey) -> Option<(i16, i16)>,
    mirror_supported: &dyn Fn(MirrorApiKey) -> Option<(i16, i16)>,
) -> Result<Decoded, FrameError> {
    let len = frame.len();
    if len < 4 {
        return Err(FrameError::TooShort { len });
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let api_version = i16::from_be_bytes([frame[2], frame[3]]);
    if let Some(api_key) = MirrorApiKey::from_i16(raw_key) {
        let range = mirror_supported(api_key);
        let (lo, hi) = MirrorApiKey::VERSIONS;
        if !range.is_some_and(|(min, max)| {
            (min..=max).contains(&api_version) && (lo..=hi).contains(&api_version)
        }) {
            return Err(FrameError::MirrorUnsupportedVersion {
                api_key,
                api_version,
                supported: range,
            });
        }
        let header = decode_header(&mut frame, 2).map_err(|e| FrameError::MirrorHeader {
            api_key,
            api_version,
            source: e.into(),
        })?;
        let request =
            MirrorRequest::decode(api_key, &frame).map_err(|source| FrameError::MirrorBody {
                api_key,
                api_version,
                correlation_id: header.correlation_id,
                source,
            })?;
        return Ok(Decoded::Mirror {
            header,
            api_key,
            request,
        });
    }
    let Ok(api_key) = ApiKey::try_from(raw_key) else {
        return Err(FrameError::UnknownApiKey {
            api_key: raw_key,
            api_version,
        });
    };
    let header_version = api_key.request_header_version(api_version);
    let header = decode_header(&mut frame, header_version).map_err(|e| FrameError::Header {
        api_key,
        api_version,
        source: e.into(),
    })?;
    let correlation_id = header.correlation_id;
    let handler_range = supported(api_key);
    // The codec's range bounds what we can decode and encode, whatever the handler claims.
    let codec = api_key.valid_versions();
    let in_range = handler_range.is_some_and(|(min, max)| {
        (min..=max).contains(&api_version) && (codec.min..=codec.max).contains(&api_version)
    });

    if api_key == ApiKey::ApiVersions && !in_range {
        // Kafka does not parse the body of an ApiVersions request it does not support.
        return Ok(Decoded::Answer(Answer {
            correlation_id,
            api_key,
            version: 0,
            body: ResponseKind::ApiVersions(unsupported_version_response(supported)),
        }));
    }
    if !in_range {
        return Err(FrameError::UnsupportedVersion {
            api_key,
            api_version,
            correlation_id,
            supported: handler_range,
        });
    }
    let request =
        RequestKind::decode(api_key, &mut frame, api_version).map_err(|e| FrameError::Body {
            api_key,
            api_version,
            correlation_id,
            source: e.into(),
        })?;
    if let RequestKind::ApiVersions(r) = &request
        && api_version >= 3
        && !(is_valid_software_token(&r.client_software_name)
            && is_valid_software_token(&r.client_software_version))
    {
        return Ok(Decoded::Answer(Answer {
            correlation_id,
            api_key,
            version: api_version,
            body: ResponseKind::ApiVersions(
                ApiVersionsResponse::default()
                    .with_error_code(ResponseError::InvalidRequest.code()),
            ),
        }));
    }
    Ok(Decoded::Request {
        header,
        api_key,
        request,
    })
}

/// [`RequestHeader::decode`], but a `client_id` that is not valid UTF-8 is read as Kafka reads
/// it (`new String(bytes, UTF_8)`: invalid sequences become U+FFFD) instead of refused.
fn decode_header(frame: &mut Bytes, version: i16) -> anyhow::Result<RequestHeader> {
    let mut attempt = frame.clone();
    match RequestHeader::decode(&mut attempt, version) {
        Ok(h) => {
            *frame = attempt;
            Ok(h)
        }
        Err(e) => {
            // key, version, correlation id, then the client id's int16 length.
            let len = frame
                .get(8..10)
                .map(|b| i16::from_be_bytes([b[0], b[1]]))
                .unwrap_or(-1);
            let Some(raw) = usize::try_from(len)
                .ok()
                .and_then(|n| frame.get(10..10 + n))
            else {
                return Err(e);
            };
            if std::str::from_utf8(raw).is_ok() {
                return Err(e);
            }
            let lossy = String::from_utf8_lossy(raw);
            let Ok(lossy_len) = i16::try_from(lossy.len()) else {
                return Err(e);
            };
            let mut fixed = BytesMut::with_capacity(frame.len() + lossy.len());
            fixed.put_slice(&frame[..8]);
            fixed.put_i16(lossy_len);
            fixed.put_slice(lossy.as_bytes());
            fixed.put_slice(&frame[10 + raw.len()..]);
            let mut fixed = fixed.freeze();
            let h = RequestHeader::decode(&mut fixed, version)?;
            *frame = fixed;
            Ok(h)
        }
    }
}

/// The KIP-511 answer to an ApiVersions request at a version we do not support: error
/// `UNSUPPORTED_VERSION` and the versions of every API we implement (Kafka lists only
/// ApiVersions itself; clients read that entry and retry with its max, and the full list is a
/// superset they ignore).
pub fn unsupported_version_response(
    supported: &dyn Fn(ApiKey) -> Option<(i16, i16)>,
) -> ApiVersionsResponse {
    let api_keys = ApiKey::iter()
        .filter_map(|k| {
            supported(k).map(|(min, max)| {
                ApiVersion::default()
                    .with_api_key(k as i16)
                    .with_min_version(min)
                    .with_max_version(max)
            })
        })
        .collect();
    ApiVersionsResponse::default()
        .with_error_code(ResponseError::UnsupportedVersion.code())
        .with_api_keys(api_keys)
}

/// Kafka's `ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN`,
/// `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`, matched against the whole string.
pub fn is_valid_software_token(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
        }
        _ => false,
    }
}

/// Why a response could not be encoded (a handler bug: the connection is closed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The codec refused the header or body at this version.
    #[error("cannot encode the {api_key:?} v{version} response")]
    Codec {
        /// The api key.
        api_key: ApiKey,
        /// The response version.
        version: i16,
        /// What the encoder said.
        #[source]
        source: BoxError,
    },
    /// The response does not fit an `int32` size.
    #[error("{api_key:?} v{version} response of {len} bytes does not fit an int32 size")]
    TooLarge {
        /// The api key.
        api_key: ApiKey,
        /// The response version.
        version: i16,
        /// Header plus body bytes.
        len: usize,
    },
}

/// Encodes a whole response frame: `int32 size`, the response header at the version the API
/// needs (always v0 for ApiVersions), and the body at `version`.
pub fn encode_response(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    body: &ResponseKind,
) -> Result<Bytes, EncodeError> {
    let codec_err = |e: anyhow::Error| EncodeError::Codec {
        api_key,
        version,
        source: e.into(),
    };
    let mut buf = BytesMut::with_capacity(256);
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, api_key.response_header_version(version))
        .map_err(codec_err)?;
    body.encode(&mut buf, version).map_err(codec_err)?;
    let len = buf.len() - SIZE_PREFIX_BYTES;
    let size = i32::try_from(len).map_err(|_| EncodeError::TooLarge {
        api_key,
        version,
        len,
    })?;
    buf[..SIZE_PREFIX_BYTES].copy_from_slice(&size.to_be_bytes());
    Ok(buf.freeze())
}

/// [`encode_response`] of a Fetch response as pieces to send with one vectored write: the size
/// prefix, then the encoded fields, with the record bytes passed through as the [`Bytes`] the
/// handler read them into instead of copied into the frame (a fetch answer is mostly records,
/// and that copy was about a quarter of the source side of a mirror's catch-up). The bytes on
/// the wire are exactly [`encode_response`]'s.
///
/// # Errors
/// As [`encode_response`].
pub fn encode_fetch_response_pieces(
    correlation_id: i32,
    version: i16,
    body: &FetchResponse,
) -> Result<Vec<Bytes>, EncodeError> {
    let api_key = ApiKey::Fetch;
    let codec_err = |e: anyhow::Error| EncodeError::Codec {
        api_key,
        version,
        source: e.into(),
    };
    let records = body
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .filter_map(|p| p.records.clone())
        .filter(|r| r.len() >= PASS_THROUGH_MIN_BYTES)
        .collect();
    let mut buf = Pieces {
        done: vec![Bytes::new()],
        done_len: 0,
        current: BytesMut::with_capacity(256),
        pass_through: records,
        next: 0,
    };
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, api_key.response_header_version(version))
        .map_err(codec_err)?;
    body.encode(&mut buf, version).map_err(codec_err)?;
    let len = buf.done_len + buf.current.len();
    let size = i32::try_from(len).map_err(|_| EncodeError::TooLarge {
        api_key,
        version,
        len,
    })?;
    buf.done[0] = Bytes::copy_from_slice(&size.to_be_bytes());
    if !buf.current.is_empty() {
        buf.done.push(buf.current.freeze());
    }
    Ok(buf.done)
}

/// Record buffers shorter than this are copied into the frame like any field.
const PASS_THROUGH_MIN_BYTES: usize = 4096;

/// An encoding buffer that keeps some [`Bytes`] by reference: when the encoder puts a slice that
/// is exactly the next of `pass_through` (same address and length), the bytes so far are frozen
/// into a piece and that `Bytes` becomes the next piece. Everything else is copied into
/// `current`.
struct Pieces {
    /// Finished pieces; the first is the size prefix, filled in at the end.
    done: Vec<Bytes>,
    done_len: usize,
    current: BytesMut,
    /// In the order the encoder puts them.
    pass_through: Vec<Bytes>,
    next: usize,
}

// SAFETY: every method delegates to `current`, a `BytesMut`, which upholds `BufMut`'s contract
// (`chunk_mut` is its spare capacity, `advance_mut` moves over bytes written there); the
// overridden `put_slice` only appends, through `BytesMut::extend_from_slice`, or moves bytes
// into finished pieces.
unsafe impl BufMut for Pieces {
    fn remaining_mut(&self) -> usize {
        self.current.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller's promise (`cnt` bytes of `chunk_mut` initialised) is passed on.
        unsafe { self.current.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut bytes::buf::UninitSlice {
        self.current.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        if src.len() >= PASS_THROUGH_MIN_BYTES
            && let Some(i) = self.pass_through[self.next..]
                .iter()
                .position(|b| b.as_ptr() == src.as_ptr() && b.len() == src.len())
        {
            let b = self.pass_through[self.next + i].clone();
            self.next += i + 1;
            if !self.current.is_empty() {
                let head = self.current.split().freeze();
                self.done_len += head.len();
                self.done.push(head);
            }
            self.done_len += b.len();
            self.done.push(b);
            return;
        }
        self.current.extend_from_slice(src);
    }
}

impl ByteBufMut for Pieces {
    fn offset(&self) -> usize {
        self.done_len + self.current.len()
    }

    fn seek(&mut self, offset: usize) {
        let at = offset
            .checked_sub(self.done_len)
            .expect("no encoder seeks back over passed-through bytes");
        self.current.resize(at, 0);
    }

    fn range(&mut self, r: std::ops::Range<usize>) -> &mut [u8] {
        let (start, end) = (
            r.start
                .checked_sub(self.done_len)
                .expect("no encoder rewrites passed-through bytes"),
            r.end - self.done_len,
        );
        &mut self.current[start..end]
    }
}

/// Writes `pieces` whole, with vectored writes (at most 1024 pieces a call, Linux's `IOV_MAX`).
///
/// # Errors
/// The write's.
pub fn write_all_pieces(mut w: impl io::Write, pieces: &[Bytes]) -> io::Result<()> {
    let mut slices: Vec<io::IoSlice<'_>> = pieces
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| io::IoSlice::new(p))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        let n = rest.len().min(1024);
        match w.write_vectored(&rest[..n]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => io::IoSlice::advance_slices(&mut rest, written),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};
    use kafka_protocol::protocol::StrBytes;
    use mirrorlog_index::ErrorChain;

    /// A fetch answer with records of `sizes` bytes over two topics.
    fn fetch_answer(sizes: &[usize]) -> FetchResponse {
        use kafka_protocol::messages::TopicName;
        use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
        let mut r = FetchResponse::default();
        for (t, chunk) in sizes.chunks(2).enumerate() {
            let mut topic = FetchableTopicResponse::default();
            topic.topic = TopicName(StrBytes::from_string(format!("t{t}")));
            topic.topic_id = uuid::Uuid::from_bytes([t as u8 + 1; 16]);
            for (p, &n) in chunk.iter().enumerate() {
                let mut d = PartitionData::default();
                d.partition_index = p as i32;
                d.high_watermark = 1000 + n as i64;
                d.records = Some(Bytes::from(
                    (0..n).map(|i| (i * 7 + p) as u8).collect::<Vec<_>>(),
                ));
                topic.partitions.push(d);
            }
            r.responses.push(topic);
        }
        r
    }

    /// Takes at most `limit` bytes a call, vectored or not.
    struct Trickle(Vec<u8>, usize);

    impl io::Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.1);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn fetch_pieces_are_the_encoded_frame_with_large_records_passed_through() {
        let answer = fetch_answer(&[0, 10, 4096, 70_000, 100, 5000]);
        for version in [4, 11, 12, 13, 16] {
            let whole = encode_response(
                9,
                ApiKey::Fetch,
                version,
                &ResponseKind::Fetch(answer.clone()),
            )
            .unwrap();
            let pieces = encode_fetch_response_pieces(9, version, &answer).unwrap();
            assert_eq!(pieces.concat(), whole.to_vec(), "v{version}");
            // The three record buffers of 4096 bytes or more are pieces of their own.
            let passed = pieces
                .iter()
                .filter(|piece| {
                    answer
                        .responses
                        .iter()
                        .flat_map(|t| &t.partitions)
                        .any(|d| {
                            d.records.as_ref().is_some_and(|r| {
                                r.as_ptr() == piece.as_ptr() && r.len() == piece.len()
                            })
                        })
                })
                .count();
            assert_eq!(passed, 3, "v{version}");
            let mut out = Trickle(vec![], 4099);
            write_all_pieces(&mut out, &pieces).unwrap();
            assert_eq!(out.0, whole.to_vec(), "v{version} written in short writes");
        }
    }

    #[test]
    fn an_empty_fetch_answer_is_one_piece_after_the_size() {
        let answer = FetchResponse::default();
        let pieces = encode_fetch_response_pieces(1, 16, &answer).unwrap();
        let whole = encode_response(1, ApiKey::Fetch, 16, &ResponseKind::Fetch(answer)).unwrap();
        assert_eq!(pieces.len(), 2);
        assert_eq!(pieces.concat(), whole.to_vec());
    }

    fn supported(k: ApiKey) -> Option<(i16, i16)> {
        match k {
            ApiKey::ApiVersions => Some((0, 3)),
            ApiKey::Metadata => Some((0, 12)),
            _ => None,
        }
    }

    fn frame(api_key: ApiKey, version: i16, correlation_id: i32, body: &RequestKind) -> Bytes {
        let mut buf = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(api_key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("test")))
            .encode(&mut buf, api_key.request_header_version(version))
            .unwrap();
        body.encode(&mut buf, version).unwrap();
        buf.freeze()
    }

    fn api_versions(version: i16, name: &'static str) -> Bytes {
        let body = RequestKind::ApiVersions(
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str(name))
                .with_client_software_version(StrBytes::from_static_str("1.0")),
        );
        frame(ApiKey::ApiVersions, version, 7, &body)
    }

    fn prefixed(parts: &[&[u8]]) -> Vec<u8> {
        parts.concat()
    }

    #[test]
    fn read_frame_returns_none_on_clean_eof() {
        assert!(read_frame(&mut &[][..], 100).unwrap().is_none());
    }

    #[test]
    fn read_frame_reads_exactly_one_frame() {
        let data = prefixed(&[&3i32.to_be_bytes(), b"abc", &1i32.to_be_bytes(), b"d"]);
        let mut r = &data[..];
        assert_eq!(read_frame(&mut r, 100).unwrap().unwrap(), &b"abc"[..]);
        assert_eq!(read_frame(&mut r, 100).unwrap().unwrap(), &b"d"[..]);
        assert!(read_frame(&mut r, 100).unwrap().is_none());
    }

    #[test]
    fn read_frame_rejects_negative_and_oversized_sizes_before_the_body() {
        let neg = prefixed(&[&(-1i32).to_be_bytes(), b"xx"]);
        assert!(matches!(
            read_frame(&mut &neg[..], 100),
            Err(ReadFrameError::NegativeSize { size: -1 })
        ));
        let big = prefixed(&[&101i32.to_be_bytes()]);
        assert!(matches!(
            read_frame(&mut &big[..], 100),
            Err(ReadFrameError::TooLarge {
                size: 101,
                max: 100
            })
        ));
        let at_max = prefixed(&[&100i32.to_be_bytes(), &[0u8; 100]]);
        assert_eq!(
            read_frame(&mut &at_max[..], 100).unwrap().unwrap().len(),
            100
        );
    }

    #[test]
    fn read_frame_reports_truncation() {
        assert!(matches!(
            read_frame(&mut &[0u8, 0][..], 100),
            Err(ReadFrameError::TruncatedSize { received: 2 })
        ));
        let short = prefixed(&[&10i32.to_be_bytes(), b"abc"]);
        assert!(matches!(
            read_frame(&mut &short[..], 100),
            Err(ReadFrameError::TruncatedBody {
                expected: 10,
                received: 3
            })
        ));
    }

    #[test]
    fn read_frame_grows_the_buffer_past_its_initial_capacity() {
        let len = INITIAL_BODY_CAPACITY_BYTES * 3 + 5;
        let body: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let data = prefixed(&[&(len as i32).to_be_bytes(), &body]);
        assert_eq!(read_frame(&mut &data[..], len).unwrap().unwrap(), &body[..]);
    }

    #[test]
    fn supported_request_decodes_for_the_handler() {
        let body = RequestKind::Metadata(MetadataRequest::default());
        let Decoded::Request {
            header,
            api_key,
            request,
        } = decode_request(frame(ApiKey::Metadata, 12, 3, &body), &supported).unwrap()
        else {
            panic!("expected a request");
        };
        assert_eq!((api_key, header.correlation_id), (ApiKey::Metadata, 3));
        assert_eq!(header.client_id.as_deref(), Some("test"));
        assert!(matches!(request, RequestKind::Metadata(_)));
    }

    #[test]
    fn unsupported_version_of_other_apis_is_refused() {
        let body = RequestKind::Metadata(MetadataRequest::default());
        let err = decode_request(frame(ApiKey::Metadata, 13, 3, &body), &supported).unwrap_err();
        assert!(matches!(
            err,
            FrameError::UnsupportedVersion {
                api_version: 13,
                supported: Some((0, 12)),
                ..
            }
        ));
        // An API the handler does not implement at all.
        let body = RequestKind::Heartbeat(Default::default());
        let err = decode_request(frame(ApiKey::Heartbeat, 4, 3, &body), &supported).unwrap_err();
        assert!(matches!(
            err,
            FrameError::UnsupportedVersion {
                supported: None,
                ..
            }
        ));
    }

    #[test]
    fn unsupported_api_versions_is_answered_at_v0_with_the_supported_list() {
        let Decoded::Answer(a) = decode_request(api_versions(4, "x"), &supported).unwrap() else {
            panic!("expected an answer");
        };
        assert_eq!((a.correlation_id, a.version), (7, 0));
        let ResponseKind::ApiVersions(r) = &a.body else {
            panic!()
        };
        assert_eq!(r.error_code, 35);
        let keys: Vec<_> = r
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        assert_eq!(keys, vec![(3, 0, 12), (18, 0, 3)]);
    }

    #[test]
    fn api_versions_beyond_the_codec_is_answered_without_parsing_the_body() {
        // v9 with a body no version could parse: header v2, then garbage.
        let mut buf = BytesMut::new();
        RequestHeader::default()
            .with_request_api_key(18)
            .with_request_api_version(9)
            .with_correlation_id(11)
            .encode(&mut buf, 2)
            .unwrap();
        buf.put_slice(&[0xff; 9]);
        let Decoded::Answer(a) = decode_request(buf.freeze(), &|_| Some((0, 9))).unwrap() else {
            panic!("expected an answer");
        };
        assert_eq!((a.correlation_id, a.version), (11, 0));
    }

    #[test]
    fn api_versions_with_an_invalid_software_name_is_answered_invalid_request() {
        let Decoded::Answer(a) = decode_request(api_versions(3, "bad name"), &supported).unwrap()
        else {
            panic!("expected an answer");
        };
        assert_eq!(a.version, 3);
        let ResponseKind::ApiVersions(r) = &a.body else {
            panic!()
        };
        assert_eq!(r.error_code, 42);
        assert!(r.api_keys.is_empty());
    }

    #[test]
    fn api_versions_with_an_undecodable_body_is_refused() {
        let mut f = BytesMut::from(&api_versions(3, "ok")[..]);
        let len = f.len();
        f.truncate(len - 3);
        assert!(matches!(
            decode_request(f.freeze(), &supported),
            Err(FrameError::Body {
                api_key: ApiKey::ApiVersions,
                ..
            })
        ));
    }

    #[test]
    fn frames_that_cannot_be_parsed_are_refused() {
        assert!(matches!(
            decode_request(Bytes::from_static(&[0, 3, 0]), &supported),
            Err(FrameError::TooShort { len: 3 })
        ));
        assert!(matches!(
            decode_request(
                Bytes::from_static(&[0x27, 0x0f, 0, 0, 0, 0, 0, 1]),
                &supported
            ),
            Err(FrameError::UnknownApiKey {
                api_key: 9999,
                api_version: 0
            })
        ));
        assert!(matches!(
            decode_request(Bytes::from_static(&[0, 3, 0, 1, 0, 0]), &supported),
            Err(FrameError::Header {
                api_key: ApiKey::Metadata,
                ..
            })
        ));
    }

    fn mirror_supported(k: MirrorApiKey) -> Option<(i16, i16)> {
        (k != MirrorApiKey::BumpLeaderEpochs).then_some((0, 0))
    }

    fn mirror_frame(req: &MirrorRequest) -> Bytes {
        req.to_frame(21, "cli").slice(4..)
    }

    #[test]
    fn mirror_requests_decode_with_header_v2() {
        let req =
            MirrorRequest::DeleteClusterMirror(crate::mirror_rpc::DeleteClusterMirrorRequest {
                mirror_name: "m".into(),
                state_offset: -1,
            });
        let Decoded::Mirror {
            header,
            api_key,
            request,
        } = decode_request_with_mirror(mirror_frame(&req), &supported, &mirror_supported).unwrap()
        else {
            panic!("expected a mirror request");
        };
        assert_eq!(api_key, MirrorApiKey::DeleteClusterMirror);
        assert_eq!(header.correlation_id, 21);
        assert_eq!(header.client_id.as_deref(), Some("cli"));
        assert_eq!(request, req);
    }

    #[test]
    fn mirror_requests_the_handler_does_not_serve_are_refused() {
        let req = MirrorRequest::BumpLeaderEpochs(Default::default());
        assert!(matches!(
            decode_request_with_mirror(mirror_frame(&req), &supported, &mirror_supported),
            Err(FrameError::MirrorUnsupportedVersion {
                api_key: MirrorApiKey::BumpLeaderEpochs,
                supported: None,
                ..
            })
        ));
        // Without a mirror handler at all (`decode_request`), the same.
        let req = MirrorRequest::ListClusterMirrors(Default::default());
        assert!(matches!(
            decode_request(mirror_frame(&req), &supported),
            Err(FrameError::MirrorUnsupportedVersion { .. })
        ));
        // Version 1 does not exist.
        let mut f = BytesMut::from(&mirror_frame(&req)[..]);
        f[3] = 1;
        assert!(matches!(
            decode_request_with_mirror(f.freeze(), &supported, &mirror_supported),
            Err(FrameError::MirrorUnsupportedVersion { api_version: 1, .. })
        ));
    }

    #[test]
    fn api_key_97_is_unknown() {
        assert!(matches!(
            decode_request_with_mirror(
                Bytes::from_static(&[0, 97, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0]),
                &supported,
                &mirror_supported
            ),
            Err(FrameError::UnknownApiKey { api_key: 97, .. })
        ));
    }

    #[test]
    fn a_malformed_mirror_body_is_refused_naming_the_field() {
        let req =
            MirrorRequest::CreateClusterMirror(crate::mirror_rpc::CreateClusterMirrorRequest {
                mirror_name: "mirror".into(),
                configs: vec![],
            });
        let f = mirror_frame(&req);
        let cut = f.slice(..f.len() - 4);
        let err = decode_request_with_mirror(cut, &supported, &mirror_supported).unwrap_err();
        let FrameError::MirrorBody { source, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(source.field, "CreateClusterMirrorRequest.mirror_name");
        assert!(
            ErrorChain(&err)
                .to_string()
                .contains("announces 6 bytes but only 4 bytes remain"),
            "{}",
            ErrorChain(&err)
        );
    }

    #[test]
    fn software_token_matches_kafkas_pattern() {
        for ok in [
            "a",
            "9",
            "apache-kafka-java",
            "3.7.0",
            "librdkafka",
            "a.b-c1",
        ] {
            assert!(is_valid_software_token(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", ".", "a b", "a_b", "é", "a."] {
            assert!(!is_valid_software_token(bad), "{bad}");
        }
    }

    #[test]
    fn api_versions_responses_use_header_v0_at_every_version() {
        for v in 0..=4 {
            let body = ResponseKind::ApiVersions(ApiVersionsResponse::default());
            let bytes = encode_response(0x0102_0304, ApiKey::ApiVersions, v, &body).unwrap();
            let size = i32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize;
            assert_eq!(size, bytes.len() - 4);
            assert_eq!(&bytes[4..8], &[1, 2, 3, 4]);
            // Right after the correlation id comes the body's error code, no tagged fields.
            assert_eq!(&bytes[8..10], &[0, 0]);
        }
    }

    #[test]
    fn flexible_responses_carry_header_v1() {
        let body = ResponseKind::Metadata(Default::default());
        let bytes = encode_response(5, ApiKey::Metadata, 12, &body).unwrap();
        // correlation id, then an empty tagged-field section.
        assert_eq!(&bytes[4..9], &[0, 0, 0, 5, 0]);
        let bytes = encode_response(5, ApiKey::Metadata, 8, &body).unwrap();
        assert_eq!(&bytes[4..8], &[0, 0, 0, 5]);
    }

    #[test]
    fn error_chain_shows_every_source() {
        let e = FrameError::Body {
            api_key: ApiKey::Metadata,
            api_version: 1,
            correlation_id: 2,
            source: anyhow::anyhow!("inner").into(),
        };
        assert_eq!(
            ErrorChain(&e).to_string(),
            "malformed Metadata v1 request body (correlation id 2): inner"
        );
    }
}
