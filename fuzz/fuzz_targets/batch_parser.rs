//! Fuzzes everything that reads untrusted batch bytes: framing of concatenated batches (v2, and
//! the legacy v0/v1 entries segments and sources may hold), validation, record iteration through
//! every codec, control-record parsing and header stamping.
//! No input may panic, hang or allocate without bound.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mirrorlog_segment::batch::{BatchHeaderMut, Batches, ControlRecord, RecordBatch};

fuzz_target!(|data: &[u8]| {
    let buf = Bytes::copy_from_slice(data);
    // As a segment: frame only, so that batches with bad CRCs still reach the record decoder;
    // as a client's (v2 only) and as a segment or a source's answer (legacy v0/v1 entries too,
    // whose compressed wrappers nest messages).
    for legacy in [false, true] {
        for batch in Batches::new(buf.clone())
            .legacy(legacy)
            .verify(false)
            .take(64)
        {
            let Ok(batch) = batch else { break };
            let _ = batch.validate();
            let _ = batch.validate_stored();
            exercise(&batch);
        }
    }
    // As a single batch whose CRC is made valid: reaches every header and record check.
    let mut owned = data.to_vec();
    if let Ok(mut h) = BatchHeaderMut::new(&mut owned) {
        h.update_crc();
        if let Ok(batch) = RecordBatch::new(Bytes::from(owned)) {
            let _ = batch.validate();
            exercise(&batch);
        }
    }
});

fn exercise(batch: &RecordBatch) {
    if let Ok(records) = batch.records() {
        for r in records.take(10_000) {
            match r {
                Ok(r) if batch.is_control() => {
                    let _ = ControlRecord::parse(&r);
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    if let Ok(metas) = batch.record_metas() {
        for m in metas.take(10_000) {
            if m.is_err() {
                break;
            }
        }
    }
    let _ = batch.control_record();
}
