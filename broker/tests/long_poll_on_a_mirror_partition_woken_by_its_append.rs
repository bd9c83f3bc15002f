//! A consumer long-polling a mirror topic's partition is woken by the mirror's append there,
//! as Kafka's fetcher completes the delayed fetches of the partitions it appended to (now that
//! the mirror names them, not by a broadcast to every long poll).

use crate::common;

use common::long_poll::*;
use mirrorlog_broker::handlers::fetch;
use std::sync::mpsc;

#[test]
fn a_long_poll_on_a_mirror_partition_is_woken_by_the_mirrors_append_there() {
    let dir = tempfile::tempdir().unwrap();
    let (src, mut sc, dst) = mirrored_events(dir.path());
    let b = dst.broker.clone();

    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let resp = fetch::handle(b, long_poll("events", 1), 12);
            tx.send(resp).unwrap();
        });
        wait_until_long_polling(b);
        sc.produce("events", 0, one_record(), 1, None).unwrap();
        // Far less than the fetch's 600 s max wait: only a wake-up answers it in time.
        let resp = rx
            .recv_timeout(HANG_GUARD)
            .expect("the mirror's append did not wake the long poll on its partition");
        let d = &resp.responses[0].partitions[0];
        assert_eq!(d.error_code, 0);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
    });
    drop(b);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
