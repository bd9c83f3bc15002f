//! # mirrorlog-broker
//!
//! A thin, single-node Kafka-protocol broker on the engine: every mainstream Kafka client
//! produces, consumes, commits, rebalances and runs transactions against it unchanged.
//!
//! Owns: the listener and request framing (`server`), the codec (the `kafka-protocol` crate, and
//! `mirror_rpc` written by hand for the KIP-1279 RPCs that crate lacks), the request handlers
//! (the mirror admin RPCs among them), the dynamic broker loggers over the process's log
//! levels (`loggers`), the KIP-584 feature levels ApiVersions lists (`features`), the group
//! coordinator (`group`), the transaction
//! coordinator (`txn`), the hosted mirrors and their durable configs (`mirrors`), the mirror's
//! wire client to a source (`source_client`), and the one place where engine errors become Kafka
//! error codes (`errors`).
//!
//! Never: holds storage logic that belongs in `engine` — every byte of a partition goes through
//! the engine's append and read paths.

pub mod alloc;
pub mod broker;
pub mod client;
pub mod coordinators;
pub mod errors;
pub mod features;
pub mod group;
pub mod handlers;
pub mod loggers;
pub mod mirror_rpc;
pub mod mirrors;
pub mod running;
pub mod server;
pub mod source_client;
pub mod topics;
pub mod txn;
