//! Kafka's `KafkaApis.handleProduceRequest` lets the client id `__admin_client`
//! (`AdminUtils.ADMIN_CLIENT_ID`) append to an internal topic (`internalTopicsAllowed`);
//! `appendToLocalLog` refuses any other client id `INVALID_TOPIC_EXCEPTION`. Here every client
//! id was refused. Both of the dispatcher's ways in are checked: `handle`, and
//! `handle_pipelined` for acks 1 and acks -1 (answered later, after the sync).

use crate::common;

use common::internal_topics::manual_broker;
use common::produce::{batch, request};
use kafka_protocol::messages::{ApiKey, ProduceResponse, RequestHeader, RequestKind, ResponseKind};
use mirrorlog_broker::broker::Broker;
use mirrorlog_broker::server::{Handler, Reply, RequestContext};

const INVALID_TOPIC_EXCEPTION: i16 = 17;

fn ctx(client_id: &str) -> RequestContext {
    RequestContext {
        peer: "127.0.0.1:1".parse().unwrap(),
        connection_id: 1,
        client_id: Some(client_id.into()),
        api_key: ApiKey::Produce,
        api_version: 9,
        correlation_id: 1,
    }
}

/// The error code `__consumer_offsets`-0 is answered, for one batch of `acks` from `client_id`,
/// through `handle` (`pipelined` false) or `handle_pipelined`.
fn produce_to_offsets(b: &Broker, client_id: &str, acks: i16, pipelined: bool) -> i16 {
    let r = RequestKind::Produce(request(
        acks,
        vec![("__consumer_offsets", 0, Some(batch(b"v")))],
    ));
    let header = RequestHeader::default();
    let resp = if pipelined {
        match b.handle_pipelined(&ctx(client_id), &header, r) {
            Reply::Now(resp) => resp,
            Reply::Later(finish) => finish(),
            _ => panic!("acks {acks} is answered"),
        }
    } else {
        b.handle(&ctx(client_id), &header, r).expect("answered")
    };
    let ResponseKind::Produce(ProduceResponse { responses, .. }) = resp else {
        panic!("a Produce answer");
    };
    responses[0].partition_responses[0].error_code
}

#[test]
fn the_admin_client_id_may_produce_to_an_internal_topic() {
    let dir = tempfile::tempdir().unwrap();
    let (b, _) = manual_broker(dir.path());
    for (acks, pipelined) in [(1, false), (1, true), (-1, true)] {
        assert_eq!(
            produce_to_offsets(&b, "__admin_client", acks, pipelined),
            0,
            "acks {acks}, pipelined {pipelined}"
        );
        assert_eq!(
            produce_to_offsets(&b, "someone", acks, pipelined),
            INVALID_TOPIC_EXCEPTION,
            "acks {acks}, pipelined {pipelined}"
        );
    }
}
