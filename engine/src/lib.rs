//! # mirrorlog-engine
//!
//! The partition log — Kafka's `UnifiedLog` rebuilt in Rust — with the mirror-aware append path
//! KIP-1279 needs, and the log manager that holds many partitions across data directories.
//!
//! Owns: the segment list and rolling; appends by origin (client/leader, coordinator, replication
//! and mirror); reads by offset and isolation level; producer state and the transaction index;
//! log start offset, high watermark and last stable offset; the leader-epoch cache and
//! epoch-aware truncation; retention; recovery; durability (flush policies, group commit).
//!
//! Never: speaks the wire protocol, or knows that a source cluster exists.
//!
//! Invariants (DESIGN.md §3): offset and epoch-cache entries strictly increase; the high watermark
//! and log start offset never move backwards except by an explicit truncation; after a
//! MIRROR_PID_RESET barrier no producer learned from mirrored data remains, on append, on replay
//! and after truncation alike; the transaction index and producer snapshots are always built
//! locally; an append acknowledged after `flush` survives a crash.

// Every fallible public function says how it fails: the embedding API promises it (README,
// "Embedding the engine"), and CI's `clippy -D warnings` keeps it so.
#![warn(clippy::missing_errors_doc)]

mod checkpoint_io;
pub mod clock;
pub mod config;
mod delayed_removal;
pub mod epoch_cache;
pub mod error;
pub mod group_commit;
pub mod log;
pub mod manager;
pub mod producer_state;
