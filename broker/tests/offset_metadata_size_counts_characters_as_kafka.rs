//! `offset.metadata.max.bytes` bounds a commit's metadata as Kafka's
//! `OffsetMetadataManager.isMetadataInvalid` does: by the Java string's `length()`, in UTF-16
//! code units, not in bytes. Metadata of non-ASCII characters within the limit used to be refused
//! with OFFSET_METADATA_TOO_LARGE, because its UTF-8 bytes were counted.

use crate::common;

use common::groups::{commit_as, logs_with};
use kafka_protocol::ResponseError as E;
use mirrorlog_broker::group::{GroupConfig, GroupCoordinator};
use mirrorlog_engine::clock::ManualClock;

/// An admin-style commit (no member) with `metadata`: its error code.
fn commit(c: &GroupCoordinator, metadata: &str) -> i16 {
    commit_as(c, "meta", -1, "", None, &[("orders", 0, 7, metadata)])[0]
}

#[test]
fn offset_metadata_size_counts_utf16_code_units_as_kafka() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new(1_700_000_000_000);
    let logs = logs_with(dir.path(), clock.clone(), &[("orders", 1, 1)]);
    let config = GroupConfig {
        offset_metadata_max_bytes: 10,
        ..GroupConfig::default()
    };
    let c = GroupCoordinator::open(logs, config, clock).unwrap();
    let too_large = E::OffsetMetadataTooLarge.code();
    assert_eq!(commit(&c, &"a".repeat(10)), 0);
    assert_eq!(commit(&c, &"a".repeat(11)), too_large);
    // Two UTF-8 bytes, one UTF-16 unit each: 10 characters, 20 bytes.
    assert_eq!(commit(&c, &"é".repeat(10)), 0);
    assert_eq!(commit(&c, &"é".repeat(11)), too_large);
    // Four UTF-8 bytes, a surrogate pair (two units) each: 5 are 10 units, 20 bytes.
    assert_eq!(commit(&c, &"😀".repeat(5)), 0);
    assert_eq!(commit(&c, &"😀".repeat(6)), too_large);
}
