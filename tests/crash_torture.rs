//! Process crash torture: `mirrorlog serve` under a real client load (confluent-kafka: an
//! idempotent acks=all producer, a transactional producer committing and aborting, a consumer
//! group committing offsets) is SIGKILLed at seeded random moments and restarted on the same
//! port, several rounds. Afterwards `tests/clients/torture.py verify` checks that every
//! acknowledged record is present once, at its offset, byte-identical; that every committed
//! transaction is visible exactly once to READ_COMMITTED and no aborted one at all, with no
//! transaction left open; and that the group's committed offsets survived.
//!
//! `MIRRORLOG_TORTURE_ROUNDS` (default 5) sets the number of kills; `MIRRORLOG_TORTURE_SEED`
//! replays the kill schedule a failing run printed. The client load runs through every kill,
//! so the verdict covers whatever moment a kill lands on; the schedule only spreads them out.

mod common;

use common::{Rng, Serve, env_u64, free_port, python, seed_from_env};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn acknowledged_records_transactions_and_group_offsets_survive_repeated_kill_9() {
    let Some(py) = python() else { return };
    let rounds = env_u64("MIRRORLOG_TORTURE_ROUNDS").unwrap_or(5);
    let seed = seed_from_env("MIRRORLOG_TORTURE_SEED");
    eprintln!("crash torture: {rounds} rounds, MIRRORLOG_TORTURE_SEED={seed}");
    let mut rng = Rng(seed);

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let stopfile = dir.path().join("stop");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/torture.py");
    let port = free_port();
    let mut broker = Serve::start(&data, port);
    let bs = broker.addr.clone();

    let load = Command::new(&py)
        .arg(&script)
        .args(["load", &bs])
        .arg(&out)
        .arg(&stopfile)
        .stdout(Stdio::piped())
        .spawn()
        .expect("start torture.py load");

    // Let the clients get going before the first kill.
    std::thread::sleep(Duration::from_millis(1500));
    for round in 0..rounds {
        std::thread::sleep(rng.between_ms(200, 1500));
        broker.kill();
        eprintln!("round {round}: killed");
        // Down for a moment: clients see refused connections and retry.
        std::thread::sleep(rng.between_ms(0, 400));
        broker = Serve::start(&data, port);
    }
    // Let the clients finish what is in flight against a live broker.
    std::thread::sleep(Duration::from_millis(1000));
    std::fs::write(&stopfile, b"").unwrap();
    let loaded = load.wait_with_output().unwrap();
    assert!(
        loaded.status.success(),
        "torture.py load failed (seed {seed}): {}",
        String::from_utf8_lossy(&loaded.stdout)
    );
    eprintln!("load: {}", String::from_utf8_lossy(&loaded.stdout).trim());

    // One more crash with nothing in flight, then check on a freshly recovered broker.
    broker.kill();
    broker = Serve::start(&data, port);
    let verified = Command::new(&py)
        .arg(&script)
        .args(["verify", &broker.addr])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "verification failed (replay with MIRRORLOG_TORTURE_SEED={seed}):\n{}\n{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    eprintln!(
        "verify: {}",
        String::from_utf8_lossy(&verified.stdout).trim()
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
