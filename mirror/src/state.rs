//! The mirror partition state machine (KIP-1279 §3.1–3.2), its failure/retry bookkeeping, the
//! `__mirror_state` record format, and the store that keeps the latest state of every mirror
//! partition in that topic.
//!
//! # States and transitions
//!
//! [`MirrorPartitionState`] carries the prototype's byte values (`LOG_ALIGNMENT` = 0 …
//! `FAILED` = 8, `UNKNOWN` = 16 as in the older enum and `ReadMirrorStatesResponse.PreviousState`;
//! the newest enum says −1, which a byte cannot hold unsigned — the spec warns the values are not
//! final). Every allowed move is in one table, [`TRANSITIONS`]; [`MirrorPartitionState::
//! can_transition_to`] reads it, [`transitions_markdown`] renders it, and a test checks that the
//! table below is that rendering, so the docs cannot drift from the code. A state may always
//! "move" to itself; `FAILED` is reachable from every state; `UNKNOWN` (no cached state) is never
//! a target.
//!
//! | Target | From |
//! |---|---|
//! | LOG_ALIGNMENT | UNKNOWN, STOPPED, FAILED |
//! | EPOCH_FENCING | MIRRORING |
//! | ULE_RECOVERY | MIRRORING |
//! | MIRRORING | LOG_ALIGNMENT, EPOCH_FENCING, PAUSED, ULE_RECOVERY, FAILED |
//! | PAUSING | MIRRORING |
//! | PAUSED | PAUSING |
//! | STOPPING | LOG_ALIGNMENT, EPOCH_FENCING, MIRRORING, PAUSING, PAUSED, ULE_RECOVERY, FAILED |
//! | STOPPED | STOPPING |
//! | FAILED | any |
//!
//! **Read-only** ([`MirrorPartitionState::is_read_only`]): every state but `STOPPED`. DESIGN.md
//! invariant 3 names `MIRRORING`, `PAUSED` and `LOG_ALIGNMENT`; the others are read-only too:
//! `EPOCH_FENCING`, `ULE_RECOVERY` and `PAUSING` are steps of mirroring; `STOPPING` stays
//! read-only until step 6 of the stop sequence (§9), after the abort markers and the
//! MIRROR_PID_RESET barrier are in the log, so no local producer can write in between; `FAILED`
//! keeps the mirror's offsets because a retry resumes fetching at the log end (a local write
//! would break offset identity); `UNKNOWN` is a mirror partition whose state is not loaded yet, so
//! it fails closed. Only a completed stop opens the partition to producers.
//!
//! # Fencing and failures
//!
//! [`PartitionMirrorState::state_epoch`] increases by one on every transition (a same-state one
//! included); [`PartitionMirrorState::transition`] and [`PartitionMirrorState::fail`] take the
//! epoch the caller read and refuse with [`StateError::Fenced`] when it moved since (the
//! `FENCED_STATE_EPOCH` of WriteMirrorStates). [`MirrorStateStore::put_if_epoch`] applies the same
//! fence at the store.
//!
//! [`PartitionMirrorState::fail`] records a [`Failure`]: the reason, whether it is retryable, the
//! attempt number, the state to return to (`previous_state`) and when to retry, by
//! [`RetryBackoff`]: `min(initial × 2^(attempt−1), max)` scaled by a jitter factor drawn in
//! `[1 − j, 1 + j]` (Kafka's retry jitter, `j` = 0.2) and capped at the maximum again. The jitter is
//! a pure function of the backoff's `seed`, the partition's key and the attempt, so a simulation
//! replays it exactly, while different partitions spread their retries. The record of the last
//! failure outlives the `FAILED` state, so that the attempt count grows across failed retries; it
//! is cleared by a fresh start (`UNKNOWN`/`STOPPED` → `LOG_ALIGNMENT`), by `STOPPED`, and by
//! [`PartitionMirrorState::clear_failure`] (the manager calls it once mirroring makes progress
//! again, or on a manual recover).
//!
//! # FORMAT
//!
//! `__mirror_state` holds one record per change of a mirror partition's state: key = which
//! partition, value = its whole state; the latest record of a key wins and a record with a null
//! value (tombstone) deletes the key. All integers are big-endian; strings are length-prefixed
//! UTF-8. Nothing here is checksummed: the record batch's CRC32C covers it.
//!
//! Key ([`encode_key`]):
//!
//! ```text
//! offset   size  field
//! 0        2     key type, i16 = 2 (KEY_TYPE_PARTITION_STATE; the prototype's
//!                MirrorPartitionStateKey type. 1, LastMirrorEpochsKey, is reserved: the last
//!                mirror epoch lives in the value here; 3 is a start intent, below). A reader
//!                skips key types it does not know.
//! 2        2     mirror name length N, u16
//! 4        N     mirror name, UTF-8
//! 4+N      16    topic id
//! 20+N     4     partition, i32
//!          24+N  total
//! ```
//!
//! Value ([`encode_value`]), version 0:
//!
//! ```text
//! offset   size  field
//! 0        2     value version, i16 = 0
//! 2        1     state byte (MirrorPartitionState)
//! 3        4     state epoch, i32
//! 7        4     last mirror epoch (LME), i32, -1 none
//! 11       4     destination leader epoch (DLE), i32, -1 none
//! 15       8     updated_ms, i64
//! 23       1     failure present: 0 or 1; when 0 the value ends here (24 bytes)
//! 24       1     retryable: 0 or 1
//! 25       4     attempt, i32
//! 29       1     previous state byte
//! 30       8     next_retry_ms, i64, -1 no automatic retry
//! 38       4     reason length R, u32
//! 42       R     reason, UTF-8
//!          42+R  total
//! ```
//!
//! **Start intents** (key type 3, [`KEY_TYPE_START_INTENT`]): a start of a topic writes one
//! before it changes anything of the topic (the destination topic, its configs, a partition's
//! state) and deletes it (a tombstone) once the start is complete or undone, so a crash in
//! between leaves it, and the mirror's restore after the restart ([`StartIntent`]) puts back
//! what it names before anything is aligned: a start takes effect whole or not at all, as
//! KIP-1279's one metadata write. The key is a partition state key with type 3 and partition −1 (the
//! whole topic), hashed to its `__mirror_state` partition like one. A build without intents
//! skips them as an unknown key type (and its compaction keeps them); a log without them loads
//! as before. Value, version 0 ([`encode_intent_value`]):
//!
//! ```text
//! offset   size  field
//! 0        2     value version, i16 = 0
//! 2        1     the destination topic before the start: 0 absent, 1 writable, 2 read-only
//! 3        2     topic name length T, u16
//! 5        T     topic name, UTF-8
//! 5+T      4     config count C, u32: the topic's own configs (overrides) before the start
//!          ...   C × (key length u16, key UTF-8, value length u32, value UTF-8)
//!          4     partition count P, u32: each partition's stored state before the start
//!          ...   P × (partition i32, length L u32 (0xFFFFFFFF: no state was stored),
//!                     L bytes: a partition state value as above)
//! ```
//!
//! **Mirror deletions** (key type 4, [`KEY_TYPE_MIRROR_DELETION`]): DeleteClusterMirror
//! ([`MirrorStateStore::put_mirror_deletion`]) writes one before it tombstones the mirror's
//! start intents and states, one by one, and tombstones it last, so a crash part-way leaves it;
//! a mirror created under that name later finishes the deletion
//! ([`MirrorStateStore::finish_mirror_deletion`]) before it restores anything, and never puts
//! back a deleted mirror's start intent or restores its states. The broker writes it before it
//! takes the mirror out of its list of mirrors, and finishes at start every deletion it finds:
//! the record is the point from which the deletion is decided. The key is a
//! partition state key with type 4, an all-zero topic id and partition −1 (the whole mirror),
//! hashed like one. Value, version 0: the version alone (`i16 = 0`, 2 bytes).
//!
//! **Chunked start intents**: an intent whose value is over
//! [`MirrorStateStore::intent_chunk_bytes`] (default [`INTENT_CHUNK_BYTES`], 512 KiB; a topic of
//! thousands of partitions with long failure reasons writes megabytes, where Kafka's default
//! `max.message.bytes` is 1 MiB and a batch over `segment.bytes` cannot be written at all) is
//! split: its version-0 value above is cut into pieces of at most that many bytes, each written
//! durably as a chunk record (key type 5, [`KEY_TYPE_START_INTENT_CHUNK`]), and then the intent's
//! own key gets a version-1 value, the head, naming them. A crash before the head leaves chunks
//! no head names: no intent (the start changed nothing yet); after it, the whole intent. So an
//! intent is restored whole or not at all. A new intent of the key writes new chunks under a
//! new generation, never over the chunks of the head still stored, then its head, then
//! tombstones the older chunks; a deletion tombstones the head first, then its chunks. Chunks no
//! head names (a crash between) are left out by the compaction stand-in and tombstoned at the
//! next write of their key. Every chunk lives in its intent key's `__mirror_state` partition
//! (hashed as the intent key, without the generation and index), so an intent and its chunks
//! are loaded, or unavailable, together; a head whose chunks are not all there is corrupt.
//!
//! ```text
//! chunk key:   the intent's key (type 5 in place of 3), then
//!              u32 generation, u32 chunk index (0, 1, …)                     32+N bytes
//! chunk value: i16 version = 0, then the piece (the rest of the value)
//! head value:  i16 version = 1, u32 generation, u32 chunk count C,
//!              u32 total length (of the version-0 value the C pieces make)   14 bytes
//! ```
//!
//! Decoding is strict: a wrong length, an unknown state byte, a boolean other than 0/1, invalid
//! UTF-8 or an unknown version is an error ([`StateError::Corrupt`],
//! [`StateError::UnsupportedVersion`]), never a panic. A later value version appends fields and
//! bumps the version; a reader refuses versions it does not know rather than guess.
//!
//! **Partitioning** ([`state_partition_for`]): FNV-1a 64 over the key's bytes *without* its key
//! type (`u16 N, name, topic id, i32 partition`, so a new key version keeps every key where it
//! was), modulo the partition count. Not Java-compatible (Kafka uses
//! `Utils.abs(key.hashCode()) % partitions`), and fixed forever: changing it would strand state.
//!
//! # The store
//!
//! [`MirrorStateStore`] keeps `__mirror_state` in the engine like any topic (fixed topic id
//! [`MIRROR_STATE_TOPIC_ID`], retention off since the engine has no compaction), loads the latest
//! state of every key when opened, and makes each write durable before it returns and before
//! readers see it. Since every record is appended durably, whatever a crash leaves is a prefix of
//! the writes, and every write acknowledged survives.
//!
//! **A partition in an offline data directory** (it went offline while the log manager loaded)
//! is neither loaded nor created anew elsewhere: the store opens without it, the states it holds
//! are unknown ([`MirrorStateStore::unavailable`] says which keys), and writes to its keys are
//! refused with `LogDirOffline`, so nothing is written over them; the mirror manager leaves the
//! partitions whose state is there FAILED and untouched. A restart with the directory repaired
//! loads it as it was. A partition whose directory goes offline later keeps the states it
//! loaded, and its keys are unavailable from then on in the same way (the mirror manager fails
//! a partition whose FAILED state it cannot write in memory only, not retried).
//!
//! **The stand-in for compaction**: every transition, retry and epoch bump appends a record, so a
//! long-lived mirror would grow the topic (and the load at every start) without bound. Once a
//! partition holds [`MirrorStateStore::compaction_min_dirty_records`] more records than live keys
//! (default [`COMPACTION_MIN_DIRTY_RECORDS`]), the write that crossed the line rewrites that
//! partition's live states at its end (durably, in batches of at most
//! [`COMPACTION_BATCH_BYTES`]) and then moves the log start to the first rewritten record, which
//! deletes the whole segments below it — the group and transaction coordinators do the same for
//! their topics. A crash before the move leaves the old records and (part of) the rewrite: a
//! reload replays both, later records win, and the rewritten values equal the latest ones, so
//! the state is unchanged; deleted keys have no rewritten record and their tombstones stay ahead
//! of the log start until it moves. Records of a key type this build does not know (a newer
//! version's, skipped by the load) are rewritten too, each key's latest value as it was, so a
//! downgrade followed by an upgrade loses none of them.

use bytes::Bytes;
use mirrorlog_engine::error::EngineError;
use mirrorlog_engine::log::{FetchIsolation, LeaderOrigin};
use mirrorlog_engine::manager::{LogManager, PartitionHandle};
use mirrorlog_index::{LeaderEpoch, Offset, TimestampMs, TopicId, TopicPartition};
use mirrorlog_segment::{BatchBuilder, Batches};
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// A mirror partition's state (KIP-1279 §3.1), with the prototype's byte values.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MirrorPartitionState {
    /// Initial: align the local log with the source (truncate to the end of the last mirror
    /// epoch), then mirror.
    LogAlignment = 0,
    /// The local leader epoch is being bumped so that it stays ≥ every mirrored batch epoch.
    EpochFencing = 1,
    /// Recovering from divergence (an unclean election) detected on the source.
    UleRecovery = 2,
    /// Fetchers running.
    Mirroring = 3,
    /// Transient: removing fetchers to pause.
    Pausing = 4,
    /// No fetchers, still read-only; resume goes straight to mirroring from the log end.
    Paused = 5,
    /// Transient: the failover sequence (KIP-1279 §9).
    Stopping = 6,
    /// Mirroring is over: the partition is writable.
    Stopped = 7,
    /// An error stopped this partition; see [`Failure`].
    Failed = 8,
    /// No state known (yet).
    Unknown = 16,
}

use MirrorPartitionState as S;

impl MirrorPartitionState {
    /// Every state, in byte order.
    pub const ALL: &'static [MirrorPartitionState] = &[
        S::LogAlignment,
        S::EpochFencing,
        S::UleRecovery,
        S::Mirroring,
        S::Pausing,
        S::Paused,
        S::Stopping,
        S::Stopped,
        S::Failed,
        S::Unknown,
    ];

    /// The state with byte value `b`, if any.
    pub fn from_byte(b: u8) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| *s as u8 == b)
    }

    /// The byte value.
    pub fn as_byte(self) -> u8 {
        self as u8
    }

    /// The name Kafka gives it (`MIRRORING`, `LOG_ALIGNMENT`, …).
    pub fn name(self) -> &'static str {
        match self {
            S::LogAlignment => "LOG_ALIGNMENT",
            S::EpochFencing => "EPOCH_FENCING",
            S::UleRecovery => "ULE_RECOVERY",
            S::Mirroring => "MIRRORING",
            S::Pausing => "PAUSING",
            S::Paused => "PAUSED",
            S::Stopping => "STOPPING",
            S::Stopped => "STOPPED",
            S::Failed => "FAILED",
            S::Unknown => "UNKNOWN",
        }
    }

    /// The state named `name` (as [`name`](Self::name) spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|s| s.name() == name)
    }

    /// Whether [`TRANSITIONS`] allows moving from `self` to `target`; a state may always move
    /// to itself.
    pub fn can_transition_to(self, target: Self) -> bool {
        self == target
            || TRANSITIONS
                .iter()
                .any(|(t, from)| *t == target && from.contains(&self))
    }

    /// Whether client produce is refused in this state: every state but `STOPPED` (see the
    /// module docs for why each one).
    pub fn is_read_only(self) -> bool {
        self != S::Stopped
    }
}

impl fmt::Display for MirrorPartitionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The allowed transitions (KIP-1279 §3.2, `MirrorPartition.isValidStateTransition`): for each
/// target, the states it may be entered from. Moving to the same state is always allowed and is
/// not listed. `UNKNOWN` is never a target.
pub const TRANSITIONS: &[(MirrorPartitionState, &[MirrorPartitionState])] = &[
    (S::LogAlignment, &[S::Unknown, S::Stopped, S::Failed]),
    (S::EpochFencing, &[S::Mirroring]),
    (S::UleRecovery, &[S::Mirroring]),
    (
        S::Mirroring,
        &[
            S::LogAlignment,
            S::EpochFencing,
            S::Paused,
            S::UleRecovery,
            S::Failed,
        ],
    ),
    (S::Pausing, &[S::Mirroring]),
    (S::Paused, &[S::Pausing]),
    (
        S::Stopping,
        &[
            S::LogAlignment,
            S::EpochFencing,
            S::Mirroring,
            S::Pausing,
            S::Paused,
            S::UleRecovery,
            S::Failed,
        ],
    ),
    (S::Stopped, &[S::Stopping]),
    (S::Failed, MirrorPartitionState::ALL),
];

/// [`TRANSITIONS`] as a Markdown table (`| Target | From |`), a from-list holding every state
/// written `any`: what the module docs show.
pub fn transitions_markdown() -> String {
    let mut out = String::from("| Target | From |\n|---|---|\n");
    for (target, from) in TRANSITIONS {
        let from = if MirrorPartitionState::ALL.iter().all(|s| from.contains(s)) {
            "any".to_string()
        } else {
            from.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
        };
        out.push_str(&format!("| {} | {from} |\n", target.name()));
    }
    out
}

/// Why a state operation, a decode or the store failed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The state epoch moved since the caller read it: another writer got there first
    /// (`FENCED_STATE_EPOCH`).
    #[error("fenced: expected state epoch {expected}, found {actual}")]
    Fenced {
        /// The epoch the caller expected.
        expected: i32,
        /// The epoch there is (−1: no state stored).
        actual: i32,
    },
    /// The transition table does not allow this move.
    #[error("invalid mirror partition state transition {from} -> {to}")]
    InvalidTransition {
        /// The current state.
        from: MirrorPartitionState,
        /// The state asked for.
        to: MirrorPartitionState,
    },
    /// Record bytes that do not decode.
    #[error("corrupt {what} at byte {position}: {reason}")]
    Corrupt {
        /// What was being decoded (and where it came from).
        what: String,
        /// Byte position inside it.
        position: usize,
        /// What was wrong.
        reason: String,
    },
    /// A record version this code does not know.
    #[error("unsupported {what} version {version}")]
    UnsupportedVersion {
        /// `key` or `value`.
        what: &'static str,
        /// The version found.
        version: i16,
    },
    /// A setting out of range.
    #[error("invalid setting: {0}")]
    InvalidConfig(String),
    /// `__mirror_state` on disk does not match what the store expects (partition count, topic
    /// id).
    #[error("__mirror_state: {0}")]
    Store(String),
    /// The engine failed (storage).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Automatic retry of `FAILED` partitions (`mirror.failed.retry.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryBackoff {
    /// `mirror.failed.retry.initial.backoff.ms`: delay before the first retry. Default 100;
    /// range 0 ..= `max_backoff_ms`.
    pub initial_backoff_ms: i64,
    /// `mirror.failed.retry.max.backoff.ms`: the longest delay. Default 300000; range
    /// `initial_backoff_ms` ..= i64::MAX.
    pub max_backoff_ms: i64,
    /// `mirror.failed.retry.max.attempts`: automatic retries before a partition waits for a
    /// manual recover. Default 20; range 0 ..= i32::MAX; 0 disables automatic retry.
    pub max_attempts: i32,
    /// Jitter, in thousandths: each delay is scaled by a factor drawn in
    /// `[1 − jitter, 1 + jitter]`. Default 200 (Kafka's ±20 %); range 0 ..= 1000.
    pub jitter_permille: u32,
    /// Seeds the jitter draws (a simulation's seed; any value).
    pub seed: u64,
}

impl Default for RetryBackoff {
    fn default() -> Self {
        RetryBackoff {
            initial_backoff_ms: 100,
            max_backoff_ms: 300_000,
            max_attempts: 20,
            jitter_permille: 200,
            seed: 0,
        }
    }
}

impl RetryBackoff {
    /// Rejects out-of-range settings.
    ///
    /// # Errors
    /// [`StateError::InvalidConfig`] naming the setting.
    pub fn validate(&self) -> Result<(), StateError> {
        let bad = |s: String| Err(StateError::InvalidConfig(s));
        if self.initial_backoff_ms < 0 {
            return bad(format!(
                "mirror.failed.retry.initial.backoff.ms {} is negative",
                self.initial_backoff_ms
            ));
        }
        if self.max_backoff_ms < self.initial_backoff_ms {
            return bad(format!(
                "mirror.failed.retry.max.backoff.ms {} is below the initial backoff {}",
                self.max_backoff_ms, self.initial_backoff_ms
            ));
        }
        if self.max_attempts < 0 {
            return bad(format!(
                "mirror.failed.retry.max.attempts {} is negative",
                self.max_attempts
            ));
        }
        if self.jitter_permille > 1000 {
            return bad(format!(
                "retry jitter {}‰ is above 1000‰",
                self.jitter_permille
            ));
        }
        Ok(())
    }

    /// The delay before retry number `attempt` (≥ 1) of the partition whose key hashes to
    /// `salt` ([`StateKey::stable_hash`]): `min(initial × 2^(attempt−1), max)`, times a factor
    /// in `[1000 − jitter, 1000 + jitter]`‰ drawn from `(seed, salt, attempt)` by SplitMix64,
    /// capped at `max_backoff_ms`.
    ///
    /// # Panics
    /// `attempt < 1`.
    pub fn delay_ms(&self, attempt: i32, salt: u64) -> i64 {
        assert!(attempt >= 1, "retry attempts count from 1, not {attempt}");
        let shift = (attempt - 1).min(62) as u32;
        let base = self
            .initial_backoff_ms
            .saturating_mul(1i64 << shift)
            .min(self.max_backoff_ms);
        let j = self.jitter_permille.min(1000) as u64;
        let draw = splitmix64(
            self.seed ^ salt.rotate_left(17) ^ (attempt as u64).wrapping_mul(0x9E37_79B9),
        );
        let factor = 1000 - j + draw % (2 * j + 1);
        let delay = (base as i128 * factor as i128 / 1000) as i64;
        delay.clamp(0, self.max_backoff_ms)
    }
}

/// SplitMix64's output function: a well-mixed 64-bit value from any input.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Why and since when a partition is (or last was) `FAILED`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What went wrong (shown by describe).
    pub reason: String,
    /// Whether an automatic retry may help (a deleted source topic or a changed source cluster
    /// is not retryable).
    pub retryable: bool,
    /// Which failure this is in a row: 1 for the first; retries that fail again count up.
    pub attempt: i32,
    /// The state the partition was in when it failed (the retry goes back towards it).
    pub previous_state: MirrorPartitionState,
    /// When the automatic retry is due (ms); −1 when none will happen (not retryable, retries
    /// disabled, or attempts exhausted).
    pub next_retry_ms: i64,
}

/// Which mirror partition a state belongs to: the `__mirror_state` key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StateKey {
    /// The cluster mirror's name.
    pub mirror: String,
    /// The mirrored topic's id.
    pub topic_id: [u8; 16],
    /// The partition.
    pub partition: i32,
}

impl StateKey {
    /// FNV-1a 64 of `u16 name length, name, topic id, i32 partition` (big-endian): what
    /// [`state_partition_for`] and the retry jitter hash. Fixed forever.
    pub fn stable_hash(&self) -> u64 {
        let mut h = Fnv::new();
        h.write(&name_len(&self.mirror).to_be_bytes());
        h.write(self.mirror.as_bytes());
        h.write(&self.topic_id);
        h.write(&self.partition.to_be_bytes());
        h.0
    }
}

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Fnv {
    const fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    const fn write_const(mut self, bytes: &[u8]) -> Fnv {
        let mut i = 0;
        while i < bytes.len() {
            self.0 = (self.0 ^ bytes[i] as u64).wrapping_mul(0x100_0000_01b3);
            i += 1;
        }
        self
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// A mirror name's length as the key stores it.
///
/// # Panics
/// A name longer than 65535 bytes (names are validated long before: Kafka resource names are at
/// most 249 characters).
fn name_len(name: &str) -> u16 {
    u16::try_from(name.len())
        .unwrap_or_else(|_| panic!("mirror name of {} bytes is too long", name.len()))
}

/// One mirror partition's state, as stored in `__mirror_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMirrorState {
    /// The cluster mirror's name.
    pub mirror: String,
    /// The mirrored topic's id (the source's, kept on the destination).
    pub topic_id: [u8; 16],
    /// The partition.
    pub partition: i32,
    /// Where it is in the state machine.
    pub state: MirrorPartitionState,
    /// Bumped by every transition; writers pass the epoch they read (fencing).
    pub state_epoch: i32,
    /// Last mirror epoch (LME): the destination log's latest epoch when mirroring stopped; −1
    /// none. Start-time truncation of a mirror in the other direction reads it (§8).
    pub last_mirror_epoch: LeaderEpoch,
    /// Destination leader epoch (DLE): the local leader epoch, bumped to stay ≥ every mirrored
    /// batch epoch (§7); −1 none.
    pub destination_leader_epoch: LeaderEpoch,
    /// The current failure while `FAILED`; afterwards the last one (see the module docs).
    pub failure: Option<Failure>,
    /// When the state last changed (ms); −1 never.
    pub updated_ms: i64,
}

impl PartitionMirrorState {
    /// A partition with no state yet: `UNKNOWN`, state epoch 0, no LME, no DLE, no failure.
    pub fn new(mirror: &str, topic_id: [u8; 16], partition: i32) -> Self {
        PartitionMirrorState {
            mirror: mirror.to_string(),
            topic_id,
            partition,
            state: S::Unknown,
            state_epoch: 0,
            last_mirror_epoch: LeaderEpoch::NONE,
            destination_leader_epoch: LeaderEpoch::NONE,
            failure: None,
            updated_ms: -1,
        }
    }

    /// Its `__mirror_state` key.
    pub fn key(&self) -> StateKey {
        StateKey {
            mirror: self.mirror.clone(),
            topic_id: self.topic_id,
            partition: self.partition,
        }
    }

    fn check_epoch(&self, expected_epoch: i32) -> Result<(), StateError> {
        if expected_epoch != self.state_epoch {
            return Err(StateError::Fenced {
                expected: expected_epoch,
                actual: self.state_epoch,
            });
        }
        Ok(())
    }

    fn bump(&mut self, target: MirrorPartitionState, now_ms: i64) {
        self.state = target;
        self.state_epoch = self
            .state_epoch
            .checked_add(1)
            .expect("state epoch overflow");
        self.updated_ms = now_ms;
    }

    /// Moves to `target` if [`TRANSITIONS`] allows it, bumping the state epoch. A fresh start
    /// (`UNKNOWN`/`STOPPED` → `LOG_ALIGNMENT`) and `STOPPED` clear the failure record.
    ///
    /// # Errors
    /// [`StateError::Fenced`] when `expected_epoch` is not the current state epoch;
    /// [`StateError::InvalidTransition`] when the table forbids the move. Either way nothing
    /// changes.
    pub fn transition(
        &mut self,
        target: MirrorPartitionState,
        expected_epoch: i32,
        now_ms: i64,
    ) -> Result<(), StateError> {
        self.check_epoch(expected_epoch)?;
        if !self.state.can_transition_to(target) {
            return Err(StateError::InvalidTransition {
                from: self.state,
                to: target,
            });
        }
        let fresh_start =
            target == S::LogAlignment && matches!(self.state, S::Unknown | S::Stopped);
        if fresh_start || target == S::Stopped {
            self.failure = None;
        }
        self.bump(target, now_ms);
        Ok(())
    }

    /// Moves to `FAILED` (allowed from any state), bumping the state epoch, and records why:
    /// the previous state (kept from the earlier failure when already `FAILED`), the attempt
    /// (one more than the last failure's, 1 when there is none), and the time of the automatic
    /// retry, `now_ms + backoff.delay_ms(attempt, key hash)` when `retryable` and
    /// `attempt ≤ max_attempts`, else −1 (retry number `attempt` is the last automatic one when
    /// `attempt = max_attempts`).
    ///
    /// # Errors
    /// [`StateError::Fenced`] when `expected_epoch` is not the current state epoch (nothing
    /// changes).
    pub fn fail(
        &mut self,
        reason: &str,
        retryable: bool,
        expected_epoch: i32,
        now_ms: i64,
        backoff: &RetryBackoff,
    ) -> Result<(), StateError> {
        self.check_epoch(expected_epoch)?;
        let last = self.failure.as_ref();
        let previous_state = match (self.state, last) {
            (S::Failed, Some(f)) => f.previous_state,
            (state, _) => state,
        };
        let attempt = last.map_or(0, |f| f.attempt).saturating_add(1);
        let next_retry_ms = if retryable && attempt <= backoff.max_attempts {
            now_ms.saturating_add(backoff.delay_ms(attempt, self.key().stable_hash()))
        } else {
            -1
        };
        self.failure = Some(Failure {
            reason: reason.to_string(),
            retryable,
            attempt,
            previous_state,
            next_retry_ms,
        });
        self.bump(S::Failed, now_ms);
        Ok(())
    }

    /// Forgets the failure record, so the next failure counts from attempt 1 (mirroring made
    /// progress again, or an operator recovered the partition). The state epoch is unchanged.
    pub fn clear_failure(&mut self) {
        self.failure = None;
    }

    /// When `FAILED` with an automatic retry due at `now_ms`: the state to retry into — the
    /// previous state when `FAILED` may move there (`LOG_ALIGNMENT`, `MIRRORING`, `STOPPING`);
    /// `LOG_ALIGNMENT` after `UNKNOWN`; `STOPPING` after `STOPPED` (the stop sequence is
    /// idempotent); `MIRRORING` otherwise (the spec's default: a failed epoch bump or ULE
    /// recovery is detected again by the next fetch, and a pause is re-applied from the topic's
    /// desired state).
    pub fn due_retry(&self, now_ms: i64) -> Option<MirrorPartitionState> {
        if self.state != S::Failed {
            return None;
        }
        let f = self.failure.as_ref()?;
        if f.next_retry_ms < 0 || now_ms < f.next_retry_ms {
            return None;
        }
        Some(self.retry_target())
    }

    /// The state a retry (automatic, or an operator's recover) of this `FAILED` partition moves
    /// to, by the rule [`due_retry`](Self::due_retry) describes; `MIRRORING` when no failure is
    /// recorded.
    pub fn retry_target(&self) -> MirrorPartitionState {
        match self.failure.as_ref().map(|f| f.previous_state) {
            Some(p) if S::Failed.can_transition_to(p) && p != S::Failed => p,
            Some(S::Unknown) => S::LogAlignment,
            Some(S::Stopped) => S::Stopping,
            _ => S::Mirroring,
        }
    }
}

/// The key type of a partition state record (the first two bytes of its key).
pub const KEY_TYPE_PARTITION_STATE: i16 = 2;
/// The value version [`encode_value`] writes.
pub const VALUE_VERSION: i16 = 0;

/// The key type of a start intent record (module docs, FORMAT).
pub const KEY_TYPE_START_INTENT: i16 = 3;

/// Encodes a `__mirror_state` key; see FORMAT in the module docs.
///
/// # Panics
/// A mirror name longer than 65535 bytes.
pub fn encode_key(key: &StateKey) -> Vec<u8> {
    encode_typed_key(KEY_TYPE_PARTITION_STATE, key)
}

fn encode_typed_key(key_type: i16, key: &StateKey) -> Vec<u8> {
    let n = name_len(&key.mirror);
    let mut out = Vec::with_capacity(24 + n as usize);
    out.extend_from_slice(&key_type.to_be_bytes());
    out.extend_from_slice(&n.to_be_bytes());
    out.extend_from_slice(key.mirror.as_bytes());
    out.extend_from_slice(&key.topic_id);
    out.extend_from_slice(&key.partition.to_be_bytes());
    out
}

/// A cursor over record bytes whose failures are [`StateError::Corrupt`].
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader of `buf` past its leading version (an i16), which must be `expected`:
    /// [`StateError::UnsupportedVersion`] names `what` otherwise.
    fn versioned(buf: &'a [u8], what: &'static str, expected: i16) -> Result<Self, StateError> {
        let mut r = Reader { buf, pos: 0, what };
        let version = r.i16()?;
        if version != expected {
            return Err(StateError::UnsupportedVersion { what, version });
        }
        Ok(r)
    }

    fn corrupt(&self, reason: impl Into<String>) -> StateError {
        StateError::Corrupt {
            what: self.what.to_string(),
            position: self.pos,
            reason: reason.into(),
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], StateError> {
        if self.buf.len() - self.pos < n {
            return Err(self.corrupt(format!(
                "needs {n} more bytes, {} left",
                self.buf.len() - self.pos
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N], StateError> {
        Ok(self.take(N)?.try_into().expect("length checked"))
    }
    fn i16(&mut self) -> Result<i16, StateError> {
        Ok(i16::from_be_bytes(self.array()?))
    }
    fn u16(&mut self) -> Result<u16, StateError> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    fn i32(&mut self) -> Result<i32, StateError> {
        Ok(i32::from_be_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32, StateError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    fn i64(&mut self) -> Result<i64, StateError> {
        Ok(i64::from_be_bytes(self.array()?))
    }
    fn u8(&mut self) -> Result<u8, StateError> {
        Ok(self.array::<1>()?[0])
    }
    fn bool(&mut self) -> Result<bool, StateError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            b => {
                self.pos -= 1;
                Err(self.corrupt(format!("boolean byte {b} is neither 0 nor 1")))
            }
        }
    }
    fn state(&mut self) -> Result<MirrorPartitionState, StateError> {
        let b = self.u8()?;
        MirrorPartitionState::from_byte(b).ok_or_else(|| {
            self.pos -= 1;
            self.corrupt(format!("unknown state byte {b}"))
        })
    }
    fn string(&mut self, len: usize) -> Result<String, StateError> {
        let at = self.pos;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|e| {
            self.pos = at + e.utf8_error().valid_up_to();
            self.corrupt("string is not valid UTF-8")
        })
    }
    fn finish(&self) -> Result<(), StateError> {
        if self.pos != self.buf.len() {
            return Err(self.corrupt(format!("{} trailing bytes", self.buf.len() - self.pos)));
        }
        Ok(())
    }
}

/// Decodes a `__mirror_state` key.
///
/// # Errors
/// [`StateError::UnsupportedVersion`] for a key type other than
/// [`KEY_TYPE_PARTITION_STATE`]; [`StateError::Corrupt`] for bytes that do not decode.
pub fn decode_key(bytes: &[u8]) -> Result<StateKey, StateError> {
    decode_typed_key(KEY_TYPE_PARTITION_STATE, bytes)
}

/// Decodes a key of type `key_type`; another type is [`StateError::UnsupportedVersion`].
fn decode_typed_key(key_type: i16, bytes: &[u8]) -> Result<StateKey, StateError> {
    let mut r = Reader {
        buf: bytes,
        pos: 0,
        what: "key",
    };
    let version = r.i16()?;
    if version != key_type {
        return Err(StateError::UnsupportedVersion {
            what: "key",
            version,
        });
    }
    let n = r.u16()? as usize;
    let mirror = r.string(n)?;
    let topic_id = r.array::<16>()?;
    let partition = r.i32()?;
    r.finish()?;
    Ok(StateKey {
        mirror,
        topic_id,
        partition,
    })
}

/// Encodes a state as a `__mirror_state` value (version [`VALUE_VERSION`]); see FORMAT in the
/// module docs.
///
/// # Panics
/// A failure reason longer than 4 GiB.
pub fn encode_value(state: &PartitionMirrorState) -> Vec<u8> {
    let reason_len = state.failure.as_ref().map_or(0, |f| f.reason.len());
    let mut out = Vec::with_capacity(42 + reason_len);
    out.extend_from_slice(&VALUE_VERSION.to_be_bytes());
    out.push(state.state.as_byte());
    out.extend_from_slice(&state.state_epoch.to_be_bytes());
    out.extend_from_slice(&state.last_mirror_epoch.get().to_be_bytes());
    out.extend_from_slice(&state.destination_leader_epoch.get().to_be_bytes());
    out.extend_from_slice(&state.updated_ms.to_be_bytes());
    match &state.failure {
        None => out.push(0),
        Some(f) => {
            out.push(1);
            out.push(u8::from(f.retryable));
            out.extend_from_slice(&f.attempt.to_be_bytes());
            out.push(f.previous_state.as_byte());
            out.extend_from_slice(&f.next_retry_ms.to_be_bytes());
            let len = u32::try_from(f.reason.len()).expect("failure reason under 4 GiB");
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(f.reason.as_bytes());
        }
    }
    out
}

/// Decodes a `__mirror_state` value of `key`.
///
/// # Errors
/// [`StateError::UnsupportedVersion`] for a version other than [`VALUE_VERSION`];
/// [`StateError::Corrupt`] for bytes that do not decode.
pub fn decode_value(key: &StateKey, bytes: &[u8]) -> Result<PartitionMirrorState, StateError> {
    let mut r = Reader::versioned(bytes, "value", VALUE_VERSION)?;
    let state = r.state()?;
    let state_epoch = r.i32()?;
    let last_mirror_epoch = LeaderEpoch(r.i32()?);
    let destination_leader_epoch = LeaderEpoch(r.i32()?);
    let updated_ms = r.i64()?;
    let failure = if r.bool()? {
        let retryable = r.bool()?;
        let attempt = r.i32()?;
        let previous_state = r.state()?;
        let next_retry_ms = r.i64()?;
        let len = r.u32()? as usize;
        let reason = r.string(len)?;
        Some(Failure {
            reason,
            retryable,
            attempt,
            previous_state,
            next_retry_ms,
        })
    } else {
        None
    };
    r.finish()?;
    Ok(PartitionMirrorState {
        mirror: key.mirror.clone(),
        topic_id: key.topic_id,
        partition: key.partition,
        state,
        state_epoch,
        last_mirror_epoch,
        destination_leader_epoch,
        failure,
        updated_ms,
    })
}

/// How the destination topic was before a start ([`StartIntent::topic_before`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopicBefore {
    /// It did not exist: the start creates it.
    Absent = 0,
    /// It was writable (a failed-over topic): the start makes it read-only.
    Writable = 1,
    /// It was read-only already.
    ReadOnly = 2,
}

/// A start of a topic in progress, recorded before the start changes anything of it and
/// deleted when it is complete or undone (module docs): what to put back after a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartIntent {
    /// The cluster mirror's name.
    pub mirror: String,
    /// The topic id (the source's), as in its partitions' keys.
    pub topic_id: [u8; 16],
    /// The destination topic's name.
    pub topic: String,
    /// How the destination topic was before the start.
    pub topic_before: TopicBefore,
    /// The topic's own configs (its overrides) before the start copied the source's.
    pub configs_before: Vec<(String, String)>,
    /// Every partition the start may move, with the state stored for it before (`None`: none).
    pub partitions: Vec<(i32, Option<PartitionMirrorState>)>,
}

impl StartIntent {
    /// Its `__mirror_state` key: the topic's, partition −1.
    pub fn key(&self) -> StateKey {
        StartIntent::key_of(&self.mirror, self.topic_id)
    }

    /// The key of `mirror`'s start intent for the topic with id `topic_id`.
    pub fn key_of(mirror: &str, topic_id: [u8; 16]) -> StateKey {
        StateKey {
            mirror: mirror.to_string(),
            topic_id,
            partition: -1,
        }
    }
}

/// The value version [`encode_intent_value`] writes.
pub const INTENT_VALUE_VERSION: i16 = 0;

/// The key type of a mirror deletion record (module docs, FORMAT).
pub const KEY_TYPE_MIRROR_DELETION: i16 = 4;

/// The value version of a mirror deletion record.
pub const DELETION_VALUE_VERSION: i16 = 0;

/// The key of the deletion record of `mirror`: type [`KEY_TYPE_MIRROR_DELETION`], an all-zero
/// topic id, partition −1.
pub fn mirror_deletion_key(mirror: &str) -> StateKey {
    StateKey {
        mirror: mirror.to_string(),
        topic_id: [0; 16],
        partition: -1,
    }
}

/// Decodes a mirror deletion record's value.
///
/// # Errors
/// [`StateError::UnsupportedVersion`] for another version; [`StateError::Corrupt`].
fn decode_deletion_value(bytes: &[u8]) -> Result<(), StateError> {
    let r = Reader::versioned(bytes, "mirror deletion", DELETION_VALUE_VERSION)?;
    r.finish()
}

/// The key type of a chunk of a start intent's value (module docs, FORMAT).
pub const KEY_TYPE_START_INTENT_CHUNK: i16 = 5;

/// The value version of a start intent head: its value is in chunks (module docs, FORMAT).
pub const INTENT_HEAD_VERSION: i16 = 1;

/// The value version of a start intent chunk.
pub const INTENT_CHUNK_VALUE_VERSION: i16 = 0;

/// The default of [`MirrorStateStore::intent_chunk_bytes`]: the largest start intent value
/// written as one record, and the largest chunk of a larger one. Half of Kafka's default
/// `max.message.bytes` (1 MiB), so a chunk's record and batch stay well under it.
pub const INTENT_CHUNK_BYTES: usize = 512 << 10;

/// Which chunk: the intent's key, the generation, the index.
type ChunkId = (StateKey, u32, u32);

/// A chunk record's key bytes (module docs, FORMAT).
pub fn encode_intent_chunk_key(key: &StateKey, generation: u32, index: u32) -> Vec<u8> {
    let mut out = encode_typed_key(KEY_TYPE_START_INTENT_CHUNK, key);
    out.extend_from_slice(&generation.to_be_bytes());
    out.extend_from_slice(&index.to_be_bytes());
    out
}

/// Decodes a chunk record's key: the intent's key, the generation, the index.
///
/// # Errors
/// [`StateError::UnsupportedVersion`] for another key type; [`StateError::Corrupt`].
pub fn decode_intent_chunk_key(bytes: &[u8]) -> Result<(StateKey, u32, u32), StateError> {
    let Some(split) = bytes.len().checked_sub(8) else {
        return Err(StateError::Corrupt {
            what: "start intent chunk key".into(),
            position: bytes.len(),
            reason: format!("{} bytes, fewer than 8", bytes.len()),
        });
    };
    let key = decode_typed_key(KEY_TYPE_START_INTENT_CHUNK, &bytes[..split])?;
    let generation = u32::from_be_bytes(bytes[split..split + 4].try_into().expect("4 bytes"));
    let index = u32::from_be_bytes(bytes[split + 4..].try_into().expect("4 bytes"));
    Ok((key, generation, index))
}

/// What a start intent head names: the chunks holding the intent's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntentHead {
    /// The chunks' generation.
    pub generation: u32,
    /// How many chunks (indexes 0 .. chunks).
    pub chunks: u32,
    /// The length of the value they make.
    pub total_bytes: u32,
}

/// A start intent head's value (version [`INTENT_HEAD_VERSION`]).
pub fn encode_intent_head(head: IntentHead) -> Vec<u8> {
    let mut out = Vec::with_capacity(14);
    out.extend_from_slice(&INTENT_HEAD_VERSION.to_be_bytes());
    out.extend_from_slice(&head.generation.to_be_bytes());
    out.extend_from_slice(&head.chunks.to_be_bytes());
    out.extend_from_slice(&head.total_bytes.to_be_bytes());
    out
}

/// A start intent as a record of its key holds it.
#[derive(Debug, Clone)]
enum StoredIntent {
    /// The whole intent (version 0).
    Inline(Box<StartIntent>),
    /// A head: the intent is in chunks.
    Chunked(IntentHead),
}

/// A start intent record's value: the intent itself (version 0), or a head (version 1).
fn decode_intent_record(key: &StateKey, bytes: &[u8]) -> Result<StoredIntent, StateError> {
    if bytes.len() >= 2 && i16::from_be_bytes([bytes[0], bytes[1]]) == INTENT_HEAD_VERSION {
        let mut r = Reader {
            buf: bytes,
            pos: 2,
            what: "start intent head",
        };
        let head = IntentHead {
            generation: r.u32()?,
            chunks: r.u32()?,
            total_bytes: r.u32()?,
        };
        r.finish()?;
        return Ok(StoredIntent::Chunked(head));
    }
    decode_intent_value(key, bytes).map(|i| StoredIntent::Inline(Box::new(i)))
}

/// A chunk record's value: its piece.
fn decode_chunk_value(bytes: &[u8]) -> Result<Vec<u8>, StateError> {
    let r = Reader::versioned(bytes, "start intent chunk", INTENT_CHUNK_VALUE_VERSION)?;
    Ok(r.buf[r.pos..].to_vec())
}

/// A chunk record's value holding `piece`.
fn encode_chunk_value(piece: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + piece.len());
    out.extend_from_slice(&INTENT_CHUNK_VALUE_VERSION.to_be_bytes());
    out.extend_from_slice(piece);
    out
}

/// A start intent's key bytes (key type [`KEY_TYPE_START_INTENT`]).
pub fn encode_intent_key(key: &StateKey) -> Vec<u8> {
    encode_typed_key(KEY_TYPE_START_INTENT, key)
}

/// Decodes a start intent's key bytes.
///
/// # Errors
/// [`StateError::UnsupportedVersion`] for another key type; [`StateError::Corrupt`].
pub fn decode_intent_key(bytes: &[u8]) -> Result<StateKey, StateError> {
    decode_typed_key(KEY_TYPE_START_INTENT, bytes)
}

/// Encodes a start intent (FORMAT in the module docs).
///
/// # Panics
/// A name, config key or value too long for its length field.
pub fn encode_intent_value(intent: &StartIntent) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&INTENT_VALUE_VERSION.to_be_bytes());
    out.push(intent.topic_before as u8);
    out.extend_from_slice(&name_len(&intent.topic).to_be_bytes());
    out.extend_from_slice(intent.topic.as_bytes());
    let len32 = |n: usize| u32::try_from(n).expect("under 4 GiB").to_be_bytes();
    out.extend_from_slice(&len32(intent.configs_before.len()));
    for (k, v) in &intent.configs_before {
        out.extend_from_slice(&name_len(k).to_be_bytes());
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(&len32(v.len()));
        out.extend_from_slice(v.as_bytes());
    }
    out.extend_from_slice(&len32(intent.partitions.len()));
    for (p, st) in &intent.partitions {
        out.extend_from_slice(&p.to_be_bytes());
        match st {
            None => out.extend_from_slice(&u32::MAX.to_be_bytes()),
            Some(st) => {
                let v = encode_value(st);
                out.extend_from_slice(&len32(v.len()));
                out.extend_from_slice(&v);
            }
        }
    }
    out
}

/// Decodes the start intent of `key`.
///
/// # Errors
/// [`StateError::UnsupportedVersion`] for a version other than [`INTENT_VALUE_VERSION`];
/// [`StateError::Corrupt`] for bytes that do not decode.
pub fn decode_intent_value(key: &StateKey, bytes: &[u8]) -> Result<StartIntent, StateError> {
    let mut r = Reader::versioned(bytes, "start intent", INTENT_VALUE_VERSION)?;
    let topic_before = match r.u8()? {
        0 => TopicBefore::Absent,
        1 => TopicBefore::Writable,
        2 => TopicBefore::ReadOnly,
        b => {
            r.pos -= 1;
            return Err(r.corrupt(format!("unknown topic-before byte {b}")));
        }
    };
    let n = r.u16()? as usize;
    let topic = r.string(n)?;
    let configs = r.u32()? as usize;
    let mut configs_before = Vec::with_capacity(configs.min(1024));
    for _ in 0..configs {
        let n = r.u16()? as usize;
        let k = r.string(n)?;
        let n = r.u32()? as usize;
        configs_before.push((k, r.string(n)?));
    }
    let count = r.u32()? as usize;
    let mut partitions = Vec::with_capacity(count.min(1 << 16));
    for _ in 0..count {
        let partition = r.i32()?;
        let len = r.u32()?;
        let st = if len == u32::MAX {
            None
        } else {
            let at = r.pos;
            let bytes = r.take(len as usize)?;
            let pkey = StateKey {
                partition,
                ..key.clone()
            };
            Some(decode_value(&pkey, bytes).map_err(|e| match e {
                StateError::Corrupt {
                    what,
                    position,
                    reason,
                } => StateError::Corrupt {
                    what: format!("start intent partition {partition} {what}"),
                    position: at + position,
                    reason,
                },
                e => e,
            })?)
        };
        partitions.push((partition, st));
    }
    r.finish()?;
    Ok(StartIntent {
        mirror: key.mirror.clone(),
        topic_id: key.topic_id,
        topic,
        topic_before,
        configs_before,
        partitions,
    })
}

/// Which `__mirror_state` partition holds the state of (`mirror`, `topic_id`, `partition`):
/// [`StateKey::stable_hash`] modulo `partitions`.
///
/// # Panics
/// `partitions < 1`.
pub fn state_partition_for(
    mirror: &str,
    topic_id: &[u8; 16],
    partition: i32,
    partitions: i32,
) -> i32 {
    assert!(
        partitions >= 1,
        "__mirror_state needs at least one partition, not {partitions}"
    );
    let key = StateKey {
        mirror: mirror.to_string(),
        topic_id: *topic_id,
        partition,
    };
    (key.stable_hash() % partitions as u64) as i32
}

/// The internal topic holding mirror partition states.
pub const MIRROR_STATE_TOPIC: &str = "__mirror_state";

/// `mirror.state.topic.num.partitions`' default.
pub const DEFAULT_STATE_PARTITIONS: i32 = 50;

/// `__mirror_state`'s topic id, the same on every cluster: FNV-1a 64 of
/// `"mirrorlog:__mirror_state:0"` then of `"…:1"`, big-endian.
pub const MIRROR_STATE_TOPIC_ID: TopicId = {
    let a = Fnv::new()
        .write_const(b"mirrorlog:__mirror_state:0")
        .0
        .to_be_bytes();
    let b = Fnv::new()
        .write_const(b"mirrorlog:__mirror_state:1")
        .0
        .to_be_bytes();
    let mut id = [0u8; 16];
    let mut i = 0;
    while i < 8 {
        id[i] = a[i];
        id[8 + i] = b[i];
        i += 1;
    }
    TopicId(id)
};

/// Dirty records (records in a partition beyond its live keys) that trigger the compaction
/// stand-in (module docs). Range: ≥ 1 ([`MirrorStateStore::set_compaction_min_dirty_records`]).
pub const COMPACTION_MIN_DIRTY_RECORDS: u64 = 10_000;

/// `segment.bytes` of new `__mirror_state` partitions: 100 MiB, as Kafka's
/// `offsets.topic.segment.bytes`, so that moving the log start past rewritten records frees
/// whole segments long before a default 1 GiB segment would roll.
pub const STATE_SEGMENT_BYTES: u32 = 100 << 20;

/// The most record bytes one rewrite batch of the compaction stand-in carries.
pub const COMPACTION_BATCH_BYTES: usize = 1 << 20;

/// How much of a `__mirror_state` partition one load step reads
/// (`mirror.coordinator.load.buffer.size`).
pub const LOAD_BUFFER_BYTES: u32 = 5 << 20;

/// The latest state of every mirror partition, kept in `__mirror_state` through the engine. See
/// the module docs.
///
/// Writes to one `__mirror_state` partition are serialised (the record order is the order the
/// states are seen in); reads never wait for a write's sync.
#[derive(Debug)]
pub struct MirrorStateStore {
    logs: Arc<LogManager>,
    /// `__mirror_state-i` at index `i`, each behind its writers' lock, which also holds the
    /// partition's record count; `Err` with its data directory and why for a partition whose
    /// data directory was offline at open (see [`open`](Self::open)).
    partitions: Vec<(StatePartition, Mutex<Records>)>,
    states: RwLock<HashMap<StateKey, PartitionMirrorState>>,
    /// The start intents (module docs), by [`StartIntent::key`], each with its head when its
    /// value is in chunks.
    intents: RwLock<HashMap<StateKey, (StartIntent, Option<IntentHead>)>>,
    /// Every chunk record stored (module docs: chunked start intents), its piece by its id:
    /// those a head names, those of a write under way, and those no head names (a crash cut a
    /// write or a deletion short), which the compaction stand-in leaves out.
    chunks: RwLock<BTreeMap<ChunkId, Vec<u8>>>,
    /// The chunk generations being written (their head not yet): kept by the compaction
    /// stand-in though no head names them.
    chunks_in_flight: Mutex<std::collections::HashSet<(StateKey, u32)>>,
    /// See [`INTENT_CHUNK_BYTES`].
    chunk_bytes: std::sync::atomic::AtomicUsize,
    /// The mirrors whose deletion is under way or was cut short (module docs), by name.
    deletions: RwLock<std::collections::BTreeSet<String>>,
    /// See [`COMPACTION_MIN_DIRTY_RECORDS`].
    min_dirty: std::sync::atomic::AtomicU64,
}

/// A `__mirror_state` partition's log, or why it is not loaded.
type StatePartition = Result<Arc<PartitionHandle>, Offline>;

/// A `__mirror_state` partition not loaded: its data directory, and what took it offline.
#[derive(Debug, Clone)]
struct Offline {
    dir: std::path::PathBuf,
    reason: String,
}

/// Records in one `__mirror_state` partition from its log start to its end, as this store
/// counted them (loaded plus appended), and the count at which to look at compaction again.
#[derive(Debug, Default)]
struct Records {
    in_log: u64,
    check_at: u64,
    /// The latest value of each live record whose key type this build does not know (written
    /// by a newer version), by its key bytes: skipped as states, but copied by the compaction
    /// stand-in like live states, so a downgrade and re-upgrade loses none of them.
    unknown: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl MirrorStateStore {
    /// Opens `__mirror_state` with `partitions` partitions in `logs`, creating the partitions
    /// that are missing, and loads every record (later records win; tombstones delete).
    ///
    /// Missing partitions are created only when every existing one is empty (a creation cut
    /// short); otherwise the count must match, since a key's partition depends on it.
    ///
    /// A partition whose data directory went offline while the log manager loaded is neither
    /// loaded nor created anew elsewhere (that would lose its states, and the next start would
    /// find two copies): the keys it holds are unknown until a restart with the directory
    /// repaired loads it, and writes to them are refused with [`EngineError::LogDirOffline`]
    /// ([`unavailable`](Self::unavailable) says which keys), so nothing is written over the
    /// states it holds.
    ///
    /// # Errors
    /// [`StateError::InvalidConfig`] for `partitions < 1`; [`StateError::Store`] when the topic
    /// exists with another partition count or topic id; [`StateError::Corrupt`] for a record
    /// that does not decode (naming the partition and offset); engine errors.
    pub fn open(logs: Arc<LogManager>, partitions: i32) -> Result<MirrorStateStore, StateError> {
        if partitions < 1 {
            return Err(StateError::InvalidConfig(format!(
                "mirror.state.topic.num.partitions {partitions} is below 1"
            )));
        }
        let existing: Vec<Arc<PartitionHandle>> = logs
            .partitions()
            .into_iter()
            .filter(|h| h.topic_partition().topic == MIRROR_STATE_TOPIC)
            .collect();
        for h in &existing {
            let tp = h.topic_partition();
            if h.topic_id() != MIRROR_STATE_TOPIC_ID {
                return Err(StateError::Store(format!(
                    "{tp} has topic id {}, not {MIRROR_STATE_TOPIC_ID}",
                    h.topic_id()
                )));
            }
            if tp.partition >= partitions {
                return Err(StateError::Store(format!(
                    "{tp} exists but {partitions} partitions were asked for"
                )));
            }
        }
        let offline: Vec<TopicPartition> = logs
            .offline_partitions()
            .into_iter()
            .map(|(tp, _)| tp)
            .filter(|tp| tp.topic == MIRROR_STATE_TOPIC)
            .collect();
        if let Some(tp) = offline.iter().find(|tp| tp.partition >= partitions) {
            return Err(StateError::Store(format!(
                "{tp} exists (in an offline data dir) but {partitions} partitions were asked for"
            )));
        }
        // An offline partition's data is unknown: it counts as holding some.
        let all_empty = offline.is_empty()
            && existing
                .iter()
                .all(|h| h.read().log_end_offset() == Offset(0));
        let known = existing.len() + offline.len();
        if known > 0 && known < partitions as usize && !all_empty {
            return Err(StateError::Store(format!(
                "has {known} partitions with data, {partitions} were asked for"
            )));
        }
        let mut config = logs.default_log_config().clone();
        // No compaction in the engine: keep every record (the rewrite stand-in moves the log
        // start instead; segments small enough that moving it frees disk).
        config.retention_ms = -1;
        config.retention_bytes = -1;
        config.segment.segment_bytes_max = STATE_SEGMENT_BYTES;
        config.read_only = false;
        // Created already pinned: `keep_every_record` below then writes only the partitions an
        // older build created unpinned (each write is a `topic.config` sync and a directory
        // sync, on every partition of a new mirror's first start).
        let config = config.keeping_every_record().map_err(EngineError::from)?;
        let mut handles = Vec::with_capacity(partitions as usize);
        for p in 0..partitions {
            let tp = TopicPartition {
                topic: MIRROR_STATE_TOPIC.to_string(),
                partition: p,
            };
            let h = match logs.lookup(&tp) {
                Ok(Some(h)) => h,
                Ok(None) => logs.create(&tp, MIRROR_STATE_TOPIC_ID, config.clone())?,
                Err(EngineError::LogDirOffline { path, reason }) => {
                    tracing::error!(
                        "{tp} is not loaded: data dir {} is offline ({reason}); the mirror \
                         partitions whose state it holds are not restored until a restart \
                         loads it",
                        path.display()
                    );
                    let offline = Offline { dir: path, reason };
                    handles.push((Err(offline), Mutex::new(Records::default())));
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            logs.keep_every_record(&tp)?;
            handles.push((Ok(h), Mutex::new(Records::default())));
        }
        let mut states = HashMap::new();
        let mut intents = HashMap::new();
        let mut chunks = BTreeMap::new();
        let mut deletions = std::collections::BTreeSet::new();
        let mut records = 0u64;
        for (h, counts) in &handles {
            let Ok(h) = h else { continue };
            let mut counts = counts.lock();
            let mut loaded = Loaded {
                states: &mut states,
                intents: &mut intents,
                chunks: &mut chunks,
                deletions: &mut deletions,
                unknown: &mut counts.unknown,
            };
            let n = load_partition(h, &mut loaded)?;
            counts.in_log = n;
            records += n;
        }
        let intents = assemble_intents(intents, &chunks)?;
        tracing::info!(
            partitions,
            records,
            states = states.len(),
            start_intents = intents.len(),
            mirror_deletions = deletions.len(),
            "loaded {MIRROR_STATE_TOPIC}"
        );
        Ok(MirrorStateStore {
            logs,
            partitions: handles,
            states: RwLock::new(states),
            intents: RwLock::new(intents),
            chunks: RwLock::new(chunks),
            chunks_in_flight: Mutex::new(Default::default()),
            chunk_bytes: std::sync::atomic::AtomicUsize::new(INTENT_CHUNK_BYTES),
            deletions: RwLock::new(deletions),
            min_dirty: std::sync::atomic::AtomicU64::new(COMPACTION_MIN_DIRTY_RECORDS),
        })
    }

    /// The dirty records that trigger the compaction stand-in (module docs).
    pub fn compaction_min_dirty_records(&self) -> u64 {
        self.min_dirty.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets [`compaction_min_dirty_records`](Self::compaction_min_dirty_records) (clamped to
    /// ≥ 1); takes effect at the next write.
    pub fn set_compaction_min_dirty_records(&self, n: u64) {
        self.min_dirty
            .store(n.max(1), std::sync::atomic::Ordering::Relaxed);
        for (_, counts) in &self.partitions {
            counts.lock().check_at = 0;
        }
    }

    /// Records in `__mirror_state-partition` from its log start, as counted by this store
    /// (`None` for a partition it does not have or did not load).
    pub fn records_in_log(&self, partition: i32) -> Option<u64> {
        let (h, counts) = self.partitions.get(usize::try_from(partition).ok()?)?;
        h.as_ref().ok()?;
        Some(counts.lock().in_log)
    }

    /// The partitions not loaded (their data directory was offline at open), with that
    /// directory: the states they hold are unknown.
    pub fn unavailable_partitions(&self) -> Vec<(i32, std::path::PathBuf)> {
        self.partitions
            .iter()
            .enumerate()
            .filter_map(|(p, (h, _))| h.as_ref().err().map(|o| (p as i32, o.dir.clone())))
            .collect()
    }

    /// Why the state of `key` is unavailable, if it is: its `__mirror_state` partition was not
    /// loaded (its data directory was offline at open), so the stored state of `key` is
    /// unknown, or its data directory went offline since, so the stored state is the last one
    /// written; either way no write to it is allowed until a restart with the directory
    /// repaired. The error is [`EngineError::LogDirOffline`], naming the directory.
    pub fn unavailable(&self, key: &StateKey) -> Option<EngineError> {
        let p = self.partition_index(key);
        let (path, reason) = match &self.partitions[p as usize].0 {
            Err(o) => (o.dir.clone(), format!("is not loaded: {}", o.reason)),
            Ok(h) => match h.check_online() {
                Ok(()) => return None,
                Err(EngineError::LogDirOffline { path, reason }) => {
                    (path, format!("is in an offline data dir: {reason}"))
                }
                Err(e) => return Some(e),
            },
        };
        Some(EngineError::LogDirOffline {
            path,
            reason: format!(
                "{MIRROR_STATE_TOPIC}-{p}, which holds this mirror partition's state, {reason}"
            ),
        })
    }

    /// The number of `__mirror_state` partitions.
    pub fn partition_count(&self) -> i32 {
        self.partitions.len() as i32
    }

    /// The latest state of `key`.
    pub fn get(&self, key: &StateKey) -> Option<PartitionMirrorState> {
        self.states.read().get(key).cloned()
    }

    /// Every state, sorted by key.
    pub fn all(&self) -> Vec<PartitionMirrorState> {
        let mut v: Vec<_> = self.states.read().values().cloned().collect();
        v.sort_by_key(|s| s.key());
        v
    }

    /// How many keys hold a state.
    pub fn len(&self) -> usize {
        self.states.read().len()
    }

    /// Whether no key holds a state.
    pub fn is_empty(&self) -> bool {
        self.states.read().is_empty()
    }

    /// Stores `state` as the latest of its key; durable on return.
    ///
    /// # Errors
    /// Engine errors: the write may or may not be in the log, and the store is not updated; the
    /// store should be reopened.
    pub fn put(&self, state: &PartitionMirrorState) -> Result<(), StateError> {
        self.write(state, None)
    }

    /// [`put`](Self::put) only if the stored state epoch of the key is `expected_epoch` (−1:
    /// only if nothing is stored) — the coordinator's `FENCED_STATE_EPOCH` check.
    ///
    /// # Errors
    /// [`StateError::Fenced`] (nothing written); as [`put`](Self::put).
    pub fn put_if_epoch(
        &self,
        state: &PartitionMirrorState,
        expected_epoch: i32,
    ) -> Result<(), StateError> {
        self.write(state, Some(expected_epoch))
    }

    fn write(
        &self,
        state: &PartitionMirrorState,
        expected_epoch: Option<i32>,
    ) -> Result<(), StateError> {
        let key = state.key();
        let check = || {
            if let Some(expected) = expected_epoch {
                let actual = self.states.read().get(&key).map_or(-1, |s| s.state_epoch);
                if actual != expected {
                    return Err(StateError::Fenced { expected, actual });
                }
            }
            Ok(true)
        };
        let record = (encode_key(&key), Some(encode_value(state)));
        self.write_record(&key, check, record, || {
            self.states.write().insert(key.clone(), state.clone());
        })
        .map(drop)
    }

    /// Deletes `key` with a tombstone; durable on return. Returns whether a state was stored
    /// (nothing is written otherwise).
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn delete(&self, key: &StateKey) -> Result<bool, StateError> {
        let check = || Ok(self.states.read().contains_key(key));
        self.write_record(key, check, (encode_key(key), None), || {
            self.states.write().remove(key);
        })
    }

    /// The start intent of `mirror` for the topic with id `topic_id`, if one is stored.
    pub fn start_intent(&self, mirror: &str, topic_id: [u8; 16]) -> Option<StartIntent> {
        self.intents
            .read()
            .get(&StartIntent::key_of(mirror, topic_id))
            .map(|(i, _)| i.clone())
    }

    /// Every start intent of `mirror`, by topic id.
    pub fn start_intents(&self, mirror: &str) -> Vec<StartIntent> {
        let mut v: Vec<_> = (self.intents.read().values())
            .filter(|(i, _)| i.mirror == mirror)
            .map(|(i, _)| i.clone())
            .collect();
        v.sort_by_key(|i| i.topic_id);
        v
    }

    /// The largest start intent value written as one record, and the largest chunk of a larger
    /// one (module docs: chunked start intents).
    pub fn intent_chunk_bytes(&self) -> usize {
        self.chunk_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets [`intent_chunk_bytes`](Self::intent_chunk_bytes) (clamped to 1 ..=
    /// [`INTENT_CHUNK_BYTES`]); takes effect at the next intent written.
    pub fn set_intent_chunk_bytes(&self, n: usize) {
        let n = n.clamp(1, INTENT_CHUNK_BYTES);
        self.chunk_bytes
            .store(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Stores `intent` (replacing the one of its key); durable on return. A value over
    /// [`intent_chunk_bytes`](Self::intent_chunk_bytes) is written as chunks, then a head
    /// naming them (module docs), so a crash part-way leaves the intent stored before, whole.
    ///
    /// # Errors
    /// As [`put`](Self::put); the intent stored before (if any) is then still stored, whole.
    pub fn put_start_intent(&self, intent: &StartIntent) -> Result<(), StateError> {
        let key = intent.key();
        let value = encode_intent_value(intent);
        let max = self.intent_chunk_bytes();
        let head = if value.len() <= max {
            let record = (encode_intent_key(&key), Some(value));
            self.write_records(
                &key,
                || Ok(true),
                vec![record],
                || {
                    self.intents
                        .write()
                        .insert(key.clone(), (intent.clone(), None));
                },
            )?;
            None
        } else {
            Some(self.put_chunked_intent(intent, &value, max)?)
        };
        self.drop_chunks(&key, head.map(|h| h.generation));
        Ok(())
    }

    /// Writes `value`, the value of `intent`, as chunks of at most `max` bytes under a new
    /// generation, then the head naming them.
    fn put_chunked_intent(
        &self,
        intent: &StartIntent,
        value: &[u8],
        max: usize,
    ) -> Result<IntentHead, StateError> {
        let key = intent.key();
        let generation = {
            let chunks = self.chunks.read();
            let in_flight = self.chunks_in_flight.lock();
            let used = (chunks
                .keys()
                .filter(|(k, ..)| *k == key)
                .map(|(_, g, _)| *g))
            .chain(in_flight.iter().filter(|(k, _)| *k == key).map(|(_, g)| *g))
            .max();
            used.map_or(0, |g| g.wrapping_add(1))
        };
        let flight = (key.clone(), generation);
        self.chunks_in_flight.lock().insert(flight.clone());
        let len32 = |n: usize| u32::try_from(n).expect("a start intent under 4 GiB");
        let head = IntentHead {
            generation,
            chunks: len32(value.len().div_ceil(max)),
            total_bytes: len32(value.len()),
        };
        let written = (|| {
            for (i, piece) in value.chunks(max).enumerate() {
                let id = (key.clone(), generation, len32(i));
                let record = encode_intent_chunk_key(&key, generation, id.2);
                let record = (record, Some(encode_chunk_value(piece)));
                self.write_records(
                    &key,
                    || Ok(true),
                    vec![record],
                    || {
                        self.chunks.write().insert(id, piece.to_vec());
                    },
                )?;
            }
            let record = (encode_intent_key(&key), Some(encode_intent_head(head)));
            self.write_records(
                &key,
                || Ok(true),
                vec![record],
                || {
                    (self.intents.write()).insert(key.clone(), (intent.clone(), Some(head)));
                    self.chunks_in_flight.lock().remove(&flight);
                },
            )
        })();
        self.chunks_in_flight.lock().remove(&flight);
        written.map(|_| head)
    }

    /// Tombstones, in one batch, the chunks of the intent key `key` that no write under way
    /// holds, but those of generation `keep`: what a new intent of the key or its deletion
    /// leaves. A failure is logged: chunks no head names are harmless, and the compaction
    /// stand-in leaves them out.
    fn drop_chunks(&self, key: &StateKey, keep: Option<u32>) {
        let ids: Vec<ChunkId> = {
            let chunks = self.chunks.read();
            let in_flight = self.chunks_in_flight.lock();
            (chunks.keys())
                .filter(|(k, g, _)| k == key && Some(*g) != keep)
                .filter(|(k, g, _)| !in_flight.contains(&(k.clone(), *g)))
                .cloned()
                .collect()
        };
        if ids.is_empty() {
            return;
        }
        let records = (ids.iter())
            .map(|(k, g, i)| (encode_intent_chunk_key(k, *g, *i), None))
            .collect();
        let dropped = self.write_records(
            key,
            || Ok(true),
            records,
            || {
                let mut chunks = self.chunks.write();
                for id in &ids {
                    chunks.remove(id);
                }
            },
        );
        if let Err(e) = dropped {
            tracing::warn!(mirror = %key.mirror, chunks = ids.len(), "tombstoning the start intent chunks no head names failed (the compaction stand-in leaves them out): {e}");
        }
    }

    /// Deletes the start intent with key `key` ([`StartIntent::key_of`]) with a tombstone, then
    /// its chunks if it has any; durable on return. Returns whether one was stored (nothing is
    /// written otherwise).
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn delete_start_intent(&self, key: &StateKey) -> Result<bool, StateError> {
        let check = || Ok(self.intents.read().contains_key(key));
        let deleted =
            self.write_records(key, check, vec![(encode_intent_key(key), None)], || {
                self.intents.write().remove(key);
            })?;
        self.drop_chunks(key, None);
        Ok(deleted)
    }

    /// Whether the deletion of `mirror` is under way or was cut short: its deletion record
    /// is stored (module docs).
    pub fn mirror_deletion_pending(&self, mirror: &str) -> bool {
        self.deletions.read().contains(mirror)
    }

    /// The mirrors whose deletion is under way or was cut short, by name.
    pub fn pending_mirror_deletions(&self) -> Vec<String> {
        self.deletions.read().iter().cloned().collect()
    }

    /// Finishes the deletion of `mirror` whose record is stored
    /// ([`put_mirror_deletion`](Self::put_mirror_deletion)): tombstones every start intent of
    /// it, then every state, then the deletion record; each durable on return. Run again after
    /// a crash or a failure part-way, it goes on where it stopped.
    ///
    /// # Errors
    /// Refused ([`EngineError::LogDirOffline`], the deletion record kept) while a partition is
    /// not loaded: records of `mirror` there could not be tombstoned, and the deletion would
    /// count as done. A write error as [`put`](Self::put).
    pub fn finish_mirror_deletion(&self, mirror: &str) -> Result<(), StateError> {
        if let Some((p, dir)) = self.unavailable_partitions().into_iter().next() {
            return Err(StateError::Engine(EngineError::LogDirOffline {
                path: dir,
                reason: format!(
                    "{MIRROR_STATE_TOPIC}-{p} is not loaded, so the deletion of cluster mirror \
                     {mirror} (begun, and cut short) cannot be finished: records of it there \
                     could not be deleted"
                ),
            }));
        }
        for intent in self.start_intents(mirror) {
            self.delete_start_intent(&intent.key())?;
        }
        for st in self.all() {
            if st.mirror == mirror {
                self.delete(&st.key())?;
            }
        }
        self.delete_mirror_deletion(mirror)?;
        Ok(())
    }

    /// Records that `mirror` is being deleted, before its start intents and states are
    /// tombstoned (module docs); durable on return.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn put_mirror_deletion(&self, mirror: &str) -> Result<(), StateError> {
        let key = mirror_deletion_key(mirror);
        let value = DELETION_VALUE_VERSION.to_be_bytes().to_vec();
        let record = (
            encode_typed_key(KEY_TYPE_MIRROR_DELETION, &key),
            Some(value),
        );
        self.write_record(
            &key,
            || Ok(true),
            record,
            || {
                self.deletions.write().insert(mirror.to_string());
            },
        )
        .map(drop)
    }

    /// Tombstones the deletion record of `mirror`, once every start intent and state of it is
    /// tombstoned; durable on return. Returns whether one was stored.
    ///
    /// # Errors
    /// As [`put`](Self::put).
    pub fn delete_mirror_deletion(&self, mirror: &str) -> Result<bool, StateError> {
        let key = mirror_deletion_key(mirror);
        let check = || Ok(self.deletions.read().contains(mirror));
        let record = (encode_typed_key(KEY_TYPE_MIRROR_DELETION, &key), None);
        self.write_record(&key, check, record, || {
            self.deletions.write().remove(mirror);
        })
    }

    /// Appends `record` to the partition of `key` when `check` (run under the partition's
    /// writers' lock) says so, then runs `apply` (the in-memory change); returns whether it
    /// wrote.
    fn write_record(
        &self,
        key: &StateKey,
        check: impl FnOnce() -> Result<bool, StateError>,
        record: (Vec<u8>, Option<Vec<u8>>),
        apply: impl FnOnce(),
    ) -> Result<bool, StateError> {
        self.write_records(key, check, vec![record], apply)
    }

    /// [`write_record`](Self::write_record) for records in one batch (all in the partition of
    /// `key`).
    fn write_records(
        &self,
        key: &StateKey,
        check: impl FnOnce() -> Result<bool, StateError>,
        records: Vec<(Vec<u8>, Option<Vec<u8>>)>,
        apply: impl FnOnce(),
    ) -> Result<bool, StateError> {
        let (p, h, lock) = self.partition_of(key)?;
        let mut counts = lock.lock();
        if !check()? {
            return Ok(false);
        }
        self.append(h, &records)?;
        apply();
        counts.in_log += records.len() as u64;
        self.maybe_compact(p, h, &mut counts);
        Ok(true)
    }

    /// The partition holding `key`: its number, handle and writers' lock; a partition not
    /// loaded is [`EngineError::LogDirOffline`] ([`unavailable`](Self::unavailable)).
    fn partition_of(
        &self,
        key: &StateKey,
    ) -> Result<(i32, &Arc<PartitionHandle>, &Mutex<Records>), StateError> {
        let p = self.partition_index(key);
        let (h, lock) = &self.partitions[p as usize];
        match h {
            Ok(h) => Ok((p, h, lock)),
            Err(_) => Err(self
                .unavailable(key)
                .expect("the partition is not loaded")
                .into()),
        }
    }

    fn partition_index(&self, key: &StateKey) -> i32 {
        state_partition_for(
            &key.mirror,
            &key.topic_id,
            key.partition,
            self.partition_count(),
        )
    }

    /// Appends records as one batch, durably, and moves the high watermark to the log end (a
    /// single replica: durable is committed). Returns the batch's base offset.
    fn append(
        &self,
        h: &PartitionHandle,
        records: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> Result<Offset, StateError> {
        let now = TimestampMs(self.logs.clock().now_ms());
        let mut b = BatchBuilder::new();
        for (k, v) in records {
            b.append(now, Some(k), v.as_deref(), &[]);
        }
        let epoch = h
            .read()
            .epoch_cache()
            .latest_epoch()
            .unwrap_or(LeaderEpoch(0));
        let info =
            h.append_as_leader_durable(b.build().into_bytes(), epoch, LeaderOrigin::Coordinator)?;
        let mut log = h.write();
        let leo = log.log_end_offset();
        log.update_high_watermark(leo);
        Ok(info.first_offset)
    }

    /// The compaction stand-in (module docs) for partition `p`, run by the write that made its
    /// count cross the line, under the partition's writer lock. A failure is logged and leaves
    /// the log as it was or with a harmless partial rewrite; a later write tries again.
    fn maybe_compact(&self, p: i32, h: &PartitionHandle, counts: &mut Records) {
        if counts.in_log < counts.check_at {
            return;
        }
        let min_dirty = self.compaction_min_dirty_records();
        let mut live: Vec<(StateKey, Vec<u8>)> = {
            let states = self.states.read();
            states
                .iter()
                .filter(|(k, _)| self.partition_index(k) == p)
                .map(|(k, v)| (k.clone(), encode_value(v)))
                .collect()
        };
        let mut intents: Vec<(StateKey, Vec<u8>)> = {
            let intents = self.intents.read();
            intents
                .iter()
                .filter(|(k, _)| self.partition_index(k) == p)
                .map(|(k, (v, head))| match head {
                    None => (k.clone(), encode_intent_value(v)),
                    Some(head) => (k.clone(), encode_intent_head(*head)),
                })
                .collect()
        };
        // The chunks a head names or a write under way holds; the others are left out (and
        // forgotten once the log start moves past them).
        let (chunks, orphans): (Vec<_>, Vec<_>) = {
            let heads = self.intents.read();
            let chunks = self.chunks.read();
            let in_flight = self.chunks_in_flight.lock();
            (chunks.iter())
                .filter(|((k, ..), _)| self.partition_index(k) == p)
                .map(|((k, g, i), piece)| {
                    let named = heads.get(k).and_then(|(_, h)| *h).map(|h| h.generation)
                        == Some(*g)
                        || in_flight.contains(&(k.clone(), *g));
                    let record = (
                        encode_intent_chunk_key(k, *g, *i),
                        encode_chunk_value(piece),
                    );
                    (named, record, (k.clone(), *g, *i))
                })
                .partition(|(named, ..)| *named)
        };
        let orphans: Vec<ChunkId> = orphans.into_iter().map(|(_, _, id)| id).collect();
        let chunks: Vec<(Vec<u8>, Vec<u8>)> = chunks.into_iter().map(|(_, r, _)| r).collect();
        let deletions: Vec<Vec<u8>> = (self.deletions.read().iter())
            .map(|m| mirror_deletion_key(m))
            .filter(|k| self.partition_index(k) == p)
            .map(|k| encode_typed_key(KEY_TYPE_MIRROR_DELETION, &k))
            .collect();
        let n_live =
            (live.len() + intents.len() + chunks.len() + deletions.len() + counts.unknown.len())
                as u64;
        if counts.in_log.saturating_sub(n_live) < min_dirty {
            counts.check_at = n_live.saturating_add(min_dirty);
            return;
        }
        live.sort_by(|a, b| a.0.cmp(&b.0));
        intents.sort_by(|a, b| a.0.cmp(&b.0));
        let records: Vec<(Vec<u8>, Option<Vec<u8>>)> = live
            .into_iter()
            .map(|(k, v)| (encode_key(&k), Some(v)))
            .chain(
                intents
                    .into_iter()
                    .map(|(k, v)| (encode_intent_key(&k), Some(v))),
            )
            .chain(chunks.into_iter().map(|(k, v)| (k, Some(v))))
            .chain(
                deletions
                    .into_iter()
                    .map(|k| (k, Some(DELETION_VALUE_VERSION.to_be_bytes().to_vec()))),
            )
            .chain(
                counts
                    .unknown
                    .iter()
                    .map(|(k, v)| (k.clone(), Some(v.clone()))),
            )
            .collect();
        let mut first = None;
        let mut i = 0;
        while i < records.len() {
            let mut j = i;
            let mut bytes = 0;
            let size =
                |r: &(Vec<u8>, Option<Vec<u8>>)| r.0.len() + r.1.as_ref().map_or(0, Vec::len);
            while j < records.len()
                && (j == i || bytes + size(&records[j]) <= COMPACTION_BATCH_BYTES)
            {
                bytes += size(&records[j]);
                j += 1;
            }
            match self.append(h, &records[i..j]) {
                Ok(base) => {
                    first.get_or_insert(base);
                }
                Err(e) => {
                    tracing::warn!(
                        partition = p,
                        "{MIRROR_STATE_TOPIC} compaction append failed: {e}"
                    );
                    // Whether that batch landed is unknown; try again after more writes.
                    counts.check_at = counts.in_log.saturating_add(min_dirty);
                    return;
                }
            }
            counts.in_log += (j - i) as u64;
            i = j;
        }
        // No live key: everything so far can go.
        let new_start = first.unwrap_or_else(|| h.read().log_end_offset());
        let dropped = counts.in_log - n_live;
        match h.write().maybe_increment_log_start_offset(new_start) {
            Ok(_) => {
                let mut chunks = self.chunks.write();
                for id in &orphans {
                    chunks.remove(id);
                }
                counts.in_log = n_live;
                counts.check_at = n_live.saturating_add(min_dirty);
                tracing::info!(
                    partition = p,
                    dropped,
                    kept = n_live,
                    log_start = new_start.get(),
                    "compacted {MIRROR_STATE_TOPIC}"
                );
            }
            Err(e) => {
                counts.check_at = counts.in_log.saturating_add(min_dirty);
                tracing::warn!(
                    partition = p,
                    "{MIRROR_STATE_TOPIC} compaction could not move the log start: {e}"
                );
            }
        }
    }
}

/// Replays one `__mirror_state` partition into `states`; returns the records read. The high
/// watermark moves to the log end first: every record there was appended durably before it was
/// acknowledged, and a crash may have left the checkpointed watermark behind.
fn load_partition(h: &PartitionHandle, loaded: &mut Loaded<'_>) -> Result<u64, StateError> {
    let tp = h.topic_partition().clone();
    let mut log = h.write();
    let leo = log.log_end_offset();
    log.update_high_watermark(leo);
    let mut next = log.log_start_offset();
    let mut records = 0u64;
    while next < leo {
        let info = log.read(next, LOAD_BUFFER_BYTES, FetchIsolation::LogEnd, true)?;
        let Some(data) = info.records else { break };
        let bytes: Bytes = data.slice.read_all().map_err(EngineError::from)?;
        let before = next;
        for batch in Batches::new(bytes) {
            let corrupt = |reason: String| StateError::Corrupt {
                what: format!("{tp} batch"),
                position: 0,
                reason,
            };
            let batch = batch.map_err(|e| corrupt(e.to_string()))?;
            if batch.is_control() {
                next = batch.next_offset();
                continue;
            }
            for r in batch.records().map_err(|e| corrupt(e.to_string()))? {
                let r = r.map_err(|e| corrupt(e.to_string()))?;
                if r.offset < next {
                    continue;
                }
                records += 1;
                apply_record(&tp, r.offset, r.key.as_deref(), r.value.as_deref(), loaded)?;
            }
            next = batch.next_offset();
        }
        if next <= before {
            return Err(StateError::Corrupt {
                what: format!("{tp} at offset {before}"),
                position: 0,
                reason: "a read returned no whole batch".into(),
            });
        }
    }
    Ok(records)
}

/// The start intents loaded, those in chunks put together from them (module docs).
///
/// # Errors
/// [`StateError::Corrupt`] for a head whose chunks are not all stored, or whose value does
/// not decode.
#[allow(clippy::type_complexity)]
fn assemble_intents(
    loaded: HashMap<StateKey, StoredIntent>,
    chunks: &BTreeMap<ChunkId, Vec<u8>>,
) -> Result<HashMap<StateKey, (StartIntent, Option<IntentHead>)>, StateError> {
    let mut out = HashMap::with_capacity(loaded.len());
    for (key, stored) in loaded {
        let head = match stored {
            StoredIntent::Inline(intent) => {
                out.insert(key, (*intent, None));
                continue;
            }
            StoredIntent::Chunked(head) => head,
        };
        let what = || {
            format!(
                "start intent of {} (generation {})",
                key.mirror, head.generation
            )
        };
        let mut value = Vec::with_capacity(head.total_bytes as usize);
        for i in 0..head.chunks {
            let Some(piece) = chunks.get(&(key.clone(), head.generation, i)) else {
                return Err(StateError::Corrupt {
                    what: what(),
                    position: value.len(),
                    reason: format!("chunk {i} of {} is not stored", head.chunks),
                });
            };
            value.extend_from_slice(piece);
        }
        if value.len() != head.total_bytes as usize {
            return Err(StateError::Corrupt {
                what: what(),
                position: value.len(),
                reason: format!(
                    "its chunks hold {} bytes, not {}",
                    value.len(),
                    head.total_bytes
                ),
            });
        }
        let intent = decode_intent_value(&key, &value)?;
        out.insert(key, (intent, Some(head)));
    }
    Ok(out)
}

/// What a load of `__mirror_state` fills: the latest record of every key, by its type.
struct Loaded<'a> {
    states: &'a mut HashMap<StateKey, PartitionMirrorState>,
    intents: &'a mut HashMap<StateKey, StoredIntent>,
    chunks: &'a mut BTreeMap<ChunkId, Vec<u8>>,
    deletions: &'a mut std::collections::BTreeSet<String>,
    unknown: &'a mut BTreeMap<Vec<u8>, Vec<u8>>,
}

/// One `__mirror_state` record: a state, a start intent or a mirror deletion (later wins), or
/// a tombstone.
fn apply_record(
    tp: &TopicPartition,
    offset: Offset,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    loaded: &mut Loaded<'_>,
) -> Result<(), StateError> {
    let Loaded {
        states,
        intents,
        chunks,
        deletions,
        unknown,
    } = loaded;
    let at = |e: StateError| match e {
        StateError::Corrupt {
            what,
            position,
            reason,
        } => StateError::Corrupt {
            what: format!("{tp} offset {offset} {what}"),
            position,
            reason,
        },
        e => e,
    };
    let Some(key) = key else {
        return Err(StateError::Corrupt {
            what: format!("{tp} offset {offset} key"),
            position: 0,
            reason: "record has no key".into(),
        });
    };
    let key = match decode_key(key) {
        Ok(k) => k,
        Err(StateError::UnsupportedVersion {
            version: KEY_TYPE_START_INTENT,
            ..
        }) => {
            let key = decode_intent_key(key).map_err(at)?;
            match value {
                None => {
                    intents.remove(&key);
                }
                Some(v) => {
                    let intent = decode_intent_record(&key, v).map_err(at)?;
                    intents.insert(key, intent);
                }
            }
            return Ok(());
        }
        Err(StateError::UnsupportedVersion {
            version: KEY_TYPE_START_INTENT_CHUNK,
            ..
        }) => {
            let id = decode_intent_chunk_key(key).map_err(at)?;
            match value {
                None => chunks.remove(&id),
                Some(v) => chunks.insert(id, decode_chunk_value(v).map_err(at)?),
            };
            return Ok(());
        }
        Err(StateError::UnsupportedVersion {
            version: KEY_TYPE_MIRROR_DELETION,
            ..
        }) => {
            let key = decode_typed_key(KEY_TYPE_MIRROR_DELETION, key).map_err(at)?;
            match value {
                None => deletions.remove(&key.mirror),
                Some(v) => {
                    decode_deletion_value(v).map_err(at)?;
                    deletions.insert(key.mirror)
                }
            };
            return Ok(());
        }
        Err(StateError::UnsupportedVersion { version, .. }) => {
            tracing::warn!(partition = %tp, %offset, key_type = version, "skipping a record of an unknown key type (kept as it is by compaction)");
            match value {
                None => unknown.remove(key),
                Some(v) => unknown.insert(key.to_vec(), v.to_vec()),
            };
            return Ok(());
        }
        Err(e) => return Err(at(e)),
    };
    match value {
        None => {
            states.remove(&key);
        }
        Some(v) => {
            let state = decode_value(&key, v).map_err(at)?;
            states.insert(key, state);
        }
    }
    Ok(())
}
