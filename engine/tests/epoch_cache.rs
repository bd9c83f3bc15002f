//! Scenario: a follower (or a mirror following its source) reconciles its log with its leader's
//! after leader changes, clean and unclean, using only the two epoch caches and
//! `truncation_for_leader_answer` — by `OffsetsForLeaderEpoch` round trips and by Fetch
//! `DivergingEpoch` answers alike — and ends exactly at the end of the longest prefix the two logs
//! share. Also: a `leader-epoch-checkpoint` written by a real Kafka broker opens and is written
//! back byte for byte.
//!
//! A log is modelled as the epoch of each of its records: within one epoch only that epoch's
//! leader writes, so two records with the same offset and epoch are the same record, and the
//! shared prefix of two logs is the shared prefix of their epoch sequences.

use std::fs;
use std::path::Path;

use mirrorlog_engine::epoch_cache::{LeaderEpochCache, truncation_for_leader_answer};
use mirrorlog_index::{EpochEntry, LeaderEpoch, Offset};
use proptest::prelude::*;

/// A replica's log (the epoch of every record) and its epoch cache.
#[derive(Debug)]
struct Replica {
    log: Vec<LeaderEpoch>,
    cache: LeaderEpochCache,
}

impl Replica {
    fn empty() -> Self {
        Replica {
            log: Vec::new(),
            cache: LeaderEpochCache::in_memory(),
        }
    }

    /// A replica whose log is `runs` of `(epoch, record count)`, appended in order.
    fn with_runs(runs: &[(i32, usize)]) -> Self {
        let mut replica = Replica::empty();
        for &(epoch, count) in runs {
            replica.append(LeaderEpoch(epoch), count);
        }
        replica
    }

    fn log_end_offset(&self) -> Offset {
        Offset(self.log.len() as i64)
    }

    /// Appends `count` records of `epoch`, assigning the epoch as every append does.
    fn append(&mut self, epoch: LeaderEpoch, count: usize) {
        for _ in 0..count {
            self.cache.assign(epoch, self.log_end_offset()).unwrap();
            self.log.push(epoch);
        }
    }

    /// What becoming leader in `epoch` does to the cache: the epoch starts at the log end, even
    /// before anything is written in it.
    fn become_leader(&mut self, epoch: LeaderEpoch) {
        self.cache.assign(epoch, self.log_end_offset()).unwrap();
    }

    /// Kafka's `UnifiedLog.truncateTo`: at or past the log end only the epoch cache is trimmed
    /// (to drop an epoch this replica started as leader but never wrote in).
    fn truncate_to(&mut self, target: Offset) {
        if target >= self.log_end_offset() {
            self.cache.truncate_from_end(self.log_end_offset()).unwrap();
        } else {
            self.log.truncate(usize::try_from(target.get()).unwrap());
            self.cache.truncate_from_end(target).unwrap();
        }
    }

    /// Copies up to `max` records from `leader` at this replica's log end, as a fetch does.
    fn replicate_from(&mut self, leader: &Replica, max: usize) {
        let from = self.log.len();
        let to = leader.log.len().min(from.saturating_add(max));
        for &epoch in &leader.log[from..to] {
            self.append(epoch, 1);
        }
    }

    /// The entries a cache built from this log alone would hold.
    fn entries_of_log(&self) -> Vec<EpochEntry> {
        let mut entries: Vec<EpochEntry> = Vec::new();
        for (offset, &epoch) in self.log.iter().enumerate() {
            if entries.last().is_none_or(|e| e.epoch != epoch) {
                entries.push(EpochEntry {
                    epoch,
                    start_offset: Offset(offset as i64),
                });
            }
        }
        entries
    }
}

/// How many leading records two logs share.
fn shared_prefix(a: &[LeaderEpoch], b: &[LeaderEpoch]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Every round asks about a strictly lower follower epoch, so this bounds the rounds.
fn max_rounds(follower: &Replica) -> usize {
    follower.cache.entries().len() + 1
}

/// The `OffsetsForLeaderEpoch` loop: ask the leader about the follower's latest epoch, truncate
/// as told, ask again about the epoch named until the decision is complete. Returns the rounds.
fn reconcile_by_offsets_for_leader_epoch(leader: &Replica, follower: &mut Replica) -> usize {
    let bound = max_rounds(follower);
    // A follower without epochs has an empty log here: nothing to reconcile.
    let mut query = follower.cache.latest_epoch();
    let mut rounds = 0;
    while let Some(epoch) = query {
        rounds += 1;
        assert!(rounds <= bound, "no convergence in {bound} rounds");
        let (leader_epoch, leader_end) =
            leader.cache.end_offset_for(epoch, leader.log_end_offset());
        let decision = truncation_for_leader_answer(
            leader_epoch,
            leader_end,
            &follower.cache,
            follower.log_end_offset(),
            follower.log_end_offset(),
        );
        follower.truncate_to(decision.truncate_to);
        if decision.completed {
            assert_eq!(decision.next_epoch_to_query, None);
            break;
        }
        // Kafka asks again with the follower's latest epoch, which the truncation made this one.
        assert_eq!(decision.next_epoch_to_query, follower.cache.latest_epoch());
        query = decision.next_epoch_to_query;
    }
    rounds
}

/// The Fetch loop (v12+): the follower sends its latest epoch as `LastFetchedEpoch`; the leader
/// answers `DivergingEpoch` when that epoch or the fetch offset is not on its log
/// (`Partition.fetchRecords`); the follower truncates and fetches again. Returns the rounds that
/// found a divergence.
fn reconcile_by_fetch(leader: &Replica, follower: &mut Replica) -> usize {
    let bound = max_rounds(follower);
    let mut rounds = 0;
    while let Some(last_fetched_epoch) = follower.cache.latest_epoch() {
        let fetch_offset = follower.log_end_offset();
        let (epoch, end_offset) = leader
            .cache
            .end_offset_for(last_fetched_epoch, leader.log_end_offset());
        assert!(
            epoch != LeaderEpoch::NONE && end_offset != Offset::UNKNOWN,
            "leader cannot place epoch {last_fetched_epoch} (it would answer OFFSET_OUT_OF_RANGE)"
        );
        if epoch >= last_fetched_epoch && end_offset >= fetch_offset {
            break;
        }
        rounds += 1;
        assert!(rounds <= bound, "no convergence in {bound} rounds");
        let decision = truncation_for_leader_answer(
            epoch,
            end_offset,
            &follower.cache,
            follower.log_end_offset(),
            fetch_offset,
        );
        follower.truncate_to(decision.truncate_to);
    }
    rounds
}

#[derive(Debug, Clone, Copy)]
enum Via {
    OffsetsForLeaderEpoch,
    Fetch,
}

/// Reconciles `follower` with `leader` by `via` and checks it ends at the shared prefix, with its
/// log a prefix of the leader's and its cache exactly what its log implies.
fn reconcile_and_check(leader: &Replica, follower: &mut Replica, via: Via) -> usize {
    let shared = shared_prefix(&leader.log, &follower.log);
    let rounds = match via {
        Via::OffsetsForLeaderEpoch => reconcile_by_offsets_for_leader_epoch(leader, follower),
        Via::Fetch => reconcile_by_fetch(leader, follower),
    };
    assert_eq!(
        follower.log.len(),
        shared,
        "{via:?}: follower should end at the shared prefix; leader {:?}, follower cache {:?}",
        leader.cache.entries(),
        follower.cache.entries()
    );
    assert_eq!(follower.log[..], leader.log[..shared]);
    assert_cache_matches_log(follower);
    rounds
}

/// The cache holds exactly the epochs of the log, plus possibly an epoch the replica began as
/// leader at its log end and never wrote in: Kafka's Fetch path leaves that one in place, and the
/// next append replaces it.
fn assert_cache_matches_log(replica: &Replica) {
    let of_log = replica.entries_of_log();
    let cache = replica.cache.entries();
    let unwritten = match cache.last() {
        Some(last) if last.start_offset == replica.log_end_offset() => 1,
        _ => 0,
    };
    assert_eq!(
        &cache[..cache.len() - unwritten],
        of_log,
        "cache vs log {:?}",
        replica.log
    );
}

struct Scenario {
    name: &'static str,
    /// The leader's log as `(epoch, records)` runs.
    leader: &'static [(i32, usize)],
    /// The epoch the leader leads in now (assigned at its log end, as on becoming leader).
    leader_epoch: i32,
    /// The follower's log as `(epoch, records)` runs.
    follower: &'static [(i32, usize)],
    /// The epoch the follower last led in without writing anything, if any.
    follower_led_empty: Option<i32>,
    /// Where the follower must end.
    expected: i64,
    /// `OffsetsForLeaderEpoch` round trips expected.
    rounds: usize,
}

const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "identical logs keep everything",
        leader: &[(0, 5), (1, 5)],
        leader_epoch: 2,
        follower: &[(0, 5), (1, 5)],
        follower_led_empty: None,
        expected: 10,
        rounds: 1,
    },
    Scenario {
        name: "a follower behind in a shared epoch keeps everything",
        leader: &[(0, 5), (1, 5)],
        leader_epoch: 2,
        follower: &[(0, 5), (1, 2)],
        follower_led_empty: None,
        expected: 7,
        rounds: 1,
    },
    Scenario {
        name: "a follower behind by whole epochs keeps everything",
        leader: &[(0, 5), (1, 5), (3, 4)],
        leader_epoch: 3,
        follower: &[(0, 3)],
        follower_led_empty: None,
        expected: 3,
        rounds: 1,
    },
    Scenario {
        name: "an unclean leader that missed the end of a shared epoch cuts the follower there",
        leader: &[(0, 5), (1, 2)],
        leader_epoch: 2,
        follower: &[(0, 5), (1, 5)],
        follower_led_empty: None,
        expected: 7,
        rounds: 1,
    },
    Scenario {
        name: "an epoch the leader never saw is cut at its start",
        leader: &[(0, 5), (1, 5), (4, 3)],
        leader_epoch: 4,
        follower: &[(0, 5), (1, 5), (3, 6)],
        follower_led_empty: None,
        expected: 10,
        rounds: 1,
    },
    Scenario {
        name: "an epoch the leader never saw, after a shared epoch the leader holds less of",
        leader: &[(0, 5), (1, 3), (4, 3)],
        leader_epoch: 4,
        follower: &[(0, 5), (1, 5), (3, 6)],
        follower_led_empty: None,
        expected: 8,
        rounds: 1,
    },
    Scenario {
        name: "interleaved epochs on both sides take several round trips",
        leader: &[(0, 5), (2, 3), (4, 2)],
        leader_epoch: 4,
        follower: &[(0, 3), (1, 3), (3, 2)],
        follower_led_empty: None,
        expected: 3,
        rounds: 2,
    },
    Scenario {
        name: "alternating unclean elections take one round trip per epoch pair",
        leader: &[(0, 4), (2, 2), (4, 2)],
        leader_epoch: 6,
        follower: &[(0, 2), (1, 2), (3, 2), (5, 2)],
        follower_led_empty: None,
        expected: 2,
        rounds: 3,
    },
    Scenario {
        name: "a long tail of follower-only epochs is cut back to the last shared epoch",
        leader: &[(0, 3), (4, 1)],
        leader_epoch: 5,
        follower: &[(0, 2), (1, 2), (2, 2), (3, 2)],
        follower_led_empty: None,
        expected: 2,
        rounds: 1,
    },
    Scenario {
        name: "logs that diverge at offset zero are truncated fully",
        leader: &[(2, 3)],
        leader_epoch: 2,
        follower: &[(1, 5)],
        follower_led_empty: None,
        expected: 0,
        rounds: 1,
    },
    Scenario {
        name: "a leader that has written nothing yet still cuts a longer follower",
        leader: &[(0, 4)],
        leader_epoch: 3,
        follower: &[(0, 4), (1, 6)],
        follower_led_empty: None,
        expected: 4,
        rounds: 1,
    },
    Scenario {
        name: "a follower that led an epoch without writing drops that epoch only",
        leader: &[(0, 5), (2, 5)],
        leader_epoch: 4,
        follower: &[(0, 5), (2, 5)],
        follower_led_empty: Some(3),
        expected: 10,
        rounds: 1,
    },
    Scenario {
        name: "a follower that led an epoch without writing, ahead of an unclean leader",
        leader: &[(0, 5), (2, 2)],
        leader_epoch: 4,
        follower: &[(0, 5), (2, 5)],
        follower_led_empty: Some(3),
        expected: 7,
        rounds: 1,
    },
    Scenario {
        name: "an empty follower has nothing to truncate",
        leader: &[(0, 5)],
        leader_epoch: 1,
        follower: &[],
        follower_led_empty: None,
        expected: 0,
        rounds: 0,
    },
    Scenario {
        name: "an empty leader truncates every follower fully",
        leader: &[],
        leader_epoch: 6,
        follower: &[(0, 2), (5, 3)],
        follower_led_empty: None,
        expected: 0,
        rounds: 1,
    },
];

fn build(scenario: &Scenario) -> (Replica, Replica) {
    let mut leader = Replica::with_runs(scenario.leader);
    leader.become_leader(LeaderEpoch(scenario.leader_epoch));
    let mut follower = Replica::with_runs(scenario.follower);
    if let Some(epoch) = scenario.follower_led_empty {
        follower.become_leader(LeaderEpoch(epoch));
    }
    (leader, follower)
}

#[test]
fn followers_end_at_the_shared_prefix_in_every_scenario() {
    for scenario in SCENARIOS {
        let (leader, mut follower) = build(scenario);
        let shared = shared_prefix(&leader.log, &follower.log) as i64;
        assert_eq!(
            shared, scenario.expected,
            "{}: table disagrees",
            scenario.name
        );

        let rounds = reconcile_and_check(&leader, &mut follower, Via::OffsetsForLeaderEpoch);
        assert_eq!(
            follower.log_end_offset(),
            Offset(scenario.expected),
            "{}",
            scenario.name
        );
        assert_eq!(rounds, scenario.rounds, "{}: round trips", scenario.name);
        // Reconciling again changes nothing.
        let again = reconcile_by_offsets_for_leader_epoch(&leader, &mut follower);
        assert!(again <= 1, "{}", scenario.name);
        assert_eq!(
            follower.log_end_offset(),
            Offset(scenario.expected),
            "{}",
            scenario.name
        );

        let (leader, mut follower) = build(scenario);
        reconcile_and_check(&leader, &mut follower, Via::Fetch);
        assert_eq!(
            follower.log_end_offset(),
            Offset(scenario.expected),
            "{}",
            scenario.name
        );
        assert_eq!(
            reconcile_by_fetch(&leader, &mut follower),
            0,
            "{}",
            scenario.name
        );
    }
}

#[test]
fn a_reconciled_follower_catches_up_to_an_identical_log() {
    let scenario = SCENARIOS
        .iter()
        .find(|s| s.name.starts_with("interleaved"))
        .unwrap();
    let (leader, mut follower) = build(scenario);
    reconcile_and_check(&leader, &mut follower, Via::OffsetsForLeaderEpoch);
    follower.replicate_from(&leader, usize::MAX);
    assert_eq!(follower.log, leader.log);
    assert_eq!(follower.cache.entries(), leader.entries_of_log());
}

/// One step of a three-replica cluster's life.
#[derive(Debug, Clone)]
enum Event {
    /// `replica` becomes leader in an epoch `gap` above every epoch so far, whatever its log
    /// (unclean elections included).
    Elect { replica: usize, gap: i32 },
    /// The leader appends `records` in its epoch.
    Produce { records: usize },
    /// `replica` reconciles with the leader if it has not in this epoch, then fetches up to
    /// `records`.
    Replicate {
        replica: usize,
        records: usize,
        by_fetch: bool,
    },
}

fn arb_event() -> impl Strategy<Value = Event> {
    prop_oneof![
        1 => (0..3usize, 1..4i32).prop_map(|(replica, gap)| Event::Elect { replica, gap }),
        3 => (1..6usize).prop_map(|records| Event::Produce { records }),
        3 => (0..3usize, 1..8usize, any::<bool>())
            .prop_map(|(replica, records, by_fetch)| Event::Replicate { replica, records, by_fetch }),
    ]
}

fn via(by_fetch: bool) -> Via {
    if by_fetch {
        Via::Fetch
    } else {
        Via::OffsetsForLeaderEpoch
    }
}

/// Two distinct elements of `replicas`, the first mutably.
fn pair(replicas: &mut [Replica], mutable: usize, other: usize) -> (&mut Replica, &Replica) {
    assert_ne!(mutable, other);
    if mutable < other {
        let (a, b) = replicas.split_at_mut(other);
        (&mut a[mutable], &b[0])
    } else {
        let (a, b) = replicas.split_at_mut(mutable);
        (&mut b[0], &a[other])
    }
}

/// What a simulated history exercised, so the tests can show they are not vacuous.
#[derive(Debug, Default)]
struct Coverage {
    reconciliations: usize,
    multi_round: usize,
    truncated_records: usize,
}

/// Runs a three-replica cluster through `events` (replica 0 leads epoch 0 first), reconciling
/// every follower with `reconcile_and_check` before it fetches in a new epoch; at the end every
/// follower reconciles once more by both paths and catches up to an identical log.
fn simulate(events: &[Event]) -> Coverage {
    let mut coverage = Coverage::default();
    let mut replicas = [Replica::empty(), Replica::empty(), Replica::empty()];
    let mut leader = 0;
    let mut epoch = LeaderEpoch(0);
    replicas[leader].become_leader(epoch);
    // The epoch each replica last reconciled with the leader in.
    let mut reconciled = [Some(epoch), None, None];
    let mut reconcile = |leader: &Replica, follower: &mut Replica, via: Via| {
        let before = follower.log.len();
        let rounds = reconcile_and_check(leader, follower, via);
        coverage.reconciliations += 1;
        coverage.multi_round += usize::from(rounds > 1);
        coverage.truncated_records += before - follower.log.len();
    };

    for event in events {
        match *event {
            Event::Elect { replica, gap } => {
                leader = replica;
                epoch = LeaderEpoch(epoch.get() + gap);
                replicas[leader].become_leader(epoch);
                reconciled = [None; 3];
                reconciled[leader] = Some(epoch);
            }
            Event::Produce { records } => replicas[leader].append(epoch, records),
            Event::Replicate {
                replica,
                records,
                by_fetch,
            } => {
                if replica == leader {
                    continue;
                }
                let (follower, leader_replica) = pair(&mut replicas, replica, leader);
                if reconciled[replica] != Some(epoch) {
                    reconcile(leader_replica, follower, via(by_fetch));
                    reconciled[replica] = Some(epoch);
                }
                follower.replicate_from(leader_replica, records);
                assert_cache_matches_log(follower);
            }
        }
    }
    for replica in (0..3).filter(|&r| r != leader) {
        for by_fetch in [false, true] {
            let (follower, leader_replica) = pair(&mut replicas, replica, leader);
            let mut copy = Replica::empty();
            for &e in &follower.log {
                copy.append(e, 1);
            }
            if let Some(latest) = follower.cache.latest_entry()
                && latest.start_offset == follower.log_end_offset()
            {
                copy.become_leader(latest.epoch);
            }
            reconcile(leader_replica, &mut copy, via(by_fetch));
            copy.replicate_from(leader_replica, usize::MAX);
            assert_eq!(copy.log, leader_replica.log);
        }
    }
    coverage
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn followers_always_reconcile_to_the_shared_prefix_in_random_cluster_histories(
        events in proptest::collection::vec(arb_event(), 1..80)
    ) {
        simulate(&events);
    }
}

#[test]
fn seeded_cluster_histories_reconcile_and_exercise_multi_round_truncation() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};

    let mut total = Coverage::default();
    for seed in 0..300u64 {
        let mut rng = SmallRng::seed_from_u64(seed);
        let events: Vec<Event> = (0..rng.random_range(1..120))
            .map(|_| match rng.random_range(0..7) {
                0 => Event::Elect {
                    replica: rng.random_range(0..3),
                    gap: rng.random_range(1..4),
                },
                1..=3 => Event::Produce {
                    records: rng.random_range(1..6),
                },
                _ => Event::Replicate {
                    replica: rng.random_range(0..3),
                    records: rng.random_range(1..8),
                    by_fetch: rng.random(),
                },
            })
            .collect();
        let run = std::panic::catch_unwind(|| simulate(&events));
        let coverage = run.unwrap_or_else(|_| panic!("history failed; replay with seed {seed}"));
        total.reconciliations += coverage.reconciliations;
        total.multi_round += coverage.multi_round;
        total.truncated_records += coverage.truncated_records;
    }
    assert!(
        total.multi_round >= 50,
        "too few multi-round reconciliations: {total:?}"
    );
    assert!(
        total.truncated_records >= 1000,
        "too little truncation: {total:?}"
    );
}

const KAFKA_FOO_0: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/kafka-fixtures/kraft-combined-logs/foo-0"
);

#[test]
fn a_checkpoint_written_by_kafka_opens_and_is_written_back_byte_for_byte() {
    let original = fs::read(Path::new(KAFKA_FOO_0).join("leader-epoch-checkpoint"))
        .expect("shared/kafka-fixtures beside the checkout");
    assert_eq!(original, b"0\n1\n0 0\n");
    // The fixture is read-only: work on a copy.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leader-epoch-checkpoint");
    fs::write(&path, &original).unwrap();

    let mut cache = LeaderEpochCache::open(dir.path()).unwrap();
    assert_eq!(
        cache.entries(),
        [EpochEntry {
            epoch: LeaderEpoch(0),
            start_offset: Offset(0),
        }]
    );
    // foo-0's log is one batch at offset 0, written in epoch 0: its log end offset is 1.
    assert_eq!(
        cache.end_offset_for(LeaderEpoch(0), Offset(1)),
        (LeaderEpoch(0), Offset(1))
    );
    assert_eq!(cache.epoch_for_offset(Offset(0)), Some(LeaderEpoch(0)));

    cache.assign(LeaderEpoch(1), Offset(1)).unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"0\n2\n0 0\n1 1\n");
    cache.truncate_from_end(Offset(1)).unwrap();
    assert_eq!(fs::read(&path).unwrap(), original);
}
