//! Bug: a topic config value out of range or malformed was refused INVALID_CONFIG with the
//! engine's wording ("invalid value `0` for `segment.ms`: must be at least 1"); Kafka's
//! controller answers its `ConfigException` message, which clients (Java AdminClient,
//! kafka-configs, confluent-kafka) show as is: "Invalid value 0 for configuration segment.ms:
//! Value must be at least 1" — "Not a number of type INT" for a number that does not parse,
//! "String must be one of: …" for an enumerated value. CreateTopics answers the same words.
//! Then (session 14): the broker rebuilt those words by parsing the engine's reason text, and
//! showed an out-of-range value as given (" 0 "), where Kafka's range check shows the number as
//! parsed ("0"); the engine now gives the reason as data.

use crate::common;

use kafka_protocol::ResponseError as E;
use kafka_protocol::messages::CreateTopicsRequest;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::admin::{self, OP_SET};

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

const CASES: &[(&str, &str, &str)] = &[
    (
        "segment.ms",
        "0",
        "Invalid value 0 for configuration segment.ms: Value must be at least 1",
    ),
    (
        "retention.ms",
        "-2",
        "Invalid value -2 for configuration retention.ms: Value must be at least -1",
    ),
    (
        "index.interval.bytes",
        "-1",
        "Invalid value -1 for configuration index.interval.bytes: Value must be at least 0",
    ),
    (
        "max.message.bytes",
        "abc",
        "Invalid value abc for configuration max.message.bytes: Not a number of type INT",
    ),
    (
        "segment.bytes",
        "2147483648",
        "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT",
    ),
    (
        "flush.ms",
        "1.5",
        "Invalid value 1.5 for configuration flush.ms: Not a number of type LONG",
    ),
    (
        "message.timestamp.type",
        "createtime",
        "Invalid value createtime for configuration message.timestamp.type: String must be one \
         of: CreateTime, LogAppendTime",
    ),
    // Kafka's range check sees the number as parsed (trimmed), its message too.
    (
        "segment.ms",
        " 0 ",
        "Invalid value 0 for configuration segment.ms: Value must be at least 1",
    ),
    (
        "segment.index.bytes",
        "8",
        "Invalid value 8 for configuration segment.index.bytes: Value must be at least 24 \
         (Kafka accepts 4 but a time index needs room for two 12-byte entries, one kept for the \
         entry written on roll)",
    ),
    (
        "cleanup.policy",
        "forever",
        "Invalid value forever for configuration cleanup.policy: String must be one of: \
         compact, delete",
    ),
    (
        "compression.type",
        "brotli",
        "Invalid value brotli for configuration compression.type: String must be one of: \
         uncompressed, zstd, lz4, snappy, gzip, producer",
    ),
];

#[test]
fn an_invalid_topic_config_value_is_refused_with_kafkas_message() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    common::configs::create_topic(&b, "t", 1, &[]);
    for (key, value, want) in CASES {
        let (code, message) = common::configs::incremental_alter(&b, "t", key, OP_SET, Some(value));
        assert_eq!(code, E::InvalidConfig.code(), "{key}={value}");
        assert_eq!(
            message.as_deref(),
            Some(*want),
            "IncrementalAlterConfigs {key}={value}"
        );
        let (code, message) = common::configs::alter_configs(&b, "t", &[(key, value)], false, 2);
        assert_eq!(code, E::InvalidConfig.code(), "{key}={value}");
        assert_eq!(
            message.as_deref(),
            Some(*want),
            "AlterConfigs {key}={value}"
        );

        let mut c = CreatableTopicConfig::default();
        c.name = s(key);
        c.value = Some(s(value));
        let mut t = CreatableTopic::default();
        t.name = kafka_protocol::messages::TopicName(s("created"));
        t.num_partitions = 1;
        t.replication_factor = 1;
        t.configs = vec![c];
        let mut r = CreateTopicsRequest::default();
        r.topics = vec![t];
        r.timeout_ms = 30_000;
        let out = &admin::create_topics(&b, r, 7).topics[0];
        assert_eq!(out.error_code, E::InvalidConfig.code(), "{key}={value}");
        assert_eq!(
            out.error_message.as_ref().map(|m| m.as_str()),
            Some(*want),
            "CreateTopics {key}={value}"
        );
    }
}
