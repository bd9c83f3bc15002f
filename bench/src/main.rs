//! `mirrorlog-bench SCENARIO [--quick] [--json]`: runs a scenario and its same-run baseline and
//! prints medians and ratios (DESIGN.md §6).

use anyhow::{Result, bail};
use mirrorlog_bench::harness::{Opts, Report};
use mirrorlog_bench::scenarios;

const USAGE: &str = "usage: mirrorlog-bench SCENARIO [--quick] [--json]
scenarios:
  batch-validate   RecordBatch::validate() on 16 KiB batches vs raw CRC32C
  segment-append   16 KiB batches into one segment per I/O backend (plain, coalesced to 1 MiB,
                   durable) vs raw pwrite of the same bytes
  index-lookup     OffsetIndex::lookup and Segment::find_batch ns/op vs an in-memory binary
                   search (+ pread of the headers)
  segment-recovery ActiveSegment::open_for_recovery + recover of a 1 GiB segment (warm cache)
                   vs raw pread + CRC32C of the same file
  recovery         PartitionLog::open after an unclean shutdown of a 2 GiB log, every segment
                   scanned (warm cache) vs raw pread + CRC32C of the same files
                   (alias: log-recovery)
  append           engine appends of 16 KiB batches: leader, mirror, mirror-1mib, 1000-partitions
                   vs raw pwrite of the same bytes to as many files
  durable-append   append_as_leader_durable from 1, 8, 64 writers on 1, 8, 64 partitions (group
                   commit) vs one thread's pwrite + fdatasync of 16 KiB; latency percentiles
  fetch-send       a segment range over loopback TCP with sendfile(2) vs pread + write (the
                   broker's fetch path), 1 MiB chunks, warm cache
  produce          a real Kafka client (librdkafka) producing 1 KiB records, acks=1 and acks=all,
                   to mirrorlog serve vs each installed peer (Tansu, noida-db: run
                   bench/peers/install.sh): throughput, latency at a fixed 16 MB/s load, and one
                   16 KiB fdatasync's p99
  consume          a fresh librdkafka consumer reading 256 MiB from the beginning, mirrorlog vs
                   each installed peer (MIRRORLOG_BENCH_PEERS=none|all|tansu,noida-db picks them)
  mirror           a mirror between two in-process brokers over loopback: catch-up of 2 GiB vs
                   raw TCP on one connection, steady-state lag at 64 MB/s, peak RSS with 10,000
                   mirrored partitions vs threads × response bytes + 64 MiB
  all              every scenario above";

type Scenario = fn(Opts) -> Result<Vec<Report>>;

const SCENARIOS: &[(&str, Scenario)] = &[
    ("batch-validate", |o| Ok(scenarios::batch_validate::run(o))),
    ("segment-append", scenarios::segment_append::run),
    ("index-lookup", scenarios::index_lookup::run),
    ("segment-recovery", scenarios::segment_recovery::run),
    ("recovery", scenarios::recovery::run),
    ("append", scenarios::append::run),
    ("durable-append", scenarios::durable_append::run),
    ("fetch-send", |o| Ok(scenarios::fetch_send::run(o))),
    ("produce", scenarios::produce_consume::run_produce),
    ("consume", scenarios::produce_consume::run_consume),
    ("mirror", scenarios::mirror::run),
];

/// Other names accepted for a scenario.
const ALIASES: &[(&str, &str)] = &[("log-recovery", "recovery")];

fn main() -> Result<()> {
    let mut scenario = None;
    let mut opts = Opts {
        quick: false,
        json: false,
    };
    for a in std::env::args().skip(1) {
        match a.as_str() {
            "--quick" => opts.quick = true,
            "--json" => opts.json = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return Ok(());
            }
            s if !s.starts_with('-') && scenario.is_none() => scenario = Some(s.to_string()),
            other => bail!("unknown argument {other}\n{USAGE}"),
        }
    }
    let Some(scenario) = scenario else {
        bail!("{USAGE}")
    };
    let scenario = ALIASES
        .iter()
        .find(|(alias, _)| *alias == scenario)
        .map_or(scenario.as_str(), |(_, name)| name);
    let selected: Vec<&(&str, Scenario)> = if scenario == "all" {
        SCENARIOS.iter().collect()
    } else {
        match SCENARIOS.iter().find(|(name, _)| *name == scenario) {
            Some(s) => vec![s],
            None => bail!("unknown scenario {scenario}\n{USAGE}"),
        }
    };
    for (_, run) in selected {
        // Print each scenario's lines as soon as it finishes.
        for r in run(opts)? {
            r.print(opts);
        }
    }
    Ok(())
}
