//! Produce and Fetch handlers against a real broker on a temporary directory: every response is
//! also encoded at its request version, so a field set for a version that lacks it fails here.

use crate::common;

use bytes::{Bytes, BytesMut};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{
    BrokerId, FetchRequest, FetchResponse, ProduceResponse, TopicName, TransactionalId,
};
use kafka_protocol::protocol::{Encodable, StrBytes};
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::{fetch, produce};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{LeaderEpoch, ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::io::PwriteStorage;
use mirrorlog_segment::{BatchBuilder, Batches, Compression, RecordBatch, TimestampType};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;
use uuid::Uuid;

const NOW: i64 = 1_700_000_000_000;
/// Only a guard against a hung test; nothing is timed.
const HANG: Duration = Duration::from_secs(60);

// ---- error codes ----
const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const CORRUPT_MESSAGE: i16 = 2;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const INVALID_REQUIRED_ACKS: i16 = 21;
const INVALID_TIMESTAMP: i16 = 32;
const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;
const FENCED_LEADER_EPOCH: i16 = 74;
const UNKNOWN_LEADER_EPOCH: i16 = 75;
const INVALID_RECORD: i16 = 87;
const UNKNOWN_TOPIC_ID: i16 = 100;

fn broker() -> (tempfile::TempDir, Broker) {
    let dir = tempfile::tempdir().unwrap();
    let b = Broker::open(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW),
    )
    .unwrap();
    b.topics
        .create(&b.logs, "t", 3, LogConfig::default(), None)
        .unwrap();
    (dir, b)
}

fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

/// A batch of `n` records `<tag>-<i>` with codec `c`.
fn batch(c: Compression, n: usize, tag: &str) -> RecordBatch {
    let mut bb = BatchBuilder::new().compression(c);
    for i in 0..n {
        let v = format!("{tag}-{i}");
        bb.append(
            TimestampMs(NOW + i as i64),
            Some(b"k"),
            Some(v.as_bytes()),
            &[],
        );
    }
    bb.build()
}

fn bytes(c: Compression, n: usize, tag: &str) -> Bytes {
    batch(c, n, tag).into_bytes()
}

// ---- produce helpers ----

fn produce_v(
    b: &Broker,
    v: i16,
    acks: i16,
    parts: Vec<(&str, i32, Option<Bytes>)>,
) -> Option<ProduceResponse> {
    let resp = produce::handle(b, common::produce::request(acks, parts), v);
    if let Some(r) = &resp {
        let mut buf = BytesMut::new();
        r.encode(&mut buf, v)
            .expect("the response encodes at its version");
    }
    resp
}

/// Produces one batch with acks=1 (v9) and returns (error, base offset).
fn produce_one(b: &Broker, topic: &str, p: i32, records: Bytes) -> (i16, i64) {
    let r = produce_v(b, 9, 1, vec![(topic, p, Some(records))]).unwrap();
    let pr = &r.responses[0].partition_responses[0];
    (pr.error_code, pr.base_offset)
}

/// The (error, base offset) of every partition, in response order.
fn outcomes(r: &ProduceResponse) -> Vec<(String, i32, i16, i64)> {
    r.responses
        .iter()
        .flat_map(|t| {
            t.partition_responses
                .iter()
                .map(move |p| (t.name.0.to_string(), p.index, p.error_code, p.base_offset))
        })
        .collect()
}

// ---- fetch helpers ----

fn fetch_part(p: i32, offset: i64) -> FetchPartition {
    let mut fp = FetchPartition::default();
    fp.partition = p;
    fp.fetch_offset = offset;
    fp.partition_max_bytes = 1 << 20;
    fp
}

/// A sessionless, non-waiting READ_UNCOMMITTED fetch by topic name.
fn fetch_req(parts: &[(&str, i32, i64)]) -> FetchRequest {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 0;
    r.min_bytes = 1;
    r.max_bytes = 50 << 20;
    r.session_id = 0;
    r.session_epoch = -1;
    for &(topic, p, offset) in parts {
        match r.topics.last_mut() {
            Some(t) if t.topic.0.as_str() == topic => t.partitions.push(fetch_part(p, offset)),
            _ => {
                let mut t = FetchTopic::default();
                t.topic = TopicName(s(topic));
                t.partitions.push(fetch_part(p, offset));
                r.topics.push(t);
            }
        }
    }
    r
}

/// The request with its topics named by id (v13+).
fn by_id(b: &Broker, mut r: FetchRequest) -> FetchRequest {
    for t in &mut r.topics {
        t.topic_id = b.topics.get(t.topic.0.as_str()).unwrap().id;
        t.topic = TopicName::default();
    }
    r
}

fn fetch_v(b: &Broker, r: FetchRequest, v: i16) -> FetchResponse {
    let resp = fetch::handle(b, r, v);
    let mut buf = BytesMut::new();
    resp.encode(&mut buf, v)
        .expect("the response encodes at its version");
    resp
}

fn only(r: &FetchResponse) -> &PartitionData {
    assert_eq!(r.error_code, NONE);
    assert_eq!(r.responses.len(), 1, "{r:?}");
    assert_eq!(r.responses[0].partitions.len(), 1, "{r:?}");
    &r.responses[0].partitions[0]
}

fn batches_of(d: &PartitionData) -> Vec<RecordBatch> {
    let bytes = d.records.clone().unwrap_or_default();
    Batches::new(bytes).map(|b| b.unwrap()).collect()
}

fn values_of(d: &PartitionData) -> Vec<String> {
    batches_of(d)
        .iter()
        .filter(|b| !b.is_control())
        .flat_map(|b| {
            b.records()
                .unwrap()
                .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `(topic, partition) -> offsets` of a response, for session tests.
fn listed(r: &FetchResponse) -> Vec<(String, i32, usize)> {
    r.responses
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    t.topic.0.to_string(),
                    p.partition_index,
                    p.records.as_ref().map_or(0, |r| r.len()),
                )
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Produce
// ---------------------------------------------------------------------------------------------

#[test]
fn produce_with_acks_1_all_and_0() {
    let (_d, b) = broker();
    let r = produce_v(
        &b,
        9,
        1,
        vec![("t", 0, Some(bytes(Compression::None, 2, "a")))],
    )
    .unwrap();
    assert_eq!(outcomes(&r), vec![("t".into(), 0, NONE, 0)]);
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.log_append_time_ms, -1);
    assert_eq!(p.log_start_offset, 0);
    assert_eq!(p.error_message, None);

    let r = produce_v(
        &b,
        11,
        -1,
        vec![("t", 0, Some(bytes(Compression::None, 3, "b")))],
    )
    .unwrap();
    assert_eq!(outcomes(&r), vec![("t".into(), 0, NONE, 2)]);

    // acks=0: appended, but no response at all.
    assert!(
        produce_v(
            &b,
            3,
            0,
            vec![("t", 0, Some(bytes(Compression::None, 1, "c")))]
        )
        .is_none()
    );

    let h = b.partition("t", 0).unwrap();
    assert_eq!(h.read().log_end_offset().get(), 6);
    assert_eq!(h.read().high_watermark().get(), 6, "HW follows the log end");
    let resp = fetch_v(&b, fetch_req(&[("t", 0, 0)]), 11);
    let d = only(&resp);
    assert_eq!(d.high_watermark, 6);
    assert_eq!(values_of(d), ["a-0", "a-1", "b-0", "b-1", "b-2", "c-0"]);
}

#[test]
fn a_durable_request_appends_every_partition() {
    let (_d, b) = broker();
    let parts = (0..3)
        .map(|p| ("t", p, Some(bytes(Compression::None, 1, &format!("p{p}")))))
        .collect();
    let r = produce_v(&b, 9, -1, parts).unwrap();
    assert_eq!(
        outcomes(&r),
        vec![
            ("t".into(), 0, NONE, 0),
            ("t".into(), 1, NONE, 0),
            ("t".into(), 2, NONE, 0)
        ]
    );
    for p in 0..3 {
        let h = b.partition("t", p).unwrap();
        assert_eq!(h.read().high_watermark().get(), 1);
        assert!(
            h.read().recovery_point().get() >= 1,
            "acks=-1 is durable on return"
        );
    }
}

#[test]
fn every_codec_is_fetched_back_byte_identical() {
    let (_d, b) = broker();
    let codecs = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];
    let mut sent = vec![];
    for (i, c) in codecs.into_iter().enumerate() {
        let batch = batch(c, 3 + i, &format!("{c:?}"));
        let (err, base) = produce_one(&b, "t", 1, batch.as_bytes().clone());
        assert_eq!(err, NONE, "{c:?}");
        sent.push((base, batch));
    }
    let resp = fetch_v(&b, fetch_req(&[("t", 1, 0)]), 12);
    let got = batches_of(only(&resp));
    assert_eq!(got.len(), sent.len());
    for (g, (base, s)) in got.iter().zip(&sent) {
        let (g, s) = (g.as_bytes(), s.as_bytes());
        assert_eq!(g.len(), s.len());
        // Only the broker-owned base offset and partition leader epoch differ; the CRC covers
        // everything from the attributes on, and it is unchanged.
        assert_eq!(i64::from_be_bytes(g[0..8].try_into().unwrap()), *base);
        assert_eq!(
            i32::from_be_bytes(g[12..16].try_into().unwrap()),
            0,
            "leader epoch 0"
        );
        assert_eq!(g[8..12], s[8..12]);
        assert_eq!(g[16..], s[16..]);
    }
    assert_eq!(values_of(only(&resp)).len(), 3 + 4 + 5 + 6 + 7);
}

#[test]
fn produce_errors_stay_in_their_partition() {
    let (_d, b) = broker();
    b.topics
        .create(&b.logs, "__consumer_offsets", 1, LogConfig::default(), None)
        .unwrap();
    b.topics
        .create(&b.logs, "u", 2, LogConfig::default(), None)
        .unwrap();
    let mut corrupt = bytes(Compression::None, 1, "x").to_vec();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0xff;
    let good = || Some(bytes(Compression::None, 1, "ok"));
    let r = produce_v(
        &b,
        9,
        1,
        vec![
            ("t", 0, good()),
            ("t", 7, good()),
            ("t", 1, None),
            ("t", 2, Some(Bytes::new())),
            ("nope", 0, good()),
            ("__consumer_offsets", 0, good()),
            ("u", 0, Some(Bytes::from(corrupt))),
            ("u", 1, good()),
        ],
    )
    .unwrap();
    let codes: Vec<i16> = outcomes(&r).iter().map(|o| o.2).collect();
    assert_eq!(
        codes,
        [
            NONE,
            UNKNOWN_TOPIC_OR_PARTITION,
            INVALID_RECORD,
            INVALID_RECORD,
            UNKNOWN_TOPIC_OR_PARTITION,
            INVALID_TOPIC_EXCEPTION,
            CORRUPT_MESSAGE,
            NONE
        ]
    );
    let bases: Vec<i64> = outcomes(&r).iter().map(|o| o.3).collect();
    assert_eq!(bases, [0, -1, -1, -1, -1, -1, -1, 0]);
    // As Kafka's `appendToLocalLog`: no `error_message` for an internal topic.
    let internal = &r.responses[2].partition_responses[0];
    assert_eq!(internal.error_message, None, "{internal:?}");
    // Messages only from v8.
    let r = produce_v(&b, 7, 1, vec![("t", 1, None)]).unwrap();
    assert_eq!(
        r.responses[0].partition_responses[0].error_code,
        INVALID_RECORD
    );
    assert_eq!(r.responses[0].partition_responses[0].error_message, None);
}

#[test]
fn invalid_acks_fail_every_partition() {
    let (_d, b) = broker();
    let r = produce_v(
        &b,
        9,
        2,
        vec![
            ("t", 0, Some(bytes(Compression::None, 1, "a"))),
            ("t", 1, Some(bytes(Compression::None, 1, "b"))),
        ],
    )
    .unwrap();
    assert!(
        outcomes(&r)
            .iter()
            .all(|o| o.2 == INVALID_REQUIRED_ACKS && o.3 == -1)
    );
    assert_eq!(
        b.partition("t", 0).unwrap().read().log_end_offset().get(),
        0
    );
}

#[test]
fn a_retried_batch_gets_its_original_offset() {
    let (_d, b) = broker();
    let idem = |seq: i32, tag: &str| {
        let mut bb =
            BatchBuilder::new().producer(ProducerId(1000), ProducerEpoch(0), Sequence(seq));
        bb.append(TimestampMs(NOW), None, Some(tag.as_bytes()), &[]);
        bb.append(TimestampMs(NOW), None, Some(tag.as_bytes()), &[]);
        bb.build().into_bytes()
    };
    assert_eq!(
        produce_one(&b, "t", 0, bytes(Compression::None, 1, "first")),
        (NONE, 0)
    );
    assert_eq!(produce_one(&b, "t", 0, idem(0, "x")), (NONE, 1));
    assert_eq!(produce_one(&b, "t", 0, idem(2, "y")), (NONE, 3));
    // The retry of seq 0: no error, the original offset, nothing appended.
    assert_eq!(produce_one(&b, "t", 0, idem(0, "x")), (NONE, 1));
    assert_eq!(
        b.partition("t", 0).unwrap().read().log_end_offset().get(),
        5
    );
}

#[test]
fn log_append_time_topics_report_the_append_time() {
    let (_d, b) = broker();
    let cfg = LogConfig {
        timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    b.topics.create(&b.logs, "lat", 1, cfg, None).unwrap();
    let r = produce_v(
        &b,
        9,
        1,
        vec![("lat", 0, Some(bytes(Compression::None, 1, "a")))],
    )
    .unwrap();
    let p = &r.responses[0].partition_responses[0];
    assert_eq!((p.error_code, p.log_append_time_ms), (NONE, NOW));
}

#[test]
fn an_invalid_timestamp_names_the_record() {
    let (_d, b) = broker();
    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(NOW), None, Some(b"ok"), &[]);
    bb.append(
        TimestampMs(NOW + 10 * 3_600_000),
        None,
        Some(b"future"),
        &[],
    );
    let r = produce_v(&b, 9, 1, vec![("t", 0, Some(bb.build().into_bytes()))]).unwrap();
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, INVALID_TIMESTAMP);
    assert_eq!(p.record_errors.len(), 1);
    assert_eq!(p.record_errors[0].batch_index, 1);
    assert!(p.error_message.is_some());
    assert_eq!(p.log_start_offset, 0);
}

// ---------------------------------------------------------------------------------------------
// Fetch
// ---------------------------------------------------------------------------------------------

#[test]
fn read_committed_skips_past_nothing_and_lists_aborted_transactions() {
    let (_d, b) = broker();
    let txn = {
        let mut bb = BatchBuilder::new()
            .producer(ProducerId(5), ProducerEpoch(0), Sequence(0))
            .transactional(true);
        bb.append(TimestampMs(NOW), None, Some(b"t0"), &[]);
        bb.append(TimestampMs(NOW), None, Some(b"t1"), &[]);
        bb.build().into_bytes()
    };
    // A transactional batch travels with its producer's transactional id (Kafka refuses it
    // otherwise); no coordinator runs here, so nothing verifies it further.
    let mut r = common::produce::request(1, vec![("t", 0, Some(txn))]);
    r.transactional_id = Some(TransactionalId(s("tx")));
    let resp = produce::handle(&b, r, 9).unwrap();
    let pr = &resp.responses[0].partition_responses[0];
    assert_eq!((pr.error_code, pr.base_offset), (NONE, 0));
    let committed = |b: &Broker| {
        let mut r = fetch_req(&[("t", 0, 0)]);
        r.isolation_level = 1;
        fetch_v(b, r, 11)
    };
    // The transaction is open: the LSO holds at its first offset, nothing is readable.
    let resp = committed(&b);
    let d = only(&resp);
    assert_eq!((d.high_watermark, d.last_stable_offset), (2, 0));
    assert!(d.records.as_ref().unwrap().is_empty());
    assert_eq!(d.aborted_transactions, Some(vec![]));

    let h = b.partition("t", 0).unwrap();
    {
        let marker = BatchBuilder::end_txn_marker(
            ProducerId(5),
            ProducerEpoch(0),
            false,
            0,
            TimestampMs(NOW),
        )
        .build();
        let mut log = h.write();
        log.append_as_leader(
            marker.into_bytes(),
            LeaderEpoch(0),
            LeaderOrigin::Coordinator,
        )
        .unwrap();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
    }
    let resp = committed(&b);
    let d = only(&resp);
    assert_eq!((d.high_watermark, d.last_stable_offset), (3, 3));
    let batches = batches_of(d);
    assert_eq!(batches.len(), 2);
    assert!(batches[1].is_control());
    let aborted = d.aborted_transactions.as_ref().unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!((aborted[0].producer_id.0, aborted[0].first_offset), (5, 0));

    // READ_UNCOMMITTED: the same bytes, no aborted list (null).
    let resp = fetch_v(&b, fetch_req(&[("t", 0, 0)]), 11);
    let d = only(&resp);
    assert_eq!(batches_of(d).len(), 2);
    assert_eq!(d.aborted_transactions, None);
}

#[test]
fn consumers_read_to_the_high_watermark_and_replica_fetches_are_refused() {
    let (_d, b) = broker();
    assert_eq!(
        produce_one(&b, "t", 0, bytes(Compression::None, 2, "hw")),
        (NONE, 0)
    );
    // Appended behind the broker's back: past the HW.
    let h = b.partition("t", 0).unwrap();
    h.write()
        .append_as_leader(
            bytes(Compression::None, 1, "beyond"),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    let resp = fetch_v(&b, by_id(&b, fetch_req(&[("t", 0, 0)])), 15);
    assert_eq!(values_of(only(&resp)), ["hw-0", "hw-1"]);
    // A single node has no follower replicas: a fetch posing as one (v15: the replica id in
    // replica_state) reads nothing, as Kafka answers a replica outside the assignment.
    let mut r = by_id(&b, fetch_req(&[("t", 0, 0)]));
    r.replica_state.replica_id = BrokerId(2);
    let d = fetch_v(&b, r, 15);
    let d = only(&d);
    assert_eq!(d.error_code, ResponseError::NotLeaderOrFollower.code());
    assert!(d.records.as_ref().is_none_or(|r| r.is_empty()));
    let mut r = fetch_req(&[("t", 0, 0)]);
    r.replica_id = BrokerId(2);
    r.topics[0].partitions[0].current_leader_epoch = 0;
    let d = fetch_v(&b, r, 12);
    assert_eq!(
        only(&d).error_code,
        ResponseError::UnknownLeaderEpoch.code(),
        "with a current leader epoch, the follower is told to retry"
    );
    // The leader-epoch checks still come first.
    let mut r = fetch_req(&[("t", 0, 0)]);
    r.replica_id = BrokerId(2);
    r.topics[0].partitions[0].current_leader_epoch = 7;
    let d = fetch_v(&b, r, 12);
    assert_eq!(
        only(&d).error_code,
        ResponseError::UnknownLeaderEpoch.code()
    );
}

#[test]
fn leader_epochs_are_checked_and_divergence_reported() {
    let (_d, b) = broker();
    assert_eq!(
        produce_one(&b, "t", 2, bytes(Compression::None, 3, "e0")),
        (NONE, 0)
    );
    let h = b.partition("t", 2).unwrap();
    h.write().assign_leader_epoch(LeaderEpoch(3)).unwrap();
    assert_eq!(
        produce_one(&b, "t", 2, bytes(Compression::None, 2, "e3")),
        (NONE, 3)
    );
    assert_eq!(b.leader_epoch(&h), 3);

    let follower = |offset: i64, last_epoch: i32, current: i32| {
        let mut r = fetch_req(&[("t", 2, offset)]);
        r.topics[0].partitions[0].last_fetched_epoch = last_epoch;
        r.topics[0].partitions[0].current_leader_epoch = current;
        fetch_v(&b, r, 12)
    };
    // Epoch 0 ends at 3 here: fetching at 3 after epoch 0 is consistent.
    let resp = follower(3, 0, 3);
    assert_eq!(values_of(only(&resp)), ["e3-0", "e3-1"]);
    // Past the end of epoch 0: diverging at (0, 3), no records.
    let resp = follower(4, 0, 3);
    let d = only(&resp);
    assert_eq!(d.error_code, NONE);
    assert_eq!(
        (d.diverging_epoch.epoch, d.diverging_epoch.end_offset),
        (0, 3)
    );
    assert!(d.records.as_ref().unwrap().is_empty());
    assert_eq!(d.high_watermark, 5);
    // An epoch this log never had (1): the floor epoch 0 is below it.
    let resp = follower(3, 1, -1);
    let d = only(&resp);
    assert_eq!(
        (d.diverging_epoch.epoch, d.diverging_epoch.end_offset),
        (0, 3)
    );
    // READ_COMMITTED: diverging is answered without aborted transactions (null), as Kafka's
    // `Partition.readRecords` answers it.
    let mut r = fetch_req(&[("t", 2, 4)]);
    r.isolation_level = 1;
    r.topics[0].partitions[0].last_fetched_epoch = 0;
    let resp = fetch_v(&b, r, 12);
    let d = only(&resp);
    assert_eq!(d.diverging_epoch.end_offset, 3);
    assert_eq!(d.aborted_transactions, None);
    // An epoch above every known one: out of range, the log's offsets unknown.
    let resp = follower(5, 7, -1);
    let d = only(&resp);
    assert_eq!(d.error_code, OFFSET_OUT_OF_RANGE);
    assert_eq!(
        (d.high_watermark, d.last_stable_offset, d.log_start_offset),
        (-1, -1, -1)
    );
    // Current leader epoch: older is fenced, newer unknown.
    assert_eq!(only(&follower(3, -1, 2)).error_code, FENCED_LEADER_EPOCH);
    assert_eq!(only(&follower(3, -1, 4)).error_code, UNKNOWN_LEADER_EPOCH);
    // v11 has no diverging epoch field; last_fetched_epoch is absent there (-1).
    let mut r = fetch_req(&[("t", 2, 0)]);
    r.topics[0].partitions[0].current_leader_epoch = 3;
    assert_eq!(values_of(only(&fetch_v(&b, r, 11))).len(), 5);
}

/// Kafka's `ReplicaManager.readFromLog` answers OFFSET_OUT_OF_RANGE as every read error
/// (`LogReadResult(error)`): high watermark, last stable offset and log start offset −1.
#[test]
fn an_offset_out_of_range_answers_unknown_log_bounds() {
    let (_d, b) = broker();
    assert_eq!(
        produce_one(&b, "t", 0, bytes(Compression::None, 3, "x")),
        (NONE, 0)
    );
    for offset in [4, 100, -1] {
        let resp = fetch_v(&b, fetch_req(&[("t", 0, offset)]), 11);
        let d = only(&resp);
        assert_eq!(d.error_code, OFFSET_OUT_OF_RANGE, "{offset}");
        assert_eq!(
            (d.high_watermark, d.last_stable_offset, d.log_start_offset),
            (-1, -1, -1)
        );
        assert!(d.records.as_ref().unwrap().is_empty());
    }
    // At the log end: no error, no records.
    let resp = fetch_v(&b, fetch_req(&[("t", 0, 3)]), 11);
    let d = only(&resp);
    assert_eq!(d.error_code, NONE);
    assert!(d.records.as_ref().unwrap().is_empty());
}

#[test]
fn unknown_topics_by_name_and_by_id() {
    let (_d, b) = broker();
    assert_eq!(
        produce_one(&b, "t", 1, bytes(Compression::None, 1, "x")),
        (NONE, 0)
    );
    let resp = fetch_v(
        &b,
        fetch_req(&[("nope", 0, 0), ("t", 9, 0), ("t", 1, 0)]),
        12,
    );
    let codes: Vec<i16> = resp
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect();
    // As Kafka's `KafkaApis`: the partition read first, then the unknown ones in order.
    assert_eq!(
        codes,
        [NONE, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION]
    );
    let topics: Vec<&str> = resp.responses.iter().map(|t| t.topic.0.as_str()).collect();
    assert_eq!(topics, ["t", "nope", "t"]);

    // v13+: by topic id, and the response carries the id.
    let id = b.topics.get("t").unwrap().id;
    let stranger = Uuid::new_v4();
    let mut r = FetchRequest::default();
    r.max_bytes = 1 << 20;
    r.min_bytes = 1;
    for tid in [stranger, id] {
        let mut t = FetchTopic::default();
        t.topic_id = tid;
        t.partitions.push(fetch_part(1, 0));
        r.topics.push(t);
    }
    let resp = fetch_v(&b, r, 13);
    assert_eq!(resp.responses.len(), 2);
    assert_eq!(resp.responses[0].topic_id, id);
    assert_eq!(values_of(&resp.responses[0].partitions[0]), ["x-0"]);
    assert_eq!(resp.responses[1].topic_id, stranger);
    assert_eq!(resp.responses[1].partitions[0].error_code, UNKNOWN_TOPIC_ID);
}

#[test]
fn only_the_first_partition_with_data_may_exceed_max_bytes() {
    let (_d, b) = broker();
    for p in 0..2 {
        assert_eq!(
            produce_one(&b, "t", p, bytes(Compression::None, 3, "big")),
            (NONE, 0)
        );
        assert_eq!(
            produce_one(&b, "t", p, bytes(Compression::None, 3, "more")),
            (NONE, 3)
        );
    }
    let mut r = fetch_req(&[("t", 2, 0), ("t", 0, 0), ("t", 1, 0)]);
    r.max_bytes = 1;
    let resp = fetch_v(&b, r, 11);
    let ps = &resp.responses[0].partitions;
    assert!(
        ps[0].records.as_ref().unwrap().is_empty(),
        "empty partition 2"
    );
    assert_eq!(
        batches_of(&ps[1]).len(),
        1,
        "one whole batch despite max_bytes"
    );
    assert!(ps[2].records.as_ref().unwrap().is_empty(), "no room left");
    // Partition max bytes bounds a partition the same way.
    let mut r = fetch_req(&[("t", 0, 0)]);
    r.topics[0].partitions[0].partition_max_bytes = 1;
    assert_eq!(batches_of(only(&fetch_v(&b, r, 4))).len(), 1);
}

#[test]
fn incremental_fetch_sessions() {
    let (_d, b) = broker();
    assert_eq!(
        produce_one(&b, "t", 0, bytes(Compression::None, 2, "a")),
        (NONE, 0)
    );
    assert_eq!(
        produce_one(&b, "t", 1, bytes(Compression::None, 1, "b")),
        (NONE, 0)
    );
    let req = |id: i32, epoch: i32, parts: &[(&str, i32, i64)]| {
        let mut r = fetch_req(parts);
        r.session_id = id;
        r.session_epoch = epoch;
        r
    };

    // Full request: a new session, every partition answered.
    let resp = fetch_v(&b, req(0, 0, &[("t", 0, 0), ("t", 1, 0)]), 12);
    let id = resp.session_id;
    assert_ne!(id, 0);
    assert_eq!(listed(&resp).len(), 2);

    // The client moves its offsets to the end: nothing changed, nothing listed.
    let resp = fetch_v(&b, req(id, 1, &[("t", 0, 2), ("t", 1, 1)]), 12);
    assert_eq!((resp.error_code, resp.session_id), (NONE, id));
    assert!(resp.responses.is_empty(), "{resp:?}");
    let resp = fetch_v(&b, req(id, 2, &[]), 12);
    assert!(resp.responses.is_empty());

    // New data on partition 1 shows up, alone.
    assert_eq!(
        produce_one(&b, "t", 1, bytes(Compression::None, 1, "b2")),
        (NONE, 1)
    );
    let resp = fetch_v(&b, req(id, 3, &[]), 12);
    assert_eq!(
        listed(&resp),
        [(
            "t".to_string(),
            1,
            resp.responses[0].partitions[0]
                .records
                .as_ref()
                .unwrap()
                .len()
        )]
    );
    assert_eq!(values_of(&resp.responses[0].partitions[0]), ["b2-0"]);

    // Forget partition 1; its new data is no longer reported. Partition 0's is.
    let mut r = req(id, 4, &[("t", 1, 2)]);
    r.topics.clear();
    let mut ft = ForgottenTopic::default();
    ft.topic = TopicName(s("t"));
    ft.partitions = vec![1];
    r.forgotten_topics_data.push(ft);
    assert!(fetch_v(&b, r, 12).responses.is_empty());
    assert_eq!(
        produce_one(&b, "t", 1, bytes(Compression::None, 1, "b3")),
        (NONE, 2)
    );
    assert!(fetch_v(&b, req(id, 5, &[]), 12).responses.is_empty());
    assert_eq!(
        produce_one(&b, "t", 0, bytes(Compression::None, 1, "a2")),
        (NONE, 2)
    );
    let resp = fetch_v(&b, req(id, 6, &[]), 12);
    assert_eq!(listed(&resp).iter().map(|l| l.1).collect::<Vec<_>>(), [0]);

    // A wrong epoch, an unknown session: top-level errors, nothing else.
    let resp = fetch_v(&b, req(id, 99, &[]), 12);
    assert_eq!(
        (resp.error_code, resp.session_id),
        (INVALID_FETCH_SESSION_EPOCH, 0)
    );
    assert!(resp.responses.is_empty());
    let resp = fetch_v(&b, req(id.wrapping_add(1).max(1), 1, &[]), 12);
    assert_eq!(resp.error_code, FETCH_SESSION_ID_NOT_FOUND);
    // The session survived the bad request.
    let resp = fetch_v(&b, req(id, 7, &[]), 12);
    assert_eq!(resp.error_code, NONE);

    // Closing: epoch -1, a full answer without a session.
    let resp = fetch_v(&b, req(id, -1, &[("t", 0, 0)]), 12);
    assert_eq!((resp.error_code, resp.session_id), (NONE, 0));
    assert_eq!(values_of(only(&resp)), ["a-0", "a-1", "a2-0"]);
    assert_eq!(
        fetch_v(&b, req(id, 8, &[]), 12).error_code,
        FETCH_SESSION_ID_NOT_FOUND
    );
    assert!(b.fetch_sessions.is_empty());
}

#[test]
fn a_long_poll_returns_when_another_thread_produces() {
    let (_d, b) = broker();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let mut r = fetch_req(&[("t", 2, 0)]);
            r.max_wait_ms = 600_000;
            r.min_bytes = 1;
            tx.send(fetch_v(b, r, 12)).unwrap();
        });
        // Give the fetch a moment to start waiting (if it has not, it finds the data at once:
        // the assertion holds either way).
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            produce_one(b, "t", 2, bytes(Compression::None, 1, "late")),
            (NONE, 0)
        );
        let resp = rx
            .recv_timeout(HANG)
            .expect("the long poll returns after the produce");
        assert_eq!(values_of(only(&resp)), ["late-0"]);
    });
}

#[test]
fn a_long_poll_without_data_returns_empty_after_max_wait() {
    let (_d, b) = broker();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let mut r = fetch_req(&[("t", 0, 0), ("t", 1, 0)]);
            r.max_wait_ms = 50;
            r.min_bytes = 1;
            tx.send(fetch_v(b, r, 12)).unwrap();
        });
        let resp = rx
            .recv_timeout(HANG)
            .expect("the long poll returns after max_wait");
        assert_eq!(resp.error_code, NONE);
        let ps = &resp.responses[0].partitions;
        assert_eq!(ps.len(), 2);
        assert!(
            ps.iter()
                .all(|p| p.error_code == NONE && p.records.as_ref().unwrap().is_empty())
        );
    });
}

#[test]
fn sessions_by_topic_id_forget_by_id_and_refuse_names() {
    let (_d, b) = broker();
    assert_eq!(
        produce_one(&b, "t", 0, bytes(Compression::None, 1, "a")),
        (NONE, 0)
    );
    let id = b.topics.get("t").unwrap().id;
    let mut r = by_id(&b, fetch_req(&[("t", 0, 0), ("t", 1, 0)]));
    r.session_epoch = 0;
    let resp = fetch_v(&b, r, 16);
    let session = resp.session_id;
    assert_ne!(session, 0);
    assert_eq!(resp.responses[0].topic_id, id);
    assert_eq!(resp.responses[0].partitions.len(), 2);

    // Forget partition 0 by id; new data there is not reported.
    let mut r = fetch_req(&[]);
    r.session_id = session;
    r.session_epoch = 1;
    let mut ft = ForgottenTopic::default();
    ft.topic_id = id;
    ft.partitions = vec![0];
    r.forgotten_topics_data.push(ft);
    assert!(fetch_v(&b, r, 16).responses.is_empty());
    assert_eq!(
        produce_one(&b, "t", 0, bytes(Compression::None, 1, "b")),
        (NONE, 1)
    );
    let mut r = fetch_req(&[]);
    r.session_id = session;
    r.session_epoch = 2;
    assert!(fetch_v(&b, r.clone(), 16).responses.is_empty());

    // A request naming topics by name cannot use a topic-id session.
    r.session_epoch = 3;
    assert_eq!(fetch_v(&b, r, 12).error_code, 106);
}

/// `fetch.max.bytes` caps an answer whatever the request's `max_bytes` (found in review: a
/// request with `i32::MAX` limits made the broker read that much into memory); the first batch
/// may still exceed it, as in Kafka.
#[test]
fn the_broker_caps_an_answer_at_fetch_max_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.fetch_max_bytes = 1024;
    let b = Broker::open(
        config,
        Arc::new(PwriteStorage::new()),
        ManualClock::new(NOW),
    )
    .unwrap();
    b.topics
        .create(&b.logs, "t", 1, LogConfig::default(), None)
        .unwrap();
    let mut sizes = vec![];
    for i in 0..16 {
        let records = bytes(Compression::None, 4, &format!("b{i}"));
        sizes.push(records.len());
        assert_eq!(produce_one(&b, "t", 0, records).0, NONE);
    }
    assert!(
        sizes[0] < 1024 && sizes.iter().sum::<usize>() > 1024,
        "{sizes:?}"
    );
    let mut r = fetch_req(&[("t", 0, 0)]);
    r.max_bytes = i32::MAX;
    r.topics[0].partitions[0].partition_max_bytes = i32::MAX;
    let d = only(&fetch_v(&b, r, 12)).clone();
    let got = d.records.as_ref().map_or(0, |r| r.len());
    assert!(
        got <= 1024 && got >= sizes[0],
        "{got} bytes answered, cap 1024"
    );
    // A first batch larger than the cap still comes whole.
    let big = bytes(Compression::None, 200, "big");
    assert!(big.len() > 1024);
    assert_eq!(produce_one(&b, "t", 0, big.clone()).0, NONE);
    let mut r = fetch_req(&[("t", 0, 64)]);
    r.max_bytes = i32::MAX;
    r.topics[0].partitions[0].partition_max_bytes = i32::MAX;
    let d = only(&fetch_v(&b, r, 12)).clone();
    assert_eq!(d.records.as_ref().map_or(0, |r| r.len()), big.len());
}
