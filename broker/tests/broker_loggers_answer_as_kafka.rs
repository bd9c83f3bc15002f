//! Gap: DescribeConfigs and IncrementalAlterConfigs of BROKER_LOGGER (8) answered
//! INVALID_REQUEST "Unsupported resource type 8." even when the broker had the process's log
//! levels. Kafka 4.x lists every logger with its effective level
//! (`ConfigHelper.describeConfigs`: source DYNAMIC_BROKER_LOGGER_CONFIG, not read-only, no
//! synonyms), sets and resets them through `RuntimeLoggerManager` with its own validation and
//! messages, and refuses BROKER_LOGGER in the legacy AlterConfigs as a type it does not know
//! (`ConfigAdminManager.preprocess`). A broker without log levels keeps the old answer.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::{
    AlterConfigsRequest, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::handlers::admin::{
    self, OP_APPEND, OP_DELETE, OP_SET, OP_SUBTRACT, RESOURCE_BROKER_LOGGER,
    SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG,
};
use mirrorlog_broker::loggers::{LogLevels, Loggers};
use std::sync::{Arc, Mutex};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A broker (node 1) whose log levels start as `RUST_LOG=info,mirrorlog_engine=warn`; the
/// directive strings it installs are collected.
fn broker_with_loggers(dir: &std::path::Path) -> (Broker, Arc<Mutex<Vec<String>>>) {
    let b = common::plain_broker(dir, 1_700_000_000_000);
    let installed = Arc::new(Mutex::new(vec![]));
    let seen = installed.clone();
    b.install_loggers(Arc::new(Loggers::new(
        LogLevels::parse("info,mirrorlog_engine=warn"),
        Box::new(move |d| {
            seen.lock().unwrap().push(d.to_string());
            Ok(())
        }),
    )));
    (b, installed)
}

type Described = Result<Vec<(String, String)>, (i16, String)>;

/// DescribeConfigs (v4) of BROKER_LOGGER `name`, naming `keys` (all when empty).
fn describe(b: &Broker, name: &str, keys: &[&str]) -> Described {
    let mut res = DescribeConfigsResource::default();
    res.resource_type = RESOURCE_BROKER_LOGGER;
    res.resource_name = s(name);
    res.configuration_keys = (!keys.is_empty()).then(|| keys.iter().map(|k| s(k)).collect());
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    r.include_synonyms = true;
    let out = admin::describe_configs(b, r, 4).results.remove(0);
    if out.error_code != 0 {
        assert!(out.configs.is_empty());
        return Err((
            out.error_code,
            out.error_message.map(|m| m.to_string()).unwrap_or_default(),
        ));
    }
    Ok(out
        .configs
        .into_iter()
        .map(|c| {
            assert_eq!(c.config_source, SOURCE_DYNAMIC_BROKER_LOGGER_CONFIG);
            assert!(!c.read_only && !c.is_sensitive);
            assert!(c.synonyms.is_empty() && c.documentation.is_none());
            assert_eq!(c.config_type, 0);
            (c.name.to_string(), c.value.unwrap().to_string())
        })
        .collect())
}

fn level_of(b: &Broker, logger: &str) -> String {
    let all = describe(b, "1", &[logger]).unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    all[0].1.clone()
}

/// IncrementalAlterConfigs (v1) of BROKER_LOGGER `name` with `ops` (name, op, value):
/// (error code, message).
fn alter(
    b: &Broker,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> (i16, Option<String>) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig,
    };
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_BROKER_LOGGER;
    res.resource_name = s(name);
    res.configs = ops
        .iter()
        .map(|(k, op, v)| {
            let mut c = AlterableConfig::default();
            (c.name, c.config_operation, c.value) = (s(k), *op, v.map(s));
            c
        })
        .collect();
    let mut r = IncrementalAlterConfigsRequest::default();
    r.resources = vec![res];
    r.validate_only = validate_only;
    let out = admin::incremental_alter_configs(b, r, 1)
        .responses
        .remove(0);
    (out.error_code, out.error_message.map(|m| m.to_string()))
}

fn refused(code: E, message: &str) -> (i16, Option<String>) {
    (code.code(), Some(message.to_string()))
}

#[test]
fn describe_lists_root_and_every_crate_logger_with_its_effective_level() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with_loggers(dir.path());
    let all = describe(&b, "1", &[]).unwrap();
    assert_eq!(all[0], ("root".to_string(), "INFO".to_string()));
    for (logger, level) in [
        ("mirrorlog_broker", "INFO"),
        ("mirrorlog_engine", "WARN"),
        ("mirrorlog_segment", "INFO"),
    ] {
        assert!(
            all.contains(&(logger.to_string(), level.to_string())),
            "{logger}: {all:?}"
        );
    }
    // Named keys: only those, an unknown one left out (Kafka filters, it does not fail).
    assert_eq!(
        describe(&b, "1", &["mirrorlog_engine", "no_such_logger"]).unwrap(),
        vec![("mirrorlog_engine".to_string(), "WARN".to_string())]
    );
}

#[test]
fn describe_of_another_node_or_no_node_is_invalid_request() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with_loggers(dir.path());
    for (name, message) in [
        ("", "Broker id must not be empty"),
        ("x", "Broker id must be an integer, but it is: x"),
        ("2", "Unexpected broker id, expected 1 but received 2"),
    ] {
        assert_eq!(
            describe(&b, name, &[]),
            Err((E::InvalidRequest.code(), message.to_string())),
            "{name:?}"
        );
    }
}

#[test]
fn set_and_delete_change_the_level_and_validate_only_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (b, installed) = broker_with_loggers(dir.path());
    assert_eq!(
        alter(
            &b,
            "1",
            &[("mirrorlog_broker", OP_SET, Some("DEBUG"))],
            true
        ),
        (0, None)
    );
    assert_eq!(level_of(&b, "mirrorlog_broker"), "INFO");
    assert!(installed.lock().unwrap().is_empty());

    assert_eq!(
        alter(
            &b,
            "1",
            &[
                ("mirrorlog_broker", OP_SET, Some("DEBUG")),
                ("mirrorlog_engine::log", OP_SET, Some("TRACE")),
                ("root", OP_SET, Some("FATAL")),
            ],
            false
        ),
        (0, None)
    );
    assert_eq!(level_of(&b, "mirrorlog_broker"), "DEBUG");
    // A module below a crate becomes a logger of its own; FATAL is tracing's ERROR.
    assert_eq!(level_of(&b, "mirrorlog_engine::log"), "TRACE");
    assert_eq!(level_of(&b, "root"), "ERROR");
    assert_eq!(level_of(&b, "mirrorlog_index"), "ERROR");

    assert_eq!(
        alter(
            &b,
            "1",
            &[
                ("mirrorlog_engine::log", OP_DELETE, None),
                ("mirrorlog_engine", OP_DELETE, Some("ignored")),
            ],
            false
        ),
        (0, None)
    );
    // Back to the parent's level, still listed.
    assert_eq!(level_of(&b, "mirrorlog_engine::log"), "ERROR");
    assert_eq!(
        *installed.lock().unwrap(),
        [
            "error,mirrorlog_broker=debug,mirrorlog_engine=warn,mirrorlog_engine::log=trace",
            "error,mirrorlog_broker=debug",
        ]
    );
}

#[test]
fn refused_alterations_carry_kafkas_codes_and_messages_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (b, installed) = broker_with_loggers(dir.path());
    let levels = "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN";
    for (name, ops, want) in [
        (
            "2",
            vec![("mirrorlog_broker", OP_SET, Some("DEBUG"))],
            refused(
                E::InvalidRequest,
                "Unexpected node id. Expected 1, but received 2",
            ),
        ),
        (
            "",
            vec![("mirrorlog_broker", OP_SET, Some("DEBUG"))],
            refused(E::InvalidRequest, "Node id must be an integer, but it is: "),
        ),
        (
            "1",
            vec![("mirrorlog_broker", OP_SET, Some("VERBOSE"))],
            refused(
                E::InvalidConfig,
                &format!(
                    "Cannot set the log level of mirrorlog_broker to VERBOSE as it is not a \
                     supported log level. {levels}"
                ),
            ),
        ),
        (
            "1",
            vec![("mirrorlog_broker", OP_SET, Some("debug"))],
            refused(
                E::InvalidConfig,
                &format!(
                    "Cannot set the log level of mirrorlog_broker to debug as it is not a \
                     supported log level. {levels}"
                ),
            ),
        ),
        (
            "1",
            vec![("root", OP_SET, Some("OFF"))],
            refused(
                E::InvalidConfig,
                &format!(
                    "Cannot set the log level of root to OFF as it is not a supported log \
                     level. {levels}"
                ),
            ),
        ),
        (
            "1",
            vec![("mirrorlog_broker", OP_SET, None)],
            refused(
                E::InvalidRequest,
                "Null value not supported for : mirrorlog_broker",
            ),
        ),
        (
            "1",
            vec![
                ("mirrorlog_broker", OP_SET, Some("DEBUG")),
                ("kafka.server", OP_SET, Some("DEBUG")),
            ],
            refused(E::InvalidConfig, "Logger kafka.server does not exist!"),
        ),
        (
            "1",
            vec![("tokio", OP_DELETE, None)],
            refused(E::InvalidConfig, "Logger tokio does not exist!"),
        ),
        (
            "1",
            vec![
                ("mirrorlog_broker", OP_SET, Some("DEBUG")),
                ("root", OP_DELETE, None),
            ],
            refused(
                E::InvalidRequest,
                "Removing the log level of the root logger is not allowed",
            ),
        ),
        (
            "1",
            vec![("mirrorlog_broker", OP_APPEND, Some("DEBUG"))],
            refused(
                E::InvalidRequest,
                "APPEND operation is not allowed for the BROKER_LOGGER resource",
            ),
        ),
        (
            "1",
            vec![("mirrorlog_broker", OP_SUBTRACT, Some("DEBUG"))],
            refused(
                E::InvalidRequest,
                "SUBTRACT operation is not allowed for the BROKER_LOGGER resource",
            ),
        ),
        (
            "1",
            vec![("mirrorlog_broker", 7, Some("DEBUG"))],
            refused(
                E::InvalidRequest,
                "Unknown operation type 7 is not allowed for the BROKER_LOGGER resource",
            ),
        ),
    ] {
        assert_eq!(alter(&b, name, &ops, false), want, "{ops:?}");
    }
    assert!(installed.lock().unwrap().is_empty());
    assert_eq!(level_of(&b, "mirrorlog_broker"), "INFO");
}

#[test]
fn legacy_alter_configs_does_not_know_broker_logger() {
    use kafka_protocol::messages::alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let dir = tempfile::tempdir().unwrap();
    let (b, installed) = broker_with_loggers(dir.path());
    let mut c = AlterableConfig::default();
    (c.name, c.value) = (s("mirrorlog_broker"), Some(s("DEBUG")));
    let mut res = AlterConfigsResource::default();
    (res.resource_type, res.resource_name, res.configs) = (RESOURCE_BROKER_LOGGER, s("1"), vec![c]);
    let mut r = AlterConfigsRequest::default();
    r.resources = vec![res];
    let out = admin::alter_configs(&b, r, 2).responses.remove(0);
    assert_eq!(
        (out.error_code, out.error_message.map(|m| m.to_string())),
        refused(E::InvalidRequest, "Unknown resource type 8")
    );
    assert!(installed.lock().unwrap().is_empty());
}

#[test]
fn a_broker_without_log_levels_does_not_serve_broker_logger() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    let unsupported = (
        E::InvalidRequest.code(),
        "Unsupported resource type 8.".to_string(),
    );
    assert_eq!(describe(&b, "1", &[]), Err(unsupported.clone()));
    assert_eq!(
        alter(
            &b,
            "1",
            &[("mirrorlog_broker", OP_SET, Some("DEBUG"))],
            false
        ),
        (unsupported.0, Some(unsupported.1))
    );
}
