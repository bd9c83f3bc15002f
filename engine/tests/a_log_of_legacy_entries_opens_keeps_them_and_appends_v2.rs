//! Scenario: a partition directory carried over from an older Kafka whose segment holds legacy
//! entries (magic 0 and 1, written by Kafka's own client library:
//! `tests/fixtures/kafka-java-legacy/`). After an unclean shutdown recovery keeps every entry
//! (it used to truncate the log at the first one: acknowledged data lost); producer state and the
//! epoch cache skip them, as Kafka's do (no producer id, no leader epoch); Fetch serves their
//! bytes unconverted and ListOffsets finds their timestamps; a v2 append continues after the
//! last legacy offset; a client's v1 batch is still refused; and all of it reopens, clean or not.

use crate::common;

use common::*;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin, OffsetLookup, OpenOffsets, Shutdown};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs};
use std::path::PathBuf;

const LOG: &str = "00000000000000000000.log";
/// The fixture's last offset + 1.
const LEGACY_END: i64 = 17;

fn fixture_log() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/kafka-java-legacy/")
        .join(LOG)
}

#[test]
fn a_log_of_legacy_entries_recovers_whole_serves_them_and_appends_v2_after_them() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = std::fs::read(fixture_log()).unwrap();
    std::fs::write(dir.path().join(LOG), &legacy).unwrap();
    let clock = clock();
    let (mut log, report) = reopen_unclean(dir.path(), clock.clone(), OpenOffsets::default());
    assert_eq!(report.problems, Vec::<String>::new());
    assert_eq!(report.bytes_truncated, 0);
    assert_eq!(log.log_end_offset(), Offset(LEGACY_END));
    assert_eq!(std::fs::read(dir.path().join(LOG)).unwrap(), legacy);
    assert_eq!(log.producer_state().producers().count(), 0);
    assert!(log.epoch_cache().is_empty());

    // Fetch: the entries' own bytes, from any offset inside them.
    log.update_high_watermark(Offset(LEGACY_END));
    let info = log
        .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let got = info.records.unwrap().slice.read_all().unwrap();
    assert_eq!(&got[..], &legacy[..]);
    // Offset 11 is inside the v1 gzip wrapper at position 396 (offsets 10..=12).
    let info = log
        .read(Offset(11), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let got = info.records.unwrap().slice.read_all().unwrap();
    assert_eq!(&got[..], &legacy[396..]);

    // ListOffsets by timestamp, into a compressed v1 wrapper's records.
    let found = log
        .fetch_offset(OffsetLookup::Timestamp(TimestampMs(1_600_000_001_500)))
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.0, found.1),
        (Offset(11), TimestampMs(1_600_000_001_900))
    );
    let found = log
        .fetch_offset(OffsetLookup::MaxTimestamp)
        .unwrap()
        .unwrap();
    assert_eq!(
        (found.0, found.1),
        (Offset(16), TimestampMs(1_600_000_003_300))
    );

    // A client's v1 entry is refused (Produce v3+ is v2 only), nothing written.
    let v1_entry = bytes::Bytes::copy_from_slice(&legacy[309..353]);
    assert!(
        log.append_as_leader(v1_entry, LeaderEpoch(0), LeaderOrigin::Client)
            .is_err()
    );
    assert_eq!(log.log_end_offset(), Offset(LEGACY_END));

    // A v2 append continues at the legacy end.
    let info = log
        .append_as_leader(client_batch(3, T0), LeaderEpoch(0), LeaderOrigin::Client)
        .unwrap();
    assert_eq!(info.first_offset, Offset(LEGACY_END));
    assert_eq!(log.log_end_offset(), Offset(LEGACY_END + 3));
    let vals = values(&log, Offset(LEGACY_END));
    assert_eq!(vals.len(), 3);
    log.flush().unwrap();
    drop(log);

    // Reopened after a crash and after a clean shutdown: everything still there.
    let (log, report) = reopen_unclean(dir.path(), clock.clone(), OpenOffsets::default());
    assert_eq!(report.problems, Vec::<String>::new());
    assert_eq!(log.log_end_offset(), Offset(LEGACY_END + 3));
    assert_eq!(
        log.epoch_cache().epoch_for_offset(Offset(LEGACY_END)),
        Some(LeaderEpoch(0))
    );
    log.close().unwrap();
    let log = open(dir.path(), small_config(), clock, Shutdown::Clean);
    assert_eq!(log.log_end_offset(), Offset(LEGACY_END + 3));
    let info = log
        .read(Offset(0), 1 << 20, FetchIsolation::LogEnd, true)
        .unwrap();
    let got = info.records.unwrap().slice.read_all().unwrap();
    assert_eq!(&got[..legacy.len()], &legacy[..]);
}
