//! `mirrorlog dump`: our `kafka-dump-log.sh`.
//!
//! - **A `.log` file** (or any file without one of the names below): every batch, as Kafka-style
//!   text or one JSON object per batch, optionally with its records. On a corrupt batch it prints
//!   what it could, names the position and the reason, and fails. Zeros from the end of the last
//!   batch to the end of the file are not a problem: they are space written ahead of the log
//!   (`log.preallocate`) or preallocated for direct I/O, and the log ends where they start.
//! - **A partition directory**: every segment in base-offset order — its batches, then its offset,
//!   time and transaction index entries, each checked against the log — then the producer-state
//!   snapshots, the `leader-epoch-checkpoint` and `partition.metadata`.
//! - **A single `.index`, `.timeindex`, `.txnindex` or `.snapshot` file**, or a
//!   `leader-epoch-checkpoint` or `partition.metadata`: its entries, with the agreement checks
//!   when the segment's `.log` sits beside it.
//!
//! Nothing is ever opened writable: the `.log` through the pwrite backend in
//! [`OpenMode::Read`], index files mapped read-only, the rest read with `std::fs::read`.
//!
//! # Agreement checks
//!
//! The log is scanned once, streaming; every index entry is settled as the scan passes it, so
//! memory is bounded by the index files, not the log.
//!
//! - **Offset index** `(offset, position)`: a batch must start exactly at `position` and end at
//!   `offset` (Kafka maps a batch's *last* offset to the position where the batch *starts*). An
//!   entry at or past the log's size, inside a batch, or where no batch can be read, disagrees.
//!   Entries past the point where the scan stopped (a corrupt batch) are checked by reading the
//!   batch header at `position`. Without the log: offsets ≥ the base offset, and offsets and
//!   positions strictly increasing.
//! - **Time index** `(timestamp, offset)`: an entry records the segment's largest timestamp so
//!   far and the batch that carried it, so `offset` must be the last offset of a batch whose own
//!   max timestamp is `timestamp` (kafka-dump-log's check) *and* no earlier batch of the segment
//!   may have a larger one: the running maximum through that batch equals `timestamp`. Without
//!   the log: timestamps strictly increase, offsets never decrease and are ≥ the base offset.
//! - **Transaction index** entry: `last_offset` must be the offset of an ABORT control batch of
//!   `producer_id` in this segment; `first_offset ≤ last_offset`; last offsets are ≥ the base
//!   offset and strictly increase; the version byte is ≤ 0 (Kafka reads only byte 0 of the
//!   `int16` version).
//! - **Log order** (partition directory and single-index modes): every batch starts at or after
//!   the segment's base offset and after the previous batch's (or previous segment's) last
//!   offset.
//! - Index files are also run through the index crate's own `sanity_check`, and bytes after the
//!   valid entries of an untrimmed index must be zeros (unwritten slots).
//! - `leader-epoch-checkpoint`: epochs and start offsets strictly increase (Kafka's epoch cache
//!   drops entries that do not).

use anyhow::{Context, Result};
use mirrorlog_index::mmap_index::{IndexEntry, MmapIndex};
use mirrorlog_index::offset_index::OFFSET_ENTRY_SIZE;
use mirrorlog_index::time_index::TIME_ENTRY_SIZE;
use mirrorlog_index::txn_index::ABORTED_TXN_SIZE;
use mirrorlog_index::{
    AbortedTxn, EpochEntry, FilePosition, LeaderEpochCheckpoint, Offset, OffsetIndex,
    PartitionMetadata, ProducerId, ProducerSnapshotEntry, TimeIndex, TimestampMs,
    list_producer_snapshots, offset_from_file_name, read_producer_snapshot,
};
use mirrorlog_segment::batch::{ControlRecord, ControlRecordType, Record, RecordBatch};
use mirrorlog_segment::io::{OpenMode, PwriteStorage, Storage, StorageFile};
use mirrorlog_segment::scan::{FileBatches, ScanError};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The `--json` shapes, printed by `mirrorlog dump --help`.
pub const JSON_HELP: &str = "\
JSON (--json), one object per line:

A .log file: one object per batch with exactly these keys: position, base_offset, last_offset,
size_bytes, partition_leader_epoch, magic, crc, compression, timestamp_type, transactional,
control, producer_id, producer_epoch, base_sequence, record_count, max_timestamp, and with
--records a `records` array ({offset, timestamp, key, value, headers} for data batches,
{offset, timestamp, control_type, coordinator_epoch} for control batches).

A partition directory, or a single index, snapshot or checkpoint file: every object has a
\"type\" key first. In directory order:
  {type:segment, file, base_offset, size_bytes}              size_bytes null when the .log is missing
  {type:batch, <the .log batch keys above>}                  each batch of that segment
  {type:offset_index, file, base_offset, entry_count, size_bytes}
  {type:offset_index_entry, file, entry, offset, position, agrees, problems}
  {type:time_index, file, base_offset, entry_count, size_bytes}
  {type:time_index_entry, file, entry, timestamp, offset, agrees, problems}
  {type:txn_index, file, base_offset, entry_count, size_bytes}
  {type:txn_index_entry, file, entry, version, producer_id, first_offset, last_offset,
   last_stable_offset, agrees, problems}
  {type:producer_snapshot, file, offset, entry_count}
  {type:producer_snapshot_entry, file, producer_id, producer_epoch, last_sequence, last_offset,
   offset_delta, timestamp, coordinator_epoch, current_txn_first_offset}
  {type:leader_epoch_checkpoint, file, entry_count}
  {type:leader_epoch_entry, file, epoch, start_offset}
  {type:partition_metadata, file, version, topic_id}
  {type:other_file, file}                                    a file dump does not decode
`entry` is the 0-based slot; `agrees` is true or false after checking the entry against the
segment's .log, null when there is no .log to check against; `problems` lists why it disagrees.

Every problem (corrupt batch or file, disagreeing entry) also goes to stderr as
`<file>: <what, at which byte or position>`, and the exit status is then 1.";

/// What to print.
#[derive(Debug, Clone, Copy)]
pub struct DumpOptions {
    /// One JSON object per line instead of Kafka-style text lines.
    pub json: bool,
    /// Include each batch's records.
    pub records: bool,
}

/// One problem found while dumping: the file it is in, and what and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file the problem is in.
    pub file: PathBuf,
    /// What is wrong, naming the byte position (in `file` or in the log it refers to).
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

/// Problems found while dumping; the command exits non-zero when there is any.
#[derive(Debug, Default)]
pub struct DumpProblems(pub Vec<Problem>);

impl DumpProblems {
    fn push(&mut self, file: &Path, message: impl Into<String>) {
        self.0.push(Problem {
            file: file.to_path_buf(),
            message: message.into(),
        });
    }
}

/// Dumps `path`: a partition directory, or one file chosen by its name (see the module docs).
pub fn dump_path(path: &Path, opts: DumpOptions, out: &mut dyn Write) -> Result<DumpProblems> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.is_dir() {
        return dump_partition_dir(path, opts, out);
    }
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let mut p = Printer {
        out,
        opts,
        tagged: true,
    };
    let mut problems = DumpProblems::default();
    match path.extension().and_then(|e| e.to_str()) {
        Some(kind @ ("index" | "timeindex" | "txnindex")) => {
            let base_offset = offset_from_file_name(name).with_context(|| {
                format!(
                    "cannot tell the segment's base offset from the name of {}",
                    path.display()
                )
            })?;
            let mut files = SegmentFiles {
                log: Some(path.with_extension("log")).filter(|log| log.is_file()),
                ..SegmentFiles::default()
            };
            let slot = match kind {
                "index" => &mut files.index,
                "timeindex" => &mut files.time_index,
                _ => &mut files.txn_index,
            };
            *slot = Some(path.to_path_buf());
            dump_segment(
                &mut p,
                &mut problems,
                base_offset,
                &files,
                Mode::Single,
                None,
            )?;
        }
        Some("snapshot") => {
            dump_snapshot(&mut p, &mut problems, path, offset_from_file_name(name))?;
        }
        _ if name == LEADER_EPOCH_CHECKPOINT => {
            dump_leader_epoch_checkpoint(&mut p, &mut problems, path)?;
        }
        _ if name == PARTITION_METADATA => {
            dump_partition_metadata(&mut p, &mut problems, path)?;
        }
        // Anything else is read as a `.log`, as `dump FILE` always did.
        _ => return dump_log_file(path, opts, p.out),
    }
    Ok(problems)
}

/// Dumps a `.log` segment file to `out`; problems (corrupt batches, a torn tail) are returned,
/// after everything readable was printed.
pub fn dump_log_file(path: &Path, opts: DumpOptions, out: &mut dyn Write) -> Result<DumpProblems> {
    let file = open_read_only(path)?;
    let mut p = Printer {
        out,
        opts,
        tagged: false,
    };
    p.text(|| format!("Dumping {}", path.display()))?;
    let mut problems = DumpProblems::default();
    scan_log(&*file, path, Some(&mut p), &mut problems, &mut |_| {})?;
    Ok(problems)
}

const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
const PARTITION_METADATA: &str = "partition.metadata";

fn open_read_only(path: &Path) -> Result<Arc<dyn StorageFile>> {
    PwriteStorage::new()
        .open(path, OpenMode::Read)
        .with_context(|| format!("reading {}", path.display()))
}

/// Writes JSON or text lines.
struct Printer<'a> {
    out: &'a mut dyn Write,
    opts: DumpOptions,
    /// Whether batch objects carry `"type": "batch"` (everything but a plain `.log` dump, whose
    /// objects keep exactly their documented keys).
    tagged: bool,
}

impl Printer<'_> {
    /// One line: the JSON object in `--json` mode, the text otherwise.
    fn emit(&mut self, json: impl FnOnce() -> Value, text: impl FnOnce() -> String) -> Result<()> {
        if self.opts.json {
            writeln!(self.out, "{}", json())?;
        } else {
            writeln!(self.out, "{}", text())?;
        }
        Ok(())
    }

    /// A line printed in text mode only.
    fn text(&mut self, text: impl FnOnce() -> String) -> Result<()> {
        if !self.opts.json {
            writeln!(self.out, "{}", text())?;
        }
        Ok(())
    }

    /// Prints a batch (and its records with `--records`); its problems go to `problems`.
    fn batch(
        &mut self,
        batch: &RecordBatch,
        log: &Path,
        problems: &mut DumpProblems,
    ) -> Result<()> {
        // A segment may hold an older Kafka's legacy entries (magic 0/1), checked by their CRC-32.
        let validity = batch.validate_stored();
        let (records, record_error) = if self.opts.records {
            decode_records(batch)
        } else {
            (vec![], None)
        };
        if self.opts.json {
            let mut obj = Map::new();
            if self.tagged {
                obj.insert("type".into(), json!("batch"));
            }
            obj.extend(batch_json(batch));
            if self.opts.records {
                obj.insert(
                    "records".into(),
                    Value::Array(records.iter().map(|r| r.json(batch)).collect()),
                );
            }
            writeln!(self.out, "{}", Value::Object(obj))?;
        } else {
            writeln!(self.out, "{}", batch_text(batch, validity.is_ok()))?;
            for r in &records {
                writeln!(self.out, "{}", r.text(batch))?;
            }
        }
        if let Err(e) = validity {
            problems.push(
                log,
                format!("corrupt batch at position {}: {e}", batch.position()),
            );
        }
        if let Some(e) = record_error {
            problems.push(
                log,
                format!("corrupt batch at position {}: {e}", batch.position()),
            );
        }
        Ok(())
    }
}

/// How much of a `.log` a scan read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LogExtent {
    /// The file's length.
    size_bytes: u64,
    /// The position after the last batch framed: the scan stopped here (at the end of the file,
    /// or at a batch it could not frame or read).
    scanned_to: u64,
    /// The last offset of the last batch framed.
    last_offset: Option<Offset>,
}

/// Scans every batch of `file` (frame only: a batch with a bad CRC is still printed and
/// flagged, as kafka-dump-log does; a batch that cannot be framed ends the scan), printing each
/// with `printer` and handing it to `observe`.
fn scan_log(
    file: &dyn StorageFile,
    path: &Path,
    mut printer: Option<&mut Printer>,
    problems: &mut DumpProblems,
    observe: &mut dyn FnMut(&RecordBatch),
) -> Result<LogExtent> {
    let size_bytes = file
        .len()
        .with_context(|| format!("reading {}", path.display()))?;
    let mut batches = FileBatches::new(file, 0, size_bytes).verify(false);
    let mut last_offset = None;
    let mut next_position = 0;
    let mut stopped_by = None;
    for item in batches.by_ref() {
        let batch = match item {
            Ok(b) => b,
            Err(ScanError::Batch(e)) => {
                stopped_by = Some(format!("corrupt batch at position {}: {e}", e.position()));
                break;
            }
            Err(ScanError::Io(e)) => {
                problems.push(
                    path,
                    format!("cannot read the batch at position {next_position}: {e}"),
                );
                return Ok(LogExtent {
                    size_bytes,
                    scanned_to: batches.position(),
                    last_offset,
                });
            }
        };
        if let Some(p) = printer.as_deref_mut() {
            p.batch(&batch, path, problems)?;
        }
        observe(&batch);
        last_offset = Some(batch.last_offset());
        next_position = batch.position() + batch.size_bytes() as u64;
    }
    if stopped_by.is_none()
        && let Some(t) = batches.truncated_tail()
    {
        stopped_by = Some(match t.needed {
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
    if let Some(problem) = stopped_by {
        // Zeros from the end of the last batch to the end of the file are space written ahead
        // of the log (`log.preallocate`) or preallocated (direct I/O), never a batch: the log
        // ends cleanly there, as recovery decides.
        let zeros = first_non_zero_byte(path, next_position, size_bytes)
            .with_context(|| format!("reading {}", path.display()))?
            .is_none();
        if !zeros {
            problems.push(path, problem);
            return Ok(LogExtent {
                size_bytes,
                scanned_to: batches.position(),
                last_offset,
            });
        }
        return Ok(LogExtent {
            size_bytes: next_position,
            scanned_to: next_position,
            last_offset,
        });
    }
    Ok(LogExtent {
        size_bytes,
        scanned_to: batches.position(),
        last_offset,
    })
}

/// The batch starting at `position`, read on its own: `Ok(None)` when only part of one is there.
fn batch_at(
    file: &dyn StorageFile,
    position: u64,
    size_bytes: u64,
) -> Result<Option<BatchInfo>, String> {
    let mut batches = FileBatches::new(file, position, size_bytes)
        .verify(false)
        .chunk_bytes(4096);
    match batches.next() {
        Some(Ok(b)) => Ok(Some(BatchInfo::of(&b))),
        Some(Err(e)) => Err(e.to_string()),
        None => Ok(None),
    }
}

// ------------------------------------------------------------------------------------------------
// Agreement checks

/// What the agreement checks need to know of one batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct BatchInfo {
    position: u64,
    size_bytes: u64,
    base_offset: Offset,
    last_offset: Offset,
    max_timestamp: TimestampMs,
    producer_id: ProducerId,
    /// A control batch whose record is an ABORT marker.
    abort_marker: bool,
}

impl BatchInfo {
    fn of(b: &RecordBatch) -> BatchInfo {
        BatchInfo {
            position: b.position(),
            size_bytes: b.size_bytes() as u64,
            base_offset: b.base_offset(),
            last_offset: b.last_offset(),
            max_timestamp: b.max_timestamp(),
            producer_id: b.producer_id(),
            abort_marker: matches!(
                b.control_record(),
                Ok(Some(ControlRecord {
                    kind: ControlRecordType::Abort,
                    ..
                }))
            ),
        }
    }

    /// The offsets the batch holds, as a range that is never inverted (a corrupt header may
    /// have a negative last offset delta).
    fn offsets(&self) -> std::ops::RangeInclusive<Offset> {
        self.base_offset..=self.last_offset.max(self.base_offset)
    }

    fn describe(&self) -> String {
        format!(
            "the batch at position {} (offsets {}..={})",
            self.position, self.base_offset, self.last_offset
        )
    }
}

/// One index entry's agreement with the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Verdict {
    /// Compared against the log (false while, or when, there is no log to compare with).
    checked: bool,
    /// Why the entry disagrees; empty when it agrees.
    problems: Vec<String>,
}

impl Verdict {
    /// `Some(false)` with any problem, `Some(true)` when checked against the log and fine,
    /// `None` when there was nothing to check against.
    fn agrees(&self) -> Option<bool> {
        if !self.problems.is_empty() {
            Some(false)
        } else if self.checked {
            Some(true)
        } else {
            None
        }
    }

    fn text(&self) -> String {
        match self.agrees() {
            None => String::new(),
            Some(true) => " agrees: true".into(),
            Some(false) => format!(" agrees: false ({})", self.problems.join("; ")),
        }
    }
}

/// Offset-index entries and their verdicts. See the module docs for the rule.
#[derive(Debug)]
struct OffsetIndexCheck {
    entries: Vec<(Offset, FilePosition)>,
    verdicts: Vec<Verdict>,
    /// Entry indexes by the position they name.
    by_position: BTreeMap<u64, Vec<usize>>,
}

impl OffsetIndexCheck {
    /// Takes the entries in file order and runs the checks that need no log.
    fn new(base_offset: Offset, entries: Vec<(Offset, FilePosition)>) -> Self {
        let mut verdicts = vec![Verdict::default(); entries.len()];
        let mut by_position = BTreeMap::<u64, Vec<usize>>::new();
        let mut previous: Option<(Offset, FilePosition)> = None;
        for (i, &(offset, position)) in entries.iter().enumerate() {
            let v = &mut verdicts[i].problems;
            if offset < base_offset {
                v.push(format!(
                    "offset {offset} is below the segment's base offset {base_offset}"
                ));
            }
            if let Some((o, p)) = previous {
                if offset <= o {
                    v.push(format!(
                        "offset {offset} does not increase past the previous entry's {o}"
                    ));
                }
                if position <= p {
                    v.push(format!(
                        "position {position} does not increase past the previous entry's {p}"
                    ));
                }
            }
            previous = Some((offset, position));
            by_position.entry(position.as_u64()).or_default().push(i);
        }
        OffsetIndexCheck {
            entries,
            verdicts,
            by_position,
        }
    }

    /// Settles the entries naming a position inside `b`.
    fn observe(&mut self, b: &BatchInfo) {
        let end = b.position.saturating_add(b.size_bytes.max(1));
        for (&position, indexes) in self.by_position.range(b.position..end) {
            for &i in indexes {
                let v = &mut self.verdicts[i];
                if v.checked {
                    continue;
                }
                v.checked = true;
                let offset = self.entries[i].0;
                if position != b.position {
                    v.problems.push(format!(
                        "position {position} is inside {}, not at the start of a batch",
                        b.describe()
                    ));
                } else if offset != b.last_offset {
                    v.problems.push(format!(
                        "the batch at position {position} ends at offset {}, not {offset}",
                        b.last_offset
                    ));
                }
            }
        }
    }

    /// Settles the entries the scan did not reach, reading the batch at their position.
    fn finish(
        &mut self,
        log: LogExtent,
        read_at: &mut dyn FnMut(u64) -> Result<Option<BatchInfo>, String>,
    ) {
        for (i, v) in self.verdicts.iter_mut().enumerate() {
            if v.checked {
                continue;
            }
            v.checked = true;
            let (offset, position) = self.entries[i];
            let position = position.as_u64();
            if position >= log.size_bytes {
                v.problems.push(format!(
                    "position {position} is past the end of the log ({} bytes)",
                    log.size_bytes
                ));
                continue;
            }
            match read_at(position) {
                Ok(Some(b)) if b.last_offset == offset => {}
                Ok(Some(b)) => v.problems.push(format!(
                    "the batch at position {position} ends at offset {}, not {offset}",
                    b.last_offset
                )),
                Ok(None) => v.problems.push(format!(
                    "only part of a batch is at position {position} (the log is {} bytes)",
                    log.size_bytes
                )),
                Err(e) => v
                    .problems
                    .push(format!("no batch can be read at position {position}: {e}")),
            }
        }
    }
}

/// Time-index entries and their verdicts. See the module docs for the rule.
#[derive(Debug)]
struct TimeIndexCheck {
    entries: Vec<(TimestampMs, Offset)>,
    verdicts: Vec<Verdict>,
    /// Entry indexes by the offset they name.
    by_offset: BTreeMap<Offset, Vec<usize>>,
    /// The largest batch max timestamp of the segment so far.
    max_timestamp: TimestampMs,
}

impl TimeIndexCheck {
    /// Takes the entries in file order and runs the checks that need no log.
    fn new(base_offset: Offset, entries: Vec<(TimestampMs, Offset)>) -> Self {
        let mut verdicts = vec![Verdict::default(); entries.len()];
        let mut by_offset = BTreeMap::<Offset, Vec<usize>>::new();
        let mut previous: Option<(TimestampMs, Offset)> = None;
        for (i, &(timestamp, offset)) in entries.iter().enumerate() {
            let v = &mut verdicts[i].problems;
            if offset < base_offset {
                v.push(format!(
                    "offset {offset} is below the segment's base offset {base_offset}"
                ));
            }
            if let Some((t, o)) = previous {
                if timestamp <= t {
                    v.push(format!(
                        "timestamp {timestamp} does not increase past the previous entry's {t}"
                    ));
                }
                if offset < o {
                    v.push(format!(
                        "offset {offset} is below the previous entry's offset {o}"
                    ));
                }
            }
            previous = Some((timestamp, offset));
            by_offset.entry(offset).or_default().push(i);
        }
        TimeIndexCheck {
            entries,
            verdicts,
            by_offset,
            max_timestamp: TimestampMs::NONE,
        }
    }

    /// Settles the entries naming an offset inside `b`; batches come in log order.
    fn observe(&mut self, b: &BatchInfo) {
        self.max_timestamp = self.max_timestamp.max(b.max_timestamp);
        for (&offset, indexes) in self.by_offset.range(b.offsets()) {
            for &i in indexes {
                let v = &mut self.verdicts[i];
                if v.checked {
                    continue;
                }
                v.checked = true;
                let timestamp = self.entries[i].0;
                if offset != b.last_offset {
                    v.problems.push(format!(
                        "offset {offset} is inside {}; an entry names a batch's last offset",
                        b.describe()
                    ));
                    continue;
                }
                if b.max_timestamp != timestamp {
                    v.problems.push(format!(
                        "the batch ending at offset {offset} (position {}) has max timestamp {}, \
                         not {timestamp}",
                        b.position, b.max_timestamp
                    ));
                }
                if self.max_timestamp != timestamp {
                    v.problems.push(format!(
                        "the largest timestamp in the segment up to offset {offset} is {}, \
                         not {timestamp}",
                        self.max_timestamp
                    ));
                }
            }
        }
    }

    /// Settles the entries naming offsets the scan did not reach.
    fn finish(&mut self, log: LogExtent) {
        for (i, v) in self.verdicts.iter_mut().enumerate() {
            if v.checked {
                continue;
            }
            v.checked = true;
            v.problems.push(unreached_offset(self.entries[i].1, log));
        }
    }
}

/// Why no batch of the scanned log holds `offset`.
fn unreached_offset(offset: Offset, log: LogExtent) -> String {
    if log.scanned_to < log.size_bytes {
        format!(
            "offset {offset} is not in the readable part of the log, which ends at position {}",
            log.scanned_to
        )
    } else {
        match log.last_offset {
            Some(last) => {
                format!("no batch in the log holds offset {offset} (its last offset is {last})")
            }
            None => format!("no batch in the log holds offset {offset} (the log is empty)"),
        }
    }
}

/// One transaction-index entry as read from the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TxnEntry {
    /// Byte 0 of the `int16` version, signed: the only part Kafka reads.
    version: i8,
    txn: AbortedTxn,
}

/// Decodes the whole entries of a `.txnindex` (a trailing partial entry is left out, as Kafka's
/// reader leaves it).
fn decode_txn_entries(bytes: &[u8]) -> Vec<TxnEntry> {
    let long = |e: &[u8], at: usize| i64::from_be_bytes(e[at..at + 8].try_into().expect("8 bytes"));
    bytes
        .chunks_exact(ABORTED_TXN_SIZE)
        .map(|e| TxnEntry {
            version: e[0] as i8,
            txn: AbortedTxn {
                producer_id: ProducerId(long(e, 2)),
                first_offset: Offset(long(e, 10)),
                last_offset: Offset(long(e, 18)),
                last_stable_offset: Offset(long(e, 26)),
            },
        })
        .collect()
}

/// Transaction-index entries and their verdicts. See the module docs for the rule.
#[derive(Debug)]
struct TxnIndexCheck {
    entries: Vec<TxnEntry>,
    verdicts: Vec<Verdict>,
    /// Entry indexes by their last offset (the ABORT marker's offset).
    by_last_offset: BTreeMap<Offset, Vec<usize>>,
}

impl TxnIndexCheck {
    /// Takes the entries in file order and runs the checks that need no log.
    fn new(base_offset: Offset, entries: Vec<TxnEntry>) -> Self {
        let mut verdicts = vec![Verdict::default(); entries.len()];
        let mut by_last_offset = BTreeMap::<Offset, Vec<usize>>::new();
        let mut previous: Option<Offset> = None;
        for (i, e) in entries.iter().enumerate() {
            let v = &mut verdicts[i].problems;
            let (first, last) = (e.txn.first_offset, e.txn.last_offset);
            if e.version > 0 {
                v.push(format!(
                    "unsupported version {} (Kafka reads only version 0)",
                    e.version
                ));
            }
            if last < base_offset {
                v.push(format!(
                    "last offset {last} is below the segment's base offset {base_offset}"
                ));
            }
            if first > last {
                v.push(format!(
                    "first offset {first} is above the last offset {last}"
                ));
            }
            if let Some(p) = previous
                && last <= p
            {
                v.push(format!(
                    "last offset {last} does not increase past the previous entry's {p}"
                ));
            }
            previous = Some(last);
            by_last_offset.entry(last).or_default().push(i);
        }
        TxnIndexCheck {
            entries,
            verdicts,
            by_last_offset,
        }
    }

    /// Settles the entries whose last offset is inside `b`.
    fn observe(&mut self, b: &BatchInfo) {
        for (&offset, indexes) in self.by_last_offset.range(b.offsets()) {
            for &i in indexes {
                let v = &mut self.verdicts[i];
                if v.checked {
                    continue;
                }
                v.checked = true;
                let producer = self.entries[i].txn.producer_id;
                if !b.abort_marker {
                    v.problems.push(format!(
                        "offset {offset} is in {}, which is not an ABORT marker",
                        b.describe()
                    ));
                } else if b.producer_id != producer {
                    v.problems.push(format!(
                        "the ABORT marker at offset {offset} (position {}) is producer {}'s, \
                         not producer {producer}'s",
                        b.position, b.producer_id
                    ));
                }
            }
        }
    }

    /// Settles the entries whose marker the scan did not reach.
    fn finish(&mut self, log: LogExtent) {
        for (i, v) in self.verdicts.iter_mut().enumerate() {
            if v.checked {
                continue;
            }
            v.checked = true;
            v.problems
                .push(unreached_offset(self.entries[i].txn.last_offset, log));
        }
    }
}

/// Batch order along a segment (and across segments in a directory).
#[derive(Debug)]
struct LogOrder {
    base_offset: Offset,
    /// The last offset of the previous batch, or of the previous segment before the first.
    previous_last: Option<Offset>,
    first: bool,
    problems: Vec<String>,
}

impl LogOrder {
    fn new(base_offset: Offset, previous_segment_last: Option<Offset>) -> Self {
        LogOrder {
            base_offset,
            previous_last: previous_segment_last,
            first: true,
            problems: Vec::new(),
        }
    }

    fn observe(&mut self, b: &BatchInfo) {
        if b.base_offset < self.base_offset {
            self.problems.push(format!(
                "the batch at position {} has base offset {}, below the segment's base offset {}",
                b.position, b.base_offset, self.base_offset
            ));
        }
        if let Some(previous) = self.previous_last
            && b.base_offset <= previous
        {
            self.problems.push(format!(
                "the batch at position {} starts at offset {}, not after the {} last offset \
                 {previous}",
                b.position,
                b.base_offset,
                if self.first {
                    "previous segment's"
                } else {
                    "previous batch's"
                }
            ));
        }
        self.first = false;
        self.previous_last = Some(b.last_offset);
    }
}

// ------------------------------------------------------------------------------------------------
// Segments and partition directories

/// The files of one segment (any of them may be missing).
#[derive(Debug, Default, Clone)]
struct SegmentFiles {
    log: Option<PathBuf>,
    index: Option<PathBuf>,
    time_index: Option<PathBuf>,
    txn_index: Option<PathBuf>,
}

/// Whether a segment is dumped as part of a partition directory or for one index file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Print the log's batches; note missing index files; a missing log is a problem.
    Dir,
    /// Print only the index file given; use the log (if any) for the checks.
    Single,
}

/// An index file read for dumping.
#[derive(Debug)]
struct IndexFile {
    path: PathBuf,
    size_bytes: u64,
}

/// Opens an offset or time index read-only and collects its entries (in file order), reporting
/// what its sanity check finds and any non-zero byte after its valid entries. `None` when it
/// cannot be opened.
fn load_index<E: IndexEntry, T>(
    path: &Path,
    base_offset: Offset,
    problems: &mut DumpProblems,
    entry: impl Fn(&MmapIndex<E>, usize) -> Option<T>,
) -> Option<(IndexFile, Vec<T>)> {
    // No maximum size applies to a file that is only read: with the largest one, a file whose
    // last slot is written counts every slot, and an untrimmed one counts its written prefix.
    let index = match MmapIndex::<E>::open(path, base_offset, u64::MAX, false) {
        Ok(index) => index,
        Err(e) => {
            problems.push(path, index_error(&e));
            return None;
        }
    };
    if let Err(e) = index.sanity_check() {
        problems.push(path, index_error(&e));
    }
    let whole_slots_end = (index.max_entries() * E::SIZE) as u64;
    match first_non_zero_byte(path, index.valid_size_bytes(), whole_slots_end) {
        Ok(None) => {}
        Ok(Some(at)) => problems.push(
            path,
            format!(
                "byte {at} is not zero, yet it lies after the {} valid entries, where only \
                 unwritten (all-zero) slots belong",
                index.entries()
            ),
        ),
        Err(e) => problems.push(path, format!("cannot read the unwritten slots: {e}")),
    }
    let file = IndexFile {
        path: path.to_path_buf(),
        size_bytes: index.file_size_bytes(),
    };
    let entries = (0..index.entries())
        .filter_map(|i| entry(&index, i))
        .collect();
    Some((file, entries))
}

/// The position of the first non-zero byte of `path` in `[from, to)`, read in bounded chunks.
fn first_non_zero_byte(path: &Path, from: u64, to: u64) -> io::Result<Option<u64>> {
    if from >= to {
        return Ok(None);
    }
    let file = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut at = from;
    while at < to {
        let n = (to - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)?;
        if let Some(i) = buf[..n].iter().position(|&b| b != 0) {
            return Ok(Some(at + i as u64));
        }
        at += n as u64;
    }
    Ok(None)
}

/// An index-crate error as a message for a problem line, which already names the file.
fn index_error(e: &mirrorlog_index::Error) -> String {
    match e {
        mirrorlog_index::Error::Corrupt {
            position, reason, ..
        } => format!("corrupt at byte {position}: {reason}"),
        other => format!("{other:#}"),
    }
}

/// Reads a `.txnindex` and reports a trailing partial entry. Read plainly with `std::fs::read`:
/// `TransactionIndex::open` opens its file for appending, and dump never opens anything writable.
fn load_txn_index(path: &Path, problems: &mut DumpProblems) -> Option<(IndexFile, Vec<TxnEntry>)> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => {
            problems.push(path, format!("cannot read: {e}"));
            return None;
        }
    };
    let partial = bytes.len() % ABORTED_TXN_SIZE;
    if partial != 0 {
        problems.push(
            path,
            format!(
                "corrupt at byte {}: the last {partial} bytes are not a whole \
                 {ABORTED_TXN_SIZE}-byte entry",
                bytes.len() - partial
            ),
        );
    }
    let file = IndexFile {
        path: path.to_path_buf(),
        size_bytes: bytes.len() as u64,
    };
    Some((file, decode_txn_entries(&bytes)))
}

/// Dumps one segment: in [`Mode::Dir`] a header and its log's batches, then its index files,
/// each entry checked against the log when there is one. Returns the log's last offset, if it
/// has batches.
fn dump_segment(
    p: &mut Printer,
    problems: &mut DumpProblems,
    base_offset: Offset,
    files: &SegmentFiles,
    mode: Mode,
    previous_segment_last: Option<Offset>,
) -> Result<Option<Offset>> {
    let mut offset_index = files
        .index
        .as_deref()
        .and_then(|path| load_index(path, base_offset, problems, |i: &OffsetIndex, n| i.entry(n)))
        .map(|(file, entries)| (file, OffsetIndexCheck::new(base_offset, entries)));
    let mut time_index = files
        .time_index
        .as_deref()
        .and_then(|path| load_index(path, base_offset, problems, |i: &TimeIndex, n| i.entry(n)))
        .map(|(file, entries)| (file, TimeIndexCheck::new(base_offset, entries)));
    let mut txn_index = files
        .txn_index
        .as_deref()
        .and_then(|path| load_txn_index(path, problems))
        .map(|(file, entries)| (file, TxnIndexCheck::new(base_offset, entries)));

    let log = files
        .log
        .as_ref()
        .and_then(|path| match open_read_only(path) {
            Ok(file) => Some((path, file)),
            Err(e) => {
                problems.push(path, format!("{e:#}"));
                None
            }
        });
    if mode == Mode::Dir {
        let log_path = match &files.log {
            Some(path) => path.clone(),
            None => {
                let any = [&files.index, &files.time_index, &files.txn_index]
                    .into_iter()
                    .flatten()
                    .next()
                    .expect("a listed segment has at least one file");
                let expected = any.with_extension("log");
                problems.push(
                    &expected,
                    format!(
                        "missing: segment {base_offset} has index files but no log (Kafka \
                         deletes such orphan indexes on load)"
                    ),
                );
                expected
            }
        };
        let size = log.as_ref().and_then(|(_, file)| file.len().ok());
        p.emit(
            || {
                json!({
                    "type": "segment",
                    "file": log_path.display().to_string(),
                    "base_offset": base_offset.get(),
                    "size_bytes": size,
                })
            },
            || format!("Dumping {}", log_path.display()),
        )?;
    }

    let mut last_offset = None;
    if let Some((path, file)) = &log {
        let mut order = LogOrder::new(base_offset, previous_segment_last);
        let mut observe = |batch: &RecordBatch| {
            let info = BatchInfo::of(batch);
            order.observe(&info);
            if let Some((_, c)) = offset_index.as_mut() {
                c.observe(&info);
            }
            if let Some((_, c)) = time_index.as_mut() {
                c.observe(&info);
            }
            if let Some((_, c)) = txn_index.as_mut() {
                c.observe(&info);
            }
        };
        let printer = (mode == Mode::Dir).then_some(&mut *p);
        let extent = scan_log(&**file, path, printer, problems, &mut observe)?;
        for message in order.problems {
            problems.push(path, message);
        }
        if let Some((_, c)) = offset_index.as_mut() {
            c.finish(extent, &mut |position| {
                batch_at(&**file, position, extent.size_bytes)
            });
        }
        if let Some((_, c)) = time_index.as_mut() {
            c.finish(extent);
        }
        if let Some((_, c)) = txn_index.as_mut() {
            c.finish(extent);
        }
        last_offset = extent.last_offset;
    }

    // Kafka rebuilds a missing offset or time index on load: a note, not a problem. An absent
    // transaction index is the normal case (no aborted transaction in the segment).
    let note_missing =
        |p: &mut Printer, file: &Option<PathBuf>, extension: &str, what: &str| match &files.log {
            Some(log) if mode == Mode::Dir && file.is_none() => p.text(|| {
                let expected = log.with_extension(extension);
                format!(
                    "No {what} {} (Kafka rebuilds it on load)",
                    expected.display()
                )
            }),
            _ => Ok(()),
        };
    note_missing(p, &files.index, "index", "offset index")?;
    if let Some((file, check)) = &offset_index {
        print_offset_index(p, problems, file, base_offset, check)?;
    }
    note_missing(p, &files.time_index, "timeindex", "time index")?;
    if let Some((file, check)) = &time_index {
        print_time_index(p, problems, file, base_offset, check)?;
    }
    if let Some((file, check)) = &txn_index {
        print_txn_index(p, problems, file, base_offset, check)?;
    }
    Ok(last_offset)
}

fn print_offset_index(
    p: &mut Printer,
    problems: &mut DumpProblems,
    file: &IndexFile,
    base_offset: Offset,
    check: &OffsetIndexCheck,
) -> Result<()> {
    print_index_header(
        p,
        file,
        base_offset,
        check.entries.len(),
        "offset_index",
        "offset index",
    )?;
    for (i, (&(offset, position), v)) in check.entries.iter().zip(&check.verdicts).enumerate() {
        p.emit(
            || {
                json!({
                    "type": "offset_index_entry",
                    "file": file.path.display().to_string(),
                    "entry": i,
                    "offset": offset.get(),
                    "position": position.get(),
                    "agrees": v.agrees(),
                    "problems": v.problems,
                })
            },
            || format!("offset: {offset} position: {position}{}", v.text()),
        )?;
        report(
            problems,
            &file.path,
            "offset index",
            i * OFFSET_ENTRY_SIZE,
            i,
            v,
            || format!("offset {offset}, position {position}"),
        );
    }
    Ok(())
}

fn print_time_index(
    p: &mut Printer,
    problems: &mut DumpProblems,
    file: &IndexFile,
    base_offset: Offset,
    check: &TimeIndexCheck,
) -> Result<()> {
    print_index_header(
        p,
        file,
        base_offset,
        check.entries.len(),
        "time_index",
        "time index",
    )?;
    for (i, (&(timestamp, offset), v)) in check.entries.iter().zip(&check.verdicts).enumerate() {
        p.emit(
            || {
                json!({
                    "type": "time_index_entry",
                    "file": file.path.display().to_string(),
                    "entry": i,
                    "timestamp": timestamp.get(),
                    "offset": offset.get(),
                    "agrees": v.agrees(),
                    "problems": v.problems,
                })
            },
            || format!("timestamp: {timestamp} offset: {offset}{}", v.text()),
        )?;
        report(
            problems,
            &file.path,
            "time index",
            i * TIME_ENTRY_SIZE,
            i,
            v,
            || format!("timestamp {timestamp}, offset {offset}"),
        );
    }
    Ok(())
}

fn print_txn_index(
    p: &mut Printer,
    problems: &mut DumpProblems,
    file: &IndexFile,
    base_offset: Offset,
    check: &TxnIndexCheck,
) -> Result<()> {
    let what = "transaction index";
    print_index_header(p, file, base_offset, check.entries.len(), "txn_index", what)?;
    for (i, (e, v)) in check.entries.iter().zip(&check.verdicts).enumerate() {
        let t = e.txn;
        p.emit(
            || {
                json!({
                    "type": "txn_index_entry",
                    "file": file.path.display().to_string(),
                    "entry": i,
                    "version": e.version,
                    "producer_id": t.producer_id.get(),
                    "first_offset": t.first_offset.get(),
                    "last_offset": t.last_offset.get(),
                    "last_stable_offset": t.last_stable_offset.get(),
                    "agrees": v.agrees(),
                    "problems": v.problems,
                })
            },
            || {
                format!(
                    "version: {} producerId: {} firstOffset: {} lastOffset: {} \
                     lastStableOffset: {}{}",
                    e.version,
                    t.producer_id,
                    t.first_offset,
                    t.last_offset,
                    t.last_stable_offset,
                    v.text()
                )
            },
        )?;
        report(
            problems,
            &file.path,
            what,
            i * ABORTED_TXN_SIZE,
            i,
            v,
            || format!("producer {}, last offset {}", t.producer_id, t.last_offset),
        );
    }
    Ok(())
}

fn print_index_header(
    p: &mut Printer,
    file: &IndexFile,
    base_offset: Offset,
    entry_count: usize,
    kind: &str,
    what: &str,
) -> Result<()> {
    p.emit(
        || {
            json!({
                "type": kind,
                "file": file.path.display().to_string(),
                "base_offset": base_offset.get(),
                "entry_count": entry_count,
                "size_bytes": file.size_bytes,
            })
        },
        || {
            format!(
                "Dumping {}: {what}, base offset {base_offset}, {}, {} bytes",
                file.path.display(),
                count(entry_count, "entry", "entries"),
                file.size_bytes
            )
        },
    )
}

/// Reports each reason index entry `i` (at byte `at` of its file) disagrees.
fn report(
    problems: &mut DumpProblems,
    path: &Path,
    what: &str,
    at: usize,
    i: usize,
    v: &Verdict,
    describe: impl Fn() -> String,
) {
    for reason in &v.problems {
        problems.push(
            path,
            format!("{what} entry {i} at byte {at} ({}): {reason}", describe()),
        );
    }
}

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// The files of a partition directory, classified.
#[derive(Debug, Default)]
struct PartitionListing {
    segments: BTreeMap<Offset, SegmentFiles>,
    snapshots: Vec<(Offset, PathBuf)>,
    leader_epoch_checkpoint: Option<PathBuf>,
    partition_metadata: Option<PathBuf>,
    /// Everything dump does not decode (`quorum-state`, `*.deleted`, `*.swap`, …).
    others: Vec<PathBuf>,
}

fn list_partition_dir(dir: &Path) -> Result<PartitionListing> {
    let mut listing = PartitionListing {
        snapshots: list_producer_snapshots(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .into_iter()
            .map(|s| (s.offset, s.path))
            .collect(),
        ..PartitionListing::default()
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        names.push(
            entry
                .with_context(|| format!("listing {}", dir.display()))?
                .path(),
        );
    }
    names.sort();
    for path in names {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let offset = offset_from_file_name(name);
        let extension = name.split_once('.').map_or("", |(_, e)| e);
        if !path.is_file() {
            listing.others.push(path);
            continue;
        }
        match (offset, extension) {
            (Some(o), "log") => listing.segments.entry(o).or_default().log = Some(path),
            (Some(o), "index") => listing.segments.entry(o).or_default().index = Some(path),
            (Some(o), "timeindex") => {
                listing.segments.entry(o).or_default().time_index = Some(path)
            }
            (Some(o), "txnindex") => listing.segments.entry(o).or_default().txn_index = Some(path),
            (Some(_), "snapshot") => {} // listed by list_producer_snapshots
            _ if name == LEADER_EPOCH_CHECKPOINT => listing.leader_epoch_checkpoint = Some(path),
            _ if name == PARTITION_METADATA => listing.partition_metadata = Some(path),
            _ => listing.others.push(path),
        }
    }
    Ok(listing)
}

/// Dumps a Kafka partition directory; see the module docs for the order and the checks.
pub fn dump_partition_dir(
    dir: &Path,
    opts: DumpOptions,
    out: &mut dyn Write,
) -> Result<DumpProblems> {
    let listing = list_partition_dir(dir)?;
    let mut p = Printer {
        out,
        opts,
        tagged: true,
    };
    let mut problems = DumpProblems::default();
    let mut previous_last = None;
    for (&base_offset, files) in &listing.segments {
        let last = dump_segment(
            &mut p,
            &mut problems,
            base_offset,
            files,
            Mode::Dir,
            previous_last,
        )?;
        previous_last = last.or(previous_last);
    }
    for (offset, path) in &listing.snapshots {
        dump_snapshot(&mut p, &mut problems, path, Some(*offset))?;
    }
    if let Some(path) = &listing.leader_epoch_checkpoint {
        dump_leader_epoch_checkpoint(&mut p, &mut problems, path)?;
    }
    if let Some(path) = &listing.partition_metadata {
        dump_partition_metadata(&mut p, &mut problems, path)?;
    }
    for path in &listing.others {
        p.emit(
            || json!({"type": "other_file", "file": path.display().to_string()}),
            || {
                format!(
                    "Skipping {}: not a file mirrorlog dump decodes",
                    path.display()
                )
            },
        )?;
    }
    Ok(problems)
}

fn dump_snapshot(
    p: &mut Printer,
    problems: &mut DumpProblems,
    path: &Path,
    offset: Option<Offset>,
) -> Result<()> {
    let entries = match read_producer_snapshot(path) {
        Ok(entries) => entries,
        Err(e) => {
            problems.push(path, index_error(&e));
            return Ok(());
        }
    };
    p.emit(
        || {
            json!({
                "type": "producer_snapshot",
                "file": path.display().to_string(),
                "offset": offset.map(Offset::get),
                "entry_count": entries.len(),
            })
        },
        || {
            format!(
                "Dumping {}: producer snapshot at offset {}, {}",
                path.display(),
                offset.map_or("unknown".to_string(), |o| o.to_string()),
                count(entries.len(), "entry", "entries")
            )
        },
    )?;
    for e in &entries {
        let ProducerSnapshotEntry {
            producer_id,
            producer_epoch,
            last_sequence,
            last_offset,
            offset_delta,
            timestamp,
            coordinator_epoch,
            current_txn_first_offset,
        } = *e;
        p.emit(
            || {
                json!({
                    "type": "producer_snapshot_entry",
                    "file": path.display().to_string(),
                    "producer_id": producer_id.get(),
                    "producer_epoch": producer_epoch.get(),
                    "last_sequence": last_sequence.get(),
                    "last_offset": last_offset.get(),
                    "offset_delta": offset_delta,
                    "timestamp": timestamp.get(),
                    "coordinator_epoch": coordinator_epoch.get(),
                    "current_txn_first_offset": current_txn_first_offset.map(Offset::get),
                })
            },
            || {
                format!(
                    "producerId: {producer_id} producerEpoch: {producer_epoch} lastSequence: \
                     {last_sequence} lastOffset: {last_offset} offsetDelta: {offset_delta} \
                     timestamp: {timestamp} coordinatorEpoch: {coordinator_epoch} \
                     currentTxnFirstOffset: {}",
                    current_txn_first_offset.map_or("none".to_string(), |o| o.to_string())
                )
            },
        )?;
    }
    Ok(())
}

/// Why the leader-epoch entry `i` is out of order, if it is (epochs and start offsets strictly
/// increase; neither is negative).
fn epoch_entry_problems(entries: &[EpochEntry], i: usize) -> Vec<String> {
    let e = entries[i];
    let mut out = Vec::new();
    if e.epoch.get() < 0 || e.start_offset.get() < 0 {
        out.push(format!(
            "epoch {} and start offset {} must not be negative",
            e.epoch, e.start_offset
        ));
    }
    if let Some(previous) = i.checked_sub(1).map(|j| entries[j]) {
        if e.epoch <= previous.epoch {
            out.push(format!(
                "epoch {} does not increase past the previous entry's {}",
                e.epoch, previous.epoch
            ));
        }
        if e.start_offset <= previous.start_offset {
            out.push(format!(
                "start offset {} does not increase past the previous entry's {}",
                e.start_offset, previous.start_offset
            ));
        }
    }
    out
}

fn dump_leader_epoch_checkpoint(
    p: &mut Printer,
    problems: &mut DumpProblems,
    path: &Path,
) -> Result<()> {
    let entries = match LeaderEpochCheckpoint::new(path).read() {
        Ok(entries) => entries,
        Err(e) => {
            problems.push(path, index_error(&e));
            return Ok(());
        }
    };
    p.emit(
        || {
            json!({
                "type": "leader_epoch_checkpoint",
                "file": path.display().to_string(),
                "entry_count": entries.len(),
            })
        },
        || {
            format!(
                "Dumping {}: leader-epoch checkpoint, {}",
                path.display(),
                count(entries.len(), "entry", "entries")
            )
        },
    )?;
    for (i, e) in entries.iter().enumerate() {
        p.emit(
            || {
                json!({
                    "type": "leader_epoch_entry",
                    "file": path.display().to_string(),
                    "epoch": e.epoch.get(),
                    "start_offset": e.start_offset.get(),
                })
            },
            || format!("epoch: {} startOffset: {}", e.epoch, e.start_offset),
        )?;
        for reason in epoch_entry_problems(&entries, i) {
            // Line 1 is the version, line 2 the count.
            problems.push(path, format!("entry {i} (line {}): {reason}", i + 3));
        }
    }
    Ok(())
}

/// Dumps `partition.metadata` (nothing when it does not exist).
fn dump_partition_metadata(
    p: &mut Printer,
    problems: &mut DumpProblems,
    path: &Path,
) -> Result<()> {
    match PartitionMetadata::read(path) {
        Ok(Some(m)) => p.emit(
            || {
                json!({
                    "type": "partition_metadata",
                    "file": path.display().to_string(),
                    "version": 0,
                    "topic_id": m.topic_id.to_string(),
                })
            },
            || {
                format!(
                    "Dumping {}: partition metadata\nversion: 0 topicId: {}",
                    path.display(),
                    m.topic_id
                )
            },
        ),
        Ok(None) => Ok(()),
        Err(e) => {
            problems.push(path, index_error(&e));
            Ok(())
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Batches and records

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
    if batch.magic() == mirrorlog_segment::batch::legacy::MAGIC_V0 {
        return "NoTimestampType";
    }
    match batch.timestamp_type() {
        mirrorlog_segment::TimestampType::CreateTime => "CreateTime",
        mirrorlog_segment::TimestampType::LogAppendTime => "LogAppendTime",
    }
}

/// The JSON header object with exactly the documented keys, in order.
fn batch_json(b: &RecordBatch) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("position".into(), json!(b.position()));
    // A compressed legacy wrapper's is its first inner record's, as Kafka's `baseOffset`
    // decompresses it; its own offset when it does not decompress.
    let base = b.decompressed_base_offset().unwrap_or(b.base_offset());
    m.insert("base_offset".into(), json!(base.get()));
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
    let ts_type = if b.magic() == mirrorlog_segment::batch::legacy::MAGIC_V0 {
        "no_timestamp_type"
    } else {
        b.timestamp_type().name()
    };
    m.insert("timestamp_type".into(), json!(ts_type));
    m.insert("transactional".into(), json!(b.is_transactional()));
    m.insert("control".into(), json!(b.is_control()));
    m.insert("producer_id".into(), json!(b.producer_id().get()));
    m.insert("producer_epoch".into(), json!(b.producer_epoch().get()));
    m.insert("base_sequence".into(), json!(b.base_sequence().get()));
    let count = if b.is_legacy() {
        // Known once decompressed (Kafka's `countOrNull` is null for a legacy wrapper).
        b.records()
            .map_or(b.records_count(), |r| r.remaining() as i32)
    } else {
        b.records_count()
    };
    m.insert("record_count".into(), json!(count));
    m.insert("max_timestamp".into(), json!(b.max_timestamp().get()));
    m
}

fn batch_text(b: &RecordBatch, valid: bool) -> String {
    let tail = format!(
        "position: {} {}: {} size: {} magic: {} compresscodec: {} crc: {} isvalid: {}",
        b.position(),
        ts_label(b),
        b.max_timestamp(),
        b.size_bytes(),
        b.magic(),
        b.compression().map_or("unknown", |c| c.name()),
        b.crc(),
        valid,
    );
    if b.is_legacy() {
        // Kafka's `DumpLogSegments` prints a legacy entry by its (last) offset alone.
        return format!("offset: {} {tail}", b.last_offset());
    }
    format!(
        "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} producerId: {} \
         producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} isControl: {} \
         deleteHorizonMs: {} {tail}",
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

    /// A data batch of producer -1 at `position`, `size` bytes long.
    fn batch(position: u64, size: u64, base: i64, last: i64, max_ts: i64) -> BatchInfo {
        BatchInfo {
            position,
            size_bytes: size,
            base_offset: Offset(base),
            last_offset: Offset(last),
            max_timestamp: TimestampMs(max_ts),
            producer_id: ProducerId(-1),
            abort_marker: false,
        }
    }

    fn whole_log(size_bytes: u64, last: i64) -> LogExtent {
        LogExtent {
            size_bytes,
            scanned_to: size_bytes,
            last_offset: Some(Offset(last)),
        }
    }

    fn no_reads(position: u64) -> Result<Option<BatchInfo>, String> {
        panic!("unexpected read at {position}")
    }

    fn offset_entries(entries: &[(i64, u32)]) -> Vec<(Offset, FilePosition)> {
        entries
            .iter()
            .map(|&(o, p)| (Offset(o), FilePosition(p)))
            .collect()
    }

    #[test]
    fn verdicts_are_unknown_until_checked_and_false_with_any_problem() {
        let mut v = Verdict::default();
        assert_eq!((v.agrees(), v.text()), (None, String::new()));
        v.checked = true;
        assert_eq!(
            (v.agrees(), v.text().as_str()),
            (Some(true), " agrees: true")
        );
        v.problems = vec!["a".into(), "b".into()];
        assert_eq!(
            (v.agrees(), v.text().as_str()),
            (Some(false), " agrees: false (a; b)")
        );
        let unchecked = Verdict {
            checked: false,
            problems: vec!["order".into()],
        };
        assert_eq!(unchecked.agrees(), Some(false));
    }

    #[test]
    fn an_offset_index_entry_agrees_when_its_batch_starts_at_its_position_and_ends_at_its_offset() {
        let mut c = OffsetIndexCheck::new(Offset(100), offset_entries(&[(104, 0), (120, 300)]));
        c.observe(&batch(0, 300, 100, 104, 1));
        c.observe(&batch(300, 50, 105, 120, 2));
        c.finish(whole_log(350, 120), &mut no_reads);
        assert_eq!(c.verdicts[0].agrees(), Some(true), "{:?}", c.verdicts);
        assert_eq!(c.verdicts[1].agrees(), Some(true), "{:?}", c.verdicts);
    }

    #[test]
    fn an_offset_index_entry_inside_a_batch_or_naming_another_offset_disagrees() {
        // Kafka's rule maps the LAST offset: the first offset of the batch is wrong.
        let mut c = OffsetIndexCheck::new(Offset(0), offset_entries(&[(5, 100), (12, 150)]));
        c.observe(&batch(0, 100, 0, 4, 1));
        c.observe(&batch(100, 100, 5, 9, 1));
        c.observe(&batch(200, 100, 10, 14, 1));
        c.finish(whole_log(300, 14), &mut no_reads);
        assert_eq!(
            c.verdicts[0].problems,
            ["the batch at position 100 ends at offset 9, not 5"]
        );
        assert_eq!(
            c.verdicts[1].problems,
            [
                "position 150 is inside the batch at position 100 (offsets 5..=9), not at the \
                 start of a batch"
            ]
        );
    }

    #[test]
    fn offset_index_entries_the_scan_did_not_reach_are_read_at_their_position() {
        let entries = offset_entries(&[(9, 100), (14, 200), (19, 300), (24, 400), (30, 500)]);
        let mut c = OffsetIndexCheck::new(Offset(0), entries);
        c.observe(&batch(0, 100, 0, 4, 1));
        // The scan stopped at 100 (a corrupt batch); the file is 480 bytes.
        let log = LogExtent {
            size_bytes: 480,
            scanned_to: 100,
            last_offset: Some(Offset(4)),
        };
        let mut reads = vec![];
        c.finish(log, &mut |position| {
            reads.push(position);
            match position {
                100 => Err("batch at position 100: crc mismatch".into()),
                200 => Ok(Some(batch(200, 100, 10, 14, 1))),
                300 => Ok(Some(batch(300, 100, 15, 18, 1))),
                400 => Ok(None),
                _ => panic!("read at {position}"),
            }
        });
        assert_eq!(reads, [100, 200, 300, 400], "nothing read past the end");
        let problems: Vec<_> = c.verdicts.iter().map(|v| v.problems.clone()).collect();
        assert_eq!(
            problems,
            [
                vec!["no batch can be read at position 100: batch at position 100: crc mismatch"],
                vec![],
                vec!["the batch at position 300 ends at offset 18, not 19"],
                vec!["only part of a batch is at position 400 (the log is 480 bytes)"],
                vec!["position 500 is past the end of the log (480 bytes)"],
            ]
        );
        assert_eq!(c.verdicts[1].agrees(), Some(true));
    }

    #[test]
    fn offset_index_order_is_checked_without_a_log() {
        let entries = offset_entries(&[(5, 0), (10, 100), (10, 200), (12, 150), (3, 300)]);
        let c = OffsetIndexCheck::new(Offset(4), entries);
        let agrees: Vec<_> = c.verdicts.iter().map(Verdict::agrees).collect();
        assert_eq!(agrees, [None, None, Some(false), Some(false), Some(false)]);
        assert_eq!(
            c.verdicts[2].problems,
            ["offset 10 does not increase past the previous entry's 10"]
        );
        assert_eq!(
            c.verdicts[3].problems,
            ["position 150 does not increase past the previous entry's 200"]
        );
        assert_eq!(
            c.verdicts[4].problems,
            [
                "offset 3 is below the segment's base offset 4",
                "offset 3 does not increase past the previous entry's 12",
            ]
        );
    }

    fn time_check(entries: &[(i64, i64)], batches: &[BatchInfo]) -> TimeIndexCheck {
        let entries = entries
            .iter()
            .map(|&(t, o)| (TimestampMs(t), Offset(o)))
            .collect();
        let mut c = TimeIndexCheck::new(Offset(0), entries);
        for b in batches {
            c.observe(b);
        }
        let size_bytes = batches.iter().map(|b| b.size_bytes).sum();
        c.finish(LogExtent {
            size_bytes,
            scanned_to: size_bytes,
            last_offset: batches.last().map(|b| b.last_offset),
        });
        c
    }

    #[test]
    fn a_time_index_entry_agrees_when_its_batch_set_the_running_maximum() {
        let batches = [
            batch(0, 100, 0, 4, 100),
            batch(100, 100, 5, 9, 90),
            batch(200, 100, 10, 12, 150),
        ];
        let c = time_check(&[(100, 4), (150, 12)], &batches);
        assert_eq!(c.verdicts[0].agrees(), Some(true), "{:?}", c.verdicts);
        assert_eq!(c.verdicts[1].agrees(), Some(true), "{:?}", c.verdicts);

        // Right maximum, but not the batch that carried it (kafka-dump-log's own check).
        let c = time_check(&[(100, 9)], &batches);
        assert_eq!(
            c.verdicts[0].problems,
            ["the batch ending at offset 9 (position 100) has max timestamp 90, not 100"]
        );
        // The batch's own maximum, but an earlier batch had a larger one.
        let c = time_check(&[(90, 9)], &batches);
        assert_eq!(
            c.verdicts[0].problems,
            ["the largest timestamp in the segment up to offset 9 is 100, not 90"]
        );
        // Larger than anything in the log so far.
        let c = time_check(&[(120, 4)], &batches);
        assert_eq!(c.verdicts[0].problems.len(), 2, "{:?}", c.verdicts);
    }

    #[test]
    fn a_time_index_entry_must_name_a_batchs_last_offset_that_the_log_holds() {
        let batches = [batch(0, 100, 0, 4, 100), batch(100, 100, 5, 9, 110)];
        let c = time_check(&[(100, 3), (200, 20)], &batches);
        assert_eq!(
            c.verdicts[0].problems,
            [
                "offset 3 is inside the batch at position 0 (offsets 0..=4); an entry names a \
                 batch's last offset"
            ]
        );
        assert_eq!(
            c.verdicts[1].problems,
            ["no batch in the log holds offset 20 (its last offset is 9)"]
        );
        let c = time_check(&[(100, 3)], &[]);
        assert_eq!(
            c.verdicts[0].problems,
            ["no batch in the log holds offset 3 (the log is empty)"]
        );
        // A scan that stopped early says so.
        let mut c = TimeIndexCheck::new(Offset(0), vec![(TimestampMs(5), Offset(7))]);
        c.observe(&batch(0, 100, 0, 4, 1));
        c.finish(LogExtent {
            size_bytes: 500,
            scanned_to: 100,
            last_offset: Some(Offset(4)),
        });
        assert_eq!(
            c.verdicts[0].problems,
            ["offset 7 is not in the readable part of the log, which ends at position 100"]
        );
    }

    #[test]
    fn time_index_order_is_checked_without_a_log() {
        let entries = [(10, 5), (10, 6), (20, 4), (30, -1)]
            .iter()
            .map(|&(t, o)| (TimestampMs(t), Offset(o)))
            .collect();
        let c = TimeIndexCheck::new(Offset(0), entries);
        let problems: Vec<_> = c.verdicts.iter().map(|v| v.problems.clone()).collect();
        assert_eq!(
            problems,
            [
                vec![],
                vec!["timestamp 10 does not increase past the previous entry's 10"],
                vec!["offset 4 is below the previous entry's offset 6"],
                vec![
                    "offset -1 is below the segment's base offset 0",
                    "offset -1 is below the previous entry's offset 4",
                ],
            ]
        );
    }

    fn txn(version: i8, producer: i64, first: i64, last: i64) -> TxnEntry {
        TxnEntry {
            version,
            txn: AbortedTxn {
                producer_id: ProducerId(producer),
                first_offset: Offset(first),
                last_offset: Offset(last),
                last_stable_offset: Offset(first),
            },
        }
    }

    fn marker(position: u64, offset: i64, producer: i64, abort: bool) -> BatchInfo {
        BatchInfo {
            producer_id: ProducerId(producer),
            abort_marker: abort,
            ..batch(position, 70, offset, offset, 1)
        }
    }

    #[test]
    fn a_transaction_index_entry_must_name_an_abort_marker_of_its_producer() {
        let entries = vec![
            txn(0, 7, 0, 3),  // the abort of producer 7
            txn(0, 7, 4, 5),  // a commit marker
            txn(0, 8, 4, 6),  // producer 7's abort
            txn(0, 7, 4, 8),  // inside a data batch
            txn(0, 7, 4, 20), // not in the log
        ];
        let mut c = TxnIndexCheck::new(Offset(0), entries);
        for b in [
            batch(0, 100, 0, 2, 1),
            marker(100, 3, 7, true),
            marker(170, 5, 7, false),
            marker(240, 6, 7, true),
            batch(310, 100, 7, 9, 1),
        ] {
            c.observe(&b);
        }
        c.finish(whole_log(410, 9));
        let problems: Vec<_> = c.verdicts.iter().map(|v| v.problems.clone()).collect();
        assert_eq!(
            problems,
            [
                vec![],
                vec![
                    "offset 5 is in the batch at position 170 (offsets 5..=5), which is not an \
                     ABORT marker"
                ],
                vec![
                    "the ABORT marker at offset 6 (position 240) is producer 7's, not producer \
                     8's"
                ],
                vec![
                    "offset 8 is in the batch at position 310 (offsets 7..=9), which is not an \
                     ABORT marker"
                ],
                vec!["no batch in the log holds offset 20 (its last offset is 9)"],
            ]
        );
        assert_eq!(c.verdicts[0].agrees(), Some(true));
    }

    #[test]
    fn transaction_index_order_and_version_are_checked_without_a_log() {
        let entries = vec![
            txn(1, 7, 10, 12),
            txn(-1, 7, 11, 12),
            txn(0, 7, 15, 14),
            txn(0, 7, 1, 2),
        ];
        let c = TxnIndexCheck::new(Offset(10), entries);
        let problems: Vec<_> = c.verdicts.iter().map(|v| v.problems.clone()).collect();
        assert_eq!(
            problems,
            [
                vec!["unsupported version 1 (Kafka reads only version 0)"],
                vec!["last offset 12 does not increase past the previous entry's 12"],
                vec!["first offset 15 is above the last offset 14"],
                vec![
                    "last offset 2 is below the segment's base offset 10",
                    "last offset 2 does not increase past the previous entry's 14",
                ],
            ]
        );
    }

    #[test]
    fn transaction_entries_decode_like_kafka_reading_only_the_first_version_byte() {
        let encoded = |version: [u8; 2], t: AbortedTxn| {
            let mut bytes = t.encode().to_vec();
            bytes[..2].copy_from_slice(&version);
            bytes
        };
        let t = txn(0, 42, 100, 105).txn;
        let mut bytes = encoded([0, 0], t);
        bytes.extend(encoded([0, 1], t)); // Kafka reads byte 0 only: version 0
        bytes.extend(encoded([1, 0], t));
        bytes.extend(encoded([0xff, 0], t)); // negative: Kafka accepts it
        bytes.extend([9; 20]); // a torn append
        let decoded = decode_txn_entries(&bytes);
        let versions: Vec<i8> = decoded.iter().map(|e| e.version).collect();
        assert_eq!(versions, [0, 0, 1, -1]);
        assert!(decoded.iter().all(|e| e.txn == t));
    }

    #[test]
    fn log_order_flags_batches_below_the_base_or_overlapping_what_came_before() {
        let mut order = LogOrder::new(Offset(10), Some(Offset(12)));
        order.observe(&batch(0, 100, 8, 13, 1));
        order.observe(&batch(100, 100, 14, 20, 1));
        order.observe(&batch(200, 100, 20, 25, 1));
        assert_eq!(
            order.problems,
            [
                "the batch at position 0 has base offset 8, below the segment's base offset 10",
                "the batch at position 0 starts at offset 8, not after the previous segment's \
                 last offset 12",
                "the batch at position 200 starts at offset 20, not after the previous batch's \
                 last offset 20",
            ]
        );
        let mut fine = LogOrder::new(Offset(0), None);
        fine.observe(&batch(0, 100, 0, 4, 1));
        fine.observe(&batch(100, 100, 5, 5, 1));
        assert!(fine.problems.is_empty());
    }

    #[test]
    fn leader_epochs_and_their_start_offsets_must_increase() {
        let entries: Vec<EpochEntry> = [(0, 0), (2, 10), (2, 15), (3, 15), (-1, 20)]
            .iter()
            .map(|&(epoch, offset)| EpochEntry {
                epoch: mirrorlog_index::LeaderEpoch(epoch),
                start_offset: Offset(offset),
            })
            .collect();
        let problems: Vec<_> = (0..entries.len())
            .map(|i| epoch_entry_problems(&entries, i))
            .collect();
        assert_eq!(
            problems,
            [
                vec![],
                vec![],
                vec!["epoch 2 does not increase past the previous entry's 2"],
                vec!["start offset 15 does not increase past the previous entry's 15"],
                vec![
                    "epoch -1 and start offset 20 must not be negative",
                    "epoch -1 does not increase past the previous entry's 3",
                ],
            ]
        );
    }

    #[test]
    fn non_zero_bytes_hidden_after_an_untrimmed_indexs_entries_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.index");
        let mut bytes = vec![];
        for (offset, position) in [(1i32, 10i32), (0, 0), (3, 30), (0, 0)] {
            bytes.extend(offset.to_be_bytes());
            bytes.extend(position.to_be_bytes());
        }
        std::fs::write(&path, &bytes).unwrap();
        let mut problems = DumpProblems::default();
        let (file, entries) = load_index(&path, Offset(0), &mut problems, |i: &OffsetIndex, n| {
            i.entry(n)
        })
        .unwrap();
        // The untrimmed file (its last slot is zeros) holds the entries before the first zero slot.
        assert_eq!(entries, [(Offset(1), FilePosition(10))]);
        assert_eq!(file.size_bytes, 32);
        assert_eq!(problems.0.len(), 1, "{problems:?}");
        assert_eq!(problems.0[0].file, path);
        assert!(
            problems.0[0].message.starts_with("byte 19 is not zero"),
            "{problems:?}"
        );

        // A clean untrimmed file (a written prefix, then zeros) has nothing to report.
        std::fs::write(&path, &bytes[..8]).unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(64)
            .unwrap();
        let mut problems = DumpProblems::default();
        let (file, entries) = load_index(&path, Offset(0), &mut problems, |i: &OffsetIndex, n| {
            i.entry(n)
        })
        .unwrap();
        assert_eq!(entries, [(Offset(1), FilePosition(10))]);
        assert_eq!(file.size_bytes, 64);
        assert!(problems.0.is_empty(), "{problems:?}");
    }
}
