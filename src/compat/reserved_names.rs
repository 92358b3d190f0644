//! Names PostgreSQL allows that DuckDB reserves (`pg_keywords::RESERVED_BY_DUCKDB`):
//! a column `at`, a table alias `at` (pgAdmin's `pg_attribute at`), a column `by`.
//! DuckDB reads such a word as its keyword and fails with a syntax error, so
//! where one stands as a name it is quoted.
//!
//! A word counts as a name only in places no keyword of DuckDB's can stand:
//! before a `.`, where an operand or a list item starts, after FROM/INTO/...,
//! after AS, or right after a name when a clause or list boundary follows (an
//! alias). DuckDB's own uses — `AT TIME ZONE`, `GROUP BY`, `SEMI JOIN`,
//! `lambda x: …`, `SHOW …`, `FROM (DESCRIBE t)`, `FROM t PIVOT (…)` — stay.

use super::pg_keywords::RESERVED_BY_DUCKDB;
use crate::sql::lex::{Tok, Token};
use crate::sql::Lexed;

/// `sql` with the DuckDB-reserved words that stand as names quoted, or None
/// when none does.
pub fn quote_reserved_names(s: &Lexed) -> Option<String> {
    let (sql, toks) = (s.text(), s.tokens());
    if !mentions_one(sql) {
        return None;
    }
    let names: Vec<&Token> = (0..toks.len())
        .filter(|&i| {
            let t = &toks[i];
            t.kind == Tok::Word && reserved(&t.text).is_some() && is_name(toks, i)
        })
        .map(|i| &toks[i])
        .collect();
    if names.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(sql.len() + 2 * names.len());
    let mut pos = 0;
    for t in names {
        out.push_str(&sql[pos..t.start]);
        // An unquoted name means its lower-case spelling, as in PostgreSQL.
        out.push('"');
        out.push_str(&t.text.to_ascii_lowercase());
        out.push('"');
        pos = t.end;
    }
    out.push_str(&sql[pos..]);
    Some(out)
}

/// The lower-case reserved word `upper` spells, if it is one.
fn reserved(upper: &str) -> Option<&'static str> {
    RESERVED_BY_DUCKDB
        .iter()
        .find(|w| w.eq_ignore_ascii_case(upper))
        .copied()
}

/// Whether any reserved word occurs as a whole word (a cheap test that spares
/// most statements the tokenizer).
fn mentions_one(sql: &str) -> bool {
    sql.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| (2..=12).contains(&w.len()) && reserved(w).is_some())
}

/// Whether the reserved word at `i` stands as a name.
fn is_name(toks: &[Token], i: usize) -> bool {
    let word = reserved(&toks[i].text).unwrap_or_default();
    let prev = i.checked_sub(1).map(|j| &toks[j]);
    let next = toks.get(i + 1);
    if prev.is_some_and(|p| p.is_punct(".") || p.is_punct("::")) {
        // DuckDB reads any word after a dot as a name; after `::` it is a type.
        return false;
    }
    if next.is_some_and(|n| n.is_punct(".")) {
        return true;
    }
    let Some(prev) = prev else {
        // Leading words are statements (SHOW, DESCRIBE, PIVOT, ...).
        return false;
    };
    if keyword_use(toks, i, word) {
        return false;
    }
    if prev.is_kw("AS") || starts_operand(prev) || names_relation_after(prev) {
        return true;
    }
    ends_operand(prev) && next.is_none_or(ends_alias)
}

/// DuckDB's own uses of the word at `i`.
fn keyword_use(toks: &[Token], i: usize, word: &str) -> bool {
    let at = |k: usize| toks.get(i + k);
    let prev = &toks[i - 1];
    match word {
        "at" => {
            // `ts AT TIME ZONE 'UTC'`, and time travel: `FROM t AT (VERSION => 3)`.
            (at(1).is_some_and(|t| t.is_kw("TIME")) && at(2).is_some_and(|t| t.is_kw("ZONE")))
                || at(1).is_some_and(|t| t.is_punct("("))
        }
        // UNION [ALL | DISTINCT] BY NAME
        "by" => prev.is_kw("ALL") || prev.is_kw("DISTINCT") || prev.is_kw("UNION"),
        "anti" | "semi" | "asof" | "positional" => at(1).is_some_and(|t| {
            ["JOIN", "LEFT", "RIGHT", "INNER", "FULL", "OUTER", "CROSS"]
                .iter()
                .any(|k| t.is_kw(k))
        }),
        // glob(...) and unpack(...) are functions.
        "glob" | "unpack" => at(1).is_some_and(|t| t.is_punct("(")),
        "lambda" => lambda_params(toks, i + 1),
        "show" | "describe" | "summarize" | "pivot" | "unpivot" | "pivot_longer"
        | "pivot_wider" => statement_in_query(toks, i),
        _ => false,
    }
}

/// `lambda x: …` / `lambda x, y: …`: names separated by commas, then a colon.
fn lambda_params(toks: &[Token], mut j: usize) -> bool {
    loop {
        if !toks
            .get(j)
            .is_some_and(|t| matches!(t.kind, Tok::Word | Tok::Ident))
        {
            return false;
        }
        match toks.get(j + 1) {
            Some(t) if t.is_punct(":") => return true,
            Some(t) if t.is_punct(",") => j += 2,
            _ => return false,
        }
    }
}

/// A statement DuckDB lets a query read (`FROM (SHOW tables)`, `AS (DESCRIBE t)`,
/// `CREATE TABLE p AS PIVOT t ON …`): the word follows AS or a `(` that no name
/// precedes, and a name or query follows it.
fn statement_in_query(toks: &[Token], i: usize) -> bool {
    let prev = &toks[i - 1];
    let opens = prev.is_kw("AS") || (prev.is_punct("(") && (i < 2 || !ends_operand(&toks[i - 2])));
    opens
        && toks
            .get(i + 1)
            .is_some_and(|t| matches!(t.kind, Tok::Word | Tok::Ident) && !ends_alias(t))
}

/// Tokens after which an operand or a list item starts.
fn starts_operand(t: &Token) -> bool {
    const PUNCT: &[&str] = &[
        "(", ",", "[", "=", "<", ">", "<=", ">=", "<>", "!=", "+", "-", "/", "%", "||",
    ];
    const WORDS: &[&str] = &[
        "SELECT",
        "DISTINCT",
        "WHERE",
        "AND",
        "OR",
        "NOT",
        "ON",
        "SET",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "HAVING",
        "RETURNING",
        "BY",
        "WITH",
        "LIKE",
        "ILIKE",
        "BETWEEN",
    ];
    match t.kind {
        Tok::Punct => PUNCT.contains(&t.text.as_str()),
        Tok::Word => WORDS.contains(&t.text.as_str()),
        _ => false,
    }
}

/// Words after which a table name follows.
fn names_relation_after(t: &Token) -> bool {
    ["FROM", "JOIN", "INTO", "UPDATE", "TABLE", "VIEW"]
        .iter()
        .any(|k| t.is_kw(k))
}

/// Tokens an operand or a table reference ends with, which an alias may follow.
fn ends_operand(t: &Token) -> bool {
    match t.kind {
        Tok::Ident | Tok::Str | Tok::Number => true,
        Tok::Punct => t.is_punct(")") || t.is_punct("]"),
        Tok::Word => {
            ["END", "NULL", "TRUE", "FALSE"].iter().any(|k| t.is_kw(k))
                || !(t.text.len() <= 12 && CLAUSE_WORDS.contains(&t.text.as_str()))
                    && reserved(&t.text).is_none()
        }
    }
}

/// Keywords that never end an operand.
const CLAUSE_WORDS: &[&str] = &[
    "ALL",
    "AND",
    "ANY",
    "ARRAY",
    "AS",
    "ASC",
    "BETWEEN",
    "BY",
    "CASE",
    "CAST",
    "CLUSTER",
    "CREATE",
    "CROSS",
    "DEFAULT",
    "DELETE",
    "DESC",
    "DISTINCT",
    "ELSE",
    "EXCEPT",
    "EXISTS",
    "FILTER",
    "FROM",
    "FULL",
    "GENERATED",
    "GROUP",
    "HAVING",
    "ILIKE",
    "IN",
    "INCREMENT",
    "INNER",
    "INSERT",
    "INTERSECT",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "LATERAL",
    "LEFT",
    "LIKE",
    "LIMIT",
    "NATURAL",
    "NOT",
    "OFFSET",
    "ON",
    "OR",
    "ORDER",
    "OUTER",
    "OVER",
    "OWNED",
    "PARTITION",
    "RECURSIVE",
    "RETURNING",
    "RIGHT",
    "SELECT",
    "SET",
    "SOME",
    "SORTED",
    "TABLE",
    "THEN",
    "UNION",
    "UPDATE",
    "USING",
    "VALUES",
    "VIEW",
    "WHEN",
    "WHERE",
    "WINDOW",
    "WITH",
];

/// Tokens that end a table or column alias: a list or clause boundary.
fn ends_alias(t: &Token) -> bool {
    // Beyond what ends a FROM item: the clauses a column alias can stand before.
    const WORDS: &[&str] = &["QUALIFY", "FROM", "SET"];
    match t.kind {
        Tok::Punct => t.is_punct(",") || t.is_punct(")") || t.is_punct(";"),
        Tok::Word => {
            super::ENDS_FROM_ITEM.contains(&t.text.as_str()) || WORDS.contains(&t.text.as_str())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quote_reserved_names(sql: &str) -> Option<String> {
        super::quote_reserved_names(&Lexed::new(sql))
    }

    fn q(sql: &str) -> String {
        quote_reserved_names(sql).unwrap_or_else(|| sql.to_string())
    }

    #[test]
    fn names_are_quoted() {
        assert_eq!(
            q("create table jt (id int, at timestamp, by int)"),
            r#"create table jt (id int, "at" timestamp, "by" int)"#
        );
        assert_eq!(
            q("select at.attname from pg_attribute at join x on x.a = at.attrelid group by at.attname"),
            r#"select "at".attname from pg_attribute "at" join x on x.a = "at".attrelid group by "at".attname"#
        );
        assert_eq!(
            q("SELECT AT, qualify FROM jt AS Semi WHERE at > now() ORDER BY at"),
            r#"SELECT "at", "qualify" FROM jt AS "semi" WHERE "at" > now() ORDER BY "at""#
        );
        assert_eq!(
            q("insert into jt (id, at) values (1, now()) returning at"),
            r#"insert into jt (id, "at") values (1, now()) returning "at""#
        );
        assert_eq!(
            q("create table t (show int)"),
            r#"create table t ("show" int)"#
        );
        assert_eq!(q("select 1 at, 2 by"), r#"select 1 "at", 2 "by""#);
    }

    #[test]
    fn duckdb_keywords_stay() {
        for sql in [
            "select ts at time zone 'UTC' from t",
            "select * from t at (version => 3)",
            "select k, count(*) from t group by k order by 1",
            "select * from a union all by name select * from b",
            "select * from a semi join b using (k)",
            "select * from a asof left join b on a.t >= b.t",
            "select list_transform(l, lambda x: x + 1), list_reduce(l, lambda a, b: a + b) from t",
            "show tables",
            "describe t",
            "select * from (show tables)",
            "with d as (describe t) select * from d",
            "from t pivot (sum(v) for k in ('a', 'b'))",
            "create table p as pivot t on k using sum(v)",
            "select * from glob('*.csv')",
            "select name from t where name glob 'a*'",
            "select * from t qualify row_number() over (partition by k order by v) = 1",
            "create sequence s increment by 2",
            "select t.at, \"at\" from t",
        ] {
            assert_eq!(quote_reserved_names(sql), None, "{sql}");
        }
    }
}
