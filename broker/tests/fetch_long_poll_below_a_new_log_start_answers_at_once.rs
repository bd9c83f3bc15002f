//! DeleteRecords wakes the long polls on its partitions so that one waiting below the new log
//! start answers OFFSET_OUT_OF_RANGE then, not at its `max_wait_ms` (the consumer resets its
//! position at once). A waiting fetch judges its wait from where its read started and where its
//! bound lies (Kafka's `DelayedFetch`, which looks at no log start), so one that had read fewer
//! than `min_bytes` below an unmoved high watermark kept waiting after the log start passed it.

use crate::common;

use common::fetch_session::{broker_with, fetch_at, session_fetch};
use common::long_poll::{HANG_GUARD, wait_until_long_polling};
use common::produce::{batch, request};
use kafka_protocol::ResponseError;
use kafka_protocol::messages::DeleteRecordsRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::BrokerConfig;
use mirrorlog_broker::handlers::{offsets, produce};
use std::sync::{Arc, mpsc};

#[test]
fn a_long_poll_below_the_log_start_delete_records_sets_answers_out_of_range() {
    let dir = tempfile::tempdir().unwrap();
    let config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    let b = Arc::new(broker_with(config, &[("t", 1)]).0);
    for _ in 0..2 {
        let r = request(1, vec![("t", 0, Some(batch(&[b'a'; 100])))]);
        let resp = produce::handle(&b, r, 9).unwrap();
        assert_eq!(resp.responses[0].partition_responses[0].error_code, 0);
    }

    // Both batches are fewer bytes than `min_bytes`: the fetch waits for more.
    let mut r = session_fetch(0, -1, &[("t", 0, 0)]);
    r.max_wait_ms = 600_000;
    r.min_bytes = 1 << 20;
    let (tx, rx) = mpsc::channel();
    let fetcher = Arc::clone(&b);
    std::thread::spawn(move || {
        let _ = tx.send(fetch_at(&fetcher, r, 12));
    });
    wait_until_long_polling(&b);

    let mut p = DeleteRecordsPartition::default();
    p.partition_index = 0;
    p.offset = 1;
    let mut t = DeleteRecordsTopic::default();
    t.name = TopicName(StrBytes::from_static_str("t"));
    t.partitions = vec![p];
    let mut d = DeleteRecordsRequest::default();
    d.topics = vec![t];
    let deleted = offsets::delete_records(&b, d, 2);
    assert_eq!(deleted.topics[0].partitions[0].low_watermark, 1);

    let resp = rx.recv_timeout(HANG_GUARD);
    // Ends a hung fetch before failing, so that it does not outlive the test.
    b.appends.close();
    let resp = resp.expect("the fetch below the log start waited out max_wait_ms");
    assert_eq!(
        resp.responses[0].partitions[0].error_code,
        ResponseError::OffsetOutOfRange.code()
    );
}
