//! Kafka's Java AdminClient (kafka-clients 4.3.0) and transactions on `mirrorlog serve`, with an
//! idempotent and a transactional KafkaProducer in the same program, the transaction left open:
//! describeProducers (DescribeProducers, API 61), listTransactions (with a state filter) and
//! describeTransactions (APIs 66, 65), abortTransaction of the open transaction found by
//! describeProducers (WriteTxnMarkers, API 27: kafka-transactions.sh's way to end a hanging
//! transaction) and fenceProducers (InitProducerId: the producer fenced)
//! (`AdminScenarios transactions`).

mod common;

use common::java::{JavaClient, assert_printed};
use common::{Serve, free_port};

#[test]
fn the_java_admin_client_inspects_and_fences_transactions() {
    let Some(java) = JavaClient::compile("AdminScenarios") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut broker = Serve::start(dir.path(), free_port());
    let out = java.run(&["transactions", &broker.addr]);
    assert_printed(
        &out,
        &[
            // The transactional producer (its transaction open at offset 3) and the idempotent
            // one; no marker yet, so no coordinator epoch.
            (
                "describe_producers",
                "[epoch=0 last_seq=1 ts_set=true coordinator_epoch=OptionalInt.empty \
                 txn_start=OptionalLong[3], epoch=0 last_seq=2 ts_set=true \
                 coordinator_epoch=OptionalInt.empty txn_start=OptionalLong.empty]",
            ),
            ("list_transactions", "[tx1:Ongoing]"),
            (
                "describe_transactions",
                "state=Ongoing timeout=45000 epoch=0 partitions=[x-0] start_set=true",
            ),
            // 3 idempotent records, 2 transactional ones, the ABORT marker abortTransaction
            // wrote (offset 5), and the one the coordinator writes when fencing (offset 6).
            ("abort_transaction", "ok"),
            ("lso_after_abort", "6"),
            ("fence_producers", "ok"),
            ("commit_after_fence", "ProducerFencedException"),
            ("lso_after_fence", "7"),
            // The fenced transaction aborted, the id left Empty at a bumped epoch.
            ("list_transactions.after_fence", "[tx1:Empty]"),
            ("list_transactions.ongoing", "0"),
            (
                "describe_transactions.unknown",
                "TransactionalIdNotFoundException",
            ),
            ("fence_producers.unknown", "ok"),
        ],
    );
    assert_eq!(broker.stop(), Some(0), "clean exit on SIGTERM");
}
