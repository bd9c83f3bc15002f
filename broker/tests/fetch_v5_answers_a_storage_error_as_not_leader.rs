//! Kafka's `KafkaApis.handleFetchRequest` (`maybeDownConvertStorageError`) answers
//! KAFKA_STORAGE_ERROR as NOT_LEADER_OR_FOLLOWER to Fetch v5 and older: a client of those
//! versions may not know the code (an unknown, non-retriable error there), while
//! NOT_LEADER_OR_FOLLOWER has it refresh its metadata and retry. The broker answered
//! KAFKA_STORAGE_ERROR at every version.

use crate::common;

use common::fetch_session::{fetch_at, session_fetch};
use common::offline_partition::topic_t_with_partition_offline;

const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const KAFKA_STORAGE_ERROR: i16 = 56;

#[test]
fn a_partition_in_an_offline_directory_is_not_leader_to_fetch_v5_and_older() {
    let t = topic_t_with_partition_offline(0, &[]);
    for (version, code) in [
        (4, NOT_LEADER_OR_FOLLOWER),
        (5, NOT_LEADER_OR_FOLLOWER),
        (6, KAFKA_STORAGE_ERROR),
        (12, KAFKA_STORAGE_ERROR),
    ] {
        let resp = fetch_at(
            &t.broker,
            session_fetch(0, -1, &[("t", 0, 0), ("t", 1, 0)]),
            version,
        );
        let parts = &resp.responses[0].partitions;
        assert_eq!(
            (parts[0].error_code, parts[1].error_code),
            (code, 0),
            "v{version}"
        );
        assert_eq!(parts[0].high_watermark, -1);
    }
}
