//! Read-compatibility with a log directory written by a real Apache Kafka 3.x KRaft broker
//! (`shared/kafka-fixtures/kraft-combined-logs`, see its README): every file this crate owns
//! must open, decode to what Kafka meant, agree with the segment's `.log`, and be written back
//! byte for byte by our encoders.
//!
//! The fixture directory is read-only: anything opened writable is copied to a tempdir first.

use std::fs;
use std::path::{Path, PathBuf};

use mirrorlog_index::{
    CoordinatorEpoch, EpochEntry, FilePosition, LeaderEpoch, LeaderEpochCheckpoint, Offset,
    OffsetIndex, PartitionMetadata, ProducerEpoch, ProducerId, ProducerSnapshotEntry, Sequence,
    TimeIndex, TimestampMs, TopicId, encode_producer_snapshot, list_producer_snapshots,
    offset_from_file_name, read_producer_snapshot,
};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/kafka-fixtures/kraft-combined-logs"
);

/// Kafka's default `segment.index.bytes`.
const MAX_INDEX_SIZE_BYTES: u64 = 10 * 1024 * 1024;

fn partition_dir(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

fn fixture(partition: &str, file: &str) -> PathBuf {
    partition_dir(partition).join(file)
}

/// A writable copy of a fixture file in `dir`.
fn writable_copy(src: &Path, dir: &Path) -> PathBuf {
    let dst = dir.join(src.file_name().unwrap());
    fs::write(&dst, fs::read(src).unwrap()).unwrap();
    dst
}

/// The header fields of one record batch in a `.log`, read here only to cross-check the indexes
/// (this crate itself never reads `.log` files).
#[derive(Debug)]
struct Batch {
    position: u32,
    last_offset: i64,
    leader_epoch: i32,
    max_timestamp: i64,
}

fn batches(partition: &str) -> Vec<Batch> {
    let log = fs::read(fixture(partition, "00000000000000000000.log")).unwrap();
    let i32_at = |at: usize| i32::from_be_bytes(log[at..at + 4].try_into().unwrap());
    let i64_at = |at: usize| i64::from_be_bytes(log[at..at + 8].try_into().unwrap());
    let mut out = Vec::new();
    let mut position = 0;
    while position + 61 <= log.len() {
        let base_offset = i64_at(position);
        let batch_length = i32_at(position + 8) as usize;
        out.push(Batch {
            position: position as u32,
            last_offset: base_offset + i64::from(i32_at(position + 23)),
            leader_epoch: i32_at(position + 12),
            max_timestamp: i64_at(position + 35),
        });
        position += 12 + batch_length;
    }
    assert_eq!(position, log.len(), "{partition}: .log is whole batches");
    out
}

fn offset_entries(idx: &OffsetIndex) -> Vec<(Offset, FilePosition)> {
    (0..idx.entries()).map(|i| idx.entry(i).unwrap()).collect()
}

fn time_entries(idx: &TimeIndex) -> Vec<(TimestampMs, Offset)> {
    (0..idx.entries()).map(|i| idx.entry(i).unwrap()).collect()
}

/// Opens every file in a fixture partition directory except the `.log` with the decoder for its
/// kind, and checks the cheap invariants. Returns the names decoded.
fn decode_every_file(partition: &str) -> Vec<String> {
    let mut decoded = Vec::new();
    for entry in fs::read_dir(partition_dir(partition)).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        let base = || offset_from_file_name(&name).expect("segment files are named by offset");
        if name.ends_with(".log") {
            continue;
        } else if name.ends_with(".index") {
            let idx = OffsetIndex::open(&path, base(), MAX_INDEX_SIZE_BYTES, false).unwrap();
            idx.sanity_check().unwrap();
        } else if name.ends_with(".timeindex") {
            let idx = TimeIndex::open(&path, base(), MAX_INDEX_SIZE_BYTES, false).unwrap();
            idx.sanity_check().unwrap();
        } else if name.ends_with(".snapshot") {
            read_producer_snapshot(&path).unwrap();
        } else if name == "leader-epoch-checkpoint" {
            LeaderEpochCheckpoint::new(&path).read().unwrap();
        } else if name == "partition.metadata" {
            PartitionMetadata::read(&path).unwrap().unwrap();
        } else if name == "quorum-state" {
            // KRaft's own JSON election state: owned by the raft layer, not a log file format.
            continue;
        } else {
            panic!("{partition}: unexpected fixture file {name}");
        }
        decoded.push(name);
    }
    decoded.sort();
    decoded
}

#[test]
fn every_non_log_file_of_both_partitions_decodes() {
    let expected = [
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "leader-epoch-checkpoint",
        "partition.metadata",
    ];
    let mut foo: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    foo.push("00000000000000000001.snapshot".into());
    foo.sort();
    assert_eq!(decode_every_file("foo-0"), foo);
    let mut meta: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    meta.push("00000000000000000129.snapshot".into());
    meta.sort();
    assert_eq!(decode_every_file("__cluster_metadata-0"), meta);
}

#[test]
fn foo_0_offset_index_is_an_empty_sealed_index() {
    let path = fixture("foo-0", "00000000000000000000.index");
    assert_eq!(fs::metadata(&path).unwrap().len(), 0);
    let idx = OffsetIndex::open(&path, Offset(0), MAX_INDEX_SIZE_BYTES, false).unwrap();
    assert_eq!((idx.entries(), idx.max_entries()), (0, 0));
    assert_eq!(idx.lookup(Offset(0)), (Offset(0), FilePosition(0)));
}

#[test]
fn foo_0_time_index_holds_the_segments_max_timestamp() {
    let path = fixture("foo-0", "00000000000000000000.timeindex");
    let idx = TimeIndex::open(&path, Offset(0), MAX_INDEX_SIZE_BYTES, false).unwrap();
    // 0x191e05b6d8b = 1726045973899 ms (2024-09-11T09:12:53.899Z).
    let ts = TimestampMs(0x191_e05b_6d8b);
    assert_eq!(time_entries(&idx), [(ts, Offset(0))]);
    assert_eq!(idx.last_entry(), (ts, Offset(0)));
    assert_eq!(
        idx.lookup(TimestampMs(ts.get() - 1)),
        (TimestampMs::NONE, Offset(0))
    );
    let log = batches("foo-0");
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].max_timestamp, log[0].last_offset), (ts.get(), 0));
}

#[test]
fn foo_0_producer_snapshot_holds_one_idempotent_producer() {
    let dir = partition_dir("foo-0");
    let snapshots = list_producer_snapshots(&dir).unwrap();
    assert_eq!(snapshots.len(), 1);
    // Taken at the log end offset: one batch, offset 0.
    assert_eq!(snapshots[0].offset, Offset(1));
    let entries = read_producer_snapshot(&snapshots[0].path).unwrap();
    let expected = ProducerSnapshotEntry {
        producer_id: ProducerId(0),
        producer_epoch: ProducerEpoch(0),
        last_sequence: Sequence(0),
        last_offset: Offset(0),
        offset_delta: 0,
        timestamp: TimestampMs(0x191_e05b_6d8b),
        coordinator_epoch: CoordinatorEpoch::NONE,
        current_txn_first_offset: None,
    };
    assert_eq!(entries, [expected]);
    assert_eq!(
        encode_producer_snapshot(&entries),
        fs::read(&snapshots[0].path).unwrap()
    );
}

#[test]
fn foo_0_leader_epoch_checkpoint_and_partition_metadata() {
    let cp = LeaderEpochCheckpoint::in_dir(&partition_dir("foo-0"));
    let entries = cp.read().unwrap();
    assert_eq!(
        entries,
        [EpochEntry {
            epoch: LeaderEpoch(0),
            start_offset: Offset(0)
        }]
    );
    assert!(batches("foo-0").iter().all(|b| b.leader_epoch == 0));
    let meta = PartitionMetadata::read(&PartitionMetadata::path_in(&partition_dir("foo-0")))
        .unwrap()
        .unwrap();
    assert_eq!(
        meta.topic_id,
        "v9meXjI1RVKB-NSvF0GXDA".parse::<TopicId>().unwrap()
    );
    assert_eq!(meta.topic_id.to_string(), "v9meXjI1RVKB-NSvF0GXDA");
}

#[test]
fn cluster_metadata_indexes_point_at_batch_starts_in_the_log() {
    let log = batches("__cluster_metadata-0");
    let idx = OffsetIndex::open(
        fixture("__cluster_metadata-0", "00000000000000000000.index"),
        Offset(0),
        MAX_INDEX_SIZE_BYTES,
        false,
    )
    .unwrap();
    let entries = offset_entries(&idx);
    assert_eq!(
        entries,
        [
            (Offset(57), FilePosition(4154)),
            (Offset(114), FilePosition(8258))
        ]
    );
    for (offset, position) in &entries {
        let batch = log.iter().find(|b| b.position == position.get()).unwrap();
        assert_eq!(
            batch.last_offset,
            offset.get(),
            "entry maps a batch's last offset"
        );
    }
    assert_eq!(idx.lookup(Offset(100)), (Offset(57), FilePosition(4154)));
    assert_eq!(idx.lookup(Offset(10)), (Offset(0), FilePosition(0)));

    let tidx = TimeIndex::open(
        fixture("__cluster_metadata-0", "00000000000000000000.timeindex"),
        Offset(0),
        MAX_INDEX_SIZE_BYTES,
        false,
    )
    .unwrap();
    let times = time_entries(&tidx);
    assert_eq!(
        times,
        [
            (TimestampMs(0x191_e05b_548c), Offset(57)),
            (TimestampMs(0x191_e05b_c4ae), Offset(114)),
            (TimestampMs(0x191_e05b_da4e), Offset(128)),
        ]
    );
    for (ts, offset) in &times {
        let batch = log.iter().find(|b| b.last_offset == offset.get()).unwrap();
        assert_eq!(batch.max_timestamp, ts.get());
    }
    let max_ts = log.iter().map(|b| b.max_timestamp).max().unwrap();
    assert_eq!(
        tidx.last_entry().0,
        TimestampMs(max_ts),
        "roll entry holds the max"
    );
}

#[test]
fn cluster_metadata_snapshot_checkpoint_and_topic_id() {
    let dir = partition_dir("__cluster_metadata-0");
    let log = batches("__cluster_metadata-0");
    let snapshots = list_producer_snapshots(&dir).unwrap();
    assert_eq!(snapshots.len(), 1);
    let log_end_offset = log.last().unwrap().last_offset + 1;
    assert_eq!(snapshots[0].offset, Offset(log_end_offset));
    assert_eq!(snapshots[0].offset, Offset(129));
    // KRaft batches carry no producer id, so the snapshot is just a header.
    assert_eq!(read_producer_snapshot(&snapshots[0].path).unwrap(), []);

    let entries = LeaderEpochCheckpoint::in_dir(&dir).read().unwrap();
    assert_eq!(
        entries,
        [EpochEntry {
            epoch: LeaderEpoch(1),
            start_offset: Offset(0)
        }]
    );
    assert!(log.iter().all(|b| b.leader_epoch == 1));

    let meta = PartitionMetadata::read(&PartitionMetadata::path_in(&dir))
        .unwrap()
        .unwrap();
    assert_eq!(meta.topic_id, TopicId::METADATA_TOPIC);
}

#[test]
fn our_writers_reproduce_kafkas_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    for partition in ["foo-0", "__cluster_metadata-0"] {
        let out = tmp.path().join(partition);
        fs::create_dir(&out).unwrap();

        let src = fixture(partition, "00000000000000000000.index");
        let kafka = OffsetIndex::open(&src, Offset(0), MAX_INDEX_SIZE_BYTES, false).unwrap();
        let path = out.join("00000000000000000000.index");
        let mut ours = OffsetIndex::open(&path, Offset(0), MAX_INDEX_SIZE_BYTES, true).unwrap();
        for (offset, position) in offset_entries(&kafka) {
            ours.append(offset, position).unwrap();
        }
        ours.close().unwrap();
        assert_eq!(
            fs::read(&path).unwrap(),
            fs::read(&src).unwrap(),
            "{partition} index"
        );

        let src = fixture(partition, "00000000000000000000.timeindex");
        let kafka = TimeIndex::open(&src, Offset(0), MAX_INDEX_SIZE_BYTES, false).unwrap();
        let path = out.join("00000000000000000000.timeindex");
        let mut ours = TimeIndex::open(&path, Offset(0), MAX_INDEX_SIZE_BYTES, true).unwrap();
        for (ts, offset) in time_entries(&kafka) {
            ours.maybe_append(ts, offset, false).unwrap();
        }
        ours.close().unwrap();
        assert_eq!(
            fs::read(&path).unwrap(),
            fs::read(&src).unwrap(),
            "{partition} timeindex"
        );

        let src = fixture(partition, "leader-epoch-checkpoint");
        let entries = LeaderEpochCheckpoint::new(&src).read().unwrap();
        let ours = LeaderEpochCheckpoint::in_dir(&out);
        ours.write(&entries).unwrap();
        assert_eq!(fs::read(ours.path()).unwrap(), fs::read(&src).unwrap());

        let src = PartitionMetadata::path_in(&partition_dir(partition));
        let meta = PartitionMetadata::read(&src).unwrap().unwrap();
        let path = PartitionMetadata::path_in(&out);
        meta.write(&path).unwrap();
        assert_eq!(fs::read(&path).unwrap(), fs::read(&src).unwrap());
    }
}

#[test]
fn a_sealed_kafka_time_index_reopens_as_the_active_index() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("__cluster_metadata-0", "00000000000000000000.timeindex");
    let path = writable_copy(&src, tmp.path());
    let mut idx = TimeIndex::open(&path, Offset(0), MAX_INDEX_SIZE_BYTES, true).unwrap();
    assert_eq!((idx.entries(), idx.max_entries()), (3, 3));
    idx.resize(MAX_INDEX_SIZE_BYTES).unwrap();
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        MAX_INDEX_SIZE_BYTES / 12 * 12
    );
    idx.maybe_append(TimestampMs(0x191_e05b_da4f), Offset(130), false)
        .unwrap();
    idx.truncate_to(Offset(129)).unwrap();
    idx.maybe_append(TimestampMs(0x191_e05b_da50), Offset(129), false)
        .unwrap();
    idx.close().unwrap();
    let bytes = fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 48);
    assert_eq!(bytes[..36], fs::read(&src).unwrap()[..]);
    assert_eq!(
        bytes[36..],
        [0, 0, 1, 0x91, 0xe0, 0x5b, 0xda, 0x50, 0, 0, 0, 129]
    );
}

#[test]
fn a_sealed_kafka_offset_index_truncates_like_the_segment_below_it() {
    let tmp = tempfile::tempdir().unwrap();
    let src = fixture("__cluster_metadata-0", "00000000000000000000.index");
    let path = writable_copy(&src, tmp.path());
    let mut idx = OffsetIndex::open(&path, Offset(0), MAX_INDEX_SIZE_BYTES, true).unwrap();
    idx.resize(MAX_INDEX_SIZE_BYTES).unwrap();
    idx.truncate_to(Offset(114)).unwrap();
    assert_eq!(offset_entries(&idx), [(Offset(57), FilePosition(4154))]);
    idx.flush().unwrap();
    drop(idx); // unclean: the preallocated file stays at full length
    let idx = OffsetIndex::open(&path, Offset(0), MAX_INDEX_SIZE_BYTES, false).unwrap();
    assert_eq!(offset_entries(&idx), [(Offset(57), FilePosition(4154))]);
    idx.sanity_check().unwrap();
}
