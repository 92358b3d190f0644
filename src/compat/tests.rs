//! The catalog against a real DuckDB: install it over the IVM catalog, make
//! tables, a view, an index and a materialized view, and run what clients
//! send (rewritten as the server rewrites it).

use super::*;
use crate::engine::Database;
use duckdb::arrow::array::{Array, AsArray};
use duckdb::arrow::datatypes::DataType;

/// Lets the IVM create its own catalog, as the server does at start-up.
struct TestSql<'a>(&'a Conn);

impl crate::ivm::Sql for TestSql<'_> {
    fn exec(&mut self, sql: &str) -> Result<u64, crate::ivm::DbError> {
        self.0.exec(sql).map_err(|e| crate::ivm::DbError {
            state: e.sqlstate(),
            message: e.message,
        })
    }
    fn query(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, crate::ivm::DbError> {
        text_rows(self.0, sql).map_err(|message| crate::ivm::DbError {
            state: crate::engine::error::sqlstate_for(&message, 0),
            message,
        })
    }
}

/// Every value of a query as DuckDB's text, NULL as None.
pub(super) fn text_rows(conn: &Conn, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
    let sql = sql.trim().trim_end_matches(';');
    let wrapped = format!("SELECT CAST(COLUMNS(*) AS VARCHAR) FROM ({sql}\n) AS __q");
    let mut res = conn.query(&wrapped).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    while let Some(batch) = res.next_batch().map_err(|e| e.to_string())? {
        for r in 0..batch.num_rows() {
            let row = batch
                .columns()
                .iter()
                .map(|col| {
                    if col.is_null(r) {
                        return None;
                    }
                    Some(match col.data_type() {
                        DataType::Utf8View => col.as_string_view().value(r).to_string(),
                        DataType::LargeUtf8 => col.as_string::<i64>().value(r).to_string(),
                        _ => col.as_string::<i32>().value(r).to_string(),
                    })
                })
                .collect();
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Runs `sql` through the rewriter, as the server would, and returns its
/// rows with NULL as "".
pub(super) fn q(conn: &Conn, sql: &str) -> Vec<Vec<String>> {
    let rewritten = rewrite(&Lexed::new(sql)).unwrap_or_else(|| sql.to_string());
    text_rows(conn, &rewritten)
        .unwrap_or_else(|e| panic!("{e}\nquery:\n{sql}\nrewritten:\n{rewritten}"))
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect()
}

fn col(rows: &[Vec<String>], i: usize) -> Vec<String> {
    rows.iter().map(|r| r[i].clone()).collect()
}

/// A database as the server would have it: the IVM catalog, compat
/// installed (twice: it must be idempotent), a session's settings, and
/// users' objects. The materialized view is registered the way the IVM
/// registers one: a DuckDB view plus a row in _duckmv.views.
pub(super) fn setup() -> Conn {
    let db = Database::open(":memory:").unwrap();
    let conn = db.connect().unwrap();
    crate::ivm::bootstrap(&mut TestSql(&conn)).unwrap();
    install(&conn).unwrap();
    install(&conn).unwrap();
    session_init(&conn).unwrap();
    conn.exec_batch(
        "CREATE TABLE items (id INTEGER PRIMARY KEY, name VARCHAR NOT NULL, price DECIMAL(10,2) DEFAULT 0,
                             created TIMESTAMP, code VARCHAR UNIQUE);
         CREATE INDEX items_name_idx ON items (name);
         CREATE VIEW cheap AS SELECT * FROM items WHERE price < 10;
         CREATE TABLE orders (id BIGINT PRIMARY KEY, item INTEGER REFERENCES items (id), qty INTEGER CHECK (qty > 0),
                              tags VARCHAR[], at_ts TIMESTAMPTZ, meta JSON, uid UUID);
         COMMENT ON TABLE items IS 'things we sell';
         COMMENT ON COLUMN items.price IS 'in euros';
         CREATE TYPE mood AS ENUM ('sad', 'happy');
         CREATE VIEW totals AS SELECT name, sum(price) AS total FROM items GROUP BY name;
         INSERT INTO _duckmv.views (id, name, schema, definition, populated)
             VALUES (1, 'totals', 'main', 'SELECT name, sum(price) AS total FROM items GROUP BY name', true);
         CREATE TABLE _duckmv.internal_state (x INTEGER);",
    )
    .unwrap();
    conn
}

/// psql 15's catalog queries (captured with `psql -E`), separated by '====='.
fn psql_queries() -> Vec<&'static str> {
    include_str!("testdata/psql15.sql")
        .split("\n=====\n")
        .collect()
}

fn psql_query(containing: &str) -> &'static str {
    psql_queries()
        .into_iter()
        .find(|q| q.contains(containing))
        .unwrap_or_else(|| panic!("no psql query contains {containing:?}"))
}

#[test]
fn psql_lists() {
    let c = setup();
    // \l
    let l = q(&c, psql_query("FROM pg_catalog.pg_database d"));
    assert_eq!(l.len(), 1);
    assert_eq!(l[0][2], "UTF8");
    // \dn: public only; never the internal schemas.
    let dn = q(
        &c,
        psql_query("FROM pg_catalog.pg_namespace n\nWHERE n.nspname !~ '^pg_'"),
    );
    assert_eq!(col(&dn, 0), ["public"]);
    let relkinds = |kinds: &str| {
        let query = psql_queries()
            .into_iter()
            .find(|q| q.contains(&format!("WHERE c.relkind IN ({kinds})")))
            .unwrap();
        q(&c, query)
    };
    // \dt, \dv, \dm, \di
    let dt = relkinds("'r','p',''");
    assert_eq!(col(&dt, 1), ["items", "orders"]);
    assert!(dt.iter().all(|r| r[0] == "public" && r[2] == "table"));
    let dv = relkinds("'v',''");
    assert_eq!(col(&dv, 1), ["cheap"]);
    let dm = relkinds("'m',''");
    assert_eq!(col(&dm, 1), ["totals"]);
    assert_eq!(dm[0][2], "materialized view");
    let di = relkinds("'i','I',''");
    assert_eq!(
        col(&di, 1),
        [
            "items_code_key",
            "items_name_idx",
            "items_pkey",
            "orders_pkey"
        ]
    );
    assert_eq!(col(&di, 4), ["items", "items", "items", "orders"]);
}

/// Runs every query psql sends for `\d name` / `\d+ name` and returns the
/// results by query.
fn describe(c: &Conn, name: &str) -> Vec<Vec<Vec<String>>> {
    let lookup = psql_query("OPERATOR(pg_catalog.~)").replace("{name}", name);
    let found = q(c, &lookup);
    assert_eq!(found.len(), 1, "\\d {name} finds one relation: {found:?}");
    let oid = &found[0][0];
    psql_queries()
        .into_iter()
        .filter(|q| q.contains("{oid}"))
        .map(|query| q(c, &query.replace("{oid}", oid)))
        .collect()
}

#[test]
fn psql_describe_table() {
    let c = setup();
    let results = describe(&c, "items");
    // The relation's own row: relkind r, has indexes.
    let rel = results
        .iter()
        .find(|r| r.len() == 1 && r[0].len() == 15)
        .unwrap();
    assert_eq!(rel[0][1], "r");
    // Columns with PostgreSQL types, NOT NULL and defaults.
    let cols = results
        .iter()
        .find(|r| r.len() == 5 && r[0][0] == "id")
        .unwrap();
    assert_eq!(col(cols, 0), ["id", "name", "price", "created", "code"]);
    assert_eq!(
        col(cols, 1),
        [
            "integer",
            "text",
            "numeric(10,2)",
            "timestamp without time zone",
            "text"
        ]
    );
    assert_eq!(col(cols, 2), ["", "", "0", "", ""]);
    assert_eq!(col(cols, 3), ["true", "true", "false", "false", "false"]);
    // \d+ shows the column comment.
    assert!(results
        .iter()
        .any(|r| r.len() == 5 && r[2].last() == Some(&"in euros".to_string())));
    // Indexes: the primary key first, with psql's "USING btree (...)".
    let idx = results
        .iter()
        .find(|r| r.iter().any(|row| row[0] == "items_pkey"))
        .unwrap();
    assert_eq!(
        col(idx, 0),
        ["items_pkey", "items_code_key", "items_name_idx"]
    );
    assert_eq!(
        idx[0][5],
        "CREATE UNIQUE INDEX items_pkey ON public.items USING btree (id)"
    );
    assert_eq!(idx[0][6], "PRIMARY KEY (id)");
    assert_eq!(
        idx[2][5],
        "CREATE INDEX items_name_idx ON public.items USING btree (name)"
    );
}

#[test]
fn psql_describe_views_and_index() {
    let c = setup();
    let mv = describe(&c, "totals");
    assert!(mv
        .iter()
        .any(|r| r.len() == 1 && r[0].get(1).map(String::as_str) == Some("m")));
    assert!(mv
        .iter()
        .any(|r| r.len() == 1
            && r[0][0] == " SELECT name, sum(price) AS total FROM items GROUP BY name"));
    let v = describe(&c, "cheap");
    assert!(v
        .iter()
        .any(|r| r.len() == 1 && r[0].get(1).map(String::as_str) == Some("v")));
    let v_def = v.iter().find(|r| r.len() == 1 && r[0].len() == 1).unwrap();
    assert!(v_def[0][0].contains("FROM items"), "{v_def:?}");
    let i = describe(&c, "items_name_idx");
    assert!(i
        .iter()
        .any(|r| r.len() == 1 && r[0].get(1).map(String::as_str) == Some("i")));
}

#[test]
fn every_psql_query_runs() {
    let c = setup();
    for query in psql_queries() {
        q(&c, &query.replace("{oid}", "1").replace("{name}", "items"));
    }
}

#[test]
fn builtin_types_have_postgres_oids() {
    let c = setup();
    let rows = q(&c, "SELECT typname, oid FROM pg_catalog.pg_type WHERE typnamespace = 11 AND typname NOT LIKE '\\_%' ESCAPE '\\'");
    let oid = |name: &str| {
        rows.iter()
            .find(|r| r[0] == name)
            .map(|r| r[1].clone())
            .unwrap_or_default()
    };
    for (name, expected) in [
        ("bool", "16"),
        ("int2", "21"),
        ("int4", "23"),
        ("int8", "20"),
        ("text", "25"),
        ("float4", "700"),
        ("float8", "701"),
        ("numeric", "1700"),
        ("date", "1082"),
        ("time", "1083"),
        ("timestamp", "1114"),
        ("timestamptz", "1184"),
        ("interval", "1186"),
        ("uuid", "2950"),
        ("json", "114"),
        ("bytea", "17"),
        ("varchar", "1043"),
        ("name", "19"),
        ("oid", "26"),
        ("char", "18"),
        ("regclass", "2205"),
        ("regtype", "2206"),
    ] {
        assert_eq!(oid(name), expected, "pg_type oid of {name}");
    }
    let arrays = q(
        &c,
        "SELECT typname, oid, typelem FROM pg_type WHERE typname IN ('_int4', '_text')",
    );
    assert_eq!(arrays, [["_int4", "1007", "23"], ["_text", "1009", "25"]]);
    // Users' enum types, with their labels.
    let e = q(&c, "SELECT t.typtype, e.enumlabel FROM pg_type t JOIN pg_enum e ON e.enumtypid = t.oid WHERE t.typname = 'mood' ORDER BY e.enumsortorder");
    assert_eq!(e, [["e", "sad"], ["e", "happy"]]);
}

#[test]
fn columns_types_and_formats() {
    let c = setup();
    let rows = q(
        &c,
        "SELECT a.attname, a.atttypid, pg_catalog.format_type(a.atttypid, a.atttypmod), t.typname
         FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
         WHERE a.attrelid = 'orders'::regclass AND a.attnum > 0 ORDER BY a.attnum",
    );
    assert_eq!(
        rows,
        [
            ["id", "20", "bigint", "int8"],
            ["item", "23", "integer", "int4"],
            ["qty", "23", "integer", "int4"],
            ["tags", "1009", "text[]", "_text"],
            ["at_ts", "1184", "timestamp with time zone", "timestamptz"],
            ["meta", "114", "json", "json"],
            ["uid", "2950", "uuid", "uuid"],
        ]
    );
}

#[test]
fn constraints() {
    let c = setup();
    let rows = q(
        &c,
        "SELECT conname, contype, pg_get_constraintdef(oid, true), confrelid = 'items'::regclass, conkey::VARCHAR
         FROM pg_constraint WHERE conrelid = 'public.orders'::regclass ORDER BY contype",
    );
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0][1], "c");
    assert_eq!(rows[0][2], "CHECK ((qty > 0))");
    assert_eq!(
        rows[1][1..4],
        ["f", "FOREIGN KEY (item) REFERENCES items(id)", "true"]
    );
    assert_eq!(rows[2][0..3], ["orders_pkey", "p", "PRIMARY KEY (id)"]);
    assert_eq!(rows[2][4], "[1]");
}

#[test]
fn internal_schemas_are_hidden() {
    let c = setup();
    let names = col(&q(&c, "SELECT nspname FROM pg_namespace ORDER BY 1"), 0);
    assert_eq!(names, ["information_schema", "pg_catalog", "public"]);
    let leaked = q(
        &c,
        "SELECT relname FROM pg_class WHERE relname IN ('internal_state', 'views', 'view_sources', 'pg_matviews')",
    );
    assert!(leaked.is_empty(), "{leaked:?}");
    // The materialized view is 'm', never 'v'.
    assert_eq!(
        q(&c, "SELECT relkind FROM pg_class WHERE relname = 'totals'"),
        [["m"]]
    );
    let tables = q(
        &c,
        "SELECT table_schema, table_name, table_type FROM information_schema.tables ORDER BY 2",
    );
    assert_eq!(
        tables,
        [
            ["public", "cheap", "VIEW"],
            ["public", "items", "BASE TABLE"],
            ["public", "orders", "BASE TABLE"]
        ]
    );
    let cols = q(
        &c,
        "SELECT column_name, data_type, is_nullable FROM information_schema.columns
         WHERE table_schema = 'public' AND table_name = 'items' ORDER BY ordinal_position",
    );
    assert_eq!(
        col(&cols, 1),
        [
            "integer",
            "text",
            "numeric",
            "timestamp without time zone",
            "text"
        ]
    );
    assert_eq!(col(&cols, 2), ["NO", "NO", "YES", "YES", "YES"]);
    assert_eq!(
        q(&c, "SELECT matviewname, schemaname FROM pg_matviews"),
        [["totals", "public"]]
    );
}

#[test]
fn regclass_and_regtype() {
    let c = setup();
    let oid = q(&c, "SELECT oid FROM pg_class WHERE relname = 'items'")[0][0].clone();
    assert_eq!(q(&c, "SELECT 'items'::regclass"), [[oid.clone()]]);
    assert_eq!(
        q(&c, "SELECT 'public.items'::pg_catalog.regclass::oid"),
        [[oid.clone()]]
    );
    assert_eq!(q(&c, &format!("SELECT {oid}::regclass::text")), [["items"]]);
    assert_eq!(
        q(
            &c,
            "SELECT c.oid::regclass FROM pg_class c WHERE c.relname = 'cheap'"
        ),
        [["cheap"]]
    );
    assert_eq!(q(&c, "SELECT 'pg_class'::regclass::oid"), [["1259"]]);
    let err = text_rows(
        &c,
        &rewrite(&Lexed::new("SELECT 'nope'::regclass")).unwrap(),
    )
    .unwrap_err();
    assert!(err.contains("relation \"nope\" does not exist"), "{err}");
    assert_eq!(
        q(
            &c,
            "SELECT 'integer'::regtype::oid, 23::regtype::text, to_regtype('text[]')::oid"
        ),
        [["23", "integer", "1009"]]
    );
    assert_eq!(q(&c, "SELECT 1043::regtype"), [["character varying"]]);
}

#[test]
fn functions_answer_like_postgres() {
    let c = setup();
    let v = q(&c, "SELECT version()")[0][0].clone();
    assert!(v.starts_with("PostgreSQL 16.6 (duckmv "), "{v}");
    assert!(v.contains("DuckDB v"), "{v}");
    assert_eq!(q(&c, "select pg_catalog.version() = version()"), [["true"]]);
    assert_eq!(
        q(&c, "SELECT current_setting('server_version_num'), current_setting('standard_conforming_strings')"),
        [["160006", "on"]]
    );
    assert_eq!(
        q(&c, "SELECT pg_catalog.current_setting('DateStyle')"),
        [["ISO, MDY"]]
    );
    assert_eq!(
        q(
            &c,
            "SELECT setting FROM pg_settings WHERE name = 'server_encoding'"
        ),
        [["UTF8"]]
    );
    // PostgreSQL's parameters answer with PostgreSQL's defaults, DuckDB's
    // own settings still answer.
    assert_eq!(
        q(
            &c,
            "SELECT current_setting('search_path'), current_setting('threads')::INTEGER > 0"
        ),
        [["\"$user\", public", "true"]]
    );
    assert_eq!(
        q(&c, "SELECT current_schema(), current_schema"),
        [["public", "public"]]
    );
    // asyncpg's preamble to its type introspection.
    assert_eq!(
        q(
            &c,
            "SELECT current_setting('jit') AS cur, set_config('jit', 'off', false) AS new"
        ),
        [["off", "off"]]
    );
    assert_eq!(
        q(&c, "SELECT pg_catalog.current_schemas(true)::VARCHAR"),
        [["[pg_catalog, public]"]]
    );
    assert_eq!(
        q(&c, "SELECT pg_get_userbyid(10), pg_encoding_to_char(6), has_table_privilege('items', 'SELECT'), has_schema_privilege('public', 'USAGE')"),
        [["duckmv", "UTF8", "true", "true"]]
    );
    assert_eq!(
        q(&c, "SELECT obj_description('items'::regclass, 'pg_class'), col_description('items'::regclass, 3)"),
        [["things we sell", "in euros"]]
    );
    assert_eq!(
        q(
            &c,
            "SELECT pg_table_is_visible('items'::regclass), pg_type_is_visible(23)"
        ),
        [["true", "true"]]
    );
    assert_eq!(
        q(
            &c,
            "SELECT pg_catalog.array_to_string(ARRAY['a', 'b'], ',')"
        ),
        [["a,b"]]
    );
    assert_eq!(q(&c, "SELECT count(*) FROM pg_trigger"), [["0"]]);
    assert_eq!(q(&c, "SELECT rolname FROM pg_roles"), [["duckmv"]]);
    assert_eq!(
        q(&c, "SELECT datname = current_database() FROM pg_database"),
        [["true"]]
    );
}

#[test]
fn public_schema_qualifier() {
    let c = setup();
    c.exec_batch("INSERT INTO items VALUES (1, 'a', 2.5, NULL, 'x')")
        .unwrap();
    assert_eq!(q(&c, "SELECT name FROM public.items"), [["a"]]);
    assert_eq!(
        q(&c, "SELECT \"public\".items.name FROM \"public\".items"),
        [["a"]]
    );
}

/// pgJDBC 42.5's DatabaseMetaData.getPrimaryKeys, which uses
/// information_schema._pg_expandarray.
#[test]
fn jdbc_primary_keys() {
    let c = setup();
    let sql = "SELECT result.TABLE_CAT, result.TABLE_SCHEM, result.TABLE_NAME, result.COLUMN_NAME, result.KEY_SEQ, result.PK_NAME FROM (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM,   ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME,   (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME,   information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM FROM pg_catalog.pg_class ct   JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)   JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)   JOIN pg_catalog.pg_index i ON ( a.attrelid = i.indrelid)   JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid) WHERE true  AND n.nspname = 'public' AND ct.relname = 'items' AND i.indisprimary  ) result where  result.A_ATTNUM = (result.KEYS).x  ORDER BY result.table_name, result.pk_name, result.key_seq";
    assert_eq!(
        q(&c, sql),
        [["", "public", "items", "id", "1", "items_pkey"]]
    );
}

/// asyncpg's type introspection (TYPE_BY_NAME, then the recursive query).
#[test]
fn asyncpg_introspection() {
    let c = setup();
    let by_name = q(
        &c,
        "SELECT t.oid, t.typelem AS elemtype, t.typtype AS kind FROM pg_catalog.pg_type AS t
         INNER JOIN pg_catalog.pg_namespace ns ON (ns.oid = t.typnamespace)
         WHERE t.typname = 'mood' AND ns.nspname = 'public'",
    );
    assert_eq!(by_name.len(), 1);
    assert_eq!(by_name[0][2], "e");
    let sql =
        include_str!("testdata/asyncpg_types.sql").replace("$1", &format!("[{}]", by_name[0][0]));
    let rows = q(&c, &sql);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0][1..4], ["public", "mood", "e"]);
}

#[test]
fn to_char_formats_dates_and_timestamps_as_postgresql_does() {
    let c = setup();
    let got = q(
        &c,
        "SELECT to_char(TIMESTAMP '2024-03-05 14:07:09.5', 'YYYY-MM-DD HH24:MI:SS.MS'), \
                to_char(DATE '2024-03-05', 'DD Mon YYYY, Dy'), \
                to_char(TIMESTAMP '2024-03-05 14:07:09', 'FMHH12:MI AM FMDD/FMMM 100%'), \
                array_remove([1, 2, 1, NULL], 1), btrim('xxaxx', 'x'), btrim('  a ')",
    );
    assert_eq!(
        got,
        [[
            "2024-03-05 14:07:09.500",
            "05 Mar 2024, Tue",
            "2:07 PM 5/3 100%",
            "[2, NULL]",
            "a",
            "a"
        ]]
    );
}
