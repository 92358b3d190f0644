//! Arrow `RecordBatch` → PostgreSQL DataRow bodies.
//!
//! Each column is downcast once per batch into a [`ValueWriter`] chosen from its Arrow layout
//! *and* its DuckDB type (Arrow alone cannot tell a UUID string from a VARCHAR, or a BIT blob
//! from a BLOB). Rows are then written into one shared buffer and split off without copying.

use std::cell::RefCell;

use bytes::{BufMut, BytesMut};
use duckdb::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, DictionaryArray, FixedSizeListArray, MapArray,
    StructArray, UnionArray,
};
use duckdb::arrow::datatypes::*;
use duckdb::arrow::record_batch::RecordBatch;

use super::nested::{DictW, ListStore, ListW, MapW, StructW, UnionW};
use super::oid::{oids, pg_type};
use super::writers::*;
use super::{DuckType, Format, TypeError};

/// Appends one DataRow body per row of `batch` to `out`: for every column an i32 big-endian
/// length (-1 for NULL) followed by the value bytes. `cols[i]` is column i's DuckDB type and
/// wire format.
pub fn encode_batch(
    batch: &RecordBatch,
    cols: &[(DuckType, Format)],
    out: &mut Vec<BytesMut>,
) -> Result<(), TypeError> {
    encode_rows(batch, cols, 0, batch.num_rows(), out)
}

/// As [`encode_batch`], for rows `[start, end)` only.
pub fn encode_rows(
    batch: &RecordBatch,
    cols: &[(DuckType, Format)],
    start: usize,
    end: usize,
    out: &mut Vec<BytesMut>,
) -> Result<(), TypeError> {
    if cols.len() != batch.num_columns() {
        return Err(TypeError::Internal(format!(
            "batch has {} columns but {} column types were given",
            batch.num_columns(),
            cols.len()
        )));
    }
    if start > end || end > batch.num_rows() {
        return Err(TypeError::Internal(format!(
            "row range {start}..{end} outside batch of {} rows",
            batch.num_rows()
        )));
    }
    let writers = batch
        .columns()
        .iter()
        .zip(cols)
        .map(|(array, (ty, format))| {
            let w = build_writer(array, ty)?;
            let mode = Mode::of(w.as_ref(), pg_type(ty).oid, *format == Format::Binary);
            Ok((w, mode))
        })
        .collect::<Result<Vec<_>, TypeError>>()?;

    let rows = end - start;
    out.reserve(rows);
    // One allocation for the whole range; each row is split off it without copying.
    let mut buf = BytesMut::with_capacity(estimate_row_size(cols) * rows);
    for row in start..end {
        for (w, mode) in &writers {
            if w.is_null(row) {
                buf.put_i32(-1);
                continue;
            }
            let at = buf.len();
            buf.put_i32(0);
            match mode {
                Mode::Text => w.text(row, &mut buf)?,
                Mode::Binary => w.binary(row, &mut buf)?,
                Mode::Json => w.json(row, &mut buf)?,
            }
            let len = (buf.len() - at - 4) as i32;
            buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        out.push(buf.split());
    }
    Ok(())
}

/// How a column's values are written, decided once per batch (the same rule as
/// [`write_value`], without a virtual `oid()` call per value).
enum Mode {
    Text,
    Binary,
    Json,
}

impl Mode {
    /// `advertised` is the OID RowDescription announced (from the DuckDB type). A text or json
    /// column is sent as text whatever the data turned out to be, so binary clients still
    /// read what they were promised.
    fn of(w: &dyn ValueWriter, advertised: u32, binary: bool) -> Mode {
        match (advertised, w.oid()) {
            (oids::JSON, _) | (_, oids::JSON) => Mode::Json,
            (oids::TEXT, _) | (_, oids::TEXT) => Mode::Text,
            _ if binary => Mode::Binary,
            _ => Mode::Text,
        }
    }
}

fn estimate_row_size(cols: &[(DuckType, Format)]) -> usize {
    cols.iter()
        .map(|(t, _)| {
            4 + match pg_type(t).len {
                n if n > 0 => 2 * n as usize + 4,
                _ => 16,
            }
        })
        .sum()
}

/// The DuckDB type Arrow's type most likely came from; used when the caller's type does not
/// describe a nested child (or does not match the array at all).
pub(crate) fn duck_type_of_arrow(dt: &DataType) -> DuckType {
    match dt {
        DataType::Null => DuckType::Null,
        DataType::Boolean => DuckType::Boolean,
        DataType::Int8 => DuckType::TinyInt,
        DataType::Int16 => DuckType::SmallInt,
        DataType::Int32 => DuckType::Integer,
        DataType::Int64 => DuckType::BigInt,
        DataType::UInt8 => DuckType::UTinyInt,
        DataType::UInt16 => DuckType::USmallInt,
        DataType::UInt32 => DuckType::UInteger,
        DataType::UInt64 => DuckType::UBigInt,
        DataType::Float16 | DataType::Float32 => DuckType::Float,
        DataType::Float64 => DuckType::Double,
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) | DataType::Decimal128(p, s)
            if *s >= 0 && *p <= 38 =>
        {
            DuckType::Decimal {
                width: *p,
                scale: *s as u8,
            }
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DuckType::Varchar,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => DuckType::Blob,
        DataType::Date32 | DataType::Date64 => DuckType::Date,
        DataType::Time32(_) | DataType::Time64(_) => DuckType::Time,
        DataType::Timestamp(_, Some(_)) => DuckType::TimestampTz,
        DataType::Timestamp(TimeUnit::Second, None) => DuckType::TimestampS,
        DataType::Timestamp(TimeUnit::Millisecond, None) => DuckType::TimestampMs,
        DataType::Timestamp(TimeUnit::Microsecond, None) => DuckType::Timestamp,
        DataType::Timestamp(TimeUnit::Nanosecond, None) => DuckType::TimestampNs,
        DataType::Interval(_) | DataType::Duration(_) => DuckType::Interval,
        DataType::Dictionary(_, _) => DuckType::Enum,
        DataType::List(f) | DataType::LargeList(f) => {
            DuckType::List(Box::new(duck_type_of_arrow(f.data_type())))
        }
        DataType::FixedSizeList(f, n) => {
            DuckType::Array(Box::new(duck_type_of_arrow(f.data_type())), *n as usize)
        }
        DataType::Struct(fields) => DuckType::Struct(
            fields
                .iter()
                .map(|f| (f.name().clone(), duck_type_of_arrow(f.data_type())))
                .collect(),
        ),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => DuckType::Map(
                Box::new(duck_type_of_arrow(kv[0].data_type())),
                Box::new(duck_type_of_arrow(kv[1].data_type())),
            ),
            other => DuckType::Other(other.to_string()),
        },
        DataType::Union(fields, _) => DuckType::Union(
            fields
                .iter()
                .map(|(_, f)| (f.name().clone(), duck_type_of_arrow(f.data_type())))
                .collect(),
        ),
        other => DuckType::Other(other.to_string()),
    }
}

/// `oid` when the writer can honour it, else `natural` (the engine described the column with
/// a type the data does not have; the data wins).
fn pick(oid: u32, allowed: &[u32], natural: u32) -> u32 {
    if allowed.contains(&oid) {
        oid
    } else {
        natural
    }
}

fn micros<'a, T: ArrowPrimitiveType<Native = i64>>(a: &'a ArrayRef, scale: i64) -> Micros<'a> {
    let p = a.as_primitive::<T>();
    Micros {
        values: p.values(),
        nulls: a.as_ref(),
        scale,
    }
}

fn unit_scale(unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => 1_000_000,
        TimeUnit::Millisecond => 1_000,
        TimeUnit::Microsecond => 1,
        TimeUnit::Nanosecond => -1_000,
    }
}

fn child_type(ty: &DuckType, dt: &DataType) -> DuckType {
    match ty {
        DuckType::List(inner) | DuckType::Array(inner, _) => (**inner).clone(),
        _ => duck_type_of_arrow(dt),
    }
}

/// Picks the writer for one array given the DuckDB type it has.
pub(crate) fn build_writer<'a>(
    a: &'a ArrayRef,
    ty: &DuckType,
) -> Result<Box<dyn ValueWriter + 'a>, TypeError> {
    let target = pg_type(ty).oid;
    let dt = a.data_type();
    Ok(match dt {
        DataType::Null => Box::new(NullW),
        DataType::Boolean => Box::new(BoolW(a.as_any().downcast_ref::<BooleanArray>().unwrap())),
        DataType::Int8 if *ty == DuckType::Boolean => {
            Box::new(Bool8W(a.as_primitive::<Int8Type>()))
        }
        DataType::Int8 => int_w::<Int8Type>(a, target, oids::INT2),
        DataType::Int16 => int_w::<Int16Type>(a, target, oids::INT2),
        DataType::Int32 => int_w::<Int32Type>(a, target, oids::INT4),
        DataType::Int64 => int_w::<Int64Type>(a, target, oids::INT8),
        DataType::UInt8 => int_w::<UInt8Type>(a, target, oids::INT2),
        DataType::UInt16 => int_w::<UInt16Type>(a, target, oids::INT4),
        DataType::UInt32 => int_w::<UInt32Type>(a, target, oids::OID),
        DataType::UInt64 => int_w::<UInt64Type>(a, target, oids::NUMERIC),
        DataType::Float16 => Box::new(FloatW::F16(a.as_primitive())),
        DataType::Float32 => Box::new(FloatW::F32(a.as_primitive())),
        DataType::Float64 => Box::new(FloatW::F64(a.as_primitive())),
        DataType::Decimal32(_, s) | DataType::Decimal64(_, s) | DataType::Decimal128(_, s)
            if *s < 0 =>
        {
            return Err(TypeError::Unsupported(format!(
                "decimal with negative scale {s}"
            )))
        }
        DataType::Decimal32(_, s) => Box::new(DecimalW {
            arr: a.as_primitive::<Decimal32Type>(),
            scale: *s as u8,
            unsigned: false,
        }),
        DataType::Decimal64(_, s) => Box::new(DecimalW {
            arr: a.as_primitive::<Decimal64Type>(),
            scale: *s as u8,
            unsigned: false,
        }),
        DataType::Decimal128(_, s) => Box::new(DecimalW {
            arr: a.as_primitive::<Decimal128Type>(),
            scale: *s as u8,
            unsigned: *ty == DuckType::UHugeInt,
        }),
        DataType::Decimal256(_, s) if *s >= 0 => Box::new(Decimal256W {
            arr: a.as_primitive::<Decimal256Type>(),
            scale: *s as u8,
        }),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let strs = match dt {
                DataType::Utf8 => Strs::Utf8(a.as_string::<i32>()),
                DataType::LargeUtf8 => Strs::Large(a.as_string::<i64>()),
                _ => Strs::View(a.as_string_view()),
            };
            let kind = match ty {
                DuckType::Uuid => StrKind::Uuid,
                DuckType::Json => StrKind::Json,
                t if t.is_composite() => StrKind::Json,
                DuckType::VarInt | DuckType::UHugeInt | DuckType::HugeInt | DuckType::UBigInt => {
                    StrKind::Numeric
                }
                DuckType::Bit => StrKind::Bits,
                _ => StrKind::Text,
            };
            Box::new(StrW { strs, kind })
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            let bins = match dt {
                DataType::Binary => Bins::Bin(a.as_binary::<i32>()),
                DataType::LargeBinary => Bins::Large(a.as_binary::<i64>()),
                DataType::BinaryView => Bins::View(a.as_binary_view()),
                _ => Bins::Fixed(a.as_fixed_size_binary()),
            };
            let width = match dt {
                DataType::FixedSizeBinary(n) => Some(*n),
                _ => None,
            };
            let kind = match (ty, width) {
                (DuckType::Uuid, Some(16)) => BinKind::Uuid,
                (DuckType::HugeInt, Some(16)) => BinKind::HugeLe { unsigned: false },
                (DuckType::UHugeInt, Some(16)) => BinKind::HugeLe { unsigned: true },
                (DuckType::TimeTz, Some(8)) => BinKind::TimeTzBits,
                (DuckType::Bit, _) => BinKind::DuckBit,
                (DuckType::VarInt, _) => BinKind::DuckBignum,
                _ => BinKind::Bytea,
            };
            Box::new(BinW { bins, kind })
        }
        DataType::Date32 => Box::new(DateW::D32(a.as_primitive())),
        DataType::Date64 => Box::new(DateW::D64(a.as_primitive())),
        DataType::Time32(unit) => {
            // Time32 holds i32; widen through a small owned copy is not possible without
            // allocation, so read it via the Int64-free path below.
            return time32_writer(a, unit, *ty == DuckType::TimeTz);
        }
        DataType::Time64(unit) => {
            let m = match unit {
                TimeUnit::Nanosecond => micros::<Time64NanosecondType>(a, -1_000),
                _ => micros::<Time64MicrosecondType>(a, 1),
            };
            Box::new(TimeW {
                m,
                tz: *ty == DuckType::TimeTz,
            })
        }
        DataType::Timestamp(unit, tz) => {
            let scale = unit_scale(unit);
            let m = match unit {
                TimeUnit::Second => micros::<TimestampSecondType>(a, scale),
                TimeUnit::Millisecond => micros::<TimestampMillisecondType>(a, scale),
                TimeUnit::Microsecond => micros::<TimestampMicrosecondType>(a, scale),
                TimeUnit::Nanosecond => micros::<TimestampNanosecondType>(a, scale),
            };
            let tz = match ty {
                DuckType::TimestampTz | DuckType::TimestampTzNs => true,
                DuckType::Timestamp
                | DuckType::TimestampS
                | DuckType::TimestampMs
                | DuckType::TimestampNs => false,
                _ => tz.is_some(),
            };
            Box::new(TimestampW { m, tz })
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            Box::new(IntervalW::MonthDayNano(a.as_primitive()))
        }
        DataType::Interval(IntervalUnit::DayTime) => Box::new(IntervalW::DayTime(a.as_primitive())),
        DataType::Interval(IntervalUnit::YearMonth) => {
            Box::new(IntervalW::YearMonth(a.as_primitive()))
        }
        DataType::Duration(unit) => {
            let scale = unit_scale(unit);
            Box::new(IntervalW::Duration(match unit {
                TimeUnit::Second => micros::<DurationSecondType>(a, scale),
                TimeUnit::Millisecond => micros::<DurationMillisecondType>(a, scale),
                TimeUnit::Microsecond => micros::<DurationMicrosecondType>(a, scale),
                TimeUnit::Nanosecond => micros::<DurationNanosecondType>(a, scale),
            }))
        }
        DataType::Dictionary(key, value) => {
            let value_ty = match ty {
                DuckType::Enum | DuckType::Varchar => DuckType::Varchar,
                DuckType::Other(_) => duck_type_of_arrow(value),
                t => t.clone(),
            };
            match key.as_ref() {
                DataType::Int8 => dict_w::<Int8Type>(a, &value_ty)?,
                DataType::Int16 => dict_w::<Int16Type>(a, &value_ty)?,
                DataType::Int32 => dict_w::<Int32Type>(a, &value_ty)?,
                DataType::Int64 => dict_w::<Int64Type>(a, &value_ty)?,
                DataType::UInt8 => dict_w::<UInt8Type>(a, &value_ty)?,
                DataType::UInt16 => dict_w::<UInt16Type>(a, &value_ty)?,
                DataType::UInt32 => dict_w::<UInt32Type>(a, &value_ty)?,
                DataType::UInt64 => dict_w::<UInt64Type>(a, &value_ty)?,
                other => {
                    return Err(TypeError::Unsupported(format!(
                        "dictionary with {other} keys"
                    )))
                }
            }
        }
        DataType::List(f) => {
            let arr = a.as_list::<i32>();
            list_w(ListStore::Var(arr), arr.values(), ty, f.data_type())?
        }
        DataType::LargeList(f) => {
            let arr = a.as_list::<i64>();
            list_w(ListStore::Var(arr), arr.values(), ty, f.data_type())?
        }
        DataType::FixedSizeList(f, _) => {
            let arr = a
                .as_any()
                .downcast_ref::<FixedSizeListArray>()
                .expect("FixedSizeList");
            list_w::<i32>(ListStore::Fixed(arr), arr.values(), ty, f.data_type())?
        }
        DataType::Struct(fields) => {
            let arr = a.as_any().downcast_ref::<StructArray>().expect("Struct");
            let duck_fields = match ty {
                DuckType::Struct(fs) if fs.len() == fields.len() => Some(fs),
                _ => None,
            };
            let mut ws = Vec::with_capacity(fields.len());
            for (n, f) in fields.iter().enumerate() {
                let fty = match duck_fields {
                    Some(fs) => fs[n].1.clone(),
                    None => duck_type_of_arrow(f.data_type()),
                };
                ws.push((f.name().clone(), build_writer(arr.column(n), &fty)?));
            }
            Box::new(StructW { arr, fields: ws })
        }
        DataType::Map(_, _) => {
            let arr = a.as_any().downcast_ref::<MapArray>().expect("Map");
            let (kt, vt) = match ty {
                DuckType::Map(k, v) => ((**k).clone(), (**v).clone()),
                _ => (
                    duck_type_of_arrow(arr.keys().data_type()),
                    duck_type_of_arrow(arr.values().data_type()),
                ),
            };
            Box::new(MapW {
                arr,
                keys: build_writer(arr.keys(), &kt)?,
                values: build_writer(arr.values(), &vt)?,
            })
        }
        DataType::Union(fields, _) => {
            let arr = a.as_any().downcast_ref::<UnionArray>().expect("Union");
            let duck_members = match ty {
                DuckType::Union(ms) if ms.len() == fields.len() => Some(ms),
                _ => None,
            };
            let mut members: Vec<Option<(String, Box<dyn ValueWriter + 'a>)>> = Vec::new();
            for (n, (id, f)) in fields.iter().enumerate() {
                if id < 0 {
                    continue;
                }
                let mty = match duck_members {
                    Some(ms) => ms[n].1.clone(),
                    None => duck_type_of_arrow(f.data_type()),
                };
                let idx = id as usize;
                if members.len() <= idx {
                    members.resize_with(idx + 1, || None);
                }
                members[idx] = Some((f.name().clone(), build_writer(arr.child(id), &mty)?));
            }
            Box::new(UnionW { arr, members })
        }
        other => {
            return Err(TypeError::Unsupported(format!(
                "cannot send Arrow type {other} (DuckDB type {}) to a PostgreSQL client",
                ty.sql_name()
            )))
        }
    })
}

fn int_w<'a, T>(a: &'a ArrayRef, target: u32, natural: u32) -> Box<dyn ValueWriter + 'a>
where
    T: ArrowPrimitiveType,
    T::Native: itoa::Integer + Into<i128>,
{
    let oid = pick(
        target,
        &[
            oids::INT2,
            oids::INT4,
            oids::INT8,
            oids::OID,
            oids::NUMERIC,
            oids::TEXT,
        ],
        natural,
    );
    Box::new(IntW {
        arr: a.as_primitive::<T>(),
        oid,
    })
}

fn dict_w<'a, K>(
    a: &'a ArrayRef,
    value_ty: &DuckType,
) -> Result<Box<dyn ValueWriter + 'a>, TypeError>
where
    K: ArrowDictionaryKeyType,
{
    let arr = a
        .as_any()
        .downcast_ref::<DictionaryArray<K>>()
        .expect("dictionary");
    Ok(Box::new(DictW {
        arr,
        values: build_writer(arr.values(), value_ty)?,
    }))
}

fn list_w<'a, O: duckdb::arrow::array::OffsetSizeTrait>(
    store: ListStore<'a, O>,
    values: &'a ArrayRef,
    ty: &DuckType,
    child_dt: &DataType,
) -> Result<Box<dyn ValueWriter + 'a>, TypeError> {
    let cty = child_type(ty, child_dt);
    let child = build_writer(values, &cty)?;
    // The array type follows the list's own (DuckDB) type when it is a list; otherwise what
    // the data is.
    let list_ty = match ty {
        DuckType::List(_) | DuckType::Array(..) => ty.clone(),
        _ => DuckType::List(Box::new(cty)),
    };
    Ok(Box::new(ListW {
        store,
        child,
        oid: pg_type(&list_ty).oid,
        scratch: RefCell::new(BytesMut::new()),
    }))
}

/// Time32 (seconds or milliseconds) is not produced by DuckDB; supported by widening.
fn time32_writer<'a>(
    a: &'a ArrayRef,
    unit: &TimeUnit,
    tz: bool,
) -> Result<Box<dyn ValueWriter + 'a>, TypeError> {
    struct Time32W<'a> {
        vals: &'a [i32],
        nulls: &'a dyn Array,
        scale: i64,
        tz: bool,
    }
    impl ValueWriter for Time32W<'_> {
        fn is_null(&self, i: usize) -> bool {
            self.nulls.is_null(i)
        }
        fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
            let v = self.vals[i] as i64 * self.scale;
            if self.tz {
                super::text::write_timetz(v, 0, out);
            } else {
                super::text::write_time(v, out);
            }
            Ok(())
        }
        fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
            out.put_i64(self.vals[i] as i64 * self.scale);
            if self.tz {
                out.put_i32(0);
            }
            Ok(())
        }
        fn oid(&self) -> u32 {
            if self.tz {
                oids::TIMETZ
            } else {
                oids::TIME
            }
        }
    }
    let (vals, scale): (&[i32], i64) = match unit {
        TimeUnit::Second => (a.as_primitive::<Time32SecondType>().values(), 1_000_000),
        TimeUnit::Millisecond => (a.as_primitive::<Time32MillisecondType>().values(), 1_000),
        other => {
            return Err(TypeError::Unsupported(format!("Time32 in {other:?}")));
        }
    };
    Ok(Box::new(Time32W {
        vals,
        nulls: a.as_ref(),
        scale,
        tz,
    }))
}
