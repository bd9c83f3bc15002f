//! A broker whose partitions' leader epoch was raised, for the KIP-951 tests (a response naming
//! the current leader and its endpoint).

use super::fetch_session::broker_with;
use mirrorlog_broker::broker::{Broker, BrokerConfig};
use mirrorlog_index::LeaderEpoch;

/// The node id, advertised host and advertised port of [`leader_at_epoch_5`]'s broker, as a
/// response's `node_endpoints` lists it.
pub const NODE: (i32, &str, i32) = (4, "broker.example", 19092);

/// A broker of node [`NODE`] holding `topics` (name, partition count), every partition at
/// leader epoch 5.
pub fn leader_at_epoch_5(dir: &tempfile::TempDir, topics: &[(&str, i32)]) -> Broker {
    let mut config = BrokerConfig::new(dir.path(), "127.0.0.1", 9092);
    config.node_id = NODE.0;
    config.advertised_host = NODE.1.into();
    config.advertised_port = NODE.2;
    let (b, _) = broker_with(config, topics);
    for &(topic, partitions) in topics {
        for p in 0..partitions {
            b.partition(topic, p)
                .unwrap()
                .write()
                .assign_leader_epoch(LeaderEpoch(5))
                .unwrap();
        }
    }
    b
}

/// Asserts that `$endpoints` (a response's `node_endpoints`: Fetch's and Produce's are distinct
/// types with the same fields) lists [`NODE`] alone, without a rack.
#[allow(unused_macros)] // as below
macro_rules! assert_lists_node {
    ($endpoints:expr) => {
        let listed: Vec<_> = $endpoints
            .iter()
            .map(|n| (n.node_id.0, n.host.as_str(), n.port, n.rack.clone()))
            .collect();
        assert_eq!(listed, [(NODE.0, NODE.1, NODE.2, None)]);
    };
}
#[allow(unused_imports)] // the binaries outside `scenarios` that include `common` have no use
pub(crate) use assert_lists_node;
