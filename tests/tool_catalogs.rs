//! The catalog queries BI tools, loaders and dbt send when they connect and sync, run as the
//! tools send them: each over the simple protocol and, for single statements, the extended
//! protocol too. Every one must run without an error. The queries are in
//! `src/compat/testdata/<tool>.sql`, separated by `=====` lines.

mod common;

use common::{exec, TestServer};

const TOOLS: &[(&str, &str)] = &[
    (
        "metabase",
        include_str!("../src/compat/testdata/metabase.sql"),
    ),
    (
        "grafana",
        include_str!("../src/compat/testdata/grafana.sql"),
    ),
    (
        "superset",
        include_str!("../src/compat/testdata/superset.sql"),
    ),
    (
        "dbeaver",
        include_str!("../src/compat/testdata/dbeaver.sql"),
    ),
    (
        "pgadmin",
        include_str!("../src/compat/testdata/pgadmin.sql"),
    ),
    (
        "tableau",
        include_str!("../src/compat/testdata/tableau.sql"),
    ),
    (
        "airbyte",
        include_str!("../src/compat/testdata/airbyte.sql"),
    ),
    ("dbt", include_str!("../src/compat/testdata/dbt.sql")),
    ("psql", include_str!("../src/compat/testdata/psql15.sql")),
];

/// The objects the fixtures name: tables with keys, an index, views, an enum, a materialized view.
const OBJECTS: &str = "
    CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, price DECIMAL(10,2) DEFAULT 0,
                        created TIMESTAMP, code VARCHAR UNIQUE);
    CREATE INDEX items_name_idx ON items (name);
    CREATE VIEW cheap AS SELECT * FROM items WHERE price < 10;
    CREATE TABLE orders (id BIGINT PRIMARY KEY, item INTEGER REFERENCES items (id), qty INTEGER CHECK (qty > 0),
                         tags VARCHAR[], at_ts TIMESTAMPTZ, meta JSON, uid UUID);
    COMMENT ON TABLE items IS 'things we sell';
    COMMENT ON COLUMN items.price IS 'in euros';
    CREATE TYPE mood AS ENUM ('sad', 'happy');
    INSERT INTO items VALUES (1, 'bolt', 2.50, now(), 'B1'), (2, 'nut', 0.10, now(), 'N1');
    CREATE MATERIALIZED VIEW totals AS SELECT name, sum(price) AS total FROM items GROUP BY name;
";

/// psql's fixtures carry placeholders its own tests fill in: the table `items`.
fn fill(sql: &str, oid: &str) -> String {
    sql.replace("{oid}", oid).replace("{name}", "items")
}

fn single_statement(sql: &str) -> bool {
    let body = sql.trim().trim_end_matches(';');
    !body.contains(";\n") && !body.contains("; ")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tools_catalog_queries_run_without_errors() {
    let server = TestServer::start();
    // The fixtures name the database `duckmv` in three-part names
    // (`"duckmv".INFORMATION_SCHEMA.columns`), as the tools saw it when recorded.
    let c = server.client_to("duckmv").await;
    exec(&c, OBJECTS).await;
    let oid = common::text_rows(
        &c,
        "SELECT oid FROM pg_catalog.pg_class WHERE relname = 'items'",
    )
    .await
    .remove(0)
    .remove(0);
    let mut failures = Vec::new();
    let mut ran = 0;
    for (tool, file) in TOOLS {
        for (i, raw) in file.split("\n=====\n").enumerate() {
            let sql = fill(raw, &oid);
            if sql.trim().is_empty() {
                continue;
            }
            ran += 1;
            if let Err(e) = c.simple_query(&sql).await {
                failures.push(format!("{tool} #{i} (simple): {e:?}\n{sql}"));
                continue;
            }
            if single_statement(&sql) {
                if let Err(e) = c.query(sql.as_str(), &[]).await {
                    failures.push(format!("{tool} #{i} (extended): {e:?}\n{sql}"));
                }
            }
        }
    }
    assert!(ran > 100, "only {ran} queries found");
    assert!(
        failures.is_empty(),
        "{} of {ran} catalog queries failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
