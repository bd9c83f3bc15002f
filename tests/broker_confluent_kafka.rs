//! Scenarios with a real Kafka client: confluent-kafka (Python, librdkafka 2.16) against
//! `mirrorlog serve`. scripts/test.sh installs it in a venv and sets `MIRRORLOG_PYTHON`; without
//! it these tests say so and check nothing (CI always sets it).

mod common;

use common::{
    Serve, free_port, group_resumes_after_a_restart, phases_against_one_broker, python, scenario,
};

#[test]
fn idempotent_codecs_admin_offsets_for_times_and_transactions() {
    let Some(py) = python() else { return };
    let run = |args: &[&str]| scenario(&py, args);
    phases_against_one_broker(run, &["codecs", "admin", "offsets_for_times", "txn"]);
}

#[test]
fn a_consumer_group_rebalances_and_resumes_after_a_restart() {
    let Some(py) = python() else { return };
    let run = |args: &[&str]| common::client_script(&py, "scenarios.py", args, &[]);
    group_resumes_after_a_restart(run, i64::MAX);
}

#[test]
fn no_acknowledged_record_is_lost_when_the_broker_is_killed_mid_produce() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut broker = Serve::start(dir.path(), port);
    let bs = broker.addr.clone();
    let acks = dir.path().join("acked.json");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/scenarios.py");
    let mut producer = std::process::Command::new(&py)
        .arg(&script)
        .args(["produce_acked", &bs, "crashy", "150000"])
        .arg(&acks)
        .spawn()
        .unwrap();
    // Kill the broker while the producer is running, then bring it back on the same port; the
    // idempotent producer retries. "Running" is waited for, not guessed with a fixed pause: on
    // a loaded machine the script may not have produced anything after a second and a half (it
    // first imports confluent_kafka and creates the topic), and a kill before the first record
    // tests no crash at all.
    let started = std::time::Instant::now();
    while !has_records(&dir.path().join("crashy-0")) && !has_records(&dir.path().join("crashy-1")) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(120),
            "hang guard: the producer wrote nothing"
        );
        assert!(
            producer.try_wait().unwrap().is_none(),
            "the producer exited before writing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    broker.kill();
    let broker = Serve::start(dir.path(), port);
    assert!(producer.wait().unwrap().success(), "producer script failed");
    scenario(
        &py,
        &[
            "consume_check",
            &broker.addr,
            "crashy",
            acks.to_str().unwrap(),
        ],
    );
}

/// Whether a partition directory holds a segment with a batch in it (a batch header is never
/// all zeros; a preallocated `.log` file can be, before its first append).
fn has_records(partition_dir: &std::path::Path) -> bool {
    std::fs::read_dir(partition_dir).is_ok_and(|entries| {
        entries.filter_map(Result::ok).any(|e| {
            e.path().extension().is_some_and(|x| x == "log")
                && std::fs::read(e.path()).is_ok_and(|b| b.iter().take(61).any(|&byte| byte != 0))
        })
    })
}
