//! `mirrorlog serve 2> broker.log`: README says the logs go to stderr; written to a file or a
//! pipe (a service manager's journal, `tee`), they must be plain text, as Kafka's are, not
//! strewn with the terminal's colour escapes (`ESC[2m`, `ESC[32m INFO`), which made every line
//! of a log file hard to read and to grep (`grep ' WARN '` found nothing).

use std::process::Command;

#[test]
fn a_log_written_to_a_pipe_has_no_terminal_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    // A key of Kafka's stock file that is ignored with a warning, and no data directory, so
    // the start logs that warning and then stops at once.
    let props = tmp.path().join("server.properties");
    std::fs::write(&props, "num.io.threads=8\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&props)
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(" WARN ") && stderr.contains("num.io.threads"),
        "the warning is logged as plain text:\n{stderr:?}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "terminal escapes in a piped log:\n{stderr:?}"
    );
}
