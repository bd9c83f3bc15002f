//! Scenario: `mirrorlog dump DIR` on partition directories written by a real Apache Kafka broker
//! (`shared/kafka-fixtures/kraft-combined-logs`: a user topic `foo-0` and `__cluster_metadata-0`)
//! prints every segment's batches, index entries (each checked against the log), producer
//! snapshots, leader-epoch checkpoint and topic id, in text and JSON; a copy with a flipped index
//! byte, a truncated log, a corrupt snapshot or a wrong transaction-index entry makes it exit
//! non-zero naming the file and position. Single index, snapshot and checkpoint files dump too.

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FOO_0: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/kafka-fixtures/kraft-combined-logs/foo-0"
);
const METADATA_0: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/kafka-fixtures/kraft-combined-logs/__cluster_metadata-0"
);
const SEGMENT: &str = "00000000000000000000";

fn dump(args: &[&str], path: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .arg("dump")
        .args(args)
        .arg(path)
        .output()
        .expect("run mirrorlog dump")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn json_lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn of_type<'a>(lines: &'a [Value], t: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == t).collect()
}

fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "dump failed: {}\n{}",
        stderr(out),
        stdout(out)
    );
    assert_eq!(stderr(out), "", "no problems reported");
}

fn assert_fails(out: &Output) -> String {
    assert_eq!(
        out.status.code(),
        Some(1),
        "dump must fail: {}",
        stdout(out)
    );
    stderr(out)
}

/// A writable copy of a fixture directory (the fixtures are read-only on disk).
fn copy_dir(from: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join(Path::new(from).file_name().unwrap());
    fs::create_dir(&dir).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let to = dir.join(entry.file_name());
        fs::write(&to, fs::read(entry.path()).unwrap()).unwrap();
    }
    (tmp, dir)
}

fn flip(path: &Path, at: usize, mask: u8) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= mask;
    fs::write(path, bytes).unwrap();
}

#[test]
fn foo_0_text_dump_shows_the_batch_every_index_the_snapshot_and_the_topic_id() {
    let out = dump(&["--records"], Path::new(FOO_0));
    assert_ok(&out);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in\n{text}"))
    };
    let batch = at("baseOffset: 0 lastOffset: 0 count: 1");
    assert!(lines[batch].contains("isvalid: true"), "{}", lines[batch]);
    let record = at("payload: Hello World!");
    assert!(lines[record].starts_with("| offset: 0 CreateTime: 1726045973899"));
    let index = at(&format!(
        "{SEGMENT}.index: offset index, base offset 0, 0 entries"
    ));
    let time_index = at(&format!(
        "{SEGMENT}.timeindex: time index, base offset 0, 1 entry"
    ));
    assert_eq!(
        lines[time_index + 1],
        "timestamp: 1726045973899 offset: 0 agrees: true"
    );
    let snapshot = at("00000000000000000001.snapshot: producer snapshot at offset 1, 1 entry");
    assert_eq!(
        lines[snapshot + 1],
        "producerId: 0 producerEpoch: 0 lastSequence: 0 lastOffset: 0 offsetDelta: 0 \
         timestamp: 1726045973899 coordinatorEpoch: -1 currentTxnFirstOffset: none"
    );
    let checkpoint = at("leader-epoch-checkpoint: leader-epoch checkpoint, 1 entry");
    assert_eq!(lines[checkpoint + 1], "epoch: 0 startOffset: 0");
    let metadata = at("version: 0 topicId: v9meXjI1RVKB-NSvF0GXDA");
    // Segment first (batch, then its indexes), then snapshot, checkpoint, metadata.
    assert!(batch < record && record < index && index < time_index);
    assert!(time_index < snapshot && snapshot < checkpoint && checkpoint < metadata);
}

#[test]
fn foo_0_json_dump_types_every_line_and_keeps_the_batch_object_of_a_log_dump() {
    let out = dump(&["--json", "--records"], Path::new(FOO_0));
    assert_ok(&out);
    let lines = json_lines(&out);
    let types: Vec<&str> = lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "segment",
            "batch",
            "offset_index",
            "time_index",
            "time_index_entry",
            "producer_snapshot",
            "producer_snapshot_entry",
            "leader_epoch_checkpoint",
            "leader_epoch_entry",
            "partition_metadata",
        ]
    );
    let segment = &lines[0];
    assert_eq!(segment["base_offset"], 0);
    assert_eq!(segment["size_bytes"], 80);
    assert!(
        segment["file"]
            .as_str()
            .unwrap()
            .ends_with("foo-0/00000000000000000000.log")
    );

    // The batch object is the `.log` dump's object, tagged.
    let batch = lines[1].as_object().unwrap();
    assert_eq!(batch["base_offset"], 0);
    assert_eq!(batch["last_offset"], 0);
    assert_eq!(batch["records"][0]["offset"], 0);
    assert_eq!(batch["records"][0]["value"], "Hello World!");
    let log_dump = dump(
        &["--json", "--records"],
        &Path::new(FOO_0).join(format!("{SEGMENT}.log")),
    );
    assert_ok(&log_dump);
    let log_batches = json_lines(&log_dump);
    assert_eq!(log_batches.len(), 1);
    assert!(
        log_batches[0].get("type").is_none(),
        "a .log dump stays untagged"
    );
    let mut untagged = batch.clone();
    untagged.shift_remove("type");
    assert_eq!(Value::Object(untagged), log_batches[0]);

    let offset_index = &lines[2];
    assert_eq!(
        offset_index["entry_count"], 0,
        "foo-0's offset index is empty"
    );
    assert_eq!(offset_index["size_bytes"], 0);
    let time_entry = &lines[4];
    assert_eq!(time_entry["timestamp"], 1726045973899_i64);
    assert_eq!(time_entry["offset"], 0);
    assert_eq!(time_entry["agrees"], true);
    assert_eq!(time_entry["problems"], serde_json::json!([]));
    assert_eq!(lines[5]["offset"], 1, "snapshot taken at offset 1");
    let producer = &lines[6];
    assert_eq!(producer["producer_id"], 0);
    assert_eq!(producer["producer_epoch"], 0);
    assert_eq!(producer["last_sequence"], 0);
    assert_eq!(producer["last_offset"], 0);
    assert_eq!(producer["timestamp"], 1726045973899_i64);
    assert_eq!(producer["coordinator_epoch"], -1);
    assert_eq!(producer["current_txn_first_offset"], Value::Null);
    assert_eq!(lines[8]["epoch"], 0);
    assert_eq!(lines[8]["start_offset"], 0);
    assert_eq!(lines[9]["version"], 0);
    assert_eq!(lines[9]["topic_id"], "v9meXjI1RVKB-NSvF0GXDA");
}

#[test]
fn cluster_metadata_index_entries_all_agree_with_the_log() {
    let out = dump(&["--json"], Path::new(METADATA_0));
    assert_ok(&out);
    let lines = json_lines(&out);
    let batches = of_type(&lines, "batch");
    assert!(batches.len() > 50, "every batch printed: {}", batches.len());
    assert_eq!(batches.last().unwrap()["last_offset"], 128);

    let offsets: Vec<(i64, i64, bool)> = of_type(&lines, "offset_index_entry")
        .iter()
        .map(|e| {
            (
                e["offset"].as_i64().unwrap(),
                e["position"].as_i64().unwrap(),
                e["agrees"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(offsets, [(57, 4154, true), (114, 8258, true)]);
    // Kafka's rule, checked against the printed batches too: the entry's position is where the
    // batch ending at its offset starts.
    for (offset, position, _) in &offsets {
        assert!(
            batches
                .iter()
                .any(|b| b["position"] == *position && b["last_offset"] == *offset),
            "no batch at {position} ending at {offset}"
        );
    }
    let times = of_type(&lines, "time_index_entry");
    assert_eq!(times.len(), 3);
    assert!(times.iter().all(|t| t["agrees"] == true), "{times:?}");
    assert_eq!(times[2]["offset"], 128);
    let snapshot = of_type(&lines, "producer_snapshot");
    assert_eq!(snapshot.len(), 1);
    assert_eq!(snapshot[0]["offset"], 129);
    assert_eq!(snapshot[0]["entry_count"], 0);
    assert_eq!(of_type(&lines, "leader_epoch_entry")[0]["epoch"], 1);
    assert_eq!(
        of_type(&lines, "partition_metadata")[0]["topic_id"],
        "AAAAAAAAAAAAAAAAAAAAAQ"
    );
    let others = of_type(&lines, "other_file");
    assert_eq!(others.len(), 1);
    assert!(
        others[0]["file"]
            .as_str()
            .unwrap()
            .ends_with("quorum-state")
    );

    let text = dump(&[], Path::new(METADATA_0));
    assert_ok(&text);
    let text = stdout(&text);
    assert_eq!(text.matches("agrees: true").count(), 5, "{text}");
    assert!(!text.contains("agrees: false"));
    assert!(text.contains("offset: 114 position: 8258 agrees: true"));
}

#[test]
fn a_flipped_index_byte_fails_naming_the_entry_and_what_the_log_holds() {
    let (_tmp, dir) = copy_dir(METADATA_0);
    let index = dir.join(format!("{SEGMENT}.index"));
    // Entry 1 is bytes 8..16: relative offset 0x72 (114) becomes 0x73 (115).
    flip(&index, 11, 0x01);
    let out = dump(&["--json"], &dir);
    let err = assert_fails(&out);
    assert!(
        err.contains(&format!(
            "{SEGMENT}.index: offset index entry 1 at byte 8 (offset 115, position 8258): \
             the batch at position 8258 ends at offset 114, not 115"
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "only that entry disagrees: {err}");
    let lines = json_lines(&out);
    let entries = of_type(&lines, "offset_index_entry");
    assert_eq!(entries.len(), 2, "everything is still printed");
    assert_eq!(entries[0]["agrees"], true);
    assert_eq!(entries[1]["agrees"], false);
    assert_eq!(entries[1]["problems"].as_array().unwrap().len(), 1);
    assert!(of_type(&lines, "partition_metadata").len() == 1);

    // Now point entry 1 far past the log instead.
    flip(&index, 11, 0x01);
    flip(&index, 12, 0x40);
    let out = dump(&[], &dir);
    let err = assert_fails(&out);
    assert!(
        err.contains("offset index entry 1 at byte 8")
            && err.contains("is past the end of the log (9333 bytes)"),
        "{err}"
    );
    assert!(stdout(&out).contains("agrees: false (position 1073750082 is past the end"));
}

#[test]
fn a_truncated_log_fails_naming_the_tail_and_the_index_entries_it_cut_off() {
    let (_tmp, dir) = copy_dir(METADATA_0);
    let log = dir.join(format!("{SEGMENT}.log"));
    let bytes = fs::read(&log).unwrap();
    fs::write(&log, &bytes[..8258 + 32]).unwrap(); // tear the batch at 8258 (offset 114)
    let out = dump(&["--json"], &dir);
    let err = assert_fails(&out);
    for needle in [
        &format!("{SEGMENT}.log: truncated batch at position 8258: 32 of its 72 bytes present"),
        &format!(
            "{SEGMENT}.index: offset index entry 1 at byte 8 (offset 114, position 8258): only \
             part of a batch is at position 8258"
        ),
        &format!("{SEGMENT}.timeindex: time index entry 1 at byte 12"),
        &format!(
            "{SEGMENT}.timeindex: time index entry 2 at byte 24 (timestamp 1726046001742, \
             offset 128): offset 128 is not in the readable part of the log, which ends at \
             position 8258"
        ),
    ] {
        assert!(
            err.contains(needle.as_str()),
            "{needle:?} missing from\n{err}"
        );
    }
    let lines = json_lines(&out);
    let batches = of_type(&lines, "batch");
    assert_eq!(
        batches.last().unwrap()["last_offset"],
        113,
        "every whole batch printed"
    );
    assert_eq!(of_type(&lines, "offset_index_entry")[0]["agrees"], true);
    let times = of_type(&lines, "time_index_entry");
    let agree: Vec<&Value> = times.iter().map(|t| &t["agrees"]).collect();
    assert_eq!(
        agree,
        [&Value::Bool(true), &Value::Bool(false), &Value::Bool(false)]
    );

    // Cut before the indexed batch's position: the entry now points past the log.
    fs::write(&log, &bytes[..5000]).unwrap();
    let err = assert_fails(&dump(&[], &dir));
    assert!(
        err.contains("position 8258 is past the end of the log (5000 bytes)"),
        "{err}"
    );
}

#[test]
fn single_index_snapshot_and_checkpoint_files_dump_their_entries() {
    // An index beside its log is checked against it.
    let out = dump(&[], &Path::new(FOO_0).join(format!("{SEGMENT}.timeindex")));
    assert_ok(&out);
    let text = stdout(&out);
    assert!(
        text.contains("time index, base offset 0, 1 entry"),
        "{text}"
    );
    assert!(text.contains("timestamp: 1726045973899 offset: 0 agrees: true"));
    assert!(
        !text.contains("baseOffset:"),
        "the log is read, not printed"
    );

    let out = dump(
        &["--json"],
        &Path::new(METADATA_0).join(format!("{SEGMENT}.index")),
    );
    assert_ok(&out);
    let lines = json_lines(&out);
    assert_eq!(lines[0]["type"], "offset_index");
    assert_eq!(lines[0]["entry_count"], 2);
    assert_eq!(lines.len(), 3);
    assert!(lines[1..].iter().all(|e| e["agrees"] == true));

    // Alone, an index is printed unchecked (agrees: null) and succeeds.
    let tmp = tempfile::tempdir().unwrap();
    let alone = tmp.path().join(format!("{SEGMENT}.index"));
    fs::copy(
        Path::new(METADATA_0).join(format!("{SEGMENT}.index")),
        &alone,
    )
    .unwrap();
    let out = dump(&["--json"], &alone);
    assert_ok(&out);
    let lines = json_lines(&out);
    assert_eq!(lines[2]["offset"], 114);
    assert_eq!(lines[2]["position"], 8258);
    assert_eq!(lines[2]["agrees"], Value::Null);
    let out = dump(&[], &alone);
    assert_ok(&out);
    assert!(
        stdout(&out)
            .lines()
            .any(|l| l == "offset: 57 position: 4154")
    );

    let out = dump(
        &["--json"],
        &Path::new(FOO_0).join("00000000000000000001.snapshot"),
    );
    assert_ok(&out);
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["offset"], 1);
    assert_eq!(lines[1]["producer_id"], 0);

    let out = dump(&[], &Path::new(FOO_0).join("leader-epoch-checkpoint"));
    assert_ok(&out);
    assert!(stdout(&out).contains("epoch: 0 startOffset: 0"));
    let out = dump(&["--json"], &Path::new(FOO_0).join("partition.metadata"));
    assert_ok(&out);
    assert_eq!(json_lines(&out)[0]["topic_id"], "v9meXjI1RVKB-NSvF0GXDA");
}

#[test]
fn a_corrupt_snapshot_fails_naming_the_crc() {
    let (_tmp, dir) = copy_dir(FOO_0);
    flip(&dir.join("00000000000000000001.snapshot"), 20, 0x01);
    let out = dump(&[], &dir);
    let err = assert_fails(&out);
    assert!(
        err.contains("00000000000000000001.snapshot: corrupt at byte 2: crc32c mismatch"),
        "{err}"
    );
    // Everything else is still printed.
    assert!(stdout(&out).contains("topicId: v9meXjI1RVKB-NSvF0GXDA"));
}

/// A transaction-index entry as Kafka writes it.
fn aborted_txn(producer_id: i64, first: i64, last: i64, last_stable: i64) -> Vec<u8> {
    let mut out = vec![0u8, 0];
    for v in [producer_id, first, last, last_stable] {
        out.extend_from_slice(&v.to_be_bytes());
    }
    out
}

#[test]
fn transaction_index_entries_must_name_an_abort_marker_of_their_producer() {
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kafka-java/00000000000000000000.log");
    let batches = json_lines(&dump(&["--json", "--records"], &golden));
    let marker = |kind: &str| {
        batches
            .iter()
            .find(|b| b["records"][0]["control_type"] == kind)
            .unwrap_or_else(|| panic!("the golden log has a {kind} marker"))
    };
    let (abort, commit) = (marker("abort"), marker("commit"));
    let producer = abort["producer_id"].as_i64().unwrap();
    let abort_offset = abort["base_offset"].as_i64().unwrap();
    let first = batches
        .iter()
        .find(|b| b["producer_id"] == producer && b["control"] == false)
        .unwrap()["base_offset"]
        .as_i64()
        .unwrap();

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    fs::create_dir(&dir).unwrap();
    fs::copy(&golden, dir.join(format!("{SEGMENT}.log"))).unwrap();
    let txn = dir.join(format!("{SEGMENT}.txnindex"));
    fs::write(&txn, aborted_txn(producer, first, abort_offset, first)).unwrap();
    let out = dump(&["--json"], &dir);
    assert_ok(&out);
    let lines = json_lines(&out);
    let entries = of_type(&lines, "txn_index_entry");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["version"], 0);
    assert_eq!(entries[0]["producer_id"], producer);
    assert_eq!(entries[0]["first_offset"], first);
    assert_eq!(entries[0]["last_offset"], abort_offset);
    assert_eq!(entries[0]["last_stable_offset"], first);
    assert_eq!(entries[0]["agrees"], true);
    let text = stdout(&dump(&[], &dir));
    assert!(
        text.contains("No offset index"),
        "missing indexes are noted: {text}"
    );

    // A COMMIT marker's offset, then the abort under the wrong producer, then a torn tail.
    let commit_offset = commit["base_offset"].as_i64().unwrap();
    let mut bytes = aborted_txn(producer, first, commit_offset, first);
    bytes.extend(aborted_txn(producer + 1, first, abort_offset, first));
    bytes.extend([0u8; 5]);
    fs::write(&txn, bytes).unwrap();
    let out = dump(&[], &txn);
    let err = assert_fails(&out);
    assert!(
        err.contains(&format!(
            "transaction index entry 0 at byte 0 (producer {producer}, last offset \
             {commit_offset}): offset {commit_offset} is in the batch at position"
        )) && err.contains("which is not an ABORT marker"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "transaction index entry 1 at byte 34 (producer {}, last offset {abort_offset}): \
             the ABORT marker at offset {abort_offset}",
            producer + 1
        )) && err.contains(&format!(
            "is producer {producer}'s, not producer {}'s",
            producer + 1
        )),
        "{err}"
    );
    assert!(
        err.contains("corrupt at byte 68: the last 5 bytes are not a whole 34-byte entry"),
        "{err}"
    );
    assert_eq!(stdout(&out).matches("agrees: false").count(), 2);
}

#[test]
fn indexes_without_their_log_are_printed_unchecked_and_reported() {
    let (_tmp, dir) = copy_dir(FOO_0);
    fs::remove_file(dir.join(format!("{SEGMENT}.log"))).unwrap();
    let out = dump(&["--json"], &dir);
    let err = assert_fails(&out);
    assert!(
        err.contains(&format!(
            "{SEGMENT}.log: missing: segment 0 has index files but no log"
        )),
        "{err}"
    );
    let lines = json_lines(&out);
    assert_eq!(of_type(&lines, "segment")[0]["size_bytes"], Value::Null);
    assert!(of_type(&lines, "batch").is_empty());
    let times = of_type(&lines, "time_index_entry");
    assert_eq!(times.len(), 1);
    assert_eq!(times[0]["agrees"], Value::Null, "nothing to check against");
}
