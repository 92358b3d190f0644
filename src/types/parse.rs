//! Parsers for PostgreSQL's text input formats (what a client sends for a text-format Bind
//! parameter). Each follows the corresponding PostgreSQL `*_in` function closely enough for
//! what drivers and people send, and reports errors with PostgreSQL's SQLSTATEs.

use super::calendar::*;
use super::TypeError;

/// `boolin`: t/true/yes/on/1 and f/false/no/off/0, any case, unique prefixes allowed.
pub fn parse_bool(s: &str) -> Result<bool, TypeError> {
    let t = s.trim().to_ascii_lowercase();
    let is_prefix = |word: &str, min: usize| t.len() >= min && word.starts_with(t.as_str());
    if t == "1" || is_prefix("true", 1) || is_prefix("yes", 1) || is_prefix("on", 2) {
        Ok(true)
    } else if t == "0" || is_prefix("false", 1) || is_prefix("no", 1) || is_prefix("off", 2) {
        Ok(false)
    } else {
        Err(TypeError::invalid("boolean", s))
    }
}

/// An integer with PostgreSQL 16's syntax: optional sign, decimal digits (or 0x/0o/0b),
/// underscores between digits, surrounding whitespace.
pub fn parse_int(s: &str, type_name: &str) -> Result<i128, TypeError> {
    let t = s.trim();
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = match body.get(..2).map(|p| p.to_ascii_lowercase()) {
        Some(p) if p == "0x" => (16, &body[2..]),
        Some(p) if p == "0o" => (8, &body[2..]),
        Some(p) if p == "0b" => (2, &body[2..]),
        _ => (10, body),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
    {
        return Err(TypeError::invalid(type_name, s));
    }
    let mut v: i128 = 0;
    for c in digits.chars() {
        if c == '_' {
            continue;
        }
        let d = c
            .to_digit(radix)
            .ok_or_else(|| TypeError::invalid(type_name, s))?;
        // Accumulate with the sign applied so i128::MIN is reachable.
        v = v
            .checked_mul(radix as i128)
            .and_then(|v| {
                if neg {
                    v.checked_sub(d as i128)
                } else {
                    v.checked_add(d as i128)
                }
            })
            .ok_or_else(|| TypeError::out_of_range(type_name, s))?;
    }
    Ok(v)
}

/// An unsigned 128-bit integer (UHUGEINT), decimal only.
pub fn parse_u128(s: &str, type_name: &str) -> Result<u128, TypeError> {
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    if t.is_empty() || !t.bytes().all(|c| c.is_ascii_digit()) {
        if let Some(rest) = t.strip_prefix('-') {
            if !rest.is_empty() && rest.bytes().all(|c| c == b'0') {
                return Ok(0);
            }
            if !rest.is_empty() && rest.bytes().all(|c| c.is_ascii_digit()) {
                return Err(TypeError::out_of_range(type_name, s));
            }
        }
        return Err(TypeError::invalid(type_name, s));
    }
    t.parse::<u128>()
        .map_err(|_| TypeError::out_of_range(type_name, s))
}

fn is_infinity_word(t: &str) -> bool {
    let l = t.trim().trim_start_matches(['+', '-']).to_ascii_lowercase();
    l == "inf" || l == "infinity"
}

/// `float8in`: decimal or exponent notation, `NaN`, `Infinity`, `-Infinity`, `inf`.
pub fn parse_f64(s: &str) -> Result<f64, TypeError> {
    let t = s.trim();
    let v: f64 = t
        .parse()
        .map_err(|_| TypeError::invalid("double precision", s))?;
    if v.is_infinite() && !is_infinity_word(t) {
        return Err(TypeError::out_of_range("double precision", s));
    }
    Ok(v)
}

/// `float4in`.
pub fn parse_f32(s: &str) -> Result<f32, TypeError> {
    let t = s.trim();
    let v: f32 = t.parse().map_err(|_| TypeError::invalid("real", s))?;
    if v.is_infinite() && !is_infinity_word(t) {
        return Err(TypeError::out_of_range("real", s));
    }
    Ok(v)
}

/// A parsed numeric literal: sign and the digits before and after the decimal point
/// (exponent already applied), or a special value.
#[derive(Debug, Clone, PartialEq)]
pub enum NumericText {
    Finite {
        neg: bool,
        int: String,
        frac: String,
    },
    NaN,
    Infinity,
    NegInfinity,
}

/// `numeric_in`: `[+-]digits[.digits][e[+-]exp]`, `NaN`, `Infinity`.
pub fn parse_numeric(s: &str) -> Result<NumericText, TypeError> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    match lower.as_str() {
        "nan" => return Ok(NumericText::NaN),
        "infinity" | "+infinity" | "inf" | "+inf" => return Ok(NumericText::Infinity),
        "-infinity" | "-inf" => return Ok(NumericText::NegInfinity),
        _ => {}
    }
    let bad = || TypeError::invalid("numeric", s);
    let (neg, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (mantissa, exp) = match body.find(['e', 'E']) {
        Some(p) => {
            let e: i64 = body[p + 1..].parse().map_err(|_| bad())?;
            (&body[..p], e)
        }
        None => (body, 0),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, ""),
    };
    let clean = |d: &str| -> Option<String> {
        if d.starts_with('_') || d.ends_with('_') || d.contains("__") {
            return None;
        }
        let out: String = d.chars().filter(|&c| c != '_').collect();
        out.bytes().all(|c| c.is_ascii_digit()).then_some(out)
    };
    let (mut int, mut frac) = (clean(int).ok_or_else(bad)?, clean(frac).ok_or_else(bad)?);
    if int.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    if exp.abs() > 1000 {
        return Err(TypeError::out_of_range("numeric", s));
    }
    // Shift the decimal point by the exponent.
    if exp > 0 {
        let e = exp as usize;
        if frac.len() < e {
            frac.extend(std::iter::repeat_n('0', e - frac.len()));
        }
        int.push_str(&frac[..e]);
        frac = frac[e..].to_string();
    } else if exp < 0 {
        let e = (-exp) as usize;
        if int.len() < e {
            int.insert_str(0, &"0".repeat(e - int.len()));
        }
        let split = int.len() - e;
        frac.insert_str(0, &int[split..]);
        int.truncate(split);
    }
    let int = int.trim_start_matches('0').to_string();
    Ok(NumericText::Finite { neg, int, frac })
}

impl NumericText {
    /// The value scaled to `scale` fractional digits (rounded half away from zero), if it fits
    /// an i128.
    pub fn scaled(&self, scale: usize) -> Option<i128> {
        let NumericText::Finite { neg, int, frac } = self else {
            return None;
        };
        // Accumulate with the sign applied so i128::MIN is reachable.
        let sign: i128 = if *neg { -1 } else { 1 };
        let mut v: i128 = 0;
        let push = |v: i128, c: u8| v.checked_mul(10)?.checked_add(sign * (c - b'0') as i128);
        for c in int.bytes() {
            v = push(v, c)?;
        }
        for k in 0..scale {
            v = push(v, *frac.as_bytes().get(k).unwrap_or(&b'0'))?;
        }
        if frac.as_bytes().get(scale).is_some_and(|&c| c >= b'5') {
            v = v.checked_add(sign)?;
        }
        Some(v)
    }

    /// Digits before the point (at least 1) and the number of fractional digits as written.
    pub fn precision(&self) -> (usize, usize) {
        match self {
            NumericText::Finite { int, frac, .. } => (int.len().max(1), frac.len()),
            _ => (0, 0),
        }
    }
}

/// Days in a year, month, day triple, validated; astronomical year.
fn ymd_days(y: i64, m: u32, d: u32, type_name: &str, s: &str) -> Result<i64, TypeError> {
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return Err(TypeError::datetime_overflow(type_name, s));
    }
    Ok(days_from_civil(y, m, d))
}

fn digits_u64(s: &str) -> Option<u64> {
    (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Splits off a trailing ` BC` / ` AD` era marker.
fn strip_era(s: &str) -> (&str, bool) {
    let t = s.trim_end();
    let upper = t.len() >= 2 && t[t.len() - 2..].eq_ignore_ascii_case("bc");
    if upper {
        return (t[..t.len() - 2].trim_end(), true);
    }
    if t.len() >= 2 && t[t.len() - 2..].eq_ignore_ascii_case("ad") {
        return (t[..t.len() - 2].trim_end(), false);
    }
    (t, false)
}

/// Parses the date part: `YYYY-MM-DD` (ISO) or `MM/DD/YYYY` (DateStyle MDY); returns days
/// since 1970 before the era is applied, and the rest of the string.
fn parse_date_part<'a>(
    s: &'a str,
    bc: bool,
    type_name: &str,
    orig: &str,
) -> Result<(i64, &'a str), TypeError> {
    let bad = || TypeError::invalid_datetime(type_name, orig);
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '-' || c == '/'))
        .unwrap_or(s.len());
    let (date, rest) = s.split_at(end);
    let (y, m, d) = if date.contains('/') {
        let p: Vec<&str> = date.split('/').collect();
        if p.len() != 3 {
            return Err(bad());
        }
        (
            digits_u64(p[2]).ok_or_else(bad)?,
            digits_u64(p[0]).ok_or_else(bad)?,
            digits_u64(p[1]).ok_or_else(bad)?,
        )
    } else {
        let p: Vec<&str> = date.split('-').collect();
        if p.len() != 3 {
            return Err(bad());
        }
        (
            digits_u64(p[0]).ok_or_else(bad)?,
            digits_u64(p[1]).ok_or_else(bad)?,
            digits_u64(p[2]).ok_or_else(bad)?,
        )
    };
    if y == 0 || y > 10_000_000 || m > 12 || d > 31 {
        return Err(TypeError::datetime_overflow(type_name, orig));
    }
    let year = if bc { 1 - y as i64 } else { y as i64 };
    Ok((ymd_days(year, m as u32, d as u32, type_name, orig)?, rest))
}

/// `date_in` (ISO and MDY), ` BC`, `infinity`, `-infinity`, `epoch`. Returns DuckDB days.
pub fn parse_date(s: &str) -> Result<i32, TypeError> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(DUCK_DATE_INF),
        "-infinity" => return Ok(DUCK_DATE_NINF),
        "epoch" => return Ok(0),
        _ => {}
    }
    let (body, bc) = strip_era(t);
    let (days, rest) = parse_date_part(body, bc, "date", s)?;
    // A time part may follow (PostgreSQL ignores it for date).
    let rest = rest.trim_start_matches(['T', 't', ' ']);
    // A bare zone offset may follow too (pgJDBC sends `2024-03-01 +00`).
    let bare_zone = rest.len() > 1
        && rest.starts_with(['+', '-'])
        && rest[1..].chars().all(|c| c.is_ascii_digit() || c == ':');
    if !rest.is_empty() && !bare_zone {
        parse_time_and_zone(rest, "date", s)?;
    }
    i32::try_from(days).map_err(|_| TypeError::datetime_overflow("date", s))
}

/// Parses `HH:MM[:SS[.ffffff]]` and an optional zone; returns (µs since midnight, offset
/// seconds east of UTC if given).
fn parse_time_and_zone(
    s: &str,
    type_name: &str,
    orig: &str,
) -> Result<(i64, Option<i32>), TypeError> {
    let bad = || TypeError::invalid_datetime(type_name, orig);
    let s = s.trim();
    let zone_at = s
        .char_indices()
        .skip(1)
        .find(|&(_, c)| c == '+' || c == '-' || c == 'Z' || c == 'z' || c == ' ')
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (time, zone) = s.split_at(zone_at);
    let mut parts = time.split(':');
    let h = digits_u64(parts.next().ok_or_else(bad)?).ok_or_else(bad)?;
    let m = digits_u64(parts.next().ok_or_else(bad)?).ok_or_else(bad)?;
    let (sec, frac_micros) = match parts.next() {
        None => (0, 0),
        Some(sec) => {
            let (whole, frac) = match sec.find('.') {
                Some(p) => (&sec[..p], &sec[p + 1..]),
                None => (sec, ""),
            };
            let whole = digits_u64(whole).ok_or_else(bad)?;
            if !frac.bytes().all(|c| c.is_ascii_digit()) {
                return Err(bad());
            }
            // Round to microseconds half to even, like PostgreSQL's rint().
            let mut micros = 0i64;
            for k in 0..6 {
                micros = micros * 10 + frac.as_bytes().get(k).map_or(0, |c| (c - b'0') as i64);
            }
            let rest = frac.as_bytes().get(6..).unwrap_or(&[]);
            let round_up = match rest.first() {
                Some(&c) if c > b'5' => true,
                Some(&b'5') => rest[1..].iter().any(|&c| c != b'0') || micros % 2 == 1,
                _ => false,
            };
            if round_up {
                micros += 1;
            }
            (whole, micros)
        }
    };
    if parts.next().is_some() {
        return Err(bad());
    }
    if m > 59 || sec > 60 || h > 24 {
        return Err(TypeError::datetime_overflow(type_name, orig));
    }
    let total = h as i64 * MICROS_PER_HOUR
        + m as i64 * MICROS_PER_MINUTE
        + sec as i64 * MICROS_PER_SEC
        + frac_micros;
    if total > MICROS_PER_DAY {
        return Err(TypeError::datetime_overflow(type_name, orig));
    }
    let zone = zone.trim();
    let offset = if zone.is_empty() {
        None
    } else {
        Some(parse_zone(zone).ok_or_else(bad)?)
    };
    Ok((total, offset))
}

/// A UTC offset: `Z`, `UTC`, `GMT`, `+HH`, `+HHMM`, `+HH:MM`, `+HH:MM:SS`, east positive.
fn parse_zone(z: &str) -> Option<i32> {
    let lower = z.to_ascii_lowercase();
    if matches!(lower.as_str(), "z" | "utc" | "gmt" | "zulu" | "+00" | "-00") {
        return Some(0);
    }
    let (sign, body) = match z.as_bytes().first()? {
        b'+' => (1, &z[1..]),
        b'-' => (-1, &z[1..]),
        _ => return None,
    };
    let (h, m, s) = if body.contains(':') {
        let p: Vec<&str> = body.split(':').collect();
        if p.len() > 3 {
            return None;
        }
        (
            digits_u64(p[0])?,
            p.get(1).map_or(Some(0), |x| digits_u64(x))?,
            p.get(2).map_or(Some(0), |x| digits_u64(x))?,
        )
    } else {
        match body.len() {
            1 | 2 => (digits_u64(body)?, 0, 0),
            4 => (digits_u64(&body[..2])?, digits_u64(&body[2..])?, 0),
            6 => (
                digits_u64(&body[..2])?,
                digits_u64(&body[2..4])?,
                digits_u64(&body[4..])?,
            ),
            _ => return None,
        }
    };
    if h > 15 || m > 59 || s > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + s) as i32)
}

/// `time_in`: `HH:MM[:SS[.f]]`; a zone, if present, is ignored as PostgreSQL does.
pub fn parse_time(s: &str) -> Result<i64, TypeError> {
    let (t, _) = parse_time_and_zone(s, "time without time zone", s)?;
    Ok(t)
}

/// `timestamp_in` / `timestamptz_in`: a date, optional `T`/space and time, optional zone,
/// optional ` BC`; `infinity`, `-infinity`, `epoch`. Returns DuckDB µs since 1970 UTC. Without
/// `tz` a zone is ignored (as PostgreSQL does); with `tz` it is applied, and no zone means UTC
/// (the session TimeZone).
pub fn parse_timestamp(s: &str, tz: bool) -> Result<i64, TypeError> {
    let type_name = if tz {
        "timestamp with time zone"
    } else {
        "timestamp without time zone"
    };
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(DUCK_TS_INF),
        "-infinity" => return Ok(DUCK_TS_NINF),
        "epoch" => return Ok(0),
        _ => {}
    }
    let (body, bc) = strip_era(t);
    let (days, rest) = parse_date_part(body, bc, type_name, s)?;
    let rest = rest.trim_start();
    let rest = rest.strip_prefix(['T', 't']).unwrap_or(rest).trim_start();
    let (micros, offset) = if rest.is_empty() {
        (0, None)
    } else if rest.as_bytes()[0].is_ascii_digit() {
        parse_time_and_zone(rest, type_name, s)?
    } else {
        (
            0,
            Some(parse_zone(rest).ok_or_else(|| TypeError::invalid_datetime(type_name, s))?),
        )
    };
    let local = days
        .checked_mul(MICROS_PER_DAY)
        .and_then(|d| d.checked_add(micros))
        .ok_or_else(|| TypeError::out_of_range(type_name, s))?;
    let utc = match (tz, offset) {
        (true, Some(off)) => local
            .checked_sub(off as i64 * MICROS_PER_SEC)
            .ok_or_else(|| TypeError::out_of_range(type_name, s))?,
        _ => local,
    };
    // The two extremes are DuckDB's infinities, not real instants.
    if utc == DUCK_TS_INF || utc <= DUCK_TS_NINF {
        return Err(TypeError::out_of_range(type_name, s));
    }
    Ok(utc)
}

/// `interval_in` for the postgres and ISO 8601 styles: `1 year 2 mons 3 days 04:05:06.5`,
/// `-00:00:01`, `@ 1 hour ago`, `2 weeks`, `1.5 days`, `P1Y2M3DT4H5M6S`, a bare number of
/// seconds. Returns (months, days, µs).
pub fn parse_interval(s: &str) -> Result<(i32, i32, i64), TypeError> {
    let bad = || TypeError::invalid_datetime("interval", s);
    let mut t = s.trim().to_ascii_lowercase();
    if let Some(rest) = t.strip_prefix('@') {
        t = rest.trim().to_string();
    }
    let mut ago = false;
    if let Some(rest) = t.strip_suffix("ago") {
        ago = true;
        t = rest.trim().to_string();
    }
    if t.is_empty() {
        return Err(bad());
    }
    let mut acc = IntervalAcc::default();
    if let Some(iso) = t.strip_prefix('p') {
        parse_iso_interval(iso, &mut acc).ok_or_else(bad)?;
    } else {
        let tokens: Vec<&str> = t.split_whitespace().collect();
        let mut i = 0;
        while i < tokens.len() {
            let tok = tokens[i];
            i += 1;
            if tok.contains(':') {
                let (neg, body) = match tok.as_bytes()[0] {
                    b'-' => (true, &tok[1..]),
                    b'+' => (false, &tok[1..]),
                    _ => (false, tok),
                };
                let micros = parse_interval_time(body).ok_or_else(bad)?;
                acc.micros += if neg { -micros } else { micros };
                continue;
            }
            // A number, with its unit glued on ("10min") or as the next token.
            let split = tok
                .find(|c: char| c.is_ascii_alphabetic())
                .unwrap_or(tok.len());
            let (num, mut unit) = tok.split_at(split);
            let value: f64 = num.parse().map_err(|_| bad())?;
            if unit.is_empty()
                && i < tokens.len()
                && tokens[i].starts_with(|c: char| c.is_ascii_alphabetic())
            {
                unit = tokens[i];
                i += 1;
            }
            acc.add(value, unit).ok_or_else(bad)?;
        }
    }
    acc.finish(ago)
        .ok_or_else(|| TypeError::out_of_range("interval", s))
}

#[derive(Default)]
struct IntervalAcc {
    months: f64,
    days: f64,
    micros: i64,
}

impl IntervalAcc {
    fn add(&mut self, v: f64, unit: &str) -> Option<()> {
        let unit = unit.trim_end_matches(',');
        match unit {
            "" | "s" | "sec" | "secs" | "second" | "seconds" => {
                self.micros += (v * 1e6).round() as i64
            }
            "us" | "usec" | "usecs" | "microsecond" | "microseconds" => {
                self.micros += v.round() as i64
            }
            "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => {
                self.micros += (v * 1e3).round() as i64
            }
            "m" | "min" | "mins" | "minute" | "minutes" => self.micros += (v * 6e7).round() as i64,
            "h" | "hr" | "hrs" | "hour" | "hours" => self.micros += (v * 3.6e9).round() as i64,
            "d" | "day" | "days" => self.days += v,
            "w" | "week" | "weeks" => self.days += v * 7.0,
            "mon" | "mons" | "month" | "months" => self.months += v,
            "y" | "yr" | "yrs" | "year" | "years" => self.months += v * 12.0,
            "decade" | "decades" => self.months += v * 120.0,
            "century" | "centuries" => self.months += v * 1200.0,
            "millennium" | "millennia" | "millenniums" => self.months += v * 12000.0,
            _ => return None,
        }
        Some(())
    }

    /// Cascades fractional months into days (30 per month) and fractional days into µs, as
    /// PostgreSQL does.
    fn finish(self, ago: bool) -> Option<(i32, i32, i64)> {
        let whole_months = self.months.trunc();
        let days = self.days + (self.months - whole_months) * 30.0;
        let whole_days = days.trunc();
        let micros = self.micros as f64 + ((days - whole_days) * MICROS_PER_DAY as f64).round();
        if whole_months.abs() > i32::MAX as f64
            || whole_days.abs() > i32::MAX as f64
            || micros.abs() > i64::MAX as f64
        {
            return None;
        }
        let (m, d, us) = (whole_months as i32, whole_days as i32, micros as i64);
        Some(if ago { (-m, -d, -us) } else { (m, d, us) })
    }
}

fn parse_interval_time(s: &str) -> Option<i64> {
    let p: Vec<&str> = s.split(':').collect();
    if p.len() < 2 || p.len() > 3 {
        return None;
    }
    let h = digits_u64(p[0])? as f64;
    let m = digits_u64(p[1])? as f64;
    let sec: f64 = match p.get(2) {
        Some(x) if !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit() || c == b'.') => {
            x.parse().ok()?
        }
        Some(_) => return None,
        None => 0.0,
    };
    Some((h * 3.6e9 + m * 6e7 + (sec * 1e6).round()) as i64)
}

fn parse_iso_interval(s: &str, acc: &mut IntervalAcc) -> Option<()> {
    let mut in_time = false;
    let mut num = String::new();
    for c in s.chars() {
        match c {
            't' => in_time = true,
            '0'..='9' | '.' | '-' | '+' => num.push(c),
            unit => {
                let v: f64 = num.parse().ok()?;
                num.clear();
                let name = match (unit, in_time) {
                    ('y', false) => "year",
                    ('m', false) => "month",
                    ('w', false) => "week",
                    ('d', false) => "day",
                    ('h', true) => "hour",
                    ('m', true) => "minute",
                    ('s', true) => "second",
                    _ => return None,
                };
                acc.add(v, name)?;
            }
        }
    }
    num.is_empty().then_some(())
}

/// `uuid_in`: 32 hex digits, optionally in braces, hyphens allowed after any group of four.
pub fn parse_uuid(s: &str) -> Result<u128, TypeError> {
    let t = s.trim();
    let body = t
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .unwrap_or(t);
    let bad = || TypeError::invalid("uuid", s);
    let mut v: u128 = 0;
    let mut n = 0;
    let bytes = body.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        if c == b'-' {
            // Only between groups of four digits, never doubled or at the ends.
            if n == 0 || n % 4 != 0 || i + 1 == bytes.len() || bytes[i + 1] == b'-' {
                return Err(bad());
            }
            continue;
        }
        let d = (c as char).to_digit(16).ok_or_else(bad)?;
        v = (v << 4) | d as u128;
        n += 1;
        if n > 32 {
            return Err(bad());
        }
    }
    if n != 32 {
        return Err(bad());
    }
    Ok(v)
}

/// `byteain`: hex format (`\x0aff`, whitespace allowed between digit pairs) or escape format
/// (`\\`, `\ooo` octal, other bytes as is).
pub fn parse_bytea(s: &str) -> Result<Vec<u8>, TypeError> {
    let bad = || TypeError::invalid("bytea", s);
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b'\\' && (b[1] == b'x' || b[1] == b'X') {
        let mut out = Vec::with_capacity((b.len() - 2) / 2);
        let mut it = b[2..].iter().filter(|c| !c.is_ascii_whitespace());
        while let Some(&hi) = it.next() {
            let lo = *it.next().ok_or_else(bad)?;
            let h = (hi as char).to_digit(16).ok_or_else(bad)?;
            let l = (lo as char).to_digit(16).ok_or_else(bad)?;
            out.push((h * 16 + l) as u8);
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else if i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && (b'0'..=b'7').contains(&b[i + 2])
            && (b'0'..=b'7').contains(&b[i + 3])
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            return Err(bad());
        }
    }
    Ok(out)
}

/// One element of a parsed array literal.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayElem {
    Null,
    Value(String),
    Sub(Vec<ArrayElem>),
}

/// `array_in`: `{1,2,NULL}`, `{"a b","c\"d"}`, `{{1,2},{3,4}}`, with an optional
/// `[1:2]=` dimension decoration (ignored).
pub fn parse_array(s: &str) -> Result<Vec<ArrayElem>, TypeError> {
    let bad = || TypeError::invalid("array", s);
    let mut t = s.trim();
    if t.starts_with('[') {
        let eq = t.find('=').ok_or_else(bad)?;
        t = t[eq + 1..].trim_start();
    }
    let b = t.as_bytes();
    let mut pos = 0;
    let elems = parse_array_level(b, &mut pos).ok_or_else(bad)?;
    if b[pos..].iter().any(|c| !c.is_ascii_whitespace()) {
        return Err(bad());
    }
    Ok(elems)
}

fn parse_array_level(b: &[u8], pos: &mut usize) -> Option<Vec<ArrayElem>> {
    let skip_ws = |pos: &mut usize| {
        while *pos < b.len() && b[*pos].is_ascii_whitespace() {
            *pos += 1;
        }
    };
    skip_ws(pos);
    if b.get(*pos) != Some(&b'{') {
        return None;
    }
    *pos += 1;
    let mut elems = Vec::new();
    skip_ws(pos);
    if b.get(*pos) == Some(&b'}') {
        *pos += 1;
        return Some(elems);
    }
    loop {
        skip_ws(pos);
        match b.get(*pos)? {
            b'{' => elems.push(ArrayElem::Sub(parse_array_level(b, pos)?)),
            b'"' => {
                *pos += 1;
                let mut v = Vec::new();
                loop {
                    match *b.get(*pos)? {
                        b'"' => {
                            *pos += 1;
                            break;
                        }
                        b'\\' => {
                            v.push(*b.get(*pos + 1)?);
                            *pos += 2;
                        }
                        c => {
                            v.push(c);
                            *pos += 1;
                        }
                    }
                }
                elems.push(ArrayElem::Value(String::from_utf8(v).ok()?));
            }
            _ => {
                let mut v = Vec::new();
                let mut quoted_any = false;
                // Unquoted element: up to ',' or '}', trailing whitespace trimmed.
                let mut last_significant = 0;
                loop {
                    match *b.get(*pos)? {
                        b',' | b'}' => break,
                        b'{' | b'"' => return None,
                        b'\\' => {
                            v.push(*b.get(*pos + 1)?);
                            *pos += 2;
                            quoted_any = true;
                            last_significant = v.len();
                        }
                        c => {
                            v.push(c);
                            *pos += 1;
                            if !c.is_ascii_whitespace() {
                                last_significant = v.len();
                            }
                        }
                    }
                }
                v.truncate(last_significant);
                if v.is_empty() {
                    return None;
                }
                let s = String::from_utf8(v).ok()?;
                if !quoted_any && s.eq_ignore_ascii_case("null") {
                    elems.push(ArrayElem::Null);
                } else {
                    elems.push(ArrayElem::Value(s));
                }
            }
        }
        skip_ws(pos);
        match b.get(*pos)? {
            b',' => *pos += 1,
            b'}' => {
                *pos += 1;
                return Some(elems);
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlstate::SqlState;

    #[test]
    fn bools() {
        for t in ["t", "TRUE", " yes ", "on", "1", "tr", "y"] {
            assert_eq!(parse_bool(t), Ok(true), "{t}");
        }
        for f in ["f", "False", "no", "off", "0", "of", "n"] {
            assert_eq!(parse_bool(f), Ok(false), "{f}");
        }
        for bad in ["", "o", "2", "yess", "truex"] {
            assert_eq!(
                parse_bool(bad).unwrap_err().sqlstate(),
                SqlState::INVALID_TEXT_REPRESENTATION,
                "{bad}"
            );
        }
    }

    #[test]
    fn ints() {
        assert_eq!(parse_int(" 42 ", "integer"), Ok(42));
        assert_eq!(
            parse_int("-9223372036854775808", "bigint"),
            Ok(i64::MIN as i128)
        );
        assert_eq!(parse_int("1_000", "integer"), Ok(1000));
        assert_eq!(parse_int("0x1F", "integer"), Ok(31));
        assert_eq!(parse_int("-0b101", "integer"), Ok(-5));
        for bad in ["", "abc", "1.5", "1__0", "_1", "--1", "0x"] {
            assert_eq!(
                parse_int(bad, "integer").unwrap_err().sqlstate(),
                SqlState::INVALID_TEXT_REPRESENTATION,
                "{bad}"
            );
        }
        let huge = "9".repeat(60);
        assert_eq!(
            parse_int(&huge, "integer").unwrap_err().sqlstate(),
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        );
        assert_eq!(
            parse_u128("340282366920938463463374607431768211455", "uhugeint"),
            Ok(u128::MAX)
        );
        assert_eq!(
            parse_u128("-1", "uhugeint").unwrap_err().sqlstate(),
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        );
        assert_eq!(
            parse_u128("x", "uhugeint").unwrap_err().sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f64("1.5"), Ok(1.5));
        assert_eq!(parse_f64(" -1e-7 "), Ok(-1e-7));
        assert_eq!(parse_f64("Infinity"), Ok(f64::INFINITY));
        assert_eq!(parse_f64("-inf"), Ok(f64::NEG_INFINITY));
        assert!(parse_f64("NaN").unwrap().is_nan());
        assert_eq!(
            parse_f64("1e400").unwrap_err().sqlstate(),
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        );
        assert_eq!(
            parse_f64("abc").unwrap_err().sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
        assert_eq!(
            parse_f32("3.4e39").unwrap_err().sqlstate(),
            SqlState::NUMERIC_VALUE_OUT_OF_RANGE
        );
        assert_eq!(parse_f32("0.1"), Ok(0.1f32));
    }

    #[test]
    fn numerics() {
        let n = parse_numeric("-12.340").unwrap();
        assert_eq!(n.scaled(3), Some(-12340));
        assert_eq!(n.scaled(1), Some(-123));
        assert_eq!(n.precision(), (2, 3));
        assert_eq!(parse_numeric("1.5e3").unwrap().scaled(0), Some(1500));
        assert_eq!(parse_numeric("15e-3").unwrap().scaled(3), Some(15));
        assert_eq!(parse_numeric(".5").unwrap().scaled(0), Some(1));
        assert_eq!(parse_numeric("0.0049").unwrap().scaled(2), Some(0));
        assert_eq!(parse_numeric("NaN").unwrap(), NumericText::NaN);
        assert_eq!(
            parse_numeric("-Infinity").unwrap(),
            NumericText::NegInfinity
        );
        assert_eq!(parse_numeric("1e39").unwrap().scaled(0), None);
        for bad in ["", ".", "1.2.3", "abc", "1e", "--1"] {
            assert_eq!(
                parse_numeric(bad).unwrap_err().sqlstate(),
                SqlState::INVALID_TEXT_REPRESENTATION,
                "{bad}"
            );
        }
    }

    #[test]
    fn dates_with_a_bare_zone_offset() {
        assert_eq!(parse_date("2024-03-01 +00"), parse_date("2024-03-01"));
        assert_eq!(parse_date("2024-03-01 -05:30"), parse_date("2024-03-01"));
        assert!(parse_date("2024-03-01 +x").is_err());
    }

    #[test]
    fn dates() {
        assert_eq!(parse_date("2024-01-02"), Ok(19_724));
        assert_eq!(parse_date("01/02/2024"), Ok(19_724));
        assert_eq!(parse_date("0044-03-15 BC"), Ok(-735_160));
        assert_eq!(parse_date("infinity"), Ok(DUCK_DATE_INF));
        assert_eq!(parse_date("-infinity"), Ok(DUCK_DATE_NINF));
        assert_eq!(parse_date("epoch"), Ok(0));
        assert_eq!(parse_date("2024-01-02 10:00:00"), Ok(19_724));
        assert_eq!(
            parse_date("2024-02-30").unwrap_err().sqlstate(),
            SqlState::DATETIME_FIELD_OVERFLOW
        );
        assert_eq!(
            parse_date("2024-13-01").unwrap_err().sqlstate(),
            SqlState::DATETIME_FIELD_OVERFLOW
        );
        assert_eq!(
            parse_date("yesterday-ish").unwrap_err().sqlstate(),
            SqlState::INVALID_DATETIME_FORMAT
        );
        assert_eq!(
            parse_date("2024-01").unwrap_err().sqlstate(),
            SqlState::INVALID_DATETIME_FORMAT
        );
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("03:04:05"), Ok(11_045_000_000));
        assert_eq!(parse_time("03:04:05.12"), Ok(11_045_120_000));
        assert_eq!(parse_time("03:04"), Ok(11_040_000_000));
        assert_eq!(parse_time("24:00:00"), Ok(MICROS_PER_DAY));
        // Half to even, as PostgreSQL rounds (checked on PostgreSQL 15).
        assert_eq!(parse_time("00:00:00.0000005"), Ok(0));
        assert_eq!(parse_time("00:00:00.0000015"), Ok(2));
        assert_eq!(parse_time("00:00:00.00000051"), Ok(1));
        assert_eq!(parse_time("03:04:05+02"), Ok(11_045_000_000));
        assert_eq!(
            parse_time("25:00:00").unwrap_err().sqlstate(),
            SqlState::DATETIME_FIELD_OVERFLOW
        );
        assert_eq!(
            parse_time("3pm").unwrap_err().sqlstate(),
            SqlState::INVALID_DATETIME_FORMAT
        );
    }

    #[test]
    fn timestamps() {
        let t = 1_704_164_645_123_000i64;
        assert_eq!(parse_timestamp("2024-01-02 03:04:05.123", false), Ok(t));
        assert_eq!(parse_timestamp("2024-01-02T03:04:05.123", false), Ok(t));
        assert_eq!(parse_timestamp("2024-01-02 03:04:05.123+02", false), Ok(t));
        assert_eq!(
            parse_timestamp("2024-01-02 03:04:05.123+02", true),
            Ok(t - 7_200_000_000)
        );
        assert_eq!(
            parse_timestamp("2024-01-02 03:04:05.123-03:30", true),
            Ok(t + 12_600_000_000)
        );
        assert_eq!(parse_timestamp("2024-01-02 03:04:05.123Z", true), Ok(t));
        assert_eq!(parse_timestamp("2024-01-02 03:04:05.123 UTC", true), Ok(t));
        assert_eq!(
            parse_timestamp("2024-01-02 03:04:05.123+0530", true),
            Ok(t - 19_800_000_000)
        );
        assert_eq!(
            parse_timestamp("2024-01-02", true),
            Ok(19_724 * MICROS_PER_DAY)
        );
        assert_eq!(parse_timestamp("infinity", false), Ok(DUCK_TS_INF));
        assert_eq!(parse_timestamp("-infinity", true), Ok(DUCK_TS_NINF));
        assert_eq!(
            parse_timestamp("0044-03-15 01:00:00 BC", false),
            Ok(-735_160 * MICROS_PER_DAY + 3_600_000_000)
        );
        assert_eq!(
            parse_timestamp("2024-01-02 03:04:05 Mars/Olympus", true)
                .unwrap_err()
                .sqlstate(),
            SqlState::INVALID_DATETIME_FORMAT
        );
        assert_eq!(
            parse_timestamp("nope", false).unwrap_err().sqlstate(),
            SqlState::INVALID_DATETIME_FORMAT
        );
    }

    #[test]
    fn intervals() {
        let h = MICROS_PER_HOUR;
        assert_eq!(
            parse_interval("1 year 2 mons 3 days 04:05:06.5"),
            Ok((14, 3, 4 * h + 5 * 60_000_000 + 6_500_000))
        );
        assert_eq!(parse_interval("-00:00:01"), Ok((0, 0, -1_000_000)));
        assert_eq!(parse_interval("00:00:00"), Ok((0, 0, 0)));
        assert_eq!(parse_interval("-1 years -2 mons"), Ok((-14, 0, 0)));
        assert_eq!(parse_interval("-1 mons +2 days"), Ok((-1, 2, 0)));
        assert_eq!(parse_interval("@ 1 hour ago"), Ok((0, 0, -h)));
        assert_eq!(parse_interval("2 weeks"), Ok((0, 14, 0)));
        assert_eq!(parse_interval("1.5 days"), Ok((0, 1, 12 * h)));
        assert_eq!(parse_interval("1.5 months"), Ok((1, 15, 0)));
        assert_eq!(parse_interval("10min"), Ok((0, 0, 600_000_000)));
        assert_eq!(parse_interval("5"), Ok((0, 0, 5_000_000)));
        assert_eq!(
            parse_interval("P1Y2M3DT4H5M6S"),
            Ok((14, 3, 4 * h + 5 * 60_000_000 + 6_000_000))
        );
        assert_eq!(parse_interval("PT0.5S"), Ok((0, 0, 500_000)));
        assert_eq!(parse_interval("100:00:00"), Ok((0, 0, 100 * h)));
        for bad in ["", "1 fortnight", "abc", "P1X", "1:2:3:4"] {
            assert_eq!(
                parse_interval(bad).unwrap_err().sqlstate(),
                SqlState::INVALID_DATETIME_FORMAT,
                "{bad}"
            );
        }
    }

    #[test]
    fn uuids() {
        let v = 0xa0eebc999c0b4ef8bb6d6bb9bd380a11u128;
        assert_eq!(parse_uuid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), Ok(v));
        assert_eq!(parse_uuid("A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"), Ok(v));
        assert_eq!(parse_uuid("{a0eebc999c0b4ef8bb6d6bb9bd380a11}"), Ok(v));
        assert_eq!(parse_uuid("a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11"), Ok(v));
        for bad in [
            "",
            "a0eebc99",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1g",
            "-a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0eeb-c999c0b4ef8bb6d6bb9bd380a11",
        ] {
            assert_eq!(
                parse_uuid(bad).unwrap_err().sqlstate(),
                SqlState::INVALID_TEXT_REPRESENTATION,
                "{bad}"
            );
        }
    }

    #[test]
    fn byteas() {
        assert_eq!(parse_bytea("\\x0aff"), Ok(vec![0x0a, 0xff]));
        assert_eq!(parse_bytea("\\x0A FF"), Ok(vec![0x0a, 0xff]));
        assert_eq!(parse_bytea("\\x"), Ok(vec![]));
        assert_eq!(parse_bytea("ab\\\\c\\001"), Ok(b"ab\\c\x01".to_vec()));
        assert_eq!(parse_bytea("plain"), Ok(b"plain".to_vec()));
        assert_eq!(
            parse_bytea("\\x0").unwrap_err().sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
        assert_eq!(
            parse_bytea("\\xzz").unwrap_err().sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
        assert_eq!(
            parse_bytea("bad\\9").unwrap_err().sqlstate(),
            SqlState::INVALID_TEXT_REPRESENTATION
        );
    }

    #[test]
    fn arrays() {
        use ArrayElem::*;
        let v = |s: &str| Value(s.to_string());
        assert_eq!(parse_array("{1,2,NULL}"), Ok(vec![v("1"), v("2"), Null]));
        assert_eq!(
            parse_array(r#"{"a b","c\"d","",null,"NULL"}"#),
            Ok(vec![v("a b"), v("c\"d"), v(""), Null, v("NULL")])
        );
        assert_eq!(
            parse_array("{{1,2},{3,4}}"),
            Ok(vec![Sub(vec![v("1"), v("2")]), Sub(vec![v("3"), v("4")])])
        );
        assert_eq!(parse_array(" { a , b } "), Ok(vec![v("a"), v("b")]));
        assert_eq!(parse_array("{}"), Ok(vec![]));
        assert_eq!(parse_array("[1:2]={1,2}"), Ok(vec![v("1"), v("2")]));
        for bad in ["", "1,2", "{1,2", "{1,,2}", "{\"a}", "{1}x"] {
            assert_eq!(
                parse_array(bad).unwrap_err().sqlstate(),
                SqlState::INVALID_TEXT_REPRESENTATION,
                "{bad}"
            );
        }
    }
}
