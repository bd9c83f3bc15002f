//! Scenarios with a real Kafka client: kafka-python 3.0 (pure Python) against `mirrorlog serve`
//! (`tests/clients/kafka_python_scenarios.py`). scripts/test.sh installs it in the venv it points
//! `MIRRORLOG_PYTHON` at; without it these tests panic unless `MIRRORLOG_SKIP_CLIENT_TESTS` is
//! set. A scenario fails on a wrong answer and on any warning or error the client logs.

mod common;

use common::{group_resumes_after_a_restart, phases_against_one_broker, python};

#[test]
fn idempotent_codecs_admin_offsets_and_transactions() {
    let Some(py) = python() else { return };
    let run = |args: &[&str]| common::client_script(&py, "kafka_python_scenarios.py", args, &[]);
    phases_against_one_broker(run, &["codecs", "admin", "offsets", "txn"]);
}

#[test]
fn a_consumer_group_rebalances_and_resumes_after_a_restart() {
    let Some(py) = python() else { return };
    let run = |args: &[&str]| common::client_script(&py, "kafka_python_scenarios.py", args, &[]);
    group_resumes_after_a_restart(run, 399);
}
