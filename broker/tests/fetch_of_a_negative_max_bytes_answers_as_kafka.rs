//! Kafka reads each partition with `min(partition_max_bytes, what is left of max_bytes)`, and its
//! `LogSegment.read` throws an `IllegalArgumentException` for a negative size once the read
//! reaches a segment — when the fetch offset has data below the bound to read; `readFromLog`
//! answers that partition `UNKNOWN_SERVER_ERROR` (offsets −1, no records). A negative request
//! `max_bytes` is what is left for the first partition read (Kafka's `limitBytes`, at least 0
//! after each partition). mirrorlog read a negative limit as 0: one whole batch for the first
//! partition with data.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, produce_one, session_fetch};
use common::produce::batch;
use kafka_protocol::ResponseError;
use kafka_protocol::messages::fetch_response::PartitionData;
use mirrorlog_broker::broker::BrokerConfig;

const UNKNOWN: i16 = ResponseError::UnknownServerError.code();

fn records(p: &PartitionData) -> usize {
    p.records.as_ref().map_or(0, |r| r.len())
}

#[test]
fn a_negative_limit_fails_a_partition_with_data_to_read() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = broker_with(
        BrokerConfig::new(dir.path(), "127.0.0.1", 9092),
        &[("t", 1), ("u", 1)],
    );
    produce_one(&b, "t", batch(b"a"));
    produce_one(&b, "u", batch(b"b"));
    let fetched = batch(b"b").len();

    for isolation in [0, 1] {
        // A negative partition_max_bytes: t-0 fails; u-0, read next, still gets its first batch.
        let mut r = session_fetch(0, -1, &[("t", 0, 0), ("u", 0, 0)]);
        r.isolation_level = isolation;
        r.topics[0].partitions[0].partition_max_bytes = -1;
        let resp = fetch_at(&b, r, 12);
        let t0 = &resp.responses[0].partitions[0];
        assert_eq!(t0.error_code, UNKNOWN, "isolation {isolation}");
        assert_eq!(
            (
                t0.high_watermark,
                t0.last_stable_offset,
                t0.log_start_offset
            ),
            (-1, -1, -1)
        );
        assert_eq!(records(t0), 0);
        assert_eq!(resp.responses[1].partitions[0].error_code, 0);
        assert_eq!(records(&resp.responses[1].partitions[0]), fetched);

        // A negative max_bytes: the first partition read fails, and what is left is 0 after it,
        // so the next still gets one whole batch.
        let mut r = session_fetch(0, -1, &[("t", 0, 0), ("u", 0, 0)]);
        r.isolation_level = isolation;
        r.max_bytes = -5;
        let resp = fetch_at(&b, r, 12);
        assert_eq!(resp.responses[0].partitions[0].error_code, UNKNOWN);
        assert_eq!(resp.responses[1].partitions[0].error_code, 0);
        assert_eq!(records(&resp.responses[1].partitions[0]), fetched);
    }

    // Nothing to read (at the bound): an empty answer, as Kafka's read reaches no segment.
    let mut r = session_fetch(0, -1, &[("t", 0, 1)]);
    r.topics[0].partitions[0].partition_max_bytes = -1;
    let t0 = &fetch_at(&b, r, 12).responses[0].partitions[0];
    assert_eq!((t0.error_code, t0.high_watermark, records(t0)), (0, 1, 0));
    // Outside the log: OFFSET_OUT_OF_RANGE comes first.
    let mut r = session_fetch(0, -1, &[("t", 0, 5)]);
    r.topics[0].partitions[0].partition_max_bytes = -1;
    assert_eq!(
        fetch_at(&b, r, 12).responses[0].partitions[0].error_code,
        ResponseError::OffsetOutOfRange.code()
    );
}
