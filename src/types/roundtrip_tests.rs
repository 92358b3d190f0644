//! Encoder tests over hand-built Arrow arrays (every layout DuckDB produces, plus the obvious
//! alternatives), and round trips: encode binary → decode_param → the same value.

use crate::sqlstate::SqlState;
use std::sync::Arc;

use bytes::BytesMut;
use duckdb::arrow::array::*;
use duckdb::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use duckdb::arrow::datatypes::*;
use duckdb::arrow::record_batch::RecordBatch;

use super::calendar::*;
use super::*;
use DuckType as T;
use ParamValue as P;

/// Splits DataRow bodies of a one-column batch into values.
fn values(rows: &[BytesMut]) -> Vec<Option<Vec<u8>>> {
    rows.iter()
        .map(|r| {
            let len = i32::from_be_bytes(r[..4].try_into().unwrap());
            if len < 0 {
                assert_eq!(r.len(), 4);
                None
            } else {
                assert_eq!(r.len(), 4 + len as usize, "length prefix");
                Some(r[4..].to_vec())
            }
        })
        .collect()
}

fn encode(
    array: ArrayRef,
    ty: &DuckType,
    format: Format,
) -> Result<Vec<Option<Vec<u8>>>, TypeError> {
    let schema = Schema::new(vec![Field::new("c", array.data_type().clone(), true)]);
    let batch = RecordBatch::try_new(Arc::new(schema), vec![array]).unwrap();
    let mut out = Vec::new();
    encode_batch(&batch, &[(ty.clone(), format)], &mut out)?;
    assert_eq!(out.len(), batch.num_rows());
    Ok(values(&out))
}

fn texts(array: ArrayRef, ty: &DuckType) -> Vec<Option<String>> {
    encode(array, ty, Format::Text)
        .unwrap()
        .into_iter()
        .map(|v| v.map(|b| String::from_utf8(b).unwrap()))
        .collect()
}

/// Encodes in binary and decodes every value back as a parameter of the same type.
fn round_trip(array: ArrayRef, ty: &DuckType) -> Vec<ParamValue> {
    let oid = pg_type(ty).oid;
    encode(array, ty, Format::Binary)
        .unwrap()
        .into_iter()
        .map(|v| decode_param(v.as_deref(), Format::Binary, oid, ty).unwrap())
        .collect()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[test]
fn integers() {
    let a: ArrayRef = Arc::new(Int32Array::from(vec![
        Some(1),
        Some(-2),
        None,
        Some(i32::MAX),
        Some(i32::MIN),
    ]));
    assert_eq!(
        texts(a.clone(), &T::Integer),
        vec![s("1"), s("-2"), None, s("2147483647"), s("-2147483648")]
    );
    assert_eq!(
        round_trip(a, &T::Integer),
        vec![
            P::Int(1),
            P::Int(-2),
            P::Null,
            P::Int(i32::MAX as i64),
            P::Int(i32::MIN as i64)
        ]
    );
    let a: ArrayRef = Arc::new(Int8Array::from(vec![i8::MIN, i8::MAX]));
    let bin = encode(a.clone(), &T::TinyInt, Format::Binary).unwrap();
    assert_eq!(bin[0].as_deref(), Some(&(-128i16).to_be_bytes()[..]));
    assert_eq!(round_trip(a, &T::TinyInt), vec![P::Int(-128), P::Int(127)]);
    let a: ArrayRef = Arc::new(UInt8Array::from(vec![255u8]));
    assert_eq!(round_trip(a, &T::UTinyInt), vec![P::UInt(255)]);
    let a: ArrayRef = Arc::new(UInt16Array::from(vec![65535u16]));
    assert_eq!(
        encode(a.clone(), &T::USmallInt, Format::Binary).unwrap()[0]
            .as_ref()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(round_trip(a, &T::USmallInt), vec![P::UInt(65535)]);
    let a: ArrayRef = Arc::new(UInt32Array::from(vec![u32::MAX]));
    assert_eq!(round_trip(a, &T::UInteger), vec![P::UInt(u32::MAX as u64)]);
    let a: ArrayRef = Arc::new(Int64Array::from(vec![i64::MIN, i64::MAX]));
    assert_eq!(
        round_trip(a, &T::BigInt),
        vec![P::Int(i64::MIN), P::Int(i64::MAX)]
    );
    // UBIGINT is numeric on the wire.
    let a: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX, 0]));
    assert_eq!(
        texts(a.clone(), &T::UBigInt),
        vec![s("18446744073709551615"), s("0")]
    );
    assert_eq!(
        round_trip(a, &T::UBigInt),
        vec![P::UInt(u64::MAX), P::UInt(0)]
    );
}

#[test]
fn booleans_and_nulls() {
    let a: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true), Some(false), None]));
    assert_eq!(texts(a.clone(), &T::Boolean), vec![s("t"), s("f"), None]);
    assert_eq!(
        round_trip(a, &T::Boolean),
        vec![P::Bool(true), P::Bool(false), P::Null]
    );
    // arrow.bool8 (lossless export): an Int8 array.
    let a: ArrayRef = Arc::new(Int8Array::from(vec![1, 0]));
    assert_eq!(texts(a, &T::Boolean), vec![s("t"), s("f")]);
    let a: ArrayRef = Arc::new(NullArray::new(2));
    assert_eq!(texts(a.clone(), &T::Null), vec![None, None]);
    assert_eq!(
        encode(a, &T::Null, Format::Binary).unwrap(),
        vec![None, None]
    );
}

#[test]
fn floats() {
    let a: ArrayRef = Arc::new(Float64Array::from(vec![
        0.1,
        f64::INFINITY,
        -0.0,
        1e20,
        1.5e-7,
    ]));
    assert_eq!(
        texts(a.clone(), &T::Double),
        vec![s("0.1"), s("Infinity"), s("-0"), s("1e+20"), s("1.5e-07")]
    );
    assert_eq!(
        round_trip(a, &T::Double),
        vec![
            P::Double(0.1),
            P::Double(f64::INFINITY),
            P::Double(-0.0),
            P::Double(1e20),
            P::Double(1.5e-7)
        ]
    );
    let a: ArrayRef = Arc::new(Float64Array::from(vec![f64::NAN]));
    assert_eq!(texts(a.clone(), &T::Double), vec![s("NaN")]);
    assert!(matches!(round_trip(a, &T::Double)[0], P::Double(x) if x.is_nan()));
    let a: ArrayRef = Arc::new(Float32Array::from(vec![0.1f32, 1e6, f32::NEG_INFINITY]));
    assert_eq!(
        texts(a.clone(), &T::Float),
        vec![s("0.1"), s("1e+06"), s("-Infinity")]
    );
    assert_eq!(
        round_trip(a, &T::Float),
        vec![P::Float(0.1), P::Float(1e6), P::Float(f32::NEG_INFINITY)]
    );
}

#[test]
fn decimals() {
    let ty = T::Decimal { width: 5, scale: 3 };
    let a: ArrayRef = Arc::new(
        Decimal128Array::from(vec![Some(12340), Some(-5), Some(0), None])
            .with_precision_and_scale(5, 3)
            .unwrap(),
    );
    assert_eq!(
        texts(a.clone(), &ty),
        vec![s("12.340"), s("-0.005"), s("0.000"), None]
    );
    assert_eq!(
        round_trip(a, &ty),
        vec![
            P::Decimal {
                value: 12340,
                width: 5,
                scale: 3
            },
            P::Decimal {
                value: -5,
                width: 5,
                scale: 3
            },
            P::Decimal {
                value: 0,
                width: 5,
                scale: 3
            },
            P::Null
        ]
    );
    // Decimal64 (arrow_output_version ≥ 1.5).
    let a: ArrayRef = Arc::new(
        Decimal64Array::from(vec![-12345i64])
            .with_precision_and_scale(18, 2)
            .unwrap(),
    );
    assert_eq!(
        texts(
            a,
            &T::Decimal {
                width: 18,
                scale: 2
            }
        ),
        vec![s("-123.45")]
    );
    // HUGEINT as Decimal128(38,0), extremes included.
    let a: ArrayRef = Arc::new(
        Decimal128Array::from(vec![i128::MAX, i128::MIN + 1])
            .with_precision_and_scale(38, 0)
            .unwrap(),
    );
    assert_eq!(
        texts(a.clone(), &T::HugeInt),
        vec![
            s("170141183460469231731687303715884105727"),
            s("-170141183460469231731687303715884105727")
        ]
    );
    assert_eq!(
        round_trip(a, &T::HugeInt),
        vec![P::HugeInt(i128::MAX), P::HugeInt(i128::MIN + 1)]
    );
    // UHUGEINT above i128::MAX arrives wrapped to negative.
    let a: ArrayRef = Arc::new(
        Decimal128Array::from(vec![-1i128, 5])
            .with_precision_and_scale(38, 0)
            .unwrap(),
    );
    assert_eq!(
        texts(a.clone(), &T::UHugeInt),
        vec![s("340282366920938463463374607431768211455"), s("5")]
    );
    assert_eq!(
        round_trip(a, &T::UHugeInt),
        vec![
            P::Text("340282366920938463463374607431768211455".into()),
            P::HugeInt(5)
        ]
    );
}

#[test]
fn strings_uuid_json() {
    let a: ArrayRef = Arc::new(StringArray::from(vec![
        Some("a b"),
        Some(""),
        None,
        Some("é"),
    ]));
    assert_eq!(
        texts(a.clone(), &T::Varchar),
        vec![s("a b"), s(""), None, s("é")]
    );
    assert_eq!(
        round_trip(a, &T::Varchar),
        vec![
            P::Text("a b".into()),
            P::Text("".into()),
            P::Null,
            P::Text("é".into())
        ]
    );
    let a: ArrayRef = Arc::new(StringViewArray::from(vec![
        "a string longer than twelve bytes",
    ]));
    assert_eq!(
        texts(a, &T::Varchar),
        vec![s("a string longer than twelve bytes")]
    );
    let a: ArrayRef = Arc::new(LargeStringArray::from(vec!["big"]));
    assert_eq!(texts(a, &T::Varchar), vec![s("big")]);
    let u = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
    let a: ArrayRef = Arc::new(StringArray::from(vec![u]));
    assert_eq!(texts(a.clone(), &T::Uuid), vec![s(u)]);
    assert_eq!(
        round_trip(a, &T::Uuid),
        vec![P::Uuid(0xa0eebc999c0b4ef8bb6d6bb9bd380a11)]
    );
    // arrow.uuid (lossless): 16 bytes in RFC order.
    let a: ArrayRef = Arc::new(
        FixedSizeBinaryArray::try_from_iter(
            vec![0xa0eebc999c0b4ef8bb6d6bb9bd380a11u128.to_be_bytes()].into_iter(),
        )
        .unwrap(),
    );
    assert_eq!(texts(a.clone(), &T::Uuid), vec![s(u)]);
    assert_eq!(
        round_trip(a, &T::Uuid),
        vec![P::Uuid(0xa0eebc999c0b4ef8bb6d6bb9bd380a11)]
    );
    let a: ArrayRef = Arc::new(StringArray::from(vec!["{\"a\": [1, 2]}"]));
    assert_eq!(texts(a.clone(), &T::Json), vec![s("{\"a\": [1, 2]}")]);
    assert_eq!(
        round_trip(a, &T::Json),
        vec![P::Text("{\"a\": [1, 2]}".into())]
    );
}

#[test]
fn blobs_bits_bignums() {
    let a: ArrayRef = Arc::new(BinaryArray::from(vec![
        Some(&[0x0a, 0xff][..]),
        Some(&[][..]),
        None,
    ]));
    assert_eq!(
        texts(a.clone(), &T::Blob),
        vec![s("\\x0aff"), s("\\x"), None]
    );
    assert_eq!(
        round_trip(a, &T::Blob),
        vec![P::Blob(vec![0x0a, 0xff]), P::Blob(vec![]), P::Null]
    );
    let a: ArrayRef = Arc::new(BinaryViewArray::from(vec![&[1u8, 2][..]]));
    assert_eq!(texts(a, &T::Blob), vec![s("\\x0102")]);
    // DuckDB BIT: padding count, then bits with that many (1-filled) pad bits first.
    let a: ArrayRef = Arc::new(BinaryArray::from(vec![
        &[3u8, 0b1111_0101][..],
        &[0u8, 0b1000_0000, 0b0000_0001][..],
    ]));
    assert_eq!(
        texts(a.clone(), &T::Bit),
        vec![s("10101"), s("1000000000000001")]
    );
    assert_eq!(
        round_trip(a, &T::Bit),
        vec![P::Text("10101".into()), P::Text("1000000000000001".into())]
    );
    // DuckDB BIGNUM: 3-byte header (MSB set for positive), magnitude; all inverted if negative.
    let pos = [0x80u8, 0x00, 0x02, 0x01, 0x00]; // 256
    let neg: Vec<u8> = pos.iter().map(|b| !b).collect(); // -256
    let zero = [0x80u8, 0x00, 0x01, 0x00];
    let a: ArrayRef = Arc::new(BinaryArray::from(vec![&pos[..], &neg[..], &zero[..]]));
    assert_eq!(
        texts(a.clone(), &T::VarInt),
        vec![s("256"), s("-256"), s("0")]
    );
    assert_eq!(
        round_trip(a, &T::VarInt),
        vec![
            P::Decimal {
                value: 256,
                width: 3,
                scale: 0
            },
            P::Decimal {
                value: -256,
                width: 3,
                scale: 0
            },
            P::Decimal {
                value: 0,
                width: 1,
                scale: 0
            }
        ]
    );
    // DuckDB.hugeint (lossless): 16 little-endian bytes.
    let a: ArrayRef = Arc::new(
        FixedSizeBinaryArray::try_from_iter(vec![(-7i128).to_le_bytes()].into_iter()).unwrap(),
    );
    assert_eq!(texts(a.clone(), &T::HugeInt), vec![s("-7")]);
    assert_eq!(round_trip(a, &T::HugeInt), vec![P::HugeInt(-7)]);
}

#[test]
fn dates_and_times() {
    let a: ArrayRef = Arc::new(Date32Array::from(vec![
        19_724,
        -735_160,
        DUCK_DATE_INF,
        DUCK_DATE_NINF,
    ]));
    assert_eq!(
        texts(a.clone(), &T::Date),
        vec![
            s("2024-01-02"),
            s("0044-03-15 BC"),
            s("infinity"),
            s("-infinity")
        ]
    );
    assert_eq!(
        round_trip(a, &T::Date),
        vec![
            P::Date(19_724),
            P::Date(-735_160),
            P::Date(DUCK_DATE_INF),
            P::Date(DUCK_DATE_NINF)
        ]
    );
    let a: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![11_045_120_000, 0]));
    assert_eq!(
        texts(a.clone(), &T::Time),
        vec![s("03:04:05.12"), s("00:00:00")]
    );
    assert_eq!(
        round_trip(a, &T::Time),
        vec![P::Time(11_045_120_000), P::Time(0)]
    );
    let a: ArrayRef = Arc::new(Time64NanosecondArray::from(vec![11_045_120_120_999]));
    assert_eq!(texts(a, &T::TimeNs), vec![s("03:04:05.12012")]);
    // TIMETZ in the default export has lost its offset; in the lossless export it is packed.
    let a: ArrayRef = Arc::new(Time64MicrosecondArray::from(vec![11_045_000_000]));
    assert_eq!(texts(a, &T::TimeTz), vec![s("03:04:05+00")]);
    let max_offset = 16 * 3600 - 1u64;
    let bits = (11_045_000_000u64 << 24) | (max_offset - 19_800);
    let a: ArrayRef = Arc::new(
        FixedSizeBinaryArray::try_from_iter(vec![bits.to_le_bytes()].into_iter()).unwrap(),
    );
    assert_eq!(texts(a.clone(), &T::TimeTz), vec![s("03:04:05+05:30")]);
    assert_eq!(
        round_trip(a, &T::TimeTz),
        vec![P::Text("03:04:05+05:30".into())]
    );

    let t = 1_704_164_645_123_000i64;
    let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
        t,
        DUCK_TS_INF,
        DUCK_TS_NINF,
    ]));
    assert_eq!(
        texts(a.clone(), &T::Timestamp),
        vec![s("2024-01-02 03:04:05.123"), s("infinity"), s("-infinity")]
    );
    assert_eq!(
        round_trip(a, &T::Timestamp),
        vec![
            P::Timestamp(t),
            P::Timestamp(DUCK_TS_INF),
            P::Timestamp(DUCK_TS_NINF)
        ]
    );
    let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![t]).with_timezone("UTC"));
    assert_eq!(
        texts(a.clone(), &T::TimestampTz),
        vec![s("2024-01-02 03:04:05.123+00")]
    );
    assert_eq!(round_trip(a, &T::TimestampTz), vec![P::TimestampTz(t)]);
    let a: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![t * 1000 + 999]));
    assert_eq!(
        texts(a, &T::TimestampNs),
        vec![s("2024-01-02 03:04:05.123")]
    );
    let a: ArrayRef = Arc::new(TimestampSecondArray::from(vec![t / 1_000_000]));
    assert_eq!(texts(a, &T::TimestampS), vec![s("2024-01-02 03:04:05")]);
    let a: ArrayRef = Arc::new(TimestampMillisecondArray::from(vec![-1]));
    assert_eq!(
        texts(a, &T::TimestampMs),
        vec![s("1969-12-31 23:59:59.999")]
    );
    let a: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![i64::MIN]));
    assert_eq!(
        encode(a, &T::Timestamp, Format::Binary)
            .unwrap_err()
            .sqlstate(),
        SqlState::NUMERIC_VALUE_OUT_OF_RANGE
    );
}

#[test]
fn intervals() {
    let a: ArrayRef = Arc::new(IntervalMonthDayNanoArray::from(vec![
        IntervalMonthDayNano::new(14, 3, 14_706_500_000_000),
        IntervalMonthDayNano::new(0, 0, -1_000_000_000),
        IntervalMonthDayNano::new(0, 0, 0),
    ]));
    assert_eq!(
        texts(a.clone(), &T::Interval),
        vec![
            s("1 year 2 mons 3 days 04:05:06.5"),
            s("-00:00:01"),
            s("00:00:00")
        ]
    );
    assert_eq!(
        round_trip(a, &T::Interval),
        vec![
            P::Interval {
                months: 14,
                days: 3,
                micros: 14_706_500_000
            },
            P::Interval {
                months: 0,
                days: 0,
                micros: -1_000_000
            },
            P::Interval {
                months: 0,
                days: 0,
                micros: 0
            },
        ]
    );
    let a: ArrayRef = Arc::new(DurationMillisecondArray::from(vec![1500]));
    assert_eq!(texts(a, &T::Interval), vec![s("00:00:01.5")]);
}

fn int_list(rows: Vec<Option<Vec<Option<i32>>>>) -> ArrayRef {
    Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(rows))
}

#[test]
fn one_dimensional_arrays() {
    let ty = T::List(Box::new(T::Integer));
    let a = int_list(vec![Some(vec![Some(1), Some(2), None]), Some(vec![]), None]);
    assert_eq!(texts(a.clone(), &ty), vec![s("{1,2,NULL}"), s("{}"), None]);
    let bin = encode(a.clone(), &ty, Format::Binary).unwrap();
    let first = bin[0].as_ref().unwrap();
    // ndim 1, has-null 1, int4, dim 3, lower bound 1.
    assert_eq!(
        &first[..20],
        &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 23, 0, 0, 0, 3, 0, 0, 0, 1]
    );
    assert_eq!(
        &bin[1].as_ref().unwrap()[..],
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 23]
    );
    assert_eq!(
        round_trip(a, &ty),
        vec![
            P::List(vec![P::Int(1), P::Int(2), P::Null]),
            P::List(vec![]),
            P::Null
        ]
    );

    let ty = T::List(Box::new(T::Varchar));
    let mut b = ListBuilder::new(StringBuilder::new());
    for v in ["a b", "c\"d", "", "NULL", "x"] {
        b.values().append_value(v);
    }
    b.values().append_null();
    b.append(true);
    let a: ArrayRef = Arc::new(b.finish());
    assert_eq!(
        texts(a.clone(), &ty),
        vec![s(r#"{"a b","c\"d","","NULL",x,NULL}"#)]
    );
    assert_eq!(
        round_trip(a, &ty),
        vec![P::List(vec![
            P::Text("a b".into()),
            P::Text("c\"d".into()),
            P::Text("".into()),
            P::Text("NULL".into()),
            P::Text("x".into()),
            P::Null
        ])]
    );

    // Elements whose text needs quoting: timestamps contain a space, bytea a backslash.
    let ty = T::List(Box::new(T::Blob));
    let mut b = ListBuilder::new(BinaryBuilder::new());
    b.values().append_value([0x0a]);
    b.append(true);
    assert_eq!(texts(Arc::new(b.finish()), &ty), vec![s(r#"{"\\x0a"}"#)]);

    // DuckDB ARRAY → FixedSizeList.
    let ty = T::Array(Box::new(T::Double), 2);
    let a: ArrayRef = Arc::new(
        FixedSizeListArray::from_iter_primitive::<Float64Type, _, _>(
            vec![Some(vec![Some(1.5), Some(2.0)]), None],
            2,
        ),
    );
    assert_eq!(texts(a.clone(), &ty), vec![s("{1.5,2}"), None]);
    assert_eq!(
        round_trip(a, &ty),
        vec![P::List(vec![P::Double(1.5), P::Double(2.0)]), P::Null]
    );
}

/// Rows of a LIST(LIST(INTEGER)): None is a NULL at that level.
type NestedRows = Vec<Option<Vec<Option<Vec<Option<i32>>>>>>;

fn nested_int_list(rows: NestedRows) -> ArrayRef {
    let mut b = ListBuilder::new(ListBuilder::new(Int32Builder::new()));
    for row in rows {
        match row {
            None => b.append(false),
            Some(subs) => {
                for sub in subs {
                    match sub {
                        None => b.values().append(false),
                        Some(vals) => {
                            for v in vals {
                                b.values().values().append_option(v);
                            }
                            b.values().append(true);
                        }
                    }
                }
                b.append(true);
            }
        }
    }
    Arc::new(b.finish())
}

#[test]
fn multi_dimensional_arrays() {
    let ty = T::List(Box::new(T::List(Box::new(T::Integer))));
    let a = nested_int_list(vec![
        Some(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(3), None]),
        ]),
        Some(vec![Some(vec![Some(1)]), Some(vec![Some(2), Some(3)])]),
        Some(vec![Some(vec![]), Some(vec![])]),
        Some(vec![Some(vec![Some(1)]), None]),
    ]);
    assert_eq!(pg_type(&ty).oid, oids::INT4_ARRAY);
    assert_eq!(
        texts(a.clone(), &ty),
        vec![
            s("{{1,2},{3,NULL}}"),
            s("[[1],[2,3]]"),
            s("{}"),
            s("[[1],null]")
        ]
    );
    let bin = encode(a.slice(0, 1), &ty, Format::Binary).unwrap();
    let b = bin[0].as_ref().unwrap();
    assert_eq!(&b[..12], &[0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 23]);
    assert_eq!(
        &b[12..28],
        &[0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1]
    );
    let back = decode_param(Some(b), Format::Binary, 0, &ty).unwrap();
    assert_eq!(
        back,
        P::List(vec![
            P::List(vec![P::Int(1), P::Int(2)]),
            P::List(vec![P::Int(3), P::Null])
        ])
    );
    // A jagged list has no binary array form.
    let e = encode(a.slice(1, 1), &ty, Format::Binary).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::FEATURE_NOT_SUPPORTED);
}

#[test]
fn structs_maps_unions_as_json() {
    let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
    let strs: ArrayRef = Arc::new(StringArray::from(vec![Some("x\"y"), Some("z")]));
    let st = StructArray::from(vec![
        (Arc::new(Field::new("a", DataType::Int32, true)), ints),
        (Arc::new(Field::new("b c", DataType::Utf8, true)), strs),
    ]);
    let ty = T::Struct(vec![("a".into(), T::Integer), ("b c".into(), T::Varchar)]);
    let a: ArrayRef = Arc::new(st);
    assert_eq!(
        texts(a.clone(), &ty),
        vec![s(r#"{"a":1,"b c":"x\"y"}"#), s(r#"{"a":null,"b c":"z"}"#)]
    );
    // json's binary format is its text.
    let bin = encode(a, &ty, Format::Binary).unwrap();
    assert_eq!(bin[0].as_deref(), Some(&br#"{"a":1,"b c":"x\"y"}"#[..]));

    let mut mb = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    mb.keys().append_value("k");
    mb.values().append_value(1);
    mb.keys().append_value("n");
    mb.values().append_null();
    mb.append(true).unwrap();
    mb.append(false).unwrap();
    let ty = T::Map(Box::new(T::Varchar), Box::new(T::Integer));
    assert_eq!(
        texts(Arc::new(mb.finish()), &ty),
        vec![s(r#"{"k":1,"n":null}"#), None]
    );

    // A sparse union, as DuckDB exports it.
    let ids = ScalarBuffer::from(vec![0i8, 1]);
    let fields = UnionFields::try_new(
        vec![0, 1],
        vec![
            Field::new("i", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ],
    )
    .unwrap();
    let children: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(vec![Some(7), None])),
        Arc::new(StringArray::from(vec![None, Some("hi")])),
    ];
    let u = UnionArray::try_new(fields, ids, None, children).unwrap();
    let ty = T::Union(vec![("i".into(), T::Integer), ("s".into(), T::Varchar)]);
    assert_eq!(
        texts(Arc::new(u), &ty),
        vec![s(r#"{"i":7}"#), s(r#"{"s":"hi"}"#)]
    );

    // A list of structs is json too.
    let st = StructArray::from(vec![(
        Arc::new(Field::new("d", DataType::Date32, true)),
        Arc::new(Date32Array::from(vec![19_724, 0])) as ArrayRef,
    )]);
    let field = Arc::new(Field::new("item", st.data_type().clone(), true));
    let list = ListArray::new(
        field,
        OffsetBuffer::new(ScalarBuffer::from(vec![0, 2])),
        Arc::new(st),
        None,
    );
    let ty = T::List(Box::new(T::Struct(vec![("d".into(), T::Date)])));
    assert_eq!(pg_type(&ty).oid, oids::JSON);
    assert_eq!(
        texts(Arc::new(list), &ty),
        vec![s(r#"[{"d":"2024-01-02"},{"d":"1970-01-01"}]"#)]
    );
}

#[test]
fn enums_are_dictionaries() {
    let keys = UInt8Array::from(vec![Some(1), Some(0), None]);
    let values: ArrayRef = Arc::new(StringArray::from(vec!["sad", "happy"]));
    let a: ArrayRef = Arc::new(DictionaryArray::<UInt8Type>::try_new(keys, values).unwrap());
    assert_eq!(texts(a.clone(), &T::Enum), vec![s("happy"), s("sad"), None]);
    assert_eq!(
        round_trip(a, &T::Enum),
        vec![P::Text("happy".into()), P::Text("sad".into()), P::Null]
    );
}

#[test]
fn columns_described_as_text_stay_text_in_binary() {
    // An unknown DuckDB type is described as text; whatever Arrow holds, send its text.
    let a: ArrayRef = Arc::new(Int32Array::from(vec![7]));
    let ty = T::Other("SOMETHING".into());
    assert_eq!(pg_type(&ty).oid, oids::TEXT);
    assert_eq!(
        encode(a, &ty, Format::Binary).unwrap(),
        vec![Some(b"7".to_vec())]
    );
    let st: ArrayRef = Arc::new(StructArray::from(vec![(
        Arc::new(Field::new("a", DataType::Int32, true)),
        Arc::new(Int32Array::from(vec![1])) as ArrayRef,
    )]));
    assert_eq!(
        encode(st, &ty, Format::Binary).unwrap(),
        vec![Some(br#"{"a":1}"#.to_vec())]
    );
}

#[test]
fn row_ranges_and_multiple_columns() {
    let schema = Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
    ]);
    let batch = RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int32Array::from(vec![Some(1), Some(2), None])),
            Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
        ],
    )
    .unwrap();
    let cols = [(T::Integer, Format::Binary), (T::Varchar, Format::Text)];
    let mut out = Vec::new();
    encode_rows(&batch, &cols, 1, 3, &mut out).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(
        &out[0][..],
        &[0, 0, 0, 4, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff]
    );
    assert_eq!(&out[1][..], &[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, b'c']);
    let e = encode_rows(&batch, &cols, 2, 4, &mut out).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::INTERNAL_ERROR);
    let e = encode_batch(&batch, &cols[..1], &mut out).unwrap_err();
    assert_eq!(e.sqlstate(), SqlState::INTERNAL_ERROR);
}
