//! Bug: the mirror's group offset sync committed every offset on the destination with an empty
//! metadata string, whatever the source's commit carried. The KIP-1279 prototype's sync (and
//! MirrorMaker 2's checkpoints) copy the source's `OffsetAndMetadata` when the offset is not
//! clamped, so an application that keeps a note with its offsets (Kafka Streams keeps its
//! partition time there) found it gone after failing over.
//!
//! Now an offset synced as the source has it keeps the source's metadata; a clamped offset (the
//! source ahead of the destination) carries none, as in the prototype; and metadata longer than
//! the destination's `offset.metadata.max.bytes` does not keep the offset from being synced
//! (OFFSET_METADATA_TOO_LARGE would otherwise skip the group on every sync): it goes without it.

use crate::common;

use common::mirror_groups::{commit_orders, committed_orders, mirrored_orders};

#[test]
fn synced_offsets_keep_the_source_commits_metadata() {
    let dir = tempfile::tempdir().unwrap();
    // A destination whose offset.metadata.max.bytes (10) is below the source's (4096).
    let (src, dst, mirror) = mirrored_orders(dir.path(), 10, |config| {
        config.group.offset_metadata_max_bytes = 10;
    });
    commit_orders(src.addr, "short", 4, "pt=1700");
    commit_orders(src.addr, "long", 6, &"n".repeat(40));
    commit_orders(src.addr, "ahead", 1_000, "far");

    let report = mirror.sync_groups().unwrap().unwrap();
    assert!(report.skipped_active.is_empty(), "{report:?}");
    assert_eq!(
        committed_orders(dst.addr, "short"),
        (4, "pt=1700".to_string()),
        "an offset synced as the source has it keeps its metadata"
    );
    assert_eq!(
        committed_orders(dst.addr, "long"),
        (6, String::new()),
        "metadata too large here: the offset is synced without it"
    );
    assert_eq!(
        committed_orders(dst.addr, "ahead"),
        (10, String::new()),
        "a clamped offset is the mirror's own: no metadata"
    );
    drop(mirror);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
