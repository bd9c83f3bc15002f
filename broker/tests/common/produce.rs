//! Produce requests sent over the wire to a running broker, for the Produce handler's tests.

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use std::net::SocketAddr;
use std::path::Path;

/// A broker on `dir` with a topic `topic` of `partitions` partitions.
pub fn running_with_topic(dir: &Path, topic: &str, partitions: i32) -> RunningBroker {
    let running = RunningBroker::start_local(dir, 1).unwrap();
    let b = &running.broker;
    b.topics
        .create(&b.logs, topic, partitions, LogConfig::default(), None)
        .unwrap();
    running
}

/// One plain record batch of `value` (base offset 0, no producer).
pub fn batch(value: &[u8]) -> Bytes {
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(1_700_000_000_000), None, Some(value), &[]);
    bb.build().into_bytes()
}

/// One transactional batch of one record, of producer `pid` and `epoch` from `sequence`.
pub fn txn_batch(pid: i64, epoch: i16, sequence: i32) -> Bytes {
    let mut b = BatchBuilder::new()
        .producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(sequence))
        .transactional(true);
    b.append(TimestampMs(1_700_000_000_000), None, Some(b"v"), &[]);
    b.build().into_bytes()
}

/// `records` with the control bit set and the CRC recomputed: a batch the log refuses from a
/// client (`INVALID_RECORD`).
pub fn with_control_bit(records: Bytes) -> Bytes {
    use mirrorlog_segment::batch::{compute_crc, field};
    let mut b = records.to_vec();
    b[field::ATTRIBUTES + 1] |= 0x20;
    let crc = compute_crc(&b);
    b[field::CRC..field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Bytes::from(b)
}

/// A Produce request of `acks` naming `(topic, partition, records)` in this order (consecutive
/// entries of one topic share its topic entry).
pub fn request(acks: i16, parts: Vec<(&str, i32, Option<Bytes>)>) -> ProduceRequest {
    let mut r = ProduceRequest::default();
    r.acks = acks;
    r.timeout_ms = 30_000;
    for (topic, index, records) in parts {
        let mut pd = PartitionProduceData::default();
        pd.index = index;
        pd.records = records;
        if r.topic_data.last().is_none_or(|t| &*t.name.0 != topic) {
            let mut td = TopicProduceData::default();
            td.name = TopicName(StrBytes::from_string(topic.to_string()));
            r.topic_data.push(td);
        }
        r.topic_data.last_mut().unwrap().partition_data.push(pd);
    }
    r
}

/// Sends `r` as Produce `version` on a new connection and reads its answer.
pub fn send(addr: SocketAddr, version: i16, r: &ProduceRequest) -> ProduceResponse {
    super::wire::call(addr, ApiKey::Produce, version, r)
}

/// Every answered partition as `(topic, partition, error code)`, in answer order.
pub fn answered(resp: &ProduceResponse) -> Vec<(String, i32, i16)> {
    resp.responses
        .iter()
        .flat_map(|t| {
            t.partition_responses
                .iter()
                .map(|p| (t.name.0.to_string(), p.index, p.error_code))
        })
        .collect()
}

/// A broker on `dir` with a topic `t` of two partitions, and the producer of transactional id
/// `tx` (its id and epoch) with partition 0 added to its open transaction.
pub fn running_with_partition_0_in_transaction(dir: &Path) -> (RunningBroker, i64, i16) {
    let running = running_with_topic(dir, "t", 2);
    let mut c = mirrorlog_broker::client::Client::connect(&running.addr.to_string()).unwrap();
    let (pid, epoch) = c.init_producer_id(Some("tx")).unwrap();
    c.add_partitions_to_txn("tx", pid, epoch, "t", &[0])
        .unwrap();
    (running, pid, epoch)
}
