//! A source partition's leader moves to another node: the old leader answers a fetch
//! NOT_LEADER_OR_FOLLOWER (or, gone, does not answer at all). Kafka's consumer asks for metadata
//! at once and fetches from the new leader; the mirror did the same only at its next periodic
//! sync (`metadata.refresh.interval.ms`, up to an hour), asking the old leader again every round
//! meanwhile. Driven by hand, one fetch round at a time: nothing here is timed.

use crate::common;

use common::{
    Hooks, all_failed, assert_mirroring_at, fetch_as_leader_in, hooked_world, orders, produce_to,
    two_nodes,
};
use mirrorlog_index::{LeaderEpoch, Offset};
use mirrorlog_mirror::manager::MirrorConfig;
use mirrorlog_mirror::source::*;
use parking_lot::Mutex;
use std::sync::Arc;

const NOT_LEADER_OR_FOLLOWER: i16 = 6;

/// How the node that lost the leadership answers.
#[derive(Debug, Clone, Copy)]
enum OldLeader {
    NotLeader,
    Down,
}

/// A two-node source: metadata names `leader` (at `epoch`), only that node serves fetches.
struct Leadership {
    leader: i32,
    epoch: i32,
    /// Nodes fetched from, in order.
    fetched_from: Vec<i32>,
}

/// `named`: the source's metadata names each leader's epoch (Metadata v7+); without, every
/// epoch is −1 (Metadata below v7, Kafka before 2.1, or a server that leaves it out), and the
/// node's own epoch is in the records only.
fn leader_moves(old: OldLeader, named: bool) {
    let state = Arc::new(Mutex::new(Leadership {
        leader: 1,
        epoch: 0,
        fetched_from: vec![],
    }));
    let (m, f) = (state.clone(), state.clone());
    let w = hooked_world(
        1,
        MirrorConfig::new("m"),
        Hooks {
            metadata: Some(two_nodes(move |_| {
                let s = m.lock();
                (s.leader, LeaderEpoch(if named { s.epoch } else { -1 }))
            })),
            fetch: Some(Box::new(move |inner, node, request| {
                let mut s = f.lock();
                s.fetched_from.push(node);
                if node == s.leader {
                    // The engine source is node 1, whichever node this plays, in the epoch
                    // the metadata names.
                    let epoch = LeaderEpoch(s.epoch);
                    return fetch_as_leader_in(inner, request, |_| epoch);
                }
                match old {
                    OldLeader::Down => Err(SourceError::Unreachable(format!(
                        "connecting to node {node}: refused"
                    ))),
                    OldLeader::NotLeader => Ok(all_failed(request, NOT_LEADER_OR_FOLLOWER)),
                }
            })),
            ..Hooks::default()
        },
    );
    // Without an epoch in the metadata, the first records' (0) is one not heard of, checked
    // before they are appended.
    common::catch_up(&w.mirror);
    assert_eq!(w.mirror.describe()[0].log_end_offset, Offset(3));

    // The leadership moves to node 2; no sync runs from here on.
    produce_to(&w.src, &orders(0), b"w", 2);
    {
        let mut s = state.lock();
        (s.leader, s.epoch) = (2, 1);
        s.fetched_from.clear();
    }
    w.mirror.fetch_round(0);
    w.mirror.fetch_round(0);
    assert_mirroring_at(&w.mirror, Offset(5));
    assert_eq!(
        state.lock().fetched_from,
        [1, 2],
        "the old leader is asked once"
    );
}

#[test]
fn a_not_leader_answer_sends_the_next_fetch_to_the_new_leader() {
    leader_moves(OldLeader::NotLeader, true);
}

#[test]
fn an_old_leader_that_does_not_answer_sends_the_next_fetch_to_the_new_leader() {
    leader_moves(OldLeader::Down, true);
}

/// Metadata naming no leader epoch was taken as stale once records had told the mirror an
/// epoch (−1 is below any), so the new leader was never adopted and the old one was asked for
/// good. Kafka's clients take such metadata as it is (`Metadata.updateLatestMetadata`: no
/// epoch to compare, the last one seen is forgotten).
#[test]
fn metadata_naming_no_epoch_still_sends_the_next_fetch_to_the_new_leader() {
    leader_moves(OldLeader::NotLeader, false);
    leader_moves(OldLeader::Down, false);
}
