//! DROP and TRUNCATE of several objects in one statement, which DuckDB
//! refuses ("Can only drop one object at a time"): one statement per
//! object, run by the session in one transaction (pgbench -i sends
//! `drop table if exists a, b, c` and `truncate table a, b, c`).

use super::lex::{Tok, Token};
use super::lexed::Lexed;
use super::upsert::{Rewrite, Step};

/// Object kinds whose DROP takes a list, with the command tag.
const DROPS: &[(&str, &str)] = &[
    ("TABLE", "DROP TABLE"),
    ("VIEW", "DROP VIEW"),
    ("INDEX", "DROP INDEX"),
    ("SEQUENCE", "DROP SEQUENCE"),
    ("SCHEMA", "DROP SCHEMA"),
    ("TYPE", "DROP TYPE"),
    ("MACRO", "DROP MACRO"),
    ("FUNCTION", "DROP FUNCTION"),
];

/// Some(one statement per object) when `sql` drops or truncates more than
/// one object; None otherwise (the statement runs as written).
pub fn split(s: &Lexed) -> Option<Rewrite> {
    let (sql, toks) = (s.text(), s.tokens());
    let word = |i: usize| {
        toks.get(i)
            .filter(|t| t.kind == Tok::Word)
            .map(|t| t.text.as_str())
            .unwrap_or("")
    };
    let (tag, mut i) = match word(0) {
        "DROP" => {
            let &(_, tag) = DROPS.iter().find(|(kind, _)| *kind == word(1))?;
            let mut i = 2;
            if word(i) == "IF" && word(i + 1) == "EXISTS" {
                i += 2;
            }
            (tag, i)
        }
        "TRUNCATE" => {
            let mut i = 1;
            if word(i) == "TABLE" {
                i += 1;
            }
            if word(i) == "ONLY" {
                i += 1;
            }
            ("TRUNCATE TABLE", i)
        }
        _ => return None,
    };
    // The list: names (a.b, "q"), separated by commas.
    let mut names: Vec<(usize, usize)> = Vec::new();
    loop {
        let start = toks.get(i)?;
        let mut end = i;
        while is_name(toks.get(end)) && toks.get(end + 1).is_some_and(|t| t.is_punct(".")) {
            end += 2;
        }
        if !is_name(toks.get(end)) {
            return None;
        }
        // TRUNCATE t * (descendants) has no meaning here; keep the text simple.
        names.push((start.start, toks[end].end));
        i = end + 1;
        if toks.get(i).is_some_and(|t| t.is_punct(",")) {
            i += 1;
        } else {
            break;
        }
    }
    if names.len() < 2 {
        return None;
    }
    let prefix = &sql[..names[0].0];
    let suffix = sql[names.last()?.1..].trim_end().trim_end_matches(';');
    let steps = names
        .iter()
        .map(|&(s, e)| Step::run(format!("{prefix}{}{suffix}", &sql[s..e])))
        .collect();
    Some(Rewrite {
        table: String::new(),
        steps,
        tag,
        describe: None,
    })
}

/// Whether the token is a name: a word or a "quoted identifier".
pub(super) fn is_name(t: Option<&Token>) -> bool {
    t.is_some_and(|t| matches!(t.kind, Tok::Word | Tok::Ident))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(sql: &str) -> Option<(Vec<String>, &'static str)> {
        split(&Lexed::new(sql))
            .map(|r| (r.steps.iter().map(|s| s.sql().to_string()).collect(), r.tag))
    }

    #[test]
    fn splits_lists() {
        assert_eq!(
            parts("drop table if exists pgbench_accounts, pgbench_branches, s.\"Hist\""),
            Some((
                vec![
                    "drop table if exists pgbench_accounts".into(),
                    "drop table if exists pgbench_branches".into(),
                    "drop table if exists s.\"Hist\"".into(),
                ],
                "DROP TABLE"
            ))
        );
        assert_eq!(
            parts("TRUNCATE TABLE a, b CASCADE;"),
            Some((
                vec![
                    "TRUNCATE TABLE a CASCADE".into(),
                    "TRUNCATE TABLE b CASCADE".into()
                ],
                "TRUNCATE TABLE"
            ))
        );
        assert_eq!(
            parts("truncate a,b"),
            Some((
                vec!["truncate a".into(), "truncate b".into()],
                "TRUNCATE TABLE"
            ))
        );
        assert_eq!(
            parts("DROP VIEW v1, v2"),
            Some((
                vec!["DROP VIEW v1".into(), "DROP VIEW v2".into()],
                "DROP VIEW"
            ))
        );
    }

    #[test]
    fn leaves_single_objects_and_others_alone() {
        assert_eq!(parts("drop table a"), None);
        assert_eq!(parts("truncate table a"), None);
        assert_eq!(parts("drop materialized view a, b"), None);
        assert_eq!(parts("select 1, 2"), None);
        assert_eq!(parts("drop table"), None);
    }
}
