//! Bug: the MIRROR_PID_RESET value carries an extra int16 "message version" before the
//! `MirrorPidResetRecord` body (`segment/src/batch/control.rs` `MirrorPidReset::encode`/`decode`).
//! The code justifies it by "Kafka's other message-typed control values (LeaderChangeMessage)",
//! but Kafka writes those with `MessageUtil.toByteBufferAccessor(message, version)` — no prefix:
//! the value starts with the message's own `Version` field. The real Kafka fixture shows it.
//! So a reset written the Kafka way (`Version int16`, `SourceClusterId` compact string, tagged
//! fields) fails to decode, and the batch is treated as corrupt by `BatchInfo::from_batch`.

use bytes::Bytes;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::batch::{BatchBuilder, Batches, ControlRecordType};

const CLUSTER: &str = "rwd2jqiwRaCycLq7mKVHXA";

/// `MirrorPidResetRecord` v0 (flexible) serialized the way Kafka serializes a message-typed
/// control value: the body only.
fn kafka_value(cluster: Option<&str>) -> Vec<u8> {
    let mut v = vec![0, 0]; // Version int16 = 0
    match cluster {
        None => v.push(0),
        Some(c) => {
            v.push(c.len() as u8 + 1); // compact string length (+1), one byte for short ids
            v.extend_from_slice(c.as_bytes());
        }
    }
    v.push(0); // no tagged fields
    v
}

#[test]
fn kafka_message_typed_control_values_have_no_version_prefix() {
    // The LeaderChange record Kafka wrote into the fixture's metadata log: Version (0),
    // LeaderId (1), Voters [1], GrantingVoters [1], tags — 19 bytes, no extra prefix.
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../shared/kafka-fixtures/kraft-combined-logs/__cluster_metadata-0/00000000000000000000.log"
    );
    let data = std::fs::read(p).unwrap();
    let b = Batches::new(Bytes::from(data))
        .map(Result::unwrap)
        .find(|b| b.is_control())
        .unwrap();
    let c = b.control_record().unwrap().unwrap();
    assert_eq!(c.kind, ControlRecordType::LeaderChange);
    let r = b.records().unwrap().next().unwrap().unwrap();
    let v = r.value.unwrap();
    assert_eq!(&v[..6], &[0, 0, 0, 0, 0, 1], "Version 0 then LeaderId 1");
    assert_eq!(v.len(), 19);
}

#[test]
fn a_mirror_pid_reset_written_the_kafka_way_decodes() {
    let value = kafka_value(Some(CLUSTER));
    let b =
        BatchBuilder::control(ControlRecordType::MirrorPidReset, &value, TimestampMs(5)).build();
    let c = b
        .control_record()
        .expect("a Kafka-encoded MIRROR_PID_RESET must decode")
        .unwrap();
    let reset = c.mirror_pid_reset.unwrap();
    assert_eq!(reset.version, 0);
    assert_eq!(reset.source_cluster_id.as_deref(), Some(CLUSTER));
}

#[test]
fn mirror_pid_reset_is_written_in_kafkas_layout() {
    let b = BatchBuilder::mirror_pid_reset(Some(CLUSTER), TimestampMs(5)).build();
    let r = b.records().unwrap().next().unwrap().unwrap();
    assert_eq!(r.value.as_deref(), Some(&kafka_value(Some(CLUSTER))[..]));
    let b = BatchBuilder::mirror_pid_reset(None, TimestampMs(5)).build();
    let r = b.records().unwrap().next().unwrap().unwrap();
    assert_eq!(r.value.as_deref(), Some(&kafka_value(None)[..]));
}
