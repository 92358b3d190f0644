//! Tests against a real in-memory DuckDB 2.0: which Arrow layouts it produces for every type
//! (`test_all_types()`), that all of them encode, and that the text we send matches what
//! PostgreSQL prints for the same values.

use duckdb::arrow::datatypes::DataType;
use duckdb::arrow::record_batch::RecordBatch;
use duckdb::Connection;

use super::*;

fn describe(c: &Connection, sql: &str) -> Vec<(String, String)> {
    let mut st = c.prepare(&format!("DESCRIBE {sql}")).unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap();
    rows.map(|r| r.unwrap()).collect()
}

fn batches(c: &Connection, sql: &str) -> Vec<RecordBatch> {
    let mut st = c.prepare(sql).unwrap();
    let arrow = st.query_arrow([]).unwrap();
    arrow.collect()
}

/// Splits DataRow bodies into column values.
fn split_row(row: &[u8], ncols: usize) -> Vec<Option<Vec<u8>>> {
    let mut out = Vec::with_capacity(ncols);
    let mut pos = 0;
    for _ in 0..ncols {
        let len = i32::from_be_bytes(row[pos..pos + 4].try_into().unwrap());
        pos += 4;
        if len < 0 {
            out.push(None);
        } else {
            out.push(Some(row[pos..pos + len as usize].to_vec()));
            pos += len as usize;
        }
    }
    assert_eq!(pos, row.len(), "row body fully consumed");
    out
}

/// Runs `sql`, encodes every row in `format` and returns the values as strings (lossy).
fn query(c: &Connection, sql: &str, format: Format) -> Result<Vec<Vec<Option<String>>>, TypeError> {
    let types: Vec<(DuckType, Format)> = describe(c, sql)
        .into_iter()
        .map(|(_, t)| (DuckType::parse(&t), format))
        .collect();
    let mut rows = Vec::new();
    for b in batches(c, sql) {
        encode_batch(&b, &types, &mut rows)?;
    }
    Ok(rows
        .iter()
        .map(|r| {
            split_row(r, types.len())
                .into_iter()
                .map(|v| v.map(|b| String::from_utf8_lossy(&b).into_owned()))
                .collect()
        })
        .collect())
}

fn one_row_text(c: &Connection, sql: &str) -> Vec<Option<String>> {
    let mut rows = query(c, sql, Format::Text).unwrap();
    assert_eq!(rows.len(), 1, "{sql}");
    rows.remove(0)
}

#[test]
fn test_all_types_every_column_encodes() {
    check_all_types(false);
}

/// The same with `arrow_lossless_conversion`, where UUID, HUGEINT, TIMETZ, BOOLEAN, BIT and
/// BIGNUM arrive in DuckDB's extension layouts.
#[test]
fn test_all_types_every_column_encodes_lossless() {
    check_all_types(true);
}

fn check_all_types(lossless: bool) {
    let c = Connection::open_in_memory().unwrap();
    if lossless {
        c.execute_batch("SET arrow_lossless_conversion = true")
            .unwrap();
    }
    let sql = "SELECT * FROM test_all_types()";
    let cols = describe(&c, sql);
    let bs = batches(&c, sql);
    let schema = bs[0].schema();
    let mut report = String::new();
    let mut binary_failures = Vec::new();
    for (i, (name, type_name)) in cols.iter().enumerate() {
        let ty = DuckType::parse(type_name);
        let arrow = schema.field(i).data_type().clone();
        report.push_str(&format!("{name:28} {type_name:60} {arrow:?}\n"));
        for b in &bs {
            let one = b.project(&[i]).unwrap();
            let mut rows = Vec::new();
            encode_batch(&one, &[(ty.clone(), Format::Text)], &mut rows)
                .unwrap_or_else(|e| panic!("text {name} ({type_name}, {arrow:?}): {e}"));
            for r in &rows {
                let v = split_row(r, 1).remove(0);
                report.push_str(&format!(
                    "    {}\n",
                    v.map(|b| String::from_utf8_lossy(&b).into_owned())
                        .unwrap_or_else(|| "NULL".into())
                ));
            }
            let mut rows = Vec::new();
            if let Err(e) = encode_batch(&one, &[(ty.clone(), Format::Binary)], &mut rows) {
                binary_failures.push((name.clone(), e));
            }
        }
    }
    println!("{report}");
    for (name, e) in &binary_failures {
        println!("binary {name}: {e}");
    }
    // Two things have no binary form: lists whose sub-lists differ in length (sent as JSON in
    // text), and DuckDB's extreme dates/timestamps, which lie outside PostgreSQL's range (it
    // reports them out of range too). Everything else must encode.
    for (name, e) in &binary_failures {
        let jagged = matches!(e, TypeError::Unsupported(m) if m.contains("differ in length"))
            && (name.contains("nested") || name.contains("list") || name.contains("array"));
        let beyond_pg = matches!(e, TypeError::OutOfRange { .. })
            && (name.starts_with("date") || name.starts_with("timestamp"));
        assert!(jagged || beyond_pg, "binary {name}: {e}");
    }
}

#[test]
fn duckdb_type_names_parse() {
    let c = Connection::open_in_memory().unwrap();
    let cols = describe(&c, "SELECT * FROM test_all_types()");
    let others: Vec<String> = cols
        .iter()
        .filter_map(|(n, t)| match DuckType::parse(t) {
            DuckType::Other(_) => Some(format!("{n}: {t}")),
            _ => None,
        })
        .collect();
    // GEOMETRY and TUPLE have no PostgreSQL counterpart; they travel as text (TUPLE as JSON).
    assert!(
        others
            .iter()
            .all(|o| o.starts_with("geometry") || o.starts_with("tuple")),
        "{others:?}"
    );
    // sql_name() must be accepted by DuckDB for every parsed type.
    for (name, t) in &cols {
        let ty = DuckType::parse(t);
        // ENUM needs its values and an empty STRUCT cannot be spelled in a CAST.
        if matches!(&ty, DuckType::Other(_) | DuckType::Enum)
            || matches!(&ty, DuckType::Struct(f) if f.is_empty())
        {
            continue;
        }
        let sql = format!("SELECT CAST(NULL AS {})", ty.sql_name());
        c.prepare(&sql)
            .unwrap_or_else(|e| panic!("{name}: {sql}: {e}"));
    }
}

#[test]
fn arrow_layouts_duckdb_produces() {
    let c = Connection::open_in_memory().unwrap();
    let b = &batches(
        &c,
        "SELECT 1::HUGEINT h, 1::UHUGEINT uh, gen_random_uuid() u, '{}'::JSON j, 'x'::BLOB b, \
         '101'::BIT bit, 1::BIGNUM v, TIMETZ '01:02:03+04' ttz, TIMESTAMPTZ '2024-01-01' tz, \
         1.5::DECIMAL(4,1) d, INTERVAL 1 DAY i, [1] l, {'a': 1} s, MAP {'k': 1} m",
    )[0];
    let types: Vec<DataType> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    println!("{types:?}");
    assert_eq!(types[0], DataType::Decimal128(38, 0));
    assert_eq!(types[1], DataType::Decimal128(38, 0));
    assert_eq!(types[2], DataType::Utf8);
    assert_eq!(types[3], DataType::Utf8);
    assert_eq!(types[4], DataType::Binary);
    assert_eq!(types[5], DataType::Binary);
    assert_eq!(types[6], DataType::Binary);
    assert!(matches!(types[7], DataType::Time64(_)));
    assert!(matches!(types[8], DataType::Timestamp(_, Some(_))));
    assert_eq!(types[9], DataType::Decimal128(4, 1));
    assert!(matches!(types[10], DataType::Interval(_)));
    assert!(matches!(types[11], DataType::List(_)));
    assert!(matches!(types[12], DataType::Struct(_)));
    assert!(matches!(types[13], DataType::Map(..)));
}

/// Values whose PostgreSQL text output was checked on a PostgreSQL 15 server (TimeZone UTC).
#[test]
fn text_matches_postgres() {
    let c = Connection::open_in_memory().unwrap();
    let cases: &[(&str, &str)] = &[
        ("42::INTEGER", "42"),
        ("(-32768)::SMALLINT", "-32768"),
        ("true", "t"),
        ("12.340::DECIMAL(5,3)", "12.340"),
        ("(-0.005)::DECIMAL(5,3)", "-0.005"),
        ("0.1::DOUBLE", "0.1"),
        ("1e20::DOUBLE", "1e+20"),
        ("1.5e-7::DOUBLE", "1.5e-07"),
        ("'NaN'::DOUBLE", "NaN"),
        ("'-inf'::DOUBLE", "-Infinity"),
        ("'-0'::DOUBLE", "-0"),
        ("0.1::FLOAT", "0.1"),
        ("1e6::FLOAT", "1e+06"),
        ("18446744073709551615::UBIGINT", "18446744073709551615"),
        (
            "340282366920938463463374607431768211455::UHUGEINT",
            "340282366920938463463374607431768211455",
        ),
        (
            "(-170141183460469231731687303715884105727)::HUGEINT",
            "-170141183460469231731687303715884105727",
        ),
        ("DATE '2024-01-02'", "2024-01-02"),
        ("'0044-03-15 (BC)'::DATE", "0044-03-15 BC"),
        ("'infinity'::DATE", "infinity"),
        ("'-infinity'::DATE", "-infinity"),
        ("TIME '03:04:05'", "03:04:05"),
        ("TIME '03:04:05.12'", "03:04:05.12"),
        (
            "TIMESTAMP '2024-01-02 03:04:05.123'",
            "2024-01-02 03:04:05.123",
        ),
        ("TIMESTAMP '2024-01-02 03:04:05'", "2024-01-02 03:04:05"),
        ("'infinity'::TIMESTAMP", "infinity"),
        (
            "TIMESTAMP_NS '2024-01-02 03:04:05.123456789'",
            "2024-01-02 03:04:05.123456",
        ),
        ("TIMESTAMP_S '2024-01-02 03:04:05'", "2024-01-02 03:04:05"),
        (
            "TIMESTAMP_MS '2024-01-02 03:04:05.5'",
            "2024-01-02 03:04:05.5",
        ),
        (
            "TIMESTAMPTZ '2024-01-02 03:04:05+00'",
            "2024-01-02 03:04:05+00",
        ),
        (
            "TIMESTAMPTZ '2024-01-02 03:04:05.5+02'",
            "2024-01-02 01:04:05.5+00",
        ),
        (
            "INTERVAL '1 year 2 months 3 days 04:05:06.5'",
            "1 year 2 mons 3 days 04:05:06.5",
        ),
        ("-INTERVAL '1 second'", "-00:00:01"),
        ("INTERVAL '0 seconds'", "00:00:00"),
        ("INTERVAL '-1 month 2 days'", "-1 mons +2 days"),
        ("'\\x0A\\xFF'::BLOB", "\\x0aff"),
        (
            "'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'::UUID",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ),
        ("'{\"a\": 1}'::JSON", "{\"a\": 1}"),
        ("'101'::BIT", "101"),
        ("256::BIGNUM", "256"),
        (
            "(-123456789012345678901234567890)::BIGNUM",
            "-123456789012345678901234567890",
        ),
        ("[1, 2, NULL]", "{1,2,NULL}"),
        ("['a b', 'c\"d', '', 'NULL']", r#"{"a b","c\"d","","NULL"}"#),
        ("[]::INTEGER[]", "{}"),
        ("[[1, 2], [3, 4]]", "{{1,2},{3,4}}"),
        (
            "[TIMESTAMP '2024-01-02 03:04:05']",
            r#"{"2024-01-02 03:04:05"}"#,
        ),
        ("[1.5, 2]::DOUBLE[2]", "{1.5,2}"),
        ("[true, false]", "{t,f}"),
        ("['\\x0A'::BLOB]", r#"{"\\x0a"}"#),
    ];
    for (expr, want) in cases {
        let got = one_row_text(&c, &format!("SELECT {expr}"));
        assert_eq!(got[0].as_deref(), Some(*want), "{expr}");
    }
    assert_eq!(one_row_text(&c, "SELECT NULL::INTEGER")[0], None);
    assert_eq!(one_row_text(&c, "SELECT NULL")[0], None);
}

/// STRUCT, MAP and UNION (and lists of them) are sent as json; the text must be what
/// DuckDB's own `to_json` gives.
#[test]
fn composites_match_to_json() {
    let c = Connection::open_in_memory().unwrap();
    let exprs = [
        "{'a': 1, 'b': 'x\"y', 'c': NULL}",
        "{'d': DATE '2024-01-02', 'n': 1.5::DECIMAL(4,2), 'l': [1, 2]}",
        "MAP {'k': 1, 'n': NULL}",
        "[{'a': 1}, NULL, {'a': 3}]",
        "union_value(n := 7)::UNION(n INTEGER, s VARCHAR)",
        "{'t': true, 'f': 2.5::DOUBLE, 'u': 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID}",
    ];
    for e in exprs {
        let row = one_row_text(&c, &format!("SELECT {e}, to_json({e})::VARCHAR"));
        assert_eq!(row[0], row[1], "{e}");
    }
}

#[test]
fn enums_and_lossless_export() {
    let c = Connection::open_in_memory().unwrap();
    c.execute_batch("CREATE TYPE mood AS ENUM ('sad', 'happy')")
        .unwrap();
    let row = one_row_text(&c, "SELECT 'happy'::mood, ['sad', 'happy']::mood[]");
    assert_eq!(row, vec![Some("happy".into()), Some("{sad,happy}".into())]);

    // With arrow_lossless_conversion DuckDB keeps TIMETZ offsets, UUID bytes and HUGEINT bits
    // in extension types; the same text must come out.
    c.execute_batch("SET arrow_lossless_conversion = true")
        .unwrap();
    let row = one_row_text(
        &c,
        "SELECT TIMETZ '03:04:05+05:30', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID, \
         (-7)::HUGEINT, 340282366920938463463374607431768211455::UHUGEINT, true, '{}'::JSON, \
         '101'::BIT",
    );
    assert_eq!(
        row,
        vec![
            Some("03:04:05+05:30".into()),
            Some("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".into()),
            Some("-7".into()),
            Some("340282366920938463463374607431768211455".into()),
            Some("t".into()),
            Some("{}".into()),
            Some("101".into()),
        ]
    );
}

#[test]
fn binary_round_trips_through_decode_param() {
    let c = Connection::open_in_memory().unwrap();
    let sql = "SELECT 42::INTEGER, 12.340::DECIMAL(5,3), DATE '2024-01-02', \
               TIMESTAMP '2024-01-02 03:04:05.123', INTERVAL '1 year 2 days 00:00:01', \
               'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::UUID, [1, NULL]::BIGINT[], 'x'::VARCHAR";
    let types: Vec<DuckType> = describe(&c, sql)
        .into_iter()
        .map(|(_, t)| DuckType::parse(&t))
        .collect();
    let cols: Vec<(DuckType, Format)> = types.iter().map(|t| (t.clone(), Format::Binary)).collect();
    let mut rows = Vec::new();
    for b in batches(&c, sql) {
        encode_batch(&b, &cols, &mut rows).unwrap();
    }
    let values = split_row(&rows[0], cols.len());
    let decoded: Vec<ParamValue> = values
        .iter()
        .zip(&types)
        .map(|(v, t)| decode_param(v.as_deref(), Format::Binary, pg_type(t).oid, t).unwrap())
        .collect();
    assert_eq!(
        decoded,
        vec![
            ParamValue::Int(42),
            ParamValue::Decimal {
                value: 12340,
                width: 5,
                scale: 3
            },
            ParamValue::Date(19_724),
            ParamValue::Timestamp(1_704_164_645_123_000),
            ParamValue::Interval {
                months: 12,
                days: 2,
                micros: 1_000_000
            },
            ParamValue::Uuid(0xa0eebc999c0b4ef8bb6d6bb9bd380a11),
            ParamValue::List(vec![ParamValue::Int(1), ParamValue::Null]),
            ParamValue::Text("x".into()),
        ]
    );
}

/// Encoding throughput against reading the same result in-process. Run with
/// `cargo test --release --lib types::duckdb_tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn throughput() {
    use std::time::Instant;
    let c = Connection::open_in_memory().unwrap();
    let rows: usize = std::env::var("DUCKMV_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    c.execute_batch(&format!(
        "CREATE TABLE t AS SELECT i::BIGINT AS id, (i * 1.5)::DOUBLE AS x, \
         'name ' || i AS s, DATE '2024-01-01' + (i % 1000)::INTEGER AS d, \
         (i % 100)::DECIMAL(10,2) AS m FROM range({rows}) r(i)"
    ))
    .unwrap();
    let sql = "SELECT * FROM t";
    let types: Vec<DuckType> = describe(&c, sql)
        .into_iter()
        .map(|(_, t)| DuckType::parse(&t))
        .collect();
    for format in [Format::Text, Format::Binary] {
        let cols: Vec<(DuckType, Format)> = types.iter().map(|t| (t.clone(), format)).collect();
        let start = Instant::now();
        let mut n = 0usize;
        let mut st = c.prepare(sql).unwrap();
        for b in st.stream_arrow([]).unwrap() {
            n += b.unwrap().num_rows();
        }
        let read = start.elapsed();
        let start = Instant::now();
        let mut bytes = 0usize;
        let mut st = c.prepare(sql).unwrap();
        for b in st.stream_arrow([]).unwrap() {
            let mut out = Vec::new();
            encode_batch(&b.unwrap(), &cols, &mut out).unwrap();
            bytes += out.iter().map(|r| r.len()).sum::<usize>();
        }
        let both = start.elapsed();
        println!(
            "{format:?}: {n} rows; read {read:?}, read+encode {both:?} ({bytes} bytes); ratio {:.2}",
            read.as_secs_f64() / both.as_secs_f64()
        );
        // Encoding alone, over batches already in memory.
        let mut st = c.prepare(sql).unwrap();
        let all: Vec<RecordBatch> = st.stream_arrow([]).unwrap().map(|b| b.unwrap()).collect();
        let start = Instant::now();
        for b in &all {
            let mut out = Vec::new();
            encode_batch(b, &cols, &mut out).unwrap();
        }
        let enc = start.elapsed();
        println!(
            "{format:?}: encode only {enc:?} = {:.1} ns/row",
            enc.as_nanos() as f64 / n as f64
        );
    }
}
