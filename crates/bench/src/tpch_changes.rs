//! Change batches for the TPC-H views (issue 16): every table but nation and region changes in
//! one batch. A batch of fraction `f` deletes `f/3` of the orders with all their lines, adds as
//! many new orders with new lines, updates `f/3` of the lines and of the orders, and updates
//! `f` of the customers, parts, suppliers and part-suppliers (segments, sizes, nations,
//! prices, costs: columns the queries filter, join or sum on).
//!
//! Rows to change are the first `k` in the order of a salted hash, so a batch picks the same
//! rows on every run given the same earlier batches.

use crate::changes::rows_for;
use crate::tpch_data::{self, Rows, Scale};

/// How many rows one batch touches, table by table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Batch {
    pub new_orders: u64,
    pub deleted_orders: u64,
    pub updated_orders: u64,
    pub updated_lines: u64,
    pub customers: u64,
    pub parts: u64,
    pub suppliers: u64,
    pub partsupps: u64,
}

impl Batch {
    /// The batch for `fraction` of a database of `scale` with `lines` lineitem rows.
    pub fn of(fraction: f64, scale: &Scale, lines: u64) -> Batch {
        let third = |n: u64| rows_for(fraction / 3.0, n);
        Batch {
            new_orders: third(scale.orders),
            deleted_orders: third(scale.orders),
            updated_orders: third(scale.orders),
            updated_lines: third(lines),
            customers: rows_for(fraction, scale.customer),
            parts: rows_for(fraction, scale.part),
            suppliers: rows_for(fraction, scale.supplier),
            partsupps: rows_for(fraction, scale.partsupp()),
        }
    }

    /// Rows of lineitem and orders this batch touches (new and deleted orders count about
    /// four lines each).
    pub fn fact_rows(&self) -> u64 {
        4 * (self.new_orders + self.deleted_orders) + self.updated_lines + self.updated_orders
    }
}

/// `rowid IN (the first k rows of table by a salted hash of cols)`.
fn pick(table: &str, cols: &str, tag: &str, salt: u64, k: u64) -> String {
    format!(
        "rowid IN (SELECT rowid FROM {table} ORDER BY hash({cols}, '{tag}', {salt}), rowid LIMIT {k})"
    )
}

/// `list[(position of col in list) % len + 1]`: the next value of a fixed domain.
fn rotate(col: &str, values: &[&str]) -> String {
    let list: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
    let list = format!("[{}]", list.join(", "));
    format!(
        "coalesce({list}[list_position({list}, {col}) % {} + 1], {col})",
        values.len()
    )
}

/// The statements of one batch. New orders take keys `next_order + 1 ..= next_order +
/// batch.new_orders`.
pub fn statements(batch: &Batch, scale: &Scale, next_order: u64, salt: u64) -> Vec<String> {
    let mut out = Vec::new();
    let doomed = format!(
        "(SELECT o_orderkey FROM orders ORDER BY hash(o_orderkey, 'del', {salt}) LIMIT {})",
        batch.deleted_orders
    );
    out.push(format!("DELETE FROM lineitem WHERE l_orderkey IN {doomed}"));
    out.push(format!("DELETE FROM orders WHERE o_orderkey IN {doomed}"));
    let new = Rows {
        start: next_order,
        end: next_order + batch.new_orders,
        salt: Some(salt),
    };
    out.push(tpch_data::orders(new, scale));
    out.push(tpch_data::lineitem(new, scale));
    out.push(format!(
        "UPDATE lineitem SET l_quantity = l_quantity % 50 + 1, \
         l_extendedprice = l_extendedprice + 1, \
         l_discount = CAST((l_discount * 100 + 1) % 11 / 100 AS DECIMAL(15,2)), \
         l_shipdate = l_shipdate + 1, l_receiptdate = l_receiptdate + 2 WHERE {}",
        pick(
            "lineitem",
            "l_orderkey, l_linenumber",
            "upd",
            salt,
            batch.updated_lines
        )
    ));
    out.push(format!(
        "UPDATE orders SET o_totalprice = o_totalprice + 1, o_orderpriority = {} WHERE {}",
        rotate(
            "o_orderpriority",
            &["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
        ),
        pick("orders", "o_orderkey", "upd", salt, batch.updated_orders)
    ));
    out.push(format!(
        "UPDATE customer SET c_acctbal = c_acctbal + 1, c_mktsegment = {} WHERE {}",
        rotate(
            "c_mktsegment",
            &[
                "AUTOMOBILE",
                "BUILDING",
                "FURNITURE",
                "HOUSEHOLD",
                "MACHINERY"
            ]
        ),
        pick("customer", "c_custkey", "upd", salt, batch.customers)
    ));
    out.push(format!(
        "UPDATE part SET p_retailprice = p_retailprice + 1, p_size = p_size % 50 + 1 WHERE {}",
        pick("part", "p_partkey", "upd", salt, batch.parts)
    ));
    out.push(format!(
        "UPDATE supplier SET s_acctbal = s_acctbal + 1, s_nationkey = (s_nationkey + 1) % 25 \
         WHERE {}",
        pick("supplier", "s_suppkey", "upd", salt, batch.suppliers)
    ));
    out.push(format!(
        "UPDATE partsupp SET ps_supplycost = ps_supplycost + 1, ps_availqty = ps_availqty + 1 \
         WHERE {}",
        pick(
            "partsupp",
            "ps_partkey, ps_suppkey",
            "upd",
            salt,
            batch.partsupps
        )
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpch_data::tests::loaded;

    fn count(db: &duckdb::Connection, sql: &str) -> i64 {
        db.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn a_batch_splits_by_table() {
        let s = Scale::at(1.0);
        let b = Batch::of(0.001, &s, 6_000_000);
        assert_eq!(
            (b.new_orders, b.deleted_orders, b.updated_lines),
            (500, 500, 2000)
        );
        assert_eq!(
            (b.customers, b.parts, b.suppliers, b.partsupps),
            (150, 200, 10, 800)
        );
    }

    // A batch runs on DuckDB, keeps the order count, changes what it says and leaves no line
    // without its order.
    #[test]
    fn a_batch_changes_every_table_and_keeps_lines_with_orders() {
        let (db, s) = loaded(0.002);
        db.execute_batch("CREATE TABLE before AS SELECT * FROM customer")
            .unwrap();
        let b = Batch::of(0.03, &s, count(&db, "SELECT count(*) FROM lineitem") as u64);
        for sql in statements(&b, &s, s.orders, 7) {
            db.execute_batch(&sql).unwrap();
        }
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), s.orders as i64);
        assert_eq!(
            count(
                &db,
                &format!(
                    "SELECT count(*) FROM orders WHERE o_orderkey > {}",
                    s.orders
                )
            ),
            b.new_orders as i64
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM lineitem WHERE l_orderkey NOT IN (SELECT o_orderkey FROM orders)"
            ),
            0
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM (SELECT * FROM customer EXCEPT SELECT * FROM before)"
            ),
            b.customers as i64
        );
    }
}
