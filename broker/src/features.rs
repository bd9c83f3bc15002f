//! KIP-584 feature levels: what ApiVersions v3+ lists as supported and finalized.
//!
//! A Kafka cluster finalizes one level per feature and each broker lists the range it could run
//! at. Clients act on the finalized levels: a 4.x Java producer uses transactions v2 (Produce
//! v12, EndTxn v5, an epoch bump per transaction) only when `transaction.version` ≥ 2, a 4.x
//! consumer's KIP-848 protocol needs `group.version` ≥ 1, and the AdminClient's
//! `describeFeatures` (`kafka-features.sh describe`) prints both lists. So every level here is
//! what this broker implements, not what Kafka's latest release does:
//!
//! | feature | level | why |
//! | --- | --- | --- |
//! | `metadata.version` | 20 (3.8-IV0) | the Kafka release whose data-path APIs this broker serves: Produce v11, Fetch v16 and ListOffsets v8 (the versions `MetadataVersion` gives 3.8-IV0; 3.9-IV0 moves to Fetch v17 and ListOffsets v9) and the transaction APIs at KIP-890 part 1 (InitProducerId v5, AddPartitionsToTxn v5, EndTxn v4, TxnOffsetCommit v5); every other feature's default at 3.8-IV0 (`Feature.defaultLevel`) is 0, as below |
//! | `transaction.version` | 0 | level 1 writes `__transaction_state` values in the flexible v1 format (this coordinator writes v0) and level 2 bumps the epoch per transaction (not done here) |
//! | `group.version` | 0 | no KIP-848 consumer protocol (ConsumerGroupHeartbeat is not served) |
//! | `kraft.version` | 0 | no KRaft quorum at all, so no KIP-853 reconfiguration |
//! | `eligible.leader.replicas.version`, `share.version`, `streams.version` | 0 | no ELR (one replica), no share groups, no KIP-1071 streams groups |
//!
//! The wire lists follow Kafka's rules: `BrokerFeatures.defaultSupportedFeatures` leaves out a
//! feature whose maximum is 0, `ApiVersionsResponse` leaves out a supported feature whose minimum
//! is 0 when answering below v4 (KAFKA-17492: older clients cannot read a zero minimum) and every
//! finalized feature at level 0. So only `metadata.version` is listed, supported 20–20 (this
//! build runs at no other level) and finalized at 20.
//!
//! The levels are fixed in the binary: UpdateFeatures (API 57) is not served, so
//! `kafka-features.sh upgrade` (the AdminClient's `updateFeatures`) fails with
//! `UnsupportedVersionException`.

use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::protocol::StrBytes;

/// One feature: the range of levels this build supports and the level it finalizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    /// Kafka's feature name (`metadata.version`, …).
    pub name: &'static str,
    /// Lowest supported level.
    pub min_level: i16,
    /// Highest supported level.
    pub max_level: i16,
    /// The finalized level, within `min_level ..= max_level`.
    pub finalized_level: i16,
}

/// Kafka's `MetadataVersion.IBP_3_8_IV0` (see the module table for why this level).
pub const METADATA_VERSION_LEVEL: i16 = 20;

/// The epoch of the finalized levels. In Kafka it is the offset of the metadata record that last
/// changed them; here they change only with a build, so it is a constant, raised by one by any
/// build that changes a finalized level (a client keeps the levels of the highest epoch it saw,
/// `ApiVersions.update`). Valid epochs are ≥ 0; −1 would mean unknown, and the Java client
/// would then ignore the levels.
pub const FINALIZED_FEATURES_EPOCH: i64 = 0;

/// Every production feature of Kafka 4.x (`Feature.PRODUCTION_FEATURES` and `metadata.version`),
/// at this broker's levels.
pub const FEATURES: [Feature; 7] = [
    Feature {
        name: "metadata.version",
        min_level: METADATA_VERSION_LEVEL,
        max_level: METADATA_VERSION_LEVEL,
        finalized_level: METADATA_VERSION_LEVEL,
    },
    level_zero("kraft.version"),
    level_zero("transaction.version"),
    level_zero("group.version"),
    level_zero("eligible.leader.replicas.version"),
    level_zero("share.version"),
    level_zero("streams.version"),
];

impl Feature {
    /// Whether an ApiVersions answer at `api_version` lists this feature as supported.
    pub fn is_listed_as_supported(&self, api_version: i16) -> bool {
        api_version >= 3 && self.max_level > 0 && (api_version >= 4 || self.min_level > 0)
    }

    /// Whether an ApiVersions answer at `api_version` lists this feature as finalized.
    pub fn is_listed_as_finalized(&self, api_version: i16) -> bool {
        api_version >= 3 && self.finalized_level > 0
    }
}

const fn level_zero(name: &'static str) -> Feature {
    Feature {
        name,
        min_level: 0,
        max_level: 0,
        finalized_level: 0,
    }
}

const _: () = {
    let mut i = 0;
    while i < FEATURES.len() {
        let f = FEATURES[i];
        assert!(f.min_level <= f.finalized_level && f.finalized_level <= f.max_level);
        i += 1;
    }
};

/// The supported features listed in an ApiVersions answer at `api_version` (empty below v3,
/// which has no field for them).
pub fn supported_feature_keys(api_version: i16) -> Vec<SupportedFeatureKey> {
    FEATURES
        .iter()
        .filter(|f| f.is_listed_as_supported(api_version))
        .map(|f| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(f.name))
                .with_min_version(f.min_level)
                .with_max_version(f.max_level)
        })
        .collect()
}

/// The finalized features listed in an ApiVersions answer at `api_version`: those above level 0.
pub fn finalized_feature_keys(api_version: i16) -> Vec<FinalizedFeatureKey> {
    FEATURES
        .iter()
        .filter(|f| f.is_listed_as_finalized(api_version))
        .map(|f| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str(f.name))
                .with_min_version_level(f.finalized_level)
                .with_max_version_level(f.finalized_level)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_client_is_told_of_transactions_v2_or_the_kip_848_group_protocol() {
        let level = |name| FEATURES.iter().find(|f| f.name == name).unwrap();
        assert!(level("transaction.version").max_level < 2);
        assert_eq!(level("group.version").max_level, 0);
        for v in 0..=4 {
            assert!(
                finalized_feature_keys(v)
                    .iter()
                    .all(|f| f.name.as_str() == "metadata.version")
            );
        }
    }

    #[test]
    fn a_zero_minimum_is_listed_only_from_v4() {
        // Not the case of any feature today; the rule still holds for the day one is.
        let zero_min = Feature {
            name: "x",
            min_level: 0,
            max_level: 1,
            finalized_level: 1,
        };
        assert!(!zero_min.is_listed_as_supported(3));
        assert!(zero_min.is_listed_as_supported(4));
        assert!(!level_zero("y").is_listed_as_supported(4));
        assert!(!level_zero("y").is_listed_as_finalized(4));
        assert!(supported_feature_keys(2).is_empty());
        assert_eq!(supported_feature_keys(3), supported_feature_keys(4));
    }
}
