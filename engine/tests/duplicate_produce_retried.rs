//! Scenario: an idempotent producer retries batches whose acknowledgement it lost. Each of the
//! last five batches comes back as a duplicate with its original offsets and nothing is appended;
//! an older one or a gap is an out-of-order sequence; a fenced epoch is refused.

use crate::common;

use common::*;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{LeaderOrigin, Shutdown};
use mirrorlog_engine::producer_state::ProducerStateError;
use mirrorlog_index::{LeaderEpoch, Offset};

#[test]
fn retried_batches_are_deduplicated_with_their_original_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small_config(), clock(), Shutdown::Clean);
    let e = LeaderEpoch(0);
    log.append_as_leader(client_batch(3, T0), e, LeaderOrigin::Client)
        .unwrap(); // 0..2, no producer
    for i in 0..8 {
        let info = log
            .append_as_leader(
                producer_batch(9, 2, i * 4, 4, false, T0),
                e,
                LeaderOrigin::Client,
            )
            .unwrap();
        assert_eq!(info.first_offset, Offset(3 + i as i64 * 4));
    }
    let end = log.log_end_offset();
    for i in 3..8 {
        let info = log
            .append_as_leader(
                producer_batch(9, 2, i * 4, 4, false, T0),
                e,
                LeaderOrigin::Client,
            )
            .unwrap();
        assert!(info.duplicate);
        assert_eq!(
            (info.first_offset, info.last_offset),
            (Offset(3 + i as i64 * 4), Offset(6 + i as i64 * 4))
        );
    }
    assert_eq!(log.log_end_offset(), end, "duplicates append nothing");
    let too_old = log.append_as_leader(
        producer_batch(9, 2, 8, 4, false, T0),
        e,
        LeaderOrigin::Client,
    );
    assert!(matches!(
        too_old,
        Err(EngineError::ProducerState(
            ProducerStateError::OutOfOrderSequence { .. }
        ))
    ));
    let gap = log.append_as_leader(
        producer_batch(9, 2, 40, 1, false, T0),
        e,
        LeaderOrigin::Client,
    );
    assert!(matches!(
        gap,
        Err(EngineError::ProducerState(
            ProducerStateError::OutOfOrderSequence { .. }
        ))
    ));
    let fenced = log.append_as_leader(
        producer_batch(9, 1, 32, 1, false, T0),
        e,
        LeaderOrigin::Client,
    );
    assert!(matches!(
        fenced,
        Err(EngineError::ProducerState(
            ProducerStateError::InvalidProducerEpoch { .. }
        ))
    ));
    log.append_as_leader(
        producer_batch(9, 2, 32, 1, false, T0),
        e,
        LeaderOrigin::Client,
    )
    .unwrap();
    assert_eq!(log.log_end_offset(), end.next());
}
