//! `EngineSource` answers the mirror's requests as a single Kafka broker would: metadata, fetch
//! (leader-epoch checks, the diverging-epoch check, out-of-range, byte limits), list offsets,
//! OffsetForLeaderEpoch, topic configs, groups, and the fault injections the simulation uses.

use bytes::Bytes;
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{LogManager, LogManagerConfig, PartitionHandle};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::{EngineSource, codes};
use mirrorlog_mirror::source::{
    CommittedOffset, FetchRequest, GroupListing, OffsetSpec, PartitionFetch, SourceCluster,
    SourceError,
};
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::{BatchBuilder, Batches};
use std::sync::Arc;

const NODE: i32 = 1;

struct Fixture {
    _dir: tempfile::TempDir,
    src: Arc<EngineSource>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let (mgr, _) = LogManager::open(
        LogManagerConfig::new(dir.path()),
        storage,
        ManualClock::new(1_000_000),
    )
    .unwrap();
    let src = EngineSource::new(Arc::new(mgr), "source-cluster", NODE);
    Fixture { _dir: dir, src }
}

fn topic_id(n: u8) -> [u8; 16] {
    [n; 16]
}

fn create(src: &EngineSource, topic: &str, partitions: i32, id: u8) {
    create_with(src, topic, partitions, id, LogConfig::default());
}

fn create_with(src: &EngineSource, topic: &str, partitions: i32, id: u8, config: LogConfig) {
    for p in 0..partitions {
        src.logs()
            .create(&tp(topic, p), TopicId(topic_id(id)), config.clone())
            .unwrap();
    }
}

fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition {
        topic: topic.into(),
        partition,
    }
}

fn handle(src: &EngineSource, topic: &str, partition: i32) -> Arc<PartitionHandle> {
    src.logs().get(&tp(topic, partition)).unwrap()
}

/// Appends one batch of `records` records with timestamps `ts, ts+1, …` in `epoch`, then moves
/// the high watermark to the log end. Returns the batch's offsets.
fn produce(
    src: &EngineSource,
    topic: &str,
    partition: i32,
    epoch: i32,
    records: usize,
    ts: i64,
) -> (Offset, Offset) {
    let mut b = BatchBuilder::new();
    for i in 0..records {
        b.append(
            TimestampMs(ts + i as i64),
            Some(format!("k{i}").as_bytes()),
            Some(&[7u8; 100]),
            &[],
        );
    }
    let h = handle(src, topic, partition);
    let mut log = h.write();
    let info = log
        .append_as_leader(
            b.build().into_bytes(),
            LeaderEpoch(epoch),
            LeaderOrigin::Client,
        )
        .unwrap();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    (info.first_offset, info.last_offset)
}

fn pf(topic: &str, partition: i32, offset: i64) -> PartitionFetch {
    PartitionFetch {
        topic: topic.into(),
        topic_id: [0; 16],
        partition,
        fetch_offset: Offset(offset),
        last_fetched_epoch: LeaderEpoch::NONE,
        current_leader_epoch: LeaderEpoch::NONE,
        max_bytes: 1 << 20,
    }
}

fn fetch_req(partitions: Vec<PartitionFetch>) -> FetchRequest {
    FetchRequest {
        partitions,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: 10 << 20,
    }
}

/// The bytes the log holds from `offset` to its high watermark.
fn log_bytes(src: &EngineSource, topic: &str, partition: i32, offset: i64) -> Bytes {
    let h = handle(src, topic, partition);
    let log = h.read();
    log.read(
        Offset(offset),
        u32::MAX,
        FetchIsolation::HighWatermark,
        true,
    )
    .unwrap()
    .records
    .map(|d| d.slice.read_all().unwrap())
    .unwrap_or_default()
}

fn offsets_of(records: &Bytes) -> Vec<(i64, i64, i32)> {
    Batches::new(records.clone())
        .map(|b| {
            let b = b.unwrap();
            (
                b.base_offset().get(),
                b.last_offset().get(),
                b.partition_leader_epoch().get(),
            )
        })
        .collect()
}

#[test]
fn metadata_lists_every_topic_with_ids_leaders_and_epochs() {
    let f = fixture();
    create(&f.src, "orders", 3, 1);
    create(&f.src, "__consumer_offsets", 1, 2);
    produce(&f.src, "orders", 1, 4, 2, 10);

    let md = f.src.metadata(None).unwrap();
    assert_eq!(md.cluster_id, "source-cluster");
    assert_eq!(md.nodes.len(), 1);
    assert_eq!(md.nodes[0].id, NODE);
    let names: Vec<&str> = md.topics.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["__consumer_offsets", "orders"]);
    let internal = &md.topics[0];
    assert!(internal.internal);
    assert_eq!(internal.id, topic_id(2));
    let orders = &md.topics[1];
    assert!(!orders.internal);
    assert_eq!(orders.error, 0);
    assert_eq!(orders.id, topic_id(1));
    let parts: Vec<(i32, i32, i32)> = orders
        .partitions
        .iter()
        .map(|p| (p.partition, p.leader, p.leader_epoch.get()))
        .collect();
    // Empty partitions advertise epoch 0; partition 1 wrote in epoch 4.
    assert_eq!(parts, [(0, NODE, 0), (1, NODE, 4), (2, NODE, 0)]);
    assert!(orders.partitions.iter().all(|p| p.error == 0));
}

#[test]
fn metadata_for_named_topics_reports_unknown_ones_with_error_3() {
    let f = fixture();
    create(&f.src, "orders", 1, 1);
    create(&f.src, "other", 1, 3);
    let md = f
        .src
        .metadata(Some(&["missing".to_string(), "orders".to_string()]))
        .unwrap();
    assert_eq!(md.topics.len(), 2);
    assert_eq!(md.topics[0].name, "missing");
    assert_eq!(md.topics[0].error, codes::UNKNOWN_TOPIC_OR_PARTITION);
    assert!(md.topics[0].partitions.is_empty());
    assert_eq!(md.topics[1].name, "orders");
    assert_eq!(md.topics[1].error, 0);
    assert_eq!(md.topics[1].partitions.len(), 1);
}

#[test]
fn fetch_returns_the_log_bytes_up_to_the_high_watermark() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 0, 3, 10);
    produce(&f.src, "t", 0, 0, 2, 20);
    let r = f.src.fetch(NODE, &fetch_req(vec![pf("t", 0, 0)])).unwrap();
    assert_eq!(r.error, 0);
    let p = &r.partitions[0];
    assert_eq!(p.error, 0);
    assert_eq!(p.high_watermark, Offset(5));
    assert_eq!(p.log_start_offset, Offset(0));
    assert_eq!(p.diverging_epoch, None);
    assert_eq!(p.records, log_bytes(&f.src, "t", 0, 0));
    assert_eq!(offsets_of(&p.records), [(0, 2, 0), (3, 4, 0)]);

    // From the middle batch on; and at the high watermark nothing.
    let r = f.src.fetch(NODE, &fetch_req(vec![pf("t", 0, 3)])).unwrap();
    assert_eq!(offsets_of(&r.partitions[0].records), [(3, 4, 0)]);
    let r = f.src.fetch(NODE, &fetch_req(vec![pf("t", 0, 5)])).unwrap();
    assert_eq!(r.partitions[0].error, 0);
    assert!(r.partitions[0].records.is_empty());
}

#[test]
fn fetch_stops_at_the_high_watermark_not_the_log_end() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 0, 2, 10);
    produce(&f.src, "t", 0, 0, 2, 20);
    handle(&f.src, "t", 0)
        .write()
        .update_high_watermark(Offset(2));
    let r = f.src.fetch(NODE, &fetch_req(vec![pf("t", 0, 0)])).unwrap();
    assert_eq!(r.partitions[0].high_watermark, Offset(2));
    assert_eq!(offsets_of(&r.partitions[0].records), [(0, 1, 0)]);
    // Between the high watermark and the log end: in range, but nothing to read yet.
    let r = f.src.fetch(NODE, &fetch_req(vec![pf("t", 0, 3)])).unwrap();
    assert_eq!(r.partitions[0].error, 0);
    assert!(r.partitions[0].records.is_empty());
}

#[test]
fn fetch_respects_partition_and_response_byte_limits() {
    let f = fixture();
    create(&f.src, "t", 3, 1);
    for p in 0..3 {
        for i in 0..4 {
            produce(&f.src, "t", p, 0, 5, 10 * i);
        }
    }
    let batch = log_bytes(&f.src, "t", 0, 0).len() / 4;

    // A partition limit below one batch still returns one whole batch for the first partition
    // with data; a later partition whose first batch does not fit its limit answers no records
    // (Kafka's `firstEntryIncomplete`), never a cut batch.
    let mut parts = vec![pf("t", 0, 0), pf("t", 1, 0), pf("t", 2, 0)];
    for p in &mut parts {
        p.max_bytes = 10;
    }
    let r = f.src.fetch(NODE, &fetch_req(parts)).unwrap();
    assert_eq!(r.partitions[0].records.len(), batch);
    assert_eq!(offsets_of(&r.partitions[0].records), [(0, 4, 0)]);
    assert!(r.partitions[1].records.is_empty());
    assert!(r.partitions[2].records.is_empty());

    // A response limit of 2.5 batches: partition 0 takes two batches (its limit); half a batch
    // is left, which partition 1's first batch does not fit: it answers no records, and neither
    // does partition 2.
    let mut parts = vec![pf("t", 0, 0), pf("t", 1, 0), pf("t", 2, 0)];
    parts[0].max_bytes = (2 * batch) as i32;
    let mut req = fetch_req(parts);
    req.max_bytes = (2 * batch + batch / 2) as i32;
    let r = f.src.fetch(NODE, &req).unwrap();
    assert_eq!(r.partitions[0].records.len(), 2 * batch);
    assert!(r.partitions[1].records.is_empty());
    assert!(r.partitions[2].records.is_empty());

    // With 1.5 batches left, partition 1 answers its first batch whole and the part of the
    // second that fits (a trailing partial batch, as Kafka's slice ends); partition 2 nothing.
    let mut parts = vec![pf("t", 0, 0), pf("t", 1, 0), pf("t", 2, 0)];
    parts[0].max_bytes = batch as i32;
    let mut req = fetch_req(parts);
    req.max_bytes = (2 * batch + batch / 2) as i32;
    let r = f.src.fetch(NODE, &req).unwrap();
    assert_eq!(r.partitions[0].records.len(), batch);
    assert_eq!(r.partitions[1].records.len(), batch + batch / 2);
    assert!(r.partitions[2].records.is_empty());
    let total: usize = r.partitions.iter().map(|p| p.records.len()).sum();
    assert!(total <= req.max_bytes as usize);

    // An empty first partition does not use up the one-whole-batch allowance.
    create(&f.src, "empty", 1, 9);
    let mut parts = vec![pf("empty", 0, 0), pf("t", 0, 0)];
    parts[1].max_bytes = 1;
    let r = f.src.fetch(NODE, &fetch_req(parts)).unwrap();
    assert!(r.partitions[0].records.is_empty());
    assert_eq!(r.partitions[1].records.len(), batch);
}

#[test]
fn fetch_of_an_unknown_partition_is_error_3_and_of_an_unknown_id_error_100() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 0, 1, 10);
    let mut by_good_id = pf("t", 0, 0);
    by_good_id.topic_id = topic_id(1);
    let mut by_stale_id = pf("t", 0, 0);
    by_stale_id.topic_id = topic_id(7);
    let mut bad_partition_by_id = pf("t", 5, 0);
    bad_partition_by_id.topic_id = topic_id(1);
    let r = f
        .src
        .fetch(
            NODE,
            &fetch_req(vec![
                pf("nope", 0, 0),
                pf("t", 1, 0),
                by_good_id,
                by_stale_id,
                bad_partition_by_id,
            ]),
        )
        .unwrap();
    let errors: Vec<i16> = r.partitions.iter().map(|p| p.error).collect();
    assert_eq!(
        errors,
        [
            codes::UNKNOWN_TOPIC_OR_PARTITION,
            codes::UNKNOWN_TOPIC_OR_PARTITION,
            0,
            codes::UNKNOWN_TOPIC_ID,
            codes::UNKNOWN_TOPIC_OR_PARTITION,
        ]
    );
    assert_eq!(r.partitions[0].high_watermark, Offset(-1));
    assert!(r.partitions[0].records.is_empty());
    assert!(!r.partitions[2].records.is_empty());
}

#[test]
fn fetch_from_another_node_is_not_leader_for_every_partition() {
    let f = fixture();
    create(&f.src, "t", 2, 1);
    produce(&f.src, "t", 0, 0, 1, 10);
    let r = f
        .src
        .fetch(
            NODE + 1,
            &fetch_req(vec![pf("t", 0, 0), pf("t", 1, 0), pf("x", 0, 0)]),
        )
        .unwrap();
    assert!(
        r.partitions
            .iter()
            .all(|p| p.error == codes::NOT_LEADER_OR_FOLLOWER && p.records.is_empty())
    );
}

#[test]
fn fetch_checks_the_current_leader_epoch() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 3, 1, 10);
    let with_epoch = |e: i32| {
        let mut p = pf("t", 0, 0);
        p.current_leader_epoch = LeaderEpoch(e);
        p
    };
    let r = f
        .src
        .fetch(
            NODE,
            &fetch_req(vec![
                with_epoch(2),
                with_epoch(4),
                with_epoch(3),
                with_epoch(-1),
            ]),
        )
        .unwrap();
    let errors: Vec<i16> = r.partitions.iter().map(|p| p.error).collect();
    assert_eq!(
        errors,
        [
            codes::FENCED_LEADER_EPOCH,
            codes::UNKNOWN_LEADER_EPOCH,
            0,
            0
        ]
    );
    assert!(r.partitions[0].records.is_empty());
    assert!(!r.partitions[2].records.is_empty());
}

#[test]
fn fetch_outside_the_log_is_offset_out_of_range_with_offsets_filled() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    for i in 0..4 {
        produce(&f.src, "t", 0, 0, 2, 10 * i);
    }
    handle(&f.src, "t", 0)
        .write()
        .maybe_increment_log_start_offset(Offset(4))
        .unwrap();
    let r = f
        .src
        .fetch(
            NODE,
            &fetch_req(vec![pf("t", 0, 9), pf("t", 0, 2), pf("t", 0, 4)]),
        )
        .unwrap();
    for p in &r.partitions[..2] {
        assert_eq!(p.error, codes::OFFSET_OUT_OF_RANGE);
        assert_eq!(p.high_watermark, Offset(8));
        assert_eq!(p.log_start_offset, Offset(4));
        assert!(p.records.is_empty());
    }
    assert_eq!(r.partitions[2].error, 0);
    assert_eq!(offsets_of(&r.partitions[2].records), [(4, 5, 0), (6, 7, 0)]);
}

#[test]
fn unclean_election_makes_the_next_fetch_answer_a_diverging_epoch() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 0, 5, 10); // epoch 0: 0..=4
    produce(&f.src, "t", 0, 1, 5, 20); // epoch 1: 5..=9
    // The destination copied everything: it fetches at 10 with last fetched epoch 1.
    let mut next = pf("t", 0, 10);
    next.last_fetched_epoch = LeaderEpoch(1);
    let r = f.src.fetch(NODE, &fetch_req(vec![next.clone()])).unwrap();
    assert_eq!(r.partitions[0].error, 0);
    assert_eq!(r.partitions[0].diverging_epoch, None);

    // The source loses 7..=9 and moves to epoch 2, which then writes 7..=8.
    f.src.unclean_election("t", 0, Offset(7)).unwrap();
    let h = handle(&f.src, "t", 0);
    assert_eq!(h.read().log_end_offset(), Offset(5));
    assert_eq!(h.read().epoch_cache().latest_epoch(), Some(LeaderEpoch(2)));
    let md = f.src.metadata(None).unwrap();
    assert_eq!(md.topics[0].partitions[0].leader_epoch, LeaderEpoch(2));
    produce(&f.src, "t", 0, 2, 3, 30);

    let r = f.src.fetch(NODE, &fetch_req(vec![next.clone()])).unwrap();
    let p = &r.partitions[0];
    assert_eq!(p.error, 0);
    // The truncation took the whole epoch-1 batch: the source's largest epoch <= 1 is now 0,
    // which ends where epoch 2 starts.
    assert_eq!(p.diverging_epoch, Some((LeaderEpoch(0), Offset(5))));
    assert!(p.records.is_empty());
    assert_eq!(p.high_watermark, Offset(8));
    assert_eq!(
        f.src
            .end_offset_for_epoch("t", 0, LeaderEpoch(1), LeaderEpoch::NONE)
            .unwrap(),
        (LeaderEpoch(0), Offset(5))
    );

    // Having truncated to 5 (its last batch is now of epoch 0), the destination fetches
    // cleanly.
    next.fetch_offset = Offset(5);
    next.last_fetched_epoch = LeaderEpoch(0);
    let r = f.src.fetch(NODE, &fetch_req(vec![next])).unwrap();
    assert_eq!(r.partitions[0].diverging_epoch, None);
    assert_eq!(offsets_of(&r.partitions[0].records), [(5, 7, 2)]);
}

#[test]
fn diverging_epoch_when_the_source_never_had_the_fetched_epoch() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 0, 4, 10); // epoch 0: 0..=3
    produce(&f.src, "t", 0, 5, 4, 20); // epoch 5: 4..=7
    // The destination holds epoch 3 up to 6: the source's largest epoch <= 3 is 0, ending at 4.
    let mut p = pf("t", 0, 6);
    p.last_fetched_epoch = LeaderEpoch(3);
    let r = f.src.fetch(NODE, &fetch_req(vec![p])).unwrap();
    assert_eq!(
        r.partitions[0].diverging_epoch,
        Some((LeaderEpoch(0), Offset(4)))
    );

    // An epoch above every epoch the source knows: Kafka cannot find its end: out of range.
    let mut p = pf("t", 0, 6);
    p.last_fetched_epoch = LeaderEpoch(9);
    let r = f.src.fetch(NODE, &fetch_req(vec![p])).unwrap();
    assert_eq!(r.partitions[0].error, codes::OFFSET_OUT_OF_RANGE);
    assert_eq!(r.partitions[0].diverging_epoch, None);

    // The current epoch: no divergence, records from the fetch offset.
    let mut p = pf("t", 0, 4);
    p.last_fetched_epoch = LeaderEpoch(5);
    let r = f.src.fetch(NODE, &fetch_req(vec![p])).unwrap();
    assert_eq!(r.partitions[0].diverging_epoch, None);
    assert_eq!(offsets_of(&r.partitions[0].records), [(4, 7, 5)]);

    // A fetch offset past the log end with a known epoch diverges (end < fetch offset).
    let mut p = pf("t", 0, 12);
    p.last_fetched_epoch = LeaderEpoch(5);
    let r = f.src.fetch(NODE, &fetch_req(vec![p])).unwrap();
    assert_eq!(
        r.partitions[0].diverging_epoch,
        Some((LeaderEpoch(5), Offset(8)))
    );
}

#[test]
fn unclean_election_of_an_unknown_partition_fails() {
    let f = fixture();
    assert!(f.src.unclean_election("nope", 0, Offset(0)).is_err());
}

#[test]
fn list_offset_answers_earliest_latest_and_by_timestamp() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 1, 2, 100); // 0..=1, ts 100, 101
    produce(&f.src, "t", 0, 2, 2, 200); // 2..=3, ts 200, 201
    produce(&f.src, "t", 0, 2, 2, 300); // 4..=5, ts 300, 301
    let lo = |spec| f.src.list_offset("t", 0, spec).unwrap();
    assert_eq!(lo(OffsetSpec::Earliest), (Offset(0), LeaderEpoch(1)));
    assert_eq!(lo(OffsetSpec::Latest), (Offset(6), LeaderEpoch(2)));
    assert_eq!(
        lo(OffsetSpec::Timestamp(TimestampMs(150))),
        (Offset(2), LeaderEpoch(2))
    );
    assert_eq!(
        lo(OffsetSpec::Timestamp(TimestampMs(101))),
        (Offset(1), LeaderEpoch(1))
    );
    assert_eq!(
        lo(OffsetSpec::Timestamp(TimestampMs(999))),
        (Offset(-1), LeaderEpoch(-1))
    );
    // Latest is the high watermark.
    handle(&f.src, "t", 0)
        .write()
        .update_high_watermark(Offset(4));
    assert_eq!(lo(OffsetSpec::Latest).0, Offset(4));
    // Earliest follows the log start.
    handle(&f.src, "t", 0)
        .write()
        .maybe_increment_log_start_offset(Offset(2))
        .unwrap();
    assert_eq!(lo(OffsetSpec::Earliest), (Offset(2), LeaderEpoch(2)));

    match f.src.list_offset("nope", 0, OffsetSpec::Latest) {
        Err(SourceError::Kafka { code, .. }) => assert_eq!(code, codes::UNKNOWN_TOPIC_OR_PARTITION),
        other => panic!("expected error 3, got {other:?}"),
    }
}

#[test]
fn end_offset_for_epoch_is_the_epoch_cache_answer() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 1, 3, 10); // epoch 1: 0..=2
    produce(&f.src, "t", 0, 4, 3, 20); // epoch 4: 3..=5
    let eo = |e| {
        f.src
            .end_offset_for_epoch("t", 0, LeaderEpoch(e), LeaderEpoch::NONE)
            .unwrap()
    };
    assert_eq!(eo(1), (LeaderEpoch(1), Offset(3)));
    assert_eq!(eo(2), (LeaderEpoch(1), Offset(3)));
    assert_eq!(eo(4), (LeaderEpoch(4), Offset(6)));
    assert_eq!(eo(0), (LeaderEpoch(0), Offset(0)));
    assert_eq!(eo(5), (LeaderEpoch(-1), Offset(-1)));
    assert!(matches!(
        f.src
            .end_offset_for_epoch("nope", 0, LeaderEpoch(1), LeaderEpoch::NONE),
        Err(SourceError::Kafka { code: 3, .. })
    ));
}

#[test]
fn end_offset_for_epoch_checks_the_current_leader_epoch() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 1, 3, 10); // epoch 1: 0..=2
    produce(&f.src, "t", 0, 4, 3, 20); // epoch 4 (the leader's): 3..=5
    let asked_in = |current| {
        f.src
            .end_offset_for_epoch("t", 0, LeaderEpoch(1), LeaderEpoch(current))
            .map_err(|e| match e {
                SourceError::Kafka { code, .. } => code,
                e => panic!("{e}"),
            })
    };
    assert_eq!(asked_in(4), Ok((LeaderEpoch(1), Offset(3))));
    assert_eq!(asked_in(-1), Ok((LeaderEpoch(1), Offset(3))));
    assert_eq!(asked_in(3), Err(codes::FENCED_LEADER_EPOCH));
    assert_eq!(asked_in(5), Err(codes::UNKNOWN_LEADER_EPOCH));
}

#[test]
fn topic_configs_report_only_values_that_differ_from_the_defaults() {
    let f = fixture();
    create(&f.src, "plain", 1, 1);
    create_with(
        &f.src,
        "tuned",
        2,
        2,
        LogConfig::default()
            .with_overrides([("retention.ms", "3600000"), ("max.message.bytes", "2048")])
            .unwrap(),
    );
    assert_eq!(f.src.topic_configs("plain").unwrap(), vec![]);
    let mut c = f.src.topic_configs("tuned").unwrap();
    c.sort();
    assert_eq!(
        c,
        vec![
            ("max.message.bytes".to_string(), "2048".to_string()),
            ("retention.ms".to_string(), "3600000".to_string()),
        ]
    );
    assert!(matches!(
        f.src.topic_configs("nope"),
        Err(SourceError::Kafka { code: 3, .. })
    ));
}

#[test]
fn groups_come_from_the_table_the_test_fills() {
    let f = fixture();
    assert!(f.src.list_groups().unwrap().is_empty());
    let offsets = vec![CommittedOffset {
        topic: "t".into(),
        partition: 0,
        offset: Offset(42),
        leader_epoch: LeaderEpoch(3),
        metadata: Some("m".into()),
    }];
    f.src
        .set_group_offsets("app", offsets.clone(), "Empty", "classic");
    f.src.set_group_offsets("sg", vec![], "Stable", "share");
    assert_eq!(
        f.src.list_groups().unwrap(),
        vec![
            GroupListing {
                group_id: "app".into(),
                protocol_type: "consumer".into(),
                state: Some("Empty".into()),
                group_type: Some("classic".into()),
            },
            GroupListing {
                group_id: "sg".into(),
                protocol_type: "share".into(),
                state: Some("Stable".into()),
                group_type: Some("share".into()),
            },
        ]
    );
    assert_eq!(f.src.committed_offsets("app").unwrap(), offsets);
    assert_eq!(f.src.committed_offsets("unknown").unwrap(), vec![]);
    // Setting again replaces.
    f.src.set_group_offsets("app", vec![], "Stable", "consumer");
    assert!(f.src.committed_offsets("app").unwrap().is_empty());
}

#[test]
fn fail_next_calls_fails_exactly_that_many_calls_of_any_kind() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    let e = SourceError::Unreachable("connection reset".into());
    f.src.fail_next_calls(3, e.clone());
    assert_eq!(f.src.metadata(None).unwrap_err(), e);
    assert_eq!(
        f.src
            .fetch(NODE, &fetch_req(vec![pf("t", 0, 0)]))
            .unwrap_err(),
        e
    );
    assert_eq!(f.src.list_groups().unwrap_err(), e);
    assert!(f.src.metadata(None).is_ok());
    assert!(f.src.list_groups().is_ok());

    // A later injection replaces the earlier; zero cancels.
    f.src.fail_next_calls(5, e.clone());
    f.src.fail_next_calls(0, e);
    assert!(f.src.metadata(None).is_ok());
}

#[test]
fn corrupt_next_fetch_flips_one_byte_of_the_next_non_empty_records_only() {
    let f = fixture();
    create(&f.src, "t", 2, 1);
    f.src.corrupt_next_fetch("t", 0);
    // Nothing to read yet: the injection stays armed.
    let r = f.src.fetch(NODE, &fetch_req(vec![pf("t", 0, 0)])).unwrap();
    assert!(r.partitions[0].records.is_empty());

    produce(&f.src, "t", 0, 0, 3, 10);
    produce(&f.src, "t", 1, 0, 3, 10);
    let clean = log_bytes(&f.src, "t", 0, 0);
    let r = f
        .src
        .fetch(NODE, &fetch_req(vec![pf("t", 0, 0), pf("t", 1, 0)]))
        .unwrap();
    let bad = &r.partitions[0].records;
    assert_eq!(bad.len(), clean.len());
    let diffs: Vec<usize> = (0..bad.len()).filter(|i| bad[*i] != clean[*i]).collect();
    assert_eq!(diffs.len(), 1, "exactly one byte differs");
    assert!(
        Batches::new(bad.clone()).next().unwrap().is_err(),
        "the batch CRC no longer matches"
    );
    // The other partition is untouched, and the next fetch is clean again.
    assert_eq!(r.partitions[1].records, log_bytes(&f.src, "t", 1, 0));
    let r = f.src.fetch(NODE, &fetch_req(vec![pf("t", 0, 0)])).unwrap();
    assert_eq!(r.partitions[0].records, clean);
    // The log itself was never touched.
    assert!(Batches::new(clean).all(|b| b.is_ok()));
}

#[test]
fn set_cluster_id_changes_what_metadata_reports() {
    let f = fixture();
    assert_eq!(f.src.metadata(None).unwrap().cluster_id, "source-cluster");
    f.src.set_cluster_id("another-cluster");
    assert_eq!(f.src.metadata(None).unwrap().cluster_id, "another-cluster");
    assert_eq!(f.src.cluster_id(), "another-cluster");
}

#[test]
fn unclean_election_inside_an_epoch_diverges_at_the_end_the_source_kept() {
    let f = fixture();
    create(&f.src, "t", 1, 1);
    produce(&f.src, "t", 0, 0, 5, 10); // epoch 0: 0..=4
    produce(&f.src, "t", 0, 1, 3, 20); // epoch 1: 5..=7
    produce(&f.src, "t", 0, 1, 2, 30); // epoch 1: 8..=9
    f.src.unclean_election("t", 0, Offset(8)).unwrap();
    produce(&f.src, "t", 0, 2, 4, 40); // epoch 2: 8..=11
    let mut p = pf("t", 0, 10);
    p.last_fetched_epoch = LeaderEpoch(1);
    p.current_leader_epoch = LeaderEpoch(2);
    let r = f.src.fetch(NODE, &fetch_req(vec![p])).unwrap();
    assert_eq!(r.partitions[0].error, 0);
    // Same epoch, but it ends at 8 on the source, before the destination's fetch offset 10.
    assert_eq!(
        r.partitions[0].diverging_epoch,
        Some((LeaderEpoch(1), Offset(8)))
    );
    assert!(r.partitions[0].records.is_empty());
}
