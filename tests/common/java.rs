//! Apache Kafka's own Java client (kafka-clients 4.3.0, the reference client) as a test driver.
//!
//! `tests/kafka-java/fetch-jars.sh` puts the client's jars in `tests/kafka-java/jars/` (scripts/test.sh
//! runs it before the tests); a scenario program is a `.java` file under `tests/kafka-java/` that
//! [`JavaClient::compile`] builds with `javac` into a temporary directory, once per test binary
//! and file, and [`JavaClient::run`] runs with `java`.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A compiled scenario program.
pub struct JavaClient {
    classes: PathBuf,
    class_path: String,
    main_class: String,
}

fn jars_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kafka-java/jars")
}

/// The client's class path: every jar in `tests/kafka-java/jars/`.
///
/// # Panics
/// No `kafka-clients` jar or no `javac`, unless `MIRRORLOG_SKIP_CLIENT_TESTS` is set (then
/// `None`, saying so): a client test must not pass without running.
fn class_path() -> Option<String> {
    let jars: Vec<PathBuf> = std::fs::read_dir(jars_dir())
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "jar"))
                .collect()
        })
        .unwrap_or_default();
    let has_client = jars.iter().any(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("kafka-clients-"))
    });
    let has_javac = Command::new("javac").arg("-version").output().is_ok();
    if !has_client || !has_javac {
        assert!(
            std::env::var_os("MIRRORLOG_SKIP_CLIENT_TESTS").is_some(),
            "Kafka's Java client is missing (jar found: {has_client}, javac found: {has_javac}): \
             run scripts/test.sh (it fetches the jars with tests/kafka-java/fetch-jars.sh and \
             needs a JDK 17+), or set MIRRORLOG_SKIP_CLIENT_TESTS=1 to skip the client tests"
        );
        eprintln!("skipped (MIRRORLOG_SKIP_CLIENT_TESTS): no Java Kafka client");
        return None;
    }
    let mut parts: Vec<String> = jars.iter().map(|p| p.display().to_string()).collect();
    parts.sort();
    Some(parts.join(":"))
}

impl JavaClient {
    /// Compiles `tests/kafka-java/{main_class}.java` (once per test binary); `None` when the
    /// client tests are knowingly skipped.
    ///
    /// # Panics
    /// `javac` fails (its output is in the message), or the client is missing and the tests are
    /// not skipped.
    pub fn compile(main_class: &str) -> Option<JavaClient> {
        static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
        let class_path = class_path()?;
        let mut built = BUILT
            .get_or_init(|| Mutex::new(HashMap::new()))
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let classes = built
            .entry(main_class.to_string())
            .or_insert_with(|| {
                let source = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/kafka-java")
                    .join(format!("{main_class}.java"));
                // Kept for the life of the test binary: other tests may run the classes later.
                let out = tempfile::tempdir().unwrap().keep();
                let javac = Command::new("javac")
                    .args(["-encoding", "UTF-8", "--release", "17", "-d"])
                    .arg(&out)
                    .arg("-cp")
                    .arg(&class_path)
                    .arg(&source)
                    .output()
                    .expect("run javac");
                assert!(
                    javac.status.success(),
                    "javac {} failed:\n{}",
                    source.display(),
                    String::from_utf8_lossy(&javac.stderr)
                );
                out
            })
            .clone();
        Some(JavaClient {
            classes,
            class_path,
            main_class: main_class.to_string(),
        })
    }

    /// Runs the program with `args`; returns its stdout.
    ///
    /// # Panics
    /// The program exits with a failure, or is still running after [`HANG_GUARD`] (then it is
    /// killed); its stdout and stderr are in the message.
    pub fn run(&self, args: &[&str]) -> String {
        let mut child = Command::new("java")
            .arg("-Dslf4j.internal.verbosity=ERROR")
            .arg("-cp")
            .arg(format!("{}:{}", self.classes.display(), self.class_path))
            .arg(&self.main_class)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run java");
        let drain = |mut from: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                let _ = from.read_to_end(&mut bytes);
                bytes
            })
        };
        let stdout = drain(Box::new(child.stdout.take().unwrap()));
        let stderr = drain(Box::new(child.stderr.take().unwrap()));
        // A bound for a failure only (a program whose client hangs), far above any real run.
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for java") {
                break Some(status);
            }
            if started.elapsed() > HANG_GUARD {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
        assert!(
            status.is_some_and(|s| s.success()),
            "java {} {args:?} {}:\n--- stdout\n{}\n--- stderr\n{}",
            self.main_class,
            match status {
                Some(s) => format!("failed ({s})"),
                None => format!("still running after {HANG_GUARD:?}: killed"),
            },
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        );
        String::from_utf8(stdout).unwrap()
    }
}

/// How long a scenario program may run before [`JavaClient::run`] kills it as hung.
pub const HANG_GUARD: Duration = Duration::from_secs(300);

/// The `key=value` lines a scenario program printed (`AdminScenarios`), by key.
pub fn key_values(out: &str) -> std::collections::BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Asserts that the program printed exactly `value` for each `key` (the whole output in the
/// message).
pub fn assert_printed(out: &str, expected: &[(&str, &str)]) {
    let got = key_values(out);
    for (key, value) in expected {
        assert_eq!(
            got.get(*key).map(String::as_str),
            Some(*value),
            "{key}, in the output:\n{out}"
        );
    }
}
