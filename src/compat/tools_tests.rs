//! What BI and admin tools read besides the core catalog, against a real
//! DuckDB with the catalog installed (see tests.rs).

use super::tests::{q, setup};
use super::Conn;

/// Runs `sql` as the server would: normalized as a session does, then rewritten.
fn run(c: &Conn, sql: &str) -> Vec<Vec<String>> {
    q(
        c,
        super::normalize(crate::sql::Lexed::new(sql), "duckmv").text(),
    )
}

#[test]
fn quoting_functions_answer_like_postgres() {
    let c = setup();
    assert_eq!(
        run(
            &c,
            "SELECT quote_ident('items'), quote_ident('Items'), quote_ident('select'), quote_ident('at'), quote_ident('a\"b')"
        ),
        [["items", "\"Items\"", "\"select\"", "at", "\"a\"\"b\""]]
    );
    assert_eq!(
        run(
            &c,
            "SELECT quote_literal('it''s'), quote_literal('a\\b'), quote_nullable(NULL), quote_literal(NULL) IS NULL"
        ),
        [["'it''s'", "E'a\\\\b'", "NULL", "true"]]
    );
    assert_eq!(
        run(
            &c,
            "SELECT array_length(parse_ident('public.items'), 1), (parse_ident('\"A\".b'))[1], (parse_ident('items'))[1]"
        ),
        [["2", "A", "items"]]
    );
    // format() with PostgreSQL's specifiers.
    assert_eq!(
        run(
            &c,
            "SELECT format('%I.%I', 'public', 'My Table'), format('%s = %L', 'x', 'it''s'), format('%L', NULL), format('100%%')"
        ),
        [["public.\"My Table\"", "x = 'it''s'", "NULL", "100%"]]
    );
    // Metabase casts a formatted name to regclass.
    let oid = run(&c, "SELECT oid FROM pg_class WHERE relname = 'items'");
    assert_eq!(
        run(
            &c,
            "SELECT CAST(CAST(FORMAT('%I.%I', CAST('public' AS TEXT), CAST('items' AS TEXT)) AS REGCLASS) AS OID)"
        ),
        oid
    );
}

#[test]
fn statistics_and_activity_views() {
    let c = setup();
    c.exec_batch("INSERT INTO items VALUES (1, 'a', 1, NULL, 'x'), (2, 'b', 2, NULL, 'y')")
        .unwrap();
    assert_eq!(
        run(
            &c,
            "SELECT schemaname, relname, n_live_tup, seq_scan FROM pg_stat_user_tables WHERE relname = 'items'"
        ),
        [["public", "items", "2", "0"]]
    );
    assert_eq!(
        run(&c, "SELECT count(*) FROM pg_catalog.pg_statio_user_tables"),
        [["3"]]
    );
    assert_eq!(
        run(
            &c,
            "SELECT gss_authenticated, encrypted FROM pg_catalog.pg_stat_gssapi WHERE pid = pg_backend_pid()"
        ),
        [["false", "false"]]
    );
    for empty in [
        "pg_locks",
        "pg_rules",
        "pg_conversion",
        "pg_foreign_data_wrapper",
        "pg_seclabels",
        "pg_stat_progress_cluster",
    ] {
        assert_eq!(
            run(&c, &format!("SELECT count(*) FROM pg_catalog.{empty}")),
            [["0"]],
            "{empty}"
        );
    }
    assert_eq!(
        run(
            &c,
            "SELECT setting FROM pg_catalog.pg_show_all_settings() st WHERE st.name = 'default_table_access_method'"
        ),
        [["heap"]]
    );
    let items = run(&c, "SELECT oid FROM pg_class WHERE relname = 'items'");
    assert_eq!(
        run(&c, "SELECT pg_relation_filenode('\"public\".\"items\"')"),
        items
    );
    assert_eq!(
        run(
            &c,
            "SELECT pg_is_wal_replay_paused(), pg_stat_get_numscans(1), pg_get_function_identity_arguments(1), bpchar('x') = 'x'::bpchar"
        ),
        [["false", "0", "", "true"]]
    );
}

/// pgAdmin finds a table's constraint indexes through pg_depend and the
/// catalogs' tableoid system column.
#[test]
fn constraint_indexes_through_pg_depend() {
    let c = setup();
    let sql = "SELECT cls.relname, con.contype FROM pg_catalog.pg_index idx
        JOIN pg_catalog.pg_class cls ON cls.oid = indexrelid
        LEFT JOIN pg_catalog.pg_depend dep ON (dep.classid = cls.tableoid AND dep.objid = cls.oid
            AND dep.refobjsubid = '0' AND dep.deptype = 'i'
            AND dep.refclassid = (SELECT oid FROM pg_catalog.pg_class WHERE relname = 'pg_constraint'))
        LEFT JOIN pg_catalog.pg_constraint con ON (con.tableoid = dep.refclassid AND con.oid = dep.refobjid)
        WHERE indrelid = 'items'::regclass ORDER BY 1";
    assert_eq!(
        run(&c, sql),
        [
            ["items_code_key", "u"],
            ["items_name_idx", ""],
            ["items_pkey", "p"]
        ]
    );
    assert_eq!(
        run(
            &c,
            "SELECT c.xmin = c.xmin FROM pg_class c WHERE relname = 'items'"
        ),
        [["true"]]
    );
}

#[test]
fn table_grants() {
    let c = setup();
    let rows = run(
        &c,
        "SELECT grantor, grantee, privilege_type FROM \"duckmv\".INFORMATION_SCHEMA.role_table_grants
         WHERE table_schema = 'public' AND table_name = 'items' ORDER BY 3",
    );
    assert_eq!(rows.len(), 7, "{rows:?}");
    assert!(rows.iter().all(|r| r[0] == "duckmv" && r[1] == "duckmv"));
    assert_eq!(
        run(
            &c,
            "SELECT count(*) FROM information_schema.table_privileges WHERE privilege_type = 'SELECT'"
        ),
        [["3"]]
    );
}

/// An empty select list (Airbyte's `EXISTS (SELECT FROM …)`).
#[test]
fn empty_select_list_in_subqueries() {
    let c = setup();
    assert_eq!(
        run(
            &c,
            "SELECT (EXISTS (SELECT FROM information_schema.columns WHERE table_name = 'items' AND column_name = 'created'))
                AND NOT (EXISTS (SELECT from items where created IS NULL LIMIT 1)) AS v"
        ),
        [["true"]]
    );
}

/// pgAdmin reads options with the regular-expression form of substring.
#[test]
fn substring_with_a_pattern() {
    let c = setup();
    assert_eq!(
        run(
            &c,
            "SELECT substring('fillfactor=70,x=1' FROM 'fillfactor=([0-9]*)'), substring('abc' FROM 'b.'),
                    substring('abc' FROM 'z') IS NULL, substring('abcdef' FROM 2 FOR 3)"
        ),
        [["70", "bc", "true", "bcd"]]
    );
}

/// Grafana's search-path query calls current_setting() inside a table function.
#[test]
fn settings_inside_table_functions() {
    let c = setup();
    assert_eq!(
        run(
            &c,
            "SELECT count(*) FROM generate_series(
                array_lower(string_to_array(current_setting('search_path'), ','), 1),
                array_upper(string_to_array(current_setting('search_path'), ','), 1)) AS i"
        ),
        [["2"]]
    );
    assert_eq!(
        run(&c, "SELECT current_schema(), session_user IS NOT NULL"),
        [["public", "true"]]
    );
}
