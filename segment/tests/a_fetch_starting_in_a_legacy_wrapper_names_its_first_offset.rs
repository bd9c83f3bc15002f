//! Scenario: a read starting inside a compressed legacy wrapper (magic 0 or 1, written by Apache
//! Kafka's own client library: `tests/fixtures/kafka-java-legacy/`) names the wrapper by its
//! first inner record's offset, as Kafka's `LogSegment.read` does (its `translateOffset` gives
//! the batch's `baseOffset`, which for a legacy wrapper decompresses it,
//! `AbstractLegacyRecordBatch.baseOffset`). It used to name the wrapper's own offset, its last
//! inner one. The bytes served are the same either way.

use mirrorlog_index::Offset;
use mirrorlog_segment::io::{PwriteStorage, Storage};
use mirrorlog_segment::segment::{ActiveSegment, SegmentConfig};
use std::path::PathBuf;
use std::sync::Arc;

const LOG: &str = "00000000000000000000.log";

/// Each entry of Kafka's view (`expected.txt`): (base offset, last offset, compressed).
fn kafka_entries() -> Vec<(i64, i64, bool)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kafka-java-legacy");
    std::fs::read_to_string(dir.join("expected.txt"))
        .unwrap()
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|f| f[0] == "batch")
        .map(|f| (f[4].parse().unwrap(), f[5].parse().unwrap(), f[7] != "none"))
        .collect()
}

#[test]
fn a_read_inside_a_legacy_wrapper_names_its_first_inner_offset() {
    let entries = kafka_entries();
    assert!(
        entries.iter().filter(|e| e.2 && e.0 < e.1).count() >= 4,
        "the fixture holds compressed v0 and v1 wrappers of several records"
    );
    let dir = tempfile::tempdir().unwrap();
    let fixture =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kafka-java-legacy");
    std::fs::copy(fixture.join(LOG), dir.path().join(LOG)).unwrap();
    let storage: Arc<dyn Storage> = Arc::new(PwriteStorage::new());
    let config = SegmentConfig {
        index_interval_bytes: 1,
        ..SegmentConfig::default()
    };
    let mut seg =
        ActiveSegment::open_for_recovery(storage.clone(), dir.path(), Offset(0), config, 0)
            .unwrap();
    seg.recover(|_, _| Ok(())).unwrap();
    let seg = seg.seal().unwrap();
    for &(base, last, compressed) in &entries {
        for offset in base..=last {
            let loc = seg.find_batch(Offset(offset)).unwrap().unwrap();
            // The header alone names the entry by its (last) offset, and says it is a wrapper.
            assert_eq!(loc.base_offset, Offset(last));
            assert_eq!(loc.legacy_wrapper, compressed, "offset {offset}");
            let d = seg
                .read(Offset(offset), 1 << 20, None, false)
                .unwrap()
                .unwrap();
            assert_eq!(d.first_batch_offset, Offset(base), "read from {offset}");
            assert_eq!(
                seg.read_batch(&loc)
                    .unwrap()
                    .decompressed_base_offset()
                    .unwrap(),
                Offset(base)
            );
        }
    }
}
