//! A source leader answering a partition's fetch with a retriable error at once (here
//! KAFKA_STORAGE_ERROR, its log directory offline) was asked again at every fetch round — some
//! 50 times a second, for as long as the error lasted. Kafka's fetchers pause such a partition
//! (`replica.fetch.backoff.ms`, 1 s); so does the mirror now, on its own clock, which the test
//! moves by hand.

use crate::common;

use common::{Hooks, hooked_world};
use mirrorlog_index::Offset;
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::source::SourceCluster;
use mirrorlog_mirror::state::MirrorPartitionState as S;
use parking_lot::Mutex;
use std::sync::Arc;

const KAFKA_STORAGE_ERROR: i16 = 56;

#[test]
fn a_storage_error_pauses_the_partition_for_a_second() {
    // (failing, fetches so far)
    let seen: Arc<Mutex<(bool, usize)>> = Arc::new(Mutex::new((true, 0)));
    let s = seen.clone();
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            fetch: Some(Box::new(move |inner, node, request| {
                let mut r = inner.fetch(node, request)?;
                let mut s = s.lock();
                s.1 += 1;
                if s.0 {
                    for p in &mut r.partitions {
                        p.error = KAFKA_STORAGE_ERROR;
                        p.records = Default::default();
                    }
                }
                Ok(r)
            })),
            ..Hooks::default()
        },
    );
    let fetches = || seen.lock().1;

    for _ in 0..3 {
        w.mirror.fetch_round(0);
    }
    assert_eq!(fetches(), 1, "asked once within the pause");
    w.clock.advance(999);
    w.mirror.fetch_round(0);
    assert_eq!(fetches(), 1);
    w.clock.advance(1);
    w.mirror.fetch_round(0);
    assert_eq!(fetches(), 2, "asked again after it");

    // Still MIRRORING, and it copies once the source is well again.
    seen.lock().0 = false;
    w.clock.advance(1_000);
    w.mirror.fetch_round(0);
    let s = w.mirror.describe().remove(0);
    assert_eq!((s.state, s.log_end_offset), (S::Mirroring, Offset(3)));
}
