//! The KIP-1279 mirror RPCs on the wire (API keys 94–106), **written by hand**: the
//! `kafka-protocol` crate (0.18) stops at API key 92 and has none of them, so this module reads
//! and writes their bodies itself, with the flexible-version rules of the Kafka protocol
//! ([`wire`]). Everything is version 0 and flexible (request header v2, response header v1,
//! compact strings and arrays, tagged fields), as in the prototype's JSON
//! (`showuon/kafka:clients/src/main/resources/common/message/*.json`, spec §4).
//!
//! # API keys
//!
//! | key | API | request / response | served here |
//! |---|---|---|---|
//! | 94 | CreateClusterMirror | [`CreateClusterMirrorRequest`] / [`MirrorErrorResponse`] | yes |
//! | 95 | StartMirrorTopics | [`StartMirrorTopicsRequest`] / [`MirrorTopicsResponse`] | yes |
//! | 96 | StopMirrorTopics | [`MirrorTopicsRequest`] / [`MirrorTopicsResponse`] | yes |
//! | 97 | — | — | no: the prototype uses 97 for different RPCs in different versions (ReadMirrorOffsets, an older ListMirrors); we assign nothing to it, so a request with key 97 is an unknown API and closes the connection |
//! | 98 | ListClusterMirrors | [`ListClusterMirrorsRequest`] / [`ListClusterMirrorsResponse`] | yes |
//! | 99 | DescribeClusterMirrors | [`DescribeClusterMirrorsRequest`] / [`DescribeClusterMirrorsResponse`] | yes |
//! | 100 | ReadMirrorStates | [`ReadMirrorStatesRequest`] / [`ReadMirrorStatesResponse`] | yes (from `__mirror_state`) |
//! | 101 | WriteMirrorStates | [`WriteMirrorStatesRequest`] / [`PartitionResultsResponse`] | codec only: a single broker is its own coordinator and never takes states from outside; not advertised |
//! | 102 | PauseMirrorTopics | [`MirrorTopicsRequest`] / [`MirrorTopicsResponse`] | yes |
//! | 103 | ResumeMirrorTopics | [`MirrorTopicsRequest`] / [`MirrorTopicsResponse`] | yes |
//! | 104 | DeleteClusterMirror | [`DeleteClusterMirrorRequest`] / [`MirrorErrorResponse`] | yes |
//! | 105 | BumpLeaderEpochs | [`BumpLeaderEpochsRequest`] / [`PartitionResultsResponse`] | codec only: a controller RPC (spec §4: newest listener is the controller); not advertised |
//! | 106 | RecoverMirrorTopics | [`MirrorTopicsRequest`] / [`MirrorTopicsResponse`] | yes. The prototype has both RecoverMirrorTopics and ReadMirrorOffsets at 106; we pick RecoverMirrorTopics, the one the CLI's `--recover` needs |
//!
//! # Byte layouts
//!
//! Types: `i8/i16/i32/i64` big-endian; `uvarint` unsigned LEB128 (≤ 5 bytes); `string` =
//! `uvarint (len+1)` + UTF-8 (0 = null, refused where not nullable); `string?` the same, null
//! allowed; `[T]` = `uvarint (n+1)` + n × T (0 = null, refused where not nullable); `[T]?` null
//! allowed; `uuid` 16 bytes; `tags` = `uvarint count` then, in increasing tag order,
//! `uvarint tag, uvarint size, size bytes`. Every struct, nested ones included, ends with its
//! own `tags`. A tagged field is written only when it is not its default (empty, null).
//!
//! ```text
//! ConfigEntry            = name string, value string?, tags
//! 94  request            = mirror_name string, configs [ConfigEntry], tags
//! 94, 104 response       = throttle_time_ms i32, error_code i16, error_message string?, tags
//! StartTopic             = name string, topic_id uuid, num_partitions i32, tags
//! 95  request            = mirror_name string, topics [StartTopic], include_patterns [string],
//!                          timeout_ms i32, tags{0: exclude_patterns [string]}
//! TopicName              = name string, tags
//! 96, 102, 103, 106 req  = mirror_name string, topics [TopicName], state_offset i64,
//!                          tags{0: patterns [string]}
//! TopicResult            = name string, error_code i16, error_message string?, tags
//! 95, 96, 102, 103, 106 response
//!                        = throttle_time_ms i32, error_code i16, error_message string?,
//!                          topics [TopicResult], tags
//! 98  request            = include_topic_names bool (1 byte, 0 or 1), tags
//! MirrorListing          = mirror_name string, source_cluster_id string?, source_bootstrap
//!                          string, topic_names [string], tags
//! 98  response           = throttle_time_ms i32, error_code i16, mirrors [MirrorListing], tags
//! LastMirrorEpochLookup  = topic_id uuid, partitions [i32], tags
//! 99  request            = mirror_names [string]? (null = all), include_authorized_operations
//!                          bool, tags{0: cluster_id string?, 1: last_mirror_epoch_lookups
//!                          [LastMirrorEpochLookup]}
//! PartitionDescription   = partition_index i32, state_value string, error_message string?,
//!                          retry_attempt i16, source_offset i64, destination_offset i64,
//!                          last_mirror_epoch i32, last_mirror_offset i64,
//!                          tags{0: open_transactions [OpenTransaction]}
//! OpenTransaction        = producer_id i64, producer_epoch i16, first_offset i64, tags
//! TopicDescription       = topic_name string, partitions [PartitionDescription], tags
//! MirrorDescription      = error_code i16, error_message string?, mirror_name string,
//!                          source_bootstrap string, source_cluster_id string?,
//!                          authorized_operations i32, topics [TopicDescription],
//!                          tags{0: configs [ConfigEntry]}
//! LastMirrorEpochPartition = partition_index i32, error_code i16, last_mirror_epoch i32,
//!                          last_mirror_offset i64, tags
//! LastMirrorEpochTopic   = topic_id uuid, partitions [LastMirrorEpochPartition], tags
//! 99  response           = throttle_time_ms i32, mirrors [MirrorDescription],
//!                          tags{0: last_mirror_epochs [LastMirrorEpochTopic]}
//! TopicPartitions        = name string, partitions [i32], tags
//! 100 request            = mirror_name string, topics [TopicPartitions], tags
//! PartitionState         = partition_index i32, error_code i16, error_message string?,
//!                          state i8, leader_epoch i32, state_epoch i32, last_mirror_epoch i32,
//!                          last_mirror_offset i64, retry_attempt i16, previous_state i8, tags
//! 100 response           = throttle_time_ms i32, error_code i16,
//!                          topics [name string, partitions [PartitionState], tags], tags
//! PartitionStateWrite    = partition_index i32, state i8, leader_epoch i32, state_epoch i32,
//!                          last_mirror_epoch i32, last_mirror_offset i64, error_message
//!                          string?, retry_attempt i16, non_retryable bool, tags
//! 101 request            = mirror_name string, topics [name string, partitions
//!                          [PartitionStateWrite], tags], tags
//! PartitionResult        = partition_index i32, error_code i16, error_message string?, tags
//! 101, 105 response      = throttle_time_ms i32, topics [name string, partitions
//!                          [PartitionResult], tags], tags
//! 105 request            = topics [name string, partitions [partition_index i32,
//!                          min_leader_epoch i32, tags], tags], tags
//! 104 request            = mirror_name string, state_offset i64, tags
//! ```
//!
//! Where the prototype is silent or drifts, the choices are ours and marked so in the structs:
//! the per-topic `Patterns` (tag 0) on Pause/Resume/Recover as on Stop; `source_bootstrap` in
//! MirrorListing; the mirror's `configs` (tag 0) in MirrorDescription; the open transactions
//! (tag 0) in PartitionDescription; the lookup answers (tag 0) in the DescribeClusterMirrors
//! response.
//!
//! # Malformed bodies
//!
//! Decoding never panics and never allocates beyond the body's size: every length is checked
//! against the bytes left before anything is reserved, a body with bytes after its end is
//! refused, and errors name the field and byte position ([`CodecError`]). The frame layer closes
//! the connection on such a body with that reason logged, as Kafka does for an
//! `InvalidRequestException`.

pub mod messages;
pub mod wire;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};
pub use messages::*;
pub use wire::CodecError;
use wire::{Reader, Wire};

/// The mirror RPCs' API keys (spec §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i16)]
pub enum MirrorApiKey {
    /// 94.
    CreateClusterMirror = 94,
    /// 95.
    StartMirrorTopics = 95,
    /// 96.
    StopMirrorTopics = 96,
    /// 98.
    ListClusterMirrors = 98,
    /// 99.
    DescribeClusterMirrors = 99,
    /// 100.
    ReadMirrorStates = 100,
    /// 101.
    WriteMirrorStates = 101,
    /// 102.
    PauseMirrorTopics = 102,
    /// 103.
    ResumeMirrorTopics = 103,
    /// 104.
    DeleteClusterMirror = 104,
    /// 105.
    BumpLeaderEpochs = 105,
    /// 106.
    RecoverMirrorTopics = 106,
}

impl MirrorApiKey {
    /// Every key with a codec.
    pub const ALL: &'static [MirrorApiKey] = &[
        MirrorApiKey::CreateClusterMirror,
        MirrorApiKey::StartMirrorTopics,
        MirrorApiKey::StopMirrorTopics,
        MirrorApiKey::ListClusterMirrors,
        MirrorApiKey::DescribeClusterMirrors,
        MirrorApiKey::ReadMirrorStates,
        MirrorApiKey::WriteMirrorStates,
        MirrorApiKey::PauseMirrorTopics,
        MirrorApiKey::ResumeMirrorTopics,
        MirrorApiKey::DeleteClusterMirror,
        MirrorApiKey::BumpLeaderEpochs,
        MirrorApiKey::RecoverMirrorTopics,
    ];

    /// The key for a raw api key, if it is a mirror RPC.
    pub fn from_i16(k: i16) -> Option<MirrorApiKey> {
        Self::ALL.iter().copied().find(|m| *m as i16 == k)
    }

    /// The versions this codec reads and writes.
    pub const VERSIONS: (i16, i16) = (0, 0);
}

/// A decoded mirror RPC request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum MirrorRequest {
    CreateClusterMirror(CreateClusterMirrorRequest),
    StartMirrorTopics(StartMirrorTopicsRequest),
    StopMirrorTopics(MirrorTopicsRequest),
    ListClusterMirrors(ListClusterMirrorsRequest),
    DescribeClusterMirrors(DescribeClusterMirrorsRequest),
    ReadMirrorStates(ReadMirrorStatesRequest),
    WriteMirrorStates(WriteMirrorStatesRequest),
    PauseMirrorTopics(MirrorTopicsRequest),
    ResumeMirrorTopics(MirrorTopicsRequest),
    DeleteClusterMirror(DeleteClusterMirrorRequest),
    BumpLeaderEpochs(BumpLeaderEpochsRequest),
    RecoverMirrorTopics(MirrorTopicsRequest),
}

/// A mirror RPC response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum MirrorResponse {
    CreateClusterMirror(MirrorErrorResponse),
    StartMirrorTopics(MirrorTopicsResponse),
    StopMirrorTopics(MirrorTopicsResponse),
    ListClusterMirrors(ListClusterMirrorsResponse),
    DescribeClusterMirrors(DescribeClusterMirrorsResponse),
    ReadMirrorStates(ReadMirrorStatesResponse),
    WriteMirrorStates(PartitionResultsResponse),
    PauseMirrorTopics(MirrorTopicsResponse),
    ResumeMirrorTopics(MirrorTopicsResponse),
    DeleteClusterMirror(MirrorErrorResponse),
    BumpLeaderEpochs(PartitionResultsResponse),
    RecoverMirrorTopics(MirrorTopicsResponse),
}

fn decode_whole<T: Wire>(body: &[u8], what: &'static str) -> Result<T, CodecError> {
    let mut r = Reader::new(body);
    let v = T::read(&mut r, what)?;
    r.finish(what)?;
    Ok(v)
}

/// Decodes `body` into the variant of `$enum` named like `key` (request and response enums
/// name their variants after the API).
macro_rules! decode_by_key {
    ($enum:ident, $key:expr, $body:expr) => {
        decode_by_key!(@arms $enum, $key, $body,
            CreateClusterMirror,
            StartMirrorTopics,
            StopMirrorTopics,
            ListClusterMirrors,
            DescribeClusterMirrors,
            ReadMirrorStates,
            WriteMirrorStates,
            PauseMirrorTopics,
            ResumeMirrorTopics,
            DeleteClusterMirror,
            BumpLeaderEpochs,
            RecoverMirrorTopics)
    };
    (@arms $enum:ident, $key:expr, $body:expr, $($k:ident),*) => {
        match $key {
            $(MirrorApiKey::$k => $enum::$k(decode_whole($body, stringify!($k))?),)*
        }
    };
}

fn encoded<T: Wire>(v: &T) -> BytesMut {
    let mut b = BytesMut::new();
    v.write(&mut b);
    b
}

impl MirrorRequest {
    /// Its API key.
    pub fn api_key(&self) -> MirrorApiKey {
        use MirrorApiKey as K;
        match self {
            MirrorRequest::CreateClusterMirror(_) => K::CreateClusterMirror,
            MirrorRequest::StartMirrorTopics(_) => K::StartMirrorTopics,
            MirrorRequest::StopMirrorTopics(_) => K::StopMirrorTopics,
            MirrorRequest::ListClusterMirrors(_) => K::ListClusterMirrors,
            MirrorRequest::DescribeClusterMirrors(_) => K::DescribeClusterMirrors,
            MirrorRequest::ReadMirrorStates(_) => K::ReadMirrorStates,
            MirrorRequest::WriteMirrorStates(_) => K::WriteMirrorStates,
            MirrorRequest::PauseMirrorTopics(_) => K::PauseMirrorTopics,
            MirrorRequest::ResumeMirrorTopics(_) => K::ResumeMirrorTopics,
            MirrorRequest::DeleteClusterMirror(_) => K::DeleteClusterMirror,
            MirrorRequest::BumpLeaderEpochs(_) => K::BumpLeaderEpochs,
            MirrorRequest::RecoverMirrorTopics(_) => K::RecoverMirrorTopics,
        }
    }

    /// Decodes a v0 body (everything after the request header); the whole body must be used.
    ///
    /// # Errors
    /// A field that does not decode, or trailing bytes.
    pub fn decode(key: MirrorApiKey, body: &[u8]) -> Result<MirrorRequest, CodecError> {
        Ok(decode_by_key!(MirrorRequest, key, body))
    }

    /// The v0 body.
    pub fn encode(&self) -> BytesMut {
        match self {
            MirrorRequest::CreateClusterMirror(r) => encoded(r),
            MirrorRequest::StartMirrorTopics(r) => encoded(r),
            MirrorRequest::StopMirrorTopics(r)
            | MirrorRequest::PauseMirrorTopics(r)
            | MirrorRequest::ResumeMirrorTopics(r)
            | MirrorRequest::RecoverMirrorTopics(r) => encoded(r),
            MirrorRequest::ListClusterMirrors(r) => encoded(r),
            MirrorRequest::DescribeClusterMirrors(r) => encoded(r),
            MirrorRequest::ReadMirrorStates(r) => encoded(r),
            MirrorRequest::WriteMirrorStates(r) => encoded(r),
            MirrorRequest::DeleteClusterMirror(r) => encoded(r),
            MirrorRequest::BumpLeaderEpochs(r) => encoded(r),
        }
    }

    /// A whole request frame: `int32 size`, request header v2 (with `client_id`), the body.
    pub fn to_frame(&self, correlation_id: i32, client_id: &str) -> Bytes {
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        RequestHeader::default()
            .with_request_api_key(self.api_key() as i16)
            .with_request_api_version(0)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_string(client_id.to_string())))
            .encode(&mut buf, 2)
            .expect("a request header v2 always encodes");
        buf.extend_from_slice(&self.encode());
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        buf.freeze()
    }
}

impl MirrorResponse {
    /// Decodes a v0 body of the response to `key`.
    ///
    /// # Errors
    /// A field that does not decode, or trailing bytes.
    pub fn decode(key: MirrorApiKey, body: &[u8]) -> Result<MirrorResponse, CodecError> {
        Ok(decode_by_key!(MirrorResponse, key, body))
    }

    /// The v0 body.
    pub fn encode(&self) -> BytesMut {
        match self {
            MirrorResponse::CreateClusterMirror(r) | MirrorResponse::DeleteClusterMirror(r) => {
                encoded(r)
            }
            MirrorResponse::StartMirrorTopics(r)
            | MirrorResponse::StopMirrorTopics(r)
            | MirrorResponse::PauseMirrorTopics(r)
            | MirrorResponse::ResumeMirrorTopics(r)
            | MirrorResponse::RecoverMirrorTopics(r) => encoded(r),
            MirrorResponse::ListClusterMirrors(r) => encoded(r),
            MirrorResponse::DescribeClusterMirrors(r) => encoded(r),
            MirrorResponse::ReadMirrorStates(r) => encoded(r),
            MirrorResponse::WriteMirrorStates(r) | MirrorResponse::BumpLeaderEpochs(r) => {
                encoded(r)
            }
        }
    }

    /// A whole response frame: `int32 size`, response header v1, the body.
    pub fn to_frame(&self, correlation_id: i32) -> Bytes {
        let mut buf = BytesMut::new();
        buf.put_i32(0);
        ResponseHeader::default()
            .with_correlation_id(correlation_id)
            .encode(&mut buf, 1)
            .expect("a response header v1 always encodes");
        buf.extend_from_slice(&self.encode());
        let len = (buf.len() - 4) as i32;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        buf.freeze()
    }

    /// Reads a response frame's header v1 and body (without the `int32 size`), checking the
    /// correlation id.
    ///
    /// # Errors
    /// A header or body that does not decode, or another correlation id.
    pub fn from_frame(
        key: MirrorApiKey,
        correlation_id: i32,
        mut frame: Bytes,
    ) -> Result<MirrorResponse, CodecError> {
        let header = ResponseHeader::decode(&mut frame, 1).map_err(|e| CodecError {
            field: "response header",
            position: 0,
            reason: e.to_string(),
        })?;
        if header.correlation_id != correlation_id {
            return Err(CodecError {
                field: "response header",
                position: 0,
                reason: format!(
                    "correlation id {} for request {correlation_id}",
                    header.correlation_id
                ),
            });
        }
        MirrorResponse::decode(key, frame.chunk())
    }
}

#[cfg(test)]
mod tests {
    use super::messages::arb::Arb;
    use super::*;
    use proptest::prelude::*;

    fn round_trip<T: Wire + PartialEq + std::fmt::Debug>(v: &T) {
        let mut b = BytesMut::new();
        v.write(&mut b);
        let back: T = decode_whole(&b, "test").unwrap();
        assert_eq!(&back, v);
    }

    macro_rules! round_trips {
        ($($test:ident: $t:ty),* $(,)?) => {
            proptest! {
                #![proptest_config(ProptestConfig::with_cases(64))]
                $(
                    #[test]
                    fn $test(v in <$t as Arb>::arb()) {
                        round_trip(&v);
                    }
                )*
            }
        };
    }

    round_trips! {
        create_cluster_mirror_request_round_trips: CreateClusterMirrorRequest,
        mirror_error_response_round_trips: MirrorErrorResponse,
        start_mirror_topics_request_round_trips: StartMirrorTopicsRequest,
        mirror_topics_request_round_trips: MirrorTopicsRequest,
        mirror_topics_response_round_trips: MirrorTopicsResponse,
        list_cluster_mirrors_request_round_trips: ListClusterMirrorsRequest,
        list_cluster_mirrors_response_round_trips: ListClusterMirrorsResponse,
        describe_cluster_mirrors_request_round_trips: DescribeClusterMirrorsRequest,
        describe_cluster_mirrors_response_round_trips: DescribeClusterMirrorsResponse,
        read_mirror_states_request_round_trips: ReadMirrorStatesRequest,
        read_mirror_states_response_round_trips: ReadMirrorStatesResponse,
        write_mirror_states_request_round_trips: WriteMirrorStatesRequest,
        partition_results_response_round_trips: PartitionResultsResponse,
        bump_leader_epochs_request_round_trips: BumpLeaderEpochsRequest,
        delete_cluster_mirror_request_round_trips: DeleteClusterMirrorRequest,
    }

    fn any_request() -> impl Strategy<Value = MirrorRequest> {
        prop_oneof![
            CreateClusterMirrorRequest::arb().prop_map(MirrorRequest::CreateClusterMirror),
            StartMirrorTopicsRequest::arb().prop_map(MirrorRequest::StartMirrorTopics),
            MirrorTopicsRequest::arb().prop_map(MirrorRequest::StopMirrorTopics),
            ListClusterMirrorsRequest::arb().prop_map(MirrorRequest::ListClusterMirrors),
            DescribeClusterMirrorsRequest::arb().prop_map(MirrorRequest::DescribeClusterMirrors),
            ReadMirrorStatesRequest::arb().prop_map(MirrorRequest::ReadMirrorStates),
            WriteMirrorStatesRequest::arb().prop_map(MirrorRequest::WriteMirrorStates),
            MirrorTopicsRequest::arb().prop_map(MirrorRequest::PauseMirrorTopics),
            MirrorTopicsRequest::arb().prop_map(MirrorRequest::ResumeMirrorTopics),
            DeleteClusterMirrorRequest::arb().prop_map(MirrorRequest::DeleteClusterMirror),
            BumpLeaderEpochsRequest::arb().prop_map(MirrorRequest::BumpLeaderEpochs),
            MirrorTopicsRequest::arb().prop_map(MirrorRequest::RecoverMirrorTopics),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn every_request_round_trips_through_its_key(req in any_request()) {
            let body = req.encode();
            prop_assert_eq!(MirrorRequest::decode(req.api_key(), &body).unwrap(), req);
        }

        #[test]
        fn every_truncation_of_a_request_is_an_error_not_a_panic(req in any_request()) {
            let body = req.encode();
            for cut in 0..body.len() {
                prop_assert!(MirrorRequest::decode(req.api_key(), &body[..cut]).is_err());
            }
        }

        #[test]
        fn random_bytes_never_panic_the_decoder(
            key in proptest::sample::select(MirrorApiKey::ALL),
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let _ = MirrorRequest::decode(key, &bytes);
            let _ = MirrorResponse::decode(key, &bytes);
        }
    }

    #[test]
    fn trailing_bytes_after_a_body_are_refused() {
        let mut body = MirrorRequest::ListClusterMirrors(ListClusterMirrorsRequest {
            include_topic_names: true,
        })
        .encode();
        body.put_u8(0);
        let e = MirrorRequest::decode(MirrorApiKey::ListClusterMirrors, &body).unwrap_err();
        assert!(e.reason.contains("after the end"), "{e}");
    }

    #[test]
    fn exclude_patterns_travel_in_tag_zero() {
        let r = StartMirrorTopicsRequest {
            mirror_name: "m".into(),
            exclude_patterns: vec!["x".into()],
            ..Default::default()
        };
        let b = MirrorRequest::StartMirrorTopics(r).encode();
        // name "m" (2), topics [] (1), include [] (1), timeout (4), then 1 tag: 0, size 3,
        // [ "x" ] = 02 02 'x'.
        assert_eq!(&b[..], &[2, b'm', 1, 1, 0, 0, 0, 0, 1, 0, 3, 2, 2, b'x']);
    }

    #[test]
    fn a_response_frame_decodes_with_its_correlation_id() {
        let resp = MirrorResponse::CreateClusterMirror(MirrorErrorResponse {
            error_code: 136,
            error_message: Some("exists".into()),
            ..Default::default()
        });
        let frame = resp.to_frame(9);
        let body = frame.slice(4..);
        assert_eq!(
            MirrorResponse::from_frame(MirrorApiKey::CreateClusterMirror, 9, body.clone()).unwrap(),
            resp
        );
        assert!(MirrorResponse::from_frame(MirrorApiKey::CreateClusterMirror, 8, body).is_err());
    }
}
