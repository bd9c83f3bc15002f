//! Scenario with a Rust client crate (`rskafka` 0.6, pure Rust) against `mirrorlog serve`:
//! create a topic, produce in every codec, fetch back byte-identical, list offsets, delete
//! records.

mod common;

use common::{Serve, free_port};
use rskafka::client::ClientBuilder;
use rskafka::client::partition::{Compression, OffsetAt, UnknownTopicHandling};
use rskafka::record::Record;
use std::collections::BTreeMap;

fn record(i: usize, codec: &str) -> Record {
    let mut headers = BTreeMap::new();
    headers.insert("codec".to_string(), codec.as_bytes().to_vec());
    Record {
        key: Some(format!("k{i}").into_bytes()),
        value: Some(format!("{codec}-value-{i}").into_bytes()),
        headers,
        timestamp: chrono::DateTime::from_timestamp_millis(1_700_000_000_000 + i as i64).unwrap(),
    }
}

#[test]
fn rskafka_produces_every_codec_and_fetches_back() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Serve::start(dir.path(), free_port());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = ClientBuilder::new(vec![broker.addr.clone()])
            .build()
            .await
            .unwrap();
        client
            .controller_client()
            .unwrap()
            .create_topic("rs", 1, 1, 5_000)
            .await
            .unwrap();
        let pc = client
            .partition_client("rs", 0, UnknownTopicHandling::Retry)
            .await
            .unwrap();
        let mut sent = vec![];
        for (ci, (name, codec)) in [
            ("none", Compression::NoCompression),
            ("gzip", Compression::Gzip),
            ("lz4", Compression::Lz4),
            ("snappy", Compression::Snappy),
            ("zstd", Compression::Zstd),
        ]
        .into_iter()
        .enumerate()
        {
            let batch: Vec<Record> = (0..20).map(|i| record(ci * 20 + i, name)).collect();
            let offsets = pc.produce(batch.clone(), codec).await.unwrap();
            assert_eq!(
                offsets,
                ((ci * 20) as i64..(ci * 20 + 20) as i64).collect::<Vec<_>>()
            );
            sent.extend(batch);
        }
        let mut got = vec![];
        let mut at = 0;
        while got.len() < sent.len() {
            let (recs, hw) = pc.fetch_records(at, 1..1_000_000, 1_000).await.unwrap();
            assert_eq!(hw, 100);
            for r in recs {
                assert_eq!(r.offset, got.len() as i64);
                at = r.offset + 1;
                got.push(r.record);
            }
        }
        assert_eq!(got, sent);
        assert_eq!(pc.get_offset(OffsetAt::Earliest).await.unwrap(), 0);
        assert_eq!(pc.get_offset(OffsetAt::Latest).await.unwrap(), 100);
        pc.delete_records(40, 5_000).await.unwrap();
        assert_eq!(pc.get_offset(OffsetAt::Earliest).await.unwrap(), 40);
    });
}
