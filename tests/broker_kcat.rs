//! Scenario with kcat 1.7.1 on Debian's librdkafka 2.0.2 — an *old* librdkafka that fails on an
//! ApiVersions v3 response carrying default-valued tagged fields: metadata, produce in every
//! codec, consume back byte-identical. scripts/test.sh installs kcat.

mod common;

use common::{Serve, free_port};
use std::io::Write;
use std::process::{Command, Stdio};

fn kcat() -> Option<&'static str> {
    let ok = Command::new("kcat")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        // As `common::python`: a client test must not pass without running; skipping is a
        // choice made with MIRRORLOG_SKIP_CLIENT_TESTS=1, said out loud.
        assert!(
            std::env::var_os("MIRRORLOG_SKIP_CLIENT_TESTS").is_some(),
            "kcat not installed: run scripts/test.sh (apt-get install kcat), or set \
             MIRRORLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
        );
        eprintln!("skipped (MIRRORLOG_SKIP_CLIENT_TESTS): kcat not installed");
    }
    ok.then_some("kcat")
}

/// kcat with the system's librdkafka: `cargo test` puts every build script's library dirs on
/// `LD_LIBRARY_PATH`, including the bench crate's own librdkafka build (no zstd), which the
/// dynamic linker would otherwise pick for kcat.
fn kcat_command(kcat: &str) -> Command {
    let mut c = Command::new(kcat);
    c.env_remove("LD_LIBRARY_PATH");
    c
}

#[test]
fn kcat_lists_metadata_produces_every_codec_and_consumes_back() {
    let Some(kcat) = kcat() else { return };
    let dir = tempfile::tempdir().unwrap();
    let broker = Serve::start(dir.path(), free_port());
    let mut want = vec![];
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let lines: Vec<String> = (0..50).map(|i| format!("{codec}-line-{i}")).collect();
        let mut child = kcat_command(kcat)
            .args([
                "-b",
                &broker.addr,
                "-P",
                "-t",
                "kc",
                "-z",
                codec,
                "-X",
                "acks=all",
            ])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all((lines.join("\n") + "\n").as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success(), "kcat produce with {codec}");
        want.extend(lines);
    }
    let md = kcat_command(kcat)
        .args(["-b", &broker.addr, "-L", "-J"])
        .output()
        .unwrap();
    assert!(
        md.status.success(),
        "{}",
        String::from_utf8_lossy(&md.stderr)
    );
    let md: serde_json::Value = serde_json::from_slice(&md.stdout).unwrap();
    let topics = md["topics"].as_array().unwrap();
    assert!(topics.iter().any(|t| t["topic"] == "kc"), "{md}");
    let out = kcat_command(kcat)
        .args([
            "-b",
            &broker.addr,
            "-C",
            "-t",
            "kc",
            "-o",
            "beginning",
            "-e",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(got, want);
}
