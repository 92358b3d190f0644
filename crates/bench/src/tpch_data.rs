//! The TPC-H schema and a data generator in SQL (issue 16): all eight tables with every
//! column the 22 queries read, loaded by `INSERT … SELECT … FROM range(…)` so the server does
//! the work. Values follow the specification's domains closely enough that every query's
//! predicates select rows (nations and regions by name, part types and containers from the
//! same syllables, phone prefixes from the nation, dates derived from the order date), but the
//! random streams are the server's `hash`, not the reference generator's.
//!
//! Every value is a function of a row number `i` and, for change batches, a salt: the same
//! scale factor gives the same database on every run.

/// Row counts at a scale factor: SF 1 = 1.5M orders (with about 6M lines), 150k customers,
/// 200k parts, 800k part-suppliers, 10k suppliers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Scale {
    pub supplier: u64,
    pub part: u64,
    pub customer: u64,
    pub orders: u64,
}

impl Scale {
    pub fn at(sf: f64) -> Scale {
        let n = |base: f64| ((base * sf).round() as u64).max(4);
        Scale {
            supplier: n(10_000.0),
            part: n(200_000.0),
            customer: n(150_000.0),
            orders: n(1_500_000.0),
        }
    }

    pub fn partsupp(&self) -> u64 {
        self.part * 4
    }
}

/// The tables, in load order (a table's references come before it).
pub const TABLES: [&str; 8] = [
    "region", "nation", "supplier", "part", "partsupp", "customer", "orders", "lineitem",
];

pub fn create_table(table: &str) -> &'static str {
    match table {
        "region" => "CREATE TABLE region (r_regionkey INTEGER, r_name VARCHAR, r_comment VARCHAR)",
        "nation" => {
            "CREATE TABLE nation (n_nationkey INTEGER, n_name VARCHAR, n_regionkey INTEGER, \
             n_comment VARCHAR)"
        }
        "supplier" => {
            "CREATE TABLE supplier (s_suppkey BIGINT, s_name VARCHAR, s_address VARCHAR, \
             s_nationkey INTEGER, s_phone VARCHAR, s_acctbal DECIMAL(15,2), s_comment VARCHAR)"
        }
        "part" => {
            "CREATE TABLE part (p_partkey BIGINT, p_name VARCHAR, p_mfgr VARCHAR, p_brand VARCHAR, \
             p_type VARCHAR, p_size INTEGER, p_container VARCHAR, p_retailprice DECIMAL(15,2), \
             p_comment VARCHAR)"
        }
        "partsupp" => {
            "CREATE TABLE partsupp (ps_partkey BIGINT, ps_suppkey BIGINT, ps_availqty INTEGER, \
             ps_supplycost DECIMAL(15,2), ps_comment VARCHAR)"
        }
        "customer" => {
            "CREATE TABLE customer (c_custkey BIGINT, c_name VARCHAR, c_address VARCHAR, \
             c_nationkey INTEGER, c_phone VARCHAR, c_acctbal DECIMAL(15,2), c_mktsegment VARCHAR, \
             c_comment VARCHAR)"
        }
        "orders" => {
            "CREATE TABLE orders (o_orderkey BIGINT, o_custkey BIGINT, o_orderstatus VARCHAR, \
             o_totalprice DECIMAL(15,2), o_orderdate DATE, o_orderpriority VARCHAR, \
             o_clerk VARCHAR, o_shippriority INTEGER, o_comment VARCHAR)"
        }
        "lineitem" => {
            "CREATE TABLE lineitem (l_orderkey BIGINT, l_partkey BIGINT, l_suppkey BIGINT, \
             l_linenumber INTEGER, l_quantity DECIMAL(15,2), l_extendedprice DECIMAL(15,2), \
             l_discount DECIMAL(15,2), l_tax DECIMAL(15,2), l_returnflag VARCHAR, \
             l_linestatus VARCHAR, l_shipdate DATE, l_commitdate DATE, l_receiptdate DATE, \
             l_shipinstruct VARCHAR, l_shipmode VARCHAR, l_comment VARCHAR)"
        }
        other => panic!("unknown TPC-H table {other}"),
    }
}

/// The specification's 25 nations with their regions.
const NATIONS: [(&str, u8); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];

const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];

const COLORS: [&str; 24] = [
    "almond",
    "antique",
    "azure",
    "blue",
    "burlywood",
    "chartreuse",
    "chocolate",
    "coral",
    "cornsilk",
    "cyan",
    "dodger",
    "firebrick",
    "forest",
    "gainsboro",
    "green",
    "honeydew",
    "ivory",
    "khaki",
    "lavender",
    "lemon",
    "linen",
    "magenta",
    "maroon",
    "navy",
];
const TYPE_1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE_2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE_3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
const CONTAINER_1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER_2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "HOUSEHOLD",
    "MACHINERY",
];
const PRIORITIES: [&str; 5] = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];
const INSTRUCTIONS: [&str; 4] = [
    "DELIVER IN PERSON",
    "COLLECT COD",
    "NONE",
    "TAKE BACK RETURN",
];
const MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
const WORDS: [&str; 8] = [
    "furiously",
    "carefully",
    "final",
    "pending",
    "regular",
    "ironic",
    "express",
    "deposits",
];

/// The day TPC-H calls CURRENTDATE: lines received by then are returned or accepted, lines
/// shipped after it are open.
const CURRENT_DATE: &str = "DATE '1995-06-17'";

/// The hash expressions of one generated row: `hash(<key>, '<tag>'[, salt]) % k`, as BIGINT
/// (list indexes and date arithmetic do not take UBIGINT).
#[derive(Debug, Clone)]
struct Gen {
    key: &'static str,
    salt: String,
}

impl Gen {
    fn h(&self, tag: &str, k: u64) -> String {
        format!(
            "CAST(hash({}, '{tag}'{}) % {k} AS BIGINT)",
            self.key, self.salt
        )
    }

    /// One of `values`, chosen by the hash.
    fn pick(&self, tag: &str, values: &[&str]) -> String {
        let list: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
        format!(
            "[{}][{} + 1]",
            list.join(", "),
            self.h(tag, values.len() as u64)
        )
    }

    /// A DECIMAL(15,2) in [lo, lo + span) cents.
    fn money(&self, tag: &str, lo: i64, span: u64) -> String {
        format!(
            "CAST((CAST({} AS BIGINT) + {lo}) / 100 AS DECIMAL(15,2))",
            self.h(tag, span)
        )
    }

    /// A comment of three words; one in `rare` rows carries `phrase` between them.
    fn comment(&self, tag: &str, rare: u64, phrase: &str) -> String {
        format!(
            "{} || CASE WHEN {} = 0 THEN ' {phrase} ' ELSE ' ' END || {} || ' ' || {}",
            self.pick(&format!("{tag}1"), &WORDS),
            self.h(&format!("{tag}r"), rare),
            self.pick(&format!("{tag}2"), &WORDS),
            self.pick(&format!("{tag}3"), &WORDS)
        )
    }

    /// A phone number whose country code is the nation key plus 10.
    fn phone(&self, tag: &str, nation: &str) -> String {
        format!(
            "CAST({nation} + 10 AS VARCHAR) || '-' || CAST({} + 100 AS VARCHAR) || '-' || \
             CAST({} + 100 AS VARCHAR) || '-' || CAST({} + 1000 AS VARCHAR)",
            self.h(&format!("{tag}a"), 900),
            self.h(&format!("{tag}b"), 900),
            self.h(&format!("{tag}c"), 9000)
        )
    }
}

/// Where generated rows come from: a range of row numbers, and for change batches a salt that
/// makes their random columns differ from the loaded rows.
#[derive(Debug, Clone, Copy)]
pub struct Rows {
    pub start: u64,
    pub end: u64,
    pub salt: Option<u64>,
}

fn gen(key: &'static str, rows: Rows) -> Gen {
    Gen {
        key,
        salt: rows.salt.map(|s| format!(", {s}")).unwrap_or_default(),
    }
}

/// The region and nation rows (fixed by the specification).
pub fn fixed_rows(table: &str) -> String {
    match table {
        "region" => {
            let rows: Vec<String> = REGIONS
                .iter()
                .enumerate()
                .map(|(k, n)| format!("({k}, '{n}', 'region {k}')"))
                .collect();
            format!("INSERT INTO region VALUES {}", rows.join(", "))
        }
        "nation" => {
            let rows: Vec<String> = NATIONS
                .iter()
                .enumerate()
                .map(|(k, (n, r))| format!("({k}, '{n}', {r}, 'nation {k}')"))
                .collect();
            format!("INSERT INTO nation VALUES {}", rows.join(", "))
        }
        other => panic!("{other} is not a fixed table"),
    }
}

/// `INSERT INTO supplier …` for suppliers `rows.start + 1 ..= rows.end`.
pub fn supplier(rows: Rows) -> String {
    let g = gen("i", rows);
    // Round robin, so even a small scale has suppliers in every nation the queries name.
    let nation = "(i % 25)";
    format!(
        "INSERT INTO supplier SELECT i + 1, 'Supplier#' || lpad(CAST(i + 1 AS VARCHAR), 9, '0'), \
         'addr ' || CAST({addr} AS VARCHAR), CAST({nation} AS INTEGER), {phone}, {bal}, {comment} \
         FROM range({s}, {e}) t(i)",
        addr = g.h("sa", 1_000_000),
        phone = g.phone("sp", nation),
        bal = g.money("sab", -99_999, 1_100_000),
        comment = g.comment("sc", 20, "Customer Complaints"),
        s = rows.start,
        e = rows.end,
    )
}

/// `INSERT INTO part …`. The retail price is the specification's function of the key.
pub fn part(rows: Rows) -> String {
    let g = gen("i", rows);
    let name: Vec<String> = (1..=3)
        .map(|w| g.pick(&format!("pn{w}"), &COLORS))
        .collect();
    let m = g.h("pm", 5);
    format!(
        "INSERT INTO part SELECT i + 1, {name}, 'Manufacturer#' || CAST({m} + 1 AS VARCHAR), \
         'Brand#' || CAST({m} + 1 AS VARCHAR) || CAST({b} + 1 AS VARCHAR), \
         {t1} || ' ' || {t2} || ' ' || {t3}, CAST({size} + 1 AS INTEGER), {c1} || ' ' || {c2}, \
         CAST((90000 + ((i + 1) // 10) % 20001 + 100 * ((i + 1) % 1000)) / 100 AS DECIMAL(15,2)), \
         {comment} FROM range({s}, {e}) t(i)",
        name = name.join(" || ' ' || "),
        b = g.h("pb", 5),
        t1 = g.pick("pt1", &TYPE_1),
        t2 = g.pick("pt2", &TYPE_2),
        t3 = g.pick("pt3", &TYPE_3),
        size = g.h("ps", 50),
        c1 = g.pick("pc1", &CONTAINER_1),
        c2 = g.pick("pc2", &CONTAINER_2),
        comment = g.comment("pco", 10, "final"),
        s = rows.start,
        e = rows.end,
    )
}

/// The `j`-th (0–3) supplier of part `partkey`: four suppliers a quarter of the suppliers
/// apart, so lineitem and partsupp agree on who supplies what and no pair repeats.
fn supplier_of(partkey: &str, j: &str, suppliers: u64) -> String {
    format!(
        "(({partkey} - 1 + ({j}) * {q}) % {suppliers} + 1)",
        q = suppliers / 4
    )
}

/// `INSERT INTO partsupp …` for rows `rows.start .. rows.end` (four per part).
pub fn partsupp(rows: Rows, scale: &Scale) -> String {
    let g = gen("i", rows);
    format!(
        "INSERT INTO partsupp SELECT i // 4 + 1, {supp}, CAST({avail} + 1 AS INTEGER), {cost}, \
         {comment} FROM range({s}, {e}) t(i)",
        supp = supplier_of("(i // 4 + 1)", "i % 4", scale.supplier),
        avail = g.h("psa", 9999),
        cost = g.money("psc", 100, 100_000),
        comment = g.comment("psco", 10, "blithely"),
        s = rows.start,
        e = rows.end,
    )
}

/// `INSERT INTO customer …`.
pub fn customer(rows: Rows) -> String {
    let g = gen("i", rows);
    let nation = g.h("cn", 25);
    format!(
        "INSERT INTO customer SELECT i + 1, 'Customer#' || lpad(CAST(i + 1 AS VARCHAR), 9, '0'), \
         'addr ' || CAST({addr} AS VARCHAR), CAST({nation} AS INTEGER), {phone}, {bal}, {seg}, \
         {comment} FROM range({s}, {e}) t(i)",
        addr = g.h("ca", 1_000_000),
        phone = g.phone("cp", &nation),
        bal = g.money("cab", -99_999, 1_100_000),
        seg = g.pick("cms", &SEGMENTS),
        comment = g.comment("cc", 10, "quickly"),
        s = rows.start,
        e = rows.end,
    )
}

/// The date of order `key`: a function of the key alone, so its lines can compute it.
fn order_date(key: &str) -> String {
    format!("(DATE '1992-01-01' + CAST(hash({key}, 'od') % 2406 AS INTEGER))")
}

/// `INSERT INTO orders …` for orders `rows.start + 1 ..= rows.end`. As in TPC-H, customers
/// whose key is a multiple of 3 place no orders.
pub fn orders(rows: Rows, scale: &Scale) -> String {
    let g = gen("i", rows);
    let date = order_date("i + 1");
    let cust = format!("({} + 1)", g.h("oc", scale.customer));
    format!(
        "INSERT INTO orders SELECT i + 1, \
         CASE WHEN {cust} % 3 = 0 THEN {cust} - 1 ELSE {cust} END, \
         CASE WHEN {date} + 121 < {CURRENT_DATE} THEN 'F' WHEN {date} > {CURRENT_DATE} THEN 'O' \
         ELSE 'P' END, {price}, {date}, {prio}, 'Clerk#' || lpad(CAST({clerk} + 1 AS VARCHAR), 9, '0'), \
         0, {comment} FROM range({s}, {e}) t(i)",
        price = g.money("otp", 100_000, 50_000_000),
        prio = g.pick("op", &PRIORITIES),
        clerk = g.h("ocl", 1000),
        comment = g.comment("oco", 50, "special requests"),
        s = rows.start,
        e = rows.end,
    )
}

/// `INSERT INTO lineitem …`: one to seven lines for each order `rows.start + 1 ..= rows.end`.
/// Ship, commit and receipt dates follow the order date; the return flag and line status
/// follow the dates, as in the specification.
pub fn lineitem(rows: Rows, scale: &Scale) -> String {
    // Per line: `i` is hash(order, line) so the hashes differ per line.
    let g = gen("i", rows);
    let partkey = format!("({} + 1)", g.h("lpk", scale.part));
    let lines = format!(
        "SELECT o + 1 AS okey, unnest(range(1, CAST(2 + hash(o + 1, 'nl') % 7 AS BIGINT))) AS ln \
         FROM range({}, {}) t(o)",
        rows.start, rows.end
    );
    let keyed = format!(
        "SELECT okey, ln, hash(okey, ln) AS i, {date} AS odate FROM ({lines})",
        date = order_date("okey")
    );
    let drawn = format!(
        "SELECT okey, ln, i, {partkey} AS pk, CAST({q} + 1 AS DECIMAL(15,2)) AS qty, \
         odate + CAST({ship} + 1 AS INTEGER) AS ship, odate + CAST({commit} + 30 AS INTEGER) AS cdate \
         FROM ({keyed})",
        q = g.h("lq", 50),
        ship = g.h("lsd", 121),
        commit = g.h("lcd", 61),
    );
    let receipt = format!("(ship + CAST({} + 1 AS INTEGER))", g.h("lrd", 30));
    format!(
        "INSERT INTO lineitem SELECT okey, pk, {supp}, CAST(ln AS INTEGER), qty, \
         CAST(qty * (90000 + (pk // 10) % 20001 + 100 * (pk % 1000)) / 100 AS DECIMAL(15,2)), \
         CAST({disc} / 100 AS DECIMAL(15,2)), CAST({tax} / 100 AS DECIMAL(15,2)), \
         CASE WHEN {receipt} <= {CURRENT_DATE} THEN {ra} ELSE 'N' END, \
         CASE WHEN ship > {CURRENT_DATE} THEN 'O' ELSE 'F' END, ship, cdate, {receipt}, {instr}, \
         {mode}, {comment} FROM ({drawn})",
        supp = supplier_of("pk", &g.h("lsj", 4), scale.supplier),
        disc = g.h("ld", 11),
        tax = g.h("lt", 9),
        ra = g.pick("lrf", &["R", "A"]),
        instr = g.pick("lsi", &INSTRUCTIONS),
        mode = g.pick("lsm", &MODES),
        comment = g.comment("lco", 10, "slyly"),
    )
}

/// Rows per INSERT while loading.
pub const LOAD_CHUNK: u64 = 250_000;

/// The statements that load every table at `scale`, with a label for progress lines.
pub fn load(scale: &Scale) -> Vec<(String, String)> {
    let mut out = vec![
        ("region".to_string(), fixed_rows("region")),
        ("nation".to_string(), fixed_rows("nation")),
    ];
    let mut chunks = |table: &str, n: u64, make: &dyn Fn(Rows) -> String| {
        let mut start = 0;
        while start < n {
            let end = (start + LOAD_CHUNK).min(n);
            let rows = Rows {
                start,
                end,
                salt: None,
            };
            out.push((format!("{table} {end}/{n}"), make(rows)));
            start = end;
        }
    };
    chunks("supplier", scale.supplier, &supplier);
    chunks("part", scale.part, &part);
    chunks("partsupp", scale.partsupp(), &|r| partsupp(r, scale));
    chunks("customer", scale.customer, &customer);
    chunks("orders", scale.orders, &|r| orders(r, scale));
    // Lines per order chunk: about four lines per order.
    let lines_chunk = LOAD_CHUNK / 4;
    let mut start = 0;
    while start < scale.orders {
        let end = (start + lines_chunk).min(scale.orders);
        let rows = Rows {
            start,
            end,
            salt: None,
        };
        out.push((
            format!("lineitem {end}/{} orders", scale.orders),
            lineitem(rows, scale),
        ));
        start = end;
    }
    out
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// An in-memory DuckDB holding the generated database at `sf` (for the tests of the
    /// modules that build on it).
    pub fn loaded(sf: f64) -> (duckdb::Connection, Scale) {
        let db = duckdb::Connection::open_in_memory().unwrap();
        let scale = Scale::at(sf);
        for t in TABLES {
            db.execute_batch(create_table(t)).unwrap();
        }
        for (_, sql) in load(&scale) {
            db.execute_batch(&sql).unwrap();
        }
        (db, scale)
    }

    fn count(db: &duckdb::Connection, sql: &str) -> i64 {
        db.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn sizes_follow_the_specification() {
        let s = Scale::at(1.0);
        assert_eq!(
            (s.supplier, s.part, s.partsupp(), s.customer, s.orders),
            (10_000, 200_000, 800_000, 150_000, 1_500_000)
        );
    }

    // The generated database has the cardinalities asked for, keys that join, and values in
    // the domains the queries' predicates test.
    #[test]
    fn generated_rows_join_and_hit_the_predicates() {
        let (db, s) = loaded(0.01);
        assert_eq!(count(&db, "SELECT count(*) FROM nation"), 25);
        assert_eq!(count(&db, "SELECT count(*) FROM orders"), s.orders as i64);
        assert_eq!(
            count(&db, "SELECT count(*) FROM partsupp"),
            s.partsupp() as i64
        );
        let lines = count(&db, "SELECT count(*) FROM lineitem");
        assert!(
            lines > 3 * s.orders as i64 && lines < 5 * s.orders as i64,
            "{lines}"
        );
        // Every line's (part, supplier) is a partsupp row; every order has lines.
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM lineitem LEFT JOIN partsupp \
                 ON ps_partkey = l_partkey AND ps_suppkey = l_suppkey WHERE ps_partkey IS NULL"
            ),
            0
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM orders WHERE NOT EXISTS \
                 (SELECT 1 FROM lineitem WHERE l_orderkey = o_orderkey)"
            ),
            0
        );
        assert_eq!(
            count(
                &db,
                "SELECT count(DISTINCT (ps_partkey, ps_suppkey)) FROM partsupp"
            ),
            s.partsupp() as i64
        );
        for pred in [
            "(SELECT count(*) FROM part WHERE p_name LIKE '%green%')",
            "(SELECT count(*) FROM part WHERE p_type LIKE '%BRASS' AND p_size = 15)",
            "(SELECT count(*) FROM part WHERE p_container = 'MED BOX')",
            "(SELECT count(*) FROM supplier WHERE s_comment LIKE '%Customer%Complaints%')",
            "(SELECT count(*) FROM orders WHERE o_comment LIKE '%special%requests%')",
            "(SELECT count(*) FROM customer WHERE substring(c_phone, 1, 2) IN ('13', '31'))",
            "(SELECT count(*) FROM lineitem WHERE l_returnflag = 'N' AND l_linestatus = 'O')",
            "(SELECT count(*) FROM lineitem WHERE l_commitdate < l_receiptdate)",
        ] {
            assert!(count(&db, &format!("SELECT {pred}")) > 0, "{pred}");
        }
    }
}
