//! # mirrorlog-index
//!
//! The bottom of mirrorlog's crate graph. It owns the typed vocabulary every other crate speaks
//! ([`Offset`], [`RelativeOffset`], [`FilePosition`], [`LeaderEpoch`], [`ProducerId`],
//! [`ProducerEpoch`], [`Sequence`], [`TimestampMs`], [`CoordinatorEpoch`]) and the small files
//! that sit beside a partition's segments, each byte-compatible with Apache Kafka (see
//! `FORMAT.md`):
//!
//! | file | type |
//! |---|---|
//! | `<offset>.index` | [`OffsetIndex`] |
//! | `<offset>.timeindex` | [`TimeIndex`] |
//! | `<offset>.txnindex` | [`TransactionIndex`] |
//! | `<offset>.snapshot` | [`encode_producer_snapshot`], [`read_producer_snapshot`], … |
//! | `leader-epoch-checkpoint` | [`LeaderEpochCheckpoint`] |
//! | `*-offset-checkpoint` (log dir) | [`OffsetCheckpoint`] |
//! | `partition.metadata` | [`PartitionMetadata`] |
//!
//! It never reads or writes `.log` files and knows nothing of record batches beyond the fields it
//! indexes. It decides nothing about *when* entries are added (index interval, roll, recovery):
//! that is `segment`'s and `engine`'s business.
//!
//! Invariants: index entries are strictly increasing in offset (and, for the time index, in
//! timestamp); the transaction index is strictly increasing in last offset; a violated order is a
//! programmer error and panics, in release builds too. Every decoder of on-disk bytes returns
//! [`Error::Corrupt`] for bad input and never panics. Files replaced as a whole (checkpoints,
//! snapshots, `partition.metadata`) are written to `<name>.tmp`, fsynced and renamed, so a crash
//! leaves the old or the new file.

pub mod checkpoint;
pub mod crc;
pub mod error;
pub mod files;
pub mod mmap_index;
pub mod offset_index;
pub mod partition_metadata;
pub mod producer_snapshot;
pub mod time_index;
pub mod txn_index;
pub mod types;

pub use checkpoint::{
    CheckpointEntry, CheckpointFile, EpochEntry, LeaderEpochCheckpoint, OffsetCheckpoint,
    PartitionOffset, TopicPartition,
};
pub use crc::{crc32c, crc32c_append};
pub use error::{Error, ErrorChain, Result};
pub use files::{filename_prefix_from_offset, offset_from_file_name, segment_file};
pub use mmap_index::{IndexEntry, MmapIndex};
pub use offset_index::{OffsetEntry, OffsetIndex};
pub use partition_metadata::{PartitionMetadata, TopicId};
pub use producer_snapshot::{
    ProducerSnapshotEntry, SnapshotFile, decode_producer_snapshot, encode_producer_snapshot,
    list_producer_snapshots, producer_snapshot_file, read_producer_snapshot,
    write_producer_snapshot,
};
pub use time_index::{TimeEntry, TimeIndex};
pub use txn_index::{AbortedTxn, TransactionIndex};
pub use types::{
    CoordinatorEpoch, FilePosition, LeaderEpoch, Offset, ProducerEpoch, ProducerId, RelativeOffset,
    Sequence, TimestampMs,
};
