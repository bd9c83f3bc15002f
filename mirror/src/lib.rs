//! # mirrorlog-mirror
//!
//! KIP-1279's destination side: copies topics from a source cluster into read-only mirror topics
//! with identical offsets and bytes, keeps the leader-epoch invariant, detects divergence on the
//! source, isolates failures per partition, and fails over (stop) and back.
//!
//! Talks to a source only through the [`SourceCluster`](source::SourceCluster) trait (the wire
//! implementation lives in `broker`, the only crate that knows Kafka wire types); writes segment
//! files only through the engine's mirror append.

pub mod claims;
pub mod engine_source;
pub mod failover_report;
pub mod group_sync;
pub mod manager;
pub mod partition;
pub mod preflight;
pub mod source;
pub mod state;
