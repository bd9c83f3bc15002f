//! A source whose nodes do not speak the mirror RPCs (a plain Kafka cluster, a node not upgraded
//! yet) answers the last-mirror-epoch lookup `Unsupported`. LOG_ALIGNMENT then copies a partition
//! that holds nothing from scratch, as a first start must, but fails one that holds records
//! rather than drop them on an answer that says nothing about whether the source mirrored us.

use crate::common;

use common::{Hooks, hooked_world, orders};
use mirrorlog_index::Offset;
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::source::SourceError;
use mirrorlog_mirror::state::MirrorPartitionState as S;

#[test]
fn an_empty_partition_is_copied_from_scratch_and_a_partition_with_records_fails_untouched() {
    let mut config = MirrorConfig::new("m");
    config.local_cluster_id = Some("destination-cluster".into());
    // A first start (the world drives it once): nothing here to lose.
    let w = hooked_world(
        1,
        config,
        Hooks {
            last_mirror_epoch: Some(Box::new(|| {
                Err(SourceError::Unsupported(
                    "DescribeClusterMirrors (the source node at test:9092 does not offer it)"
                        .into(),
                ))
            })),
            ..Hooks::default()
        },
    );
    let status = || w.mirror.describe().remove(0);
    assert_eq!(status().state, S::Mirroring, "{:?}", status().failure);
    w.mirror.fetch_round(0);
    assert_eq!(status().log_end_offset, Offset(3));

    // A failback onto the records: the log stays as it is and the reason names the lookup.
    w.mirror.stop_topic("orders").unwrap();
    let end = w.dst.get(&orders(0)).unwrap().read().log_end_offset();
    w.mirror.start_topics(&["orders".to_string()]).unwrap();
    w.mirror.drive();
    let s = status();
    assert_eq!(s.state, S::Failed);
    let reason = s.failure.unwrap();
    assert!(
        reason.contains("last-mirror-epoch lookup") && reason.contains("DescribeClusterMirrors"),
        "{reason}"
    );
    let log = w.dst.get(&orders(0)).unwrap();
    assert_eq!(
        (log.read().log_start_offset(), log.read().log_end_offset()),
        (Offset(0), end)
    );
}
