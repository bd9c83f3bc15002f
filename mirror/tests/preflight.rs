//! Scenario: the pre-flight check over two in-process clusters built to disagree in every way
//! the check knows — a topic id held under another name, a topic name held by another id, a
//! group that is a share group on one side and a consumer group on the other, a group active
//! on the destination, and the same cluster twice.

use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, Offset, TopicId, TopicPartition};
use mirrorlog_mirror::engine_source::EngineSource;
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::preflight::{Finding, Plan, Severity, preflight};
use mirrorlog_mirror::source::CommittedOffset;
use mirrorlog_segment::io::PwriteStorage;
use std::sync::Arc;

fn cluster(dir: &std::path::Path, topics: &[(&str, u8)]) -> Arc<LogManager> {
    let (m, _) = LogManager::open(
        LogManagerConfig::new(dir),
        Arc::new(PwriteStorage::new()),
        ManualClock::new(1_700_000_000_000),
    )
    .unwrap();
    for (t, id) in topics {
        m.create(
            &TopicPartition {
                topic: (*t).into(),
                partition: 0,
            },
            TopicId([*id; 16]),
            LogConfig::default(),
        )
        .unwrap();
    }
    Arc::new(m)
}

fn offsets(topic: &str) -> Vec<CommittedOffset> {
    vec![CommittedOffset {
        topic: topic.into(),
        partition: 0,
        offset: Offset(0),
        leader_epoch: LeaderEpoch::NONE,
        metadata: None,
    }]
}

fn severity_of(f: &[Finding], check: &str, subject: &str) -> Option<Severity> {
    f.iter()
        .find(|x| x.check == check && x.subject == subject)
        .map(|x| x.severity)
}

#[test]
fn preflight_finds_id_name_and_group_collisions() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = EngineSource::new(
        cluster(a.path(), &[("orders", 1), ("clash", 2), ("fresh", 3)]),
        "source",
        1,
    );
    let dst = EngineSource::new(
        cluster(b.path(), &[("renamed", 1), ("clash", 9)]),
        "dest",
        1,
    );
    for (g, src_type, on_dest) in [
        ("g-share", "share", Some(("consumer", "Empty"))),
        ("g-active", "consumer", Some(("consumer", "Stable"))),
        ("g-idle", "consumer", Some(("consumer", "Empty"))),
        ("g-only", "consumer", None),
        ("audit", "consumer", Some(("share", "Empty"))),
    ] {
        src.set_group_offsets(g, offsets("orders"), "Empty", src_type);
        if let Some((t, state)) = on_dest {
            dst.set_group_offsets(g, vec![], state, t);
        }
    }
    let mut config = MirrorConfig::new("m");
    config.groups_exclude = vec!["audit".into()];
    let plan = Plan {
        topics: vec!["orders".into(), "clash".into()],
        patterns: vec!["fr.*".into(), "nothing.*".into()],
        config,
    };
    let f = preflight(src.as_ref(), dst.as_ref(), &plan).unwrap();
    let expect = [
        ("clusters", "source -> dest", Severity::Ok),
        ("topic-name", "orders", Severity::Ok),
        ("topic-id", "orders", Severity::Fail),
        ("topic-name", "clash", Severity::Fail),
        ("topic-name", "fresh", Severity::Ok),
        ("pattern", "fr.*", Severity::Ok),
        ("pattern", "nothing.*", Severity::Fail),
        ("group", "g-share", Severity::Fail),
        ("group", "g-active", Severity::Warn),
        ("group", "g-idle", Severity::Warn),
        ("group", "g-only", Severity::Ok),
    ];
    for (check, subject, sev) in expect {
        assert_eq!(
            severity_of(&f, check, subject),
            Some(sev),
            "{check} {subject}: {f:#?}"
        );
    }
    assert_eq!(
        severity_of(&f, "group", "audit"),
        None,
        "excluded groups are not checked"
    );

    // The same cluster twice.
    let f = preflight(src.as_ref(), src.as_ref(), &plan).unwrap();
    assert_eq!(severity_of(&f, "clusters", "source"), Some(Severity::Fail));
}
