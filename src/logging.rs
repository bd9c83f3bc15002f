//! The process's `tracing` subscriber: lines on stderr, filtered by `RUST_LOG` (or a default
//! level) through a reloadable `EnvFilter`, so that `mirrorlog serve`'s broker can read and
//! change the levels while it runs (Kafka's BROKER_LOGGER config resource: see
//! `mirrorlog_broker::loggers`).

use mirrorlog_broker::loggers::{LogLevels, Loggers};
use std::sync::Arc;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::prelude::*;
use tracing_subscriber::{EnvFilter, reload};

/// The directives the process starts with: `RUST_LOG` when `EnvFilter` accepts it, else
/// `default_level` (as `EnvFilter::try_from_default_env` with a fallback did).
fn starting_levels(rust_log: Option<&str>, default_level: &str) -> LogLevels {
    match rust_log {
        Some(spec) if EnvFilter::try_new(spec).is_ok() => LogLevels::parse(spec),
        _ => LogLevels::parse(default_level),
    }
}

/// Whether log lines carry the terminal's colour escapes: only on a terminal, and not when
/// `NO_COLOR` is set to something (<https://no-color.org>). A log written to a file or a pipe is
/// plain text, as Kafka's are.
fn ansi_colours(stderr_is_terminal: bool, no_color: Option<&str>) -> bool {
    stderr_is_terminal && no_color.is_none_or(str::is_empty)
}

/// A subscriber writing to `writer`, filtered by `levels`, with colour escapes when `ansi`, and
/// the handle that changes the levels.
fn subscriber<W>(
    levels: LogLevels,
    writer: W,
    ansi: bool,
) -> (impl tracing::Subscriber + Send + Sync + 'static, Loggers)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    // The directives of a parsed `RUST_LOG` or level always make a filter.
    let filter = EnvFilter::try_new(levels.directives()).expect("directives EnvFilter accepted");
    let (filter, handle) = reload::Layer::new(filter);
    let subscriber = tracing_subscriber::registry().with(filter).with(
        tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .with_writer(writer),
    );
    // A reload also rebuilds the callsites' cached interest, so a newly enabled event shows at
    // once.
    let apply = move |directives: &str| {
        let filter = EnvFilter::try_new(directives).map_err(|e| e.to_string())?;
        handle.reload(filter).map_err(|e| e.to_string())
    };
    (subscriber, Loggers::new(levels, Box::new(apply)))
}

/// Installs the process's subscriber (stderr, `RUST_LOG` or `default_level`) and returns the
/// handle on its levels.
pub fn init(default_level: &str) -> Arc<Loggers> {
    let levels = starting_levels(std::env::var("RUST_LOG").ok().as_deref(), default_level);
    let ansi = ansi_colours(
        std::io::IsTerminal::is_terminal(&std::io::stderr()),
        std::env::var("NO_COLOR").ok().as_deref(),
    );
    let (subscriber, loggers) = subscriber(levels, std::io::stderr, ansi);
    subscriber.init();
    Arc::new(loggers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mirrorlog_broker::loggers::LoggerChange;
    use std::sync::Mutex;
    use tracing::level_filters::LevelFilter;

    /// The directives rebuilt from [`LogLevels`] make the filter `RUST_LOG` itself makes.
    #[test]
    fn rebuilt_directives_filter_as_the_rust_log_they_came_from() {
        for spec in [
            "info",
            "warn,mirrorlog_engine=debug",
            "mirrorlog_broker",
            "mirrorlog_broker=info,hyper=off",
            "debug,info,a=warn,a=error",
            "info,mirrorlog_broker[conn{id=1}]=trace,mirrorlog_engine::log=trace",
            "error,mirrorlog=4",
            "",
        ] {
            let direct = EnvFilter::try_new(spec).unwrap().to_string();
            let rebuilt = EnvFilter::try_new(LogLevels::parse(spec).directives())
                .unwrap()
                .to_string();
            assert_eq!(rebuilt, direct, "RUST_LOG={spec:?}");
        }
    }

    #[test]
    fn a_rust_log_envfilter_refuses_falls_back_to_the_default_level() {
        assert_eq!(
            starting_levels(Some("mirrorlog_engine=loud"), "warn"),
            LogLevels::parse("warn")
        );
        assert_eq!(starting_levels(None, "info"), LogLevels::parse("info"));
        assert_eq!(
            starting_levels(Some("error,mirrorlog_broker=debug"), "info").root(),
            LevelFilter::ERROR
        );
    }

    #[test]
    fn colours_only_on_a_terminal_without_no_color() {
        assert!(ansi_colours(true, None));
        assert!(ansi_colours(true, Some("")));
        assert!(!ansi_colours(true, Some("1")));
        assert!(!ansi_colours(false, None));
    }

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
        }
    }

    fn debug_line(n: u32) {
        tracing::debug!(target: "mirrorlog_broker::loggers_test", "debug line {n}");
    }

    #[test]
    fn a_change_through_the_handle_reaches_the_subscriber() {
        let out = Captured::default();
        let w = out.clone();
        let (subscriber, loggers) = subscriber(LogLevels::parse("info"), move || w.clone(), false);
        tracing::subscriber::with_default(subscriber, || {
            debug_line(1);
            assert_eq!(out.take(), "");
            loggers
                .change(&[LoggerChange::Set(
                    "mirrorlog_broker".into(),
                    LevelFilter::DEBUG,
                )])
                .unwrap();
            debug_line(2);
            assert!(out.take().contains("debug line 2"));
            loggers
                .change(&[LoggerChange::Unset("mirrorlog_broker".into())])
                .unwrap();
            debug_line(3);
            assert_eq!(out.take(), "");
            loggers
                .change(&[LoggerChange::Set("root".into(), LevelFilter::TRACE)])
                .unwrap();
            debug_line(4);
            assert!(out.take().contains("debug line 4"));
        });
    }
}
