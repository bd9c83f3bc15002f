//! Scenario: `__consumer_offsets` and `__transaction_state` partitions carried over from an older
//! Kafka (message format before v2) hold legacy entries (magic 0 and 1). Kafka's coordinator
//! loaders read every magic (a legacy record has a key and a value as a v2 one); these loaders
//! framed v2 only, so such a partition failed to load — its groups' offsets and its
//! transactional ids unavailable. Each test writes one legacy v1 entry into the partition a
//! running broker used, as a replica would copy it, and restarts the broker.

use bytes::Bytes;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::group::records::{OffsetValue, offset_key, offset_value};
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_broker::txn::state::{TxnMetadata, TxnState};
use mirrorlog_broker::txn::state_log::{encode_txn_key, encode_txn_value, partition_for};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::ReplicaOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{ProducerEpoch, ProducerId};
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

/// A legacy v1 entry (uncompressed, CreateTime) of one record at `offset`, as Kafka's
/// `LegacyRecord.write` lays it out: offset, size, crc, magic, attributes, timestamp, key, value.
fn legacy_v1_entry(offset: i64, timestamp: i64, key: &[u8], value: &[u8]) -> Bytes {
    let mut message = vec![1u8, 0];
    message.extend_from_slice(&timestamp.to_be_bytes());
    message.extend_from_slice(&(key.len() as i32).to_be_bytes());
    message.extend_from_slice(key);
    message.extend_from_slice(&(value.len() as i32).to_be_bytes());
    message.extend_from_slice(value);
    let mut entry = offset.to_be_bytes().to_vec();
    entry.extend_from_slice(&(4 + message.len() as i32).to_be_bytes());
    // CRC-32 (IEEE, `java.util.zip.CRC32`), a legacy entry's checksum.
    entry.extend_from_slice(&crc32fast::hash(&message).to_be_bytes());
    entry.extend_from_slice(&message);
    Bytes::from(entry)
}

/// Appends the entry `make(log end)` to the partition of `topic` in `dir` that `id` (a group or
/// a transactional id) maps to, as a replica would, with the broker stopped.
fn append_legacy(dir: &std::path::Path, topic: &str, id: &str, make: impl Fn(i64) -> Bytes) {
    let (m, _) = LogManager::open(
        LogManagerConfig::new(dir),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(1_700_000_000_000),
    )
    .unwrap();
    let mut partitions: Vec<_> = m
        .partitions()
        .into_iter()
        .filter(|h| h.topic_partition().topic == topic)
        .collect();
    partitions.sort_by_key(|h| h.topic_partition().partition);
    // Kafka's `Utils.abs(id.hashCode) % partitions`, for groups as for transactional ids.
    let used = vec![partitions.swap_remove(partition_for(id, partitions.len() as i32) as usize)];
    drop(partitions);
    assert!(
        used[0].read().log_end_offset().get() > 0,
        "{id} wrote there"
    );
    {
        let mut log = used[0].write();
        let leo = log.log_end_offset();
        log.append_as_follower(make(leo.get()), ReplicaOrigin::Replication)
            .unwrap();
        log.flush().unwrap();
    }
    drop(used);
    m.shutdown().unwrap();
}

#[test]
fn a_consumer_offsets_partition_with_a_legacy_offset_commit_loads() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    c.create_topic("t", 2, &[]).unwrap();
    c.commit_offsets("g", "t", &[(0, 5, -1)]).unwrap();
    drop(c);
    rb.shutdown().unwrap();

    // An older Kafka's commit of partition 1 at offset 42: a v1 offset value (with its expire
    // timestamp, far ahead), in a v1 entry.
    append_legacy(dir.path(), "__consumer_offsets", "g", |at| {
        let value = offset_value(&OffsetValue {
            offset: 42,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp_ms: 1_600_000_000_000,
            expire_timestamp_ms: Some(i64::MAX / 2),
        })
        .unwrap();
        legacy_v1_entry(
            at,
            1_600_000_000_000,
            &offset_key("g", "t", 1).unwrap(),
            &value,
        )
    });

    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    assert_eq!(
        c.fetch_offsets("g", "t", &[0, 1]).unwrap(),
        vec![(0, 5), (1, 42)]
    );
    drop(c);
    rb.shutdown().unwrap();
}

#[test]
fn a_transaction_state_partition_with_a_legacy_record_loads() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    let (pid, epoch) = c.init_producer_id(Some("tx")).unwrap();
    drop(c);
    rb.shutdown().unwrap();

    // The same transactional id, as an older Kafka last wrote it: epoch 7, Empty. Last updated
    // now: an older update time would let the coordinator's expiry of idle transactional ids
    // (`transactional.id.expiration.ms`, 7 days) remove it, at whatever moment its check runs.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    append_legacy(dir.path(), "__transaction_state", "tx", |at| {
        let mut m = TxnMetadata::new(ProducerId(pid), 60_000, now_ms);
        m.producer_epoch = ProducerEpoch(epoch + 7);
        m.state = TxnState::Empty;
        legacy_v1_entry(
            at,
            1_600_000_000_000,
            &encode_txn_key("tx"),
            &encode_txn_value(&m),
        )
    });

    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    // Loaded from the legacy record: the next InitProducerId bumps its epoch.
    assert_eq!(c.init_producer_id(Some("tx")).unwrap(), (pid, epoch + 8));
    drop(c);
    rb.shutdown().unwrap();
}
