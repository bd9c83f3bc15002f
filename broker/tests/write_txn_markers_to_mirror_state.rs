//! Bug: WriteTxnMarkers (API 27) wrote a client's marker into `__mirror_state`, the mirror state
//! store's own log, which only the store writes (a Produce there is INVALID_TOPIC_EXCEPTION);
//! the marker took an offset among the store's records and set a producer's state in it. It is
//! now refused the same way and nothing is written.

use crate::common;

use common::txn::{NoGroups, abort_marker, manual_logs};
use kafka_protocol::ResponseError;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{TopicId, TopicPartition};
use mirrorlog_mirror::state::MIRROR_STATE_TOPIC;
use std::sync::Arc;

#[test]
fn a_marker_for_mirror_state_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, clock) = manual_logs(dir.path(), 1_700_000_000_000);
    let tp = TopicPartition {
        topic: MIRROR_STATE_TOPIC.into(),
        partition: 0,
    };
    let h = logs
        .create(&tp, TopicId([7; 16]), LogConfig::default())
        .unwrap();
    let txn = TxnCoordinator::open(logs, Arc::new(NoGroups), clock, TxnConfig::default()).unwrap();

    let end = h.read().log_end_offset();
    assert_eq!(
        abort_marker(&txn, MIRROR_STATE_TOPIC, 42, 0),
        ResponseError::InvalidTopicException.code()
    );
    assert_eq!(h.read().log_end_offset(), end, "nothing written");
    assert!(
        h.read().producer_state().producers().next().is_none(),
        "no producer state from a client's marker"
    );
}
