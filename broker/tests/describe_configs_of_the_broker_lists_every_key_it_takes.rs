//! Bug: a broker's DescribeConfigs (resource type BROKER) listed only some of the keys this
//! broker takes: not `log.retention.check.interval.ms`, the group and transaction
//! coordinators' keys, the socket, fetch-session and I/O keys, nor the alternate spellings
//! (`log.retention.hours`, …) `server.properties` may set; a key set in the file to its default
//! showed as DEFAULT_CONFIG, where Kafka shows every key its file names as
//! STATIC_BROKER_CONFIG (`ConfigHelper.allConfigs`: the file's `originals`, then every
//! non-internal config with its value); and `log.cleanup.policy`'s documentation left out the
//! empty list.

use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_configs_response::DescribeConfigsResourceResult;
use kafka_protocol::messages::{ApiKey, DescribeConfigsRequest, DescribeConfigsResponse};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::handlers::admin::{
    RESOURCE_BROKER, SOURCE_DEFAULT_CONFIG, SOURCE_STATIC_BROKER_CONFIG,
};
use mirrorlog_broker::running::{RunningBroker, free_loopback_port};
use mirrorlog_broker::server::ServerConfig;

use crate::common;

const STATIC: i8 = SOURCE_STATIC_BROKER_CONFIG;
const DEFAULT: i8 = SOURCE_DEFAULT_CONFIG;

fn describe(addr: std::net::SocketAddr) -> Vec<DescribeConfigsResourceResult> {
    let mut res = DescribeConfigsResource::default();
    res.resource_type = RESOURCE_BROKER;
    res.resource_name = StrBytes::from_static_str("1");
    res.configuration_keys = None;
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    r.include_synonyms = true;
    r.include_documentation = true;
    let resp: DescribeConfigsResponse = common::wire::call(addr, ApiKey::DescribeConfigs, 4, &r);
    assert_eq!(resp.results.len(), 1);
    assert_eq!(resp.results[0].error_code, 0);
    resp.results[0].configs.clone()
}

#[test]
fn a_brokers_describe_configs_lists_every_key_it_takes_with_its_value_and_source() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_loopback_port().unwrap();
    let mut cfg = BrokerConfig::new(dir.path(), "127.0.0.1", i32::from(port));
    // What `mirrorlog serve` builds from a file naming these keys (one at its default).
    let file = [
        ("group.max.size", "7"),
        ("transaction.max.timeout.ms", "60000"),
        ("log.retention.check.interval.ms", "300000"),
        ("log.retention.hours", "2"),
    ];
    cfg.group.group_max_size = 7;
    cfg.txn.transaction_max_timeout_ms = 60_000;
    cfg.logs.default_log_config = cfg
        .logs
        .default_log_config
        .with_overrides([("log.retention.hours", "2")])
        .unwrap();
    cfg.static_config = file
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let server = ServerConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], port)),
        // Set by an embedder, no file: shown as the broker's own setting as it is not the
        // default.
        request_max_bytes: 1 << 20,
        ..ServerConfig::default()
    };
    let running = RunningBroker::start(cfg, server).unwrap();
    let configs = describe(running.addr);
    let get = |k: &str| {
        configs
            .iter()
            .find(|c| c.name.as_str() == k)
            .unwrap_or_else(|| panic!("{k} is not listed"))
    };
    let listeners = format!("PLAINTEXT://127.0.0.1:{port}");
    for (key, value, source) in [
        ("log.retention.check.interval.ms", "300000", STATIC),
        ("group.max.size", "7", STATIC),
        ("group.initial.rebalance.delay.ms", "0", DEFAULT),
        ("group.min.session.timeout.ms", "6000", DEFAULT),
        ("offsets.topic.num.partitions", "8", DEFAULT),
        ("offsets.retention.minutes", "10080", DEFAULT),
        ("offset.metadata.max.bytes", "4096", DEFAULT),
        ("transaction.max.timeout.ms", "60000", STATIC),
        ("transaction.state.log.num.partitions", "8", DEFAULT),
        ("transactional.id.expiration.ms", "604800000", DEFAULT),
        ("socket.request.max.bytes", "1048576", STATIC),
        ("connections.max.idle.ms", "600000", DEFAULT),
        ("max.connections", "10000", DEFAULT),
        ("max.connections.per.ip", "2147483647", DEFAULT),
        ("max.connections.per.ip.overrides", "", DEFAULT),
        ("listeners", listeners.as_str(), STATIC),
        ("fetch.max.bytes", "57671680", DEFAULT),
        ("max.incremental.fetch.session.cache.slots", "1000", DEFAULT),
        ("num.recovery.threads.per.data.dir", "2", DEFAULT),
        ("log.io.mode", "buffered", DEFAULT),
        ("log.io.direct.durability", "dsync", DEFAULT),
        ("log.preallocate", "true", DEFAULT),
        ("log.segment.delete.delay.ms", "60000", DEFAULT),
        ("log.retention.ms", "7200000", STATIC),
        ("log.retention.hours", "2", STATIC),
        ("log.roll.hours", "168", DEFAULT),
        ("log.roll.jitter.hours", "0", DEFAULT),
        (
            "log.flush.scheduler.interval.ms",
            "9223372036854775807",
            DEFAULT,
        ),
        ("producer.id.expiration.ms", "86400000", DEFAULT),
        ("num.partitions", "1", DEFAULT),
    ] {
        let c = get(key);
        assert_eq!(c.value.as_ref().map(|v| v.as_str()), Some(value), "{key}");
        assert_eq!(c.config_source, source, "{key}");
        assert!(c.read_only, "{key}");
        assert!(c.documentation.is_some(), "{key}");
        assert_ne!(c.config_type, 0, "{key}");
    }
    // Kafka lists an internal key only when the file sets it.
    assert!(
        configs
            .iter()
            .all(|c| c.name.as_str() != "log.initial.task.delay.ms")
    );
    let synonyms = |k: &str| common::configs::synonyms(get(k));
    let s = |n: &str, v: &str, src| (n.to_string(), v.to_string(), src);
    assert_eq!(
        synonyms("log.retention.check.interval.ms"),
        [
            s("log.retention.check.interval.ms", "300000", STATIC),
            s("log.retention.check.interval.ms", "300000", DEFAULT)
        ]
    );
    assert_eq!(
        synonyms("log.retention.ms"),
        [
            s("log.retention.hours", "2", STATIC),
            s("log.retention.ms", "604800000", DEFAULT)
        ]
    );
    assert_eq!(
        synonyms("group.initial.rebalance.delay.ms"),
        [s("group.initial.rebalance.delay.ms", "0", DEFAULT)]
    );
    assert_eq!(get("group.max.size").config_type, 3, "INT");
    assert_eq!(
        get("log.retention.check.interval.ms").config_type,
        5,
        "LONG"
    );
    assert_eq!(get("log.preallocate").config_type, 1, "BOOLEAN");
    let doc = get("log.cleanup.policy").documentation.as_ref().unwrap();
    assert!(doc.contains("empty list"), "{doc}");
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted, "sorted by name, each once");
}
