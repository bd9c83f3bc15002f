//! A replica append run whose index entries would overflow the active segment's offset index
//! is split where the index ends (it used to fail after its bytes were written, leaving the log
//! inconsistent and the mirror stuck; found in review).

use crate::common;

use bytes::{Bytes, BytesMut};
use common::*;
use mirrorlog_engine::log::{ReplicaOrigin, Shutdown};
use mirrorlog_index::Offset;
use mirrorlog_segment::Compression;

#[test]
fn a_replica_run_that_fills_the_offset_index_is_appended_or_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let clock = clock();
    let mut config = small_config();
    config.segment.segment_bytes_max = 1 << 20;
    config.segment.index_interval_bytes = 0;
    config.segment.index_bytes_max = 36; // 4 offset-index slots
    let mut log = open(dir.path(), config.clone(), clock.clone(), Shutdown::Clean);
    let mut run = BytesMut::new();
    for o in 0..6 {
        // one record per batch, the same timestamp: one time-index entry only
        run.extend_from_slice(&replica_batch(o, 1, 0, Compression::None, T0));
    }
    let run: Bytes = run.freeze();
    let first = log.append_as_follower(run.clone(), ReplicaOrigin::Mirror);
    eprintln!("first append: {:?}", first.as_ref().map(|i| i.last_offset));
    let leo = log.log_end_offset();
    eprintln!("log end offset after it: {leo}");
    if first.is_err() {
        // The mirror retries from the log end offset.
        let retry = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            log.append_as_follower(run.clone(), ReplicaOrigin::Mirror)
                .map(|i| i.last_offset)
        }));
        eprintln!("retry: {retry:?}");
        let r = retry.expect("retry panicked");
        r.expect("retry failed");
    }
    assert_eq!(log.log_end_offset(), Offset(6));
}
