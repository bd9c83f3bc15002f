//! Every harness scenario runs in quick mode in the test suite, so none can rot.

use std::process::Command;

#[test]
fn batch_validate_quick_prints_the_contract_fields() {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog-bench"))
        .args(["batch-validate", "--quick", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let v: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    for k in [
        "scenario",
        "variant",
        "mb_per_s",
        "baseline",
        "baseline_mb_per_s",
        "ratio",
    ] {
        assert!(v.get(k).is_some(), "missing {k} in {v}");
    }
    assert_eq!(v["scenario"], "batch-validate");
    assert!(v["ratio"].as_f64().unwrap() > 0.0);
}

/// Runs `scenario --quick --json` and returns its lines, each checked for the DESIGN.md §6
/// contract fields, its scenario name and a positive ratio (timing never decides a test).
fn quick_json(scenario: &str) -> Vec<serde_json::Value> {
    quick_json_as(scenario, scenario)
}

/// [`quick_json`] of the scenario called `name` on the command line, whose lines name it
/// `scenario`.
fn quick_json_as(name: &str, scenario: &str) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_mirrorlog-bench"))
        .args([name, "--quick", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty(), "{scenario} printed nothing");
    for v in &lines {
        for k in [
            "scenario",
            "variant",
            "mb_per_s",
            "baseline",
            "baseline_mb_per_s",
            "ratio",
        ] {
            assert!(v.get(k).is_some(), "missing {k} in {v}");
        }
        assert_eq!(v["scenario"], scenario);
        assert!(v["ratio"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["mb_per_s"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["baseline_mb_per_s"].as_f64().unwrap() > 0.0, "{v}");
    }
    lines
}

fn variants(lines: &[serde_json::Value]) -> Vec<&str> {
    lines
        .iter()
        .map(|v| v["variant"].as_str().unwrap())
        .collect()
}

#[test]
fn segment_append_quick_prints_the_contract_fields() {
    let lines = quick_json("segment-append");
    let names = variants(&lines);
    for v in ["pwrite", "pwrite-coalesced", "pwrite-durable"] {
        assert!(names.contains(&v), "no {v} variant in {names:?}");
    }
    for v in &lines {
        let name = v["variant"].as_str().unwrap();
        if name.ends_with("-durable") {
            assert_eq!(v["baseline"], "raw_pwrite+fdatasync");
            for k in ["p50_us", "p99_us", "baseline_p99_us"] {
                assert!(v[k].as_f64().unwrap() > 0.0, "{k} in {v}");
            }
        } else {
            assert_eq!(v["baseline"], "raw_pwrite");
        }
        if name.ends_with("-coalesced") {
            assert!(v["ratio_vs_raw_pwrite_1mib"].as_f64().unwrap() > 0.0, "{v}");
        }
    }
}

#[test]
fn index_lookup_quick_prints_the_contract_fields_and_ns_per_op() {
    let lines = quick_json("index-lookup");
    let names = variants(&lines);
    for v in ["offset_index", "find_batch-pwrite"] {
        assert!(names.contains(&v), "no {v} variant in {names:?}");
    }
    for v in &lines {
        assert!(v["ns_per_op"].as_f64().unwrap() > 0.0, "{v}");
        assert!(v["baseline_ns_per_op"].as_f64().unwrap() > 0.0, "{v}");
    }
}

#[test]
fn segment_recovery_quick_prints_the_contract_fields() {
    let lines = quick_json("segment-recovery");
    assert!(variants(&lines).contains(&"pwrite"), "{lines:?}");
    for v in &lines {
        assert_eq!(v["baseline"], "raw_read_crc32c");
        assert_eq!(v["cache"], "warm");
    }
}

#[test]
fn recovery_quick_reopens_a_multi_segment_log_and_prints_the_contract_fields() {
    let lines = quick_json("recovery");
    assert!(variants(&lines).contains(&"pwrite"), "{lines:?}");
    for v in &lines {
        assert_eq!(v["baseline"], "raw_read_crc32c");
        assert_eq!(v["cache"], "warm");
        assert!(v["segments"].as_u64().unwrap() >= 2, "{v}");
        assert!(v["log_bytes"].as_u64().unwrap() > 0, "{v}");
    }
}

#[test]
fn log_recovery_is_an_alias_of_recovery() {
    let lines = quick_json_as("log-recovery", "recovery");
    assert!(variants(&lines).contains(&"pwrite"), "{lines:?}");
}

#[test]
fn append_quick_prints_every_variant_beside_its_baseline() {
    let lines = quick_json("append");
    let names = variants(&lines);
    for v in ["leader", "mirror", "mirror-1mib", "100-partitions"] {
        assert!(names.contains(&v), "no {v} variant in {names:?}");
    }
    for v in &lines {
        let name = v["variant"].as_str().unwrap();
        let (baseline, files) = match name {
            "leader" => ("raw_pwrite_owned", 1),
            "mirror" => ("raw_pwrite", 1),
            "mirror-1mib" => ("raw_pwrite_1mib", 1),
            _ => ("raw_pwrite_owned_per_partition", 100),
        };
        assert_eq!(v["baseline"], baseline, "{v}");
        assert_eq!(v["files"], files, "{v}");
        assert!(v["bytes_per_round"].as_u64().unwrap() > 0, "{v}");
    }
    let partitions = lines.iter().find(|v| v["variant"] == "100-partitions");
    assert_eq!(partitions.unwrap()["index_bytes"], 65536);
}

#[test]
fn durable_append_quick_prints_latencies_and_group_commit_counters() {
    let lines = quick_json("durable-append");
    let names = variants(&lines);
    for v in [
        "writers-1",
        "writers-8",
        "writers-64",
        "writers-64-partitions-8",
        "writers-64-partitions-64",
    ] {
        assert!(names.contains(&v), "no {v} variant in {names:?}");
    }
    for v in &lines {
        assert_eq!(v["baseline"], "raw_pwrite+fdatasync");
        for k in ["p50_us", "p99_us", "baseline_p50_us", "baseline_p99_us"] {
            assert!(v[k].as_f64().unwrap() > 0.0, "{k} in {v}");
        }
        let (requests, syncs) = (
            v["gc_requests"].as_u64().unwrap(),
            v["gc_syncs"].as_u64().unwrap(),
        );
        // A durable append asks the group commit for a sync unless a sync that began after it
        // already covered it (then it needs none); sharing can only lower the count of syncs.
        assert!((1..=128 * 3).contains(&requests), "{v}");
        assert!(syncs >= 1 && syncs <= requests, "{v}");
    }
    let one = lines.iter().find(|v| v["variant"] == "writers-1").unwrap();
    assert_eq!(
        one["gc_syncs"], one["gc_requests"],
        "one writer shares nothing"
    );
    assert_eq!(
        one["gc_requests"],
        128 * 3,
        "one writer's every append asks"
    );
}

#[test]
fn fetch_send_quick_prints_the_contract_fields() {
    let lines = quick_json("fetch-send");
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["variant"], "sendfile");
    assert_eq!(lines[0]["baseline"], "pread+write");
}

#[test]
fn direct_append_quick_prints_every_variant_beside_both_raw_baselines() {
    // The direct path needs io_uring (as the io_uring backend tests, skippable).
    if std::env::var_os("MIRRORLOG_SKIP_IO_URING_TESTS").is_some_and(|v| v == "1") {
        return;
    }
    let lines = quick_json("direct-append");
    let names = variants(&lines);
    for v in [
        "segment-dsync",
        "segment-fdatasync",
        "segment-durable-dsync",
        "segment-durable-fdatasync",
        "engine-dsync-writers-1-partitions-1",
        "engine-dsync-writers-8-partitions-8",
        "engine-fdatasync-writers-8-partitions-8",
    ] {
        assert!(names.contains(&v), "no {v} variant in {names:?}");
    }
    for v in &lines {
        assert_eq!(v["baseline"], "raw_odirect_seq_qd16", "{v}");
        for k in ["baseline_p50_us", "baseline_p99_us", "odsync_mb_per_s"] {
            assert!(v[k].as_f64().unwrap() > 0.0, "{k} in {v}");
        }
        let name = v["variant"].as_str().unwrap();
        let durable = name.contains("durable") || name.starts_with("engine");
        assert_eq!(v.get("p99_us").is_some(), durable, "{v}");
        if durable {
            assert!(v["p99_vs_baseline_p99"].as_f64().unwrap() > 0.0, "{v}");
        }
        assert!(["dsync", "fdatasync"].contains(&v["durability"].as_str().unwrap()));
    }
}

#[test]
fn compare_exits_non_zero_only_when_a_ratio_falls_beyond_the_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.json");
    let cur = dir.path().join("cur.json");
    std::fs::write(
        &base,
        "{\"scenario\":\"append\",\"variant\":\"leader\",\"ratio\":1.0}\n",
    )
    .unwrap();
    std::fs::write(
        &cur,
        "{\"scenario\":\"append\",\"variant\":\"leader\",\"ratio\":0.8}\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_mirrorlog-bench"))
            .arg("compare")
            .args([&base, &cur])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("REGRESSED"));
    let out = run(&["--tolerance", "0.25"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = run(&["--tolerance", "2"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tolerance"));
}

#[test]
fn log_peers_quick_runs_every_engine_in_every_phase() {
    let lines = quick_json("log-peers");
    let names = variants(&lines);
    for engine in ["mirrorlog", "commitlog", "raft-engine"] {
        for phase in ["sync-end", "sync-per-batch", "read"] {
            let v = format!("{engine}-{phase}");
            assert!(names.contains(&v.as_str()), "no {v} in {names:?}");
        }
    }
    for v in &lines {
        let baseline = match v["phase"].as_str().unwrap() {
            "sync-end" => "raw_pwrite+fdatasync_end",
            "sync-per-batch" => "raw_pwrite+fdatasync_per_batch",
            _ => "raw_pread",
        };
        assert_eq!(v["baseline"], baseline, "{v}");
        if v["engine"] == "mirrorlog" {
            for k in ["ratio_vs_commitlog", "ratio_vs_raft_engine"] {
                assert!(v[k].as_f64().unwrap() > 0.0, "{k} in {v}");
            }
        }
    }
}

#[test]
fn mirror_quick_prints_catch_up_lag_and_peak_rss_beside_their_baselines() {
    let lines = quick_json("mirror");
    assert_eq!(
        variants(&lines),
        [
            "catch-up",
            "catch-up-fetch-8mib",
            "steady-lag-4mb-s",
            "many-partitions-200"
        ]
    );
    assert_eq!(lines[0]["baseline"], "raw-tcp-1-connection");
    assert_eq!(lines[1]["partition_fetch_max_bytes"], 8 << 20);
    // Each catch-up round's set-up steps, in the order a round reaches them (the warm-up and
    // three timed rounds), and their medians.
    let steps = [
        "broker_started",
        "mirror_created",
        "topic_started",
        "first_byte",
        "last_byte",
    ];
    for line in &lines[..2] {
        let rounds = line["rounds_steps_ms"].as_array().unwrap();
        assert_eq!(rounds.len(), 4, "{line}");
        for r in rounds.iter().chain([&line["steps_ms"]]) {
            let at: Vec<f64> = steps.iter().map(|k| r[k].as_f64().unwrap()).collect();
            assert!(at.windows(2).all(|w| w[0] <= w[1]), "{r} out of order");
        }
    }
    assert_eq!(lines[2]["baseline"], "produce-schedule");
    for k in ["lag_p50_ms", "lag_p99_ms", "lag_max_ms"] {
        assert!(lines[2][k].as_f64().unwrap() >= 0.0, "{k} in {}", lines[2]);
    }
    let many = &lines[3];
    assert_eq!(many["partitions"], 200);
    assert_eq!(many["rss_bound_mib"], 4 + 64);
    // Measured, not asserted against the bound (timing and memory never decide a test), but it
    // must be a measurement: the catch-up grows the process at least a little.
    assert!(
        many["peak_rss_growth_mib"].as_f64().unwrap() > 0.0,
        "{many}"
    );
    assert!(many["rss_ratio_to_bound"].as_f64().unwrap() > 0.0, "{many}");
    assert!(
        many["local_partitions_rss_growth_mib"].as_f64().unwrap() > 0.0,
        "{many}"
    );
    assert!(many["mirror_rss_overhead_mib"].is_number(), "{many}");
}
