//! The benchmark at a tiny scale as part of the test suite: it must run end to end against the
//! real server and every view it created must pass the bag-equality oracle after each refresh
//! (the benchmark exits non-zero otherwise). Timings are not asserted.

use std::time::Duration;

mod common;

const TIMEOUT: Duration = Duration::from_secs(300);

#[test]
fn bench_runs_and_every_view_passes_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results.json");
    let svg = dir.path().join("refresh.svg");
    let (stdout, stderr) = common::run_bench(
        &[
            "--sf",
            "0.01",
            "--reps",
            "1",
            "--changes",
            "0.01",
            "--out",
            out.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ],
        TIMEOUT,
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
    // V1 refreshed beside the other views' backlog, all of them equal to their queries after.
    assert!(json["backlog"]["ratio"].is_number(), "{}", json["backlog"]);
    assert!(json["backlog"]["log_rows"].as_i64().unwrap() > 0);
    assert!(json["streaming"]["wire"]["rows"].as_u64().unwrap() >= 100_000);
    assert!(std::fs::read_to_string(&svg).unwrap().contains("</svg>"));
    assert!(stdout.contains("| view | change |"), "{stdout}");
}
