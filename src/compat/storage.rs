//! PostgreSQL storage parameters on CREATE TABLE (`WITH (fillfactor=100)`,
//! which pgbench -i sends), which DuckDB refuses ("WITH clause is not
//! supported for tables in a duckdb catalog"). They tune PostgreSQL's heap
//! and mean nothing to DuckDB, so they are dropped.

use crate::sql::lex::Token;
use crate::sql::Lexed;

/// The statement without its table storage parameters, or None when it
/// has none.
pub fn strip_table_options(s: &Lexed) -> Option<String> {
    let (sql, toks) = (s.text(), s.tokens());
    let words: Vec<&str> = s.leading_words(4).collect();
    let mut w = words.iter().copied();
    if w.next() != Some("CREATE") {
        return None;
    }
    // CREATE [GLOBAL | LOCAL] [TEMP | TEMPORARY | UNLOGGED] TABLE
    if !w
        .take_while(|x| *x != "TABLE")
        .all(|x| matches!(x, "GLOBAL" | "LOCAL" | "TEMP" | "TEMPORARY" | "UNLOGGED"))
        || !words.contains(&"TABLE")
    {
        return None;
    }
    let open = toks.iter().position(|t| t.is_punct("("))?;
    let close = matching(toks, open)?;
    let with = close + 1;
    if !(toks.get(with).is_some_and(|t| t.is_kw("WITH"))
        && toks.get(with + 1).is_some_and(|t| t.is_punct("(")))
    {
        return None;
    }
    let end = matching(toks, with + 1)?;
    Some(format!(
        "{}{}",
        &sql[..toks[close].end],
        &sql[toks[end].end..]
    ))
}

fn matching(toks: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open) {
        if t.is_punct("(") {
            depth += 1;
        } else if t.is_punct(")") {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_table_options(sql: &str) -> Option<String> {
        super::strip_table_options(&Lexed::new(sql))
    }

    #[test]
    fn drops_storage_parameters() {
        assert_eq!(
            strip_table_options(
                "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)"
            )
            .as_deref(),
            Some("create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84))")
        );
        assert_eq!(
            strip_table_options("CREATE UNLOGGED TABLE t (a numeric(3, 1)) WITH (fillfactor = 90, autovacuum_enabled = off);")
                .as_deref(),
            Some("CREATE UNLOGGED TABLE t (a numeric(3, 1));")
        );
    }

    #[test]
    fn leaves_other_statements() {
        assert_eq!(strip_table_options("create table t (a int)"), None);
        assert_eq!(
            strip_table_options("create table t as with x as (select 1) select * from x"),
            None
        );
        assert_eq!(strip_table_options("create view v as select 1"), None);
        assert_eq!(strip_table_options("with (select 1) as x select 1"), None);
    }
}
