//! KIP-951: a node that no longer leads a partition (NOT_LEADER_OR_FOLLOWER), or leads it in a
//! newer epoch than the fetch named (FENCED_LEADER_EPOCH), names the leader and its epoch in its
//! answer. Kafka's consumer takes that leader when its epoch is newer than any it has seen
//! (`Metadata.updatePartitionLeadership`) and fetches from it next. The mirror ignored the hint
//! and asked the source's metadata first, a round trip — and metadata that had not caught up
//! yet (a broker not yet told of the election) sent it back to the old leader until the next
//! refresh. Now the hint is taken; one naming no epoch, or an epoch not newer than the one
//! known, is not, and the metadata is asked as before. Driven by hand, one fetch round at a
//! time: nothing here is timed.

use crate::common;

use common::{
    HookedWorld, Hooks, all_failed, assert_mirroring_at, fetch_as_leader_in, hooked_world,
    log_bytes, orders, produce_to, two_nodes,
};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::source::{CurrentLeader, FetchResponse};
use parking_lot::Mutex;
use std::sync::Arc;

const NOT_LEADER_OR_FOLLOWER: i16 = 6;

/// A two-node source whose partition is led by `leader` in `epoch`; its metadata names
/// `named` (which may lag behind), and a node answering a fetch it cannot serve names `hint`.
struct Source {
    leader: i32,
    epoch: i32,
    named: (i32, i32),
    hint: Option<CurrentLeader>,
    /// Nodes fetched from, in order.
    fetched_from: Vec<i32>,
    metadata_calls: usize,
}

/// `answer` with each failed partition naming `hint` as its leader.
fn hinting(mut answer: FetchResponse, hint: Option<CurrentLeader>) -> FetchResponse {
    for p in answer.partitions.iter_mut().filter(|p| p.error != 0) {
        p.current_leader = hint;
    }
    answer
}

/// A mirror caught up with a source led at node 1 in epoch `start_epoch`, which its metadata
/// names; the source's leadership, metadata and hints are the returned state's to change.
fn caught_up(start_epoch: i32) -> (HookedWorld, Arc<Mutex<Source>>) {
    let state = Arc::new(Mutex::new(Source {
        leader: 1,
        epoch: start_epoch,
        named: (1, start_epoch),
        hint: None,
        fetched_from: vec![],
        metadata_calls: 0,
    }));
    let (m, f) = (state.clone(), state.clone());
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            metadata: Some(two_nodes(move |_| {
                let mut s = m.lock();
                s.metadata_calls += 1;
                (s.named.0, LeaderEpoch(s.named.1))
            })),
            fetch: Some(Box::new(move |inner, node, request| {
                let mut s = f.lock();
                s.fetched_from.push(node);
                if node != s.leader {
                    return Ok(hinting(all_failed(request, NOT_LEADER_OR_FOLLOWER), s.hint));
                }
                // The engine source is node 1, whichever node this plays, in the leader's
                // epoch: a fetch naming an older one is fenced.
                let epoch = LeaderEpoch(s.epoch);
                let hint = s.hint;
                drop(s);
                fetch_as_leader_in(inner, request, |_| epoch).map(|a| hinting(a, hint))
            })),
            ..Hooks::default()
        },
    );
    common::catch_up(&w.mirror);
    assert_mirroring_at(&w.mirror, Offset(3));
    (w, state)
}

/// The source leads at node 1 in epoch `start_epoch`, which its metadata names, and the mirror
/// caught up; then `change` moves the leadership (the metadata still naming node 1 in that
/// epoch unless `change` says otherwise) and two records are written. After two fetch rounds
/// the mirror must have copied them, byte for byte: returns how it got there.
fn after_a_leadership_change(start_epoch: i32, change: impl FnOnce(&mut Source)) -> Source {
    let (w, state) = caught_up(start_epoch);
    produce_to(&w.src, &orders(0), b"w", 2);
    {
        let mut s = state.lock();
        change(&mut s);
        s.fetched_from.clear();
        s.metadata_calls = 0;
    }
    w.mirror.fetch_round(0);
    w.mirror.fetch_round(0);
    assert_mirroring_at(&w.mirror, Offset(5));
    assert_eq!(
        log_bytes(&w.dst.get(&orders(0)).unwrap()),
        log_bytes(&w.src.get(&orders(0)).unwrap())
    );
    let s = state.lock();
    Source {
        fetched_from: s.fetched_from.clone(),
        ..*s
    }
}

fn leader(id: i32, epoch: i32) -> Option<CurrentLeader> {
    Some(CurrentLeader {
        id,
        epoch: LeaderEpoch(epoch),
    })
}

#[test]
fn a_not_leader_answer_naming_the_new_leader_sends_the_next_fetch_there() {
    let s = after_a_leadership_change(0, |s| {
        (s.leader, s.epoch) = (2, 1);
        s.hint = leader(2, 1);
    });
    assert_eq!(s.fetched_from, [1, 2]);
    assert_eq!(s.metadata_calls, 0, "no metadata round trip");
}

#[test]
fn a_fenced_answer_naming_the_newer_epoch_is_fetched_again_in_it() {
    let s = after_a_leadership_change(0, |s| {
        s.epoch = 1;
        s.hint = leader(1, 1);
    });
    assert_eq!(s.fetched_from, [1, 1]);
    assert_eq!(s.metadata_calls, 0, "no metadata round trip");
}

/// A hint naming no epoch (−1), the epoch known, or an older one is not taken (it would never
/// move the leader back): the metadata, up to date this time, is asked and names the new
/// leader.
#[test]
fn a_hint_without_a_newer_epoch_is_not_taken() {
    for (start_epoch, hint) in [(0, leader(2, -1)), (0, leader(2, 0)), (2, leader(2, 1))] {
        let s = after_a_leadership_change(start_epoch, |s| {
            (s.leader, s.epoch) = (2, start_epoch + 1);
            s.named = (2, start_epoch + 1);
            s.hint = hint;
        });
        assert_eq!(s.fetched_from, [1, 2], "{hint:?}");
        assert_eq!(s.metadata_calls, 1, "{hint:?}");
    }
}

/// DLE ≥ SLE (KIP-1279 §7) holds for an epoch learned from a hint as for one the metadata
/// names: a hinted epoch within the bump threshold of the destination's raises the
/// destination's epoch at once (EPOCH_FENCING, then MIRRORING), before any record of that
/// epoch is fetched — the same proactive bump a sync makes — not only when such records land.
#[test]
fn a_hinted_epoch_near_the_destinations_bumps_it_before_any_record_of_it() {
    let (w, state) = caught_up(0);
    let dest = w.dst.get(&orders(0)).unwrap();
    let before = dest.read().leader_epoch();
    let hinted = before.get() - 2;
    {
        let mut s = state.lock();
        (s.leader, s.epoch) = (2, hinted);
        s.hint = leader(2, hinted);
        s.fetched_from.clear();
        s.metadata_calls = 0;
    }
    // One round: node 1 answers NOT_LEADER_OR_FOLLOWER naming node 2; nothing is fetched from
    // node 2 yet, and the source wrote nothing new.
    w.mirror.fetch_round(0);
    assert_eq!(state.lock().metadata_calls, 0, "the hint was taken");
    assert_eq!(dest.read().leader_epoch(), LeaderEpoch(hinted + 10));
    let s = w.mirror.describe().remove(0);
    assert_eq!(s.destination_leader_epoch, LeaderEpoch(hinted + 10));
    w.mirror.fetch_round(0);
    assert_eq!(state.lock().fetched_from, [1, 2]);
    assert_mirroring_at(&w.mirror, Offset(3));
}
