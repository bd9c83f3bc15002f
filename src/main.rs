//! `mirrorlog`: the one binary. Subcommands are thin wrappers over the library crates.

mod dump;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser, Debug)]
#[command(
    name = "mirrorlog",
    version,
    about = "A Kafka-compatible partition log store"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the batches of a segment `.log` file (our kafka-dump-log.sh).
    Dump {
        /// The `.log` file.
        file: PathBuf,
        /// One JSON object per batch.
        #[arg(long)]
        json: bool,
        /// Include each batch's records.
        #[arg(long)]
        records: bool,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Dump {
            file,
            json,
            records,
        } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let problems =
                dump::dump_log_file(&file, dump::DumpOptions { json, records }, &mut out)?;
            std::io::Write::flush(&mut out)?;
            for p in &problems.0 {
                eprintln!("{}: {p}", file.display());
            }
            Ok(if problems.0.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}
