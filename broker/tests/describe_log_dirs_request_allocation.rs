//! Bug: DescribeLogDirs copied the topic name once per partition the request listed, to look
//! the asked partitions up: a request naming a long topic name with many partitions made the
//! broker allocate the name's length times the partition count — a 4 MB request of one 1000-byte
//! name and a million partition indexes would allocate about 1 GB. The asked set now holds each
//! name once and only partitions the topic has. Measured with a counting allocator on the
//! calling thread: a request naming an unknown 800-byte topic and an existing 200-byte one with
//! 100,000 partition indexes each (about 800 KB on the wire; about 100 MB allocated before)
//! must not make the handler allocate more than 4 MB.

mod common;

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use mirrorlog_broker::handlers::{admin, log_dirs};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts the bytes allocated by a thread while its `COUNTING` flag is on.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATED: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are plain
// thread-local cells that never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATED.with(|a| a.set(a.get() + layout.size()));
        }
        // SAFETY: the caller's layout contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn a_long_name_with_many_partitions_allocates_in_proportion_to_the_request() {
    let dir = tempfile::tempdir().unwrap();
    let b = common::plain_broker(dir.path(), 1_700_000_000_000);
    let name = "n".repeat(200);
    let mut t = CreatableTopic::default();
    t.name = TopicName(StrBytes::from_string(name.clone()));
    t.num_partitions = 2;
    t.replication_factor = 1;
    let mut r = CreateTopicsRequest::default();
    r.topics = vec![t];
    assert_eq!(admin::create_topics(&b, r, 7).topics[0].error_code, 0);

    let long = "x".repeat(800);
    let topics = vec![
        DescribableLogDirTopic::default()
            .with_topic(TopicName(StrBytes::from_string(long)))
            .with_partitions((0..100_000).collect()),
        DescribableLogDirTopic::default()
            .with_topic(TopicName(StrBytes::from_string(name.clone())))
            .with_partitions((0..100_000).map(|p| p % 3).collect()),
    ];
    let req = DescribeLogDirsRequest::default().with_topics(Some(topics));

    ALLOCATED.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    let resp = log_dirs::describe_log_dirs(&b, req, 4);
    COUNTING.with(|c| c.set(false));
    let allocated = ALLOCATED.with(Cell::get);

    let listed: Vec<i32> = resp.results[0]
        .topics
        .iter()
        .filter(|t| t.name.0.as_str() == name)
        .flat_map(|t| t.partitions.iter().map(|p| p.partition_index))
        .collect();
    assert_eq!(listed, [0, 1], "the asked partitions the topic has");
    assert!(
        allocated < 4 << 20,
        "the handler allocated {allocated} bytes for a request of about 800 KB"
    );
}
