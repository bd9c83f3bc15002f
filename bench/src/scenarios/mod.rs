//! The scenarios `mirrorlog-bench` runs. Each returns one [`Report`](crate::harness::Report) per
//! variant.

pub mod batch_validate;
