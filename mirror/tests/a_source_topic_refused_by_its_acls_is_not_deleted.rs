//! A source topic its metadata answers with an error other than UNKNOWN_TOPIC_OR_PARTITION (and
//! so without partitions) — TOPIC_AUTHORIZATION_FAILED after an ACL change on the source, or
//! LEADER_NOT_AVAILABLE still after the client's retries — is not a deleted topic: the mirror
//! counted it as missing and failed its partitions for good, "deleted", at the second sync.

use crate::common;

use common::{Hooks, hooked_world};
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::state::MirrorPartitionState as S;
use parking_lot::Mutex;
use std::sync::Arc;

const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const LEADER_NOT_AVAILABLE: i16 = 5;
const TOPIC_AUTHORIZATION_FAILED: i16 = 29;

#[test]
fn only_an_unknown_topic_counts_as_missing() {
    // While set, metadata answers every topic with this error and no partitions.
    let refusal: Arc<Mutex<Option<i16>>> = Arc::default();
    let r = refusal.clone();
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            metadata: Some(Box::new(move |m| {
                if let Some(error) = *r.lock() {
                    for t in &mut m.topics {
                        t.error = error;
                        t.partitions.clear();
                    }
                }
            })),
            ..Hooks::default()
        },
    );
    w.mirror.fetch_round(0);
    let state = || w.mirror.describe().remove(0).state;
    assert_eq!(state(), S::Mirroring);

    for error in [TOPIC_AUTHORIZATION_FAILED, LEADER_NOT_AVAILABLE] {
        *refusal.lock() = Some(error);
        for _ in 0..3 {
            w.mirror.sync().unwrap();
        }
        assert_eq!(
            state(),
            S::Mirroring,
            "{:?}",
            w.mirror.describe()[0].failure
        );
    }
    // Deleted for real: failed at the second sync.
    *refusal.lock() = Some(UNKNOWN_TOPIC_OR_PARTITION);
    w.mirror.sync().unwrap();
    assert_eq!(state(), S::Mirroring);
    w.mirror.sync().unwrap();
    assert_eq!(state(), S::Failed);
}
