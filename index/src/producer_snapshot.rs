//! Producer-state snapshots (`<20-digit offset>.snapshot`, Kafka's `ProducerStateManager`
//! snapshot file, schema `ProducerSnapshot.json` version 1).
//!
//! ```text
//! 0      2        6        10                         10 + 46 × count
//! +------+--------+--------+--------------------------+
//! | ver  | crc32c | count  | count × 46-byte entries  |
//! | i16  | u32    | i32    |                          |
//! +------+--------+--------+--------------------------+
//!                 \________ covered by the crc _______/
//! ```
//!
//! The file name is the offset the snapshot was taken at (the log end offset then). Written
//! atomically; read back only when the version, checksum and length all agree.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::files::{
    PRODUCER_SNAPSHOT_FILE_SUFFIX, offset_from_file_name, segment_file, write_atomically,
};
use crate::types::{CoordinatorEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs};

/// The snapshot version Kafka writes and reads.
pub const PRODUCER_SNAPSHOT_VERSION: i16 = 1;
/// Bytes before the first entry: version, crc, count.
pub const PRODUCER_SNAPSHOT_HEADER_SIZE: usize = 10;
/// Bytes per producer entry.
pub const PRODUCER_SNAPSHOT_ENTRY_SIZE: usize = 46;
/// Where the crc is stored.
const CRC_POSITION: usize = 2;
/// Where the checksummed bytes begin (the count field).
const CRC_COVERAGE_START: usize = 6;

const _: () = assert!(PRODUCER_SNAPSHOT_HEADER_SIZE == 2 + 4 + 4);
const _: () = assert!(CRC_COVERAGE_START == CRC_POSITION + 4);
const _: () = assert!(PRODUCER_SNAPSHOT_ENTRY_SIZE == 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8);
const _: () = assert!(PRODUCER_SNAPSHOT_ENTRY_SIZE == 46);

/// One producer's state in a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProducerSnapshotEntry {
    /// The producer.
    pub producer_id: ProducerId,
    /// Its current epoch.
    pub producer_epoch: ProducerEpoch,
    /// The last sequence of its last batch.
    pub last_sequence: Sequence,
    /// The last offset of its last batch.
    pub last_offset: Offset,
    /// Last offset minus first offset of its last batch (Kafka `int`).
    pub offset_delta: i32,
    /// The max timestamp of its last batch.
    pub timestamp: TimestampMs,
    /// The coordinator epoch of its last transaction marker.
    pub coordinator_epoch: CoordinatorEpoch,
    /// The first offset of its open transaction, if one is open (stored as −1 when not; any
    /// negative value reads as none, as in Kafka).
    pub current_txn_first_offset: Option<Offset>,
}

impl ProducerSnapshotEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        let txn_first = match self.current_txn_first_offset {
            Some(offset) => {
                assert!(
                    offset.get() >= 0,
                    "an open transaction's first offset cannot be negative: {offset}"
                );
                offset.get()
            }
            None => -1,
        };
        let start = out.len();
        out.extend_from_slice(&self.producer_id.get().to_be_bytes());
        out.extend_from_slice(&self.producer_epoch.get().to_be_bytes());
        out.extend_from_slice(&self.last_sequence.get().to_be_bytes());
        out.extend_from_slice(&self.last_offset.get().to_be_bytes());
        out.extend_from_slice(&self.offset_delta.to_be_bytes());
        out.extend_from_slice(&self.timestamp.get().to_be_bytes());
        out.extend_from_slice(&self.coordinator_epoch.get().to_be_bytes());
        out.extend_from_slice(&txn_first.to_be_bytes());
        debug_assert_eq!(out.len() - start, PRODUCER_SNAPSHOT_ENTRY_SIZE);
    }

    fn decode(b: &[u8]) -> Self {
        let i16_at = |at: usize| i16::from_be_bytes(b[at..at + 2].try_into().expect("2 bytes"));
        let i32_at = |at: usize| i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let i64_at = |at: usize| i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let txn_first = i64_at(38);
        ProducerSnapshotEntry {
            producer_id: ProducerId(i64_at(0)),
            producer_epoch: ProducerEpoch(i16_at(8)),
            last_sequence: Sequence(i32_at(10)),
            last_offset: Offset(i64_at(14)),
            offset_delta: i32_at(22),
            timestamp: TimestampMs(i64_at(26)),
            coordinator_epoch: CoordinatorEpoch(i32_at(34)),
            current_txn_first_offset: (txn_first >= 0).then_some(Offset(txn_first)),
        }
    }
}

/// The bytes of a snapshot holding `entries`.
///
/// Panics if there are more than `i32::MAX` entries or an entry's open-transaction offset is
/// negative (both programmer errors).
pub fn encode_producer_snapshot(entries: &[ProducerSnapshotEntry]) -> Vec<u8> {
    let count = i32::try_from(entries.len()).expect("more producers than a snapshot can count");
    let mut out = Vec::with_capacity(
        PRODUCER_SNAPSHOT_HEADER_SIZE + entries.len() * PRODUCER_SNAPSHOT_ENTRY_SIZE,
    );
    out.extend_from_slice(&PRODUCER_SNAPSHOT_VERSION.to_be_bytes());
    out.extend_from_slice(&[0; 4]); // crc, filled in below
    out.extend_from_slice(&count.to_be_bytes());
    for entry in entries {
        entry.encode(&mut out);
    }
    let crc = crate::crc::crc32c(&out[CRC_COVERAGE_START..]);
    out[CRC_POSITION..CRC_COVERAGE_START].copy_from_slice(&crc.to_be_bytes());
    out
}

/// Decodes the snapshot `bytes` read from `path` (named in errors). Fails with
/// [`Error::Corrupt`] when the file is shorter than its header, the version is not 1, the crc
/// does not match, or the count is negative or needs more bytes than follow (bytes after the
/// counted entries are ignored, as Kafka's reader does).
pub fn decode_producer_snapshot(path: &Path, bytes: &[u8]) -> Result<Vec<ProducerSnapshotEntry>> {
    if bytes.len() < PRODUCER_SNAPSHOT_HEADER_SIZE {
        return Err(Error::corrupt(
            path,
            bytes.len() as u64,
            format!(
                "{} bytes is shorter than the {PRODUCER_SNAPSHOT_HEADER_SIZE}-byte header",
                bytes.len()
            ),
        ));
    }
    let version = i16::from_be_bytes([bytes[0], bytes[1]]);
    if version != PRODUCER_SNAPSHOT_VERSION {
        return Err(Error::corrupt(
            path,
            0,
            format!("unknown producer snapshot version {version}"),
        ));
    }
    let stored = u32::from_be_bytes(
        bytes[CRC_POSITION..CRC_COVERAGE_START]
            .try_into()
            .expect("4 bytes"),
    );
    let computed = crate::crc::crc32c(&bytes[CRC_COVERAGE_START..]);
    if stored != computed {
        return Err(Error::corrupt(
            path,
            CRC_POSITION as u64,
            format!("crc32c mismatch: stored {stored:#010x}, computed {computed:#010x}"),
        ));
    }
    let count = i32::from_be_bytes(bytes[6..10].try_into().expect("4 bytes"));
    let body = &bytes[PRODUCER_SNAPSHOT_HEADER_SIZE..];
    // Kafka's schema reader takes `count` entries and ignores any bytes after them (the crc
    // covers those too); a negative count, or more entries than there are bytes, it rejects.
    let needed = u64::try_from(count).map(|c| c * PRODUCER_SNAPSHOT_ENTRY_SIZE as u64);
    let Some(needed) = needed.ok().filter(|&n| n <= body.len() as u64) else {
        return Err(Error::corrupt(
            path,
            CRC_COVERAGE_START as u64,
            format!(
                "count {count} does not fit the {} bytes of entries",
                body.len()
            ),
        ));
    };
    Ok(body[..needed as usize]
        .chunks_exact(PRODUCER_SNAPSHOT_ENTRY_SIZE)
        .map(ProducerSnapshotEntry::decode)
        .collect())
}

/// Reads and decodes the snapshot at `path`.
pub fn read_producer_snapshot(path: &Path) -> Result<Vec<ProducerSnapshotEntry>> {
    let bytes = fs::read(path).map_err(Error::io("read", path))?;
    decode_producer_snapshot(path, &bytes)
}

/// Writes a snapshot of `entries` to `path`, atomically and durably.
pub fn write_producer_snapshot(path: &Path, entries: &[ProducerSnapshotEntry]) -> Result<()> {
    write_atomically(path, &encode_producer_snapshot(entries))
}

/// `dir/<20-digit offset>.snapshot`.
pub fn producer_snapshot_file(dir: &Path, offset: Offset) -> PathBuf {
    segment_file(dir, offset, PRODUCER_SNAPSHOT_FILE_SUFFIX)
}

/// A snapshot file found in a partition directory.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SnapshotFile {
    /// The offset the snapshot was taken at (from its name).
    pub offset: Offset,
    /// Its path.
    pub path: PathBuf,
}

/// The snapshot files in `dir`, by increasing offset: regular files named `<offset>.snapshot`.
/// Other files (including `.snapshot.deleted` and `.snapshot.tmp`) are ignored.
pub fn list_producer_snapshots(dir: &Path) -> Result<Vec<SnapshotFile>> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).map_err(Error::io("list", dir))? {
        let entry = entry.map_err(Error::io("list", dir))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !name.ends_with(PRODUCER_SNAPSHOT_FILE_SUFFIX) {
            continue;
        }
        let Some(offset) = offset_from_file_name(&name) else {
            continue;
        };
        let file_type = entry
            .file_type()
            .map_err(Error::io("stat", &entry.path()))?;
        if file_type.is_file() {
            found.push(SnapshotFile {
                offset,
                path: entry.path(),
            });
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `foo-0/00000000000000000001.snapshot` as written by Apache Kafka 3.x.
    const KAFKA_FOO_0_SNAPSHOT: [u8; 56] = [
        0x00, 0x01, 0x20, 0xe5, 0x04, 0xfe, 0x00, 0x00, 0x00, 0x01, //
        0, 0, 0, 0, 0, 0, 0, 0, // producer id 0
        0, 0, // epoch 0
        0, 0, 0, 0, // last sequence 0
        0, 0, 0, 0, 0, 0, 0, 0, // last offset 0
        0, 0, 0, 0, // offset delta 0
        0x00, 0x00, 0x01, 0x91, 0xe0, 0x5b, 0x6d, 0x8b, // timestamp 0x191e05b6d8b
        0xff, 0xff, 0xff, 0xff, // coordinator epoch -1
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // no open transaction
    ];

    fn foo_0_entry() -> ProducerSnapshotEntry {
        ProducerSnapshotEntry {
            producer_id: ProducerId(0),
            producer_epoch: ProducerEpoch(0),
            last_sequence: Sequence(0),
            last_offset: Offset(0),
            offset_delta: 0,
            timestamp: TimestampMs(0x191_e05b_6d8b), // 1726045973899
            coordinator_epoch: CoordinatorEpoch::NONE,
            current_txn_first_offset: None,
        }
    }

    #[test]
    fn encoding_matches_a_snapshot_kafka_wrote() {
        assert_eq!(
            encode_producer_snapshot(&[foo_0_entry()]),
            KAFKA_FOO_0_SNAPSHOT
        );
        assert_eq!(
            decode_producer_snapshot(Path::new("s"), &KAFKA_FOO_0_SNAPSHOT).unwrap(),
            vec![foo_0_entry()]
        );
    }

    #[test]
    fn an_empty_snapshot_is_a_header_with_kafkas_crc() {
        // `__cluster_metadata-0/00000000000000000129.snapshot`.
        let kafka = [0x00, 0x01, 0x48, 0x67, 0x4b, 0xc7, 0x00, 0x00, 0x00, 0x00];
        assert_eq!(encode_producer_snapshot(&[]), kafka);
        assert_eq!(
            decode_producer_snapshot(Path::new("s"), &kafka).unwrap(),
            vec![]
        );
    }

    #[test]
    fn an_open_transaction_offset_round_trips_and_negatives_read_as_none() {
        let mut entry = foo_0_entry();
        entry.current_txn_first_offset = Some(Offset(77));
        let bytes = encode_producer_snapshot(&[entry]);
        assert_eq!(&bytes[48..56], &77i64.to_be_bytes());
        assert_eq!(
            decode_producer_snapshot(Path::new("s"), &bytes).unwrap(),
            vec![entry]
        );
        let mut bytes = encode_producer_snapshot(&[foo_0_entry()]);
        bytes[48..56].copy_from_slice(&(-5i64).to_be_bytes());
        let crc = crate::crc::crc32c(&bytes[6..]);
        bytes[2..6].copy_from_slice(&crc.to_be_bytes());
        let decoded = decode_producer_snapshot(Path::new("s"), &bytes).unwrap();
        assert_eq!(decoded[0].current_txn_first_offset, None);
    }

    #[test]
    fn every_truncation_of_a_snapshot_is_corrupt() {
        for len in 0..KAFKA_FOO_0_SNAPSHOT.len() {
            let err =
                decode_producer_snapshot(Path::new("s"), &KAFKA_FOO_0_SNAPSHOT[..len]).unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{len}: {err:?}");
        }
    }

    #[test]
    fn every_flipped_bit_of_a_snapshot_is_detected() {
        for byte in 0..KAFKA_FOO_0_SNAPSHOT.len() {
            for bit in 0..8 {
                let mut bytes = KAFKA_FOO_0_SNAPSHOT;
                bytes[byte] ^= 1 << bit;
                let err = decode_producer_snapshot(Path::new("s"), &bytes).unwrap_err();
                let expected = if byte < 2 { 0 } else { 2 };
                assert!(
                    matches!(err, Error::Corrupt { position, .. } if position == expected),
                    "byte {byte} bit {bit}: {err:?}"
                );
            }
        }
    }

    #[test]
    fn bytes_after_the_counted_entries_are_ignored_as_kafkas_reader_does() {
        // Count 0 with foo-0's entry left behind it, and the entry with 3 bytes more: Kafka's
        // schema reader takes the counted entries and never looks at the rest.
        let mut empty = KAFKA_FOO_0_SNAPSHOT.to_vec();
        empty[6..10].copy_from_slice(&0i32.to_be_bytes());
        let mut longer = KAFKA_FOO_0_SNAPSHOT.to_vec();
        longer.extend_from_slice(&[1, 2, 3]);
        for (bytes, expected) in [(empty, vec![]), (longer, vec![foo_0_entry()])] {
            let mut bytes = bytes;
            let crc = crate::crc::crc32c(&bytes[6..]);
            bytes[2..6].copy_from_slice(&crc.to_be_bytes());
            assert_eq!(
                decode_producer_snapshot(Path::new("s"), &bytes).unwrap(),
                expected
            );
        }
    }

    #[test]
    fn a_count_beyond_the_length_or_negative_is_corrupt_even_with_a_good_crc() {
        for count in [2i32, -1, i32::MAX] {
            let mut bytes = KAFKA_FOO_0_SNAPSHOT.to_vec();
            bytes[6..10].copy_from_slice(&count.to_be_bytes());
            let crc = crate::crc::crc32c(&bytes[6..]);
            bytes[2..6].copy_from_slice(&crc.to_be_bytes());
            let err = decode_producer_snapshot(Path::new("s"), &bytes).unwrap_err();
            assert!(
                matches!(err, Error::Corrupt { position: 6, .. }),
                "{count}: {err:?}"
            );
        }
    }

    #[test]
    fn snapshots_are_written_atomically_and_listed_by_offset() {
        let dir = tempfile::tempdir().unwrap();
        for offset in [129, 1, 40] {
            let path = producer_snapshot_file(dir.path(), Offset(offset));
            write_producer_snapshot(&path, &[foo_0_entry()]).unwrap();
        }
        for other in [
            "00000000000000000002.snapshot.deleted",
            "00000000000000000003.snapshot.tmp",
            "junk.snapshot",
            "00000000000000000000.log",
        ] {
            fs::write(dir.path().join(other), b"").unwrap();
        }
        fs::create_dir(dir.path().join("00000000000000000005.snapshot")).unwrap();
        let listed = list_producer_snapshots(dir.path()).unwrap();
        let offsets: Vec<_> = listed.iter().map(|s| s.offset).collect();
        assert_eq!(offsets, [Offset(1), Offset(40), Offset(129)]);
        assert_eq!(
            listed[0].path,
            dir.path().join("00000000000000000001.snapshot")
        );
        assert_eq!(
            read_producer_snapshot(&listed[2].path).unwrap(),
            vec![foo_0_entry()]
        );
    }

    #[test]
    fn reading_a_missing_snapshot_is_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_producer_snapshot(&dir.path().join("1.snapshot")).unwrap_err();
        assert!(matches!(err, Error::Io { op: "read", .. }), "{err:?}");
        let err = list_producer_snapshots(&dir.path().join("nope")).unwrap_err();
        assert!(matches!(err, Error::Io { op: "list", .. }), "{err:?}");
    }

    fn arb_entry() -> impl Strategy<Value = ProducerSnapshotEntry> {
        (
            (any::<i64>(), any::<i16>(), any::<i32>(), any::<i64>()),
            (
                any::<i32>(),
                any::<i64>(),
                any::<i32>(),
                proptest::option::of(0..=i64::MAX),
            ),
        )
            .prop_map(|((pid, epoch, seq, last), (delta, ts, coord, txn))| {
                ProducerSnapshotEntry {
                    producer_id: ProducerId(pid),
                    producer_epoch: ProducerEpoch(epoch),
                    last_sequence: Sequence(seq),
                    last_offset: Offset(last),
                    offset_delta: delta,
                    timestamp: TimestampMs(ts),
                    coordinator_epoch: CoordinatorEpoch(coord),
                    current_txn_first_offset: txn.map(Offset),
                }
            })
    }

    proptest! {
        #[test]
        fn snapshots_round_trip(entries in proptest::collection::vec(arb_entry(), 0..40)) {
            let bytes = encode_producer_snapshot(&entries);
            prop_assert_eq!(bytes.len(), 10 + 46 * entries.len());
            prop_assert_eq!(decode_producer_snapshot(Path::new("s"), &bytes).unwrap(), entries);
        }

        #[test]
        fn arbitrary_bytes_decode_or_error_without_panicking(
            bytes in proptest::collection::vec(any::<u8>(), 0..200)
        ) {
            let _ = decode_producer_snapshot(Path::new("s"), &bytes);
        }
    }
}
