//! `mirrorlog-bench SCENARIO [--quick] [--json]`: runs a scenario and its same-run baseline and
//! prints medians and ratios (DESIGN.md §6).

use anyhow::{Result, bail};
use mirrorlog_bench::harness::Opts;
use mirrorlog_bench::scenarios;

const USAGE: &str = "usage: mirrorlog-bench SCENARIO [--quick] [--json]
scenarios:
  batch-validate   RecordBatch::validate() on 16 KiB batches vs raw CRC32C
  all              every scenario above";

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
    let reports = match scenario.as_str() {
        "batch-validate" => scenarios::batch_validate::run(opts),
        "all" => scenarios::batch_validate::run(opts),
        other => bail!("unknown scenario {other}\n{USAGE}"),
    };
    for r in &reports {
        r.print(opts);
    }
    Ok(())
}
