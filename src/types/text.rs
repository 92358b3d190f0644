//! Scalar values in PostgreSQL's text output format (PostgreSQL 16 defaults: DateStyle ISO,
//! IntervalStyle postgres, TimeZone UTC, extra_float_digits 1, bytea_output hex).
//!
//! Every function appends to the caller's buffer without allocating, so the row encoder can
//! stream millions of values.

use bytes::BytesMut;

use super::calendar::*;

/// `float8out`: shortest round-trip digits, exponent form outside 1e-4 ≤ |v| < 1e15.
pub fn write_float8(v: f64, out: &mut BytesMut) {
    if let Some(s) = special_float(v.is_nan(), v.is_infinite(), v.is_sign_negative()) {
        out.extend_from_slice(s);
    } else if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
    } else {
        let mut buf = ryu::Buffer::new();
        write_pg_float(buf.format_finite(v).as_bytes(), 15, out);
    }
}

/// `float4out`: as float8 but with the fixed-point range 1e-4 ≤ |v| < 1e6.
pub fn write_float4(v: f32, out: &mut BytesMut) {
    if let Some(s) = special_float(v.is_nan(), v.is_infinite(), v.is_sign_negative()) {
        out.extend_from_slice(s);
    } else if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() { b"-0" } else { b"0" });
    } else {
        let mut buf = ryu::Buffer::new();
        write_pg_float(buf.format_finite(v).as_bytes(), 6, out);
    }
}

fn special_float(nan: bool, inf: bool, neg: bool) -> Option<&'static [u8]> {
    if nan {
        Some(b"NaN")
    } else if inf {
        Some(if neg { b"-Infinity" } else { b"Infinity" })
    } else {
        None
    }
}

/// Rewrites ryu's shortest representation ("1.5e-7", "123.0", "1e20") in PostgreSQL's layout.
/// Both use the Ryu algorithm, so the digits are the same; only the layout differs. The result
/// is assembled on the stack and appended once (tiny appends each cost a memcpy call).
fn write_pg_float(ryu: &[u8], fixed_limit: i32, out: &mut BytesMut) {
    let (neg, digits, n, exp) = shortest_digits(ryu);
    let digits = &digits[..n];
    let mut b = [0u8; 48];
    let mut k = 0;
    let mut push = |bytes: &[u8]| {
        b[k..k + bytes.len()].copy_from_slice(bytes);
        k += bytes.len();
    };
    if neg {
        push(b"-");
    }
    if (-4..fixed_limit).contains(&exp) {
        if exp < 0 {
            push(b"0.");
            for _ in 0..(-exp - 1) {
                push(b"0");
            }
            push(digits);
        } else {
            let int_digits = exp as usize + 1;
            if digits.len() <= int_digits {
                push(digits);
                for _ in digits.len()..int_digits {
                    push(b"0");
                }
            } else {
                push(&digits[..int_digits]);
                push(b".");
                push(&digits[int_digits..]);
            }
        }
    } else {
        push(&digits[..1]);
        if digits.len() > 1 {
            push(b".");
            push(&digits[1..]);
        }
        push(if exp < 0 { b"e-" } else { b"e+" });
        let e = exp.unsigned_abs();
        if e < 10 {
            push(b"0");
        }
        let mut ib = itoa::Buffer::new();
        push(ib.format(e).as_bytes());
    }
    out.extend_from_slice(&b[..k]);
}

fn parse_small_int(s: &[u8]) -> i32 {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let v = digits
        .iter()
        .fold(0i32, |acc, &c| acc * 10 + (c - b'0') as i32);
    if neg {
        -v
    } else {
        v
    }
}

pub fn write_int<I: itoa::Integer>(v: I, out: &mut BytesMut) {
    let mut b = itoa::Buffer::new();
    out.extend_from_slice(b.format(v).as_bytes());
}

/// A decimal with `scale` fractional digits, as `numeric_out` prints it (`-12.340`).
pub fn write_decimal(v: i128, scale: u8, out: &mut BytesMut) {
    if v < 0 {
        out.extend_from_slice(b"-");
    }
    write_unsigned_decimal(v.unsigned_abs(), scale, out);
}

pub fn write_unsigned_decimal(v: u128, scale: u8, out: &mut BytesMut) {
    let mut ib = itoa::Buffer::new();
    // u128 formatting is several times slower than u64; most decimals fit a u64.
    let digits = match u64::try_from(v) {
        Ok(small) => ib.format(small).as_bytes(),
        Err(_) => ib.format(v).as_bytes(),
    };
    let scale = scale as usize;
    if scale == 0 {
        out.extend_from_slice(digits);
        return;
    }
    // Assembled on the stack and appended once.
    let mut b = [b'0'; 96];
    let len = if digits.len() > scale {
        let split = digits.len() - scale;
        b[..split].copy_from_slice(&digits[..split]);
        b[split] = b'.';
        b[split + 1..split + 1 + scale].copy_from_slice(&digits[split..]);
        digits.len() + 1
    } else {
        // "0." then zeros (already in the buffer), then the digits.
        b[1] = b'.';
        let start = 2 + scale - digits.len();
        b[start..start + digits.len()].copy_from_slice(digits);
        2 + scale
    };
    out.extend_from_slice(&b[..len]);
}

fn write_padded(v: u64, width: usize, out: &mut BytesMut) {
    let mut b = itoa::Buffer::new();
    let s = b.format(v).as_bytes();
    for _ in s.len()..width {
        out.extend_from_slice(b"0");
    }
    out.extend_from_slice(s);
}

#[inline]
fn two(v: u64) -> [u8; 2] {
    [b'0' + (v / 10) as u8, b'0' + (v % 10) as u8]
}

/// Writes `YYYY-MM-DD` for an astronomical year; returns true when the value is BC (the caller
/// appends " BC" after any time part, as PostgreSQL does).
fn write_ymd(days: i64, out: &mut BytesMut) -> bool {
    let (y, m, d) = civil_from_days(days);
    let bc = y <= 0;
    let year = if bc { 1 - y } else { y } as u64;
    if year < 10_000 {
        let [a, b] = two(year / 100);
        let [c, e] = two(year % 100);
        let [m1, m2] = two(m as u64);
        let [d1, d2] = two(d as u64);
        out.extend_from_slice(&[a, b, c, e, b'-', m1, m2, b'-', d1, d2]);
    } else {
        write_padded(year, 4, out);
        let [m1, m2] = two(m as u64);
        let [d1, d2] = two(d as u64);
        out.extend_from_slice(&[b'-', m1, m2, b'-', d1, d2]);
    }
    bc
}

/// A DuckDB date (days since 1970-01-01): `2024-01-02`, `0044-03-15 BC`, `infinity`.
pub fn write_date(days: i32, out: &mut BytesMut) {
    match days {
        DUCK_DATE_INF => out.extend_from_slice(b"infinity"),
        DUCK_DATE_NINF => out.extend_from_slice(b"-infinity"),
        d => {
            if write_ymd(d as i64, out) {
                out.extend_from_slice(b" BC");
            }
        }
    }
}

/// `HH:MM:SS` with up to six fractional digits, trailing zeros dropped. Hours may exceed 23
/// (PostgreSQL allows 24:00:00; intervals reuse this with any hour count).
fn write_hms(micros: u64, out: &mut BytesMut) {
    let hours = micros / MICROS_PER_HOUR as u64;
    let rem = micros % MICROS_PER_HOUR as u64;
    if hours < 100 {
        out.extend_from_slice(&two(hours));
    } else {
        write_padded(hours, 2, out);
    }
    let [m1, m2] = two(rem / MICROS_PER_MINUTE as u64);
    let rem = rem % MICROS_PER_MINUTE as u64;
    let [s1, s2] = two(rem / MICROS_PER_SEC as u64);
    out.extend_from_slice(&[b':', m1, m2, b':', s1, s2]);
    write_fraction(rem % MICROS_PER_SEC as u64, out);
}

fn write_fraction(mut frac: u64, out: &mut BytesMut) {
    if frac == 0 {
        return;
    }
    let mut width = 6;
    while frac.is_multiple_of(10) {
        frac /= 10;
        width -= 1;
    }
    out.extend_from_slice(b".");
    write_padded(frac, width, out);
}

/// A time of day in microseconds since midnight.
pub fn write_time(micros: i64, out: &mut BytesMut) {
    write_hms(micros.max(0) as u64, out);
}

/// A UTC offset as PostgreSQL prints it: `+00`, `+05:30`, `-03:30:15`.
pub fn write_offset(offset_secs: i32, out: &mut BytesMut) {
    out.extend_from_slice(if offset_secs < 0 { b"-" } else { b"+" });
    let a = offset_secs.unsigned_abs() as u64;
    write_padded(a / 3600, 2, out);
    if !a.is_multiple_of(3600) {
        out.extend_from_slice(b":");
        write_padded(a % 3600 / 60, 2, out);
        if !a.is_multiple_of(60) {
            out.extend_from_slice(b":");
            write_padded(a % 60, 2, out);
        }
    }
}

/// `timetz`: the local time and its offset east of UTC.
pub fn write_timetz(micros: i64, offset_secs: i32, out: &mut BytesMut) {
    write_time(micros, out);
    write_offset(offset_secs, out);
}

/// A DuckDB timestamp (µs since 1970-01-01 UTC). With `tz`, the value is printed in UTC with
/// `+00`, which is what PostgreSQL prints with TimeZone=UTC.
pub fn write_timestamp(micros: i64, tz: bool, out: &mut BytesMut) {
    match micros {
        DUCK_TS_INF => out.extend_from_slice(b"infinity"),
        DUCK_TS_NINF => out.extend_from_slice(b"-infinity"),
        m => {
            let days = m.div_euclid(MICROS_PER_DAY);
            let tod = m.rem_euclid(MICROS_PER_DAY);
            let bc = write_ymd(days, out);
            out.extend_from_slice(b" ");
            write_hms(tod as u64, out);
            if tz {
                out.extend_from_slice(b"+00");
            }
            if bc {
                out.extend_from_slice(b" BC");
            }
        }
    }
}

/// An interval in IntervalStyle `postgres`: `1 year 2 mons 3 days 04:05:06.5`, `-00:00:01`,
/// `00:00:00`. Mirrors `EncodeInterval`, including its quirk of prefixing `+` to a positive
/// field that follows a negative one.
pub fn write_interval(months: i32, days: i32, micros: i64, out: &mut BytesMut) {
    let mut is_zero = true;
    let mut is_before = false;
    let years = (months / 12) as i64;
    let mons = (months % 12) as i64;
    for (value, unit) in [(years, "year"), (mons, "mon"), (days as i64, "day")] {
        if value == 0 {
            continue;
        }
        if !is_zero {
            out.extend_from_slice(b" ");
        }
        if is_before && value > 0 {
            out.extend_from_slice(b"+");
        }
        write_int(value, out);
        out.extend_from_slice(b" ");
        out.extend_from_slice(unit.as_bytes());
        if value != 1 {
            out.extend_from_slice(b"s");
        }
        is_before = value < 0;
        is_zero = false;
    }
    if is_zero || micros != 0 {
        if !is_zero {
            out.extend_from_slice(b" ");
        }
        if micros < 0 {
            out.extend_from_slice(b"-");
        } else if is_before {
            out.extend_from_slice(b"+");
        }
        write_hms(micros.unsigned_abs(), out);
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `bytea` in hex output format: `\x0aff`.
pub fn write_bytea_hex(bytes: &[u8], out: &mut BytesMut) {
    out.reserve(2 + bytes.len() * 2);
    out.extend_from_slice(b"\\x");
    for &b in bytes {
        out.extend_from_slice(&[HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
    }
}

/// A UUID, lowercase and hyphenated.
pub fn write_uuid(v: u128, out: &mut BytesMut) {
    let bytes = v.to_be_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.extend_from_slice(b"-");
        }
        out.extend_from_slice(&[HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
    }
}

/// Appends one array element's text with PostgreSQL's quoting (`array_out`): quoted when empty,
/// when it contains whitespace or one of `{}",\`, or when it spells NULL in any case.
pub fn write_array_element(text: &[u8], out: &mut BytesMut) {
    let needs_quotes = text.is_empty()
        || text.eq_ignore_ascii_case(b"NULL")
        || text.iter().any(|&c| {
            matches!(
                c,
                b'{' | b'}' | b'"' | b',' | b'\\' | b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c
            )
        });
    if !needs_quotes {
        out.extend_from_slice(text);
        return;
    }
    out.extend_from_slice(b"\"");
    for &c in text {
        if c == b'"' || c == b'\\' {
            out.extend_from_slice(b"\\");
        }
        out.extend_from_slice(&[c]);
    }
    out.extend_from_slice(b"\"");
}

/// Appends a JSON string literal (RFC 8259 escaping).
pub fn write_json_string(s: &[u8], out: &mut BytesMut) {
    out.extend_from_slice(b"\"");
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            c if c < 0x20 => {
                out.extend_from_slice(&s[start..i]);
                out.extend_from_slice(b"\\u00");
                out.extend_from_slice(&[HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.extend_from_slice(b"\"");
}

// ---- DuckDB's own renderings, used inside JSON so that STRUCT/MAP/UNION values match what
// DuckDB's `to_json` prints (which differs from PostgreSQL's text for these types).

/// A double as DuckDB's JSON writer (yyjson) prints it: shortest round-trip digits, fixed
/// notation for decimal exponents -6..=20 (integral values keep ".0"), otherwise `1e21`,
/// `1.5e-7`; NaN and Infinity as bare words.
pub fn write_json_double(v: f64, out: &mut BytesMut) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if v.is_infinite() {
        out.extend_from_slice(if v < 0.0 { b"-Infinity" } else { b"Infinity" });
        return;
    }
    if v == 0.0 {
        out.extend_from_slice(if v.is_sign_negative() {
            b"-0.0"
        } else {
            b"0.0"
        });
        return;
    }
    let mut buf = ryu::Buffer::new();
    let (neg, digits, n, exp) = shortest_digits(buf.format_finite(v).as_bytes());
    let digits = &digits[..n];
    if neg {
        out.extend_from_slice(b"-");
    }
    if (-6..=20).contains(&exp) {
        if exp < 0 {
            out.extend_from_slice(b"0.");
            for _ in 0..(-exp - 1) {
                out.extend_from_slice(b"0");
            }
            out.extend_from_slice(digits);
        } else {
            let int_digits = exp as usize + 1;
            if digits.len() <= int_digits {
                out.extend_from_slice(digits);
                for _ in digits.len()..int_digits {
                    out.extend_from_slice(b"0");
                }
                out.extend_from_slice(b".0");
            } else {
                out.extend_from_slice(&digits[..int_digits]);
                out.extend_from_slice(b".");
                out.extend_from_slice(&digits[int_digits..]);
            }
        }
    } else {
        out.extend_from_slice(&digits[..1]);
        if digits.len() > 1 {
            out.extend_from_slice(b".");
            out.extend_from_slice(&digits[1..]);
        }
        out.extend_from_slice(b"e");
        write_int(exp, out);
    }
}

/// Sign, significant digits (and their count) and the decimal exponent of the first digit,
/// from ryu's output.
fn shortest_digits(ryu: &[u8]) -> (bool, [u8; 40], usize, i32) {
    let (neg, body) = match ryu.first() {
        Some(b'-') => (true, &ryu[1..]),
        _ => (false, ryu),
    };
    let (mantissa, exp_part) = match body.iter().position(|&c| c == b'e' || c == b'E') {
        Some(p) => (&body[..p], parse_small_int(&body[p + 1..])),
        None => (body, 0),
    };
    let mut digits = [0u8; 40];
    let mut n = 0usize;
    let mut int_len = 0i32;
    let mut seen_point = false;
    let mut leading_zeros = 0i32;
    for &c in mantissa {
        if c == b'.' {
            seen_point = true;
            continue;
        }
        if !seen_point {
            int_len += 1;
        }
        if n == 0 && c == b'0' {
            leading_zeros += 1;
            continue;
        }
        if n < digits.len() {
            digits[n] = c;
            n += 1;
        }
    }
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    (neg, digits, n, int_len - 1 - leading_zeros + exp_part)
}

/// A decimal as DuckDB's JSON prints it: trailing fractional zeros dropped, one kept (`1.0`).
pub fn write_json_decimal(neg: bool, mag: u128, scale: u8, out: &mut BytesMut) {
    let start = out.len();
    if neg {
        out.extend_from_slice(b"-");
    }
    write_unsigned_decimal(mag, scale, out);
    if scale > 0 {
        let mut end = out.len();
        while end > start && out[end - 1] == b'0' && out[end - 2] != b'.' {
            end -= 1;
        }
        out.truncate(end);
    }
}

/// A date as DuckDB prints it: `2024-01-02`, `0044-03-15 (BC)`, `infinity`.
pub fn write_duck_date(days: i32, out: &mut BytesMut) {
    match days {
        DUCK_DATE_INF => out.extend_from_slice(b"infinity"),
        DUCK_DATE_NINF => out.extend_from_slice(b"-infinity"),
        d => {
            if write_ymd(d as i64, out) {
                out.extend_from_slice(b" (BC)");
            }
        }
    }
}

/// A timestamp as DuckDB prints it: `0044-03-15 (BC) 01:00:00`, with `+00` when `tz`.
pub fn write_duck_timestamp(micros: i64, tz: bool, out: &mut BytesMut) {
    match micros {
        DUCK_TS_INF => out.extend_from_slice(b"infinity"),
        DUCK_TS_NINF => out.extend_from_slice(b"-infinity"),
        m => {
            let days = m.div_euclid(MICROS_PER_DAY);
            let tod = m.rem_euclid(MICROS_PER_DAY);
            if write_ymd(days, out) {
                out.extend_from_slice(b" (BC)");
            }
            out.extend_from_slice(b" ");
            write_hms(tod as u64, out);
            if tz {
                out.extend_from_slice(b"+00");
            }
        }
    }
}

/// An interval as DuckDB prints it: `1 year 2 months 3 days 04:05:06.5`, `-1 day 01:00:00`.
pub fn write_duck_interval(months: i32, days: i32, micros: i64, out: &mut BytesMut) {
    let mut any = false;
    let years = (months / 12) as i64;
    let mons = (months % 12) as i64;
    for (value, unit) in [(years, "year"), (mons, "month"), (days as i64, "day")] {
        if value == 0 {
            continue;
        }
        if any {
            out.extend_from_slice(b" ");
        }
        write_int(value, out);
        out.extend_from_slice(b" ");
        out.extend_from_slice(unit.as_bytes());
        if value != 1 && value != -1 {
            out.extend_from_slice(b"s");
        }
        any = true;
    }
    if micros != 0 || !any {
        if any {
            out.extend_from_slice(b" ");
        }
        if micros < 0 {
            out.extend_from_slice(b"-");
        }
        write_hms(micros.unsigned_abs(), out);
    }
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// A blob as DuckDB casts it to text: printable ASCII as is, anything else and `\ " '` as
/// `\xHH`.
pub fn write_duck_blob(bytes: &[u8], out: &mut BytesMut) {
    for &b in bytes {
        if (32..=126).contains(&b) && b != b'\\' && b != b'"' && b != b'\'' {
            out.extend_from_slice(&[b]);
        } else {
            out.extend_from_slice(b"\\x");
            out.extend_from_slice(&[HEX_UPPER[(b >> 4) as usize], HEX_UPPER[(b & 15) as usize]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(f: impl FnOnce(&mut BytesMut)) -> String {
        let mut b = BytesMut::new();
        f(&mut b);
        String::from_utf8(b.to_vec()).unwrap()
    }

    // Expected strings were checked against PostgreSQL 15 (`SELECT x::float8`, TimeZone UTC).
    #[test]
    fn float8_like_postgres() {
        let cases: &[(f64, &str)] = &[
            (1e20, "1e+20"),
            (1.5e-7, "1.5e-07"),
            (0.1, "0.1"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (f64::NAN, "NaN"),
            (-0.0, "-0"),
            (0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (123456789012345.0, "123456789012345"),
            (1e15, "1e+15"),
            (1234567890123456.0, "1.234567890123456e+15"),
            (0.0001, "0.0001"),
            (0.00012345, "0.00012345"),
            (0.00001, "1e-05"),
            (1e-300, "1e-300"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
            (100.0, "100"),
            (12345.678901, "12345.678901"),
        ];
        for (v, want) in cases {
            assert_eq!(s(|b| write_float8(*v, b)), *want, "{v:e}");
        }
    }

    #[test]
    fn float4_like_postgres() {
        let cases: &[(f32, &str)] = &[
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (0.1, "0.1"),
            (1.5e-7, "1.5e-07"),
            (f32::MAX, "3.4028235e+38"),
            (f32::MIN_POSITIVE, "1.1754944e-38"),
            (-0.0, "-0"),
            (f32::NAN, "NaN"),
            (f32::NEG_INFINITY, "-Infinity"),
            (1.25e-3, "0.00125"),
        ];
        for (v, want) in cases {
            assert_eq!(s(|b| write_float4(*v, b)), *want, "{v:e}");
        }
    }

    #[test]
    fn decimals() {
        assert_eq!(s(|b| write_decimal(12340, 3, b)), "12.340");
        assert_eq!(s(|b| write_decimal(-5, 3, b)), "-0.005");
        assert_eq!(s(|b| write_decimal(0, 2, b)), "0.00");
        assert_eq!(s(|b| write_decimal(-42, 0, b)), "-42");
        assert_eq!(
            s(|b| write_decimal(i128::MIN, 0, b)),
            "-170141183460469231731687303715884105728"
        );
        assert_eq!(
            s(|b| write_unsigned_decimal(u128::MAX, 0, b)),
            "340282366920938463463374607431768211455"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(s(|b| write_date(19_724, b)), "2024-01-02");
        assert_eq!(s(|b| write_date(-735_160, b)), "0044-03-15 BC");
        assert_eq!(s(|b| write_date(DUCK_DATE_INF, b)), "infinity");
        assert_eq!(s(|b| write_date(DUCK_DATE_NINF, b)), "-infinity");
        assert_eq!(s(|b| write_date(-719_528, b)), "0001-01-01 BC");
        assert_eq!(s(|b| write_date(-719_162, b)), "0001-01-01");
        assert_eq!(s(|b| write_date(2_932_897, b)), "10000-01-01");
    }

    #[test]
    fn times() {
        assert_eq!(
            s(|b| write_time(3 * 3_600_000_000 + 4 * 60_000_000 + 5_000_000, b)),
            "03:04:05"
        );
        assert_eq!(s(|b| write_time(11_045_120_000, b)), "03:04:05.12");
        assert_eq!(s(|b| write_time(86_400_000_000, b)), "24:00:00");
        assert_eq!(s(|b| write_time(1, b)), "00:00:00.000001");
        assert_eq!(s(|b| write_timetz(11_045_000_000, 0, b)), "03:04:05+00");
        assert_eq!(
            s(|b| write_timetz(11_045_000_000, 19_800, b)),
            "03:04:05+05:30"
        );
        assert_eq!(
            s(|b| write_timetz(0, -(3 * 3600 + 30 * 60 + 15), b)),
            "00:00:00-03:30:15"
        );
    }

    #[test]
    fn timestamps() {
        let t = 1_704_164_645_123_000i64; // 2024-01-02 03:04:05.123 UTC
        assert_eq!(
            s(|b| write_timestamp(t, false, b)),
            "2024-01-02 03:04:05.123"
        );
        assert_eq!(
            s(|b| write_timestamp(t - 123_000, true, b)),
            "2024-01-02 03:04:05+00"
        );
        assert_eq!(
            s(|b| write_timestamp(t, true, b)),
            "2024-01-02 03:04:05.123+00"
        );
        assert_eq!(
            s(|b| write_timestamp(-1, false, b)),
            "1969-12-31 23:59:59.999999"
        );
        let bc = -735_160i64 * MICROS_PER_DAY + 3_600_000_000;
        assert_eq!(
            s(|b| write_timestamp(bc, false, b)),
            "0044-03-15 01:00:00 BC"
        );
        assert_eq!(
            s(|b| write_timestamp(bc, true, b)),
            "0044-03-15 01:00:00+00 BC"
        );
        assert_eq!(s(|b| write_timestamp(DUCK_TS_INF, true, b)), "infinity");
        assert_eq!(s(|b| write_timestamp(DUCK_TS_NINF, false, b)), "-infinity");
    }

    #[test]
    fn intervals() {
        let us = |h: i64, m: i64, sec: i64, frac: i64| {
            h * MICROS_PER_HOUR + m * MICROS_PER_MINUTE + sec * MICROS_PER_SEC + frac
        };
        let cases: &[(i32, i32, i64, &str)] = &[
            (
                14,
                3,
                us(4, 5, 6, 500_000),
                "1 year 2 mons 3 days 04:05:06.5",
            ),
            (0, 0, -1_000_000, "-00:00:01"),
            (0, 0, 0, "00:00:00"),
            (1, 1, 0, "1 mon 1 day"),
            (12, 0, 0, "1 year"),
            (-12, 0, 0, "-1 years"),
            (
                -14,
                -3,
                -us(4, 5, 6, 0),
                "-1 years -2 mons -3 days -04:05:06",
            ),
            (-1, 2, 0, "-1 mons +2 days"),
            (0, -1, us(1, 0, 0, 0), "-1 days +01:00:00"),
            (0, 0, us(100, 0, 0, 0), "100:00:00"),
            (0, 0, 1, "00:00:00.000001"),
            (
                i32::MAX,
                i32::MAX,
                i64::MAX,
                "178956970 years 7 mons 2147483647 days 2562047788:00:54.775807",
            ),
        ];
        for (m, d, u, want) in cases {
            assert_eq!(s(|b| write_interval(*m, *d, *u, b)), *want);
        }
    }

    #[test]
    fn bytea_uuid() {
        assert_eq!(s(|b| write_bytea_hex(&[0x0a, 0xff], b)), "\\x0aff");
        assert_eq!(s(|b| write_bytea_hex(&[], b)), "\\x");
        assert_eq!(
            s(|b| write_uuid(0xa0eebc999c0b4ef8bb6d6bb9bd380a11, b)),
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        );
    }

    #[test]
    fn array_element_quoting() {
        let q = |t: &str| s(|b| write_array_element(t.as_bytes(), b));
        assert_eq!(q("a"), "a");
        assert_eq!(q("a b"), "\"a b\"");
        assert_eq!(q("c\"d"), "\"c\\\"d\"");
        assert_eq!(q(""), "\"\"");
        assert_eq!(q("null"), "\"null\"");
        assert_eq!(q("NULLx"), "NULLx");
        assert_eq!(q("a,b"), "\"a,b\"");
        assert_eq!(q("{x}"), "\"{x}\"");
        assert_eq!(q("\\x0a"), "\"\\\\x0a\"");
        assert_eq!(q("tab\there"), "\"tab\there\"");
    }

    // Expected strings printed by DuckDB 2.0 (`to_json({k: x})`).
    #[test]
    fn duckdb_json_renderings() {
        let cases: &[(f64, &str)] = &[
            (1e21, "1e21"),
            (1e20, "100000000000000000000.0"),
            (1e-7, "1e-7"),
            (1.5e-7, "1.5e-7"),
            (1e-6, "0.000001"),
            (123.0, "123.0"),
            (1.5e300, "1.5e300"),
            (-2.5e-300, "-2.5e-300"),
            (5e-324, "5e-324"),
            (123456789012345678.0, "123456789012345680.0"),
            (0.1f32 as f64, "0.10000000149011612"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
        ];
        for (v, want) in cases {
            assert_eq!(s(|b| write_json_double(*v, b)), *want, "{v:e}");
        }
        assert_eq!(s(|b| write_json_decimal(false, 150, 2, b)), "1.5");
        assert_eq!(s(|b| write_json_decimal(false, 100, 2, b)), "1.0");
        assert_eq!(s(|b| write_json_decimal(true, 50, 2, b)), "-0.5");
        assert_eq!(s(|b| write_json_decimal(false, 7, 0, b)), "7");
        assert_eq!(s(|b| write_duck_date(-735_160, b)), "0044-03-15 (BC)");
        let bc = -735_160i64 * MICROS_PER_DAY + 3_600_000_000;
        assert_eq!(
            s(|b| write_duck_timestamp(bc, true, b)),
            "0044-03-15 (BC) 01:00:00+00"
        );
        assert_eq!(s(|b| write_duck_interval(2, 0, 0, b)), "2 months");
        assert_eq!(
            s(|b| write_duck_interval(-14, 0, 0, b)),
            "-1 year -2 months"
        );
        assert_eq!(s(|b| write_duck_interval(0, 0, -1_000_000, b)), "-00:00:01");
        assert_eq!(s(|b| write_duck_interval(0, 0, 0, b)), "00:00:00");
        assert_eq!(s(|b| write_duck_interval(1, -1, 0, b)), "1 month -1 day");
        assert_eq!(
            s(|b| write_duck_interval(0, -1, 3_600_000_000, b)),
            "-1 day 01:00:00"
        );
        assert_eq!(
            s(|b| write_duck_blob(&[0x61, 0x5c, 0x22, 0x27, 0x3b, 0x7e, 0x1f, 0x20], b)),
            "a\\x5C\\x22\\x27;~\\x1F "
        );
    }

    #[test]
    fn json_strings() {
        let j = |t: &str| s(|b| write_json_string(t.as_bytes(), b));
        assert_eq!(j("plain"), "\"plain\"");
        assert_eq!(j("q\"b\\n\nt\u{1}"), "\"q\\\"b\\\\n\\nt\\u0001\"");
        assert_eq!(j("é"), "\"é\"");
    }
}
