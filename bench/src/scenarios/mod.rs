//! The scenarios `mirrorlog-bench` runs. Each returns one [`Report`](crate::harness::Report) per
//! variant.

pub mod append;
pub mod batch_validate;
pub mod direct_append;
pub mod durable_append;
pub mod fetch_send;
pub mod index_lookup;
pub mod log_peers;
pub mod mirror;
pub mod produce_consume;
pub mod recovery;
pub mod segment_append;
pub mod segment_recovery;
