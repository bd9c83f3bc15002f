//! `--failover-report` is run during a disaster, when the source may be partly down. It failed
//! as a whole on the first group whose offsets the source could not give (its coordinator
//! unavailable, the group being loaded): one such group hid every other. Each such group is now
//! listed with its error and the report goes on; only a cluster failing as a whole (the source's
//! group listing, the destination unreachable) still fails it.

use crate::common;

use mirrorlog_index::{LeaderEpoch, Offset, TopicPartition};
use mirrorlog_mirror::failover_report::{Side, UnreadableGroup, failover_exposure};
use mirrorlog_mirror::source::*;
use std::collections::BTreeMap;

/// A cluster listing groups `audit`, `billing`, `ledger` and `payroll`; each has committed
/// `at` on orders-0 unless `fails` says what the cluster answers for it instead.
#[derive(Debug)]
struct Cluster {
    at: i64,
    fails: Vec<(&'static str, SourceError)>,
}

impl SourceCluster for Cluster {
    no_data_path!();
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        Ok(["audit", "billing", "ledger", "payroll"]
            .into_iter()
            .map(|g| GroupListing {
                group_id: g.into(),
                protocol_type: "consumer".into(),
                state: Some("Empty".into()),
                group_type: Some("classic".into()),
            })
            .collect())
    }
    fn committed_offsets(&self, group_id: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        if let Some((_, e)) = self.fails.iter().find(|(g, _)| *g == group_id) {
            return Err(e.clone());
        }
        Ok(vec![CommittedOffset {
            topic: "orders".into(),
            partition: 0,
            offset: Offset(self.at),
            leader_epoch: LeaderEpoch(0),
            metadata: None,
        }])
    }
}

fn partitions() -> BTreeMap<TopicPartition, Offset> {
    BTreeMap::from([(
        TopicPartition {
            topic: "orders".into(),
            partition: 0,
        },
        Offset(30),
    )])
}

fn kafka(code: i16, message: &str) -> SourceError {
    SourceError::Kafka {
        code,
        message: message.into(),
    }
}

#[test]
fn a_group_the_source_cannot_give_is_listed_and_the_others_are_reported() {
    let coordinator_down = kafka(15, "COORDINATOR_NOT_AVAILABLE");
    let loading = kafka(14, "COORDINATOR_LOAD_IN_PROGRESS");
    let not_coordinator = kafka(16, "NOT_COORDINATOR");
    let source = Cluster {
        at: 40,
        fails: vec![
            ("audit", coordinator_down.clone()),
            ("ledger", loading.clone()),
        ],
    };
    let dest = Cluster {
        at: 25,
        fails: vec![("payroll", not_coordinator.clone())],
    };
    let r = failover_exposure(&source, &dest, &partitions(), &[".*".to_string()], &[])
        .expect("groups the clusters cannot give must not fail the whole report");
    let groups: Vec<&str> = r.exposures.iter().map(|e| e.group.as_str()).collect();
    assert_eq!(groups, ["billing"], "{r:?}");
    assert_eq!(r.exposures[0].redelivered, Some(5));
    assert_eq!(r.exposures[0].not_on_destination, 10);
    assert_eq!(
        r.unreadable,
        [
            UnreadableGroup {
                group: "audit".into(),
                cluster: Side::Source,
                error: coordinator_down,
            },
            UnreadableGroup {
                group: "ledger".into(),
                cluster: Side::Source,
                error: loading,
            },
            UnreadableGroup {
                group: "payroll".into(),
                cluster: Side::Destination,
                error: not_coordinator,
            },
        ]
    );
}

#[test]
fn the_destination_unreachable_still_fails_the_whole_report() {
    let source = Cluster {
        at: 40,
        fails: vec![],
    };
    let dest = Cluster {
        at: 25,
        fails: vec![(
            "billing",
            SourceError::Unreachable("connection refused".into()),
        )],
    };
    let r = failover_exposure(&source, &dest, &partitions(), &[".*".to_string()], &[]);
    assert!(matches!(r, Err(SourceError::Unreachable(_))), "{r:?}");
}
