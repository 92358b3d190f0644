//! The key a bag view's storage rows are found by: one `UHUGEINT` column, `_mv_h`, built from
//! two of DuckDB's 64-bit row hashes (the columns in order, then in reverse order with each
//! string shifted by one byte).
//!
//! Why: a MERGE that finds rows by `IS NOT DISTINCT FROM` on every column reads every column of
//! the whole storage (38 ms for 1,500 changed rows against the 1.5M rows of a customer LEFT
//! JOIN orders view), while one fixed-width `=` column is read and hashed alone (11 ms). Any
//! condition that compares the columns themselves brings their scan back (28–41 ms measured),
//! so the key is not checked against the row: two different rows of one view would have to
//! agree on both hashes to be taken for one.
//!
//! That is only as good as DuckDB's hash of each value. It is a bijection for integers up to 64
//! bits, dates, times, timestamps and decimals of up to 18 digits, and equal exactly for equal
//! doubles. A string's hash folds 8-byte blocks, so long strings can collide; the second hash
//! reads each string one byte later, with other blocks. Other types are not keyed (`keyable`):
//! a 128-bit integer hashes as the XOR of its halves, so 0 and −1 collide, and nested values
//! combine their parts the same way. Views with such columns find rows by every column.
//!
//! The key is stored, so it must not change under the storage: [`fingerprint_sql`] pins what
//! DuckDB's `hash` gives for a few values of each kind, and a server that finds another
//! fingerprint (a DuckDB whose hash changed) computes every stored key again at start-up.

use crate::ir::{self, Expr, Op};

/// The key column of a bag view's storage and of its consolidated change.
pub const KEY: &str = "_mv_h";

/// DuckDB's integer types of up to 64 bits.
pub const INTEGERS: [&str; 8] = [
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
];

/// Other types whose DuckDB hash is a bijection, or equal exactly for equal values.
const EXACT: [&str; 10] = [
    "BOOLEAN",
    "DATE",
    "TIME",
    "TIMESTAMP",
    "TIMESTAMP_S",
    "TIMESTAMP_MS",
    "TIMESTAMP_NS",
    "TIMESTAMP WITH TIME ZONE",
    "DOUBLE",
    "FLOAT",
];

/// Whether rows of these column types (as DuckDB names them) can be found by the key.
pub fn keyable(types: &[String]) -> bool {
    types.iter().all(|t| {
        let t = t.to_ascii_uppercase();
        let t = t.as_str();
        INTEGERS.contains(&t) || EXACT.contains(&t) || t == "VARCHAR" || short_decimal(t)
    })
}

/// `DECIMAL(p,s)` with p ≤ 18, held as a 64-bit integer.
fn short_decimal(t: &str) -> bool {
    t.strip_prefix("DECIMAL(")
        .and_then(|rest| rest.split(',').next())
        .and_then(|p| p.trim().parse::<u32>().ok())
        .is_some_and(|p| p <= 18)
}

/// `(hash(r.c1, …, r.cn)::UHUGEINT << 64) | hash(r.cn, …, r.c1)::UHUGEINT`, strings read as
/// `'.' || c` in the second; over bare column names when `rel` is None.
pub fn row_key(rel: Option<&'static str>, cols: &[String], types: &[String]) -> Expr {
    let col = |c: &String| match rel {
        Some(r) => ir::col(r, c.clone()),
        None => ir::bare(c.clone()),
    };
    let forward = ir::call("hash", cols.iter().map(col).collect());
    let shifted = |(c, t): (&String, &String)| {
        if t.eq_ignore_ascii_case("VARCHAR") {
            Expr::Str(".".into()).bin(Op::Concat, col(c))
        } else {
            col(c)
        }
    };
    let backward = ir::call("hash", cols.iter().zip(types).rev().map(shifted).collect());
    let wide = |e: Expr| e.cast("UHUGEINT");
    wide(forward)
        .bin(Op::ShiftLeft, Expr::Int(64))
        .bin(Op::BitOr, wide(backward))
}

/// One text of what DuckDB's `hash` gives for values of each kind a key is built from; stored
/// keys stay valid while it does not change.
pub fn fingerprint_sql() -> &'static str {
    "SELECT CAST(hash(42, -7::TINYINT, 300::UBIGINT, 'duckmv', \
     'a string longer than sixteen bytes', 1.5::DECIMAL(15,2), 2.5::DOUBLE, 2.5::FLOAT, \
     DATE '2000-01-01', TIME '12:34:56', TIMESTAMP '2000-01-01 12:34:56', \
     TIMESTAMPTZ '2000-01-01 12:34:56+00', true, NULL::INTEGER, NULL::VARCHAR) AS VARCHAR)"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_key_hashes_the_row_both_ways() {
        let cols = names(&["c1", "c2"]);
        assert_eq!(
            row_key(Some("_mv_d"), &cols, &names(&["INTEGER", "VARCHAR"])).to_string(),
            "(CAST(hash(\"_mv_d\".\"c1\", \"_mv_d\".\"c2\") AS UHUGEINT) << 64) \
             | CAST(hash('.' || \"_mv_d\".\"c2\", \"_mv_d\".\"c1\") AS UHUGEINT)"
        );
        assert_eq!(
            row_key(None, &cols[..1], &names(&["DATE"])).to_string(),
            "(CAST(hash(\"c1\") AS UHUGEINT) << 64) | CAST(hash(\"c1\") AS UHUGEINT)"
        );
    }

    #[test]
    fn only_types_whose_hash_is_exact_or_strings_are_keyed() {
        assert!(keyable(&names(&[
            "BIGINT",
            "VARCHAR",
            "DECIMAL(15,2)",
            "TIMESTAMP WITH TIME ZONE"
        ])));
        for wide in [
            "HUGEINT",
            "DECIMAL(38,2)",
            "UUID",
            "INTEGER[]",
            "INTERVAL",
            "BLOB",
        ] {
            assert!(!keyable(&names(&["INTEGER", wide])), "{wide}");
        }
    }
}
