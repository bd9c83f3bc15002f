//! A data directory `LogManager::open` had to create must still be there after a crash.
//!
//! `open` created a missing data directory without syncing its parent, so the new directory
//! entry (and with it every partition placed there) could vanish in a power cut. Kafka's
//! `createAndValidateLogDirs` flushes the parent of a log directory it creates; so does `open`
//! now, through `Storage::sync_dir`. The simulated storage makes a new directory durable only
//! at a sync of its parent, so the crash below loses the directory without that sync.

use crate::common;

use common::*;
use mirrorlog_segment::io::{SimStorage, Storage, TornTail};

#[test]
fn a_data_dir_created_by_open_survives_a_crash() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("brand-new").join("data");
    let sim = SimStorage::new();
    let mgr = sim_manager(&sim, &data);
    let crashed = sim.crash(TornTail::None);
    drop(mgr);
    assert!(
        crashed.exists(&data),
        "the data directory open created is gone after a crash"
    );
}
