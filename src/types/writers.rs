//! Value writers for scalar Arrow arrays. A writer is built once per column per batch (the
//! downcast happens there) and then asked for one value at a time, appending straight into the
//! row buffer.

use bytes::{BufMut, BytesMut};
use duckdb::arrow::array::{
    Array, ArrowPrimitiveType, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray,
    LargeBinaryArray, LargeStringArray, PrimitiveArray, StringArray, StringViewArray,
};
use duckdb::arrow::datatypes::{i256, IntervalMonthDayNano};

use super::binary::{write_numeric, write_numeric_u64, write_varbit};
use super::calendar::*;
use super::oid::oids;
use super::text::*;
use super::TypeError;

/// One column (or nested child) of a batch, ready to be written value by value.
pub(crate) trait ValueWriter {
    fn is_null(&self, i: usize) -> bool;
    /// PostgreSQL text output of value `i` (not NULL).
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError>;
    /// PostgreSQL binary send format of value `i` (not NULL), for [`ValueWriter::oid`].
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError>;
    /// The value as JSON (inside STRUCT/MAP/UNION renderings). Default: its text as a string.
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let mut tmp = BytesMut::new();
        self.text(i, &mut tmp)?;
        write_json_string(&tmp, out);
        Ok(())
    }
    /// The PostgreSQL type the values are sent as.
    fn oid(&self) -> u32;
    /// True when the text never needs quoting as an array element (numbers, booleans).
    fn quote_free(&self) -> bool {
        false
    }
    /// Lists expose their structure so nested lists can become multi-dimensional arrays.
    fn as_list(&self) -> Option<&dyn super::nested::ListAccess> {
        None
    }
}

/// Writes value `i` of `w` in `format`. Types sent as text or json use their text (json)
/// rendering for the binary format too, which is what PostgreSQL's textsend/json_send do.
#[inline]
pub(crate) fn write_value(
    w: &dyn ValueWriter,
    i: usize,
    binary: bool,
    out: &mut BytesMut,
) -> Result<(), TypeError> {
    match w.oid() {
        oids::JSON => w.json(i, out),
        oids::TEXT => w.text(i, out),
        _ if binary => w.binary(i, out),
        _ => w.text(i, out),
    }
}

fn null_at(arr: &dyn Array, i: usize) -> bool {
    arr.is_null(i)
}

/// An all-NULL column (DuckDB's NULL type).
pub(crate) struct NullW;

impl ValueWriter for NullW {
    fn is_null(&self, _: usize) -> bool {
        true
    }
    fn text(&self, _: usize, _: &mut BytesMut) -> Result<(), TypeError> {
        Ok(())
    }
    fn binary(&self, _: usize, _: &mut BytesMut) -> Result<(), TypeError> {
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::TEXT
    }
}

pub(crate) struct BoolW<'a>(pub &'a BooleanArray);

impl ValueWriter for BoolW<'_> {
    fn is_null(&self, i: usize) -> bool {
        null_at(self.0, i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8(if self.0.value(i) { b't' } else { b'f' });
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8(self.0.value(i) as u8);
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.extend_from_slice(if self.0.value(i) { b"true" } else { b"false" });
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::BOOL
    }
    fn quote_free(&self) -> bool {
        true
    }
}

/// BOOLEAN exported as `arrow.bool8` (an Int8 array) under `arrow_lossless_conversion`.
pub(crate) struct Bool8W<'a>(pub &'a PrimitiveArray<duckdb::arrow::datatypes::Int8Type>);

impl ValueWriter for Bool8W<'_> {
    fn is_null(&self, i: usize) -> bool {
        null_at(self.0, i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8(if self.0.value(i) != 0 { b't' } else { b'f' });
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8((self.0.value(i) != 0) as u8);
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.extend_from_slice(if self.0.value(i) != 0 {
            b"true"
        } else {
            b"false"
        });
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::BOOL
    }
    fn quote_free(&self) -> bool {
        true
    }
}

/// Integers of any Arrow width, sent as int2/int4/int8 or numeric (UBIGINT).
pub(crate) struct IntW<'a, T: ArrowPrimitiveType> {
    pub arr: &'a PrimitiveArray<T>,
    pub oid: u32,
}

impl<T> ValueWriter for IntW<'_, T>
where
    T: ArrowPrimitiveType,
    T::Native: itoa::Integer + Into<i128>,
{
    fn is_null(&self, i: usize) -> bool {
        null_at(self.arr, i)
    }
    #[inline]
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        write_int(self.arr.value(i), out);
        Ok(())
    }
    #[inline]
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let v: i128 = self.arr.value(i).into();
        let range = |t: &str| TypeError::out_of_range(t, v);
        match self.oid {
            oids::INT2 => out.put_i16(i16::try_from(v).map_err(|_| range("smallint"))?),
            oids::INT4 => out.put_i32(i32::try_from(v).map_err(|_| range("integer"))?),
            oids::INT8 => out.put_i64(i64::try_from(v).map_err(|_| range("bigint"))?),
            oids::OID => out.put_u32(u32::try_from(v).map_err(|_| range("oid"))?),
            _ => write_numeric_u64(v < 0, v.unsigned_abs() as u64, 0, out),
        }
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.text(i, out)
    }
    fn oid(&self) -> u32 {
        self.oid
    }
    fn quote_free(&self) -> bool {
        true
    }
}

/// float4 / float8 (and Float16, widened).
pub(crate) enum FloatW<'a> {
    F16(&'a PrimitiveArray<duckdb::arrow::datatypes::Float16Type>),
    F32(&'a PrimitiveArray<duckdb::arrow::datatypes::Float32Type>),
    F64(&'a PrimitiveArray<duckdb::arrow::datatypes::Float64Type>),
}

impl ValueWriter for FloatW<'_> {
    fn is_null(&self, i: usize) -> bool {
        match self {
            FloatW::F16(a) => null_at(*a, i),
            FloatW::F32(a) => null_at(*a, i),
            FloatW::F64(a) => null_at(*a, i),
        }
    }
    #[inline]
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        match self {
            FloatW::F16(a) => write_float4(a.value(i).to_f32(), out),
            FloatW::F32(a) => write_float4(a.value(i), out),
            FloatW::F64(a) => write_float8(a.value(i), out),
        }
        Ok(())
    }
    #[inline]
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        match self {
            FloatW::F16(a) => out.put_f32(a.value(i).to_f32()),
            FloatW::F32(a) => out.put_f32(a.value(i)),
            FloatW::F64(a) => out.put_f64(a.value(i)),
        }
        Ok(())
    }
    /// As DuckDB's `to_json`: FLOAT widened to double, yyjson's layout.
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let v = match self {
            FloatW::F16(a) => a.value(i).to_f64(),
            FloatW::F32(a) => a.value(i) as f64,
            FloatW::F64(a) => a.value(i),
        };
        write_json_double(v, out);
        Ok(())
    }
    fn oid(&self) -> u32 {
        match self {
            FloatW::F64(_) => oids::FLOAT8,
            _ => oids::FLOAT4,
        }
    }
    fn quote_free(&self) -> bool {
        true
    }
}

/// Decimals of width ≤ 128 bits (DECIMAL, and HUGEINT/UHUGEINT exported as Decimal128(38,0)).
pub(crate) struct DecimalW<'a, T: ArrowPrimitiveType> {
    pub arr: &'a PrimitiveArray<T>,
    pub scale: u8,
    /// UHUGEINT values above i128::MAX arrive wrapped to negative; read them back as u128.
    pub unsigned: bool,
}

impl<T> DecimalW<'_, T>
where
    T: ArrowPrimitiveType,
    T::Native: Into<i128>,
{
    #[inline]
    fn parts(&self, i: usize) -> (bool, u128) {
        let v: i128 = self.arr.value(i).into();
        if self.unsigned {
            (false, v as u128)
        } else {
            (v < 0, v.unsigned_abs())
        }
    }
}

impl<T> ValueWriter for DecimalW<'_, T>
where
    T: ArrowPrimitiveType,
    T::Native: Into<i128>,
{
    fn is_null(&self, i: usize) -> bool {
        null_at(self.arr, i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (neg, mag) = self.parts(i);
        if neg {
            out.put_u8(b'-');
        }
        write_unsigned_decimal(mag, self.scale, out);
        Ok(())
    }
    #[inline]
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (neg, mag) = self.parts(i);
        match u64::try_from(mag) {
            Ok(m) => write_numeric_u64(neg, m, self.scale as usize, out),
            Err(_) => {
                let mut b = itoa::Buffer::new();
                write_numeric(neg, b.format(mag).as_bytes(), self.scale as usize, out);
            }
        }
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (neg, mag) = self.parts(i);
        write_json_decimal(neg, mag, self.scale, out);
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::NUMERIC
    }
    fn quote_free(&self) -> bool {
        true
    }
}

/// Decimal256 (not produced by DuckDB today, handled for completeness).
pub(crate) struct Decimal256W<'a> {
    pub arr: &'a PrimitiveArray<duckdb::arrow::datatypes::Decimal256Type>,
    pub scale: u8,
}

impl Decimal256W<'_> {
    fn digits(&self, i: usize) -> (bool, String) {
        let v: i256 = self.arr.value(i);
        let s = v.to_string();
        match s.strip_prefix('-') {
            Some(d) => (true, d.to_string()),
            None => (false, s),
        }
    }
}

impl ValueWriter for Decimal256W<'_> {
    fn is_null(&self, i: usize) -> bool {
        null_at(self.arr, i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (neg, d) = self.digits(i);
        write_digits_with_scale(neg, d.as_bytes(), self.scale as usize, out);
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (neg, d) = self.digits(i);
        write_numeric(neg, d.as_bytes(), self.scale as usize, out);
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        self.text(i, out)
    }
    fn oid(&self) -> u32 {
        oids::NUMERIC
    }
    fn quote_free(&self) -> bool {
        true
    }
}

fn write_digits_with_scale(neg: bool, digits: &[u8], scale: usize, out: &mut BytesMut) {
    if neg {
        out.put_u8(b'-');
    }
    if scale == 0 {
        out.extend_from_slice(digits);
    } else if digits.len() > scale {
        let split = digits.len() - scale;
        out.extend_from_slice(&digits[..split]);
        out.put_u8(b'.');
        out.extend_from_slice(&digits[split..]);
    } else {
        out.extend_from_slice(b"0.");
        for _ in digits.len()..scale {
            out.put_u8(b'0');
        }
        out.extend_from_slice(digits);
    }
}

/// Any of Arrow's string layouts.
pub(crate) enum Strs<'a> {
    Utf8(&'a StringArray),
    Large(&'a LargeStringArray),
    View(&'a StringViewArray),
}

impl Strs<'_> {
    #[inline]
    fn get(&self, i: usize) -> &[u8] {
        match self {
            Strs::Utf8(a) => a.value(i).as_bytes(),
            Strs::Large(a) => a.value(i).as_bytes(),
            Strs::View(a) => a.value(i).as_bytes(),
        }
    }
    fn is_null(&self, i: usize) -> bool {
        match self {
            Strs::Utf8(a) => a.is_null(i),
            Strs::Large(a) => a.is_null(i),
            Strs::View(a) => a.is_null(i),
        }
    }
}

/// What a string column holds, which decides its binary form.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum StrKind {
    Text,
    Json,
    /// UUID in DuckDB's default export: the hyphenated text.
    Uuid,
    /// A decimal integer in text (VARINT cast to VARCHAR).
    Numeric,
    /// A bit string of '0'/'1'.
    Bits,
}

pub(crate) struct StrW<'a> {
    pub strs: Strs<'a>,
    pub kind: StrKind,
}

impl ValueWriter for StrW<'_> {
    fn is_null(&self, i: usize) -> bool {
        self.strs.is_null(i)
    }
    #[inline]
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.extend_from_slice(self.strs.get(i));
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let s = self.strs.get(i);
        match self.kind {
            StrKind::Text | StrKind::Json => out.extend_from_slice(s),
            StrKind::Uuid => {
                let v = parse_uuid_bytes(s)
                    .ok_or_else(|| TypeError::invalid("uuid", &String::from_utf8_lossy(s)))?;
                out.put_u128(v);
            }
            StrKind::Numeric => {
                let (neg, digits) = match s.first() {
                    Some(b'-') => (true, &s[1..]),
                    Some(b'+') => (false, &s[1..]),
                    _ => (false, s),
                };
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return Err(TypeError::invalid("numeric", &String::from_utf8_lossy(s)));
                }
                write_numeric(neg, digits, 0, out);
            }
            StrKind::Bits => write_varbit(s, out),
        }
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        match self.kind {
            StrKind::Json | StrKind::Numeric => out.extend_from_slice(self.strs.get(i)),
            _ => write_json_string(self.strs.get(i), out),
        }
        Ok(())
    }
    fn oid(&self) -> u32 {
        match self.kind {
            StrKind::Text => oids::TEXT,
            StrKind::Json => oids::JSON,
            StrKind::Uuid => oids::UUID,
            StrKind::Numeric => oids::NUMERIC,
            StrKind::Bits => oids::VARBIT,
        }
    }
    fn quote_free(&self) -> bool {
        matches!(self.kind, StrKind::Uuid | StrKind::Numeric | StrKind::Bits)
    }
}

/// Parses a UUID's hex digits, ignoring hyphens and braces.
pub(crate) fn parse_uuid_bytes(s: &[u8]) -> Option<u128> {
    let mut v: u128 = 0;
    let mut n = 0;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            b'-' | b'{' | b'}' => continue,
            _ => return None,
        };
        v = (v << 4) | d as u128;
        n += 1;
    }
    (n == 32).then_some(v)
}

/// Any of Arrow's binary layouts.
pub(crate) enum Bins<'a> {
    Bin(&'a BinaryArray),
    Large(&'a LargeBinaryArray),
    View(&'a BinaryViewArray),
    Fixed(&'a FixedSizeBinaryArray),
}

impl Bins<'_> {
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        match self {
            Bins::Bin(a) => a.value(i),
            Bins::Large(a) => a.value(i),
            Bins::View(a) => a.value(i),
            Bins::Fixed(a) => a.value(i),
        }
    }
    fn is_null(&self, i: usize) -> bool {
        match self {
            Bins::Bin(a) => a.is_null(i),
            Bins::Large(a) => a.is_null(i),
            Bins::View(a) => a.is_null(i),
            Bins::Fixed(a) => a.is_null(i),
        }
    }
}

/// What a binary column holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum BinKind {
    Bytea,
    /// 16 bytes in RFC order (`arrow.uuid`).
    Uuid,
    /// DuckDB's BIT layout: a padding-count byte, then the bits with that many pad bits first.
    DuckBit,
    /// DuckDB's BIGNUM layout: 3 header bytes (sign + length), then big-endian magnitude bytes,
    /// all bit-inverted when negative.
    DuckBignum,
    /// `DuckDB.hugeint` / `DuckDB.uhugeint`: 16 little-endian bytes.
    HugeLe {
        unsigned: bool,
    },
    /// `DuckDB.time_tz`: DuckDB's packed dtime_tz_t, little-endian.
    TimeTzBits,
}

pub(crate) struct BinW<'a> {
    pub bins: Bins<'a>,
    pub kind: BinKind,
}

impl BinW<'_> {
    fn bits_text(b: &[u8], out: &mut BytesMut) -> Result<(), TypeError> {
        let pad = *b
            .first()
            .ok_or_else(|| TypeError::bad_binary("bit", "empty DuckDB bit string"))?
            as usize;
        let nbits = (b.len() - 1) * 8;
        for bit in pad.min(nbits)..nbits {
            let byte = b[1 + bit / 8];
            out.put_u8(if byte & (0x80 >> (bit % 8)) != 0 {
                b'1'
            } else {
                b'0'
            });
        }
        Ok(())
    }

    fn huge(b: &[u8], unsigned: bool) -> Result<(bool, u128), TypeError> {
        let arr: [u8; 16] = b
            .try_into()
            .map_err(|_| TypeError::bad_binary("hugeint", format!("{} bytes", b.len())))?;
        let u = u128::from_le_bytes(arr);
        Ok(if unsigned {
            (false, u)
        } else {
            let v = u as i128;
            (v < 0, v.unsigned_abs())
        })
    }

    fn timetz(b: &[u8]) -> Result<(i64, i32), TypeError> {
        let arr: [u8; 8] = b
            .try_into()
            .map_err(|_| TypeError::bad_binary("timetz", format!("{} bytes", b.len())))?;
        let bits = u64::from_le_bytes(arr);
        const MAX_OFFSET: i32 = 16 * 60 * 60 - 1;
        let micros = (bits >> 24) as i64;
        let offset = MAX_OFFSET - (bits & 0xFF_FFFF) as i32;
        Ok((micros, offset))
    }
}

/// Decimal digits of a DuckDB BIGNUM blob.
pub(crate) fn bignum_digits(b: &[u8]) -> Result<(bool, String), TypeError> {
    if b.len() < 4 {
        return Err(TypeError::bad_binary("bignum", "shorter than its header"));
    }
    let neg = b[0] & 0x80 == 0;
    let mut mag: Vec<u8> = b[3..].iter().map(|&x| if neg { !x } else { x }).collect();
    // Schoolbook division by 10^9 over the big-endian bytes.
    let mut chunks = Vec::new();
    while mag.iter().any(|&x| x != 0) {
        let mut rem: u64 = 0;
        for byte in mag.iter_mut() {
            let cur = (rem << 8) | *byte as u64;
            *byte = (cur / 1_000_000_000) as u8;
            rem = cur % 1_000_000_000;
        }
        chunks.push(rem as u32);
    }
    let mut s = String::new();
    match chunks.split_last() {
        None => s.push('0'),
        Some((first, rest)) => {
            s.push_str(&first.to_string());
            for c in rest.iter().rev() {
                s.push_str(&format!("{c:09}"));
            }
        }
    }
    Ok((neg && s != "0", s))
}

impl ValueWriter for BinW<'_> {
    fn is_null(&self, i: usize) -> bool {
        self.bins.is_null(i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let b = self.bins.get(i);
        match self.kind {
            BinKind::Bytea => write_bytea_hex(b, out),
            BinKind::Uuid => {
                let arr: [u8; 16] = b
                    .try_into()
                    .map_err(|_| TypeError::bad_binary("uuid", format!("{} bytes", b.len())))?;
                write_uuid(u128::from_be_bytes(arr), out);
            }
            BinKind::DuckBit => Self::bits_text(b, out)?,
            BinKind::DuckBignum => {
                let (neg, d) = bignum_digits(b)?;
                if neg {
                    out.put_u8(b'-');
                }
                out.extend_from_slice(d.as_bytes());
            }
            BinKind::HugeLe { unsigned } => {
                let (neg, mag) = Self::huge(b, unsigned)?;
                if neg {
                    out.put_u8(b'-');
                }
                write_int(mag, out);
            }
            BinKind::TimeTzBits => {
                let (micros, offset) = Self::timetz(b)?;
                write_timetz(micros, offset, out);
            }
        }
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let b = self.bins.get(i);
        match self.kind {
            BinKind::Bytea | BinKind::Uuid => out.extend_from_slice(b),
            BinKind::DuckBit => {
                let mut bits = BytesMut::new();
                Self::bits_text(b, &mut bits)?;
                write_varbit(&bits, out);
            }
            BinKind::DuckBignum => {
                let (neg, d) = bignum_digits(b)?;
                write_numeric(neg, d.as_bytes(), 0, out);
            }
            BinKind::HugeLe { unsigned } => {
                let (neg, mag) = Self::huge(b, unsigned)?;
                let mut buf = itoa::Buffer::new();
                write_numeric(neg, buf.format(mag).as_bytes(), 0, out);
            }
            BinKind::TimeTzBits => {
                let (micros, offset) = Self::timetz(b)?;
                out.put_i64(micros);
                // PostgreSQL stores the zone as seconds *west* of UTC.
                out.put_i32(-offset);
            }
        }
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        match self.kind {
            BinKind::DuckBignum | BinKind::HugeLe { .. } => self.text(i, out),
            BinKind::Bytea => {
                let mut tmp = BytesMut::new();
                write_duck_blob(self.bins.get(i), &mut tmp);
                write_json_string(&tmp, out);
                Ok(())
            }
            _ => {
                let mut tmp = BytesMut::new();
                self.text(i, &mut tmp)?;
                write_json_string(&tmp, out);
                Ok(())
            }
        }
    }
    fn oid(&self) -> u32 {
        match self.kind {
            BinKind::Bytea => oids::BYTEA,
            BinKind::Uuid => oids::UUID,
            BinKind::DuckBit => oids::VARBIT,
            BinKind::DuckBignum | BinKind::HugeLe { .. } => oids::NUMERIC,
            BinKind::TimeTzBits => oids::TIMETZ,
        }
    }
    fn quote_free(&self) -> bool {
        !matches!(self.kind, BinKind::Bytea)
    }
}

/// Days since 1970 from Date32 or Date64 (milliseconds).
pub(crate) enum DateW<'a> {
    D32(&'a PrimitiveArray<duckdb::arrow::datatypes::Date32Type>),
    D64(&'a PrimitiveArray<duckdb::arrow::datatypes::Date64Type>),
}

impl DateW<'_> {
    #[inline]
    fn days(&self, i: usize) -> i32 {
        match self {
            DateW::D32(a) => a.value(i),
            DateW::D64(a) => a.value(i).div_euclid(86_400_000) as i32,
        }
    }
}

impl ValueWriter for DateW<'_> {
    fn is_null(&self, i: usize) -> bool {
        match self {
            DateW::D32(a) => a.is_null(i),
            DateW::D64(a) => a.is_null(i),
        }
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        write_date(self.days(i), out);
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let d = self.days(i);
        out.put_i32(duck_date_to_pg(d).ok_or_else(|| TypeError::out_of_range("date", d))?);
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8(b'"');
        write_duck_date(self.days(i), out);
        out.put_u8(b'"');
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::DATE
    }
}

/// A column of i64 values in some unit, converted to microseconds.
pub(crate) struct Micros<'a> {
    pub values: &'a [i64],
    pub nulls: &'a dyn Array,
    /// Multiply (positive) or divide (negative) to get microseconds.
    pub scale: i64,
}

impl Micros<'_> {
    #[inline]
    fn get(&self, i: usize) -> Result<i64, TypeError> {
        let v = self.values[i];
        if v == DUCK_TS_INF || v == DUCK_TS_NINF {
            return Ok(v);
        }
        if self.scale >= 1 {
            v.checked_mul(self.scale)
                .ok_or_else(|| TypeError::out_of_range("timestamp", v))
        } else {
            Ok(v.div_euclid(-self.scale))
        }
    }
}

/// TIME / TIME_NS (and TIMETZ in the default export, whose offset DuckDB drops: sent as +00).
pub(crate) struct TimeW<'a> {
    pub m: Micros<'a>,
    pub tz: bool,
}

impl ValueWriter for TimeW<'_> {
    fn is_null(&self, i: usize) -> bool {
        self.m.nulls.is_null(i)
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let v = self.m.get(i)?;
        if self.tz {
            write_timetz(v, 0, out);
        } else {
            write_time(v, out);
        }
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_i64(self.m.get(i)?);
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

/// TIMESTAMP in any unit, or TIMESTAMPTZ.
pub(crate) struct TimestampW<'a> {
    pub m: Micros<'a>,
    pub tz: bool,
}

impl ValueWriter for TimestampW<'_> {
    fn is_null(&self, i: usize) -> bool {
        self.m.nulls.is_null(i)
    }
    #[inline]
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        write_timestamp(self.m.get(i)?, self.tz, out);
        Ok(())
    }
    #[inline]
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let v = self.m.get(i)?;
        out.put_i64(duck_ts_to_pg(v).ok_or_else(|| TypeError::out_of_range("timestamp", v))?);
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        out.put_u8(b'"');
        write_duck_timestamp(self.m.get(i)?, self.tz, out);
        out.put_u8(b'"');
        Ok(())
    }
    fn oid(&self) -> u32 {
        if self.tz {
            oids::TIMESTAMPTZ
        } else {
            oids::TIMESTAMP
        }
    }
}

/// INTERVAL from any Arrow interval or duration layout.
pub(crate) enum IntervalW<'a> {
    MonthDayNano(&'a PrimitiveArray<duckdb::arrow::datatypes::IntervalMonthDayNanoType>),
    DayTime(&'a PrimitiveArray<duckdb::arrow::datatypes::IntervalDayTimeType>),
    YearMonth(&'a PrimitiveArray<duckdb::arrow::datatypes::IntervalYearMonthType>),
    Duration(Micros<'a>),
}

impl IntervalW<'_> {
    #[inline]
    fn parts(&self, i: usize) -> Result<(i32, i32, i64), TypeError> {
        Ok(match self {
            IntervalW::MonthDayNano(a) => {
                let IntervalMonthDayNano {
                    months,
                    days,
                    nanoseconds,
                } = a.value(i);
                (months, days, nanoseconds / 1000)
            }
            IntervalW::DayTime(a) => {
                let v = a.value(i);
                (0, v.days, v.milliseconds as i64 * 1000)
            }
            IntervalW::YearMonth(a) => (a.value(i), 0, 0),
            IntervalW::Duration(m) => (0, 0, m.get(i)?),
        })
    }
}

impl ValueWriter for IntervalW<'_> {
    fn is_null(&self, i: usize) -> bool {
        match self {
            IntervalW::MonthDayNano(a) => a.is_null(i),
            IntervalW::DayTime(a) => a.is_null(i),
            IntervalW::YearMonth(a) => a.is_null(i),
            IntervalW::Duration(m) => m.nulls.is_null(i),
        }
    }
    fn text(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (m, d, us) = self.parts(i)?;
        write_interval(m, d, us, out);
        Ok(())
    }
    fn binary(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (m, d, us) = self.parts(i)?;
        out.put_i64(us);
        out.put_i32(d);
        out.put_i32(m);
        Ok(())
    }
    fn json(&self, i: usize, out: &mut BytesMut) -> Result<(), TypeError> {
        let (m, d, us) = self.parts(i)?;
        out.put_u8(b'"');
        write_duck_interval(m, d, us, out);
        out.put_u8(b'"');
        Ok(())
    }
    fn oid(&self) -> u32 {
        oids::INTERVAL
    }
}
