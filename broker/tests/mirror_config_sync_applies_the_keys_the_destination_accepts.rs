//! Bug: a mirror's config sync wrote the source topic's configs as one set, so one value the
//! destination refuses kept every other key off the topic, on every sync. A source topic with a
//! value refused here (`segment.ms=0`, out of range) and a
//! 30-day `retention.ms` kept the destination's 7-day default: the destination deleted records
//! the source still held, and consumers failing over to it found them gone.
//!
//! Now the keys the destination accepts are applied and the refused ones are named in the error
//! (which the mirror logs, and tries again at its next sync).

use mirrorlog_broker::mirrors::BrokerTopics;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_mirror::manager::DestinationTopics;

#[test]
fn a_refused_source_config_does_not_keep_the_others_off_the_mirror_topic() {
    let dir = tempfile::tempdir().unwrap();
    let dst = RunningBroker::start_local(dir.path(), 2).unwrap();
    let b = dst.broker.clone();
    let mirror_topic = LogConfig {
        read_only: true,
        ..LogConfig::default()
    };
    b.topics
        .create(&b.logs, "orders", 2, mirror_topic, None)
        .unwrap();
    let thirty_days = 30 * 86_400_000_i64;
    let err = BrokerTopics::new(&b)
        .apply_topic_configs(
            "orders",
            &[
                ("segment.ms".into(), "0".into()),
                ("retention.ms".into(), thirty_days.to_string()),
            ],
            &[],
        )
        .expect_err("the refused key is reported");
    assert!(err.contains("segment.ms=0"), "{err}");
    for p in 0..2 {
        let h = b.partition("orders", p).unwrap();
        let log = h.read();
        let config = log.config();
        assert_eq!(
            config.retention_ms, thirty_days,
            "orders-{p}: the accepted key is applied"
        );
        assert!(!config.is_topic_override("segment.ms", &LogConfig::default()));
        assert!(config.read_only, "still a mirror topic");
    }
    drop(b);
    dst.shutdown().unwrap();
}
