//! `offset.metadata.max.bytes` bounds a commit's metadata as Kafka's
//! `OffsetMetadataManager.isMetadataInvalid` does: by the Java string's `length()`, in UTF-16
//! code units, not in bytes. Metadata of non-ASCII characters within the limit used to be refused
//! with OFFSET_METADATA_TOO_LARGE, because its UTF-8 bytes were counted.

mod common;

use common::groups::logs_with;
use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// An admin-style commit (no member) with `metadata`: its error code.
fn commit(c: &GroupCoordinator, metadata: &str) -> i16 {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(s("meta")))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(7)
                        .with_committed_metadata(Some(s(metadata))),
                ]),
        ]);
    match c.handle(9, RequestKind::OffsetCommit(req)) {
        ResponseKind::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn offset_metadata_size_counts_utf16_code_units_as_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let config = GroupConfig {
        offset_metadata_max_bytes: 10,
        ..GroupConfig::default()
    };
    let c = GroupCoordinator::open(logs, config, clock).unwrap();
    let too_large = E::OffsetMetadataTooLarge.code();
    assert_eq!(commit(&c, &"a".repeat(10)), 0);
    assert_eq!(commit(&c, &"a".repeat(11)), too_large);
    // Two UTF-8 bytes, one UTF-16 unit each: 10 characters, 20 bytes.
    assert_eq!(commit(&c, &"é".repeat(10)), 0);
    assert_eq!(commit(&c, &"é".repeat(11)), too_large);
    // Four UTF-8 bytes, a surrogate pair (two units) each: 5 are 10 units, 20 bytes.
    assert_eq!(commit(&c, &"😀".repeat(5)), 0);
    assert_eq!(commit(&c, &"😀".repeat(6)), too_large);
}
