//! `mirrorlog-bench SCENARIO [--quick] [--json]`: runs a scenario and its same-run baseline and
//! prints medians and ratios (DESIGN.md §6); `mirrorlog-bench all [--skip-network]` runs every
//! scenario; `mirrorlog-bench compare BASELINE.json CURRENT.json [--tolerance 0.1]` is the
//! perf-regression gate (exit status 1 when a ratio fell by more than the tolerance).

use anyhow::{Result, bail};
use mirrorlog_bench::harness::{Opts, Report};
use mirrorlog_bench::scenarios;

const USAGE: &str = "usage: mirrorlog-bench SCENARIO [--quick] [--json] [--skip-network]
       mirrorlog-bench compare BASELINE.json CURRENT.json [--tolerance 0.1]
compare: the perf-regression gate over two --json runs; exits 1 when any same-run ratio fell by
         more than the tolerance (latency ratios: rose), or a variant of BASELINE is missing
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
  direct-append    the O_DIRECT + io_uring append path (segment, both durability modes; engine
                   durable appends with log.io.mode=direct from 1/64 writers on 1/64 partitions)
                   vs raw O_DIRECT 16 KiB writes at queue depth 16 and one O_DSYNC 16 KiB write's
                   latency
  fetch-send       a segment range over loopback TCP with sendfile(2) vs pread + write (the
                   broker's fetch path), 1 MiB chunks, warm cache
  log-peers        mirrorlog's partition log beside the embedded engines commitlog and
                   raft-engine: 1 KiB records in 16 KiB batches, sync at the end / per batch,
                   read back warm; vs raw pwrite+fdatasync / pread of the same bytes
  produce          a real Kafka client (librdkafka) producing 1 KiB records, acks=1 and acks=all,
                   to mirrorlog serve vs each installed peer (Tansu, noida-db: run
                   bench/peers/install.sh): throughput, latency at a fixed 16 MB/s load, and one
                   16 KiB fdatasync's p99
  consume          a fresh librdkafka consumer reading 256 MiB from the beginning, mirrorlog vs
                   each installed peer (MIRRORLOG_BENCH_PEERS=none|all|tansu,noida-db picks them)
  mirror           a mirror between two in-process brokers over loopback: catch-up of 2 GiB vs
                   raw TCP on one connection, steady-state lag at 64 MB/s, peak RSS with 10,000
                   mirrored partitions vs threads × source nodes × response bytes + 64 MiB
  all              every scenario above, each beside its baseline; with --skip-network, without
                   the ones that need a Kafka client over TCP and peers (produce, consume)";

type Scenario = fn(Opts) -> Result<Vec<Report>>;

/// Scenarios that drive a real Kafka client over TCP, optionally beside peer brokers: skipped
/// by `all --skip-network`.
const NETWORK: &[&str] = &["produce", "consume"];

const SCENARIOS: &[(&str, Scenario)] = &[
    ("batch-validate", |o| Ok(scenarios::batch_validate::run(o))),
    ("segment-append", scenarios::segment_append::run),
    ("index-lookup", scenarios::index_lookup::run),
    ("segment-recovery", scenarios::segment_recovery::run),
    ("recovery", scenarios::recovery::run),
    ("append", scenarios::append::run),
    ("durable-append", scenarios::durable_append::run),
    ("direct-append", scenarios::direct_append::run),
    ("fetch-send", |o| Ok(scenarios::fetch_send::run(o))),
    ("log-peers", scenarios::log_peers::run),
    ("produce", scenarios::produce_consume::run_produce),
    ("consume", scenarios::produce_consume::run_consume),
    ("mirror", scenarios::mirror::run),
];

/// Other names accepted for a scenario.
const ALIASES: &[(&str, &str)] = &[("log-recovery", "recovery")];

fn main() -> Result<()> {
    // As the `mirrorlog` binary does: the brokers the scenarios start live in this process.
    mirrorlog_broker::alloc::limit_malloc_arenas();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("compare") {
        let passed = mirrorlog_bench::compare::run(&args[1..])?;
        std::process::exit(if passed { 0 } else { 1 });
    }
    let mut scenario = None;
    let mut skip_network = false;
    let mut opts = Opts {
        quick: false,
        json: false,
    };
    for a in args {
        match a.as_str() {
            "--quick" => opts.quick = true,
            "--skip-network" => skip_network = true,
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
        SCENARIOS
            .iter()
            .filter(|(name, _)| {
                let skip = skip_network && NETWORK.contains(name);
                if skip {
                    eprintln!("all: skipping {name} (--skip-network)");
                }
                !skip
            })
            .collect()
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
