//! # mirrorlog-index
//!
//! The bottom of mirrorlog's crate graph. It owns the typed vocabulary every other crate speaks
//! ([`Offset`], [`RelativeOffset`], [`FilePosition`], [`LeaderEpoch`], [`ProducerId`],
//! [`ProducerEpoch`], [`Sequence`], [`TimestampMs`]) and the small files that sit beside a
//! partition's segments, each byte-compatible with Apache Kafka (see `FORMAT.md`).
//!
//! It never reads or writes `.log` files and knows nothing of record batches beyond the fields it
//! indexes.
//!
//! Invariants: index entries are strictly increasing in offset (and, for the time index, in
//! timestamp); a violated order is a programmer error and panics, in release builds too.

pub mod types;

pub use types::{
    FilePosition, LeaderEpoch, Offset, ProducerEpoch, ProducerId, RelativeOffset, Sequence,
    TimestampMs,
};
