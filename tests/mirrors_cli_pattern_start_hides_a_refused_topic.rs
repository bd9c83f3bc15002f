//! Found in review of the `mirrorlog mirrors` CLI: `--start --pattern` answers only the topics
//! that did start. A source topic the pattern matches but the destination refuses (a writable
//! local topic of that name with another topic id: TOPIC_ALREADY_EXISTS when named) is dropped
//! from the answer — `discover` only logs it — so the CLI prints "No topic … matched." and exits
//! 0, while the same topic started by name fails with exit status 1.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;

#[test]
fn a_pattern_start_that_cannot_start_a_matched_topic_does_not_report_success() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    sc.create_topic("orders", 1, &[]).unwrap();
    produce(&mut sc, "orders", 0, 2, "a");
    // The destination's own, unrelated topic of the same name.
    let mut dc = Client::connect(d).unwrap();
    dc.create_topic("orders", 1, &[]).unwrap();
    create_mirror(d, "east", &src.addr, &[]);

    // By name: refused, exit status 1.
    fails_with(
        d,
        &["--start", "--mirror", "east", "--topics", "orders"],
        "TOPIC_ALREADY_EXISTS",
    );
    // By pattern: the same refusal must not be reported as success.
    let (code, out, err) = cli(d, &["--start", "--mirror", "east", "--pattern", "ord.*"]);
    assert_ne!(
        code, 0,
        "the pattern matched source topic orders, which could not start; the CLI said:\n{out}\n{err}"
    );
}
