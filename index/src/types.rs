//! The typed vocabulary shared by every mirrorlog crate.
//!
//! Kafka passes offsets, epochs and ids around as bare `long`/`int`/`short`; we give each its own
//! type so that an offset can never be handed where an epoch is expected, and so that conversions
//! between offset spaces (absolute ↔ relative to a segment base) are explicit and checked. Each
//! type is `#[repr(transparent)]` over the integer Kafka stores on disk and on the wire, so the
//! byte layouts in `FORMAT.md` are the integer's big-endian bytes.

use std::fmt;

macro_rules! newtype {
    ($(#[$meta:meta])* $name:ident($inner:ty)) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(pub $inner);

        impl $name {
            /// The raw integer, as Kafka stores it.
            #[inline]
            pub const fn get(self) -> $inner {
                self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl From<$name> for $inner {
            #[inline]
            fn from(v: $name) -> $inner {
                v.0
            }
        }
    };
}

newtype!(
    /// An absolute offset in a partition's log (Kafka `long`). The log end offset is the offset
    /// the next record will get.
    Offset(i64)
);
newtype!(
    /// An offset relative to a segment's base offset, as stored in the offset and time indexes
    /// (Kafka `int`). Made only through [`Offset::relative_to`], which checks the range.
    RelativeOffset(i32)
);
newtype!(
    /// A byte position inside a segment's `.log` file (Kafka `int`: segments are < 2 GiB).
    FilePosition(u32)
);
newtype!(
    /// A partition leader epoch (Kafka `int`); `-1` is "no epoch".
    LeaderEpoch(i32)
);
newtype!(
    /// A producer id (Kafka `long`); any negative value means "no producer" (Kafka's
    /// `hasProducerId()` is `-1 < producerId`).
    ProducerId(i64)
);
newtype!(
    /// A producer epoch (Kafka `short`); `-1` is "no epoch".
    ProducerEpoch(i16)
);
newtype!(
    /// A producer sequence number (Kafka `int`); `-1` is "no sequence". Wraps to 0 after
    /// `i32::MAX`.
    Sequence(i32)
);
newtype!(
    /// Milliseconds since the Unix epoch (Kafka `long`); `-1` is "no timestamp".
    TimestampMs(i64)
);
newtype!(
    /// A transaction coordinator's epoch (Kafka `int`), carried by transaction markers and kept
    /// in producer state; `-1` is "none".
    CoordinatorEpoch(i32)
);

impl Offset {
    /// The sentinel Kafka uses for "unknown offset".
    pub const UNKNOWN: Offset = Offset(-1);

    /// This offset minus `base`, if it fits in a [`RelativeOffset`] (0..=i32::MAX).
    #[inline]
    pub fn relative_to(self, base: Offset) -> Option<RelativeOffset> {
        let delta = self.0.checked_sub(base.0)?;
        if (0..=i32::MAX as i64).contains(&delta) {
            Some(RelativeOffset(delta as i32))
        } else {
            None
        }
    }

    /// `base + relative`; panics on overflow (a programmer error: relative offsets come from
    /// indexes whose base is known).
    #[inline]
    pub fn plus_relative(self, rel: RelativeOffset) -> Offset {
        Offset(
            self.0
                .checked_add(rel.0 as i64)
                .expect("offset overflow adding a relative offset"),
        )
    }

    /// `self + n`, panicking on overflow.
    #[inline]
    pub fn plus(self, n: i64) -> Offset {
        Offset(self.0.checked_add(n).expect("offset overflow"))
    }

    /// The next offset.
    #[inline]
    pub fn next(self) -> Offset {
        self.plus(1)
    }
}

impl LeaderEpoch {
    /// Kafka's `NO_PARTITION_LEADER_EPOCH`.
    pub const NONE: LeaderEpoch = LeaderEpoch(-1);
}

impl ProducerId {
    /// Kafka's `NO_PRODUCER_ID`.
    pub const NONE: ProducerId = ProducerId(-1);

    /// Kafka's `hasProducerId()`: any negative id means "none".
    #[inline]
    pub fn is_some(self) -> bool {
        self.0 > -1
    }
}

impl ProducerEpoch {
    /// Kafka's `NO_PRODUCER_EPOCH`.
    pub const NONE: ProducerEpoch = ProducerEpoch(-1);
}

impl Sequence {
    /// Kafka's `NO_SEQUENCE`.
    pub const NONE: Sequence = Sequence(-1);

    /// Kafka's `incrementSequence`: `self + n`, wrapping past `i32::MAX` to 0. Java `int`
    /// arithmetic, so it never panics: a corrupt header's negative `lastOffsetDelta` gives what
    /// Kafka computes from it.
    #[inline]
    pub fn increment(self, n: i32) -> Sequence {
        if self.0 > i32::MAX.wrapping_sub(n) {
            Sequence(
                n.wrapping_sub(i32::MAX.wrapping_sub(self.0))
                    .wrapping_sub(1),
            )
        } else {
            Sequence(self.0.wrapping_add(n))
        }
    }
}

impl CoordinatorEpoch {
    /// Kafka's "no coordinator epoch" (`RecordBatch.NO_PARTITION_LEADER_EPOCH`, −1).
    pub const NONE: CoordinatorEpoch = CoordinatorEpoch(-1);
}

impl TimestampMs {
    /// Kafka's `NO_TIMESTAMP`.
    pub const NONE: TimestampMs = TimestampMs(-1);
}

impl FilePosition {
    /// The position as a `u64` file offset.
    #[inline]
    pub fn as_u64(self) -> u64 {
        self.0 as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_offset_is_checked_both_ways() {
        let base = Offset(100);
        assert_eq!(Offset(100).relative_to(base), Some(RelativeOffset(0)));
        assert_eq!(Offset(99).relative_to(base), None);
        assert_eq!(
            Offset(100 + i32::MAX as i64).relative_to(base),
            Some(RelativeOffset(i32::MAX))
        );
        assert_eq!(Offset(101 + i32::MAX as i64).relative_to(base), None);
        assert_eq!(base.plus_relative(RelativeOffset(7)), Offset(107));
    }

    #[test]
    fn sequence_wraps_like_kafka() {
        assert_eq!(Sequence(5).increment(3), Sequence(8));
        assert_eq!(Sequence(i32::MAX).increment(1), Sequence(0));
        assert_eq!(Sequence(i32::MAX - 1).increment(3), Sequence(1));
        // Java int arithmetic for a corrupt negative delta (Kafka: 0 + -1 -> Integer.MAX_VALUE).
        assert_eq!(Sequence(0).increment(-1), Sequence(i32::MAX));
    }

    #[test]
    fn negative_producer_ids_mean_none() {
        assert!(!ProducerId(-1).is_some());
        assert!(!ProducerId(-7).is_some());
        assert!(ProducerId(0).is_some());
    }
}
