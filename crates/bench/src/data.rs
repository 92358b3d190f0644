//! TPC-H-shaped tables and the SQL that fills them deterministically.
//!
//! Every column is a function of the row number `i` (and, for rows added by a change batch, a
//! salt) through DuckDB's `hash(i, 'column', …)`, so a load at a given scale factor gives the
//! same rows on every run and machine, and the generator runs entirely inside the server
//! (`INSERT … SELECT … FROM range(a, b)`) instead of shipping rows over the wire.
//!
//! Money columns are DECIMAL so that sums maintained incrementally are exact: with DOUBLE the
//! bag-equality oracle would flag rounding differences that say nothing about correctness.

/// Row counts per table at a scale factor.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Sizes {
    pub nation: u64,
    pub supplier: u64,
    pub part: u64,
    pub customer: u64,
    pub orders: u64,
    pub lineitem: u64,
}

impl Sizes {
    /// TPC-H cardinalities: SF 1 = 6M lineitem, 1.5M orders, 150k customers, 200k parts,
    /// 10k suppliers, 25 nations. Exactly four lines per order keeps `l_orderkey = i / 4`.
    pub fn at(sf: f64) -> Sizes {
        let n = |base: f64| ((base * sf).round() as u64).max(1);
        let orders = n(1_500_000.0);
        Sizes {
            nation: 25,
            supplier: n(10_000.0),
            part: n(200_000.0),
            customer: n(150_000.0),
            orders,
            lineitem: orders * 4,
        }
    }
}

pub const TABLES: [&str; 6] = [
    "nation", "supplier", "part", "customer", "orders", "lineitem",
];

pub fn create_table(table: &str) -> &'static str {
    match table {
        "nation" => {
            "CREATE TABLE nation (n_nationkey INTEGER, n_name VARCHAR, n_regionkey INTEGER)"
        }
        "supplier" => {
            "CREATE TABLE supplier (s_suppkey BIGINT, s_name VARCHAR, s_nationkey INTEGER, \
             s_acctbal DECIMAL(15,2))"
        }
        "part" => {
            "CREATE TABLE part (p_partkey BIGINT, p_name VARCHAR, p_brand VARCHAR, p_type VARCHAR, \
             p_size INTEGER, p_retailprice DECIMAL(15,2))"
        }
        "customer" => {
            "CREATE TABLE customer (c_custkey BIGINT, c_name VARCHAR, c_nationkey INTEGER, \
             c_mktsegment VARCHAR, c_acctbal DECIMAL(15,2))"
        }
        "orders" => {
            "CREATE TABLE orders (o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus VARCHAR, \
             o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority VARCHAR, \
             o_shippriority INTEGER)"
        }
        "lineitem" => {
            "CREATE TABLE lineitem (l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, \
             l_linenumber INTEGER, l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), \
             l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag VARCHAR, \
             l_linestatus VARCHAR, l_shipdate DATE, l_shipmode VARCHAR)"
        }
        other => panic!("unknown benchmark table {other}"),
    }
}

/// `hash(i, 'col'[, salt]) % k`: the pseudo-random building block.
fn h(col: &str, salt: &str, k: u64) -> String {
    format!("(hash(i, '{col}'{salt}) % {k})")
}

/// `CASE x WHEN 0 THEN 'a' WHEN 1 THEN 'b' … ELSE last END` over `hash % len`.
fn pick(col: &str, salt: &str, values: &[&str]) -> String {
    let mut s = format!("CASE {}", h(col, salt, values.len() as u64));
    for (n, v) in values[..values.len() - 1].iter().enumerate() {
        s.push_str(&format!(" WHEN {n} THEN '{v}'"));
    }
    s.push_str(&format!(" ELSE '{}' END", values[values.len() - 1]));
    s
}

/// A money value in [lo, lo + span) cents, as DECIMAL(15,2).
fn money(col: &str, salt: &str, lo: u64, span: u64) -> String {
    format!(
        "CAST(({} + {lo}) / 100 AS DECIMAL(15,2))",
        h(col, salt, span)
    )
}

/// How the rows of one INSERT are numbered and keyed. The initial load uses the row number
/// itself; a change batch salts the hashes so its rows differ from the loaded ones.
#[derive(Debug, Clone)]
pub struct Gen {
    /// `, <salt>` appended to every hash call, or empty for the initial load.
    salt: String,
}

impl Gen {
    pub fn load() -> Gen {
        Gen {
            salt: String::new(),
        }
    }

    pub fn salted(salt: u64) -> Gen {
        Gen {
            salt: format!(", {salt}"),
        }
    }

    /// The SELECT list of one table's row `i`. `key` is the SQL of the primary key (`i`, or
    /// `i + offset` for rows added later); for lineitem it is the order key expression.
    pub fn select_list(&self, table: &str, sizes: &Sizes, key: &str) -> String {
        let s = self.salt.as_str();
        match table {
            "nation" => {
                "CAST(i AS INTEGER), 'NATION' || CAST(i AS VARCHAR), CAST(i % 5 AS INTEGER)".into()
            }
            "supplier" => format!(
                "{key} + 1, 'Supplier#' || lpad(CAST({key} + 1 AS VARCHAR), 9, '0'), \
                 CAST({} AS INTEGER), {}",
                h("sn", s, 25),
                money("sab", s, 0, 1_100_000)
            ),
            "part" => format!(
                "{key} + 1, 'part ' || CAST({} AS VARCHAR), 'Brand#' || CAST({} AS VARCHAR), {}, \
                 CAST({} + 1 AS INTEGER), {}",
                h("pn", s, 1_000_000),
                h("pb", s, 55),
                pick("pt", s, &["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"]),
                h("ps", s, 50),
                money("prp", s, 90_000, 110_000)
            ),
            "customer" => format!(
                "{key} + 1, 'Customer#' || lpad(CAST({key} + 1 AS VARCHAR), 9, '0'), \
                 CAST({} AS INTEGER), {}, CAST((CAST({} AS BIGINT) - 99999) / 100 AS DECIMAL(15,2))",
                h("cn", s, 25),
                pick(
                    "cms",
                    s,
                    &["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]
                ),
                h("cab", s, 1_100_000)
            ),
            "orders" => {
                // As in TPC-H, a third of the customers (custkey divisible by 3) place no order
                // in the initial load, so EXISTS / NOT EXISTS both have work to do.
                let c = format!("({} + 1)", h("oc", s, sizes.customer));
                let custkey = if s.is_empty() {
                    format!("CASE WHEN {c} % 3 = 0 THEN {c} - 1 ELSE {c} END")
                } else {
                    c
                };
                format!(
                    "{key}, {custkey}, {}, {}, DATE '1992-01-01' + CAST({} AS INTEGER), {}, 0",
                    pick("os", s, &["O", "F", "P"]),
                    money("otp", s, 100_000, 50_000_000),
                    h("od", s, 2406),
                    pick(
                        "op",
                        s,
                        &["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
                    )
                )
            }
            "lineitem" => format!(
                "{key}, {} + 1, {} + 1, CAST(i % 4 + 1 AS INTEGER), CAST({} + 1 AS DECIMAL(15,2)), \
                 {}, CAST({} / 100 AS DECIMAL(15,2)), CAST({} / 100 AS DECIMAL(15,2)), {}, {}, \
                 DATE '1992-01-02' + CAST({} AS INTEGER), {}",
                h("lpk", s, sizes.part),
                h("lsk", s, sizes.supplier),
                h("lq", s, 50),
                money("lep", s, 90_000, 9_000_000),
                h("ld", s, 11),
                h("lt", s, 9),
                pick("lrf", s, &["R", "A", "N"]),
                pick("lls", s, &["O", "F"]),
                h("lsd", s, 2526),
                pick(
                    "lsm",
                    s,
                    &["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"]
                )
            ),
            other => panic!("unknown benchmark table {other}"),
        }
    }
}

/// Rows per INSERT during the load: big enough to amortise a statement, small enough that the
/// progress line moves.
pub const LOAD_CHUNK: u64 = 500_000;

/// The INSERTs that load `table`, chunk by chunk, as (rows so far, SQL).
pub fn load_statements(table: &str, sizes: &Sizes) -> Vec<(u64, String)> {
    let n = rows_of(table, sizes);
    let gen = Gen::load();
    let key = if table == "lineitem" { "i // 4" } else { "i" };
    let list = gen.select_list(table, sizes, key);
    let mut out = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + LOAD_CHUNK).min(n);
        out.push((
            end,
            format!("INSERT INTO {table} SELECT {list} FROM range({start}, {end}) t(i)"),
        ));
        start = end;
    }
    out
}

pub fn rows_of(table: &str, sizes: &Sizes) -> u64 {
    match table {
        "nation" => sizes.nation,
        "supplier" => sizes.supplier,
        "part" => sizes.part,
        "customer" => sizes.customer,
        "orders" => sizes.orders,
        "lineitem" => sizes.lineitem,
        other => panic!("unknown benchmark table {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_tpch() {
        let s = Sizes::at(1.0);
        assert_eq!(s.lineitem, 6_000_000);
        assert_eq!(s.orders, 1_500_000);
        assert_eq!(s.customer, 150_000);
        assert_eq!(s.part, 200_000);
        assert_eq!(s.supplier, 10_000);
        assert_eq!(s.nation, 25);
        let tiny = Sizes::at(0.000_000_1);
        assert!(tiny.supplier >= 1 && tiny.lineitem == 4);
    }

    #[test]
    fn load_is_chunked_and_covers_every_row() {
        let s = Sizes::at(0.2); // 1.2M lineitem
        let stmts = load_statements("lineitem", &s);
        assert_eq!(stmts.len(), 3);
        assert_eq!(stmts.last().unwrap().0, 1_200_000);
        assert!(stmts[0].1.contains("range(0, 500000)"));
        assert!(stmts[2].1.contains("range(1000000, 1200000)"));
        assert!(stmts[0]
            .1
            .starts_with("INSERT INTO lineitem SELECT i // 4, "));
    }

    // The generator is checked against DuckDB itself: every column count matches its table and
    // the load is deterministic and shaped as promised.
    #[test]
    fn generated_rows_fit_their_tables_in_duckdb() {
        let db = duckdb::Connection::open_in_memory().unwrap();
        let s = Sizes::at(0.001);
        for t in TABLES {
            db.execute_batch(create_table(t)).unwrap();
            for (_, sql) in load_statements(t, &s) {
                db.execute_batch(&sql).unwrap();
            }
            let n: i64 = db
                .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .unwrap();
            assert_eq!(n as u64, rows_of(t, &s), "{t}");
        }
        // No initial order belongs to a customer whose key is divisible by 3.
        let bad: i64 = db
            .query_row(
                "SELECT count(*) FROM orders WHERE o_custkey % 3 = 0",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(bad, 0);
        let (lo, hi): (i64, i64) = db
            .query_row(
                "SELECT min(o_custkey), max(o_custkey) FROM orders",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert!(lo >= 1 && hi as u64 <= s.customer);
        // Deterministic: a second load gives the same rows.
        let sum = |db: &duckdb::Connection| -> String {
            db.query_row(
                "SELECT CAST(sum(hash(l_orderkey, l_partkey, l_extendedprice, l_returnflag, l_shipdate)) AS VARCHAR) FROM lineitem",
                [],
                |r| r.get(0),
            )
            .unwrap()
        };
        let first = sum(&db);
        db.execute_batch("DELETE FROM lineitem").unwrap();
        for (_, sql) in load_statements("lineitem", &s) {
            db.execute_batch(&sql).unwrap();
        }
        assert_eq!(first, sum(&db));
    }
}
