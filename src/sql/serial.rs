//! `serial`, `bigserial` and `smallserial` columns, which DuckDB does not know: as PostgreSQL
//! does, each becomes an integer column whose default is the next value of a sequence named
//! `<table>_<column>_seq`, created first in the same transaction. (PostgreSQL also drops the
//! sequence with its table; here it stays, and a table created again under the name goes on
//! from its last value.)

use super::lex::{Tok, Token};
use super::lexed::Lexed;
use super::multi::is_name;
use super::upsert::{Rewrite, Step};

/// The integer type a serial type name stands for.
fn integer_of(type_name: &str) -> Option<&'static str> {
    Some(match type_name {
        "SERIAL" | "SERIAL4" => "INTEGER",
        "BIGSERIAL" | "SERIAL8" => "BIGINT",
        "SMALLSERIAL" | "SERIAL2" => "SMALLINT",
        _ => return None,
    })
}

/// Some(the sequences, then the table) for a CREATE TABLE with serial columns; None otherwise.
pub fn split(s: &Lexed) -> Option<Rewrite> {
    let (sql, toks) = (s.text(), s.tokens());
    let word = |i: usize| {
        toks.get(i)
            .filter(|t| t.kind == Tok::Word)
            .map_or("", |t| t.text.as_str())
    };
    let mut i = 1;
    if word(0) != "CREATE" {
        return None;
    }
    while matches!(
        word(i),
        "TEMP" | "TEMPORARY" | "UNLOGGED" | "OR" | "REPLACE"
    ) {
        i += 1;
    }
    if word(i) != "TABLE" {
        return None;
    }
    i += 1;
    if word(i) == "IF" && word(i + 1) == "NOT" && word(i + 2) == "EXISTS" {
        i += 3;
    }
    // The table's name, maybe qualified: the sequences go in its schema.
    let name_start = i;
    while is_name(toks.get(i)) && toks.get(i + 1).is_some_and(|t| t.is_punct(".")) {
        i += 2;
    }
    if !is_name(toks.get(i)) || !toks.get(i + 1).is_some_and(|t| t.is_punct("(")) {
        return None;
    }
    let schema = &sql[toks[name_start].start..toks[i].start];
    let table = folded(&toks[i]);
    let mut steps = Vec::new();
    let mut text = String::new();
    let mut copied = 0;
    for (col, ty) in column_types(toks, i + 1) {
        let Some(int) = integer_of(&toks[ty].text).filter(|_| toks[ty].kind == Tok::Word) else {
            continue;
        };
        let seq = format!("{table}_{}_seq", folded(&toks[col]));
        let quoted = super::quote_ident(&seq);
        steps.push(Step::run(format!(
            "CREATE SEQUENCE IF NOT EXISTS {schema}{quoted}"
        )));
        let reference = format!("{schema}{quoted}").replace('\'', "''");
        text.push_str(&sql[copied..toks[ty].start]);
        text.push_str(&format!("{int} NOT NULL DEFAULT nextval('{reference}')"));
        copied = toks[ty].end;
    }
    if steps.is_empty() {
        return None;
    }
    text.push_str(sql[copied..].trim_end().trim_end_matches(';'));
    steps.push(Step::run(text));
    Some(Rewrite {
        table: String::new(),
        steps,
        tag: "CREATE TABLE",
        describe: None,
    })
}

/// (name, first type token) of each column definition in the list opening at `open`; table
/// constraints (`PRIMARY KEY (…)`, `CONSTRAINT …`) give pairs whose type is a keyword.
fn column_types(toks: &[Token], open: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut item_start = open + 1;
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.is_punct("(") {
            depth += 1;
        } else if t.is_punct(")") {
            depth -= 1;
            if depth == 0 {
                break;
            }
        } else if depth == 1 && t.is_punct(",") {
            item_start = j + 1;
            continue;
        }
        if depth == 1 && j == item_start && is_name(Some(t)) && is_name(toks.get(j + 1)) {
            out.push((j, j + 1));
        }
    }
    out
}

/// A name as PostgreSQL stores it: unquoted words in lower case, quoted ones as written.
fn folded(t: &Token) -> String {
    match t.kind {
        Tok::Word => t.text.to_ascii_lowercase(),
        _ => t.text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(sql: &str) -> Option<Vec<String>> {
        split(&Lexed::new(sql)).map(|r| r.steps.iter().map(|s| s.sql().to_string()).collect())
    }

    #[test]
    fn serial_columns_get_a_sequence_and_a_default() {
        assert_eq!(
            steps("create table items (id serial primary key, name text, n bigserial);"),
            Some(vec![
                "CREATE SEQUENCE IF NOT EXISTS \"items_id_seq\"".into(),
                "CREATE SEQUENCE IF NOT EXISTS \"items_n_seq\"".into(),
                "create table items (id INTEGER NOT NULL DEFAULT nextval('\"items_id_seq\"') \
                 primary key, name text, n BIGINT NOT NULL DEFAULT nextval('\"items_n_seq\"'))"
                    .into(),
            ])
        );
        assert_eq!(
            steps("CREATE TABLE IF NOT EXISTS s.\"T\" (\"Id\" SMALLSERIAL, CONSTRAINT c PRIMARY KEY (\"Id\"))"),
            Some(vec![
                "CREATE SEQUENCE IF NOT EXISTS s.\"T_Id_seq\"".into(),
                "CREATE TABLE IF NOT EXISTS s.\"T\" (\"Id\" SMALLINT NOT NULL DEFAULT \
                 nextval('s.\"T_Id_seq\"'), CONSTRAINT c PRIMARY KEY (\"Id\"))"
                    .into(),
            ])
        );
    }

    #[test]
    fn other_tables_are_left_alone() {
        assert_eq!(
            steps("create table t (id int, serial_no text, s serial_type)"),
            None
        );
        assert_eq!(steps("create table t as select 1 as serial"), None);
        assert_eq!(steps("create view serial as select 1"), None);
        assert_eq!(steps("select serial from t"), None);
    }
}
