//! Found in review against MirrorMaker 2's `MirrorCheckpointTask` (which reads and syncs each
//! group on its own): the offset sync returned on the first group whose committed offsets the
//! source refused to give — COORDINATOR_NOT_AVAILABLE for as long as that group's
//! `__consumer_offsets` partition is offline on the source — so every group after it went
//! unsynced on every refresh, and consumers of those groups failing over resumed from stale
//! offsets. Now such a group is reported and skipped; an unreachable source still stops the
//! sync (every group would fail the same way).

use crate::common;

use common::{RecordingSink, manager, orders, produce_to};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicId;
use mirrorlog_mirror::group_sync::sync_group_offsets;
use mirrorlog_mirror::source::*;

/// A source whose group `stuck` has its coordinator unavailable (or, with `down`, a source
/// that cannot be reached for it), and whose group `billing` committed offset 5 of orders-0.
#[derive(Debug)]
struct Groups {
    down: bool,
}

impl SourceCluster for Groups {
    no_data_path!();
    fn list_groups(&self) -> Result<Vec<GroupListing>, SourceError> {
        Err(common::not_on_the_data_path())
    }
    fn committed_offsets(&self, group: &str) -> Result<Vec<CommittedOffset>, SourceError> {
        if group == "stuck" {
            return Err(if self.down {
                SourceError::Unreachable("connection refused".into())
            } else {
                SourceError::Kafka {
                    code: 15,
                    message: "COORDINATOR_NOT_AVAILABLE".into(),
                }
            });
        }
        Ok(common::committed_five_on_orders())
    }
}

#[test]
fn a_group_the_source_cannot_answer_for_does_not_stop_the_other_groups_sync() {
    let dir = tempfile::tempdir().unwrap();
    let dst = manager(dir.path());
    dst.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    produce_to(&dst, &orders(0), b"v", 10);
    let groups = ["stuck".to_string(), "billing".to_string()];

    let sink = RecordingSink::default();
    let r = sync_group_offsets(&Groups { down: false }, &dst, &sink, &groups);
    assert_eq!(
        *sink.committed.lock(),
        vec!["billing".to_string()],
        "billing's offsets must be synced although the source could not answer for stuck"
    );
    let r = r.expect("one group the source refuses is skipped, not a failed sync");
    assert_eq!(r.committed, 1);
    assert_eq!(r.failed.len(), 1, "{r:?}");
    assert!(r.failed[0].starts_with("stuck: "), "{r:?}");

    let sink = RecordingSink::default();
    let r = sync_group_offsets(&Groups { down: true }, &dst, &sink, &groups);
    assert!(
        matches!(r, Err(SourceError::Unreachable(_))),
        "an unreachable source stops the sync: {r:?}"
    );
}
