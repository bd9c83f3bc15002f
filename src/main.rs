//! `mirrorlog`: the one binary. Subcommands are thin wrappers over the library crates.

mod demo;
mod dump;
mod logging;
mod mirrors;
mod serve;

/// Hostile requests must not abort the broker through a huge, never-used allocation in the
/// protocol decoder: see `mirrorlog_broker::alloc`.
#[global_allocator]
static ALLOCATOR: mirrorlog_broker::alloc::NoReserveForHuge =
    mirrorlog_broker::alloc::NoReserveForHuge;

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
    /// Print a partition dir or a log, index, snapshot or checkpoint file (kafka-dump-log.sh).
    ///
    /// PATH is one of:
    ///   - a partition directory (e.g. `foo-0`): each segment in base-offset order (its
    ///     batches, then its .index, .timeindex and .txnindex entries, each checked against
    ///     the log), then the producer snapshots, leader-epoch-checkpoint, partition.metadata;
    ///   - a .index, .timeindex, .txnindex or .snapshot file, a leader-epoch-checkpoint or a
    ///     partition.metadata: its entries, checked against the segment's .log beside it (if
    ///     there is one);
    ///   - any other file: read as a segment .log, one batch per line.
    ///
    /// An index entry agrees with the log when: (.index) the batch starting at its position
    /// ends at its offset; (.timeindex) its offset is a batch's last offset, that batch's max
    /// timestamp is its timestamp and no earlier batch of the segment has a larger one;
    /// (.txnindex) its last offset is an ABORT marker of its producer. Entries must also be in
    /// order (see src/dump.rs for every check).
    ///
    /// Nothing is opened writable. The exit status is 1 when a file is corrupt or an entry
    /// disagrees with the log, after everything readable was printed; each problem goes to
    /// stderr naming its file and position. A reader that stops early (`| head`) ends it
    /// silently by SIGPIPE, as it ends a C tool (status 141 in the shell).
    #[command(verbatim_doc_comment, after_long_help = dump::JSON_HELP)]
    Dump {
        /// A partition directory, or a `.log`, `.index`, `.timeindex`, `.txnindex`, `.snapshot`,
        /// `leader-epoch-checkpoint` or `partition.metadata` file.
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// One JSON object per line (`--help` lists the shapes).
        #[arg(long)]
        json: bool,
        /// Include each batch's records.
        #[arg(long)]
        records: bool,
    },
    /// Run the single-node Kafka-protocol broker until SIGTERM/SIGINT.
    Serve(serve::ServeArgs),
    /// Two local brokers, a mirror between them, a failover, and a report.
    Demo,
    /// Manage cluster mirrors on a destination broker (kafka-cluster-mirrors.sh): create,
    /// delete, list, describe; start, stop (fail over), pause, resume and recover topics.
    Mirrors(mirrors::MirrorsArgs),
}

fn main() -> ExitCode {
    mirrorlog_broker::alloc::limit_malloc_arenas();
    let cli = Cli::parse();
    // The demo prints its own progress; logs stay at warnings unless RUST_LOG says otherwise.
    let default_level = if matches!(cli.command, Command::Demo | Command::Mirrors(_)) {
        "warn"
    } else {
        "info"
    };
    let loggers = logging::init(default_level);
    match run(cli, loggers) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command; `loggers` is the handle on the process's log levels, which `serve` hands
/// its broker.
fn run(cli: Cli, loggers: std::sync::Arc<mirrorlog_broker::loggers::Loggers>) -> Result<ExitCode> {
    match cli.command {
        Command::Demo => {
            demo::run()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Serve(args) => {
            serve::run(args, loggers)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mirrors(args) => mirrors::run(args),
        Command::Dump {
            path,
            json,
            records,
        } => {
            dump_dies_of_a_closed_stdout();
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let problems = dump::dump_path(&path, dump::DumpOptions { json, records }, &mut out)?;
            std::io::Write::flush(&mut out)?;
            for p in &problems.0 {
                eprintln!("{p}");
            }
            Ok(if problems.0.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

/// `dump` writes to stdout like `cat`, so it ends as a C tool does when its reader goes away
/// (`mirrorlog dump FILE | head`): killed by SIGPIPE, silently, the shell's status 141 (128 +
/// 13). Rust starts every program with SIGPIPE ignored, so the write failed with `EPIPE`
/// instead and `dump` ended with "error: Broken pipe" and status 1 — the status that says the
/// file is corrupt. Only `dump` restores the default: `serve` must go on ignoring SIGPIPE, a
/// client that disconnects being an error on one connection, not the end of the broker.
fn dump_dies_of_a_closed_stdout() {
    // SAFETY: `signal` with `SIG_DFL` installs no handler of ours (nothing runs in signal
    // context); the disposition is process-wide, set before any output, and `dump` starts no
    // thread that relies on SIGPIPE being ignored.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn long_help(subcommand: &str) -> String {
        Cli::command()
            .find_subcommand_mut(subcommand)
            .expect("subcommand")
            .render_long_help()
            .to_string()
    }

    /// README "Mirroring: an operator's guide": an incomplete failover report exits 3; the
    /// help says so beside `--preflight`'s exit status.
    #[test]
    fn the_mirrors_help_gives_the_failover_reports_exit_status() {
        let help = long_help("mirrors");
        assert!(help.contains("Exit status 3 when a"), "{help}");
    }

    /// README "Running the broker" writes `--listen`, `--advertised-listener HOST:PORT` and
    /// `--config FILE`; the help names the values the same way.
    #[test]
    fn the_serve_help_names_its_values_as_the_readme() {
        let help = long_help("serve");
        for flag in [
            "--listen <HOST:PORT>",
            "--advertised-listener <HOST:PORT>",
            "--config <FILE>",
        ] {
            assert!(help.contains(flag), "{flag} in:\n{help}");
        }
    }
}
