//! README's `cargo run -p mirrorlog-engine --example embed [DATA_DIR]`, run a second time on
//! the directory the first run left (to look at its files, or to see the open find them), must
//! walk through again, not stop half-way: it appended the "source's" batches at offset 0 again
//! to a mirror partition that already ended at 2 (`UnexpectedAppendOffset`).

#[allow(dead_code)] // the example's `main`
#[path = "../examples/embed.rs"]
mod embed;

#[test]
fn the_embedding_example_runs_twice_on_one_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    embed::run(dir.path()).unwrap();
    if let Err(e) = embed::run(dir.path()) {
        panic!("a second run on the same DATA_DIR failed: {e}");
    }
}
