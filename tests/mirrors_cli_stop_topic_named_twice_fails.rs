//! Found in review of the `mirrorlog mirrors` CLI and the stop RPC: a topic named twice
//! (`--stop --topics orders,orders`, easy to get from a script joining lists) is stopped by the
//! first entry and then answered TOPIC_NOT_IN_CLUSTER_MIRROR ("already STOPPED") for the second,
//! so a failover that succeeded exits 1. The selection is a set.

mod common;

use common::mirrors::*;
use common::{Serve, free_port};
use mirrorlog_broker::client::Client;

#[test]
fn a_topic_named_twice_is_stopped_once_and_the_failover_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let src = Serve::start(&dir.path().join("src"), free_port());
    let dst = Serve::start(&dir.path().join("dst"), free_port());
    let d = dst.addr.as_str();
    let mut sc = Client::connect(&src.addr).unwrap();
    sc.create_topic("orders", 1, &[]).unwrap();
    let end = produce(&mut sc, "orders", 0, 2, "a");
    create_mirror(d, "east", &src.addr, &[]);
    ok(d, &["--start", "--mirror", "east", "--topics", "orders"]);
    wait_mirrored(d, "east", "orders", 0, end);
    let (code, out, err) = cli(
        d,
        &["--stop", "--mirror", "east", "--topics", "orders,orders"],
    );
    let parts = partitions(d, "east");
    assert_eq!(parts[0]["state"], "STOPPED", "{parts:?}");
    assert_eq!(code, 0, "the failover succeeded:\n{out}\n{err}");
}
