//! Fuzzes the decoders of the whole-file partition metadata: producer-state snapshots
//! (`decode_producer_snapshot`), checkpoint text files (`leader-epoch-checkpoint` entries and the
//! log-dir offset checkpoints) and `partition.metadata` (with `TopicId` parsing). Whatever
//! decodes must encode back to something that decodes to the same value.
//!
//! No input may panic, hang or allocate without bound.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use mirrorlog_index::checkpoint::{CHECKPOINT_VERSION, decode_checkpoint, encode_checkpoint};
use mirrorlog_index::{
    EpochEntry, PartitionMetadata, PartitionOffset, TopicId, decode_producer_snapshot,
    encode_producer_snapshot,
};

fuzz_target!(|data: &[u8]| {
    let snapshot = Path::new("00000000000000000042.snapshot");
    if let Ok(entries) = decode_producer_snapshot(snapshot, data) {
        let bytes = encode_producer_snapshot(&entries);
        let again = decode_producer_snapshot(snapshot, &bytes).expect("re-encoded snapshot");
        assert_eq!(again, entries);
    }

    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let checkpoint = Path::new("leader-epoch-checkpoint");
    if let Ok(entries) = decode_checkpoint::<EpochEntry>(checkpoint, CHECKPOINT_VERSION, text) {
        let encoded = encode_checkpoint(CHECKPOINT_VERSION, &entries);
        let again = decode_checkpoint::<EpochEntry>(checkpoint, CHECKPOINT_VERSION, &encoded);
        assert_eq!(again.expect("re-encoded checkpoint"), entries);
    }
    let offsets = Path::new("recovery-point-offset-checkpoint");
    if let Ok(entries) = decode_checkpoint::<PartitionOffset>(offsets, CHECKPOINT_VERSION, text) {
        let encoded = encode_checkpoint(CHECKPOINT_VERSION, &entries);
        let again = decode_checkpoint::<PartitionOffset>(offsets, CHECKPOINT_VERSION, &encoded);
        assert_eq!(again.expect("re-encoded offset checkpoint"), entries);
    }

    let metadata = Path::new("partition.metadata");
    if let Ok(m) = PartitionMetadata::decode(metadata, text) {
        let again = PartitionMetadata::decode(metadata, &m.encode());
        assert_eq!(again.expect("re-encoded partition.metadata"), m);
    }
    if let Ok(id) = text.parse::<TopicId>() {
        assert_eq!(id.to_string().parse::<TopicId>(), Ok(id));
    }
});
