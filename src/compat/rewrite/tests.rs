//! The rewriter on the statements clients send.

use super::*;

pub(super) fn rewrite(sql: &str) -> Option<String> {
    super::rewrite(&Lexed::new(sql))
}

fn rw(sql: &str) -> String {
    rewrite(sql).unwrap_or_else(|| sql.to_string())
}

#[test]
fn quick_check_is_case_insensitive() {
    assert!(might_need("SELECT * FROM PG_CATALOG.PG_CLASS"));
    assert!(might_need("select x::RegClass"));
    assert!(!might_need("INSERT INTO t VALUES (1, 'price', 'catalog')"));
}

#[test]
fn leaves_ordinary_statements_alone() {
    assert_eq!(rewrite("SELECT a, b FROM t WHERE x = 'y'"), None);
    assert_eq!(rewrite("INSERT INTO t VALUES (1, 'a')"), None);
    // Mentions a trigger word but needs no change.
    assert_eq!(rewrite("SELECT relname FROM pg_class"), None);
    assert_eq!(rewrite("SELECT 'public' AS s"), None);
}

#[test]
fn catalog_qualifier() {
    assert_eq!(
        rw("SELECT c.relname FROM pg_catalog.pg_class c WHERE pg_catalog.pg_table_is_visible(c.oid)"),
        "SELECT c.relname FROM duckmv.pg_class c WHERE duckmv.pg_table_is_visible(c.oid)"
    );
    // Not ours: DuckDB's built-in, found on the search path.
    assert_eq!(
        rw("SELECT pg_catalog.count(*), pg_catalog.unnest(x)"),
        "SELECT count(*), unnest(x)"
    );
    // Three-part column references follow their table.
    assert_eq!(
        rw("SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class"),
        "SELECT duckmv.pg_class.relname FROM duckmv.pg_class"
    );
    assert_eq!(rw("select pg_catalog.version()"), "select duckmv.version()");
    assert_eq!(rw("SELECT version()"), "SELECT duckmv.version()");
}

#[test]
fn operators_and_collations() {
    assert_eq!(
        rw("WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default AND x"),
        "WHERE c.relname  ~  '^(t)$'  AND x"
    );
    assert_eq!(
        rw("WHERE a OPERATOR(pg_catalog.!~) 'x'"),
        "WHERE a  !~  'x'"
    );
    assert_eq!(rw("SELECT a COLLATE \"C\" FROM t"), "SELECT a  FROM t");
}

#[test]
fn regclass_casts() {
    assert_eq!(rw("SELECT 't'::regclass"), "SELECT duckmv.regclass_in('t')");
    assert_eq!(
        rw("SELECT 'public.t'::pg_catalog.regclass::oid"),
        "SELECT duckmv.regclass_in('public.t')::UINTEGER"
    );
    assert_eq!(
        rw("SELECT c.oid::pg_catalog.regclass::pg_catalog.text FROM x"),
        "SELECT duckmv.regclass_out(c.oid)::text FROM x"
    );
    assert_eq!(
        rw("SELECT CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END"),
        "SELECT CASE WHEN c.reloftype = 0 THEN '' ELSE duckmv.regtype_out(c.reloftype)::text END"
    );
    assert_eq!(
        rw("SELECT basetype::regtype::text"),
        "SELECT duckmv.regtype_out(basetype)::text"
    );
    assert_eq!(
        rw("WHERE t.oid = to_regtype($1)"),
        "WHERE t.oid = to_regtype($1)"
    );
    assert_eq!(rw("SELECT $1::regclass"), "SELECT duckmv.regclass_in($1)");
    assert_eq!(
        rw("SELECT f(x)::regtype"),
        "SELECT duckmv.regtype_out(f(x))"
    );
    assert_eq!(
        rw("SELECT (a + b)::regclass"),
        "SELECT duckmv.regclass_out((a + b))"
    );
    assert_eq!(
        rw("SELECT stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp"),
        "SELECT duckmv.regnamespace_out(stxnamespace)::text AS nsp"
    );
    assert_eq!(
        rw("WHERE d.classoid = CAST($3 AS REGCLASS) AND x"),
        "WHERE d.classoid = duckmv.regclass_in($3) AND x"
    );
    assert_eq!(
        rw("SELECT CAST(CAST(pg_catalog.pg_attribute.attrelid AS REGCLASS) AS TEXT)"),
        "SELECT CAST(duckmv.regclass_out(duckmv.pg_attribute.attrelid) AS TEXT)"
    );
    assert_eq!(
        rw("SELECT 'pg_catalog.array_in'::regproc"),
        "SELECT duckmv.regproc_in('pg_catalog.array_in')"
    );
}

#[test]
fn other_types() {
    assert_eq!(
        rw("SELECT x::pg_catalog.int2[] FROM pg_class"),
        "SELECT x::int2[] FROM pg_class"
    );
    assert_eq!(
        rw("SELECT relname::name FROM pg_class"),
        "SELECT relname::VARCHAR FROM pg_class"
    );
    assert_eq!(
        rw("SELECT '16398'::pg_catalog.oid"),
        "SELECT '16398'::UINTEGER"
    );
    // asyncpg's type introspection binds `$1::oid[]`.
    assert_eq!(
        rw("SELECT 1 WHERE t.oid = any($1::oid[])"),
        "SELECT 1 WHERE t.oid = any($1::UINTEGER[])"
    );
}

#[test]
fn information_schema_and_public() {
    assert_eq!(
        rw("SELECT * FROM information_schema.tables WHERE table_schema = 'public'"),
        "SELECT * FROM duckmv.information_schema_tables WHERE table_schema = 'public'"
    );
    assert_eq!(
        rw("SELECT * FROM INFORMATION_SCHEMA.COLUMNS"),
        "SELECT * FROM duckmv.information_schema_columns"
    );
    assert_eq!(
        rw("SELECT (information_schema._pg_expandarray(i.indkey)).n"),
        "SELECT (unnest(duckmv._pg_expandarray(i.indkey))).n"
    );
    assert_eq!(
        rw("SELECT * FROM public.t JOIN \"public\".u ON true"),
        "SELECT * FROM main.t JOIN main.u ON true"
    );
    // Other information_schema views are DuckDB's.
    assert_eq!(rewrite("SELECT * FROM information_schema.routines"), None);
}

#[test]
fn settings_and_schemas() {
    assert_eq!(
        rw("SELECT current_setting('server_version_num')"),
        "SELECT duckmv.pg_current_setting('server_version_num')"
    );
    // DuckDB's own settings stay DuckDB's.
    assert_eq!(rewrite("SELECT current_setting('threads')"), None);
    assert_eq!(
        rw("SELECT current_setting($1::VARCHAR)"),
        "SELECT duckmv.pg_current_setting($1::VARCHAR)"
    );
    assert_eq!(
        rw("select current_schema()"),
        "select duckmv.pg_current_schema()"
    );
    assert_eq!(
        rw("select current_schema"),
        "select duckmv.pg_current_schema()"
    );
    assert_eq!(
        rw("SELECT (pg_catalog.current_schemas(true))[1]"),
        "SELECT (duckmv.pg_current_schemas(true))[1]"
    );
}

#[test]
fn psql_describe_query() {
    let q = "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relname OPERATOR(pg_catalog.~) '^(items)$' COLLATE pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;";
    let out = rw(q);
    assert!(!out.contains("pg_catalog"), "{out}");
    assert!(out.contains("c.relname  ~  '^(items)$'"), "{out}");
}

#[test]
fn scalar_functions_in_from() {
    assert_eq!(
        rw("SELECT s[i] FROM generate_series(1, 2) AS i, string_to_array('a,b', ',') s"),
        "SELECT s[i] FROM generate_series(1, 2) AS i, (SELECT string_to_array('a,b', ',') AS \"s\") s"
    );
    assert_eq!(
        rw("SELECT * FROM string_to_array('a', ',')"),
        "SELECT * FROM (SELECT string_to_array('a', ',') AS \"string_to_array\") \"string_to_array\""
    );
    // In a select list it is an ordinary call.
    assert_eq!(rewrite("SELECT a, string_to_array(b, ',') s FROM t"), None);
}

#[test]
fn regex_substring() {
    assert_eq!(
        rw("SELECT substring(x FROM 'a=([0-9]*)'), substring(y FROM 'b.'), substring(z FROM 2 FOR 3)"),
        "SELECT duckmv._substring_group(x , 'a=([0-9]*)'), duckmv._substring_match(y , 'b.'), substring(z FROM 2 FOR 3)"
    );
}

#[test]
fn empty_select_list() {
    assert_eq!(
        rw("SELECT EXISTS (SELECT FROM t WHERE a) AND EXISTS (select\nwhere true)"),
        "SELECT EXISTS (SELECT NULL FROM t WHERE a) AND EXISTS (select NULL\nwhere true)"
    );
    assert_eq!(
        rw("select from t"),
        "select NULL AS __duckmv_no_columns from t"
    );
}

#[test]
fn merge_action_call() {
    assert_eq!(
        rw("MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE RETURNING merge_action(), t.k"),
        "MERGE INTO t USING s ON t.k = s.k WHEN MATCHED THEN DELETE RETURNING merge_action, t.k"
    );
}

#[test]
fn bytea_literals_are_read_as_postgresql_reads_them() {
    // Hex form: three bytes, not DuckDB's five.
    assert_eq!(
        rw("SELECT '\\x0001ff'::bytea"),
        "SELECT '\\x00\\x01\\xFF'::bytea"
    );
    assert_eq!(
        rw("INSERT INTO t VALUES (CAST('\\xDEAD beef' AS bytea))"),
        "INSERT INTO t VALUES (CAST('\\xDE\\xAD\\xBE\\xEF' AS bytea))"
    );
    // Escape form: a doubled backslash is one, `\ooo` an octal byte, quotes doubled.
    assert_eq!(
        rw("SELECT 'a\\\\b\\001''c'::pg_catalog.bytea"),
        "SELECT '\\x61\\x5C\\x62\\x01\\x27\\x63'::bytea"
    );
    // Not bytea input: left for DuckDB to report or read its own way.
    assert_eq!(rw("SELECT '\\x0g'::bytea"), "SELECT '\\x0g'::bytea");
    assert_eq!(
        rw("SELECT '\\9'::bytea, x::bytea"),
        "SELECT '\\9'::bytea, x::bytea"
    );
}

#[test]
fn generate_series_in_a_select_list_returns_rows() {
    assert_eq!(
        rw("SELECT generate_series(1, 3)"),
        "SELECT unnest(generate_series(1, 3))"
    );
    assert_eq!(
        rw("SELECT k, 10 * generate_series(1, k) AS x FROM t WHERE k IN (SELECT generate_series(1, 2))"),
        "SELECT k, 10 * unnest(generate_series(1, k)) AS x FROM t WHERE k IN (SELECT unnest(generate_series(1, 2)))"
    );
    // A table function in a FROM list, and a list where the query asks for one.
    assert_eq!(rewrite("SELECT * FROM generate_series(1, 3) AS g(i)"), None);
    assert_eq!(
        rewrite("SELECT i FROM t JOIN generate_series(1, 3) g(i) ON true"),
        None
    );
    assert_eq!(
        rewrite("SELECT 1 WHERE 2 = ANY(generate_series(1, 3))"),
        None
    );
}

#[test]
fn array_literals_cast_to_arrays_become_lists() {
    assert_eq!(
        rw("SELECT '{1,NULL,3}'::int[], CAST('{\"a b\",c''d}' AS text[])"),
        "SELECT ['1', NULL, '3']::int[], CAST(['a b', 'c''d'] AS text[])"
    );
    assert_eq!(
        rw("SELECT '{{1,2},{3,4}}'::int[][]"),
        "SELECT [['1', '2'], ['3', '4']]::int[][]"
    );
    assert_eq!(rw("SELECT '{}'::_int4"), "SELECT '{}'::_int4");
    // Not an array literal: left for DuckDB.
    assert_eq!(rw("SELECT '[1, 2]'::int[]"), "SELECT '[1, 2]'::int[]");
}

#[test]
fn seconds_and_milliseconds_keep_their_fraction() {
    assert_eq!(
        rw("SELECT extract(second FROM ts), EXTRACT(MILLISECONDS FROM t.a + i) FROM t"),
        "SELECT CAST(date_part('microseconds', ts) / 1000000.0 AS DECIMAL(18,6)), \
         CAST(date_part('microseconds', t.a + i) / 1000.0 AS DECIMAL(18,3)) FROM t"
    );
    assert_eq!(
        rw("SELECT date_part('second', extract(hour from x) * interval '1 h')"),
        "SELECT (date_part('microseconds', extract(hour from x) * interval '1 h') / 1000000.0)"
    );
    assert_eq!(
        rw("SELECT extract(epoch FROM b - a)"),
        "SELECT CAST(date_part('epoch', b - a) AS DECIMAL(24,6))"
    );
    // Whole parts are DuckDB's already.
    assert_eq!(
        rewrite("SELECT extract(year FROM d), date_part('hour', ts)"),
        None
    );
}

#[test]
fn the_current_user_is_the_login_role() {
    assert_eq!(
        rw("SELECT current_user, session_user, current_role FROM t WHERE owner = current_user"),
        "SELECT duckmv._session_role(), duckmv._session_role(), duckmv._session_role() \
         FROM t WHERE owner = duckmv._session_role()"
    );
    // A column of that name, and a call of a function of that name, are left alone.
    assert_eq!(
        rewrite("SELECT t.current_user, \"current_user\" FROM t"),
        None
    );
}

#[test]
fn any_of_an_array_of_a_query_compares_with_its_rows() {
    assert_eq!(
        rw("SELECT 'x' = ANY(ARRAY(WITH c AS (SELECT 1) SELECT n FROM c)), y <> all (array(select z))"),
        "SELECT 'x' = ANY(WITH c AS (SELECT 1) SELECT n FROM c), y <> all (select z)"
    );
    assert_eq!(
        rewrite("SELECT 1 = ANY(ARRAY[1, 2]), ARRAY(SELECT 1)"),
        None
    );
}

#[test]
fn to_date_and_to_timestamp_read_a_template() {
    assert_eq!(
        rw("SELECT to_date(d, 'DD/MM/YYYY'), to_timestamp(concat(a, b), f)"),
        "SELECT CAST(strptime(d, duckmv._pg_datetime_format( 'DD/MM/YYYY')) AS DATE), \
         CAST(strptime(concat(a, b), duckmv._pg_datetime_format( f)) AS TIMESTAMPTZ)"
    );
    // Seconds since 1970 are DuckDB's to_timestamp.
    assert_eq!(rewrite("SELECT to_timestamp(1700000000)"), None);
}

#[test]
fn jsonb_is_json() {
    assert_eq!(
        rw("CREATE TABLE t (d jsonb NOT NULL DEFAULT '{}'::jsonb, e JSONB[])"),
        "CREATE TABLE t (d JSON NOT NULL DEFAULT '{}'::JSON, e JSON[])"
    );
    assert_eq!(
        rw("SELECT jsonb_build_object('k', 1), jsonb_agg(x ORDER BY x), to_jsonb(y), t.jsonb FROM t"),
        "SELECT json_object('k', 1), to_json(list(x ORDER BY x)), to_json(y), t.jsonb FROM t"
    );
}

#[test]
fn similar_to_reads_sql_wildcards() {
    assert_eq!(
        rw("SELECT s SIMILAR TO 'a%b_c.d', s NOT SIMILAR TO '(x|y)%' FROM t"),
        "SELECT s SIMILAR TO 'a.*b.c\\.d', s NOT SIMILAR TO '(x|y).*' FROM t"
    );
    assert_eq!(
        rw("SELECT s SIMILAR TO '100\\%'"),
        "SELECT s SIMILAR TO '100\\%'"
    );
    assert_eq!(
        rewrite("SELECT s SIMILAR TO p, s SIMILAR TO 'a#%' ESCAPE '#'"),
        None
    );
}
