//! A Kafka source answers OFFSET_OUT_OF_RANGE with its log start and high watermark unknown
//! (−1), so the applier asks the source for both (ListOffsets, retried) before it decides. It
//! asked while holding the partition's entry lock: a describe, pause or stop of that partition
//! waited for network calls to a source that may be slow or gone. Here the lookup is held until
//! the test releases it; every operation must complete before that, and an answer that comes
//! back after a pause or stop changes nothing. Nothing here is timed: the watchdog only turns a
//! deadlock into a failure.

use crate::common;

use common::{Hooks, all_failed, hooked_world};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::manager::{MirrorConfig, MirrorManager};
use mirrorlog_mirror::source::*;
use mirrorlog_mirror::state::MirrorPartitionState as S;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

const OFFSET_OUT_OF_RANGE: i16 = 1;

/// The source's answers once `held` is set: every fetch OFFSET_OUT_OF_RANGE with unknown offsets,
/// every ListOffsets held until released and then answered with a log start (10) past the
/// destination's log end, which applied would restart the destination's log there.
struct Source {
    held: AtomicBool,
    entered: Mutex<mpsc::Sender<()>>,
    release: Mutex<mpsc::Receiver<()>>,
    released: AtomicBool,
}

fn held_lookup(operation: impl FnOnce(&MirrorManager) + Send + 'static) -> (S, Offset, Offset) {
    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    let source = Arc::new(Source {
        held: AtomicBool::new(false),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
        released: AtomicBool::new(false),
    });
    let (f, l) = (source.clone(), source.clone());
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            fetch: Some(Box::new(move |inner, node, request| {
                if !f.held.load(Ordering::SeqCst) {
                    return inner.fetch(node, request);
                }
                Ok(all_failed(request, OFFSET_OUT_OF_RANGE))
            })),
            list_offset: Some(Box::new(move |inner, spec| {
                if !l.held.load(Ordering::SeqCst) {
                    return inner.list_offset("orders", 0, spec);
                }
                l.entered.lock().unwrap().send(()).unwrap();
                l.release.lock().unwrap().recv().unwrap();
                Ok(match spec {
                    OffsetSpec::Earliest => (Offset(10), LeaderEpoch(0)),
                    _ => (Offset(12), LeaderEpoch(0)),
                })
            })),
            ..Hooks::default()
        },
    );
    w.mirror.fetch_round(0);
    assert_eq!(w.mirror.describe()[0].log_end_offset, Offset(3));

    source.held.store(true, Ordering::SeqCst);
    let fetcher = {
        let m = w.mirror.clone();
        std::thread::spawn(move || m.fetch_round(0))
    };
    entered_rx.recv().unwrap();
    // Runs on its own thread so that a lookup holding the lock shows as a failure, not a hang.
    let (done_tx, done_rx) = mpsc::channel();
    let operated = {
        let (m, s) = (w.mirror.clone(), source.clone());
        std::thread::spawn(move || {
            operation(&m);
            done_tx.send(!s.released.load(Ordering::SeqCst)).unwrap();
        })
    };
    let before_release = match done_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(before) => before,
        Err(_) => {
            source.released.store(true, Ordering::SeqCst);
            release_tx.send(()).unwrap();
            release_tx.send(()).unwrap();
            done_rx.recv().unwrap()
        }
    };
    operated.join().unwrap();
    assert!(
        before_release,
        "the operation waited for the source's ListOffsets"
    );
    let end_while_held = w.mirror.describe()[0].log_end_offset;
    // The lookup answers now; both of its questions (log start, then end) are let through.
    source.released.store(true, Ordering::SeqCst);
    let _ = release_tx.send(());
    let _ = release_tx.send(());
    fetcher.join().unwrap();
    let s = w.mirror.describe().remove(0);
    (s.state, end_while_held, s.log_end_offset)
}

#[test]
fn a_describe_and_a_pause_do_not_wait_for_the_lookup_which_then_changes_nothing() {
    let (state, end_while_held, end) = held_lookup(|m| {
        assert_eq!(m.describe()[0].state, S::Mirroring);
        m.pause_topic("orders").unwrap();
        assert_eq!(m.describe()[0].state, S::Paused);
    });
    assert_eq!(state, S::Paused);
    assert_eq!(
        end, end_while_held,
        "the late answer restarted a paused log"
    );
}

#[test]
fn a_stop_does_not_wait_for_the_lookup_and_is_not_undone_by_its_answer() {
    let (state, end_while_held, end) = held_lookup(|m| m.stop_topic("orders").unwrap());
    assert_eq!(state, S::Stopped);
    assert_eq!(
        end, end_while_held,
        "the late answer restarted a stopped log"
    );
}
