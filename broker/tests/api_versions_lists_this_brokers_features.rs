//! ApiVersions v3+ carries KIP-584's feature lists (tagged fields 0–2): the features this broker
//! supports, the levels finalized, and their epoch. mirrorlog sent none, so the Java
//! AdminClient's `describeFeatures` (and `kafka-features.sh describe`) showed nothing. The levels
//! must be honest: `transaction.version` never at 2 (a 4.x Java producer would then use
//! transactions v2 — Produce v12, EndTxn v5, an epoch bump per transaction — which this broker
//! does not do), no KIP-848 `group.version`, and, as Kafka's `BrokerFeatures` and
//! `ApiVersionsResponse` do, no supported feature whose maximum is 0, none whose minimum is 0
//! below v4, and no finalized feature at level 0. Versions 0–2 have no field for features.

use crate::common;

use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

/// Kafka's `MetadataVersion.IBP_3_8_IV0`, "3.8-IV0".
const METADATA_VERSION_3_8_IV0: i16 = 20;

/// A feature as `(name, min, max)`.
type Levels = Vec<(String, i16, i16)>;

/// The supported features, the finalized epoch and the finalized features.
fn features(r: &ApiVersionsResponse) -> (Levels, i64, Levels) {
    let supported = r
        .supported_features
        .iter()
        .map(|f| (f.name.to_string(), f.min_version, f.max_version))
        .collect();
    let finalized = r
        .finalized_features
        .iter()
        .map(|f| (f.name.to_string(), f.min_version_level, f.max_version_level))
        .collect();
    (supported, r.finalized_features_epoch, finalized)
}

#[test]
fn api_versions_v3_and_later_list_the_supported_and_finalized_features() {
    let dir = tempfile::tempdir().unwrap();
    let running = common::produce::running_with_topic(dir.path(), "t", 1);
    let request = ApiVersionsRequest::default()
        .with_client_software_name(StrBytes::from_static_str("wire-test"))
        .with_client_software_version(StrBytes::from_static_str("1.0"));
    for version in 0..=2 {
        // `call` decodes the whole body: nothing follows the throttle time.
        let r: ApiVersionsResponse =
            common::wire::call(running.addr, ApiKey::ApiVersions, version, &request);
        assert_eq!(r.error_code, 0);
        assert_eq!(features(&r), (vec![], -1, vec![]), "v{version}");
    }
    let metadata_version = || {
        vec![(
            "metadata.version".to_string(),
            METADATA_VERSION_3_8_IV0,
            METADATA_VERSION_3_8_IV0,
        )]
    };
    for version in 3..=4 {
        let r: ApiVersionsResponse =
            common::wire::call(running.addr, ApiKey::ApiVersions, version, &request);
        assert_eq!(r.error_code, 0);
        assert!(!r.zk_migration_ready);
        // Every other feature is at level 0 here: not supported above it, so not listed, and
        // not finalized either (a 4.x producer without `transaction.version` ≥ 2 keeps v1).
        assert_eq!(
            features(&r),
            (metadata_version(), 0, metadata_version()),
            "v{version}"
        );
    }
}
