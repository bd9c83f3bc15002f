//! `mirrorlog-bench compare BASELINE.json CURRENT.json [--tolerance 0.1]`: the perf-regression
//! gate. Both files hold the JSON lines of `mirrorlog-bench … --json` runs (one object per
//! variant, DESIGN.md §6). Every `(scenario, variant)` of the baseline is looked up in the current
//! run and each of its same-run ratios is compared:
//!
//! - higher is better: `ratio` and every other numeric field named `ratio_…` (ours ÷ a baseline);
//!   a regression when `current < baseline − tolerance × |baseline|`;
//! - lower is better: every numeric field named `…_vs_…_p99` (a latency ÷ a baseline latency:
//!   `p99_vs_baseline_p99`, `p99_vs_fdatasync_p99`) and every one named `…_ratio_to_bound` (a
//!   measurement over its bound: the mirror's RSS); a regression when
//!   `current > baseline + tolerance × |baseline|`.
//!
//! The tolerance is a share of the baseline's magnitude, so a metric that can be negative (the
//! mirror's `overhead_ratio_to_bound`: its RSS growth below a local broker's) is judged by
//! which way it moved, not by its sign.
//!
//! Absolute figures (MB/s, µs) are never compared: on a shared machine only ratios measured in
//! one run are stable. A variant of the baseline missing from the current run fails the gate
//! too (a scenario that stopped running must not pass silently); variants only in the current
//! run are listed as new.

use anyhow::{Context, Result, bail, ensure};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The default tolerance: a ratio may fall by 10%.
pub const DEFAULT_TOLERANCE: f64 = 0.1;

/// Which way a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Higher is better (throughput ratios).
    Higher,
    /// Lower is better (latency ratios).
    Lower,
}

/// The metrics of a result line that the gate compares, with their direction.
pub fn metrics(line: &Value) -> Vec<(String, f64, Better)> {
    let Some(obj) = line.as_object() else {
        return vec![];
    };
    obj.iter()
        .filter_map(|(k, v)| {
            let x = v.as_f64()?;
            if k == "ratio" || k.starts_with("ratio_") {
                Some((k.clone(), x, Better::Higher))
            } else if (k.contains("_vs_") && k.ends_with("_p99")) || k.ends_with("_ratio_to_bound")
            {
                // Latency ratios, and a measurement over its bound (the mirror's RSS).
                Some((k.clone(), x, Better::Lower))
            } else {
                None
            }
        })
        .collect()
}

/// One compared metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Delta {
    /// `scenario/variant`.
    pub key: String,
    /// The metric's name.
    pub metric: String,
    /// Its value in the baseline file.
    pub baseline: f64,
    /// Its value in the current file.
    pub current: f64,
    /// Whether it got worse by more than the tolerance.
    pub regressed: bool,
}

impl fmt::Display for Delta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relative to the baseline's magnitude, so a negative baseline keeps the sign of the
        // move.
        let change = if self.baseline == 0.0 {
            0.0
        } else {
            (self.current - self.baseline) / self.baseline.abs() * 100.0
        };
        write!(
            f,
            "{:<10} {:<52} {:<28} {:>9.3} -> {:>9.3} ({:+6.1}%)",
            if self.regressed { "REGRESSED" } else { "ok" },
            self.key,
            self.metric,
            self.baseline,
            self.current,
            change
        )
    }
}

/// What the gate found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    /// Every metric compared, in key order.
    pub deltas: Vec<Delta>,
    /// Variants of the baseline absent from the current run.
    pub missing: Vec<String>,
    /// Variants only in the current run.
    pub new: Vec<String>,
}

impl Comparison {
    /// Whether the gate passes: nothing regressed, nothing missing.
    pub fn passed(&self) -> bool {
        self.missing.is_empty() && self.deltas.iter().all(|d| !d.regressed)
    }
}

/// Parses the JSON lines of a `--json` run; `name` is used in errors. Blank lines are skipped;
/// anything else that is not a JSON object with string `scenario` and `variant` is an error
/// naming the line. A line is keyed `scenario/variant vs BASELINE` (`scenario/variant` without a
/// string `baseline`): `produce` and `consume` print one line per peer, told apart by
/// `baseline`, and a ratio against one peer must never be compared with a ratio against another.
/// A key seen twice is an error.
pub fn parse_lines(name: &str, text: &str) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line)
            .with_context(|| format!("{name}:{}: not a JSON object", n + 1))?;
        let (Some(s), Some(var)) = (
            v.get("scenario").and_then(Value::as_str),
            v.get("variant").and_then(Value::as_str),
        ) else {
            bail!("{name}:{}: no string `scenario` and `variant`", n + 1);
        };
        let key = match v.get("baseline").and_then(Value::as_str) {
            Some(b) => format!("{s}/{var} vs {b}"),
            None => format!("{s}/{var}"),
        };
        ensure!(
            !out.contains_key(&key),
            "{name}:{}: {key} appears twice",
            n + 1
        );
        out.insert(key, v);
    }
    ensure!(!out.is_empty(), "{name}: no result lines");
    Ok(out)
}

/// Compares `current` against `baseline` with `tolerance` (a fraction in `0.0 ..< 1.0`).
///
/// # Errors
/// A tolerance out of range.
pub fn compare(
    baseline: &BTreeMap<String, Value>,
    current: &BTreeMap<String, Value>,
    tolerance: f64,
) -> Result<Comparison> {
    ensure!(
        (0.0..1.0).contains(&tolerance),
        "--tolerance must be in 0.0..1.0 (a fraction: 0.1 = 10%), got {tolerance}"
    );
    let mut cmp = Comparison::default();
    for (key, base) in baseline {
        let Some(cur) = current.get(key) else {
            cmp.missing.push(key.clone());
            continue;
        };
        let cur_metrics: BTreeMap<String, f64> =
            metrics(cur).into_iter().map(|(k, x, _)| (k, x)).collect();
        for (metric, b, better) in metrics(base) {
            let Some(&c) = cur_metrics.get(&metric) else {
                cmp.missing.push(format!("{key} {metric}"));
                continue;
            };
            // The allowed move is a share of the baseline's magnitude: `b × (1 ± tolerance)`
            // would flip direction for a negative baseline and fail an unchanged value.
            let allowed = b.abs() * tolerance;
            let regressed = match better {
                Better::Higher => c < b - allowed,
                Better::Lower => c > b + allowed,
            };
            cmp.deltas.push(Delta {
                key: key.clone(),
                metric,
                baseline: b,
                current: c,
                regressed,
            });
        }
    }
    cmp.new = current
        .keys()
        .filter(|k| !baseline.contains_key(*k))
        .cloned()
        .collect();
    Ok(cmp)
}

/// The `compare` command: `args` are what follows `compare` on the command line. Prints every
/// delta and returns whether the gate passed.
///
/// # Errors
/// Bad arguments, unreadable or malformed files.
pub fn run(args: &[String]) -> Result<bool> {
    let mut files = vec![];
    let mut tolerance = DEFAULT_TOLERANCE;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--tolerance" => {
                let v = it.next().context("--tolerance needs a value")?;
                tolerance = v
                    .parse()
                    .with_context(|| format!("--tolerance {v}: not a number"))?;
            }
            s if s.starts_with("--tolerance=") => {
                let v = &s["--tolerance=".len()..];
                tolerance = v
                    .parse()
                    .with_context(|| format!("--tolerance {v}: not a number"))?;
            }
            s if s.starts_with('-') => bail!("compare: unknown option {s}"),
            s => files.push(s.to_string()),
        }
    }
    let [base_path, cur_path] = files.as_slice() else {
        bail!("usage: mirrorlog-bench compare BASELINE.json CURRENT.json [--tolerance 0.1]");
    };
    let read = |p: &str| std::fs::read_to_string(p).with_context(|| format!("reading {p}"));
    let baseline = parse_lines(base_path, &read(base_path)?)?;
    let current = parse_lines(cur_path, &read(cur_path)?)?;
    let cmp = compare(&baseline, &current, tolerance)?;
    for d in &cmp.deltas {
        println!("{d}");
    }
    for m in &cmp.missing {
        println!("MISSING    {m}");
    }
    for n in &cmp.new {
        println!("new        {n}");
    }
    let regressed = cmp.deltas.iter().filter(|d| d.regressed).count();
    println!(
        "{}: {} metrics compared, {regressed} regressed beyond {:.0}%, {} missing",
        if cmp.passed() { "PASS" } else { "FAIL" },
        cmp.deltas.len(),
        tolerance * 100.0,
        cmp.missing.len()
    );
    Ok(cmp.passed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> BTreeMap<String, Value> {
        parse_lines("test", text).unwrap()
    }

    const BASE: &str = r#"
{"scenario":"append","variant":"leader","mb_per_s":900.0,"ratio":1.0,"ratio_vs_raw_pwrite_shared":0.9}
{"scenario":"direct-append","variant":"engine-writers-64-partitions-64","ratio":0.8,"p99_us":500.0,"p99_vs_baseline_p99":1.2}
"#;

    #[test]
    fn identical_runs_pass() {
        let b = lines(BASE);
        let cmp = compare(&b, &b, 0.1).unwrap();
        assert!(cmp.passed());
        assert_eq!(cmp.deltas.len(), 4);
        assert!(cmp.missing.is_empty() && cmp.new.is_empty());
    }

    #[test]
    fn a_ratio_falling_by_more_than_the_tolerance_fails_and_within_it_passes() {
        let b = lines(BASE);
        let worse = BASE.replace(r#""ratio":1.0"#, r#""ratio":0.85"#);
        let cmp = compare(&b, &lines(&worse), 0.1).unwrap();
        assert!(!cmp.passed());
        let bad: Vec<_> = cmp.deltas.iter().filter(|d| d.regressed).collect();
        assert_eq!(bad.len(), 1);
        assert_eq!(
            (bad[0].key.as_str(), bad[0].metric.as_str()),
            ("append/leader", "ratio")
        );
        let slightly = BASE.replace(r#""ratio":1.0"#, r#""ratio":0.95"#);
        assert!(compare(&b, &lines(&slightly), 0.1).unwrap().passed());
        // A looser tolerance lets the bigger drop through.
        assert!(compare(&b, &lines(&worse), 0.2).unwrap().passed());
    }

    #[test]
    fn a_ratio_to_its_bound_is_gated_as_lower_is_better() {
        let line: Value =
            serde_json::from_str(r#"{"rss_ratio_to_bound":0.4,"overhead_ratio_to_bound":0.1}"#)
                .unwrap();
        let mut m = metrics(&line);
        m.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            m,
            vec![
                ("overhead_ratio_to_bound".to_string(), 0.1, Better::Lower),
                ("rss_ratio_to_bound".to_string(), 0.4, Better::Lower),
            ]
        );
    }

    /// The mirror's `overhead_ratio_to_bound` is negative when its RSS growth is below the
    /// local broker's: an unchanged value must pass, and a move is judged by its direction.
    #[test]
    fn a_negative_metric_is_judged_by_the_way_it_moved_not_by_its_sign() {
        const NEG: &str = r#"{"scenario":"mirror","variant":"many","ratio":-0.5,"overhead_ratio_to_bound":-0.172}"#;
        let b = lines(NEG);
        assert!(compare(&b, &b, 0.1).unwrap().passed(), "an identical run");
        let with = |ratio: &str, overhead: &str| {
            lines(&NEG.replace("-0.5", ratio).replace("-0.172", overhead))
        };
        // Lower is better: further below zero passes, a rise beyond 10% of 0.172 fails.
        assert!(compare(&b, &with("-0.5", "-0.3"), 0.1).unwrap().passed());
        assert!(compare(&b, &with("-0.5", "-0.16"), 0.1).unwrap().passed());
        assert!(!compare(&b, &with("-0.5", "-0.1"), 0.1).unwrap().passed());
        // Higher is better: a rise passes, a fall beyond 10% of 0.5 fails.
        assert!(compare(&b, &with("-0.2", "-0.172"), 0.1).unwrap().passed());
        assert!(!compare(&b, &with("-0.6", "-0.172"), 0.1).unwrap().passed());
        let cmp = compare(&b, &with("-0.6", "-0.172"), 0.1).unwrap();
        let shown = cmp
            .deltas
            .iter()
            .find(|d| d.metric == "ratio")
            .unwrap()
            .to_string();
        assert!(shown.contains("-20.0%"), "a fall shows as a fall: {shown}");
    }

    #[test]
    fn absolute_figures_are_not_compared() {
        let b = lines(BASE);
        let slower_machine = BASE.replace(r#""mb_per_s":900.0"#, r#""mb_per_s":100.0"#);
        let slower_machine = slower_machine.replace(r#""p99_us":500.0"#, r#""p99_us":5000.0"#);
        assert!(compare(&b, &lines(&slower_machine), 0.1).unwrap().passed());
    }

    #[test]
    fn a_latency_ratio_rising_beyond_the_tolerance_fails() {
        let b = lines(BASE);
        let worse = BASE.replace(
            r#""p99_vs_baseline_p99":1.2"#,
            r#""p99_vs_baseline_p99":1.5"#,
        );
        let cmp = compare(&b, &lines(&worse), 0.1).unwrap();
        assert!(!cmp.passed());
        let better = BASE.replace(
            r#""p99_vs_baseline_p99":1.2"#,
            r#""p99_vs_baseline_p99":0.5"#,
        );
        assert!(compare(&b, &lines(&better), 0.1).unwrap().passed());
    }

    #[test]
    fn a_variant_missing_from_the_current_run_fails_and_a_new_one_is_listed() {
        let b = lines(BASE);
        let only_append = BASE.lines().take(2).collect::<Vec<_>>().join("\n");
        let mut cur = lines(&only_append);
        let cmp = compare(&b, &cur, 0.1).unwrap();
        assert!(!cmp.passed());
        assert_eq!(
            cmp.missing,
            vec!["direct-append/engine-writers-64-partitions-64".to_string()]
        );
        cur = lines(&format!(
            "{BASE}\n{}",
            r#"{"scenario":"append","variant":"mirror","ratio":1.1}"#
        ));
        let cmp = compare(&b, &cur, 0.1).unwrap();
        assert!(cmp.passed());
        assert_eq!(cmp.new, vec!["append/mirror".to_string()]);
    }

    #[test]
    fn malformed_input_and_bad_tolerances_are_rejected_precisely() {
        let e = parse_lines("a.json", "{\"scenario\":1}").unwrap_err();
        assert!(e.to_string().contains("a.json:1"), "{e}");
        let e = parse_lines("b.json", "\nnot json").unwrap_err();
        assert!(e.to_string().contains("b.json:2"), "{e}");
        let dup = format!("{BASE}\n{}", BASE.lines().nth(1).unwrap());
        let e = parse_lines("c.json", &dup).unwrap_err();
        assert!(e.to_string().contains("append/leader appears twice"), "{e}");
        assert!(parse_lines("d.json", "\n\n").is_err());
        let b = lines(BASE);
        for t in [-0.1, 1.0, f64::NAN] {
            let e = compare(&b, &b, t).unwrap_err();
            assert!(e.to_string().contains("--tolerance"), "{e}");
        }
    }

    #[test]
    fn the_command_reads_two_files_and_reports_pass_or_fail() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.json");
        let cur = dir.path().join("cur.json");
        std::fs::write(&base, BASE).unwrap();
        std::fs::write(&cur, BASE.replace(r#""ratio":0.8"#, r#""ratio":0.5"#)).unwrap();
        let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
        assert!(run(&[s(&base), s(&base)]).unwrap());
        assert!(!run(&[s(&base), s(&cur)]).unwrap());
        assert!(run(&[s(&base), s(&cur), "--tolerance".into(), "0.5".into()]).unwrap());
        assert!(run(&[s(&base)]).is_err());
        assert!(run(&[s(&base), s(&cur), "--tolerance".into(), "x".into()]).is_err());
        assert!(run(&[s(&base), s(&cur), "--fast".into()]).is_err());
    }
}
