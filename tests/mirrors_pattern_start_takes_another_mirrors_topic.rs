//! Found in review of the mirror admin RPCs: starting a topic by name refuses one that another
//! mirror holds (TOPIC_ALREADY_IN_CLUSTER_MIRROR), but `--start --pattern` (and later discovery
//! by `mirror.topics.include`) goes through `MirrorManager::discover`, which checks nothing of
//! the kind, and `ensure_mirror_topic` accepts any read-only local topic whatever its topic id.
//! A second mirror from another source then mirrors its own `orders` into the partitions the
//! first mirror is filling: two fetchers append to one log.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;

#[test]
fn a_pattern_does_not_start_a_topic_another_mirror_holds() {
    let dir = tempfile::tempdir().unwrap();
    let src1 = Serve::start(&dir.path().join("src1"), free_port());
    let src2 = Serve::start(&dir.path().join("src2"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    for s in [&src1, &src2] {
        let mut c = Client::connect(&s.addr).unwrap();
        c.create_topic("orders", 1, &[]).unwrap();
        produce(&mut c, "orders", 0, 2, "a");
    }
    create_mirror(d, "east", &src1.addr, &[]);
    create_mirror(d, "west", &src2.addr, &[]);
    ok(d, &["--start", "--mirror", "east", "--topics", "orders"]);
    // By name: refused.
    fails_with(
        d,
        &["--start", "--mirror", "west", "--topics", "orders"],
        "TOPIC_ALREADY_IN_CLUSTER_MIRROR",
    );
    // By pattern: must be refused too (or at least not taken).
    let (code, out, err) = cli(d, &["--start", "--mirror", "west", "--pattern", "ord.*"]);
    let west = partitions(d, "west");
    assert!(
        west.is_empty(),
        "mirror west took topic orders, which mirror east holds (exit {code}):\n{out}\n{err}\n{west:?}"
    );
}
