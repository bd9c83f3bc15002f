//! WriteTxnMarkers (API 27, v1), what the Java AdminClient's `abortTransaction` sends to a
//! partition's leader to end a hanging transaction: the ABORT marker is written for the given
//! producer and epoch, the last stable offset moves past the transaction; a marker with an
//! older producer epoch is refused with the engine's epoch error, an unknown partition is
//! UNKNOWN_TOPIC_OR_PARTITION, a mirror partition READ_ONLY_TOPIC (nothing written).

use crate::common;

use common::txn::{NoGroups, abort_marker, manual_logs};
use kafka_protocol::ResponseError;
use mirrorlog_broker::txn::{TxnConfig, TxnCoordinator};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_index::{
    LeaderEpoch, Offset, ProducerEpoch, ProducerId, Sequence, TimestampMs, TopicId, TopicPartition,
};
use mirrorlog_segment::BatchBuilder;
use std::sync::Arc;

const T0: i64 = 1_700_000_000_000;

#[test]
fn write_txn_markers_aborts_a_hanging_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, clock) = manual_logs(dir.path(), T0);
    let tp = TopicPartition {
        topic: "orders".into(),
        partition: 0,
    };
    let h = logs
        .create(&tp, TopicId([3; 16]), LogConfig::default())
        .unwrap();
    // A transaction its coordinator never ends: producer 42 at epoch 3, offsets 0..1.
    let mut batch = BatchBuilder::new()
        .producer(ProducerId(42), ProducerEpoch(3), Sequence(0))
        .transactional(true);
    batch.append(TimestampMs(T0), None, Some(b"a"), &[]);
    batch.append(TimestampMs(T0), None, Some(b"b"), &[]);
    {
        let mut log = h.write();
        log.append_as_leader(
            batch.build().into_bytes(),
            LeaderEpoch(0),
            LeaderOrigin::Client,
        )
        .unwrap();
        log.maybe_increment_high_watermark(Offset(2));
    }
    assert_eq!(
        h.read().last_stable_offset(),
        Offset(0),
        "held by the open transaction"
    );
    let mirrored = TopicPartition {
        topic: "mirrored".into(),
        partition: 0,
    };
    let read_only = LogConfig {
        read_only: true,
        ..LogConfig::default()
    };
    let m = logs.create(&mirrored, TopicId([4; 16]), read_only).unwrap();
    let txn = TxnCoordinator::open(logs, Arc::new(NoGroups), clock, TxnConfig::default()).unwrap();

    assert_eq!(
        abort_marker(&txn, "orders", 42, 2),
        ResponseError::InvalidProducerEpoch.code(),
        "an older epoch cannot end the transaction"
    );
    assert_eq!(h.read().last_stable_offset(), Offset(0));
    assert_eq!(abort_marker(&txn, "orders", 42, 3), 0);
    assert_eq!(
        (h.read().last_stable_offset(), h.read().log_end_offset()),
        (Offset(3), Offset(3)),
        "the ABORT marker at offset 2 ends the transaction"
    );
    assert_eq!(
        abort_marker(&txn, "nope", 42, 3),
        ResponseError::UnknownTopicOrPartition.code()
    );

    // A mirror partition holds the source's bytes at the source's offsets: a marker of ours
    // there would take an offset the source's next batch needs (and the mirror ends its
    // transactions itself, with the source's markers or its stop's ABORTs).
    let end = m.read().log_end_offset();
    assert_eq!(
        abort_marker(&txn, "mirrored", 42, 3),
        mirrorlog_broker::errors::READ_ONLY_TOPIC
    );
    assert_eq!(m.read().log_end_offset(), end, "nothing written");
}
