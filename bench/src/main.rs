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
  recovery         ActiveSegment::open + recover of a 1 GiB segment (warm cache) vs raw
                   pread + CRC32C of the same file
  all              every scenario above";

type Scenario = fn(Opts) -> Result<Vec<Report>>;

const SCENARIOS: &[(&str, Scenario)] = &[
    ("batch-validate", |o| Ok(scenarios::batch_validate::run(o))),
    ("segment-append", scenarios::segment_append::run),
    ("index-lookup", scenarios::index_lookup::run),
    ("recovery", scenarios::segment_recovery::run),
];

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
