//! Scenario: a start of `orders` (source topic id A) that created the destination topic left its
//! start intent — the start failed, and removing the topic it had created failed too, so the
//! intent stays for a restart to finish the undo. Before the restart, the operator deletes that
//! read-only topic and creates their own `orders` (another topic id), writable, with records.
//!
//! Bug: the restore put the start back by topic name alone: "the start created `orders`", so
//! it removed the operator's topic (and for a topic that was writable before the start it
//! would have written the recorded configs over the new topic's). Now the restore changes the
//! topic only while the local topic of that name is still the intent's (its topic id).

use crate::common;

use common::{manager, orders as tp};
use mirrorlog_index::{Offset, TopicId};
use mirrorlog_mirror::state::{MirrorStateStore, StartIntent, TopicBefore};
use std::sync::Arc;

const MIRROR: &str = "east";
const SOURCE_ID: [u8; 16] = [7; 16];
const LOCAL_ID: [u8; 16] = [9; 16];

#[test]
fn the_operators_topic_of_the_same_name_is_left_alone() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let src = manager(a.path());
    let dst = manager(b.path());
    for p in 0..2 {
        src.create(&tp(p), TopicId(SOURCE_ID), Default::default())
            .unwrap();
        common::produce_to(&src, &tp(p), b"source", 3);
        dst.create(&tp(p), TopicId(LOCAL_ID), Default::default())
            .unwrap();
        common::produce_to(&dst, &tp(p), b"local", 5);
    }
    let store = Arc::new(MirrorStateStore::open(dst.clone(), 2).unwrap());
    // What the start left: it created `orders`, and the undo could not remove it.
    store
        .put_start_intent(&StartIntent {
            mirror: MIRROR.into(),
            topic_id: SOURCE_ID,
            topic: "orders".into(),
            topic_before: TopicBefore::Absent,
            configs_before: vec![],
            partitions: vec![(0, None), (1, None)],
        })
        .unwrap();

    // The restart.
    let m = common::config_mirror(MIRROR, &src, &dst, &store);
    for p in 0..2 {
        let h = dst
            .get(&tp(p))
            .unwrap_or_else(|| panic!("the operator's orders-{p} was removed"));
        assert_eq!(h.topic_id(), TopicId(LOCAL_ID));
        assert_eq!(h.read().log_end_offset(), Offset(5));
        assert!(!h.read().is_read_only());
    }
    assert!(store.start_intents(MIRROR).is_empty());
    assert!(m.topic_states("orders").is_empty());
}
