//! The catalog's type OIDs (`pg_attribute.atttypid`, `pg_type`), generated from the mapping the
//! wire uses (`types::pg_type`), so that a column's type in the catalog is the type its values
//! arrive as. DuckDB names types in `duckdb_columns().data_type`; these lists name each spelling
//! once, and the macros are built from what `pg_type` says of each.

use crate::types::{array_type_of, oids, pg_type, DuckType};

/// Type names `duckdb_columns()` prints as they are.
const NAMES: &[&str] = &[
    "BOOLEAN",
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "HUGEINT",
    "UHUGEINT",
    "VARINT",
    "BIGNUM",
    "FLOAT",
    "DOUBLE",
    "VARCHAR",
    "BLOB",
    "DATE",
    "TIME",
    "TIME_NS",
    "TIME WITH TIME ZONE",
    "TIMESTAMP",
    "TIMESTAMP_S",
    "TIMESTAMP_MS",
    "TIMESTAMP_NS",
    "TIMESTAMP WITH TIME ZONE",
    "TIMESTAMPTZ",
    "TIMESTAMPTZ_NS",
    "TIMESTAMP_TZ_NS",
    "TIMETZ",
    "INTERVAL",
    "UUID",
    "JSON",
    "BIT",
];

/// Parameterized types: the `LIKE` pattern of their names and one example.
const PATTERNS: &[(&str, &str)] = &[
    ("DECIMAL%", "DECIMAL(18,3)"),
    ("STRUCT(%", "STRUCT(a INTEGER)"),
    ("MAP(%", "MAP(VARCHAR, INTEGER)"),
    ("UNION(%", "UNION(a INTEGER)"),
    ("ENUM(%", "ENUM('a', 'b')"),
    ("TIMESTAMP WITH TIME ZONE%", "TIMESTAMP WITH TIME ZONE"),
];

fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A type name and the OID its values are sent as.
type Named = (u32, &'static str);
/// A name pattern, the OID, and whether the type is a composite (sent as JSON).
type Pattern = (u32, &'static str, bool);

/// The OID of each name and pattern, in the lists' order.
fn scalar_oids() -> (Vec<Named>, Vec<Pattern>) {
    let names = NAMES
        .iter()
        .map(|n| (pg_type(&DuckType::parse(n)).oid, *n))
        .collect();
    let patterns = PATTERNS
        .iter()
        .map(|(p, example)| {
            let t = DuckType::parse(example);
            (pg_type(&t).oid, *p, t.is_composite())
        })
        .collect();
    (names, patterns)
}

/// `duckmv._scalar_oid(t)`, `duckmv._array_oid(e)` and `duckmv._type_oid(t)`.
pub fn macros_sql() -> String {
    let (names, patterns) = scalar_oids();
    let mut oids_used: Vec<u32> = names.iter().map(|(o, _)| *o).collect();
    oids_used.extend(patterns.iter().map(|(o, _, _)| *o));
    oids_used.sort_unstable();
    oids_used.dedup();
    let mut scalar = Vec::new();
    for oid in oids_used.iter().filter(|o| **o != oids::TEXT) {
        let mut tests = Vec::new();
        let exact: Vec<String> = names
            .iter()
            .filter(|(o, _)| o == oid)
            .map(|(_, n)| quoted(n))
            .collect();
        if !exact.is_empty() {
            tests.push(format!("t IN ({})", exact.join(", ")));
        }
        for (_, p, _) in patterns.iter().filter(|(o, _, _)| o == oid) {
            tests.push(format!("t LIKE {}", quoted(p)));
        }
        scalar.push(format!("    WHEN {} THEN {oid}", tests.join(" OR ")));
    }
    let array: Vec<String> = oids_used
        .iter()
        .map(|o| (o, array_type_of(*o).oid))
        .filter(|(_, a)| *a != oids::TEXT_ARRAY)
        .map(|(o, a)| format!("WHEN {o} THEN {a}"))
        .collect();
    // A list of composites travels as JSON, like the composite itself.
    let composite: Vec<String> = patterns
        .iter()
        .filter(|(_, _, c)| *c)
        .map(|(_, p, _)| format!("leaf LIKE {}", quoted(p)))
        .collect();
    format!(
        "CREATE OR REPLACE MACRO duckmv._scalar_oid(t) AS CASE\n{}\n    ELSE {}\nEND;\n\
         CREATE OR REPLACE MACRO duckmv._array_oid(e) AS CASE e {} ELSE {} END;\n\
         CREATE OR REPLACE MACRO duckmv._list_oid(leaf) AS CASE WHEN {} THEN {} \
         ELSE duckmv._array_oid(duckmv._scalar_oid(leaf)) END;\n\
         CREATE OR REPLACE MACRO duckmv._type_oid(t) AS (CASE\n    \
         WHEN t LIKE '%]' THEN duckmv._list_oid(regexp_replace(t, '(\\[\\d*\\])+$', ''))\n    \
         ELSE duckmv._scalar_oid(t)\nEND)::INTEGER;\n",
        scalar.join("\n"),
        oids::TEXT,
        array.join(" "),
        oids::TEXT_ARRAY,
        composite.join(" OR "),
        oids::JSON,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_is_a_type_the_wire_knows() {
        for n in NAMES {
            assert!(!matches!(DuckType::parse(n), DuckType::Other(_)), "{n}");
        }
        for (_, example) in PATTERNS {
            assert!(
                !matches!(DuckType::parse(example), DuckType::Other(_)),
                "{example}"
            );
        }
    }

    /// The generated macros, run by DuckDB, give every type the OID its values are sent as.
    #[test]
    fn the_catalog_and_the_wire_agree() {
        let db = crate::engine::Database::open(":memory:").unwrap();
        let conn = db.connect().unwrap();
        conn.exec_batch("CREATE SCHEMA duckmv").unwrap();
        conn.exec_batch(&macros_sql()).unwrap();
        let mut samples: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        samples.extend(PATTERNS.iter().map(|(_, e)| e.to_string()));
        let lists: Vec<String> = samples
            .iter()
            .flat_map(|s| [format!("{s}[]"), format!("{s}[][3]")])
            .collect();
        samples.extend(lists);
        samples.push("STRUCT(a INTEGER[])".into());
        for s in samples {
            let want = pg_type(&DuckType::parse(&s)).oid;
            let rows = super::super::tests::text_rows(
                &conn,
                &format!("SELECT duckmv._type_oid({})", quoted(&s)),
            )
            .unwrap();
            let got = rows[0][0].as_deref().unwrap_or("NULL");
            assert_eq!(got, want.to_string(), "{s}");
        }
    }
}
