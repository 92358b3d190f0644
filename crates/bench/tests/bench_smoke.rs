//! The benchmark at a tiny scale as part of the test suite: it must run end to end against the
//! real server and every view it created must pass the bag-equality oracle after each refresh
//! (the benchmark exits non-zero otherwise). Timings are not asserted.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TIMEOUT: Duration = Duration::from_secs(300);

#[test]
fn bench_runs_and_every_view_passes_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.json");
    let svg = dir.path().join("refresh.svg");
    // The server is another package of the workspace, built into the same directory by
    // `cargo test --workspace` (scripts/test) before any test runs.
    let bench = std::path::Path::new(env!("CARGO_BIN_EXE_duckmv-bench"));
    let server = bench.with_file_name(format!("duckmv{}", std::env::consts::EXE_SUFFIX));
    assert!(
        server.exists(),
        "{} is missing: run `cargo test --workspace` or build the duckmv binary first",
        server.display()
    );
    let mut child = Command::new(bench)
        .args(["--sf", "0.01", "--reps", "1", "--changes", "0.01"])
        .arg("--server-bin")
        .arg(&server)
        .arg("--out")
        .arg(&out)
        .arg("--svg")
        .arg(&svg)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start duckmv-bench");
    // Drain both pipes on threads so the child never blocks on a full pipe.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut so, &mut s).ok();
        s
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut se, &mut s).ok();
        s
    });
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "duckmv-bench did not finish within {TIMEOUT:?}; stderr:\n{}",
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    assert!(
        status.success(),
        "duckmv-bench failed ({status}); stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let points = json["refresh"].as_array().unwrap();
    // Not vacuous: the views the IVM core supports were created and measured.
    let created: Vec<&str> = json["views"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["created"] == true)
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert!(
        created.contains(&"v1_q1"),
        "the single-table aggregate was not created; stderr:\n{stderr}"
    );
    assert_eq!(points.len(), created.len(), "one point per created view");
    for p in points {
        assert_eq!(p["oracle"], "pass", "{p}");
        assert!(p["incremental_median_ms"].is_number(), "{p}");
        assert!(p["full_median_ms"].is_number(), "{p}");
    }
    assert!(json["noop_refresh_median_ms"].is_number());
    assert!(json["streaming"]["wire"]["rows"].as_u64().unwrap() >= 100_000);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("</svg>"));
    assert!(stdout.contains("| view | change |"), "{stdout}");
}
