//! Found in review of the operator side (KIP-1279 §11): the syncer must skip a group whose
//! commit the destination coordinator rejects (UNKNOWN_MEMBER_ID: it got members between the
//! active-group check and the commit) and go on with the other groups. `sync_group_offsets_where`
//! returns on the first failed commit instead, so one busy group leaves every later group
//! unsynced — on every refresh, for as long as it stays busy — and the sync's report is lost.

use crate::common;

use common::{FiveOnOrders, RecordingSink, manager, orders, produce_to};
use mirrorlog_engine::config::LogConfig;
use mirrorlog_index::TopicId;
use mirrorlog_mirror::group_sync::sync_group_offsets;

#[test]
fn a_group_whose_commit_is_refused_does_not_stop_the_other_groups_sync() {
    let dir = tempfile::tempdir().unwrap();
    let dst = manager(dir.path());
    dst.create(&orders(0), TopicId([1; 16]), LogConfig::default())
        .unwrap();
    produce_to(&dst, &orders(0), b"v", 10);
    // `busy` got a member after the active check: its generation −1 commit is refused.
    let sink = RecordingSink {
        busy: Some("busy"),
        ..RecordingSink::default()
    };
    let r = sync_group_offsets(
        &FiveOnOrders,
        &dst,
        &sink,
        &["busy".to_string(), "billing".to_string()],
    );
    assert_eq!(
        *sink.committed.lock(),
        vec!["billing".to_string()],
        "billing's offsets must be synced although busy's commit was refused"
    );
    let r = r.expect("a refused commit of one group is skipped, not a failed sync");
    assert_eq!(r.committed, 1);
}
