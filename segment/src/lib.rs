//! # mirrorlog-segment
//!
//! Owns Kafka's RecordBatch v2 — a zero-copy view over `bytes::Bytes`, validation, record
//! iteration through the four codecs, and a builder — plus the I/O backend trait with its
//! io_uring, pwrite and fault-injecting implementations (and the direct-I/O backend for `.log`
//! appends, `io::DirectStorage`), and the segment: one `.log` file and its indexes, active or
//! sealed.
//!
//! It never assigns offsets on its own initiative and knows nothing of producers, epochs or
//! transactions beyond reading and stamping header fields: that is the engine's job.
//!
//! Invariants: a batch is validated just before it is written and again just after it is read
//! back; the bytes a caller hands to an append are the bytes that reach the file.

pub mod batch;
pub mod io;

pub use batch::{
    BatchBuilder, BatchError, BatchHeaderMut, Batches, Compression, ControlRecord,
    ControlRecordType, Record, RecordBatch, RecordMeta, RecordMetas, TimestampType,
};
pub mod scan;
pub mod segment;
