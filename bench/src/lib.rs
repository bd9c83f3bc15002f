//! # mirrorlog-bench
//!
//! mirrorlog's benchmarks: criterion micro benches (`benches/`) and the `mirrorlog-bench` harness
//! binary, which runs a scenario and its baseline in the same process, alternating them, and
//! reports medians and the ratio ours ÷ baseline (DESIGN.md §6). Never shipped in a broker build.

pub mod compare;
pub mod fixtures;
pub mod harness;
pub mod peers;
pub mod scenarios;
