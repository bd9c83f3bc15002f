//! The process's log levels seen as Kafka's dynamic broker loggers (config resource type
//! `BROKER_LOGGER`, KIP-412): DescribeConfigs lists them, IncrementalAlterConfigs sets or
//! resets one without a restart, as `kafka-configs.sh --entity-type broker-loggers` does.
//!
//! A Kafka logger is a log4j logger; ours is a `tracing` target. [`LogLevels`] models the
//! `EnvFilter` directives `mirrorlog serve` builds from `RUST_LOG` (or its default level):
//!
//! - `root` is the level-only directive (`info` in `RUST_LOG=info,mirrorlog_engine=debug`):
//!   what every target no other directive names is logged at (`OFF` when there is none, as
//!   `EnvFilter` then logs nothing else).
//! - every other logger is a target: each workspace crate's ([`CRATE_TARGETS`]), each target a
//!   directive named (in `RUST_LOG` or set here since the start), and any module path below one
//!   of those (`mirrorlog_engine::log`), which a SET adds.
//! - a logger's effective level is `EnvFilter`'s: the level of the longest directive target the
//!   logger's name starts with (a string prefix, as `EnvFilter` matches, so `mirrorlog=debug`
//!   covers `mirrorlog_engine` too), else root's.
//!
//! A SET adds or replaces a target's directive (root's level for `root`); a DELETE removes it,
//! so the target falls back to its parent's level. Directives with span or field filters
//! (`mirrorlog_broker[conn]=trace`) are kept as given and are not loggers. Nothing is
//! persisted: a restart starts again from `RUST_LOG`, as Kafka's log4j levels do.
//!
//! This module never touches the subscriber: the embedder (`mirrorlog serve`) hands a
//! [`Loggers`] the closure that installs a directive string in its reloadable filter. A broker
//! without one answers BROKER_LOGGER as a resource type it does not serve.

use parking_lot::Mutex;
use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;
use tracing::level_filters::LevelFilter;

/// Kafka's name for the root logger (`LoggingController.ROOT_LOGGER`).
pub const ROOT_LOGGER: &str = "root";

/// The `tracing` targets of the workspace crates `mirrorlog serve` runs (each crate's name, `-`
/// as `_`): always listed, even with no directive of their own.
pub const CRATE_TARGETS: [&str; 6] = [
    "mirrorlog",
    "mirrorlog_broker",
    "mirrorlog_engine",
    "mirrorlog_index",
    "mirrorlog_mirror",
    "mirrorlog_segment",
];

/// Kafka's `LogLevelConfig.VALID_LOG_LEVELS`, sorted and joined as `RuntimeLoggerManager`
/// prints them in its refusal.
pub const VALID_LOG_LEVELS: &str = "DEBUG, ERROR, FATAL, INFO, TRACE, WARN";

/// The level a Kafka log level value sets, if Kafka accepts it: exactly one of
/// [`VALID_LOG_LEVELS`], upper case (Kafka's check is case-sensitive and has no `OFF` or
/// `ALL`). `FATAL` has no `tracing` level of its own and sets `ERROR`.
pub fn parse_kafka_level(value: &str) -> Option<LevelFilter> {
    Some(match value {
        "FATAL" | "ERROR" => LevelFilter::ERROR,
        "WARN" => LevelFilter::WARN,
        "INFO" => LevelFilter::INFO,
        "DEBUG" => LevelFilter::DEBUG,
        "TRACE" => LevelFilter::TRACE,
        _ => return None,
    })
}

/// A level as DescribeConfigs shows it (log4j's `Level.toString`): `TRACE` … `ERROR`, `OFF`.
pub fn level_name(level: LevelFilter) -> &'static str {
    match level {
        LevelFilter::TRACE => "TRACE",
        LevelFilter::DEBUG => "DEBUG",
        LevelFilter::INFO => "INFO",
        LevelFilter::WARN => "WARN",
        LevelFilter::ERROR => "ERROR",
        _ => "OFF",
    }
}

/// A level as an `EnvFilter` directive spells it.
fn directive_level(level: LevelFilter) -> &'static str {
    match level {
        LevelFilter::TRACE => "trace",
        LevelFilter::DEBUG => "debug",
        LevelFilter::INFO => "info",
        LevelFilter::WARN => "warn",
        LevelFilter::ERROR => "error",
        _ => "off",
    }
}

/// Whether `name` is a Rust path: `::`-separated, non-empty segments of ASCII letters, digits
/// and `_`.
fn is_path(name: &str) -> bool {
    name.split("::")
        .all(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

/// The log levels of the process as directives (see the module docs). Only [`Loggers`] changes
/// them, after the subscriber took the new set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLevels {
    /// The level-only directive; none: what no directive names is not logged.
    root: Option<LevelFilter>,
    /// Each target's directive.
    targets: BTreeMap<String, LevelFilter>,
    /// Directives with span or field filters, as given, in order.
    others: Vec<String>,
    /// Every logger besides root: [`CRATE_TARGETS`] and every target a directive named.
    known: BTreeSet<String>,
}

impl LogLevels {
    /// The levels of a directive string `EnvFilter` accepted (`RUST_LOG`, or a level such as
    /// `info`): comma-separated `level`, `target`, `target=level`, or a directive with span or
    /// field filters (kept as given). A later directive for the same target replaces an earlier
    /// one, as in `EnvFilter`. A piece whose level does not parse is kept as given too (the
    /// caller checked the string with `EnvFilter` first).
    pub fn parse(directives: &str) -> LogLevels {
        let mut levels = LogLevels {
            root: None,
            targets: BTreeMap::new(),
            others: vec![],
            known: CRATE_TARGETS.iter().map(|t| t.to_string()).collect(),
        };
        for piece in directives
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            if piece.contains(['[', '{']) {
                levels.others.push(piece.to_string());
                continue;
            }
            match piece.split_once('=') {
                Some((target, level)) => match LevelFilter::from_str(level.trim()) {
                    Ok(level) if target.trim().is_empty() => levels.root = Some(level),
                    Ok(level) => levels.set(target.trim(), level),
                    Err(_) => levels.others.push(piece.to_string()),
                },
                // A bare level is root's; a bare target is logged at every level.
                None => match LevelFilter::from_str(piece) {
                    Ok(level) => levels.root = Some(level),
                    Err(_) => levels.set(piece, LevelFilter::TRACE),
                },
            }
        }
        levels
    }

    /// The directive string to build the subscriber's `EnvFilter` from: root's level, each
    /// target's directive, then the others as given.
    pub fn directives(&self) -> String {
        let root = self.root.map(|l| directive_level(l).to_string());
        let targets = self
            .targets
            .iter()
            .map(|(t, l)| format!("{t}={}", directive_level(*l)));
        root.into_iter()
            .chain(targets)
            .chain(self.others.iter().cloned())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Root's level: its directive's, `OFF` without one.
    pub fn root(&self) -> LevelFilter {
        self.root.unwrap_or(LevelFilter::OFF)
    }

    /// The level events of `target` are logged at: that of the longest directive target
    /// `target` starts with, else root's (`EnvFilter`'s matching; span and field directives
    /// are not counted).
    pub fn effective(&self, target: &str) -> LevelFilter {
        self.targets
            .iter()
            .filter(|(t, _)| target.starts_with(t.as_str()))
            .max_by_key(|(t, _)| t.len())
            .map_or(self.root(), |(_, l)| *l)
    }

    /// Every logger with its effective level: root first, then the targets in name order.
    pub fn loggers(&self) -> Vec<(String, LevelFilter)> {
        std::iter::once((ROOT_LOGGER.to_string(), self.root()))
            .chain(self.known.iter().map(|t| (t.clone(), self.effective(t))))
            .collect()
    }

    /// Whether `name` is a logger: root, a listed target, or a module path below one.
    pub fn exists(&self, name: &str) -> bool {
        name == ROOT_LOGGER
            || self.known.contains(name)
            || (is_path(name)
                && self.known.iter().any(|k| {
                    name.strip_prefix(k.as_str())
                        .is_some_and(|rest| rest.starts_with("::"))
                }))
    }

    /// Sets `name`'s level: root's, or a directive of its own for a target (listed from now
    /// on).
    pub fn set(&mut self, name: &str, level: LevelFilter) {
        if name == ROOT_LOGGER {
            self.root = Some(level);
        } else {
            self.targets.insert(name.to_string(), level);
            self.known.insert(name.to_string());
        }
    }

    /// Removes `name`'s own directive: it falls back to its parent's level (still listed).
    ///
    /// # Panics
    /// `name` is root, which always has a level (the caller refuses that first).
    pub fn unset(&mut self, name: &str) {
        assert_ne!(name, ROOT_LOGGER, "root's level cannot be removed");
        self.targets.remove(name);
    }
}

/// One change of a validated IncrementalAlterConfigs BROKER_LOGGER resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoggerChange {
    /// SET: the logger's level.
    Set(String, LevelFilter),
    /// DELETE: back to the parent's level.
    Unset(String),
}

/// What installs a directive string in the process's subscriber (an `EnvFilter` reload); an
/// error leaves the levels as they were.
pub type ApplyDirectives = Box<dyn Fn(&str) -> Result<(), String> + Send + Sync>;

/// The handle the broker reads and changes the process's log levels through (see the module
/// docs); `mirrorlog serve` makes one around its reloadable filter.
pub struct Loggers {
    levels: Mutex<LogLevels>,
    apply: ApplyDirectives,
}

impl std::fmt::Debug for Loggers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loggers")
            .field("levels", &*self.levels.lock())
            .finish()
    }
}

impl Loggers {
    /// A handle on `levels`, the levels the subscriber was built with; `apply` installs later
    /// ones.
    pub fn new(levels: LogLevels, apply: ApplyDirectives) -> Loggers {
        Loggers {
            levels: Mutex::new(levels),
            apply,
        }
    }

    /// Every logger with its effective level (see [`LogLevels::loggers`]).
    pub fn loggers(&self) -> Vec<(String, LevelFilter)> {
        self.levels.lock().loggers()
    }

    /// Whether `name` is a logger (see [`LogLevels::exists`]). Loggers are never removed, so
    /// an answer stays true.
    pub fn exists(&self, name: &str) -> bool {
        self.levels.lock().exists(name)
    }

    /// Makes `changes` in order and installs the result in the subscriber at once.
    ///
    /// # Errors
    /// The subscriber refused the directives (its message); nothing changed.
    pub fn change(&self, changes: &[LoggerChange]) -> Result<(), String> {
        let mut levels = self.levels.lock();
        let mut next = levels.clone();
        for c in changes {
            match c {
                LoggerChange::Set(name, level) => next.set(name, *level),
                LoggerChange::Unset(name) => next.unset(name),
            }
        }
        (self.apply)(&next.directives())?;
        *levels = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(spec: &str) -> LogLevels {
        LogLevels::parse(spec)
    }

    #[test]
    fn a_bare_level_is_roots_and_every_crate_is_listed_at_it() {
        let l = levels("info");
        assert_eq!(l.directives(), "info");
        let listed = l.loggers();
        assert_eq!(listed[0], ("root".to_string(), LevelFilter::INFO));
        for t in CRATE_TARGETS {
            assert!(listed.contains(&(t.to_string(), LevelFilter::INFO)), "{t}");
        }
        assert_eq!(listed.len(), 1 + CRATE_TARGETS.len());
    }

    #[test]
    fn target_directives_are_listed_with_their_levels_and_children_inherit_them() {
        let l = levels("warn,mirrorlog_engine=debug,hyper,mirrorlog_engine::log=trace");
        assert_eq!(l.root(), LevelFilter::WARN);
        assert_eq!(l.effective("mirrorlog_engine"), LevelFilter::DEBUG);
        assert_eq!(l.effective("mirrorlog_engine::manager"), LevelFilter::DEBUG);
        assert_eq!(
            l.effective("mirrorlog_engine::log::append"),
            LevelFilter::TRACE
        );
        // A bare target is logged at every level.
        assert_eq!(l.effective("hyper::client"), LevelFilter::TRACE);
        assert_eq!(l.effective("mirrorlog_broker"), LevelFilter::WARN);
        let names: Vec<String> = l.loggers().into_iter().map(|(n, _)| n).collect();
        assert!(names.contains(&"hyper".to_string()));
        assert!(names.contains(&"mirrorlog_engine::log".to_string()));
        assert_eq!(
            l.directives(),
            "warn,hyper=trace,mirrorlog_engine=debug,mirrorlog_engine::log=trace"
        );
    }

    /// `EnvFilter` matches a directive's target as a string prefix, not by path segments.
    #[test]
    fn a_directive_covers_every_target_its_name_starts() {
        let l = levels("error,mirrorlog=debug");
        assert_eq!(l.effective("mirrorlog_broker"), LevelFilter::DEBUG);
        assert_eq!(l.effective("other"), LevelFilter::ERROR);
    }

    #[test]
    fn without_a_level_only_directive_root_is_off() {
        let l = levels("mirrorlog_broker=info");
        assert_eq!(l.root(), LevelFilter::OFF);
        assert_eq!(l.effective("mirrorlog_engine"), LevelFilter::OFF);
        assert_eq!(l.directives(), "mirrorlog_broker=info");
    }

    #[test]
    fn a_later_directive_for_the_same_target_wins() {
        let l = levels("info,debug,a=warn,a=error");
        assert_eq!(l.directives(), "debug,a=error");
    }

    #[test]
    fn span_and_field_directives_are_kept_as_given_and_are_not_loggers() {
        let l = levels("info,mirrorlog_broker[conn{id=1}]=trace");
        assert_eq!(l.directives(), "info,mirrorlog_broker[conn{id=1}]=trace");
        assert!(!l.exists("mirrorlog_broker[conn{id=1}]"));
    }

    #[test]
    fn set_adds_a_module_and_unset_falls_back_to_its_parent() {
        let mut l = levels("info,mirrorlog_engine=warn");
        assert!(l.exists("mirrorlog_engine::log"));
        l.set("mirrorlog_engine::log", LevelFilter::DEBUG);
        assert_eq!(
            l.effective("mirrorlog_engine::log::append"),
            LevelFilter::DEBUG
        );
        assert_eq!(
            l.directives(),
            "info,mirrorlog_engine=warn,mirrorlog_engine::log=debug"
        );
        l.unset("mirrorlog_engine::log");
        assert_eq!(l.effective("mirrorlog_engine::log"), LevelFilter::WARN);
        // Still a logger, listed at its inherited level.
        assert!(
            l.loggers()
                .contains(&("mirrorlog_engine::log".to_string(), LevelFilter::WARN))
        );
        l.unset("mirrorlog_engine");
        assert_eq!(l.effective("mirrorlog_engine::log"), LevelFilter::INFO);
        l.set(ROOT_LOGGER, LevelFilter::ERROR);
        assert_eq!(l.directives(), "error");
    }

    #[test]
    fn only_root_listed_targets_and_module_paths_below_them_exist() {
        let l = levels("info,hyper=warn");
        for name in [
            "root",
            "mirrorlog_broker",
            "mirrorlog_broker::server::listener",
            "hyper",
            "hyper::proto",
        ] {
            assert!(l.exists(name), "{name}");
        }
        for name in [
            "ROOT",
            "",
            "tokio",
            "mirrorlog_brokers",
            "mirrorlog_broker::",
            "mirrorlog_broker::a b",
            "mirrorlog_broker:x",
            "kafka.server",
        ] {
            assert!(!l.exists(name), "{name}");
        }
    }

    #[test]
    fn kafka_levels_are_upper_case_with_fatal_as_error_and_no_off_or_all() {
        assert_eq!(parse_kafka_level("FATAL"), Some(LevelFilter::ERROR));
        assert_eq!(parse_kafka_level("TRACE"), Some(LevelFilter::TRACE));
        for bad in ["debug", "OFF", "ALL", "VERBOSE", ""] {
            assert_eq!(parse_kafka_level(bad), None, "{bad}");
        }
        for level in [
            LevelFilter::TRACE,
            LevelFilter::DEBUG,
            LevelFilter::INFO,
            LevelFilter::WARN,
            LevelFilter::ERROR,
        ] {
            assert_eq!(parse_kafka_level(level_name(level)), Some(level));
        }
        assert_eq!(level_name(LevelFilter::OFF), "OFF");
    }

    #[test]
    fn a_refused_change_leaves_the_levels_as_they_were() {
        let seen = std::sync::Arc::new(Mutex::new(vec![]));
        let s = seen.clone();
        let loggers = Loggers::new(
            levels("info"),
            Box::new(move |d| {
                s.lock().push(d.to_string());
                if d.contains("trace") {
                    Err("no".into())
                } else {
                    Ok(())
                }
            }),
        );
        let set = |n: &str, l| LoggerChange::Set(n.to_string(), l);
        loggers
            .change(&[set("mirrorlog_broker", LevelFilter::DEBUG)])
            .unwrap();
        assert_eq!(
            loggers.change(&[set("mirrorlog_engine", LevelFilter::TRACE)]),
            Err("no".to_string())
        );
        let listed = loggers.loggers();
        assert!(listed.contains(&("mirrorlog_broker".to_string(), LevelFilter::DEBUG)));
        assert!(listed.contains(&("mirrorlog_engine".to_string(), LevelFilter::INFO)));
        loggers
            .change(&[LoggerChange::Unset("mirrorlog_broker".to_string())])
            .unwrap();
        assert_eq!(
            *seen.lock(),
            [
                "info,mirrorlog_broker=debug",
                "info,mirrorlog_broker=debug,mirrorlog_engine=trace",
                "info"
            ]
        );
    }
}
