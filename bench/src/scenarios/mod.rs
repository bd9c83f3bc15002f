//! The scenarios `mirrorlog-bench` runs. Each returns one [`Report`](crate::harness::Report) per
//! variant.

pub mod batch_validate;
pub mod index_lookup;
pub mod segment_append;
pub mod segment_recovery;
