//! Bug: a broker's DescribeConfigs left out the keys of Kafka's stock `server.properties` that
//! `mirrorlog serve` accepts and ignores (`num.io.threads`, `process.roles`, …) even when the
//! file set them, where Kafka lists every key its file names with the value named
//! (`ConfigHelper.allConfigs` starts from the file's `originals`). They are now listed,
//! `STATIC_BROKER_CONFIG` with the value named (trimmed), read-only, type UNKNOWN (this node
//! has no such setting), documented as ignored; a key the broker lists anyway is listed once.

use kafka_protocol::messages::DescribeConfigsRequest;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::handlers::admin::{self, RESOURCE_BROKER, SOURCE_STATIC_BROKER_CONFIG};

#[test]
fn the_kafka_keys_the_file_names_and_serve_ignores_are_listed_with_their_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.cluster_id = Some("test-cluster".into());
    // What `mirrorlog serve` records from a stock Kafka file (the ignored keys kept as named).
    config.static_config = [
        ("num.io.threads", " 8 "),
        ("process.roles", "broker,controller"),
        ("offsets.topic.replication.factor", "1"),
        ("num.partitions", "1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let b = Broker::open(
        config,
        std::sync::Arc::new(mirrorlog_segment::io::PwriteStorage::new()),
        mirrorlog_engine::clock::ManualClock::new(1_700_000_000_000),
    )
    .unwrap();

    let mut res = DescribeConfigsResource::default();
    res.resource_type = RESOURCE_BROKER;
    res.resource_name = StrBytes::from_static_str("1");
    let mut r = DescribeConfigsRequest::default();
    r.resources = vec![res];
    r.include_synonyms = true;
    r.include_documentation = true;
    let resp = admin::describe_configs(&b, r, 4);
    assert_eq!(resp.results[0].error_code, 0);
    let configs = &resp.results[0].configs;
    let names: Vec<&str> = configs.iter().map(|c| c.name.as_str()).collect();
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted, once each");
    for (key, value) in [
        ("num.io.threads", "8"),
        ("process.roles", "broker,controller"),
        ("offsets.topic.replication.factor", "1"),
    ] {
        let c = configs
            .iter()
            .find(|c| c.name.as_str() == key)
            .unwrap_or_else(|| panic!("{key} is not listed"));
        assert_eq!(c.value.as_deref(), Some(value), "{key}");
        assert_eq!(c.config_source, SOURCE_STATIC_BROKER_CONFIG, "{key}");
        assert!(c.read_only && !c.is_sensitive, "{key}");
        assert_eq!(c.config_type, 0, "{key}");
        assert!(
            c.documentation
                .as_deref()
                .is_some_and(|d| d.contains("ignored")),
            "{key}"
        );
        let synonyms: Vec<(&str, Option<&str>, i8)> = c
            .synonyms
            .iter()
            .map(|s| (s.name.as_str(), s.value.as_deref(), s.source))
            .collect();
        assert_eq!(
            synonyms,
            [(key, Some(value), SOURCE_STATIC_BROKER_CONFIG)],
            "{key}"
        );
    }
    // A key this node takes keeps its own entry (its type and documentation).
    let partitions = configs
        .iter()
        .find(|c| c.name.as_str() == "num.partitions")
        .unwrap();
    assert_ne!(partitions.config_type, 0);
}
