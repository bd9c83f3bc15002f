//! Kafka's `ReplicaManager.handleProduceAppend` refuses a Produce request whose transactional
//! batches carry more than one producer id or epoch ("Transactional records contained more than
//! one producer ID"): the request fails as a whole, every partition `INVALID_PRODUCER_ID_MAPPING`,
//! nothing appended. mirrorlog verified each partition on its own and appended the batch of the
//! producer the transactional id belongs to, beside a refusal for the other.

use crate::common;

use common::produce::{answered, batch, request, running_with_topic, send, txn_batch};
use kafka_protocol::ResponseError;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::client::Client;

#[test]
fn transactional_batches_of_two_producers_fail_the_whole_request() {
    let dir = tempfile::tempdir().unwrap();
    let running = running_with_topic(dir.path(), "t", 3);
    let b = &running.broker;
    let mut c = Client::connect(&running.addr.to_string()).unwrap();
    let (pid, epoch) = c.init_producer_id(Some("tx")).unwrap();
    let (other, other_epoch) = c.init_producer_id(Some("other")).unwrap();
    c.add_partitions_to_txn("tx", pid, epoch, "t", &[0])
        .unwrap();
    c.add_partitions_to_txn("other", other, other_epoch, "t", &[1])
        .unwrap();

    let mut r = request(
        1,
        vec![
            ("t", 0, Some(txn_batch(pid, epoch, 0))),
            ("t", 1, Some(txn_batch(other, other_epoch, 0))),
            ("t", 2, Some(batch(b"plain"))),
        ],
    );
    r.transactional_id = Some(StrBytes::from_static_str("tx").into());
    let resp = send(running.addr, 9, &r);
    let mapping = ResponseError::InvalidProducerIdMapping.code();
    assert_eq!(
        answered(&resp),
        vec![
            ("t".to_string(), 0, mapping),
            ("t".to_string(), 1, mapping),
            ("t".to_string(), 2, mapping),
        ]
    );
    // The whole-request error's message (Produce v8+), in every partition.
    let messages: Vec<_> = resp.responses[0]
        .partition_responses
        .iter()
        .map(|p| p.error_message.as_deref().map(|m| m.to_string()))
        .collect();
    let message = "Transactional records contained more than one producer ID".to_string();
    assert_eq!(messages, vec![Some(message); 3]);
    for p in 0..3 {
        let end = b.partition("t", p).unwrap().read().log_end_offset().get();
        assert_eq!(end, 0, "nothing appended to t-{p}");
    }
    running.shutdown().unwrap();
}
