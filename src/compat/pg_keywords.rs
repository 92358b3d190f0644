//! PostgreSQL's keyword categories where they matter to duckmv: which words
//! `quote_ident()` must quote, and which names PostgreSQL accepts that
//! DuckDB's parser reserves.

/// PostgreSQL 15's keywords other than the unreserved ones (column-name,
/// type/function-name and reserved keywords, `pg_get_keywords()` catcode
/// C, T and R): `quote_ident()` quotes these.
const QUOTED_BY_QUOTE_IDENT: &[&str] = &[
    "all",
    "analyse",
    "analyze",
    "and",
    "any",
    "array",
    "as",
    "asc",
    "asymmetric",
    "authorization",
    "between",
    "bigint",
    "binary",
    "bit",
    "boolean",
    "both",
    "case",
    "cast",
    "char",
    "character",
    "check",
    "coalesce",
    "collate",
    "collation",
    "column",
    "concurrently",
    "constraint",
    "create",
    "cross",
    "current_catalog",
    "current_date",
    "current_role",
    "current_schema",
    "current_time",
    "current_timestamp",
    "current_user",
    "dec",
    "decimal",
    "default",
    "deferrable",
    "desc",
    "distinct",
    "do",
    "else",
    "end",
    "except",
    "exists",
    "extract",
    "false",
    "fetch",
    "float",
    "for",
    "foreign",
    "freeze",
    "from",
    "full",
    "grant",
    "greatest",
    "group",
    "grouping",
    "having",
    "ilike",
    "in",
    "initially",
    "inner",
    "inout",
    "int",
    "integer",
    "intersect",
    "interval",
    "into",
    "is",
    "isnull",
    "join",
    "lateral",
    "leading",
    "least",
    "left",
    "like",
    "limit",
    "localtime",
    "localtimestamp",
    "national",
    "natural",
    "nchar",
    "none",
    "normalize",
    "not",
    "notnull",
    "null",
    "nullif",
    "numeric",
    "offset",
    "on",
    "only",
    "or",
    "order",
    "out",
    "outer",
    "overlaps",
    "overlay",
    "placing",
    "position",
    "precision",
    "primary",
    "real",
    "references",
    "returning",
    "right",
    "row",
    "select",
    "session_user",
    "setof",
    "similar",
    "smallint",
    "some",
    "substring",
    "symmetric",
    "table",
    "tablesample",
    "then",
    "time",
    "timestamp",
    "to",
    "trailing",
    "treat",
    "trim",
    "true",
    "union",
    "unique",
    "user",
    "using",
    "values",
    "varchar",
    "variadic",
    "verbose",
    "when",
    "where",
    "window",
    "with",
    "xmlattributes",
    "xmlconcat",
    "xmlelement",
    "xmlexists",
    "xmlforest",
    "xmlnamespaces",
    "xmlparse",
    "xmlpi",
    "xmlroot",
    "xmlserialize",
    "xmltable",
];

/// Words PostgreSQL 15 accepts as plain column and table names (unreserved
/// or column-name keywords there, or no keywords at all) that DuckDB 2.0
/// cannot read unquoted in those places: `duckdb_keywords()` lists them as
/// reserved or as type_function (function and type names only). Compared
/// against `pg_get_keywords()` of PostgreSQL 15.
pub(crate) const RESERVED_BY_DUCKDB: &[&str] = &[
    "anti",
    "asof",
    "at",
    "by",
    "describe",
    "glob",
    "lambda",
    "pivot",
    "pivot_longer",
    "pivot_wider",
    "positional",
    "qualify",
    "semi",
    "show",
    "summarize",
    "unpack",
    "unpivot",
];

/// `quote_ident`'s keyword list as a DuckDB list literal, for catalog_tools.sql.
pub(crate) fn quoted_keywords_sql() -> String {
    let words: Vec<String> = QUOTED_BY_QUOTE_IDENT
        .iter()
        .map(|w| format!("'{w}'"))
        .collect();
    format!("[{}]", words.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_lower_case_words() {
        for list in [QUOTED_BY_QUOTE_IDENT, RESERVED_BY_DUCKDB] {
            assert!(list.windows(2).all(|w| w[0] < w[1]));
            assert!(list
                .iter()
                .all(|w| w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
        }
        // PostgreSQL never reserves a word it lets users name columns with.
        assert!(RESERVED_BY_DUCKDB
            .iter()
            .all(|w| !QUOTED_BY_QUOTE_IDENT.contains(w)));
    }
}
