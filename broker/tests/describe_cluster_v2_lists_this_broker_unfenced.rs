//! Bug: DescribeCluster stopped at v1, where Kafka's broker (4.0+) answers v2 (KIP-1073:
//! `include_fenced_brokers`, each broker's `is_fenced`); the Java AdminClient's
//! `describeCluster(new DescribeClusterOptions().includeFencedBrokers(true))` needs v2 and
//! failed with UnsupportedVersionException. This node is the only broker and never fenced.

use crate::common;

use kafka_protocol::messages::{ApiKey, BrokerId, DescribeClusterRequest, DescribeClusterResponse};

#[test]
fn describe_cluster_v2_with_fenced_brokers_lists_this_broker_unfenced() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "t", 1);
    let advertised = running
        .broker
        .api_versions()
        .into_iter()
        .find(|(k, _, _)| *k == ApiKey::DescribeCluster);
    assert_eq!(advertised, Some((ApiKey::DescribeCluster, 0, 2)));
    for include_fenced_brokers in [true, false] {
        let r = DescribeClusterRequest::default()
            .with_include_cluster_authorized_operations(true)
            .with_include_fenced_brokers(include_fenced_brokers);
        let resp: DescribeClusterResponse =
            common::wire::call(running.addr, ApiKey::DescribeCluster, 2, &r);
        assert_eq!(resp.error_code, 0);
        assert_eq!(resp.endpoint_type, 1);
        assert_eq!(resp.controller_id, BrokerId(running.broker.config.node_id));
        assert_eq!(resp.brokers.len(), 1);
        assert_eq!(
            resp.brokers[0].broker_id,
            BrokerId(running.broker.config.node_id)
        );
        assert!(!resp.brokers[0].is_fenced);
    }
}
