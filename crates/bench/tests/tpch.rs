//! The 22 TPC-H queries as materialized views, as published and with their ORDER BY/LIMIT,
//! over the benchmark's own SQL data generator at SF 0.01. Batches of new and deleted orders
//! with their lines and updates of prices, quantities, dates, priorities, segments, balances,
//! nations and supply costs go in at two change sizes; every view is refreshed in forced
//! incremental mode and compared with its query run fresh (bag equality both ways) after
//! every refresh. The test fails when any view is not created, is not maintained
//! incrementally, falls back to a full refresh, or differs from its query.

use std::time::Duration;

mod common;

const TIMEOUT: Duration = Duration::from_secs(900);

#[test]
fn every_tpch_view_is_incremental_and_equals_its_query_after_every_refresh() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("tpch.json");
    let (stdout, stderr) = common::run_bench(
        &[
            "--tpch",
            "--ordered",
            "--sf",
            "0.01",
            "--reps",
            "2",
            "--changes",
            "0.001,0.01",
            "--skip-full",
            "--refresh-mode",
            "incremental",
            "--check-every-refresh",
            "--tpch-out",
            out.to_str().unwrap(),
        ],
        TIMEOUT,
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let context = || format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(json["failures"], serde_json::json!([]), "{}", context());

    let views = json["views"].as_array().unwrap();
    let names: Vec<&str> = views.iter().map(|v| v["name"].as_str().unwrap()).collect();
    // All 22 queries, and the 18 that have an ORDER BY in that form too.
    for q in 1..=22 {
        assert!(names.contains(&format!("tpch_q{q}").as_str()), "{names:?}");
    }
    assert_eq!(names.len(), 40, "{names:?}");
    for v in views {
        let strategy = v["strategy"].as_str().unwrap_or_default();
        assert!(
            v["created"] == true && strategy.starts_with("incremental"),
            "{} is not maintained incrementally: {v}",
            v["name"]
        );
    }

    let points = json["refresh"].as_array().unwrap();
    assert_eq!(
        points.len(),
        2 * names.len(),
        "one point per view and change size"
    );
    for p in points {
        assert_eq!(p["oracle"], "pass", "{p}");
        let modes = p["modes"].as_array().unwrap();
        assert_eq!(modes.len(), 2, "two refreshes per change size: {p}");
        assert!(modes.iter().all(|m| m == "incremental"), "{p}");
    }
}
