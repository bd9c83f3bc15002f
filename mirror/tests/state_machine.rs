//! The mirror partition state machine against KIP-1279 §3.1–3.2, its fencing and retry
//! bookkeeping, the `__mirror_state` record format, and the store across clean restarts and
//! crashes.

use mirrorlog_engine::clock::ManualClock;
use mirrorlog_engine::log::LeaderOrigin;
use mirrorlog_engine::manager::{LogManager, LogManagerConfig};
use mirrorlog_index::{LeaderEpoch, TimestampMs, TopicPartition};
use mirrorlog_mirror::state::{
    DEFAULT_STATE_PARTITIONS, Failure, KEY_TYPE_PARTITION_STATE, KEY_TYPE_START_INTENT,
    MIRROR_STATE_TOPIC, MIRROR_STATE_TOPIC_ID, MirrorPartitionState, MirrorStateStore,
    PartitionMirrorState, RetryBackoff, STATE_SEGMENT_BYTES, StartIntent, StateError, StateKey,
    TRANSITIONS, TopicBefore, decode_intent_key, decode_intent_value, decode_key, decode_value,
    encode_intent_key, encode_intent_value, encode_key, encode_value, state_partition_for,
    transitions_markdown,
};
use mirrorlog_segment::BatchBuilder;
use mirrorlog_segment::io::{PwriteStorage, SimStorage, Storage, TornTail};
use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use MirrorPartitionState as S;

// ---------------------------------------------------------------------------------------------
// The table

/// KIP-1279 §3.1, copied: name and byte value.
const SPEC_STATES: &[(&str, u8)] = &[
    ("LOG_ALIGNMENT", 0),
    ("EPOCH_FENCING", 1),
    ("ULE_RECOVERY", 2),
    ("MIRRORING", 3),
    ("PAUSING", 4),
    ("PAUSED", 5),
    ("STOPPING", 6),
    ("STOPPED", 7),
    ("FAILED", 8),
    ("UNKNOWN", 16),
];

/// KIP-1279 §3.2, copied: target ← allowed sources ("any" for FAILED; "none/UNKNOWN" is
/// UNKNOWN). Same → same is always allowed.
const SPEC_TABLE: &[(&str, &[&str])] = &[
    ("LOG_ALIGNMENT", &["UNKNOWN", "STOPPED", "FAILED"]),
    ("EPOCH_FENCING", &["MIRRORING"]),
    ("ULE_RECOVERY", &["MIRRORING"]),
    (
        "MIRRORING",
        &[
            "LOG_ALIGNMENT",
            "EPOCH_FENCING",
            "PAUSED",
            "ULE_RECOVERY",
            "FAILED",
        ],
    ),
    ("PAUSING", &["MIRRORING"]),
    ("PAUSED", &["PAUSING"]),
    (
        "STOPPING",
        &[
            "LOG_ALIGNMENT",
            "EPOCH_FENCING",
            "MIRRORING",
            "PAUSING",
            "PAUSED",
            "ULE_RECOVERY",
            "FAILED",
        ],
    ),
    ("STOPPED", &["STOPPING"]),
    ("FAILED", &["any"]),
];

fn spec_allows(from: &str, to: &str) -> bool {
    from == to
        || SPEC_TABLE
            .iter()
            .any(|(t, f)| *t == to && (f.contains(&from) || f.contains(&"any")))
}

#[test]
fn state_names_and_bytes_are_the_specs() {
    assert_eq!(MirrorPartitionState::ALL.len(), SPEC_STATES.len());
    for (name, byte) in SPEC_STATES {
        let s = MirrorPartitionState::from_byte(*byte).expect(name);
        assert_eq!(s.name(), *name);
        assert_eq!(s as u8, *byte);
        assert_eq!(s.as_byte(), *byte);
        assert_eq!(MirrorPartitionState::from_name(name), Some(s));
        assert_eq!(s.to_string(), *name);
    }
    for b in 0..=u8::MAX {
        let known = SPEC_STATES.iter().any(|(_, v)| *v == b);
        assert_eq!(
            MirrorPartitionState::from_byte(b).is_some(),
            known,
            "byte {b}"
        );
    }
    assert_eq!(MirrorPartitionState::from_name("mirroring"), None);
}

#[test]
fn every_pair_of_states_follows_the_spec_table() {
    let mut allowed = 0;
    for from in MirrorPartitionState::ALL {
        for to in MirrorPartitionState::ALL {
            let want = spec_allows(from.name(), to.name());
            assert_eq!(
                from.can_transition_to(*to),
                want,
                "{from} -> {to} should be {}",
                if want { "allowed" } else { "refused" }
            );
            allowed += usize::from(want);
        }
    }
    // 10 self-moves + 3 + 1 + 1 + 5 + 1 + 1 + 7 + 1 + 9 (FAILED from the 9 others).
    assert_eq!(allowed, 10 + 3 + 1 + 1 + 5 + 1 + 1 + 7 + 1 + 9);
}

#[test]
fn the_code_table_lists_each_target_once_and_never_unknown() {
    let mut targets: Vec<_> = TRANSITIONS.iter().map(|(t, _)| *t).collect();
    let n = targets.len();
    targets.sort();
    targets.dedup();
    assert_eq!(targets.len(), n);
    assert!(!targets.contains(&S::Unknown));
    assert_eq!(n, SPEC_TABLE.len());
}

#[test]
fn the_module_docs_show_the_rendered_table() {
    let src = include_str!("../src/state.rs");
    let doc_table: String = src
        .lines()
        .filter_map(|l| l.strip_prefix("//! "))
        .filter(|l| l.starts_with('|'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(doc_table, transitions_markdown());
    assert!(transitions_markdown().contains("| FAILED | any |"));
}

#[test]
fn only_stopped_is_writable() {
    for s in MirrorPartitionState::ALL {
        assert_eq!(s.is_read_only(), *s != S::Stopped, "{s}");
    }
    // DESIGN.md invariant 3, by name.
    assert!(S::Mirroring.is_read_only());
    assert!(S::Paused.is_read_only());
    assert!(S::LogAlignment.is_read_only());
}

// ---------------------------------------------------------------------------------------------
// Transitions and fencing

fn fresh() -> PartitionMirrorState {
    PartitionMirrorState::new("a-to-b", [9; 16], 3)
}

#[test]
fn a_new_partition_is_unknown_at_state_epoch_0() {
    let s = fresh();
    assert_eq!(s.state, S::Unknown);
    assert_eq!(s.state_epoch, 0);
    assert_eq!(s.last_mirror_epoch, LeaderEpoch::NONE);
    assert_eq!(s.destination_leader_epoch, LeaderEpoch::NONE);
    assert_eq!(s.failure, None);
    assert_eq!(
        s.key(),
        StateKey {
            mirror: "a-to-b".into(),
            topic_id: [9; 16],
            partition: 3
        }
    );
}

#[test]
fn transitions_bump_the_state_epoch_and_stale_writers_are_fenced() {
    let mut s = fresh();
    s.transition(S::LogAlignment, 0, 10).unwrap();
    assert_eq!(
        (s.state, s.state_epoch, s.updated_ms),
        (S::LogAlignment, 1, 10)
    );
    s.transition(S::Mirroring, 1, 20).unwrap();
    // Same → same is allowed and still bumps (a re-run after a leader change).
    s.transition(S::Mirroring, 2, 30).unwrap();
    assert_eq!((s.state, s.state_epoch), (S::Mirroring, 3));

    let before = s.clone();
    match s.transition(S::Pausing, 2, 40) {
        Err(StateError::Fenced { expected, actual }) => assert_eq!((expected, actual), (2, 3)),
        other => panic!("expected fenced, got {other:?}"),
    }
    match s.transition(S::Paused, 3, 40) {
        Err(StateError::InvalidTransition { from, to }) => {
            assert_eq!((from, to), (S::Mirroring, S::Paused))
        }
        other => panic!("expected an invalid transition, got {other:?}"),
    }
    assert_eq!(s, before, "refused transitions change nothing");
    match s.fail("x", true, 7, 40, &RetryBackoff::default()) {
        Err(StateError::Fenced { expected, actual }) => assert_eq!((expected, actual), (7, 3)),
        other => panic!("expected fenced, got {other:?}"),
    }
    assert_eq!(s, before);

    // The failover path.
    for (target, epoch) in [(S::Stopping, 3), (S::Stopped, 4), (S::LogAlignment, 5)] {
        s.transition(target, epoch, 50).unwrap();
    }
    assert_eq!((s.state, s.state_epoch), (S::LogAlignment, 6));
}

#[test]
fn the_full_lifecycle_walks_the_table() {
    let mut s = fresh();
    let path = [
        S::LogAlignment,
        S::Mirroring,
        S::EpochFencing,
        S::Mirroring,
        S::UleRecovery,
        S::Mirroring,
        S::Pausing,
        S::Paused,
        S::Mirroring,
        S::Pausing,
        S::Paused,
        S::Stopping,
        S::Stopped,
        S::LogAlignment,
        S::Stopping,
        S::Stopped,
    ];
    for (i, target) in path.iter().enumerate() {
        let e = s.state_epoch;
        s.transition(*target, e, i as i64).unwrap();
        assert_eq!(s.state_epoch, e + 1);
    }
    assert!(!s.state.is_read_only());
}

// ---------------------------------------------------------------------------------------------
// Failures and retries

fn no_jitter() -> RetryBackoff {
    RetryBackoff {
        jitter_permille: 0,
        ..RetryBackoff::default()
    }
}

#[test]
fn backoff_defaults_are_the_specs() {
    let b = RetryBackoff::default();
    assert_eq!(b.initial_backoff_ms, 100);
    assert_eq!(b.max_backoff_ms, 300_000);
    assert_eq!(b.max_attempts, 20);
    assert_eq!(b.jitter_permille, 200);
    b.validate().unwrap();
    for bad in [
        RetryBackoff {
            initial_backoff_ms: -1,
            ..b
        },
        RetryBackoff {
            max_backoff_ms: 50,
            ..b
        },
        RetryBackoff {
            max_attempts: -1,
            ..b
        },
        RetryBackoff {
            jitter_permille: 1001,
            ..b
        },
    ] {
        assert!(
            matches!(bad.validate(), Err(StateError::InvalidConfig(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn backoff_doubles_from_the_initial_delay_up_to_the_maximum() {
    let b = no_jitter();
    let delays: Vec<i64> = (1..=14).map(|a| b.delay_ms(a, 0)).collect();
    assert_eq!(
        delays,
        [
            100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 102400, 204800, 300000,
            300000
        ]
    );
    assert_eq!(b.delay_ms(i32::MAX, 0), 300_000);
}

#[test]
fn jitter_is_deterministic_bounded_and_spreads_partitions() {
    let b = RetryBackoff {
        seed: 42,
        ..RetryBackoff::default()
    };
    let mut distinct = std::collections::BTreeSet::new();
    for salt in 0..200u64 {
        for attempt in 1..=15 {
            let base = no_jitter().delay_ms(attempt, salt);
            let d = b.delay_ms(attempt, salt);
            assert_eq!(d, b.delay_ms(attempt, salt), "same inputs, same delay");
            assert!(
                d >= base * 8 / 10 && d <= (base * 12 / 10).min(300_000),
                "{d} vs {base}"
            );
        }
        distinct.insert(b.delay_ms(1, salt));
    }
    assert!(
        distinct.len() > 20,
        "partitions retry at different times: {distinct:?}"
    );
    // Another seed draws differently.
    let other = RetryBackoff { seed: 43, ..b };
    assert!((0..50u64).any(|salt| other.delay_ms(3, salt) != b.delay_ms(3, salt)));
}

#[test]
fn fail_records_the_previous_state_and_schedules_the_retry() {
    let backoff = RetryBackoff {
        seed: 7,
        ..RetryBackoff::default()
    };
    let salt = fresh().key().stable_hash();
    let mut s = fresh();
    s.transition(S::LogAlignment, 0, 0).unwrap();
    s.transition(S::Mirroring, 1, 0).unwrap();
    s.fail("corrupt batch at offset 17", true, 2, 1_000, &backoff)
        .unwrap();
    assert_eq!(s.state, S::Failed);
    assert_eq!(s.state_epoch, 3);
    assert_eq!(s.updated_ms, 1_000);
    assert_eq!(
        s.failure,
        Some(Failure {
            reason: "corrupt batch at offset 17".into(),
            retryable: true,
            attempt: 1,
            previous_state: S::Mirroring,
            next_retry_ms: 1_000 + backoff.delay_ms(1, salt),
        })
    );
    assert!(s.state.is_read_only());

    // Not due yet, then due: back to MIRRORING.
    let due = s.failure.as_ref().unwrap().next_retry_ms;
    assert_eq!(s.due_retry(due - 1), None);
    assert_eq!(s.due_retry(due), Some(S::Mirroring));
    s.transition(S::Mirroring, 3, due).unwrap();
    assert_eq!(s.due_retry(due + 1_000_000), None, "only FAILED retries");

    // Failing again counts on; failing while FAILED keeps the state to return to.
    s.fail("again", true, 4, 2_000, &backoff).unwrap();
    assert_eq!(s.failure.as_ref().unwrap().attempt, 2);
    assert_eq!(
        s.failure.as_ref().unwrap().next_retry_ms,
        2_000 + backoff.delay_ms(2, salt)
    );
    s.fail("and again", true, 5, 3_000, &backoff).unwrap();
    let f = s.failure.as_ref().unwrap();
    assert_eq!((f.attempt, f.previous_state), (3, S::Mirroring));

    // Progress clears the count.
    s.transition(S::Mirroring, 6, 4_000).unwrap();
    s.clear_failure();
    s.fail("new trouble", true, 7, 5_000, &backoff).unwrap();
    assert_eq!(s.failure.as_ref().unwrap().attempt, 1);
}

#[test]
fn retries_stop_after_max_attempts() {
    let backoff = RetryBackoff {
        max_attempts: 3,
        ..no_jitter()
    };
    let mut s = fresh();
    s.transition(S::LogAlignment, 0, 0).unwrap();
    s.transition(S::Mirroring, 1, 0).unwrap();
    let mut now = 0;
    for attempt in 1..=3 {
        let e = s.state_epoch;
        s.fail("flaky", true, e, now, &backoff).unwrap();
        let f = s.failure.clone().unwrap();
        assert_eq!(f.attempt, attempt);
        assert_eq!(f.next_retry_ms, now + 100 * (1 << (attempt - 1)));
        now = f.next_retry_ms;
        let target = s.due_retry(now).unwrap();
        let e = s.state_epoch;
        s.transition(target, e, now).unwrap();
    }
    let e = s.state_epoch;
    s.fail("flaky", true, e, now, &backoff).unwrap();
    let f = s.failure.clone().unwrap();
    assert_eq!(f.attempt, 4);
    assert_eq!(
        f.next_retry_ms, -1,
        "three retries were allowed: a fourth waits for recover"
    );
    assert_eq!(s.due_retry(i64::MAX), None);

    // A manual recover: clear and go again.
    s.clear_failure();
    let e = s.state_epoch;
    s.transition(S::Mirroring, e, now).unwrap();
    assert!(s.failure.is_none());
}

#[test]
fn non_retryable_failures_and_disabled_retries_never_schedule() {
    let mut s = fresh();
    s.fail(
        "source topic deleted",
        false,
        0,
        10,
        &RetryBackoff::default(),
    )
    .unwrap();
    let f = s.failure.clone().unwrap();
    assert!(!f.retryable);
    assert_eq!(f.next_retry_ms, -1);
    assert_eq!(f.previous_state, S::Unknown);
    assert_eq!(s.due_retry(i64::MAX), None);

    let mut s = fresh();
    let disabled = RetryBackoff {
        max_attempts: 0,
        ..RetryBackoff::default()
    };
    s.fail("flaky", true, 0, 10, &disabled).unwrap();
    assert_eq!(s.failure.unwrap().next_retry_ms, -1);
}

#[test]
fn the_retry_target_is_the_previous_state_where_failed_may_go() {
    for (previous, target) in [
        (S::LogAlignment, S::LogAlignment),
        (S::Mirroring, S::Mirroring),
        (S::Stopping, S::Stopping),
        (S::Unknown, S::LogAlignment),
        (S::Stopped, S::Stopping),
        (S::EpochFencing, S::Mirroring),
        (S::UleRecovery, S::Mirroring),
        (S::Pausing, S::Mirroring),
        (S::Paused, S::Mirroring),
    ] {
        let mut s = fresh();
        s.state = previous;
        s.fail("x", true, 0, 0, &no_jitter()).unwrap();
        assert_eq!(s.failure.as_ref().unwrap().previous_state, previous);
        assert_eq!(s.due_retry(100), Some(target), "after {previous}");
        assert!(S::Failed.can_transition_to(target));
    }
}

#[test]
fn a_fresh_start_and_a_stop_clear_the_failure() {
    let mut s = fresh();
    s.fail("x", true, 0, 0, &no_jitter()).unwrap();
    s.transition(S::Stopping, 1, 1).unwrap();
    assert!(s.failure.is_some(), "still the last failure while stopping");
    s.transition(S::Stopped, 2, 2).unwrap();
    assert!(s.failure.is_none());
    s.fail("y", true, 3, 3, &no_jitter()).unwrap();
    s.transition(S::LogAlignment, 4, 4).unwrap();
    assert!(s.failure.is_some(), "a retry keeps the count");
}

// ---------------------------------------------------------------------------------------------
// Format

fn sample() -> PartitionMirrorState {
    PartitionMirrorState {
        mirror: "ab".into(),
        topic_id: [0x11; 16],
        partition: 5,
        state: S::Failed,
        state_epoch: 7,
        last_mirror_epoch: LeaderEpoch(3),
        destination_leader_epoch: LeaderEpoch(-1),
        failure: Some(Failure {
            reason: "é".into(),
            retryable: true,
            attempt: 2,
            previous_state: S::Mirroring,
            next_retry_ms: 0x0102,
        }),
        updated_ms: 0x0A0B,
    }
}

#[test]
fn key_and_value_bytes_are_the_documented_layout() {
    let s = sample();
    let mut key = vec![0, 2, 0, 2, b'a', b'b'];
    key.extend_from_slice(&[0x11; 16]);
    key.extend_from_slice(&[0, 0, 0, 5]);
    assert_eq!(encode_key(&s.key()), key);
    assert_eq!(KEY_TYPE_PARTITION_STATE, 2);

    #[rustfmt::skip]
    let value = vec![
        0, 0,                   // version
        8,                      // FAILED
        0, 0, 0, 7,             // state epoch
        0, 0, 0, 3,             // LME
        0xFF, 0xFF, 0xFF, 0xFF, // DLE -1
        0, 0, 0, 0, 0, 0, 0x0A, 0x0B, // updated_ms
        1,                      // failure present
        1,                      // retryable
        0, 0, 0, 2,             // attempt
        3,                      // previous: MIRRORING
        0, 0, 0, 0, 0, 0, 1, 2, // next retry
        0, 0, 0, 2, 0xC3, 0xA9, // reason "é"
    ];
    assert_eq!(encode_value(&s), value);
    let mut no_failure = s.clone();
    no_failure.failure = None;
    let mut short = value[..23].to_vec();
    short.push(0);
    assert_eq!(encode_value(&no_failure), short);
    assert_eq!(decode_value(&s.key(), &value).unwrap(), s);
    assert_eq!(decode_key(&key).unwrap(), s.key());
}

#[test]
fn unknown_versions_are_refused() {
    let s = sample();
    let mut key = encode_key(&s.key());
    key[1] = 1;
    assert!(matches!(
        decode_key(&key),
        Err(StateError::UnsupportedVersion {
            what: "key",
            version: 1
        })
    ));
    let mut value = encode_value(&s);
    value[1] = 1;
    assert!(matches!(
        decode_value(&s.key(), &value),
        Err(StateError::UnsupportedVersion {
            what: "value",
            version: 1
        })
    ));
}

#[test]
fn corrupt_record_bytes_are_errors_not_panics() {
    let s = sample();
    let key = encode_key(&s.key());
    let value = encode_value(&s);
    // Every strict prefix, and one byte too many.
    for n in 0..key.len() {
        assert!(
            matches!(decode_key(&key[..n]), Err(StateError::Corrupt { .. })),
            "{n}"
        );
    }
    for n in 0..value.len() {
        assert!(decode_value(&s.key(), &value[..n]).is_err(), "{n}");
    }
    let mut long = value.clone();
    long.push(0);
    assert!(matches!(
        decode_value(&s.key(), &long),
        Err(StateError::Corrupt { .. })
    ));
    // Field by field.
    let corrupt_at = |pos: usize, byte: u8| {
        let mut v = value.clone();
        v[pos] = byte;
        match decode_value(&s.key(), &v) {
            Err(StateError::Corrupt { position, .. }) => position,
            other => panic!("byte {pos} = {byte}: {other:?}"),
        }
    };
    assert_eq!(corrupt_at(2, 9), 2, "unknown state byte");
    assert_eq!(corrupt_at(23, 2), 23, "failure flag");
    assert_eq!(corrupt_at(24, 7), 24, "retryable flag");
    assert_eq!(corrupt_at(29, 200), 29, "previous state");
    assert_eq!(corrupt_at(42, 0xFF), 42, "invalid UTF-8");
    let mut huge = value.clone();
    huge[38..42].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        decode_value(&s.key(), &huge),
        Err(StateError::Corrupt { .. })
    ));
    let mut bad_name = key.clone();
    bad_name[4] = 0xFF;
    assert!(matches!(
        decode_key(&bad_name),
        Err(StateError::Corrupt { .. })
    ));
}

fn any_state() -> impl Strategy<Value = MirrorPartitionState> {
    prop::sample::select(MirrorPartitionState::ALL.to_vec())
}

prop_compose! {
    fn any_failure()(
        reason in ".{0,60}",
        retryable in any::<bool>(),
        attempt in any::<i32>(),
        previous_state in any_state(),
        next_retry_ms in any::<i64>(),
    ) -> Failure {
        Failure { reason, retryable, attempt, previous_state, next_retry_ms }
    }
}

prop_compose! {
    fn any_partition_state()(
        mirror in ".{0,40}",
        topic_id in any::<[u8; 16]>(),
        partition in any::<i32>(),
        state in any_state(),
        state_epoch in any::<i32>(),
        lme in any::<i32>(),
        dle in any::<i32>(),
        failure in proptest::option::of(any_failure()),
        updated_ms in any::<i64>(),
    ) -> PartitionMirrorState {
        PartitionMirrorState {
            mirror,
            topic_id,
            partition,
            state,
            state_epoch,
            last_mirror_epoch: LeaderEpoch(lme),
            destination_leader_epoch: LeaderEpoch(dle),
            failure,
            updated_ms,
        }
    }
}

prop_compose! {
    fn any_intent()(
        states in proptest::collection::vec(proptest::option::of(any_partition_state()), 0..4),
        topic in ".{0,40}",
        before in prop::sample::select(vec![TopicBefore::Absent, TopicBefore::Writable, TopicBefore::ReadOnly]),
        configs_before in proptest::collection::vec((".{0,20}", ".{0,20}"), 0..4),
    ) -> StartIntent {
        let partitions = states.into_iter().enumerate().map(|(p, st)| {
            // A partition's state has the intent's mirror and topic id, and its partition.
            let st = st.map(|st| PartitionMirrorState {
                mirror: "east".into(),
                topic_id: [7; 16],
                partition: p as i32,
                ..st
            });
            (p as i32, st)
        }).collect();
        StartIntent { mirror: "east".into(), topic_id: [7; 16], topic, topic_before: before, configs_before, partitions }
    }
}

proptest! {
    #[test]
    fn start_intents_round_trip(i in any_intent()) {
        let key = decode_intent_key(&encode_intent_key(&i.key())).unwrap();
        prop_assert_eq!(&key, &i.key());
        prop_assert_eq!(decode_intent_value(&key, &encode_intent_value(&i)).unwrap(), i);
    }

    #[test]
    fn a_flipped_intent_byte_never_panics(i in any_intent(), pos in any::<prop::sample::Index>(), x in 1u8..) {
        let mut v = encode_intent_value(&i);
        let at = pos.index(v.len());
        v[at] ^= x;
        let _ = decode_intent_value(&i.key(), &v);
        for n in 0..v.len() {
            let _ = decode_intent_value(&i.key(), &v[..n]);
        }
    }

    #[test]
    fn keys_and_values_round_trip(s in any_partition_state()) {
        let key = decode_key(&encode_key(&s.key())).unwrap();
        prop_assert_eq!(&key, &s.key());
        prop_assert_eq!(decode_value(&key, &encode_value(&s)).unwrap(), s);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
        let key = StateKey { mirror: "m".into(), topic_id: [1; 16], partition: 0 };
        let _ = decode_key(&bytes);
        let _ = decode_value(&key, &bytes);
    }

    #[test]
    fn a_flipped_byte_never_panics(s in any_partition_state(), pos in any::<prop::sample::Index>(), x in 1u8..) {
        let mut v = encode_value(&s);
        let i = pos.index(v.len());
        v[i] ^= x;
        let _ = decode_value(&s.key(), &v);
        let mut k = encode_key(&s.key());
        let i = pos.index(k.len());
        k[i] ^= x;
        let _ = decode_key(&k);
    }

    #[test]
    fn state_partitions_are_in_range(mirror in ".{0,30}", id in any::<[u8; 16]>(), p in any::<i32>(), n in 1i32..200) {
        let sp = state_partition_for(&mirror, &id, p, n);
        prop_assert!((0..n).contains(&sp));
        prop_assert_eq!(sp, state_partition_for(&mirror, &id, p, n));
    }
}

/// The documented hash, written out again: FNV-1a 64 over `u16 len, name, id, i32 partition`.
fn documented_hash(mirror: &str, id: &[u8; 16], partition: i32) -> u64 {
    let mut bytes = (mirror.len() as u16).to_be_bytes().to_vec();
    bytes.extend_from_slice(mirror.as_bytes());
    bytes.extend_from_slice(id);
    bytes.extend_from_slice(&partition.to_be_bytes());
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

#[test]
fn state_partition_is_the_documented_hash_and_spreads_keys() {
    let mut hits = vec![0; DEFAULT_STATE_PARTITIONS as usize];
    for p in 0..2_000 {
        let id = [p as u8; 16];
        let h = documented_hash("a-to-b", &id, p);
        let key = StateKey {
            mirror: "a-to-b".into(),
            topic_id: id,
            partition: p,
        };
        assert_eq!(key.stable_hash(), h);
        let sp = state_partition_for("a-to-b", &id, p, DEFAULT_STATE_PARTITIONS);
        assert_eq!(sp as u64, h % 50);
        hits[sp as usize] += 1;
    }
    assert!(hits.iter().all(|n| *n > 10), "{hits:?}");
    // Pinned: changing the hash strands every stored state.
    assert_eq!(documented_hash("m", &[0; 16], 0), 0x2e2f_76f8_61f1_92e5);
    assert_eq!(state_partition_for("m", &[0; 16], 0, 50), 47);
}

// ---------------------------------------------------------------------------------------------
// The store

fn open_manager(dir: &Path, storage: Arc<dyn Storage>) -> Arc<LogManager> {
    let (mgr, _) =
        LogManager::open(LogManagerConfig::new(dir), storage, ManualClock::new(1_000)).unwrap();
    Arc::new(mgr)
}

fn pwrite() -> Arc<dyn Storage> {
    Arc::new(PwriteStorage::new())
}

fn state(
    mirror: &str,
    partition: i32,
    target: MirrorPartitionState,
    lme: i32,
) -> PartitionMirrorState {
    let mut s = PartitionMirrorState::new(mirror, [partition as u8; 16], partition);
    s.state = target;
    s.state_epoch = lme + 1;
    s.last_mirror_epoch = LeaderEpoch(lme);
    s
}

fn shutdown(mgr: Arc<LogManager>) {
    Arc::try_unwrap(mgr)
        .expect("the store was dropped")
        .shutdown()
        .unwrap();
}

#[test]
fn open_creates_the_topic_and_puts_gets_and_deletes() {
    let dir = tempfile::tempdir().unwrap();
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), 5).unwrap();
    assert_eq!(store.partition_count(), 5);
    let parts: Vec<_> = mgr
        .partitions()
        .into_iter()
        .filter(|h| h.topic_partition().topic == MIRROR_STATE_TOPIC)
        .collect();
    assert_eq!(parts.len(), 5);
    assert!(parts.iter().all(|h| h.topic_id() == MIRROR_STATE_TOPIC_ID));
    assert!(store.is_empty());

    let a = state("m1", 0, S::Mirroring, 3);
    let b = state("m1", 1, S::Paused, 4);
    let c = state("m2", 0, S::Stopped, 5);
    for s in [&c, &a, &b] {
        store.put(s).unwrap();
    }
    assert_eq!(store.len(), 3);
    assert_eq!(store.get(&a.key()), Some(a.clone()));
    assert_eq!(store.all(), vec![a.clone(), b.clone(), c.clone()]);

    // The record went to the partition the key hashes to, and is committed.
    let home = state_partition_for("m1", &a.topic_id, 0, 5);
    let h = mgr
        .get(&TopicPartition {
            topic: MIRROR_STATE_TOPIC.into(),
            partition: home,
        })
        .unwrap();
    assert!(h.read().log_end_offset().get() >= 1);
    assert_eq!(h.read().high_watermark(), h.read().log_end_offset());

    let mut a2 = a.clone();
    a2.transition(S::Pausing, a.state_epoch, 5).unwrap();
    store.put(&a2).unwrap();
    assert_eq!(store.get(&a.key()), Some(a2));

    assert!(store.delete(&b.key()).unwrap());
    assert!(!store.delete(&b.key()).unwrap());
    assert_eq!(store.get(&b.key()), None);
    assert_eq!(store.len(), 2);
}

#[test]
fn put_if_epoch_fences_stale_writers() {
    let dir = tempfile::tempdir().unwrap();
    let store = MirrorStateStore::open(open_manager(dir.path(), pwrite()), 3).unwrap();
    let mut s = PartitionMirrorState::new("m", [1; 16], 0);
    assert!(matches!(
        store.put_if_epoch(&s, 0),
        Err(StateError::Fenced {
            expected: 0,
            actual: -1
        })
    ));
    store.put_if_epoch(&s, -1).unwrap();
    let stale = s.clone();
    s.transition(S::LogAlignment, 0, 1).unwrap();
    store.put_if_epoch(&s, 0).unwrap();
    // A writer that read epoch 0 and moved on from there is fenced.
    let mut late = stale;
    late.transition(S::Stopping, 0, 2).unwrap_err();
    late.fail("x", true, 0, 2, &RetryBackoff::default())
        .unwrap();
    assert!(matches!(
        store.put_if_epoch(&late, 0),
        Err(StateError::Fenced {
            expected: 0,
            actual: 1
        })
    ));
    assert_eq!(store.get(&s.key()), Some(s));
}

/// A model of the store: the latest state per key.
type Model = BTreeMap<StateKey, PartitionMirrorState>;

fn check(store: &MirrorStateStore, model: &Model) {
    assert_eq!(store.all(), model.values().cloned().collect::<Vec<_>>());
    for (k, v) in model {
        assert_eq!(store.get(k).as_ref(), Some(v));
    }
}

#[test]
fn the_store_survives_a_clean_reopen_with_later_records_winning() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    {
        let mgr = open_manager(dir.path(), pwrite());
        let store = MirrorStateStore::open(mgr.clone(), 4).unwrap();
        for i in 0..20 {
            let s = state("m", i % 7, S::Mirroring, i);
            store.put(&s).unwrap();
            model.insert(s.key(), s);
        }
        let gone = state("m", 3, S::Mirroring, 0).key();
        store.delete(&gone).unwrap();
        model.remove(&gone);
        check(&store, &model);
        drop(store);
        shutdown(mgr);
    }
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr, 4).unwrap();
    check(&store, &model);
    assert_eq!(store.len(), 6);
}

/// The compaction stand-in: many writes to a few keys keep each partition within the dirty
/// threshold of its live keys, move the log start, and a clean reopen or a crash reopen loads
/// exactly the latest states (deleted keys stay deleted).
#[test]
fn rewrites_keep_the_state_topic_bounded_and_the_states_intact() {
    const PARTS: i32 = 3;
    const DIRTY: u64 = 25;
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let log_starts = |mgr: &LogManager| -> Vec<i64> {
        (0..PARTS)
            .map(|p| {
                mgr.get(&TopicPartition {
                    topic: MIRROR_STATE_TOPIC.into(),
                    partition: p,
                })
                .unwrap()
                .read()
                .log_start_offset()
                .get()
            })
            .collect()
    };
    {
        let mgr = open_manager(dir.path(), pwrite());
        let store = MirrorStateStore::open(mgr.clone(), PARTS).unwrap();
        store.set_compaction_min_dirty_records(DIRTY);
        for i in 0..400 {
            // Key 3 is deleted at write 200 and never written again.
            let k = if i > 200 && i % 5 == 3 { 4 } else { i % 5 };
            let s = state("m", k, S::Mirroring, i);
            store.put(&s).unwrap();
            model.insert(s.key(), s);
            if i == 200 {
                let gone = state("m", 3, S::Mirroring, 0).key();
                assert!(store.delete(&gone).unwrap());
                model.remove(&gone);
            }
            for p in 0..PARTS {
                let in_log = store.records_in_log(p).unwrap();
                assert!(
                    in_log < 5 + DIRTY,
                    "partition {p} holds {in_log} records after write {i}"
                );
            }
        }
        check(&store, &model);
        for p in 0..PARTS {
            let h = mgr
                .get(&TopicPartition {
                    topic: MIRROR_STATE_TOPIC.into(),
                    partition: p,
                })
                .unwrap();
            assert_eq!(
                h.read().config().segment.segment_bytes_max,
                STATE_SEGMENT_BYTES,
                "segments small enough that a moved log start frees disk"
            );
        }
        let starts = log_starts(&mgr);
        assert!(
            starts.iter().filter(|&&s| s > 0).count() >= 2,
            "the log start moved where keys live: {starts:?}"
        );
        drop(store);
        shutdown(mgr);
    }
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), PARTS).unwrap();
    check(&store, &model);
    assert_eq!(store.len(), 4);
    let loaded: u64 = (0..PARTS).map(|p| store.records_in_log(p).unwrap()).sum();
    assert!(
        loaded < 4 + PARTS as u64 * DIRTY,
        "reload read {loaded} records"
    );
    // More writes, then a crash (no shutdown): the reopen recovers the same states.
    store.set_compaction_min_dirty_records(DIRTY);
    for i in 0..100 {
        let s = state("m", [0, 1, 2, 4][i as usize % 4], S::Paused, 1000 + i);
        store.put(&s).unwrap();
        model.insert(s.key(), s);
    }
    drop(store);
    drop(mgr);
    let store = MirrorStateStore::open(open_manager(dir.path(), pwrite()), PARTS).unwrap();
    check(&store, &model);
}

#[test]
fn the_store_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    {
        let mgr = open_manager(dir.path(), pwrite());
        let store = MirrorStateStore::open(mgr.clone(), 3).unwrap();
        for i in 0..10 {
            let s = state("crashy", i % 4, S::Paused, i);
            store.put(&s).unwrap();
            model.insert(s.key(), s);
        }
        // No shutdown: the next open recovers.
        drop(store);
        drop(mgr);
    }
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), 3).unwrap();
    check(&store, &model);
    // And it keeps working after recovery.
    let s = state("crashy", 9, S::Stopped, 1);
    store.put(&s).unwrap();
    model.insert(s.key(), s);
    drop(store);
    drop(mgr);
    let store = MirrorStateStore::open(open_manager(dir.path(), pwrite()), 3).unwrap();
    check(&store, &model);
}

#[test]
fn acknowledged_writes_survive_a_power_cut_with_a_torn_tail() {
    for torn in [0usize, 1, 30, 70, 100_000] {
        let dir = tempfile::tempdir().unwrap();
        let sim = SimStorage::new();
        let mut model = Model::new();
        let unacked;
        {
            let mgr = open_manager(dir.path(), Arc::new(sim.clone()));
            let store = MirrorStateStore::open(mgr.clone(), 2).unwrap();
            for i in 0..6 {
                let s = state("sim", i, S::Mirroring, i);
                store.put(&s).unwrap();
                model.insert(s.key(), s);
            }
            // The power goes: syncs fail from now on, so this put is not acknowledged.
            sim.halt_after_syncs(sim.syncs_completed());
            unacked = state("sim", 2, S::Stopping, 40);
            assert!(store.put(&unacked).is_err());
            drop(store);
            drop(mgr);
        }
        let crashed = sim.crash(TornTail::KeepUnsynced {
            file_contains: ".log".into(),
            bytes: torn,
        });
        let store = MirrorStateStore::open(open_manager(dir.path(), Arc::new(crashed)), 2).unwrap();
        // The unacknowledged write may or may not have made it, whole; nothing else changed.
        let got = store.get(&unacked.key()).unwrap();
        if got == unacked {
            model.insert(unacked.key(), unacked.clone());
        }
        check(&store, &model);
    }
}

#[test]
fn a_seeded_history_of_puts_deletes_reopens_and_crashes_matches_the_model() {
    let seed = 0x5eed_u64;
    let mut rng = SmallRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    let mut mgr = open_manager(dir.path(), pwrite());
    let mut store = MirrorStateStore::open(mgr.clone(), 3).unwrap();
    for step in 0..300 {
        match rng.random_range(0..100) {
            0..=59 => {
                let mut s = state(
                    ["m1", "m2"][rng.random_range(0..2)],
                    rng.random_range(0..8),
                    MirrorPartitionState::ALL[rng.random_range(0..10)],
                    rng.random_range(0..1000),
                );
                if rng.random_bool(0.3) {
                    s.fail(
                        "boom",
                        rng.random(),
                        s.state_epoch,
                        step,
                        &RetryBackoff::default(),
                    )
                    .unwrap();
                }
                store.put(&s).unwrap();
                model.insert(s.key(), s);
            }
            60..=84 => {
                let key = state(
                    ["m1", "m2"][rng.random_range(0..2)],
                    rng.random_range(0..8),
                    S::Unknown,
                    0,
                )
                .key();
                assert_eq!(store.delete(&key).unwrap(), model.remove(&key).is_some());
            }
            85..=92 => {
                drop(store);
                shutdown(mgr);
                mgr = open_manager(dir.path(), pwrite());
                store = MirrorStateStore::open(mgr.clone(), 3).unwrap();
            }
            _ => {
                drop(store);
                drop(mgr);
                mgr = open_manager(dir.path(), pwrite());
                store = MirrorStateStore::open(mgr.clone(), 3).unwrap();
            }
        }
        check(&store, &model);
    }
}

#[test]
fn a_different_partition_count_is_refused_once_there_is_data() {
    let dir = tempfile::tempdir().unwrap();
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), 4).unwrap();
    store.put(&state("m", 1, S::Mirroring, 1)).unwrap();
    drop(store);
    assert!(matches!(
        MirrorStateStore::open(mgr.clone(), 3),
        Err(StateError::Store(_))
    ));
    assert!(matches!(
        MirrorStateStore::open(mgr.clone(), 6),
        Err(StateError::Store(_))
    ));
    assert!(matches!(
        MirrorStateStore::open(mgr.clone(), 0),
        Err(StateError::InvalidConfig(_))
    ));
    assert_eq!(MirrorStateStore::open(mgr, 4).unwrap().len(), 1);

    // Empty partitions left by an interrupted creation are completed.
    let dir = tempfile::tempdir().unwrap();
    let mgr = open_manager(dir.path(), pwrite());
    drop(MirrorStateStore::open(mgr.clone(), 2).unwrap());
    let store = MirrorStateStore::open(mgr.clone(), 5).unwrap();
    assert_eq!(store.partition_count(), 5);
}

/// Appends a raw record to `__mirror_state-p`, as a buggy or newer writer could have.
fn append_raw(mgr: &LogManager, p: i32, key: Option<&[u8]>, value: Option<&[u8]>) {
    let h = mgr
        .get(&TopicPartition {
            topic: MIRROR_STATE_TOPIC.into(),
            partition: p,
        })
        .unwrap();
    let batch = BatchBuilder::new()
        .record(TimestampMs(1), key, value)
        .build();
    h.append_as_leader_durable(
        batch.into_bytes(),
        LeaderEpoch(0),
        LeaderOrigin::Coordinator,
    )
    .unwrap();
}

#[test]
fn loading_a_corrupt_record_is_an_error_and_unknown_key_types_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), 1).unwrap();
    let s = state("m", 0, S::Mirroring, 2);
    store.put(&s).unwrap();
    drop(store);

    // A key type from a newer version: skipped.
    append_raw(&mgr, 0, Some(&[0, 9, 1, 2, 3]), Some(b"whatever"));
    let store = MirrorStateStore::open(mgr.clone(), 1).unwrap();
    assert_eq!(store.all(), vec![s.clone()]);
    drop(store);

    // A value that does not decode: refused, naming where.
    append_raw(&mgr, 0, Some(&encode_key(&s.key())), Some(&[0, 0, 3]));
    match MirrorStateStore::open(mgr.clone(), 1) {
        Err(StateError::Corrupt { what, .. }) => {
            assert!(what.contains("__mirror_state-0 offset 2"), "{what}")
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn the_state_topic_id_is_fixed_and_valid() {
    assert_ne!(MIRROR_STATE_TOPIC_ID.0, [0; 16]);
    assert_eq!(MIRROR_STATE_TOPIC, "__mirror_state");
    let fnv = |s: &[u8]| {
        s.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
        })
    };
    let mut id = fnv(b"mirrorlog:__mirror_state:0").to_be_bytes().to_vec();
    id.extend_from_slice(&fnv(b"mirrorlog:__mirror_state:1").to_be_bytes());
    assert_eq!(MIRROR_STATE_TOPIC_ID.0.to_vec(), id);
}

/// Every record of `__mirror_state-p` from its log start, as (key, value) bytes.
fn raw_records(mgr: &LogManager, p: i32) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    use mirrorlog_engine::log::FetchIsolation;
    use mirrorlog_segment::Batches;
    let h = mgr
        .get(&TopicPartition {
            topic: MIRROR_STATE_TOPIC.into(),
            partition: p,
        })
        .unwrap();
    let log = h.read();
    let mut next = log.log_start_offset();
    let mut out = Vec::new();
    while next < log.log_end_offset() {
        let info = log
            .read(next, 1 << 20, FetchIsolation::LogEnd, true)
            .unwrap();
        let bytes = info.records.unwrap().slice.read_all().unwrap();
        for batch in Batches::new(bytes) {
            let batch = batch.unwrap();
            for r in batch.records().unwrap() {
                let r = r.unwrap();
                if r.offset >= next {
                    out.push((r.key.unwrap().to_vec(), r.value.map(|v| v.to_vec())));
                }
            }
            next = batch.next_offset();
        }
    }
    out
}

/// The compaction stand-in keeps the latest record of every live key it cannot decode (a key
/// type from a newer version), so a downgrade does not lose a newer version's state; a key of
/// that kind deleted by a tombstone stays deleted.
#[test]
fn compaction_keeps_records_of_unknown_key_types() {
    let dir = tempfile::tempdir().unwrap();
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), 1).unwrap();
    store.put(&state("m", 0, S::Mirroring, 1)).unwrap();
    drop(store);
    let (kept, gone) = (vec![0u8, 9, 1], vec![0u8, 9, 2]);
    append_raw(&mgr, 0, Some(&kept), Some(b"old"));
    append_raw(&mgr, 0, Some(&kept), Some(b"newer"));
    append_raw(&mgr, 0, Some(&gone), Some(b"x"));
    append_raw(&mgr, 0, Some(&gone), None);
    let store = MirrorStateStore::open(mgr.clone(), 1).unwrap();
    store.set_compaction_min_dirty_records(4);
    let mut last = None;
    for i in 0..20 {
        let s = state("m", i % 2, S::Mirroring, 2 + i);
        store.put(&s).unwrap();
        last = Some(s);
    }
    let h = mgr
        .get(&TopicPartition {
            topic: MIRROR_STATE_TOPIC.into(),
            partition: 0,
        })
        .unwrap();
    assert!(h.read().log_start_offset().get() > 0, "compacted");
    let records = raw_records(&mgr, 0);
    let unknown: Vec<_> = records.iter().filter(|(k, _)| k[1] == 9).collect();
    assert_eq!(
        unknown,
        vec![&(kept.clone(), Some(b"newer".to_vec()))],
        "the live unknown key kept with its latest value, the deleted one gone"
    );
    drop(store);
    let store = MirrorStateStore::open(mgr.clone(), 1).unwrap();
    assert_eq!(store.len(), 2);
    assert!(store.all().contains(&last.unwrap()));
}

/// A start intent's key is a partition state key of type 3 and partition −1, in the partition
/// that key hashes to; its value is the documented layout; intents survive a reopen and the
/// compaction stand-in, and a tombstone deletes them.
#[test]
fn start_intents_are_stored_as_documented_and_kept_by_compaction() {
    let st = state("east", 1, S::Stopped, 0);
    let intent = StartIntent {
        mirror: "east".into(),
        topic_id: st.topic_id,
        topic: "orders".into(),
        topic_before: TopicBefore::Writable,
        configs_before: vec![("retention.ms".into(), "1".into())],
        partitions: vec![(0, None), (1, Some(st.clone()))],
    };
    let key = encode_intent_key(&intent.key());
    assert_eq!(key[..2], KEY_TYPE_START_INTENT.to_be_bytes());
    assert_eq!(key[2..], encode_key(&intent.key())[2..]);
    assert_eq!(key[key.len() - 4..], (-1i32).to_be_bytes());
    let value = encode_intent_value(&intent);
    let mut expected = vec![0, 0, 1, 0, 6];
    expected.extend_from_slice(b"orders");
    expected.extend_from_slice(&[0, 0, 0, 1, 0, 12]);
    expected.extend_from_slice(b"retention.ms");
    expected.extend_from_slice(&[0, 0, 0, 1, b'1', 0, 0, 0, 2]);
    expected.extend_from_slice(&[0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 1]);
    let st_value = encode_value(&st);
    expected.extend_from_slice(&(st_value.len() as u32).to_be_bytes());
    expected.extend_from_slice(&st_value);
    assert_eq!(value, expected);

    let dir = tempfile::tempdir().unwrap();
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), 3).unwrap();
    store.put_start_intent(&intent).unwrap();
    let home = state_partition_for("east", &intent.topic_id, -1, 3);
    assert!(raw_records(&mgr, home).iter().any(|(k, _)| *k == key));
    assert!(store.all().is_empty(), "an intent is no partition state");
    store.set_compaction_min_dirty_records(2);
    for i in 0..10 {
        store.put(&state("east", 2, S::Mirroring, i)).unwrap();
    }
    drop(store);
    let store = MirrorStateStore::open(mgr.clone(), 3).unwrap();
    assert_eq!(store.start_intents("east"), vec![intent.clone()]);
    assert!(store.start_intents("west").is_empty());
    assert!(store.delete_start_intent(&intent.key()).unwrap());
    assert!(!store.delete_start_intent(&intent.key()).unwrap());
    drop(store);
    let store = MirrorStateStore::open(mgr, 3).unwrap();
    assert_eq!(store.start_intent("east", intent.topic_id), None);
}

/// A mirror deletion record's key is a partition state key of type 4 with an all-zero topic id
/// and partition −1, its value the version alone; it survives a reopen and the compaction
/// stand-in, and its tombstone deletes it.
#[test]
fn mirror_deletions_are_stored_as_documented_and_kept_by_compaction() {
    use mirrorlog_mirror::state::{KEY_TYPE_MIRROR_DELETION, mirror_deletion_key};
    let key = mirror_deletion_key("east");
    let mut expected = KEY_TYPE_MIRROR_DELETION.to_be_bytes().to_vec();
    expected.extend_from_slice(&encode_key(&key)[2..]);
    assert_eq!(expected[expected.len() - 20..expected.len() - 4], [0; 16]);
    assert_eq!(expected[expected.len() - 4..], (-1i32).to_be_bytes());

    let dir = tempfile::tempdir().unwrap();
    let mgr = open_manager(dir.path(), pwrite());
    let store = MirrorStateStore::open(mgr.clone(), 1).unwrap();
    store.put_mirror_deletion("east").unwrap();
    assert!(
        raw_records(&mgr, 0).contains(&(expected.clone(), Some(vec![0, 0]))),
        "{:?}",
        raw_records(&mgr, 0)
    );
    store.set_compaction_min_dirty_records(2);
    for i in 0..10 {
        store.put(&state("west", 2, S::Mirroring, i)).unwrap();
    }
    drop(store);
    let store = MirrorStateStore::open(mgr.clone(), 1).unwrap();
    let h = mgr
        .get(&TopicPartition {
            topic: MIRROR_STATE_TOPIC.into(),
            partition: 0,
        })
        .unwrap();
    assert!(h.read().log_start_offset().get() > 0, "compacted");
    assert!(store.mirror_deletion_pending("east"));
    assert!(!store.mirror_deletion_pending("west"));
    assert!(store.delete_mirror_deletion("east").unwrap());
    assert!(!store.delete_mirror_deletion("east").unwrap());
    drop(store);
    let store = MirrorStateStore::open(mgr, 1).unwrap();
    assert!(!store.mirror_deletion_pending("east"));
}
