//! Calendar arithmetic shared by the text and binary codecs: proleptic Gregorian dates with
//! astronomical years (year 0 = 1 BC, as both DuckDB and PostgreSQL count internally), and the
//! special "infinity" values of each system.

/// Days from 1970-01-01 (DuckDB, Unix) to 2000-01-01 (PostgreSQL's epoch).
pub const PG_EPOCH_DAYS: i64 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
pub const PG_EPOCH_MICROS: i64 = PG_EPOCH_DAYS * MICROS_PER_DAY;
pub const MICROS_PER_SEC: i64 = 1_000_000;
pub const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SEC;
pub const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
pub const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;

/// DuckDB's `date_t::infinity()` / `ninfinity()`.
pub const DUCK_DATE_INF: i32 = i32::MAX;
pub const DUCK_DATE_NINF: i32 = -i32::MAX;
/// DuckDB's `timestamp_t::infinity()` / `ninfinity()`.
pub const DUCK_TS_INF: i64 = i64::MAX;
pub const DUCK_TS_NINF: i64 = -i64::MAX;
/// PostgreSQL's DATEVAL_NOEND / DATEVAL_NOBEGIN and DT_NOEND / DT_NOBEGIN.
pub const PG_DATE_INF: i32 = i32::MAX;
pub const PG_DATE_NINF: i32 = i32::MIN;
pub const PG_TS_INF: i64 = i64::MAX;
pub const PG_TS_NINF: i64 = i64::MIN;

/// (year, month, day) of a day count from 1970-01-01. Howard Hinnant's algorithm, in i64 so
/// that every i32 day count works.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Day count from 1970-01-01 of a (year, month, day); the inverse of [`civil_from_days`].
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// DuckDB date (days since 1970) → PostgreSQL date (days since 2000), infinities mapped.
pub fn duck_date_to_pg(days: i32) -> Option<i32> {
    match days {
        DUCK_DATE_INF => Some(PG_DATE_INF),
        DUCK_DATE_NINF => Some(PG_DATE_NINF),
        d => i32::try_from(d as i64 - PG_EPOCH_DAYS).ok(),
    }
}

/// PostgreSQL date → DuckDB date, infinities mapped.
pub fn pg_date_to_duck(days: i32) -> Option<i32> {
    match days {
        PG_DATE_INF => Some(DUCK_DATE_INF),
        PG_DATE_NINF => Some(DUCK_DATE_NINF),
        d => i32::try_from(d as i64 + PG_EPOCH_DAYS).ok(),
    }
}

/// DuckDB timestamp (µs since 1970) → PostgreSQL timestamp (µs since 2000), infinities mapped.
pub fn duck_ts_to_pg(micros: i64) -> Option<i64> {
    match micros {
        DUCK_TS_INF => Some(PG_TS_INF),
        DUCK_TS_NINF => Some(PG_TS_NINF),
        m => m.checked_sub(PG_EPOCH_MICROS),
    }
}

/// PostgreSQL timestamp → DuckDB timestamp, infinities mapped.
pub fn pg_ts_to_duck(micros: i64) -> Option<i64> {
    match micros {
        PG_TS_INF => Some(DUCK_TS_INF),
        PG_TS_NINF => Some(DUCK_TS_NINF),
        m => m.checked_add(PG_EPOCH_MICROS),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for days in [
            -1_000_000_000i64,
            -719_528,
            -1,
            0,
            1,
            10_957,
            19_724,
            2_932_896,
            1_000_000_000,
        ] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{days}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_724), (2024, 1, 2));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        // 0044-03-15 BC is astronomical year -43.
        assert_eq!(days_from_civil(-43, 3, 15), -735_160);
    }

    #[test]
    fn epoch_shift_and_infinities() {
        assert_eq!(duck_date_to_pg(PG_EPOCH_DAYS as i32), Some(0));
        assert_eq!(duck_date_to_pg(DUCK_DATE_INF), Some(PG_DATE_INF));
        assert_eq!(duck_date_to_pg(DUCK_DATE_NINF), Some(PG_DATE_NINF));
        assert_eq!(pg_date_to_duck(PG_DATE_NINF), Some(DUCK_DATE_NINF));
        assert_eq!(duck_ts_to_pg(PG_EPOCH_MICROS), Some(0));
        assert_eq!(pg_ts_to_duck(PG_TS_NINF), Some(DUCK_TS_NINF));
        assert_eq!(pg_ts_to_duck(PG_TS_INF), Some(DUCK_TS_INF));
        assert_eq!(duck_ts_to_pg(i64::MIN), None);
    }

    #[test]
    fn month_lengths() {
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(2023, 4), 30);
    }
}
