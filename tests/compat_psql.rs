//! psql's meta-commands against a real duckmv: every listing and describe
//! command works without an error and shows users' objects (and no
//! internal ones), the materialized view included.

mod common;

use common::TestServer;

const SETUP: &str = "
CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, price numeric(10,2) DEFAULT 0, created timestamp);
CREATE INDEX items_name_idx ON items (name);
CREATE VIEW cheap AS SELECT id, name FROM items WHERE price < 10;
INSERT INTO items VALUES (1, 'bolt', 2.50, NULL), (2, 'nut', 0.10, NULL), (3, 'bolt', 1.00, NULL);
CREATE MATERIALIZED VIEW totals AS SELECT name, sum(price) AS total, count(*) AS n FROM items GROUP BY name;
";

/// Runs one psql input; asserts psql succeeded and printed no error, and
/// returns its stdout.
fn run(server: &TestServer, input: &str) -> String {
    let out = server.psql(&["-v", "ON_ERROR_STOP=1"], input);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && !stderr.contains("ERROR") && !stdout.contains("ERROR"),
        "psql input {input:?} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}\nserver log:\n{}",
        out.status,
        server.log()
    );
    stdout
}

fn server() -> TestServer {
    let server = TestServer::start();
    run(&server, SETUP);
    server
}

/// The names in a psql listing's "Name" column (second column of `\d*`).
fn names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter(|l| l.contains('|'))
        .skip(1)
        .map(|l| l.split('|').nth(1).unwrap_or("").trim().to_string())
        .collect()
}

#[test]
fn psql_list_commands() {
    let s = server();
    let l = run(&s, "\\l\n");
    assert!(l.contains("List of databases") && l.contains("UTF8"), "{l}");

    let dn = run(&s, "\\dn\n");
    assert!(dn.contains("public"), "{dn}");
    assert!(!dn.contains("_duckmv"), "internal schema listed:\n{dn}");

    let dt = run(&s, "\\dt\n");
    assert_eq!(names(&dt), ["items"], "{dt}");
    assert!(dt.contains("public"), "{dt}");

    let dv = run(&s, "\\dv\n");
    assert_eq!(names(&dv), ["cheap"], "{dv}");

    let dm = run(&s, "\\dm\n");
    assert_eq!(names(&dm), ["totals"], "{dm}");
    assert!(dm.contains("materialized view"), "{dm}");

    let di = run(&s, "\\di\n");
    assert_eq!(names(&di), ["items_name_idx", "items_pkey"], "{di}");

    // \d alone: every relation of the user, none of the internal ones.
    let d = run(&s, "\\d\n");
    assert_eq!(names(&d), ["cheap", "items", "totals"], "{d}");
    s.terminate();
}

#[test]
fn psql_describe_commands() {
    let s = server();
    let d = run(&s, "\\d items\n");
    assert!(d.contains("Table \"public.items\""), "{d}");
    for expected in [
        "integer",
        "numeric(10,2)",
        "not null",
        "timestamp without time zone",
        "Indexes:",
    ] {
        assert!(d.contains(expected), "\\d items lacks {expected:?}:\n{d}");
    }
    assert!(d.contains("\"items_pkey\" PRIMARY KEY, btree (id)"), "{d}");
    assert!(d.contains("\"items_name_idx\" btree (name)"), "{d}");

    let dp = run(&s, "\\d+ items\n");
    assert!(
        dp.contains("Storage") && dp.contains("Access method: heap"),
        "{dp}"
    );

    let mv = run(&s, "\\d totals\n");
    assert!(mv.contains("Materialized view \"public.totals\""), "{mv}");
    assert!(mv.contains("total") && mv.contains("bigint"), "{mv}");
    let mvp = run(&s, "\\d+ totals\n");
    assert!(mvp.contains("View definition:"), "{mvp}");

    let v = run(&s, "\\d+ cheap\n");
    assert!(
        v.contains("View \"public.cheap\"") && v.contains("View definition:"),
        "{v}"
    );

    let i = run(&s, "\\d items_name_idx\n");
    assert!(i.contains("Index \"public.items_name_idx\""), "{i}");
    assert!(i.contains("btree, for table \"public.items\""), "{i}");
    s.terminate();
}

#[test]
fn psql_settings_commands() {
    let s = server();
    let x = run(&s, "\\x\nSELECT name, total FROM totals ORDER BY name;\n");
    assert!(x.contains("Expanded display is on."), "{x}");
    assert!(
        x.contains("-[ RECORD 1 ]") && x.contains("name  | bolt"),
        "{x}"
    );

    let t = run(&s, "\\timing\nSELECT 1 AS one;\n");
    assert!(t.contains("Timing is on.") && t.contains("Time: "), "{t}");

    let c = run(&s, "\\conninfo\n");
    assert!(c.contains("You are connected to database \"test\""), "{c}");
    assert!(c.contains(&format!("port \"{}\"", s.port)), "{c}");
    s.terminate();
}

#[test]
fn catalog_queries_through_the_wire() {
    let s = server();
    let out = run(
        &s,
        "\\pset format unaligned\n\\pset tuples_only on\n\
         SELECT relkind FROM pg_catalog.pg_class WHERE relname = 'totals';\n\
         SELECT 'items'::regclass::oid = (SELECT oid FROM pg_class WHERE relname = 'items');\n\
         SELECT current_setting('server_version_num');\n\
         SELECT version() LIKE 'PostgreSQL 16%duckmv%';\n\
         SELECT table_schema || '.' || table_name FROM information_schema.tables ORDER BY 1;\n\
         SELECT count(*) FROM public.items;\n",
    );
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with("Output format") && !l.starts_with("Tuples only"))
        .collect();
    assert_eq!(
        lines,
        ["m", "t", "160006", "t", "public.cheap", "public.items", "3"],
        "{out}"
    );
    s.terminate();
}
