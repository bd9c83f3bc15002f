//! Found in review of the operator side: `failover_exposure` asks OffsetFetch for every listed
//! source group, share groups included. Apache Kafka answers OffsetFetch for a share group with
//! GROUP_ID_NOT_FOUND ("Group … is not a consumer group", `ShareGroup.validateOffsetFetch`), which
//! the wire client returns as an error: one share group on the source (matched by the default
//! `mirror.groups.include=.*`) makes the whole `--failover-report` fail. The group offset sync
//! already keeps share groups out of OffsetFetch (`split_group_types`); the report must too.

use crate::common;

use mirrorlog_index::{LeaderEpoch, Offset, TopicPartition};
use mirrorlog_mirror::failover_report::failover_exposure;
use mirrorlog_mirror::source::*;
use std::collections::BTreeMap;

/// A Kafka-like cluster holding consumer group `billing` (committed 40 on orders-0) and share
/// group `audit`.
#[derive(Debug)]
struct Cluster {
    billing_at: i64,
}

impl SourceCluster for Cluster {
    no_data_path!();
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        Ok(vec![
            GroupListing {
                group_id: "audit".into(),
                protocol_type: "share".into(),
                state: Some("Stable".into()),
                group_type: Some("share".into()),
            },
            GroupListing {
                group_id: "billing".into(),
                protocol_type: "consumer".into(),
                state: Some("Empty".into()),
                group_type: Some("classic".into()),
            },
        ])
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        match group_id {
            // As the wire client reports Kafka's group-level GROUP_ID_NOT_FOUND.
            "audit" => Err(SourceError::Kafka {
                code: 69,
                message: "GROUP_ID_NOT_FOUND: Group audit is not a consumer group.".into(),
            }),
            _ => Ok(vec![CommittedOffset {
                topic: "orders".into(),
                partition: 0,
                offset: Offset(self.billing_at),
                leader_epoch: LeaderEpoch(0),
                metadata: None,
            }]),
        }
    }
}

#[test]
fn a_share_group_on_the_source_does_not_fail_the_failover_report() {
    let partitions = BTreeMap::from([(
        TopicPartition {
            topic: "orders".into(),
            partition: 0,
        },
        Offset(30),
    )]);
    let r = failover_exposure(
        &Cluster { billing_at: 40 },
        &Cluster { billing_at: 25 },
        &partitions,
        &[".*".to_string()],
        &[],
    )
    .expect("a share group has no offsets to report; it must not fail the report");
    assert!(r.unreadable.is_empty(), "{r:?}");
    let r = r.exposures;
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].group, "billing");
    assert_eq!(r[0].redelivered, Some(5));
    assert_eq!(r[0].not_on_destination, 10);
}
