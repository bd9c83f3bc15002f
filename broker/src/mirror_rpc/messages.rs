//! The request and response bodies of the mirror RPCs, field by field in wire order (the byte
//! layouts are in the parent module's docs). Each struct's fields are its non-tagged fields in
//! order, then its tagged fields; a tagged field is written only when it differs from its
//! default, and a reader skips tagged fields it does not know.

use super::wire::{CodecError, Reader, Wire, put_tagged, put_uvarint};
use bytes::BytesMut;

/// Declares a message struct and its [`Wire`] form: the listed fields in order, then a
/// tagged-field section holding the `tagged` fields.
macro_rules! message {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty, )*
        }
        tagged {
            $( $tag:literal => $(#[$tmeta:meta])* pub $tfield:ident : $tty:ty, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
            $( $(#[$tmeta])* pub $tfield: $tty, )*
        }

        impl Wire for $name {
            fn write(&self, out: &mut BytesMut) {
                $( self.$field.write(out); )*
                let tagged = 0u32 $( + u32::from(self.$tfield != <$tty>::default()) )*;
                put_uvarint(out, tagged);
                $(
                    if self.$tfield != <$tty>::default() {
                        put_tagged(out, $tag, &self.$tfield);
                    }
                )*
            }

            fn read(r: &mut Reader<'_>, _field: &'static str) -> Result<Self, CodecError> {
                $(
                    let $field = <$ty as Wire>::read(
                        r,
                        concat!(stringify!($name), ".", stringify!($field)),
                    )?;
                )*
                $( let mut $tfield = <$tty>::default(); )*
                r.tagged_fields(concat!(stringify!($name), " tagged fields"), |tag, sub| {
                    let _ = &sub;
                    match tag {
                        $(
                            $tag => {
                                $tfield = <$tty as Wire>::read(
                                    sub,
                                    concat!(stringify!($name), ".", stringify!($tfield)),
                                )?;
                                Ok(true)
                            }
                        )*
                        _ => Ok(false),
                    }
                })?;
                Ok($name { $($field,)* $($tfield,)* })
            }
        }

        #[cfg(test)]
        impl arb::Arb for $name {
            fn arb() -> proptest::strategy::BoxedStrategy<Self> {
                use proptest::strategy::Strategy;
                ( $( <$ty as arb::Arb>::arb(), )* $( <$tty as arb::Arb>::arb(), )* )
                    .prop_map(|( $($field,)* $($tfield,)* )| $name { $($field,)* $($tfield,)* })
                    .boxed()
            }
        }
    };
}

message! {
    /// One mirror-level setting (CreateClusterMirror's `Configs`, DescribeClusterMirrors'
    /// tagged `Configs`).
    pub struct ConfigEntry {
        /// The key, e.g. `bootstrap.servers`.
        pub name: String,
        /// The value (null: the default).
        pub value: Option<String>,
    }
    tagged {}
}

message! {
    /// API key 94 request.
    pub struct CreateClusterMirrorRequest {
        /// The new mirror's name.
        pub mirror_name: String,
        /// Its settings (`bootstrap.servers` required).
        pub configs: Vec<ConfigEntry>,
    }
    tagged {}
}

message! {
    /// The answer of the RPCs that act on a whole mirror (94 CreateClusterMirror, 104
    /// DeleteClusterMirror).
    pub struct MirrorErrorResponse {
        /// Throttle time (always 0: no quotas).
        pub throttle_time_ms: i32,
        /// Error code, 0 for success.
        pub error_code: i16,
        /// Why, when it failed.
        pub error_message: Option<String>,
    }
    tagged {}
}

message! {
    /// A topic named in StartMirrorTopics. `topic_id`/`num_partitions` are what the prototype's
    /// discovery fills in; an operator sends zeros and the broker asks the source.
    pub struct StartTopic {
        /// The topic.
        pub name: String,
        /// Its source topic id (zeros: unknown).
        pub topic_id: [u8; 16],
        /// Its source partition count (−1 or 0: unknown).
        pub num_partitions: i32,
    }
    tagged {}
}

message! {
    /// API key 95 request.
    pub struct StartMirrorTopicsRequest {
        /// The mirror.
        pub mirror_name: String,
        /// Topics to start by name.
        pub topics: Vec<StartTopic>,
        /// Regexes added to the mirror's `mirror.topics.include`; matching source topics start.
        pub include_patterns: Vec<String>,
        /// How long the caller waits (the broker answers when the state is persisted).
        pub timeout_ms: i32,
    }
    tagged {
        0 => /// Regexes added to `mirror.topics.exclude` (exclude wins).
        pub exclude_patterns: Vec<String>,
    }
}

message! {
    /// A topic named in a Stop/Pause/Resume/Recover request.
    pub struct TopicName {
        /// The topic.
        pub name: String,
    }
    tagged {}
}

message! {
    /// API keys 96 StopMirrorTopics, 102 PauseMirrorTopics, 103 ResumeMirrorTopics and 106
    /// RecoverMirrorTopics: one request shape.
    pub struct MirrorTopicsRequest {
        /// The mirror.
        pub mirror_name: String,
        /// Topics by name.
        pub topics: Vec<TopicName>,
        /// The caller's view of the mirror's state (−1: do not check). A single broker has
        /// no metadata log, so the only value accepted is −1.
        pub state_offset: i64,
    }
    tagged {
        0 => /// Regexes selecting topics of the mirror (see the handler for what they select).
        pub patterns: Vec<String>,
    }
}

message! {
    /// One topic's outcome.
    pub struct TopicResult {
        /// The topic.
        pub name: String,
        /// Error code, 0 for success.
        pub error_code: i16,
        /// Why, when it failed.
        pub error_message: Option<String>,
    }
    tagged {}
}

message! {
    /// The answer of 95, 96, 102, 103 and 106.
    pub struct MirrorTopicsResponse {
        /// Throttle time (always 0).
        pub throttle_time_ms: i32,
        /// A request-level error (unknown mirror, bad pattern…), 0 otherwise.
        pub error_code: i16,
        /// Why.
        pub error_message: Option<String>,
        /// Per topic.
        pub topics: Vec<TopicResult>,
    }
    tagged {}
}

message! {
    /// API key 98 request.
    pub struct ListClusterMirrorsRequest {
        /// Whether to list each mirror's topics.
        pub include_topic_names: bool,
    }
    tagged {}
}

message! {
    /// One mirror in ListClusterMirrors.
    pub struct MirrorListing {
        /// Name.
        pub mirror_name: String,
        /// The source's cluster id, once known.
        pub source_cluster_id: Option<String>,
        /// The source's `bootstrap.servers`.
        pub source_bootstrap: String,
        /// Its topics (empty unless asked).
        pub topic_names: Vec<String>,
    }
    tagged {}
}

message! {
    /// API key 98 response.
    pub struct ListClusterMirrorsResponse {
        /// Throttle time (always 0).
        pub throttle_time_ms: i32,
        /// Error code.
        pub error_code: i16,
        /// Every mirror.
        pub mirrors: Vec<MirrorListing>,
    }
    tagged {}
}

message! {
    /// Partitions whose last mirror epoch is asked (DescribeClusterMirrors' tagged
    /// `LastMirrorEpochLookups`, used by failback).
    pub struct LastMirrorEpochLookup {
        /// Topic id (the same on both sides).
        pub topic_id: [u8; 16],
        /// Partitions.
        pub partitions: Vec<i32>,
    }
    tagged {}
}

message! {
    /// API key 99 request.
    pub struct DescribeClusterMirrorsRequest {
        /// Mirrors to describe; null = all.
        pub mirror_names: Option<Vec<String>>,
        /// Whether to fill `authorized_operations` (no ACLs here: always −2147483648).
        pub include_authorized_operations: bool,
    }
    tagged {
        0 => /// The requester's own cluster id, for the last-mirror-epoch lookups.
        pub cluster_id: Option<String>,
        1 => /// Last-mirror-epoch lookups.
        pub last_mirror_epoch_lookups: Vec<LastMirrorEpochLookup>,
    }
}

message! {
    /// One partition in DescribeClusterMirrors.
    pub struct PartitionDescription {
        /// Partition.
        pub partition_index: i32,
        /// State name (`MIRRORING`, `FAILED`…): a string here, an int8 in the internal RPCs.
        pub state_value: String,
        /// Why it is FAILED.
        pub error_message: Option<String>,
        /// Failed attempts so far (−1 non-retryable failure, 0 none).
        pub retry_attempt: i16,
        /// The source's high watermark at the last fetch (−1 before one).
        pub source_offset: i64,
        /// The destination's log end offset.
        pub destination_offset: i64,
        /// Last mirror epoch recorded at stop (−1 none).
        pub last_mirror_epoch: i32,
        /// The end offset of the last mirror epoch in the local log (−1 none).
        pub last_mirror_offset: i64,
    }
    tagged {
        0 => /// Transactions open in the destination log (ours: what a stop would abort).
        pub open_transactions: Vec<OpenTransaction>,
    }
}

message! {
    /// A transaction open in a mirror partition.
    pub struct OpenTransaction {
        /// Producer id.
        pub producer_id: i64,
        /// Producer epoch.
        pub producer_epoch: i16,
        /// Its first offset.
        pub first_offset: i64,
    }
    tagged {}
}

message! {
    /// One topic in DescribeClusterMirrors.
    pub struct TopicDescription {
        /// Topic.
        pub topic_name: String,
        /// Partitions.
        pub partitions: Vec<PartitionDescription>,
    }
    tagged {}
}

message! {
    /// One mirror in DescribeClusterMirrors.
    pub struct MirrorDescription {
        /// Error code (UNKNOWN_CLUSTER_MIRROR for a name that does not exist).
        pub error_code: i16,
        /// Why.
        pub error_message: Option<String>,
        /// Name.
        pub mirror_name: String,
        /// The source's `bootstrap.servers`.
        pub source_bootstrap: String,
        /// The source's cluster id, once known.
        pub source_cluster_id: Option<String>,
        /// ACL operations (always −2147483648: not computed).
        pub authorized_operations: i32,
        /// Topics.
        pub topics: Vec<TopicDescription>,
    }
    tagged {
        0 => /// The mirror's settings as stored (ours: not in the prototype).
        pub configs: Vec<ConfigEntry>,
    }
}

message! {
    /// One partition's answer to a last-mirror-epoch lookup.
    pub struct LastMirrorEpochPartition {
        /// Partition.
        pub partition_index: i32,
        /// 0, or UNKNOWN_TOPIC_OR_PARTITION (no mirror from the requester holds it) or
        /// MIRROR_TOPIC_NOT_STOPPED (it is still being mirrored here).
        pub error_code: i16,
        /// Last mirror epoch (−1 none).
        pub last_mirror_epoch: i32,
        /// End offset of that epoch here (−1 none).
        pub last_mirror_offset: i64,
    }
    tagged {}
}

message! {
    /// One topic's last-mirror-epoch answers.
    pub struct LastMirrorEpochTopic {
        /// Topic id.
        pub topic_id: [u8; 16],
        /// Partitions.
        pub partitions: Vec<LastMirrorEpochPartition>,
    }
    tagged {}
}

message! {
    /// API key 99 response.
    pub struct DescribeClusterMirrorsResponse {
        /// Throttle time (always 0).
        pub throttle_time_ms: i32,
        /// Mirrors.
        pub mirrors: Vec<MirrorDescription>,
    }
    tagged {
        0 => /// Answers to the request's last-mirror-epoch lookups (ours: the prototype's
        /// response field is not in the JSON seen).
        pub last_mirror_epochs: Vec<LastMirrorEpochTopic>,
    }
}

message! {
    /// A topic and partitions (ReadMirrorStates).
    pub struct TopicPartitions {
        /// Topic.
        pub name: String,
        /// Partitions.
        pub partitions: Vec<i32>,
    }
    tagged {}
}

message! {
    /// API key 100 request.
    pub struct ReadMirrorStatesRequest {
        /// The mirror.
        pub mirror_name: String,
        /// Partitions.
        pub topics: Vec<TopicPartitions>,
    }
    tagged {}
}

message! {
    /// One partition's state (ReadMirrorStates response).
    pub struct PartitionState {
        /// Partition.
        pub partition_index: i32,
        /// Error code.
        pub error_code: i16,
        /// Why.
        pub error_message: Option<String>,
        /// State byte.
        pub state: i8,
        /// Destination leader epoch (−1 none).
        pub leader_epoch: i32,
        /// State epoch.
        pub state_epoch: i32,
        /// Last mirror epoch.
        pub last_mirror_epoch: i32,
        /// End offset of the last mirror epoch.
        pub last_mirror_offset: i64,
        /// Failed attempts (−1 non-retryable).
        pub retry_attempt: i16,
        /// State before FAILED (the retry target).
        pub previous_state: i8,
    }
    tagged {}
}

message! {
    /// One topic's states.
    pub struct TopicStates {
        /// Topic.
        pub name: String,
        /// Partitions.
        pub partitions: Vec<PartitionState>,
    }
    tagged {}
}

message! {
    /// API key 100 response.
    pub struct ReadMirrorStatesResponse {
        /// Throttle time.
        pub throttle_time_ms: i32,
        /// Request-level error.
        pub error_code: i16,
        /// Topics.
        pub topics: Vec<TopicStates>,
    }
    tagged {}
}

message! {
    /// One partition's new state (WriteMirrorStates).
    pub struct PartitionStateWrite {
        /// Partition.
        pub partition_index: i32,
        /// State byte.
        pub state: i8,
        /// Leader epoch (−1 skip).
        pub leader_epoch: i32,
        /// Expected state epoch (−1 skip).
        pub state_epoch: i32,
        /// Last mirror epoch.
        pub last_mirror_epoch: i32,
        /// End offset of the last mirror epoch.
        pub last_mirror_offset: i64,
        /// Failure reason.
        pub error_message: Option<String>,
        /// Failed attempts.
        pub retry_attempt: i16,
        /// Whether the failure is not retryable.
        pub non_retryable: bool,
    }
    tagged {}
}

message! {
    /// One topic's writes.
    pub struct TopicStateWrites {
        /// Topic.
        pub name: String,
        /// Partitions.
        pub partitions: Vec<PartitionStateWrite>,
    }
    tagged {}
}

message! {
    /// API key 101 request.
    pub struct WriteMirrorStatesRequest {
        /// The mirror.
        pub mirror_name: String,
        /// Topics.
        pub topics: Vec<TopicStateWrites>,
    }
    tagged {}
}

message! {
    /// One partition's outcome (WriteMirrorStates, BumpLeaderEpochs).
    pub struct PartitionResult {
        /// Partition.
        pub partition_index: i32,
        /// Error code.
        pub error_code: i16,
        /// Why.
        pub error_message: Option<String>,
    }
    tagged {}
}

message! {
    /// One topic's partition outcomes.
    pub struct TopicPartitionResults {
        /// Topic.
        pub name: String,
        /// Partitions.
        pub partitions: Vec<PartitionResult>,
    }
    tagged {}
}

message! {
    /// API key 101 and 105 responses.
    pub struct PartitionResultsResponse {
        /// Throttle time.
        pub throttle_time_ms: i32,
        /// Topics.
        pub topics: Vec<TopicPartitionResults>,
    }
    tagged {}
}

message! {
    /// One partition's epoch floor (BumpLeaderEpochs).
    pub struct PartitionEpochBump {
        /// Partition.
        pub partition_index: i32,
        /// The epoch the leader must reach at least (−1: one above the current).
        pub min_leader_epoch: i32,
    }
    tagged {}
}

message! {
    /// One topic's bumps.
    pub struct TopicEpochBumps {
        /// Topic.
        pub name: String,
        /// Partitions.
        pub partitions: Vec<PartitionEpochBump>,
    }
    tagged {}
}

message! {
    /// API key 105 request.
    pub struct BumpLeaderEpochsRequest {
        /// Topics.
        pub topics: Vec<TopicEpochBumps>,
    }
    tagged {}
}

message! {
    /// API key 104 request.
    pub struct DeleteClusterMirrorRequest {
        /// The mirror.
        pub mirror_name: String,
        /// The caller's view of the mirror's state (−1: do not check; the only value a single
        /// broker accepts).
        pub state_offset: i64,
    }
    tagged {}
}

/// Strategies for the property tests: small collections, so nested messages stay small.
#[cfg(test)]
pub(crate) mod arb {
    use proptest::prelude::*;
    use proptest::strategy::BoxedStrategy;

    /// A value proptest can generate.
    pub trait Arb: Sized + std::fmt::Debug + Clone + 'static {
        /// Its strategy.
        fn arb() -> BoxedStrategy<Self>;
    }

    macro_rules! any_arb {
        ($($t:ty),*) => {$(
            impl Arb for $t {
                fn arb() -> BoxedStrategy<Self> {
                    any::<$t>().boxed()
                }
            }
        )*};
    }
    any_arb!(i8, i16, i32, i64, bool, [u8; 16]);

    impl Arb for String {
        fn arb() -> BoxedStrategy<Self> {
            "\\PC{0,12}".boxed()
        }
    }

    impl Arb for Option<String> {
        fn arb() -> BoxedStrategy<Self> {
            proptest::option::of(String::arb()).boxed()
        }
    }

    impl<T: Arb> Arb for Vec<T> {
        fn arb() -> BoxedStrategy<Self> {
            proptest::collection::vec(T::arb(), 0..4).boxed()
        }
    }

    impl<T: Arb> Arb for Option<Vec<T>> {
        fn arb() -> BoxedStrategy<Self> {
            proptest::option::of(Vec::<T>::arb()).boxed()
        }
    }
}
