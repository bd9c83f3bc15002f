//! Group offset sync scenarios: a source whose topic `orders` (one partition) a destination
//! mirrors on durable mirror `east`, and the wire OffsetCommit / OffsetFetch of groups on
//! orders-0 they make on either side.

use super::mirror::start_orders;
use super::wire::call;
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
use mirrorlog_mirror::manager::MirrorManager;
use mirrorlog_segment::BatchBuilder;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A source (node 1) whose `orders` holds `records` records, and a destination (node 2, its
/// settings changed by `configure`) whose mirror `east` has copied them all.
pub fn mirrored_orders(
    dir: &Path,
    records: usize,
    configure: impl FnOnce(&mut BrokerConfig),
) -> (RunningBroker, RunningBroker, Arc<MirrorManager>) {
    let src = RunningBroker::start_local(&dir.join("src"), 1).unwrap();
    let mut sc = Client::connect(&src.addr.to_string()).unwrap();
    sc.create_topic("orders", 1, &[]).unwrap();
    let mut batch = BatchBuilder::new();
    for _ in 0..records {
        batch.append(TimestampMs(1), None, Some(b"o"), &[]);
    }
    sc.produce("orders", 0, batch.build().into_bytes(), -1, None)
        .unwrap();
    let port = free_loopback_port().unwrap();
    let mut config = BrokerConfig::new(dir.join("dst"), "127.0.0.1", i32::from(port));
    config.node_id = 2;
    configure(&mut config);
    let server = ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], port)),
        ..ServerConfig::default()
    };
    let dst = RunningBroker::start(config, server).unwrap();
    let b = dst.broker.clone();
    // The mirror's own periodic sync runs once, at its creation (before the scenario commits
    // anything), and not again for an hour: the scenario's `sync_groups` calls are the syncs.
    let configs = BTreeMap::from([
        ("bootstrap.servers".to_string(), src.addr.to_string()),
        (
            "mirror.metadata.refresh.interval.ms".to_string(),
            "3600000".to_string(),
        ),
    ]);
    let mirror = b.mirrors.create_durable(&b, "east", configs).unwrap();
    assert_eq!(start_orders(&b, "east"), 0);
    let end = Offset(records as i64);
    let deadline = Instant::now() + Duration::from_secs(60);
    while b.partition("orders", 0).unwrap().read().high_watermark() < end {
        assert!(Instant::now() < deadline, "orders-0 was not mirrored");
        std::thread::sleep(Duration::from_millis(20));
    }
    (src, dst, mirror)
}

/// OffsetCommit v8 of `group` on orders-0 with `metadata`, as an admin tool commits.
pub fn commit_orders(addr: SocketAddr, group: &str, offset: i64, metadata: &str) {
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
pub fn committed_orders(addr: SocketAddr, group: &str) -> (i64, String) {
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
