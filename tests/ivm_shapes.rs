//! Every view shape of `tests/shapes/*.shapes` under seeded random DML, with the oracle after
//! each refresh: the view equals its defining query run fresh, as bags, in both directions,
//! and the catalog shows the strategy the file expects (incremental unless it says otherwise).
//! One test per operator family; the runner, DML generator and oracle are `common::shapes`.

mod common;

use common::shapes::{check, Family, Via};

#[test]
fn projection() {
    check("projection");
}

#[test]
fn aggregate() {
    check("aggregate");
}

#[test]
fn floats() {
    check("floats");
}

#[test]
fn variance() {
    check("variance");
}

#[test]
fn join() {
    check("join");
}

#[test]
fn outer() {
    check("outer");
}

#[test]
fn semi() {
    check("semi");
}

#[test]
fn subquery() {
    check("subquery");
}

#[test]
fn window() {
    check("window");
}

#[test]
fn grouping_sets() {
    check("grouping_sets");
}

#[test]
fn set_ops() {
    check("set_ops");
}

#[test]
fn views_over_views() {
    check("views_over_views");
}

#[test]
fn extremes() {
    check("extremes");
}

#[test]
fn recursive() {
    check("recursive");
}

#[test]
fn wire() {
    check("wire");
}

/// Every family file has a test above, so a new file cannot be left out.
#[test]
fn every_family_file_is_run() {
    let this = include_str!("ivm_shapes.rs");
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/shapes");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        assert!(
            this.contains(&format!("check(\"{name}\")")),
            "{name}.shapes has no test"
        );
        Family::load(&name);
    }
}

/// The file format: header, tables with domains, views with continued lines and expectations.
#[test]
fn a_family_file_reads_its_header_tables_and_views() {
    let f = Family::parse(
        "x",
        "-- c\nvia wire\nseeds 1 2\nrounds 3\ntable a (k INT 0..5, g TEXT p|q) rows 4 weight 2\n\
         v1: SELECT k\n  FROM a\n  => incremental: projection\nv2: SELECT * FROM v1\n",
    )
    .unwrap();
    assert_eq!((f.via, f.seeds, f.rounds), (Via::Wire, vec![1, 2], 3));
    assert_eq!((f.schema.tables[0].rows, f.schema.tables[0].weight), (4, 2));
    assert_eq!(f.views[0].query, "SELECT k FROM a");
    assert_eq!(f.views[0].expect, "incremental: projection");
    assert_eq!(f.views[1].expect, "incremental");
    assert!(Family::parse("x", "table a (k INT)\nv: SELECT 1").is_err());
}
