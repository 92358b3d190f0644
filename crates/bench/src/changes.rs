//! Deterministic change batches: a mix of inserts, updates and deletes of a given number of
//! rows of lineitem and orders.
//!
//! Rows to change are the first `k` rows in the order of a salted hash of their contents, so a
//! batch picks the same rows on every run (given the same earlier batches). A third of the rows
//! are inserted, a third updated and a third deleted, which keeps the tables at their size
//! across batches.

use crate::data::{Gen, Sizes};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Mix {
    pub inserts: u64,
    pub updates: u64,
    pub deletes: u64,
}

impl Mix {
    /// `total` rows split into inserts, updates and deletes (inserts get the remainder).
    pub fn of(total: u64) -> Mix {
        let updates = total / 3;
        let deletes = total / 3;
        Mix {
            inserts: total - updates - deletes,
            updates,
            deletes,
        }
    }

    pub fn total(&self) -> u64 {
        self.inserts + self.updates + self.deletes
    }
}

/// The number of rows a change of `fraction` of a table of `rows` rows touches (at least one).
pub fn rows_for(fraction: f64, rows: u64) -> u64 {
    ((fraction * rows as f64).round() as u64).max(1)
}

/// `WHERE rowid IN (the first k rows by a salted hash of the columns)`.
fn pick_rows(table: &str, cols: &str, tag: &str, salt: u64, k: u64) -> String {
    format!(
        "rowid IN (SELECT rowid FROM {table} ORDER BY hash({cols}, '{tag}', {salt}), rowid LIMIT {k})"
    )
}

const LINEITEM_COLS: &str = "l_orderkey, l_linenumber, l_partkey, l_suppkey, l_extendedprice";
const ORDERS_COLS: &str = "o_orderkey, o_custkey, o_totalprice";

/// A lineitem batch. Half of the deletes remove the most expensive line of some suppliers, so
/// MIN/MAX views (V7) lose their current extreme and must recompute those groups; new lines
/// belong to orders in `[0, order_keys)`.
pub fn lineitem(sizes: &Sizes, order_keys: u64, mix: Mix, salt: u64) -> Vec<String> {
    let mut out = Vec::new();
    let extreme = (mix.deletes / 2).min(sizes.supplier);
    let random = mix.deletes - extreme;
    if extreme > 0 {
        out.push(format!(
            "DELETE FROM lineitem WHERE rowid IN (SELECT arg_max(rowid, l_extendedprice) \
             FROM lineitem GROUP BY l_suppkey ORDER BY hash(l_suppkey, 'xdel', {salt}) LIMIT {extreme})"
        ));
    }
    if random > 0 {
        out.push(format!(
            "DELETE FROM lineitem WHERE {}",
            pick_rows("lineitem", LINEITEM_COLS, "del", salt, random)
        ));
    }
    if mix.updates > 0 {
        // Moves rows between V1's and V6's groups (return flag) and changes sums and extremes.
        out.push(format!(
            "UPDATE lineitem SET l_quantity = l_quantity + 1, l_extendedprice = l_extendedprice + 1, \
             l_returnflag = CASE l_returnflag WHEN 'R' THEN 'A' WHEN 'A' THEN 'N' ELSE 'R' END, \
             l_shipdate = l_shipdate + 1 WHERE {}",
            pick_rows("lineitem", LINEITEM_COLS, "upd", salt, mix.updates)
        ));
    }
    if mix.inserts > 0 {
        let key = format!("hash(i, 'lok', {salt}) % {order_keys}");
        out.push(format!(
            "INSERT INTO lineitem SELECT {} FROM range({}) t(i)",
            Gen::salted(salt).select_list("lineitem", sizes, &key),
            mix.inserts
        ));
    }
    out
}

/// An orders batch. New orders take keys from `next_key` on and may belong to any customer,
/// including the third that had none (V5's rows disappear); updates move orders between
/// customers; deletes can leave a customer without orders (V4's rows disappear).
pub fn orders(sizes: &Sizes, next_key: u64, mix: Mix, salt: u64) -> Vec<String> {
    let mut out = Vec::new();
    if mix.deletes > 0 {
        out.push(format!(
            "DELETE FROM orders WHERE {}",
            pick_rows("orders", ORDERS_COLS, "del", salt, mix.deletes)
        ));
    }
    if mix.updates > 0 {
        out.push(format!(
            "UPDATE orders SET o_custkey = hash(o_orderkey, 'ucust', {salt}) % {} + 1, \
             o_totalprice = o_totalprice + 1 WHERE {}",
            sizes.customer,
            pick_rows("orders", ORDERS_COLS, "upd", salt, mix.updates)
        ));
    }
    if mix.inserts > 0 {
        out.push(format!(
            "INSERT INTO orders SELECT {} FROM range({}) t(i)",
            Gen::salted(salt).select_list("orders", sizes, &format!("i + {next_key}")),
            mix.inserts
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data;

    #[test]
    fn mix_splits_in_thirds() {
        assert_eq!(
            Mix::of(10),
            Mix {
                inserts: 4,
                updates: 3,
                deletes: 3
            }
        );
        assert_eq!(Mix::of(1).total(), 1);
        assert_eq!(Mix::of(1).inserts, 1);
        assert_eq!(rows_for(0.001, 6_000_000), 6000);
        assert_eq!(rows_for(0.0001, 600), 1);
    }

    fn loaded(sf: f64) -> (duckdb::Connection, Sizes) {
        let db = duckdb::Connection::open_in_memory().unwrap();
        let s = Sizes::at(sf);
        for t in data::TABLES {
            db.execute_batch(data::create_table(t)).unwrap();
            for (_, sql) in data::load_statements(t, &s) {
                db.execute_batch(&sql).unwrap();
            }
        }
        (db, s)
    }

    fn count(db: &duckdb::Connection, sql: &str) -> i64 {
        db.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    /// A hash of the whole table as a bag (the table alias names the row as a struct).
    fn fingerprint(db: &duckdb::Connection, t: &str) -> String {
        db.query_row(
            &format!("SELECT CAST(sum(hash(x)) AS VARCHAR) FROM {t} x"),
            [],
            |r| r.get(0),
        )
        .unwrap()
    }

    // Runs real batches on DuckDB: they are valid SQL, keep the table size, touch the promised
    // number of rows, delete current maxima, and are deterministic.
    #[test]
    fn batches_change_what_they_promise() {
        let run = || {
            let (db, s) = loaded(0.002);
            let mix = Mix::of(rows_for(0.01, s.lineitem)); // 120 rows
            let before_max: i64 = count(
                &db,
                "SELECT count(*) FROM (SELECT l_suppkey, max(l_extendedprice) m FROM lineitem GROUP BY 1)",
            );
            let before = count(&db, "SELECT count(*) FROM lineitem");
            for sql in lineitem(&s, s.orders, mix, 7) {
                db.execute_batch(&sql).unwrap();
            }
            let after = count(&db, "SELECT count(*) FROM lineitem");
            assert_eq!(after, before - mix.deletes as i64 + mix.inserts as i64);
            assert!(before_max > 0);
            let omix = Mix::of(rows_for(0.01, s.orders));
            let ob = count(&db, "SELECT count(*) FROM orders");
            for sql in orders(&s, s.orders, omix, 7) {
                db.execute_batch(&sql).unwrap();
            }
            let oa = count(&db, "SELECT count(*) FROM orders");
            assert_eq!(oa, ob - omix.deletes as i64 + omix.inserts as i64);
            // New order keys are fresh.
            assert_eq!(
                count(
                    &db,
                    "SELECT count(*) - count(DISTINCT o_orderkey) FROM orders"
                ),
                0
            );
            (fingerprint(&db, "lineitem"), fingerprint(&db, "orders"))
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn extreme_deletes_remove_a_maximum() {
        let (db, s) = loaded(0.002);
        let maxima = |db: &duckdb::Connection| {
            count(
                db,
                "SELECT count(*) FROM lineitem l JOIN (SELECT l_suppkey k, max(l_extendedprice) m \
                 FROM lineitem GROUP BY 1) x ON l.l_suppkey = x.k AND l.l_extendedprice = x.m",
            )
        };
        let sum_max = |db: &duckdb::Connection| -> f64 {
            db.query_row(
                "SELECT CAST(sum(m) AS DOUBLE) FROM (SELECT max(l_extendedprice) m FROM lineitem GROUP BY l_suppkey)",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        let before = sum_max(&db);
        assert!(maxima(&db) > 0);
        let mix = Mix {
            inserts: 0,
            updates: 0,
            deletes: 4,
        };
        for sql in lineitem(&s, s.orders, mix, 1) {
            db.execute_batch(&sql).unwrap();
        }
        assert!(sum_max(&db) < before, "deleting maxima lowers some MAX");
    }
}
