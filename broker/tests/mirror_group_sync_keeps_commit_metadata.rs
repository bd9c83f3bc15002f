//! Bug: the mirror's group offset sync committed every offset on the destination with an empty
//! metadata string, whatever the source's commit carried. The KIP-1279 prototype's sync (and
//! MirrorMaker 2's checkpoints) copy the source's `OffsetAndMetadata` when the offset is not
//! clamped, so an application that keeps a note with its offsets (Kafka Streams keeps its
//! partition time there) found it gone after failing over.
//!
//! Now an offset synced as the source has it keeps the source's metadata; a clamped offset (the
//! source ahead of the destination) carries none, as in the prototype; and metadata longer than
//! the destination's `offset.metadata.max.bytes` does not keep the offset from being synced
//! (OFFSET_METADATA_TOO_LARGE would otherwise skip the group on every sync): it goes without it.

mod common;

use common::mirror::start_orders;
use common::wire::call;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::running::{RunningBroker, free_loopback_port};
use mirrorlog_broker::server::ServerConfig;
use mirrorlog_index::{Offset, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// OffsetCommit v8 of `group` on orders-0 with `metadata`, as an admin tool commits.
fn commit(addr: SocketAddr, group: &str, offset: i64, metadata: &str) {
    let r = OffsetCommitRequest::default()
        .with_group_id(GroupId(s(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(s(""))
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(s("orders")))
                .with_partitions(vec![
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(offset)
                        .with_committed_leader_epoch(0)
                        .with_committed_metadata(Some(s(metadata))),
                ]),
        ]);
    let resp: OffsetCommitResponse = call(addr, ApiKey::OffsetCommit, 8, &r);
    assert_eq!(resp.topics[0].partitions[0].error_code, 0, "{resp:?}");
}

/// `group`'s committed (offset, metadata) on orders-0 (OffsetFetch v8).
fn committed(addr: SocketAddr, group: &str) -> (i64, String) {
    let r = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(s(group)))
            .with_topics(None),
    ]);
    let resp: OffsetFetchResponse = call(addr, ApiKey::OffsetFetch, 8, &r);
    let p = &resp.groups[0].topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{resp:?}");
    (
        p.committed_offset,
        p.metadata
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

#[test]
fn synced_offsets_keep_the_source_commits_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let src = RunningBroker::start_local(&dir.path().join("src"), 1).unwrap();
    let mut sc = Client::connect(&src.addr.to_string()).unwrap();
    sc.create_topic("orders", 1, &[]).unwrap();
    let mut batch = BatchBuilder::new();
    for _ in 0..10 {
        batch.append(TimestampMs(1), None, Some(b"o"), &[]);
    }
    sc.produce("orders", 0, batch.build().into_bytes(), -1, None)
        .unwrap();
    commit(src.addr, "short", 4, "pt=1700");
    commit(src.addr, "long", 6, &"n".repeat(40));
    commit(src.addr, "ahead", 1_000, "far");

    // A destination whose offset.metadata.max.bytes (10) is below the source's (4096).
    let port = free_loopback_port().unwrap();
    let mut config = BrokerConfig::new(dir.path().join("dst"), "127.0.0.1", i32::from(port));
    config.node_id = 2;
    config.group.offset_metadata_max_bytes = 10;
    let server = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], port)),
        ..ServerConfig::default()
    };
    let dst = RunningBroker::start(config, server).unwrap();
    let b = dst.broker.clone();
    let configs = BTreeMap::from([("bootstrap.servers".to_string(), src.addr.to_string())]);
    let mirror = b.mirrors.create_durable(&b, "east", configs).unwrap();
    assert_eq!(start_orders(&b, "east"), 0);
    let deadline = Instant::now() + Duration::from_secs(60);
    while b.partition("orders", 0).unwrap().read().high_watermark() < Offset(10) {
        assert!(Instant::now() < deadline, "orders-0 was not mirrored");
        std::thread::sleep(Duration::from_millis(20));
    }

    let report = mirror.sync_groups().unwrap().unwrap();
    assert!(report.skipped_active.is_empty(), "{report:?}");
    assert_eq!(
        committed(dst.addr, "short"),
        (4, "pt=1700".to_string()),
        "an offset synced as the source has it keeps its metadata"
    );
    assert_eq!(
        committed(dst.addr, "long"),
        (6, String::new()),
        "metadata too large here: the offset is synced without it"
    );
    assert_eq!(
        committed(dst.addr, "ahead"),
        (10, String::new()),
        "a clamped offset is the mirror's own: no metadata"
    );
    drop((mirror, b, sc));
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
