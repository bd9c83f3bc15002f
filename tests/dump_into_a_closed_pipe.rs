//! `mirrorlog dump FILE | head`: the reader goes away before the dump ends. Rust starts every
//! program with SIGPIPE ignored, so the write failed with `EPIPE` and `dump` printed
//! "error: Broken pipe (os error 32)" and exited 1, the status that says the file is corrupt.
//! Now it ends as a C tool does: killed by SIGPIPE, nothing on stderr. The pipe's read end is
//! closed before `dump` starts, so its first write meets it closed (no timing involved).

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/kafka-java/00000000000000000000.log"
);

#[test]
fn a_dump_whose_reader_went_away_dies_of_sigpipe_quietly() {
    for args in [&[][..], &["--json", "--records"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
            .arg("dump")
            .args(args)
            .arg(FIXTURE)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            (out.status.code(), out.status.signal()),
            (None, Some(libc::SIGPIPE)),
            "dump {args:?}: {stderr}"
        );
        assert_eq!(stderr, "", "dump {args:?}");
    }
}

/// The same file into a reader that reads it all: status 0, so the status above is the pipe's.
#[test]
fn the_same_dump_into_a_reader_succeeds() {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .args(["dump", FIXTURE])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(!out.stdout.is_empty());
}
