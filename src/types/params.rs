//! Bind parameters: PostgreSQL text or binary bytes → [`ParamValue`], a value the engine can
//! bind through DuckDB's C API.

use super::binary::{numeric_to_text, varbit_to_text};
use super::calendar::*;
use super::oid::{array_element_oid, oids, pg_type, pg_type_name};
use super::parse::*;
use super::{DuckType, Format, TypeError};

/// One Bind parameter decoded into something the engine can bind with DuckDB's C API.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    HugeInt(i128),
    Float(f32),
    Double(f64),
    Decimal {
        value: i128,
        width: u8,
        scale: u8,
    },
    Text(String),
    Blob(Vec<u8>),
    /// Days since 1970-01-01 (DuckDB's date_t, including its infinities).
    Date(i32),
    /// µs since midnight.
    Time(i64),
    /// µs since 1970-01-01 (DuckDB's timestamp_t, including its infinities).
    Timestamp(i64),
    /// µs since the epoch, UTC.
    TimestampTz(i64),
    Interval {
        months: i32,
        days: i32,
        micros: i64,
    },
    Uuid(u128),
    List(Vec<ParamValue>),
}

/// Decodes one Bind parameter. `raw` is the parameter's bytes (None = NULL), `format` its wire
/// format, `client_oid` the type the client declared in Parse (0 when none), `target` the type
/// DuckDB inferred for the parameter.
///
/// Text is parsed according to `target` when that is a scalar (or list of scalars) type and
/// passed through as `Text` otherwise. Binary is read according to the client's OID, or the
/// target's when the client declared none, then converted toward `target` where that is exact
/// (integer widths are range-checked, decimals rescaled).
pub fn decode_param(
    raw: Option<&[u8]>,
    format: Format,
    client_oid: u32,
    target: &DuckType,
) -> Result<ParamValue, TypeError> {
    let Some(raw) = raw else {
        return Ok(ParamValue::Null);
    };
    match format {
        Format::Text => {
            let s = std::str::from_utf8(raw).map_err(|_| TypeError::InvalidUtf8 {
                type_name: type_label(target),
            })?;
            parse_text_param(s, target)
        }
        Format::Binary => {
            let oid = match client_oid {
                0 | oids::UNKNOWN => pg_type(target).oid,
                o => o,
            };
            let v = decode_binary(raw, oid)?;
            coerce(v, target)
        }
    }
}

/// PostgreSQL-style lower-case name of a DuckDB type for messages (`integer`, `date`).
fn type_label(t: &DuckType) -> String {
    match t {
        DuckType::Integer => "integer".into(),
        DuckType::SmallInt => "smallint".into(),
        DuckType::BigInt => "bigint".into(),
        DuckType::Boolean => "boolean".into(),
        DuckType::Double => "double precision".into(),
        DuckType::Float => "real".into(),
        DuckType::Decimal { .. } => "numeric".into(),
        DuckType::Blob => "bytea".into(),
        other => other.sql_name().to_ascii_lowercase(),
    }
}

/// Range check for an integer target; `None` when the target is not an integer type.
fn int_to_target(
    v: i128,
    target: &DuckType,
    shown: &dyn std::fmt::Display,
) -> Option<Result<ParamValue, TypeError>> {
    let (lo, hi): (i128, i128) = match target {
        DuckType::TinyInt => (i8::MIN as i128, i8::MAX as i128),
        DuckType::SmallInt => (i16::MIN as i128, i16::MAX as i128),
        DuckType::Integer => (i32::MIN as i128, i32::MAX as i128),
        DuckType::BigInt => (i64::MIN as i128, i64::MAX as i128),
        DuckType::UTinyInt => (0, u8::MAX as i128),
        DuckType::USmallInt => (0, u16::MAX as i128),
        DuckType::UInteger => (0, u32::MAX as i128),
        DuckType::UBigInt => (0, u64::MAX as i128),
        DuckType::HugeInt => (i128::MIN, i128::MAX),
        DuckType::UHugeInt => (0, i128::MAX),
        _ => return None,
    };
    if v < lo || v > hi {
        return Some(Err(TypeError::out_of_range(&type_label(target), shown)));
    }
    Some(Ok(match target {
        DuckType::HugeInt | DuckType::UHugeInt => ParamValue::HugeInt(v),
        DuckType::UTinyInt | DuckType::USmallInt | DuckType::UInteger | DuckType::UBigInt => {
            ParamValue::UInt(v as u64)
        }
        _ => ParamValue::Int(v as i64),
    }))
}

fn decimal_to_target(
    n: &NumericText,
    width: u8,
    scale: u8,
    shown: &str,
) -> Result<ParamValue, TypeError> {
    let overflow = || TypeError::OutOfRange {
        type_name: format!("numeric({width},{scale})"),
        value: shown.to_string(),
    };
    match n {
        NumericText::Finite { .. } => {
            let value = n.scaled(scale as usize).ok_or_else(overflow)?;
            if value.unsigned_abs() >= 10u128.pow(width as u32) {
                return Err(overflow());
            }
            Ok(ParamValue::Decimal {
                value,
                width,
                scale,
            })
        }
        _ => Err(overflow()),
    }
}

/// A text parameter, parsed as `target`.
fn parse_text_param(s: &str, target: &DuckType) -> Result<ParamValue, TypeError> {
    use DuckType as T;
    Ok(match target {
        T::Boolean => ParamValue::Bool(parse_bool(s)?),
        T::TinyInt
        | T::SmallInt
        | T::Integer
        | T::BigInt
        | T::UTinyInt
        | T::USmallInt
        | T::UInteger
        | T::UBigInt
        | T::HugeInt => {
            let v = parse_int(s, &type_label(target))?;
            int_to_target(v, target, &s.trim()).expect("integer target")?
        }
        T::UHugeInt => {
            let v = parse_u128(s, "uhugeint")?;
            match i128::try_from(v) {
                Ok(v) => ParamValue::HugeInt(v),
                // Beyond i128: DuckDB casts the canonical digits itself.
                Err(_) => ParamValue::Text(v.to_string()),
            }
        }
        T::Float => ParamValue::Float(parse_f32(s)?),
        T::Double => ParamValue::Double(parse_f64(s)?),
        T::Decimal { width, scale } => decimal_to_target(&parse_numeric(s)?, *width, *scale, s)?,
        T::Blob => ParamValue::Blob(parse_bytea(s)?),
        T::Date => ParamValue::Date(parse_date(s)?),
        T::Time | T::TimeNs => ParamValue::Time(parse_time(s)?),
        T::Timestamp | T::TimestampS | T::TimestampMs | T::TimestampNs => {
            ParamValue::Timestamp(parse_timestamp(s, false)?)
        }
        T::TimestampTz | T::TimestampTzNs => ParamValue::TimestampTz(parse_timestamp(s, true)?),
        T::Interval => {
            let (months, days, micros) = parse_interval(s)?;
            ParamValue::Interval {
                months,
                days,
                micros,
            }
        }
        T::Uuid => ParamValue::Uuid(parse_uuid(s)?),
        T::List(elem) | T::Array(elem, _) if s.trim_start().starts_with('{') => {
            let elems = parse_array(s)?;
            array_to_param(&elems, elem, s)?
        }
        // VARCHAR, ENUM, JSON, BIT, VARINT, TIMETZ, composites, NULL/unknown, and DuckDB list
        // literals (`[1, 2]`): DuckDB casts the text itself.
        _ => ParamValue::Text(s.to_string()),
    })
}

fn array_to_param(
    elems: &[ArrayElem],
    elem_ty: &DuckType,
    whole: &str,
) -> Result<ParamValue, TypeError> {
    let mut out = Vec::with_capacity(elems.len());
    for e in elems {
        out.push(match e {
            ArrayElem::Null => ParamValue::Null,
            ArrayElem::Value(v) => match elem_ty {
                DuckType::List(_) | DuckType::Array(..) => {
                    return Err(TypeError::invalid("array", whole))
                }
                t => parse_text_param(v, t)?,
            },
            ArrayElem::Sub(sub) => match elem_ty {
                DuckType::List(inner) | DuckType::Array(inner, _) => {
                    array_to_param(sub, inner, whole)?
                }
                // A multi-dimensional literal for a one-dimensional list.
                _ => return Err(TypeError::invalid("array", whole)),
            },
        });
    }
    Ok(ParamValue::List(out))
}

fn fixed<const N: usize>(raw: &[u8], oid: u32) -> Result<[u8; N], TypeError> {
    raw.try_into().map_err(|_| {
        TypeError::bad_binary(
            pg_type_name(oid),
            format!("expected {N} bytes, got {}", raw.len()),
        )
    })
}

fn utf8(raw: &[u8], oid: u32) -> Result<String, TypeError> {
    String::from_utf8(raw.to_vec()).map_err(|_| TypeError::InvalidUtf8 {
        type_name: pg_type_name(oid).to_string(),
    })
}

/// Reads binary bytes as PostgreSQL type `oid` (its recv format).
fn decode_binary(raw: &[u8], oid: u32) -> Result<ParamValue, TypeError> {
    use oids::*;
    Ok(match oid {
        BOOL => ParamValue::Bool(fixed::<1>(raw, oid)?[0] != 0),
        INT2 => ParamValue::Int(i16::from_be_bytes(fixed(raw, oid)?) as i64),
        INT4 => ParamValue::Int(i32::from_be_bytes(fixed(raw, oid)?) as i64),
        INT8 => ParamValue::Int(i64::from_be_bytes(fixed(raw, oid)?)),
        OID => ParamValue::Int(u32::from_be_bytes(fixed(raw, oid)?) as i64),
        FLOAT4 => ParamValue::Float(f32::from_be_bytes(fixed(raw, oid)?)),
        FLOAT8 => ParamValue::Double(f64::from_be_bytes(fixed(raw, oid)?)),
        NUMERIC => {
            let text = numeric_to_text(raw)?;
            match parse_numeric(&text)? {
                NumericText::NaN => ParamValue::Double(f64::NAN),
                NumericText::Infinity => ParamValue::Double(f64::INFINITY),
                NumericText::NegInfinity => ParamValue::Double(f64::NEG_INFINITY),
                n => {
                    let (int_digits, frac_digits) = n.precision();
                    let width = int_digits + frac_digits;
                    match n.scaled(frac_digits) {
                        Some(value) if width <= 38 => ParamValue::Decimal {
                            value,
                            width: width as u8,
                            scale: frac_digits as u8,
                        },
                        // Wider than DuckDB's DECIMAL: let coercion (or DuckDB) handle the text.
                        _ => ParamValue::Text(text),
                    }
                }
            }
        }
        TEXT | VARCHAR | BPCHAR | NAME | CHAR | UNKNOWN | JSON => ParamValue::Text(utf8(raw, oid)?),
        JSONB => match raw.split_first() {
            Some((1, rest)) => ParamValue::Text(utf8(rest, oid)?),
            _ => return Err(TypeError::bad_binary("jsonb", "unsupported jsonb version")),
        },
        BYTEA => ParamValue::Blob(raw.to_vec()),
        DATE => {
            let d = i32::from_be_bytes(fixed(raw, oid)?);
            ParamValue::Date(pg_date_to_duck(d).ok_or_else(|| TypeError::out_of_range("date", d))?)
        }
        TIME => ParamValue::Time(i64::from_be_bytes(fixed(raw, oid)?)),
        TIMETZ => {
            let b: [u8; 12] = fixed(raw, oid)?;
            let micros = i64::from_be_bytes(b[..8].try_into().expect("8 bytes"));
            let west = i32::from_be_bytes(b[8..].try_into().expect("4 bytes"));
            let mut text = bytes::BytesMut::new();
            super::text::write_timetz(micros, -west, &mut text);
            ParamValue::Text(String::from_utf8_lossy(&text).into_owned())
        }
        TIMESTAMP | TIMESTAMPTZ => {
            let t = i64::from_be_bytes(fixed(raw, oid)?);
            let v = pg_ts_to_duck(t).ok_or_else(|| TypeError::out_of_range(pg_type_name(oid), t))?;
            if oid == TIMESTAMP {
                ParamValue::Timestamp(v)
            } else {
                ParamValue::TimestampTz(v)
            }
        }
        INTERVAL => {
            let b: [u8; 16] = fixed(raw, oid)?;
            ParamValue::Interval {
                micros: i64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
                days: i32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
                months: i32::from_be_bytes(b[12..].try_into().expect("4 bytes")),
            }
        }
        UUID => ParamValue::Uuid(u128::from_be_bytes(fixed(raw, oid)?)),
        BIT | VARBIT => ParamValue::Text(varbit_to_text(raw)?),
        other => match array_element_oid(other) {
            Some(elem) => decode_binary_array(raw, elem)?,
            None => {
                return Err(TypeError::Unsupported(format!(
                    "binary format for parameters of type OID {other} is not supported; send it as text"
                )))
            }
        },
    })
}

/// `array_recv`: header, dimensions, then elements; nested dimensions become nested lists.
fn decode_binary_array(raw: &[u8], declared_elem: u32) -> Result<ParamValue, TypeError> {
    let bad = |d: &str| TypeError::bad_binary("array", d);
    let mut r = Reader { b: raw, pos: 0 };
    let ndim = r.i32().ok_or_else(|| bad("missing header"))?;
    let _flags = r.i32().ok_or_else(|| bad("missing header"))?;
    let elem_oid = r.i32().ok_or_else(|| bad("missing header"))? as u32;
    if !(0..=6).contains(&ndim) {
        return Err(bad(&format!("{ndim} dimensions")));
    }
    // array_recv insists the data's element type is the declared one.
    if elem_oid != declared_elem && !array_element_oid_compatible(declared_elem, elem_oid) {
        return Err(bad(&format!(
            "element type {elem_oid} does not match declared {declared_elem}"
        )));
    }
    let mut dims = Vec::with_capacity(ndim as usize);
    for _ in 0..ndim {
        let len = r.i32().ok_or_else(|| bad("missing dimension"))?;
        let _lbound = r.i32().ok_or_else(|| bad("missing dimension"))?;
        if len < 0 {
            return Err(bad("negative dimension"));
        }
        dims.push(len as usize);
    }
    if ndim == 0 {
        return Ok(ParamValue::List(Vec::new()));
    }
    let v = read_array_level(&mut r, &dims, elem_oid)?;
    if r.pos != raw.len() {
        return Err(bad("trailing bytes after the last element"));
    }
    Ok(v)
}

fn array_element_oid_compatible(declared: u32, actual: u32) -> bool {
    // Drivers sometimes declare text[] and send varchar elements or vice versa.
    let texty = |o| matches!(o, oids::TEXT | oids::VARCHAR | oids::BPCHAR | oids::NAME);
    texty(declared) && texty(actual)
}

fn read_array_level(
    r: &mut Reader,
    dims: &[usize],
    elem_oid: u32,
) -> Result<ParamValue, TypeError> {
    let mut out = Vec::with_capacity(dims[0]);
    for _ in 0..dims[0] {
        if dims.len() > 1 {
            out.push(read_array_level(r, &dims[1..], elem_oid)?);
            continue;
        }
        let len = r
            .i32()
            .ok_or_else(|| TypeError::bad_binary("array", "missing element length"))?;
        if len == -1 {
            out.push(ParamValue::Null);
            continue;
        }
        let bytes = r
            .take(len.max(0) as usize)
            .ok_or_else(|| TypeError::bad_binary("array", "element runs past the end"))?;
        out.push(decode_binary(bytes, elem_oid)?);
    }
    Ok(ParamValue::List(out))
}

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
}

/// Converts a decoded binary value toward the parameter's DuckDB type where that is exact;
/// anything else is left for DuckDB to cast when it binds.
fn coerce(v: ParamValue, target: &DuckType) -> Result<ParamValue, TypeError> {
    use DuckType as T;
    use ParamValue as P;
    Ok(match (v, target) {
        (P::Null, _) => P::Null,
        (P::Int(i), t) if int_to_target(0, t, &0).is_some() => {
            int_to_target(i as i128, t, &i).expect("integer target")?
        }
        (P::Int(i), T::Float) => P::Float(i as f32),
        (P::Int(i), T::Double) => P::Double(i as f64),
        (P::Int(i), T::Decimal { width, scale }) => {
            let n = parse_numeric(&i.to_string())?;
            decimal_to_target(&n, *width, *scale, &i.to_string())?
        }
        (
            P::Decimal {
                value,
                width,
                scale,
            },
            t,
        ) => {
            let mut text = bytes::BytesMut::new();
            super::text::write_decimal(value, scale, &mut text);
            let text = String::from_utf8_lossy(&text).into_owned();
            match t {
                T::Decimal { width, scale } => {
                    decimal_to_target(&parse_numeric(&text)?, *width, *scale, &text)?
                }
                T::Float => P::Float(parse_f32(&text)?),
                T::Double => P::Double(parse_f64(&text)?),
                t if int_to_target(0, t, &0).is_some() => {
                    // numeric → integer rounds half away from zero, as PostgreSQL does.
                    let n = parse_numeric(&text)?;
                    let i = n
                        .scaled(0)
                        .ok_or_else(|| TypeError::out_of_range(&type_label(t), &text))?;
                    int_to_target(i, t, &text).expect("integer target")?
                }
                _ => P::Decimal {
                    value,
                    width,
                    scale,
                },
            }
        }
        (P::Double(x), T::Float) => P::Float(x as f32),
        (P::Float(x), T::Double) => P::Double(x as f64),
        (P::Timestamp(t), T::TimestampTz | T::TimestampTzNs) => P::TimestampTz(t),
        (P::TimestampTz(t), T::Timestamp | T::TimestampS | T::TimestampMs | T::TimestampNs) => {
            P::Timestamp(t)
        }
        (P::Date(d), T::Timestamp | T::TimestampS | T::TimestampMs | T::TimestampNs) => {
            P::Timestamp(date_to_ts(d))
        }
        (P::Date(d), T::TimestampTz | T::TimestampTzNs) => P::TimestampTz(date_to_ts(d)),
        // A text value sent in binary for a typed parameter: parse it as that type.
        (P::Text(s), t) if !matches!(t, T::Varchar | T::Null | T::Other(_) | T::Enum | T::Json) => {
            parse_text_param(&s, t)?
        }
        (P::List(items), T::List(elem) | T::Array(elem, _)) => P::List(
            items
                .into_iter()
                .map(|item| coerce(item, elem))
                .collect::<Result<_, _>>()?,
        ),
        (v, _) => v,
    })
}

fn date_to_ts(d: i32) -> i64 {
    match d {
        DUCK_DATE_INF => DUCK_TS_INF,
        DUCK_DATE_NINF => DUCK_TS_NINF,
        d => d as i64 * MICROS_PER_DAY,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlstate::SqlState;
    use DuckType as T;
    use ParamValue as P;

    fn text(s: &str, t: &DuckType) -> Result<ParamValue, TypeError> {
        decode_param(Some(s.as_bytes()), Format::Text, 0, t)
    }

    fn bin(b: &[u8], oid: u32, t: &DuckType) -> Result<ParamValue, TypeError> {
        decode_param(Some(b), Format::Binary, oid, t)
    }

    #[test]
    fn null_is_null_in_any_format() {
        assert_eq!(
            decode_param(None, Format::Text, 0, &T::Integer),
            Ok(P::Null)
        );
        assert_eq!(
            decode_param(None, Format::Binary, 23, &T::Integer),
            Ok(P::Null)
        );
    }

    #[test]
    fn text_parsed_by_target() {
        assert_eq!(text("42", &T::Integer), Ok(P::Int(42)));
        assert_eq!(text("42", &T::UBigInt), Ok(P::UInt(42)));
        assert_eq!(text("-42", &T::HugeInt), Ok(P::HugeInt(-42)));
        assert_eq!(text("t", &T::Boolean), Ok(P::Bool(true)));
        assert_eq!(text("1.5", &T::Double), Ok(P::Double(1.5)));
        assert_eq!(text("1.5", &T::Float), Ok(P::Float(1.5)));
        assert_eq!(
            text("12.345", &T::Decimal { width: 5, scale: 2 }),
            Ok(P::Decimal {
                value: 1235,
                width: 5,
                scale: 2
            })
        );
        assert_eq!(text("2024-01-02", &T::Date), Ok(P::Date(19_724)));
        assert_eq!(text("03:04:05", &T::Time), Ok(P::Time(11_045_000_000)));
        assert_eq!(
            text("2024-01-02 03:04:05.123", &T::Timestamp),
            Ok(P::Timestamp(1_704_164_645_123_000))
        );
        assert_eq!(
            text("2024-01-02 05:04:05.123+02", &T::TimestampTz),
            Ok(P::TimestampTz(1_704_164_645_123_000))
        );
        assert_eq!(
            text("1 day", &T::Interval),
            Ok(P::Interval {
                months: 0,
                days: 1,
                micros: 0
            })
        );
        assert_eq!(
            text("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", &T::Uuid),
            Ok(P::Uuid(0xa0eebc999c0b4ef8bb6d6bb9bd380a11))
        );
        assert_eq!(text("\\x0aff", &T::Blob), Ok(P::Blob(vec![0x0a, 0xff])));
        assert_eq!(text("hello", &T::Varchar), Ok(P::Text("hello".into())));
        assert_eq!(text("{\"a\":1}", &T::Json), Ok(P::Text("{\"a\":1}".into())));
        assert_eq!(text("x", &T::Null), Ok(P::Text("x".into())));
        assert_eq!(
            text("x", &T::Other("GEOMETRY".into())),
            Ok(P::Text("x".into()))
        );
        assert_eq!(
            text("340282366920938463463374607431768211455", &T::UHugeInt),
            Ok(P::Text("340282366920938463463374607431768211455".into()))
        );
    }

    #[test]
    fn text_arrays() {
        let l = |t: DuckType| T::List(Box::new(t));
        assert_eq!(
            text("{1,2,NULL}", &l(T::Integer)),
            Ok(P::List(vec![P::Int(1), P::Int(2), P::Null]))
        );
        assert_eq!(
            text(r#"{"a b","c\"d",""}"#, &l(T::Varchar)),
            Ok(P::List(vec![
                P::Text("a b".into()),
                P::Text("c\"d".into()),
                P::Text("".into())
            ]))
        );
        assert_eq!(
            text("{{1,2},{3,4}}", &l(l(T::BigInt))),
            Ok(P::List(vec![
                P::List(vec![P::Int(1), P::Int(2)]),
                P::List(vec![P::Int(3), P::Int(4)])
            ]))
        );
        assert_eq!(text("[1, 2]", &l(T::Integer)), Ok(P::Text("[1, 2]".into())));
        assert_eq!(
            text("{{1}}", &l(T::Integer)).unwrap_err().sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
        assert_eq!(
            text("{1,x}", &l(T::Integer)).unwrap_err().sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
    }

    #[test]
    fn text_errors_have_postgres_sqlstates() {
        let cases: &[(&str, DuckType, SqlState)] = &[
            ("abc", T::Integer, SqlState::INVALID_TEXT_REPRESENTATION),
            (
                "2147483648",
                T::Integer,
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            ),
            ("-129", T::TinyInt, SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
            ("-1", T::UInteger, SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
            ("maybe", T::Boolean, SqlState::INVALID_TEXT_REPRESENTATION),
            ("1e400", T::Double, SqlState::NUMERIC_VALUE_OUT_OF_RANGE),
            (
                "12345.6",
                T::Decimal { width: 5, scale: 2 },
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            ),
            (
                "NaN",
                T::Decimal { width: 5, scale: 2 },
                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
            ),
            (
                "x",
                T::Decimal { width: 5, scale: 2 },
                SqlState::INVALID_TEXT_REPRESENTATION,
            ),
            ("2024-13-01", T::Date, SqlState::DATETIME_FIELD_OVERFLOW),
            ("someday", T::Date, SqlState::INVALID_DATETIME_FORMAT),
            (
                "1 fortnight",
                T::Interval,
                SqlState::INVALID_DATETIME_FORMAT,
            ),
            ("not-a-uuid", T::Uuid, SqlState::INVALID_TEXT_REPRESENTATION),
            ("\\xz", T::Blob, SqlState::INVALID_TEXT_REPRESENTATION),
        ];
        for (s, t, state) in cases {
            let e = text(s, t).unwrap_err();
            assert_eq!(e.sqlstate(), *state, "{s} as {t:?}: {e}");
            assert!(
                e.to_string().contains(s.trim()) || e.to_string().contains("numeric"),
                "{e}"
            );
        }
        let e = decode_param(Some(&[0xff, 0xfe]), Format::Text, 0, &T::Varchar).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::CHARACTER_NOT_IN_REPERTOIRE);
    }

    #[test]
    fn binary_scalars() {
        assert_eq!(bin(&[1], oids::BOOL, &T::Boolean), Ok(P::Bool(true)));
        assert_eq!(
            bin(&(-5i16).to_be_bytes(), oids::INT2, &T::SmallInt),
            Ok(P::Int(-5))
        );
        assert_eq!(bin(&7i32.to_be_bytes(), 0, &T::Integer), Ok(P::Int(7)));
        assert_eq!(
            bin(&i64::MIN.to_be_bytes(), oids::INT8, &T::BigInt),
            Ok(P::Int(i64::MIN))
        );
        assert_eq!(
            bin(&1.5f32.to_be_bytes(), oids::FLOAT4, &T::Float),
            Ok(P::Float(1.5))
        );
        assert_eq!(
            bin(&1.5f64.to_be_bytes(), 0, &T::Double),
            Ok(P::Double(1.5))
        );
        assert_eq!(
            bin(b"hi", oids::TEXT, &T::Varchar),
            Ok(P::Text("hi".into()))
        );
        assert_eq!(
            bin(b"\x01{}", oids::JSONB, &T::Json),
            Ok(P::Text("{}".into()))
        );
        assert_eq!(bin(&[0, 1], oids::BYTEA, &T::Blob), Ok(P::Blob(vec![0, 1])));
        // PostgreSQL dates count from 2000-01-01.
        assert_eq!(
            bin(&0i32.to_be_bytes(), oids::DATE, &T::Date),
            Ok(P::Date(10_957))
        );
        assert_eq!(
            bin(&i32::MAX.to_be_bytes(), oids::DATE, &T::Date),
            Ok(P::Date(DUCK_DATE_INF))
        );
        assert_eq!(
            bin(&i32::MIN.to_be_bytes(), oids::DATE, &T::Date),
            Ok(P::Date(DUCK_DATE_NINF))
        );
        assert_eq!(
            bin(&0i64.to_be_bytes(), oids::TIMESTAMPTZ, &T::TimestampTz),
            Ok(P::TimestampTz(PG_EPOCH_MICROS))
        );
        let mut iv = Vec::new();
        iv.extend_from_slice(&(-1_000_000i64).to_be_bytes());
        iv.extend_from_slice(&3i32.to_be_bytes());
        iv.extend_from_slice(&14i32.to_be_bytes());
        assert_eq!(
            bin(&iv, 0, &T::Interval),
            Ok(P::Interval {
                months: 14,
                days: 3,
                micros: -1_000_000
            })
        );
        let mut tz = Vec::new();
        tz.extend_from_slice(&11_045_000_000i64.to_be_bytes());
        tz.extend_from_slice(&(-19_800i32).to_be_bytes());
        assert_eq!(
            bin(&tz, 0, &T::TimeTz),
            Ok(P::Text("03:04:05+05:30".into()))
        );
        assert_eq!(
            bin(&[0, 0, 0, 3, 0b1010_0000], oids::VARBIT, &T::Bit),
            Ok(P::Text("101".into()))
        );
    }

    #[test]
    fn binary_coerces_to_target() {
        // int8 sent for an INTEGER parameter: range-checked.
        assert_eq!(
            bin(&5i64.to_be_bytes(), oids::INT8, &T::Integer),
            Ok(P::Int(5))
        );
        let e = bin(&(1i64 << 40).to_be_bytes(), oids::INT8, &T::Integer).unwrap_err();
        assert_eq!(e.sqlstate(), SqlState::NUMERIC_VALUE_OUT_OF_RANGE);
        assert_eq!(
            bin(&5i32.to_be_bytes(), oids::INT4, &T::UBigInt),
            Ok(P::UInt(5))
        );
        assert_eq!(
            bin(&5i32.to_be_bytes(), oids::INT4, &T::Double),
            Ok(P::Double(5.0))
        );
        assert_eq!(
            bin(
                &5i32.to_be_bytes(),
                oids::INT4,
                &T::Decimal { width: 4, scale: 1 }
            ),
            Ok(P::Decimal {
                value: 50,
                width: 4,
                scale: 1
            })
        );
        assert_eq!(bin(b"42", oids::TEXT, &T::Integer), Ok(P::Int(42)));
        assert_eq!(
            bin(&0i64.to_be_bytes(), oids::TIMESTAMP, &T::TimestampTz),
            Ok(P::TimestampTz(PG_EPOCH_MICROS))
        );
        assert_eq!(
            bin(&0i32.to_be_bytes(), oids::DATE, &T::Timestamp),
            Ok(P::Timestamp(PG_EPOCH_MICROS))
        );
    }

    #[test]
    fn binary_length_errors_are_08p01() {
        assert_eq!(
            bin(&[0, 1, 2], oids::INT4, &T::Integer)
                .unwrap_err()
                .sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        assert_eq!(
            bin(&[], oids::BOOL, &T::Boolean).unwrap_err().sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        assert_eq!(
            bin(&[0; 15], oids::UUID, &T::Uuid).unwrap_err().sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        assert_eq!(
            bin(&[0; 3], oids::NUMERIC, &T::Double)
                .unwrap_err()
                .sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        assert_eq!(
            bin(&[0; 3], 1007, &T::List(Box::new(T::Integer)))
                .unwrap_err()
                .sqlstate(),
            SqlState::PROTOCOL_VIOLATION
        );
        assert_eq!(
            bin(&[0; 4], 99999, &T::Integer).unwrap_err().sqlstate(),
            SqlState::FEATURE_NOT_SUPPORTED
        );
    }
}
