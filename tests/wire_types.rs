//! Types over the extended protocol with tokio-postgres, which sends
//! parameters and reads results in binary: every PostgreSQL type of issue 2 as
//! a parameter and as a result (value and column type OID), NULLs, and the
//! DuckDB-only types mapped to their PostgreSQL counterparts.

mod common;

use std::error::Error;
use std::fmt::{Debug, Write as _};

use bytes::{BufMut, BytesMut};
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};
use tokio_postgres::Client;

use common::TestServer;

/// PostgreSQL `interval` in its binary layout (tokio-postgres has no type
/// for it).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Interval {
    months: i32,
    days: i32,
    micros: i64,
}

impl ToSql for Interval {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.put_i64(self.micros);
        out.put_i32(self.days);
        out.put_i32(self.months);
        Ok(IsNull::No)
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
    to_sql_checked!();
}

impl<'a> FromSql<'a> for Interval {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        if raw.len() != 16 {
            return Err(format!("interval of {} bytes", raw.len()).into());
        }
        Ok(Interval {
            micros: i64::from_be_bytes(raw[0..8].try_into()?),
            days: i32::from_be_bytes(raw[8..12].try_into()?),
            months: i32::from_be_bytes(raw[12..16].try_into()?),
        })
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
}

/// A binary `numeric` decoded to its exact decimal text, for values wider
/// than rust_decimal holds (HUGEINT, UBIGINT, DECIMAL(38,x)).
#[derive(Debug, PartialEq)]
struct NumericText(String);

impl<'a> FromSql<'a> for NumericText {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        let word = |i: usize| i16::from_be_bytes([raw[2 * i], raw[2 * i + 1]]);
        let (ndigits, weight, sign, dscale) = (word(0), word(1), word(2) as u16, word(3));
        if raw.len() != 8 + 2 * ndigits as usize {
            return Err("numeric length mismatch".into());
        }
        if sign == 0xC000 {
            return Ok(NumericText("NaN".into()));
        }
        let digit = |i: i32| -> i16 {
            if i < 0 || i >= ndigits as i32 {
                0
            } else {
                word(4 + i as usize)
            }
        };
        let mut s = String::new();
        if sign == 0x4000 {
            s.push('-');
        }
        if weight < 0 {
            s.push('0');
        } else {
            for i in 0..=weight as i32 {
                if i == 0 {
                    write!(s, "{}", digit(i))?;
                } else {
                    write!(s, "{:04}", digit(i))?;
                }
            }
        }
        if dscale > 0 {
            let mut frac = String::new();
            let mut i = weight as i32 + 1;
            while frac.len() < dscale as usize {
                write!(frac, "{:04}", digit(i))?;
                i += 1;
            }
            frac.truncate(dscale as usize);
            s.push('.');
            s.push_str(&frac);
        }
        Ok(NumericText(s))
    }
    fn accepts(ty: &Type) -> bool {
        *ty == Type::NUMERIC
    }
}

fn num(s: &str) -> NumericText {
    NumericText(s.to_owned())
}

/// `select $1::CAST` with `value` as a binary parameter: checks the inferred
/// parameter type, the result column type and the value that comes back.
async fn roundtrip<T>(client: &Client, cast: &str, types: &[Type], value: T) -> Result<(), String>
where
    T: ToSql + Sync + for<'a> FromSql<'a> + PartialEq + Debug,
{
    let sql = format!("select $1::{cast} as v");
    let stmt = client
        .prepare(&sql)
        .await
        .map_err(|e| format!("{cast}: prepare failed: {e:?}"))?;
    if stmt.params().len() != 1 || !types.contains(&stmt.params()[0]) {
        return Err(format!(
            "{cast}: parameter types {:?}, want one of {types:?}",
            stmt.params()
        ));
    }
    let col = stmt.columns()[0].type_();
    if !types.contains(col) {
        return Err(format!("{cast}: result type {col}, want one of {types:?}"));
    }
    let row = client
        .query_one(&stmt, &[&value])
        .await
        .map_err(|e| format!("{cast}: query failed: {e:?}"))?;
    let got: T = row
        .try_get(0)
        .map_err(|e| format!("{cast}: decoding result failed: {e:?}"))?;
    if got != value {
        return Err(format!("{cast}: sent {value:?}, got back {got:?}"));
    }
    // NULL of the same type.
    let row = client
        .query_one(&stmt, &[&None::<T>])
        .await
        .map_err(|e| format!("{cast}: NULL query failed: {e:?}"))?;
    let got: Option<T> = row
        .try_get(0)
        .map_err(|e| format!("{cast}: decoding NULL failed: {e:?}"))?;
    if got.is_some() {
        return Err(format!("{cast}: sent NULL, got back {got:?}"));
    }
    Ok(())
}

/// Runs `sql` (no parameters) and checks the first column's type and value.
async fn result_is<T>(client: &Client, sql: &str, types: &[Type], want: T) -> Result<(), String>
where
    T: for<'a> FromSql<'a> + PartialEq + Debug,
{
    let stmt = client
        .prepare(sql)
        .await
        .map_err(|e| format!("`{sql}`: prepare failed: {e:?}"))?;
    let col = stmt.columns()[0].type_();
    if !types.contains(col) {
        return Err(format!("`{sql}`: result type {col}, want one of {types:?}"));
    }
    let row = client
        .query_one(&stmt, &[])
        .await
        .map_err(|e| format!("`{sql}`: query failed: {e:?}"))?;
    let got: T = row
        .try_get(0)
        .map_err(|e| format!("`{sql}`: decoding failed: {e:?}"))?;
    if got != want {
        return Err(format!("`{sql}`: want {want:?}, got {got:?}"));
    }
    Ok(())
}

fn report(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{} type checks failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

const TEXT: &[Type] = &[Type::TEXT, Type::VARCHAR];

fn ts() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2024, 2, 29)
        .unwrap()
        .and_hms_micro_opt(13, 14, 15, 123456)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_parameters_and_results_of_every_type() {
    let server = TestServer::start();
    let c = server.client().await;
    let mut f = Vec::new();
    let mut push = |r: Result<(), String>| {
        if let Err(e) = r {
            f.push(e)
        }
    };

    push(roundtrip(&c, "boolean", &[Type::BOOL], true).await);
    push(roundtrip(&c, "boolean", &[Type::BOOL], false).await);
    push(roundtrip(&c, "smallint", &[Type::INT2], -12345i16).await);
    push(roundtrip(&c, "integer", &[Type::INT4], i32::MIN).await);
    push(roundtrip(&c, "bigint", &[Type::INT8], i64::MAX).await);
    push(roundtrip(&c, "real", &[Type::FLOAT4], 1.5f32).await);
    push(roundtrip(&c, "double", &[Type::FLOAT8], -2.25e300f64).await);
    push(
        roundtrip(
            &c,
            "decimal(18,4)",
            &[Type::NUMERIC],
            Decimal::from_str_exact("-12345678901234.5678").unwrap(),
        )
        .await,
    );
    push(
        roundtrip(
            &c,
            "decimal(10,2)",
            &[Type::NUMERIC],
            Decimal::from_str_exact("0.05").unwrap(),
        )
        .await,
    );
    push(roundtrip(&c, "text", TEXT, "héllo, wörld ✓".to_owned()).await);
    push(roundtrip(&c, "varchar", TEXT, String::new()).await);
    push(roundtrip(&c, "blob", &[Type::BYTEA], vec![0u8, 1, 0xff, b'\\', b'x']).await);
    push(
        roundtrip(
            &c,
            "date",
            &[Type::DATE],
            NaiveDate::from_ymd_opt(1999, 12, 31).unwrap(),
        )
        .await,
    );
    push(
        roundtrip(
            &c,
            "time",
            &[Type::TIME],
            NaiveTime::from_hms_micro_opt(23, 59, 58, 999999).unwrap(),
        )
        .await,
    );
    push(roundtrip(&c, "timestamp", &[Type::TIMESTAMP], ts()).await);
    push(
        roundtrip(
            &c,
            "timestamp",
            &[Type::TIMESTAMP],
            NaiveDate::from_ymd_opt(1960, 1, 1)
                .unwrap()
                .and_hms_opt(0, 0, 1)
                .unwrap(),
        )
        .await,
    );
    push(
        roundtrip(
            &c,
            "timestamptz",
            &[Type::TIMESTAMPTZ],
            DateTime::<Utc>::from_naive_utc_and_offset(ts(), Utc),
        )
        .await,
    );
    push(
        roundtrip(
            &c,
            "interval",
            &[Type::INTERVAL],
            Interval {
                months: 14,
                days: 3,
                micros: 4 * 3_600_000_000 + 5,
            },
        )
        .await,
    );
    push(
        roundtrip(
            &c,
            "uuid",
            &[Type::UUID],
            uuid::Uuid::parse_str("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap(),
        )
        .await,
    );
    push(
        roundtrip(
            &c,
            "json",
            &[Type::JSON],
            serde_json::json!({"a": [1, 2.5, null], "b": {"c": "d"}}),
        )
        .await,
    );
    push(roundtrip(&c, "integer[]", &[Type::INT4_ARRAY], vec![1i32, -2, 3]).await);
    push(
        roundtrip(
            &c,
            "bigint[]",
            &[Type::INT8_ARRAY],
            vec![Some(1i64), None, Some(3)],
        )
        .await,
    );
    push(
        roundtrip(
            &c,
            "varchar[]",
            &[Type::TEXT_ARRAY, Type::VARCHAR_ARRAY],
            vec!["a".to_owned(), "b,c".to_owned(), "\"q\"".to_owned()],
        )
        .await,
    );
    push(roundtrip(&c, "double[]", &[Type::FLOAT8_ARRAY], Vec::<f64>::new()).await);
    report(f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_type_round_trips_through_a_table() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute(
        "create table every(b boolean, i2 smallint, i4 integer, i8 bigint, f4 real, f8 double, \
         n decimal(18,4), t text, bin blob, d date, tm time, ts timestamp, tz timestamptz, \
         iv interval, u uuid, j json, ai integer[], av varchar[])",
    )
    .await
    .unwrap();
    let n = Decimal::from_str_exact("3.1416").unwrap();
    let d = NaiveDate::from_ymd_opt(2001, 2, 3).unwrap();
    let tm = NaiveTime::from_hms_micro_opt(4, 5, 6, 7).unwrap();
    let tz = DateTime::<Utc>::from_naive_utc_and_offset(ts(), Utc);
    let iv = Interval {
        months: 1,
        days: 2,
        micros: 3,
    };
    let u = uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);
    let j = serde_json::json!({"k": [true, false]});
    let ai = vec![7i32, 8];
    let at = vec!["x".to_owned(), "y".to_owned()];
    // Parameter types are inferred from the target columns.
    let insert = c
        .prepare(
            "insert into every values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
             $14, $15, $16, $17, $18)",
        )
        .await
        .unwrap();
    let n_rows = c
        .execute(
            &insert,
            &[
                &true,
                &7i16,
                &70000i32,
                &(1i64 << 40),
                &0.25f32,
                &0.125f64,
                &n,
                &"txt",
                &vec![1u8, 2],
                &d,
                &tm,
                &ts(),
                &tz,
                &iv,
                &u,
                &j,
                &ai,
                &at,
            ],
        )
        .await
        .unwrap();
    assert_eq!(n_rows, 1);
    // And a row of NULLs through the same statement.
    let nulls: Vec<Option<i32>> = vec![None; 18];
    let params: Vec<&(dyn ToSql + Sync)> = vec![
        &None::<bool>,
        &None::<i16>,
        &nulls[0],
        &None::<i64>,
        &None::<f32>,
        &None::<f64>,
        &None::<Decimal>,
        &None::<String>,
        &None::<Vec<u8>>,
        &None::<NaiveDate>,
        &None::<NaiveTime>,
        &None::<NaiveDateTime>,
        &None::<DateTime<Utc>>,
        &None::<Interval>,
        &None::<uuid::Uuid>,
        &None::<serde_json::Value>,
        &None::<Vec<i32>>,
        &None::<Vec<String>>,
    ];
    c.execute(&insert, &params).await.unwrap();

    let select = c
        .prepare("select * from every order by b nulls last")
        .await
        .unwrap();
    let want_types = [
        Type::BOOL,
        Type::INT2,
        Type::INT4,
        Type::INT8,
        Type::FLOAT4,
        Type::FLOAT8,
        Type::NUMERIC,
        Type::TEXT,
        Type::BYTEA,
        Type::DATE,
        Type::TIME,
        Type::TIMESTAMP,
        Type::TIMESTAMPTZ,
        Type::INTERVAL,
        Type::UUID,
        Type::JSON,
        Type::INT4_ARRAY,
        Type::TEXT_ARRAY,
    ];
    let got_types: Vec<Type> = select.columns().iter().map(|c| c.type_().clone()).collect();
    // VARCHAR and TEXT are both fine for strings.
    let normalize = |t: &Type| match *t {
        Type::VARCHAR => Type::TEXT,
        Type::VARCHAR_ARRAY => Type::TEXT_ARRAY,
        _ => t.clone(),
    };
    assert_eq!(
        got_types.iter().map(normalize).collect::<Vec<_>>(),
        want_types.to_vec()
    );

    let rows = c.query(&select, &[]).await.unwrap();
    assert_eq!(rows.len(), 2);
    let r = &rows[0];
    assert!(r.get::<_, bool>(0));
    assert_eq!(r.get::<_, i16>(1), 7);
    assert_eq!(r.get::<_, i32>(2), 70000);
    assert_eq!(r.get::<_, i64>(3), 1 << 40);
    assert_eq!(r.get::<_, f32>(4), 0.25);
    assert_eq!(r.get::<_, f64>(5), 0.125);
    assert_eq!(r.get::<_, Decimal>(6), n);
    assert_eq!(r.get::<_, String>(7), "txt");
    assert_eq!(r.get::<_, Vec<u8>>(8), vec![1, 2]);
    assert_eq!(r.get::<_, NaiveDate>(9), d);
    assert_eq!(r.get::<_, NaiveTime>(10), tm);
    assert_eq!(r.get::<_, NaiveDateTime>(11), ts());
    assert_eq!(r.get::<_, DateTime<Utc>>(12), tz);
    assert_eq!(r.get::<_, Interval>(13), iv);
    assert_eq!(r.get::<_, uuid::Uuid>(14), u);
    assert_eq!(r.get::<_, serde_json::Value>(15), j);
    assert_eq!(r.get::<_, Vec<i32>>(16), ai);
    assert_eq!(r.get::<_, Vec<String>>(17), at);
    let null_row = &rows[1];
    for i in 0..18 {
        assert!(
            null_row
                .try_get::<_, Option<NullProbe>>(i)
                .unwrap()
                .is_none(),
            "column {i} should be NULL"
        );
    }
}

/// Accepts any type and only tells NULL from not NULL.
struct NullProbe;

impl<'a> FromSql<'a> for NullProbe {
    fn from_sql(_: &Type, _: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        Ok(NullProbe)
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duckdb_integer_types_map_to_wider_postgres_types() {
    let server = TestServer::start();
    let c = server.client().await;
    let mut f = Vec::new();
    let mut push = |r: Result<(), String>| {
        if let Err(e) = r {
            f.push(e)
        }
    };
    push(result_is(&c, "select (-5)::tinyint", &[Type::INT2], -5i16).await);
    push(result_is(&c, "select 200::utinyint", &[Type::INT2], 200i16).await);
    push(result_is(&c, "select 60000::usmallint", &[Type::INT4], 60000i32).await);
    push(
        result_is(
            &c,
            "select 4000000000::uinteger",
            &[Type::OID],
            4_000_000_000u32,
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select 18446744073709551615::ubigint",
            &[Type::NUMERIC],
            num("18446744073709551615"),
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select (-170141183460469231731687303715884105728)::hugeint",
            &[Type::NUMERIC],
            num("-170141183460469231731687303715884105728"),
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select 340282366920938463463374607431768211455::uhugeint",
            &[Type::NUMERIC],
            num("340282366920938463463374607431768211455"),
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select 12345678901234567890123456.789012345678::decimal(38,12)",
            &[Type::NUMERIC],
            num("12345678901234567890123456.789012345678"),
        )
        .await,
    );
    push(result_is(&c, "select 1.50", &[Type::NUMERIC], num("1.50")).await);
    push(
        result_is(
            &c,
            "select (-0.001)::decimal(4,3)",
            &[Type::NUMERIC],
            num("-0.001"),
        )
        .await,
    );
    push(result_is(&c, "select 1.5::float", &[Type::FLOAT4], 1.5f32).await);
    report(f);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_and_enum_types_map_to_arrays_json_and_text() {
    let server = TestServer::start();
    let c = server.client().await;
    c.batch_execute("create type mood as enum ('sad', 'ok', 'happy')")
        .await
        .unwrap();
    let mut f = Vec::new();
    let mut push = |r: Result<(), String>| {
        if let Err(e) = r {
            f.push(e)
        }
    };
    push(
        result_is(
            &c,
            "select [1, 2, NULL]",
            &[Type::INT4_ARRAY],
            vec![Some(1i32), Some(2), None],
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select ['a', 'b']",
            &[Type::TEXT_ARRAY, Type::VARCHAR_ARRAY],
            vec!["a".to_owned(), "b".to_owned()],
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select []::bigint[]",
            &[Type::INT8_ARRAY],
            Vec::<i64>::new(),
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select {'a': 1, 'b': 'x'}",
            &[Type::JSON],
            serde_json::json!({"a": 1, "b": "x"}),
        )
        .await,
    );
    push(
        result_is(
            &c,
            "select map {'k': 1, 'l': 2}",
            &[Type::JSON],
            serde_json::json!({"k": 1, "l": 2}),
        )
        .await,
    );
    push(result_is(&c, "select 'ok'::mood", TEXT, "ok".to_owned()).await);
    // A UNION may come back as its value or tagged with its member name.
    match c
        .query_one(
            "select union_value(num := 2)::union(num integer, str varchar)",
            &[],
        )
        .await
    {
        Ok(row) => match row.try_get::<_, serde_json::Value>(0) {
            Ok(v) if v == serde_json::json!(2) || v == serde_json::json!({"num": 2}) => {}
            other => f.push(format!(
                "union: want json 2 or {{\"num\":2}}, got {other:?}"
            )),
        },
        Err(e) => f.push(format!("union: query failed: {e:?}")),
    }
    report(f);
}
