//! Kafka's `DelayedFetch` purgatory is keyed by partition: a follower's (here a mirror's)
//! append completes only the delayed fetches of the partitions it appended to. Here every
//! mirror append woke every long-polling fetch of the broker, which re-read all its partitions
//! and slept again. Wake-ups are counted through the notifier's test hook.

mod common;

use common::long_poll::*;
use mirrorlog_broker::client::Client;
use mirrorlog_broker::handlers::fetch;
use mirrorlog_engine::config::LogConfig;
use std::sync::mpsc;

#[test]
fn a_long_poll_is_not_woken_by_a_mirror_appending_to_another_topic() {
    let dir = tempfile::tempdir().unwrap();
    let (src, mut sc, dst) = mirrored_events(dir.path());
    let b = dst.broker.clone();
    b.topics
        .create(&b.logs, "a", 1, LogConfig::default(), None)
        .unwrap();

    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let b = &b;
        scope.spawn(move || {
            let resp = fetch::handle(b, long_poll("a", 0), 12);
            tx.send(resp).unwrap();
        });
        wait_until_long_polling(b);
        let before = b.appends.wakeups();
        // One record at a time, each mirrored before the next is produced: the mirror applies
        // them in separate answers, and the one before the last has signalled by the time the
        // last is in the log.
        for end in 2..=6 {
            sc.produce("events", 0, one_record(), 1, None).unwrap();
            wait_log_end(b, "events", end);
        }
        let after_mirror = b.appends.wakeups();
        let answered_early = rx.try_recv().is_ok();
        // Ends the long poll before asserting, so that a failure does not leave it waiting.
        Client::connect(&dst.addr.to_string())
            .unwrap()
            .produce("a", 0, one_record(), 1, None)
            .unwrap();
        let resp = rx
            .recv_timeout(HANG_GUARD)
            .expect("the append to a did not wake its long poll");
        assert_eq!(
            after_mirror, before,
            "the mirror's appends to events woke the long poll on a"
        );
        assert!(!answered_early, "the long poll on a answered without data");
        let d = &resp.responses[0].partitions[0];
        assert_eq!(d.error_code, 0);
        assert!(d.records.as_ref().is_some_and(|r| !r.is_empty()));
    });
    drop(b);
    dst.shutdown().unwrap();
    src.shutdown().unwrap();
}
