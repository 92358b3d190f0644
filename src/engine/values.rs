//! Values and types across the C API: a client's parameter as the DuckDB value of the type
//! its statement expects, and DuckDB's logical types as the server's `DuckType`.

use std::os::raw::c_char;

use duckdb::ffi;

use super::duck::take_c_string;
use super::error::EngineError;
use crate::sqlstate::SqlState;
use crate::types::{DuckType, ParamValue};

/// `v` as a DuckDB value of the type `target` its statement expects; the caller destroys it.
pub(super) unsafe fn make_value(
    v: &ParamValue,
    target: &DuckType,
) -> Result<ffi::duckdb_value, EngineError> {
    unsafe {
        let val = match v {
            ParamValue::Null => ffi::duckdb_create_null_value(),
            ParamValue::Bool(b) => ffi::duckdb_create_bool(*b),
            ParamValue::Int(i) => match target {
                DuckType::TinyInt => ffi::duckdb_create_int8(narrow(*i)?),
                DuckType::SmallInt => ffi::duckdb_create_int16(narrow(*i)?),
                DuckType::Integer => ffi::duckdb_create_int32(narrow(*i)?),
                DuckType::UTinyInt => ffi::duckdb_create_uint8(narrow(*i)?),
                DuckType::USmallInt => ffi::duckdb_create_uint16(narrow(*i)?),
                DuckType::UInteger => ffi::duckdb_create_uint32(narrow(*i)?),
                DuckType::UBigInt => ffi::duckdb_create_uint64(narrow(*i)?),
                DuckType::HugeInt => ffi::duckdb_create_hugeint(hugeint(*i as i128)),
                DuckType::Double => ffi::duckdb_create_double(*i as f64),
                DuckType::Float => ffi::duckdb_create_float(*i as f32),
                DuckType::Decimal { width, scale } => {
                    let value = (*i as i128)
                        .checked_mul(10i128.pow(*scale as u32))
                        .ok_or_else(|| {
                            EngineError::with_state(
                                "numeric value out of range",
                                SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
                            )
                        })?;
                    ffi::duckdb_create_decimal(ffi::duckdb_decimal {
                        width: *width,
                        scale: *scale,
                        value: hugeint(value),
                    })
                }
                _ => ffi::duckdb_create_int64(*i),
            },
            ParamValue::UInt(u) => ffi::duckdb_create_uint64(*u),
            ParamValue::HugeInt(h) => ffi::duckdb_create_hugeint(hugeint(*h)),
            ParamValue::Float(f) => ffi::duckdb_create_float(*f),
            ParamValue::Double(d) => match target {
                DuckType::Float => ffi::duckdb_create_float(*d as f32),
                _ => ffi::duckdb_create_double(*d),
            },
            ParamValue::Decimal {
                value,
                width,
                scale,
            } => {
                if *width > 38 {
                    let s = decimal_text(*value, *scale);
                    ffi::duckdb_create_varchar_length(s.as_ptr() as *const c_char, s.len() as u64)
                } else {
                    ffi::duckdb_create_decimal(ffi::duckdb_decimal {
                        width: *width,
                        scale: *scale,
                        value: hugeint(*value),
                    })
                }
            }
            ParamValue::Text(s) => {
                ffi::duckdb_create_varchar_length(s.as_ptr() as *const c_char, s.len() as u64)
            }
            ParamValue::Blob(b) => ffi::duckdb_create_blob(b.as_ptr(), b.len() as u64),
            ParamValue::Date(d) => ffi::duckdb_create_date(ffi::duckdb_date { days: *d }),
            ParamValue::Time(t) => ffi::duckdb_create_time(ffi::duckdb_time { micros: *t }),
            ParamValue::Timestamp(t) => {
                ffi::duckdb_create_timestamp(ffi::duckdb_timestamp { micros: *t })
            }
            ParamValue::TimestampTz(t) => {
                ffi::duckdb_create_timestamp_tz(ffi::duckdb_timestamp { micros: *t })
            }
            ParamValue::Interval {
                months,
                days,
                micros,
            } => ffi::duckdb_create_interval(ffi::duckdb_interval {
                months: *months,
                days: *days,
                micros: *micros,
            }),
            ParamValue::Uuid(u) => {
                // DuckDB stores UUIDs as a hugeint with the top bit flipped;
                // duckdb_create_uuid takes the plain 128-bit value.
                ffi::duckdb_create_uuid(ffi::duckdb_uhugeint {
                    lower: *u as u64,
                    upper: (*u >> 64) as u64,
                })
            }
            ParamValue::List(items) => {
                let child = match target {
                    DuckType::List(c) | DuckType::Array(c, _) => (**c).clone(),
                    _ => DuckType::Varchar,
                };
                let mut vals = Vec::with_capacity(items.len());
                for it in items {
                    vals.push(make_value(it, &child)?);
                }
                let mut lt = duck_to_logical(&child);
                let list = ffi::duckdb_create_list_value(lt, vals.as_mut_ptr(), vals.len() as u64);
                ffi::duckdb_destroy_logical_type(&mut lt);
                for mut v in vals {
                    ffi::duckdb_destroy_value(&mut v);
                }
                list
            }
        };
        if val.is_null() {
            return Err(EngineError::with_state(
                "could not convert parameter value",
                SqlState::INVALID_TEXT_REPRESENTATION,
            ));
        }
        Ok(val)
    }
}

fn narrow<T: TryFrom<i64>>(i: i64) -> Result<T, EngineError> {
    T::try_from(i).map_err(|_| {
        EngineError::with_state(
            format!("value {i} is out of range for its parameter type"),
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        )
    })
}

fn hugeint(v: i128) -> ffi::duckdb_hugeint {
    ffi::duckdb_hugeint {
        lower: v as u64,
        upper: (v >> 64) as i64,
    }
}

fn decimal_text(value: i128, scale: u8) -> String {
    let neg = value < 0;
    let digits = value.unsigned_abs().to_string();
    let scale = scale as usize;
    let body = if scale == 0 {
        digits
    } else if digits.len() > scale {
        format!(
            "{}.{}",
            &digits[..digits.len() - scale],
            &digits[digits.len() - scale..]
        )
    } else {
        format!("0.{}{}", "0".repeat(scale - digits.len()), digits)
    };
    if neg {
        format!("-{body}")
    } else {
        body
    }
}

/// Builds a DuckDB logical type for list parameters; composite element
/// types are bound as VARCHAR and cast by DuckDB.
unsafe fn duck_to_logical(t: &DuckType) -> ffi::duckdb_logical_type {
    unsafe {
        match t {
            DuckType::List(c) | DuckType::Array(c, _) => {
                let mut inner = duck_to_logical(c);
                let l = ffi::duckdb_create_list_type(inner);
                ffi::duckdb_destroy_logical_type(&mut inner);
                l
            }
            DuckType::Decimal { width, scale } => ffi::duckdb_create_decimal_type(*width, *scale),
            other => ffi::duckdb_create_logical_type(type_id_of(other)),
        }
    }
}

fn type_id_of(t: &DuckType) -> ffi::duckdb_type {
    (match t {
        DuckType::Boolean => 1,
        DuckType::TinyInt => 2,
        DuckType::SmallInt => 3,
        DuckType::Integer => 4,
        DuckType::BigInt => 5,
        DuckType::UTinyInt => 6,
        DuckType::USmallInt => 7,
        DuckType::UInteger => 8,
        DuckType::UBigInt => 9,
        DuckType::Float => 10,
        DuckType::Double => 11,
        DuckType::Timestamp => 12,
        DuckType::Date => 13,
        DuckType::Time => 14,
        DuckType::Interval => 15,
        DuckType::HugeInt => 16,
        DuckType::Blob => 18,
        DuckType::TimestampS => 20,
        DuckType::TimestampMs => 21,
        DuckType::TimestampNs => 22,
        DuckType::Uuid => 27,
        DuckType::TimeTz => 30,
        DuckType::TimestampTz => 31,
        DuckType::UHugeInt => 32,
        _ => 17,
    }) as ffi::duckdb_type
}

/// Reads a DuckDB logical type into the server's description of it.
/// The type `lt` stands for (NULL: unknown), freeing it.
///
/// # Safety
/// `lt` is NULL or a logical type the caller owns.
pub(super) unsafe fn logical_type(mut lt: ffi::duckdb_logical_type) -> DuckType {
    if lt.is_null() {
        return DuckType::Null;
    }
    let t = logical_to_duck(lt);
    ffi::duckdb_destroy_logical_type(&mut lt);
    t
}

pub(super) unsafe fn logical_to_duck(lt: ffi::duckdb_logical_type) -> DuckType {
    unsafe {
        let alias = take_c_string(ffi::duckdb_logical_type_get_alias(lt));
        if let Some(a) = &alias {
            if a.eq_ignore_ascii_case("JSON") {
                return DuckType::Json;
            }
        }
        let child = |mut c: ffi::duckdb_logical_type| {
            let t = logical_to_duck(c);
            ffi::duckdb_destroy_logical_type(&mut c);
            t
        };
        match ffi::duckdb_get_type_id(lt) as u32 {
            1 => DuckType::Boolean,
            2 => DuckType::TinyInt,
            3 => DuckType::SmallInt,
            4 => DuckType::Integer,
            5 => DuckType::BigInt,
            6 => DuckType::UTinyInt,
            7 => DuckType::USmallInt,
            8 => DuckType::UInteger,
            9 => DuckType::UBigInt,
            10 => DuckType::Float,
            11 => DuckType::Double,
            12 => DuckType::Timestamp,
            13 => DuckType::Date,
            14 | 39 => DuckType::Time,
            15 => DuckType::Interval,
            16 => DuckType::HugeInt,
            17 | 37 => DuckType::Varchar,
            18 => DuckType::Blob,
            19 => DuckType::Decimal {
                width: ffi::duckdb_decimal_width(lt),
                scale: ffi::duckdb_decimal_scale(lt),
            },
            20 => DuckType::TimestampS,
            21 => DuckType::TimestampMs,
            22 => DuckType::TimestampNs,
            23 => DuckType::Enum,
            24 => DuckType::List(Box::new(child(ffi::duckdb_list_type_child_type(lt)))),
            25 => {
                let n = ffi::duckdb_struct_type_child_count(lt);
                let mut fields = Vec::with_capacity(n as usize);
                for i in 0..n {
                    let name = take_c_string(ffi::duckdb_struct_type_child_name(lt, i))
                        .unwrap_or_default();
                    fields.push((name, child(ffi::duckdb_struct_type_child_type(lt, i))));
                }
                DuckType::Struct(fields)
            }
            26 => DuckType::Map(
                Box::new(child(ffi::duckdb_map_type_key_type(lt))),
                Box::new(child(ffi::duckdb_map_type_value_type(lt))),
            ),
            27 => DuckType::Uuid,
            28 => {
                let n = ffi::duckdb_union_type_member_count(lt);
                let mut fields = Vec::with_capacity(n as usize);
                for i in 0..n {
                    let name = take_c_string(ffi::duckdb_union_type_member_name(lt, i))
                        .unwrap_or_default();
                    fields.push((name, child(ffi::duckdb_union_type_member_type(lt, i))));
                }
                DuckType::Union(fields)
            }
            29 => DuckType::Bit,
            30 => DuckType::TimeTz,
            31 | 42 => DuckType::TimestampTz,
            32 => DuckType::UHugeInt,
            33 => DuckType::Array(
                Box::new(child(ffi::duckdb_array_type_child_type(lt))),
                ffi::duckdb_array_type_array_size(lt) as usize,
            ),
            35 => DuckType::VarInt,
            36 | 38 | 34 => DuckType::Null,
            other => DuckType::Other(alias.unwrap_or_else(|| format!("type {other}"))),
        }
    }
}
