//! Scenario: the cluster-mirror admin operations keep `cluster-mirrors.json` and what is in
//! force in step — a CreateClusterMirror that fails is not brought back by the next start, and
//! patterns that cannot be recorded are not put in force.

use mirrorlog_broker::mirrors::{MIRRORS_FILE, MirrorsError, read_mirrors_file};
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use std::collections::BTreeMap;

fn configs() -> BTreeMap<String, String> {
    // A source nobody listens on: the mirror's threads just retry.
    BTreeMap::from([("bootstrap.servers".to_string(), "127.0.0.1:1".to_string())])
}

#[test]
fn a_create_that_fails_to_start_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let b = rb.broker.clone();
    // A `__mirror_state` partition under another topic id: the state store refuses to open.
    let tp = TopicPartition {
        topic: "__mirror_state".into(),
        partition: 0,
    };
    b.logs
        .create(&tp, TopicId([7; 16]), LogConfig::default())
        .unwrap();
    let r = b.mirrors.create_durable(&b, "m", configs());
    assert!(matches!(r, Err(MirrorsError::Storage(_))), "{r:?}");
    assert!(b.mirrors.get("m").is_none());
    assert!(
        read_mirrors_file(dir.path()).unwrap().is_empty(),
        "a refused mirror must not come back at the next start"
    );
    drop(b);
    rb.shutdown().unwrap();
}

#[test]
fn patterns_that_cannot_be_recorded_are_not_put_in_force() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let b = rb.broker.clone();
    let m = b.mirrors.create_durable(&b, "m", configs()).unwrap();
    // The file cannot be replaced: its temporary path is taken by a directory.
    let tmp = dir.path().join(format!("{MIRRORS_FILE}.tmp"));
    std::fs::create_dir(&tmp).unwrap();
    let r = b.mirrors.add_patterns(&b, "m", &["orders".into()], &[]);
    assert!(matches!(r, Err(MirrorsError::Storage(_))), "{r:?}");
    assert!(m.patterns().0.is_empty(), "refused, so not in force");
    assert!(!m.is_included("orders"));
    assert!(
        b.mirrors
            .stored_configs("m")
            .get("mirror.topics.include")
            .is_none_or(|v| v.is_empty())
    );

    std::fs::remove_dir(&tmp).unwrap();
    b.mirrors
        .add_patterns(&b, "m", &["orders".into()], &["tmp.*".into()])
        .unwrap();
    let (include, exclude) = m.patterns();
    assert_eq!(include, ["orders"]);
    assert!(exclude.contains(&"tmp.*".to_string()), "{exclude:?}");
    let file = read_mirrors_file(dir.path()).unwrap();
    assert_eq!(file[0].1["mirror.topics.include"], "orders");
    assert_eq!(file[0].1["mirror.topics.exclude"], exclude.join(","));
    drop((m, b));
    rb.shutdown().unwrap();
}
