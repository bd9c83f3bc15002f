//! `mirrorlog dump`: our `kafka-dump-log.sh`. Prints every batch of a segment file, as text or as
//! one JSON object per batch, optionally with its records; on a corrupt batch it prints what it
//! could, names the position and the reason, and fails.

use anyhow::{Context, Result};
use bytes::Bytes;
use mirrorlog_segment::batch::{Batches, ControlRecord, Record, RecordBatch};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::Path;

/// What to print.
#[derive(Debug, Clone, Copy)]
pub struct DumpOptions {
    /// One JSON object per batch instead of Kafka-style text lines.
    pub json: bool,
    /// Include each batch's records.
    pub records: bool,
}

/// Problems found while dumping; the command exits non-zero when there is any.
#[derive(Debug, Default)]
pub struct DumpProblems(pub Vec<String>);

/// Dumps a `.log` segment file to `out`; problems (corrupt batches, a torn tail) are returned,
/// after everything readable was printed.
pub fn dump_log_file(path: &Path, opts: DumpOptions, out: &mut dyn Write) -> Result<DumpProblems> {
    let bytes =
        Bytes::from(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?);
    if !opts.json {
        writeln!(out, "Dumping {}", path.display())?;
    }
    dump_log_bytes(bytes, opts, out)
}

/// Dumps the batches in `bytes` (a segment's contents).
pub fn dump_log_bytes(
    bytes: Bytes,
    opts: DumpOptions,
    out: &mut dyn Write,
) -> Result<DumpProblems> {
    let mut problems = DumpProblems::default();
    // Frame only: a batch whose CRC or header is bad is still printed, flagged, and the dump goes
    // on, as kafka-dump-log does; a batch that cannot be framed ends the dump.
    let mut batches = Batches::new(bytes).verify(false);
    for item in batches.by_ref() {
        let batch = match item {
            Ok(b) => b,
            Err(e) => {
                problems
                    .0
                    .push(format!("corrupt batch at position {}: {e}", e.position()));
                break;
            }
        };
        let validity = batch.validate();
        let (records, record_error) = if opts.records {
            decode_records(&batch)
        } else {
            (vec![], None)
        };
        if opts.json {
            let mut obj = batch_json(&batch);
            if opts.records {
                obj.insert(
                    "records".into(),
                    Value::Array(records.iter().map(|r| r.json(&batch)).collect()),
                );
            }
            writeln!(out, "{}", Value::Object(obj))?;
        } else {
            writeln!(out, "{}", batch_text(&batch, validity.is_ok()))?;
            for r in &records {
                writeln!(out, "{}", r.text(&batch))?;
            }
        }
        if let Err(e) = validity {
            problems.0.push(format!(
                "corrupt batch at position {}: {e}",
                batch.position()
            ));
        }
        if let Some(e) = record_error {
            problems.0.push(format!(
                "corrupt batch at position {}: {e}",
                batch.position()
            ));
        }
    }
    if let Some(t) = batches.truncated_tail() {
        problems.0.push(match t.needed {
            Some(n) => format!(
                "truncated batch at position {}: {} of its {n} bytes present",
                t.position, t.available
            ),
            None => format!(
                "truncated batch at position {}: {} trailing bytes",
                t.position, t.available
            ),
        });
    }
    Ok(problems)
}

enum Decoded {
    Data(Record),
    Control(Record, Result<ControlRecord, String>),
}

fn decode_records(batch: &RecordBatch) -> (Vec<Decoded>, Option<String>) {
    let mut out = Vec::new();
    let iter = match batch.records() {
        Ok(it) => it,
        Err(e) => return (out, Some(e.to_string())),
    };
    for r in iter {
        match r {
            Ok(r) if batch.is_control() => {
                let c = ControlRecord::parse(&r);
                out.push(Decoded::Control(r, c));
            }
            Ok(r) => out.push(Decoded::Data(r)),
            Err(e) => return (out, Some(e.to_string())),
        }
    }
    (out, None)
}

impl Decoded {
    fn json(&self, _batch: &RecordBatch) -> Value {
        match self {
            Decoded::Data(r) => json!({
                "offset": r.offset.get(),
                "timestamp": r.timestamp.get(),
                "key": r.key.as_deref().map(render_bytes),
                "value": r.value.as_deref().map(render_bytes),
                "headers": r.headers.iter().map(|h| json!({
                    "key": render_bytes(&h.key),
                    "value": h.value.as_deref().map(render_bytes),
                })).collect::<Vec<_>>(),
            }),
            Decoded::Control(r, c) => json!({
                "offset": r.offset.get(),
                "timestamp": r.timestamp.get(),
                "control_type": c.as_ref().map_or("unknown", |c| c.kind.dump_name()),
                "coordinator_epoch": c.as_ref().ok().and_then(|c| c.end_txn).map(|m| m.coordinator_epoch),
            }),
        }
    }

    fn text(&self, batch: &RecordBatch) -> String {
        let ts_name = ts_label(batch);
        match self {
            Decoded::Data(r) => format!(
                "| offset: {} {ts_name}: {} keySize: {} valueSize: {} sequence: {} headerKeys: [{}] key: {} payload: {}",
                r.offset,
                r.timestamp,
                r.key.as_ref().map_or(-1, |k| k.len() as i64),
                r.value.as_ref().map_or(-1, |v| v.len() as i64),
                r.sequence,
                r.headers
                    .iter()
                    .map(|h| render_bytes(&h.key))
                    .collect::<Vec<_>>()
                    .join(","),
                r.key.as_deref().map_or("null".into(), render_bytes),
                r.value.as_deref().map_or("null".into(), render_bytes),
            ),
            Decoded::Control(r, c) => match c {
                Ok(c) => format!(
                    "| offset: {} {ts_name}: {} keySize: 4 valueSize: {} sequence: {} headerKeys: [] {}",
                    r.offset,
                    r.timestamp,
                    r.value.as_ref().map_or(-1, |v| v.len() as i64),
                    r.sequence,
                    match c.end_txn {
                        Some(m) => format!(
                            "endTxnMarker: {} coordinatorEpoch: {}",
                            c.kind.dump_name().to_uppercase(),
                            m.coordinator_epoch
                        ),
                        None => format!(
                            "controlType: {}({})",
                            c.kind.dump_name().to_uppercase(),
                            c.kind.id()
                        ),
                    }
                ),
                Err(e) => format!("| offset: {} corrupt control record: {e}", r.offset),
            },
        }
    }
}

fn ts_label(batch: &RecordBatch) -> &'static str {
    match batch.timestamp_type() {
        mirrorlog_segment::TimestampType::CreateTime => "CreateTime",
        mirrorlog_segment::TimestampType::LogAppendTime => "LogAppendTime",
    }
}

/// The JSON header object with exactly the documented keys, in order.
fn batch_json(b: &RecordBatch) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("position".into(), json!(b.position()));
    m.insert("base_offset".into(), json!(b.base_offset().get()));
    m.insert("last_offset".into(), json!(b.last_offset().get()));
    m.insert("size_bytes".into(), json!(b.size_bytes()));
    m.insert(
        "partition_leader_epoch".into(),
        json!(b.partition_leader_epoch().get()),
    );
    m.insert("magic".into(), json!(b.magic()));
    m.insert("crc".into(), json!(b.crc()));
    m.insert(
        "compression".into(),
        json!(
            b.compression()
                .map_or_else(|_| "unknown".to_string(), |c| c.name().to_string())
        ),
    );
    m.insert("timestamp_type".into(), json!(b.timestamp_type().name()));
    m.insert("transactional".into(), json!(b.is_transactional()));
    m.insert("control".into(), json!(b.is_control()));
    m.insert("producer_id".into(), json!(b.producer_id().get()));
    m.insert("producer_epoch".into(), json!(b.producer_epoch().get()));
    m.insert("base_sequence".into(), json!(b.base_sequence().get()));
    m.insert("record_count".into(), json!(b.records_count()));
    m.insert("max_timestamp".into(), json!(b.max_timestamp().get()));
    m
}

fn batch_text(b: &RecordBatch, valid: bool) -> String {
    format!(
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} \
         producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} \
         deleteHorizonMs: {} position: {} {}: {} size: {} magic: {} compresscodec: {} crc: {} isvalid: {}",
        b.base_offset(),
        b.last_offset(),
        b.records_count(),
        b.base_sequence(),
        b.last_sequence(),
        b.producer_id(),
        b.producer_epoch(),
        b.partition_leader_epoch(),
        b.is_transactional(),
        b.is_control(),
        b.delete_horizon()
            .map_or("none".to_string(), |t| t.to_string()),
        b.position(),
        ts_label(b),
        b.max_timestamp(),
        b.size_bytes(),
        b.magic(),
        b.compression().map_or("unknown", |c| c.name()),
        b.crc(),
        valid,
    )
}

/// Renders bytes for humans and for JSON: valid UTF-8 is kept as is; each byte at which no valid
/// UTF-8 sequence starts becomes the four characters `\xNN` (lowercase hex), and decoding resumes
/// at the next byte.
pub fn render_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_keeps_utf8_and_escapes_each_bad_byte() {
        assert_eq!(render_bytes(b"plain"), "plain");
        assert_eq!(render_bytes("héllo €".as_bytes()), "héllo €");
        assert_eq!(render_bytes(&[0x61, 0xff, 0x62]), "a\\xffb");
        // A truncated 3-byte sequence: each of its bytes is escaped on its own.
        assert_eq!(render_bytes(&[0xe2, 0x82, 0x41]), "\\xe2\\x82A");
        assert_eq!(render_bytes(&[]), "");
    }
}
