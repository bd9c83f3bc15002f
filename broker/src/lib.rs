//! # mirrorlog-broker
//!
//! A thin, single-node Kafka-protocol broker on the engine: every mainstream Kafka client
//! produces, consumes, commits, rebalances and runs transactions against it unchanged.
//!
//! Owns: the listener and request framing (`server`), the codec (the `kafka-protocol` crate), the
//! request handlers, the group coordinator (`group`), the transaction coordinator (`txn`), and the
//! one place where engine errors become Kafka error codes (`errors`).
//!
//! Never: holds storage logic that belongs in `engine` — every byte of a partition goes through
//! the engine's append and read paths.

pub mod alloc;
pub mod broker;
pub mod client;
pub mod coordinators;
pub mod errors;
pub mod group;
pub mod handlers;
pub mod mirror_rpc;
pub mod mirrors;
pub mod running;
pub mod server;
pub mod source_client;
pub mod topics;
pub mod txn;
