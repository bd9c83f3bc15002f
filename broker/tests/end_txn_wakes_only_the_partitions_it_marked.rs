//! EndTxn writes its markers to the transaction's partitions: in Kafka each marker append
//! completes the delayed fetches of its own partition (a READ_COMMITTED consumer waits there
//! for the last stable offset) and no other. Here every EndTxn woke every long-polling fetch of
//! the broker, which re-read all its partitions and slept again. Wake-ups are counted through
//! the notifier's test hook.

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::fetch;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::{ProducerEpoch, ProducerId, Sequence, TimestampMs};
use mirrorlog_segment::BatchBuilder;
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn long_poll(topic: &str, read_committed: bool) -> FetchRequest {
    let mut r = FetchRequest::default();
    r.max_wait_ms = 600_000;
    r.min_bytes = 1;
    r.max_bytes = 1 << 20;
    r.session_epoch = -1;
    r.isolation_level = i8::from(read_committed);
    let mut fp = FetchPartition::default();
    fp.partition = 0;
    fp.fetch_offset = 0;
    fp.partition_max_bytes = 1 << 20;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    t.partitions.push(fp);
    r.topics.push(t);
    r
}

fn one_record() -> bytes::Bytes {
    BatchBuilder::new()
        .record(TimestampMs(1_700_000_000_000), None, Some(b"v"))
        .build()
        .into_bytes()
}

#[test]
fn end_txn_wakes_the_read_committed_long_poll_on_its_partition_only() {
    let dir = tempfile::tempdir().unwrap();
    let rb = RunningBroker::start_local(dir.path(), 1).unwrap();
    let b = rb.broker.clone();
    for t in ["a", "b"] {
        b.topics
            .create(&b.logs, t, 1, LogConfig::default(), None)
            .unwrap();
    }
    let mut c = Client::connect(&rb.addr.to_string()).unwrap();
    let (pid, epoch) = c.init_producer_id(Some("t")).unwrap();
    c.add_partitions_to_txn("t", pid, epoch, "b", &[0]).unwrap();
    let txn = BatchBuilder::new()
        .producer(ProducerId(pid), ProducerEpoch(epoch), Sequence(0))
        .transactional(true)
        .record(TimestampMs(1_700_000_000_000), None, Some(b"v"))
        .build();
    c.produce("b", 0, txn.into_bytes(), -1, Some("t")).unwrap();

    std::thread::scope(|scope| {
        let (tx_a, rx_a) = mpsc::channel();
        let (tx_b, rx_b) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            tx_a.send(fetch::handle(b, long_poll("a", false), 12))
                .unwrap()
        });
        // Nothing below the last stable offset (0) until the commit marker.
        scope.spawn(move || {
            tx_b.send(fetch::handle(b, long_poll("b", true), 12))
                .unwrap()
        });
        let hang_guard = Instant::now() + Duration::from_secs(120);
        while b.appends.waiting() < 2 {
            assert!(Instant::now() < hang_guard, "the fetches never long-polled");
            std::thread::yield_now();
        }
        let before = b.appends.wakeups();
        c.end_txn("t", pid, epoch, true).unwrap();
        // EndTxn answers once its markers are written and their fetches signalled.
        let after_commit = b.appends.wakeups();
        let answered_a = rx_a.try_recv().is_ok();
        // Ends the long poll on a before asserting, so that a failure does not leave it waiting.
        c.produce("a", 0, one_record(), 1, None).unwrap();
        let (resp_b, resp_a) = (
            rx_b.recv_timeout(Duration::from_secs(120)),
            rx_a.recv_timeout(Duration::from_secs(120)),
        );
        if resp_b.is_err() || resp_a.is_err() {
            // Answers the fetch left waiting, so that the failure ends the test.
            b.appends.close();
        }
        let resp_b =
            resp_b.expect("the commit marker did not wake the READ_COMMITTED long poll on b");
        let resp_a = resp_a.expect("the append to a did not wake its long poll");
        assert_eq!(
            after_commit,
            before + 1,
            "the commit woke more than the long poll on b (the one on a too)"
        );
        assert!(!answered_a, "the long poll on a answered without data");
        let d = &resp_b.responses[0].partitions[0];
        assert_eq!(d.error_code, 0);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
        assert!(
            resp_a.responses[0].partitions[0]
                .records
                .as_ref()
                .is_some_and(|r| !r.is_empty())
        );
    });
    drop(b);
    rb.shutdown().unwrap();
}
