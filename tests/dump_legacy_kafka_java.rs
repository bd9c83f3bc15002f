//! Scenario: `mirrorlog dump` on a segment of legacy entries (magic 0 and 1) written by Apache
//! Kafka's own client library (tests/fixtures/kafka-java-legacy/, see
//! tests/kafka-java/GenerateLegacy.java) prints each entry and its records as Kafka reads them
//! (`expected.txt`), reports no problem, and exits 0. It used to call every entry corrupt.

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kafka-java-legacy/00000000000000000000.log")
}

fn dump(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .arg("dump")
        .args(args)
        .arg(fixture())
        .output()
        .expect("run mirrorlog dump");
    assert!(
        out.status.success(),
        "dump failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    String::from_utf8(out.stdout).unwrap()
}

fn hex(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.bytes().map(|b| format!("{b:02x}")).collect(),
        other => panic!("{other}"),
    }
}

#[test]
fn dump_prints_legacy_entries_as_kafka_reads_them() {
    let expected = std::fs::read_to_string(fixture().with_file_name("expected.txt")).unwrap();
    let mut kafka = vec![];
    for line in expected.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f[0] == "batch" {
            kafka.push((f[1..8].join(" "), vec![]));
        } else {
            kafka.last_mut().unwrap().1.push(f[1..].join(" "));
        }
    }
    let json = dump(&["--json", "--records"]);
    let ours: Vec<(String, Vec<String>)> = json
        .lines()
        .map(|l| {
            let b: Value = serde_json::from_str(l).unwrap();
            let head = format!(
                "{} {} {} {} {} {} {}",
                b["position"],
                b["size_bytes"],
                b["magic"],
                b["base_offset"],
                b["last_offset"],
                b["max_timestamp"],
                b["compression"].as_str().unwrap()
            );
            let records = b["records"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    format!(
                        "{} {} {} {}",
                        r["offset"],
                        r["timestamp"],
                        hex(&r["key"]),
                        hex(&r["value"])
                    )
                })
                .collect();
            (head, records)
        })
        .collect();
    assert_eq!(ours, kafka);

    // Text: Kafka's `DumpLogSegments` shape for a legacy entry (its offset, no producer fields).
    let text = dump(&["--records"]);
    assert!(
        text.contains(
            "offset: 0 position: 0 NoTimestampType: -1 size: 37 magic: 0 compresscodec: none crc: 55955865 isvalid: true"
        ),
        "{text}"
    );
    assert!(text.contains(
        "offset: 12 position: 396 CreateTime: 1600000001900 size: 124 magic: 1 compresscodec: gzip"
    ));
    assert!(!text.contains("isvalid: false"));
}
