//! The benchmark's materialized views (issue 6: V1–V7, and V8, which every refresh recomputes;
//! issue 4: the customers/orders seeds).

/// One benchmark view.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// Its name on the server.
    pub name: &'static str,
    /// Short label for tables and the picture.
    pub label: &'static str,
    /// The table whose size the change fractions refer to.
    pub fact: &'static str,
    pub query: &'static str,
}

pub const VIEWS: [View; 8] = [
    View {
        name: "v1_q1",
        label: "V1 Q1 grouped aggregate (lineitem)",
        fact: "lineitem",
        query: "SELECT l_returnflag, l_linestatus, SUM(l_quantity) AS sum_qty, \
                SUM(l_extendedprice) AS sum_base_price, \
                SUM(l_extendedprice * (1 - l_discount)) AS sum_disc_price, \
                SUM(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, \
                AVG(l_quantity) AS avg_qty, AVG(l_extendedprice) AS avg_price, \
                AVG(l_discount) AS avg_disc, COUNT(*) AS count_order \
                FROM lineitem WHERE l_shipdate <= DATE '1998-09-02' \
                GROUP BY l_returnflag, l_linestatus",
    },
    View {
        name: "v2_q3",
        label: "V2 Q3 customer⋈orders⋈lineitem agg.",
        fact: "lineitem",
        query: "SELECT l_orderkey, o_orderdate, o_shippriority, \
                SUM(l_extendedprice * (1 - l_discount)) AS revenue, COUNT(*) AS lines \
                FROM customer JOIN orders ON c_custkey = o_custkey \
                JOIN lineitem ON l_orderkey = o_orderkey \
                WHERE c_mktsegment = 'BUILDING' AND o_orderdate < DATE '1995-03-15' \
                AND l_shipdate > DATE '1995-03-15' \
                GROUP BY l_orderkey, o_orderdate, o_shippriority",
    },
    View {
        name: "v3_left",
        label: "V3 customer LEFT JOIN orders",
        fact: "orders",
        query: "SELECT c_custkey, c_name, o_orderkey, o_totalprice \
                FROM customer LEFT JOIN orders ON o_custkey = c_custkey",
    },
    View {
        name: "v4_exists",
        label: "V4 customer WHERE EXISTS orders",
        fact: "orders",
        query: "SELECT c_custkey, c_name, c_mktsegment FROM customer \
                WHERE EXISTS (SELECT 1 FROM orders WHERE o_custkey = c_custkey)",
    },
    View {
        name: "v5_not_exists",
        label: "V5 customer WHERE NOT EXISTS orders",
        fact: "orders",
        query: "SELECT c_custkey, c_name, c_mktsegment FROM customer \
                WHERE NOT EXISTS (SELECT 1 FROM orders WHERE o_custkey = c_custkey)",
    },
    View {
        name: "v6_distinct",
        label: "V6 DISTINCT projection (lineitem)",
        fact: "lineitem",
        query: "SELECT DISTINCT l_partkey, l_returnflag FROM lineitem",
    },
    View {
        name: "v7_minmax",
        label: "V7 MIN/MAX per supplier under deletes",
        fact: "lineitem",
        query: "SELECT l_suppkey, MIN(l_extendedprice) AS min_price, \
                MAX(l_extendedprice) AS max_price, MIN(l_shipdate) AS first_ship, \
                MAX(l_shipdate) AS last_ship, COUNT(*) AS lines \
                FROM lineitem GROUP BY l_suppkey",
    },
    // A shape duckmv recomputes (a table function in FROM): its full refresh against CTAS
    // into a table, with a result as large as the table it reads.
    View {
        name: "v8_full",
        label: "V8 recomputed projection (orders)",
        fact: "orders",
        query: "SELECT o_orderkey, o_custkey, o_totalprice, o_orderdate, r.x \
                FROM orders, range(1) AS r(x)",
    },
];

pub fn create_sql(v: &View) -> String {
    format!("CREATE MATERIALIZED VIEW {} AS {}", v.name, v.query)
}

/// Rows that are in the view but not in its query, plus the reverse, as a bag: 0 when the view
/// is correct.
pub fn oracle_sql(v: &View) -> String {
    format!(
        "SELECT count(*) FROM ((SELECT * FROM {n} EXCEPT ALL ({q})) \
         UNION ALL (({q}) EXCEPT ALL SELECT * FROM {n})) AS diff",
        n = v.name,
        q = v.query
    )
}

/// What a full refresh must at least do: evaluate the query and store its result.
pub fn full_recompute_sql(v: &View) -> [String; 2] {
    [
        format!("CREATE TEMP TABLE _full AS {}", v.query),
        "DROP TABLE _full".to_string(),
    ]
}

/// The same into a table of the database file, as a user keeping the result would write it.
pub fn table_recompute_sql(v: &View) -> [String; 2] {
    [
        format!("CREATE TABLE _full_table AS {}", v.query),
        "DROP TABLE _full_table".to_string(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data;

    // Every view query runs on DuckDB over the generated tables and returns rows, and the
    // oracle of a table built from the query itself is 0 (the oracle SQL is well-formed and
    // symmetric).
    #[test]
    fn queries_and_oracles_run_on_duckdb() {
        let db = duckdb::Connection::open_in_memory().unwrap();
        let s = data::Sizes::at(0.002);
        for t in data::TABLES {
            db.execute_batch(data::create_table(t)).unwrap();
            for (_, sql) in data::load_statements(t, &s) {
                db.execute_batch(&sql).unwrap();
            }
        }
        for v in VIEWS {
            db.execute_batch(&format!("CREATE TABLE {} AS {}", v.name, v.query))
                .unwrap();
            let n: i64 = db
                .query_row(&format!("SELECT count(*) FROM {}", v.name), [], |r| {
                    r.get(0)
                })
                .unwrap();
            assert!(n > 0, "{} is empty", v.name);
            let diff: i64 = db.query_row(&oracle_sql(&v), [], |r| r.get(0)).unwrap();
            assert_eq!(diff, 0, "{}", v.name);
            // A wrong row is caught.
            db.execute_batch(&format!(
                "DELETE FROM {} WHERE rowid IN (SELECT min(rowid) FROM {})",
                v.name, v.name
            ))
            .unwrap();
            let diff: i64 = db.query_row(&oracle_sql(&v), [], |r| r.get(0)).unwrap();
            assert_eq!(diff, 1, "{}", v.name);
            for sql in full_recompute_sql(&v) {
                db.execute_batch(&sql).unwrap();
            }
        }
        // Both EXISTS and NOT EXISTS views are non-trivial: they split the customers.
        let count = |q: &str| -> u64 {
            let n: i64 = db
                .query_row(&format!("SELECT count(*) FROM ({q})"), [], |r| r.get(0))
                .unwrap();
            n as u64
        };
        let (with, without) = (count(VIEWS[3].query), count(VIEWS[4].query));
        assert!(with > 0 && without > 0);
        assert_eq!(with + without, s.customer);
    }
}
