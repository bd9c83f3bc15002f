//! Bug: IncrementalAlterConfigs and AlterConfigs of a topic name no topic could have (`..`, a
//! space, 250 characters) answered UNKNOWN_TOPIC_OR_PARTITION; Kafka's controller validates the
//! name first (`ControllerConfigurationValidator.validateTopicName`, `Topic.validate`) and
//! answers INVALID_TOPIC_EXCEPTION, as DescribeConfigs does here.

use crate::common;

use kafka_protocol::ResponseError as E;
use mirrorlog_broker::handlers::admin::OP_SET;

#[test]
fn altering_the_configs_of_an_invalid_topic_name_is_an_invalid_topic() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    for name in ["..", "has space", &"a".repeat(250)] {
        let (code, message) =
            common::configs::incremental_alter(&b, name, "retention.ms", OP_SET, Some("1000"));
        assert_eq!(
            code,
            E::InvalidTopicException.code(),
            "IncrementalAlterConfigs {name}: {message:?}"
        );
        for validate_only in [false, true] {
            let (code, message) = common::configs::alter_configs(
                &b,
                name,
                &[("retention.ms", "1000")],
                validate_only,
                2,
            );
            assert_eq!(
                code,
                E::InvalidTopicException.code(),
                "AlterConfigs {name} (validate_only {validate_only}): {message:?}"
            );
        }
    }
    // A valid name of no topic is still unknown.
    let (code, _) =
        common::configs::incremental_alter(&b, "nope", "retention.ms", OP_SET, Some("1"));
    assert_eq!(code, E::UnknownTopicOrPartition.code());
}
