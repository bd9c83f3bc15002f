//! A broker over two data directories on the simulated storage, with its coordinators: how the
//! tests put a coordinator's internal partition in a directory that goes offline at a restart.
//! Requests go through the broker's dispatcher as a connection's would.

use kafka_protocol::messages::{
    ApiKey, InitProducerIdRequest, RequestHeader, RequestKind, ResponseKind, TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_broker::server::{Handler, RequestContext};
use mirrorlog_engine::clock::ManualClock;
use mirrorlog_segment::io::SimStorage;
use std::path::Path;
use std::sync::Arc;

/// A string of the protocol.
pub fn s(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

/// Opens the broker on `d1` and `d2` (cluster id `c`, one recovery thread) and installs its
/// coordinators, which must install whatever directory is offline.
pub fn open(d1: &Path, d2: &Path, sim: &Arc<SimStorage>, clock: &Arc<ManualClock>) -> Arc<Broker> {
    let mut config = BrokerConfig::new(d1, "127.0.0.1", 9092);
    config.cluster_id = Some("c".into());
    config.logs.data_dirs = vec![d1.to_path_buf(), d2.to_path_buf()];
    config.logs.recovery_threads = 1;
    let b = Arc::new(Broker::open(config, sim.clone(), clock.clone()).unwrap());
    b.register_arc();
    mirrorlog_broker::coordinators::install(&b)
        .expect("the coordinators install with a data directory offline");
    b
}

/// Shuts the broker down cleanly (it must not be shared any more).
pub fn close(b: Arc<Broker>) {
    Arc::try_unwrap(b)
        .map_err(|_| "broker still shared")
        .unwrap()
        .shutdown()
        .unwrap();
}

/// Answers `req`, an `api` request of version `v`, through the broker's dispatcher.
pub fn call(b: &Broker, api: ApiKey, v: i16, req: RequestKind) -> ResponseKind {
    let ctx = RequestContext {
        peer: "127.0.0.1:1".parse().unwrap(),
        connection_id: 1,
        client_id: Some("test".into()),
        api_key: api,
        api_version: v,
        correlation_id: 1,
    };
    let header = RequestHeader::default()
        .with_request_api_key(api as i16)
        .with_request_api_version(v);
    b.handle(&ctx, &header, req).expect("a response")
}

/// InitProducerId v4 with a 60 s transaction timeout: (error, producer id, epoch).
pub fn init(b: &Broker, txn_id: Option<&str>) -> (i16, i64, i16) {
    let mut r = InitProducerIdRequest::default();
    r.transactional_id = txn_id.map(|t| TransactionalId(s(t)));
    r.transaction_timeout_ms = 60_000;
    let ResponseKind::InitProducerId(resp) = call(b, ApiKey::InitProducerId, 4, r.into()) else {
        panic!("not an InitProducerId response");
    };
    (resp.error_code, resp.producer_id.0, resp.producer_epoch)
}
