//! KIP-951's `current_leader` and `node_endpoints`, shared by Fetch (v16+) and Produce (v10+):
//! a partition answered `NOT_LEADER_OR_FOLLOWER` (and, in Fetch, `FENCED_LEADER_EPOCH`) names
//! its current leader and leader epoch, and the response lists that leader's endpoint, so the
//! client moves to the new leader or epoch without a Metadata round trip. Each handler fills its
//! own response types; this is the part they share, Kafka's `KafkaApis.getCurrentLeader` and its
//! `nodeEndpoints` map.

use crate::broker::Broker;
use crate::topics::sb;
use kafka_protocol::messages::BrokerId;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_engine::manager::LogManager;
use mirrorlog_index::TopicPartition;
use std::sync::Arc;

/// The leaders one response names, and whether it named any (then it lists this node's
/// endpoint). Owns what it needs, so an `acks = -1` Produce can fill its response after its
/// syncs, away from the request's [`Broker`] borrow.
#[derive(Debug, Clone)]
pub(crate) struct CurrentLeaders {
    logs: Arc<LogManager>,
    node: Endpoint,
    named: bool,
}

/// A leader's endpoint as `node_endpoints` lists it (this node: its advertised listener, no
/// rack, as Metadata describes it).
#[derive(Debug, Clone)]
pub(crate) struct Endpoint {
    pub node_id: BrokerId,
    pub host: StrBytes,
    pub port: i32,
}

impl CurrentLeaders {
    /// Nobody named yet, for a response of `b`.
    pub(crate) fn of(b: &Broker) -> CurrentLeaders {
        CurrentLeaders {
            logs: b.logs.clone(),
            node: Endpoint {
                node_id: BrokerId(b.config.node_id),
                host: sb(&b.config.advertised_host),
                port: b.config.advertised_port,
            },
            named: false,
        }
    }

    /// Kafka's `getCurrentLeader`: the leader id and epoch of `topic`'s `partition` — this node
    /// (a single node leads every partition it holds) and the partition's leader epoch (as
    /// [`Broker::leader_epoch`]), or −1 and −1 for a partition it does not hold, as Kafka answers
    /// one its metadata does not know (then no endpoint is listed for it).
    pub(crate) fn name(&mut self, topic: &str, partition: i32) -> (BrokerId, i32) {
        let tp = TopicPartition {
            topic: topic.to_string(),
            partition,
        };
        match self.logs.get(&tp) {
            Some(h) => {
                self.named = true;
                (self.node.node_id, h.read().leader_epoch().get().max(0))
            }
            None => (BrokerId(-1), -1),
        }
    }

    /// The endpoint of the leaders named: this node's if [`name`](Self::name) named it.
    pub(crate) fn endpoint(self) -> Option<Endpoint> {
        self.named.then_some(self.node)
    }
}

/// The endpoint [`CurrentLeaders::endpoint`] lists, as a response's `node_endpoints` of type
/// `$node` (Fetch's and Produce's are distinct types with the same fields).
macro_rules! node_endpoints {
    ($leaders:expr, $node:ty) => {
        $leaders
            .endpoint()
            .map(|e| {
                let mut node = <$node>::default();
                node.node_id = e.node_id;
                node.host = e.host;
                node.port = e.port;
                node.rack = None;
                node
            })
            .into_iter()
            .collect::<Vec<$node>>()
    };
}
pub(crate) use node_endpoints;
