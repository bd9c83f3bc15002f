//! A clean close leaves the active segment's indexes as Kafka's `LogSegment.close` does: the
//! segment's largest timestamp appended to the time index, and both index files trimmed to their
//! entries. The engine only flushed them, leaving files at their preallocated length
//! (`segment.index.bytes`) whose unwritten slots Kafka counts as entries (it takes the length
//! over the entry size, and a clean shutdown skips recovery): on such a data directory Kafka
//! finds both indexes full, rolls at the next append, and reads the segment's largest
//! timestamp from a zero slot — 0, so time retention deletes that segment at once.

use crate::common;

use common::*;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_index::LeaderEpoch;

#[test]
fn a_clean_close_trims_the_active_indexes_and_records_the_largest_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_config();
    let preallocated = config.segment.index_bytes_max as u64;
    let mut log = open(dir.path(), config, clock(), Shutdown::Clean);
    for i in 0..6 {
        log.append_as_leader(
            client_batch(1, T0 + i),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
    }
    log.close().unwrap();

    let index = std::fs::read(dir.path().join("00000000000000000000.index")).unwrap();
    let time_index = std::fs::read(dir.path().join("00000000000000000000.timeindex")).unwrap();
    assert!(
        (index.len() as u64) < preallocated && index.len().is_multiple_of(8),
        ".index left at {} bytes (preallocated {preallocated})",
        index.len()
    );
    assert!(
        (time_index.len() as u64) < preallocated && time_index.len().is_multiple_of(12),
        ".timeindex left at {} bytes (preallocated {preallocated})",
        time_index.len()
    );
    let last = &time_index[time_index.len() - 12..];
    assert_eq!(
        (
            i64::from_be_bytes(last[..8].try_into().unwrap()),
            i32::from_be_bytes(last[8..].try_into().unwrap())
        ),
        (T0 + 5, 5),
        "the last time index entry is the segment's largest timestamp and its offset"
    );

    // The trimmed files reopen as the active segment and take appends again.
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    log.append_as_leader(
        client_batch(1, T0 + 6),
        LeaderEpoch(0),
        LeaderOrigin::Client,
    )
    .unwrap();
    assert_eq!(values(&log, mirrorlog_index::Offset(0)).len(), 7);
}
