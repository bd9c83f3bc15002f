//! Kafka, `KafkaApis.handleProduceRequest`: with `acks = 0` no response is sent, "however, if
//! there is any error in handling the request, since no response is expected by the producer,
//! the server will close socket server so that the producer client will know that some error
//! has happened and will refresh its metadata". mirrorlog answers nothing and keeps the
//! connection open, so an acks=0 producer loses every record silently and never refreshes.

use crate::common;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::running::RunningBroker;
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TimestampMs;
use mirrorlog_segment::BatchBuilder;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

#[test]
fn an_acks0_produce_that_fails_closes_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let running = RunningBroker::start_local(dir.path(), 1).unwrap();
    running
        .broker
        .topics
        .create(&running.broker.logs, "t", 1, LogConfig::default(), None)
        .unwrap();

    let mut bb = BatchBuilder::new();
    bb.append(TimestampMs(1_700_000_000_000), None, Some(b"v"), &[]);
    let mut pd = PartitionProduceData::default();
    pd.index = 7; // the topic has one partition: UNKNOWN_TOPIC_OR_PARTITION
    pd.records = Some(bb.build().into_bytes());
    let mut td = TopicProduceData::default();
    td.name = TopicName(StrBytes::from_static_str("t"));
    td.partition_data.push(pd);
    let mut r = ProduceRequest::default();
    r.acks = 0;
    r.timeout_ms = 1000;
    r.topic_data.push(td);

    let mut s = TcpStream::connect(running.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&common::wire::frame(ApiKey::Produce, 9, 1, &r))
        .unwrap();
    // Pipelined behind it: answered only if the connection stayed open.
    let _ = s.write_all(&common::wire::frame(
        ApiKey::ApiVersions,
        0,
        2,
        &ApiVersionsRequest::default(),
    ));
    let mut buf = [0u8; 4];
    match s.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == ErrorKind::ConnectionReset => {}
        Ok(n) => panic!(
            "connection kept open after a failed acks=0 produce (read {n} bytes of the next answer)"
        ),
        Err(e) => panic!("connection kept open after a failed acks=0 produce ({e})"),
    }
    running.shutdown().unwrap();
}
