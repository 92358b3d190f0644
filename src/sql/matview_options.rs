//! Storage parameters of materialized views, in PostgreSQL's syntax: `WITH (name = value, …)`
//! at CREATE, `ALTER MATERIALIZED VIEW v SET (name = value, …)` and `RESET (name, …)`.
//! duckmv reads one of them, `refresh` (the view's refresh policy); the others PostgreSQL
//! knows (fillfactor, autovacuum_…) are accepted and have no effect, as before.

use super::lex::{Tok, Token};

/// The parameter that holds a view's refresh policy.
pub const REFRESH: &str = "refresh";

/// One `name [= value]` of a parameter list; the value as written (a string literal unquoted).
#[derive(Debug, Clone, PartialEq)]
pub struct StorageOption {
    pub name: String,
    pub value: Option<String>,
}

/// Reads `( option [, …] )` starting at the `(` at `i`; returns the options and the index after
/// the closing parenthesis.
pub fn parse_list(toks: &[Token], i: usize) -> Result<(Vec<StorageOption>, usize), String> {
    if !toks.get(i).is_some_and(|t| t.is_punct("(")) {
        return Err("expected ( after WITH, SET or RESET".into());
    }
    let mut out = Vec::new();
    let mut j = i + 1;
    loop {
        let name = match toks.get(j) {
            Some(t) if t.kind == Tok::Word => t.text.to_ascii_lowercase(),
            Some(t) if t.kind == Tok::Ident => t.text.clone(),
            _ => return Err("expected a storage parameter name".into()),
        };
        j += 1;
        let mut value = None;
        if toks.get(j).is_some_and(|t| t.is_punct("=")) {
            value = Some(match toks.get(j + 1) {
                Some(t) if t.kind == Tok::Str => string_value(&t.text),
                Some(t) if matches!(t.kind, Tok::Word | Tok::Number | Tok::Ident) => {
                    t.text.to_ascii_lowercase()
                }
                _ => return Err(format!("expected a value for storage parameter \"{name}\"")),
            });
            j += 2;
        }
        out.push(StorageOption { name, value });
        match toks.get(j) {
            Some(t) if t.is_punct(",") => j += 1,
            Some(t) if t.is_punct(")") => return Ok((out, j + 1)),
            _ => return Err("expected , or ) in the storage parameter list".into()),
        }
    }
}

/// The `refresh` value of a list, if it sets one. A `refresh` without a value is refused: it
/// names no policy.
pub fn refresh_value(opts: &[StorageOption]) -> Result<Option<String>, String> {
    match opts.iter().rev().find(|o| o.name == REFRESH) {
        None => Ok(None),
        Some(StorageOption { value: Some(v), .. }) => Ok(Some(v.clone())),
        Some(_) => Err("storage parameter \"refresh\" needs a value".into()),
    }
}

/// A string literal's text: `'a''b'` is `a'b`; the E'' form keeps backslash escapes as written.
fn string_value(lit: &str) -> String {
    let s = lit.trim_start_matches(['E', 'e']);
    s.strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .unwrap_or(s)
        .replace("''", "'")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::Lexed;

    fn list(sql: &str) -> Result<Vec<StorageOption>, String> {
        let l = Lexed::new(sql);
        parse_list(l.tokens(), 0).map(|(o, _)| o)
    }

    #[test]
    fn reads_names_and_values() {
        let got =
            list("(refresh = 'every 5 seconds', fillfactor = 70, autovacuum_enabled)").unwrap();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].name, "refresh");
        assert_eq!(got[0].value.as_deref(), Some("every 5 seconds"));
        assert_eq!(got[1].value.as_deref(), Some("70"));
        assert_eq!(got[2].value, None);
        assert_eq!(
            refresh_value(&got).unwrap().as_deref(),
            Some("every 5 seconds")
        );
        let bare = list("(REFRESH = Immediate)").unwrap();
        assert_eq!(refresh_value(&bare).unwrap().as_deref(), Some("immediate"));
        assert_eq!(
            refresh_value(&list("(fillfactor=1)").unwrap()).unwrap(),
            None
        );
    }

    #[test]
    fn create_and_alter_carry_the_refresh_policy() {
        use crate::sql::{classify, Command};
        let c = |sql: &str| classify(&Lexed::new(sql));
        let create = c(
            "CREATE MATERIALIZED VIEW v WITH (fillfactor = 90, refresh = 'every 5 seconds') \
                        AS SELECT a FROM t WITH DATA",
        )
        .unwrap();
        let Command::CreateMatView { refresh, query, .. } = create else {
            panic!("{create:?}")
        };
        assert_eq!(refresh.as_deref(), Some("every 5 seconds"));
        assert_eq!(query, "SELECT a FROM t");
        // A WITH inside the query is the query's.
        let Command::CreateMatView { refresh, query, .. } =
            c("CREATE MATERIALIZED VIEW v AS WITH x AS (SELECT 1) SELECT * FROM x").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (refresh, query.as_str()),
            (None, "WITH x AS (SELECT 1) SELECT * FROM x")
        );
        let alter = |sql: &str| match c(sql).unwrap() {
            Command::AlterMatViewOptions { name, refresh } => (name.name, refresh),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            alter("ALTER MATERIALIZED VIEW v SET (refresh = immediate)"),
            ("v".into(), Some(Some("immediate".into())))
        );
        assert_eq!(
            alter("alter materialized view if exists V reset (refresh, fillfactor)"),
            ("v".into(), Some(None))
        );
        assert_eq!(
            alter("ALTER MATERIALIZED VIEW v SET (fillfactor = 50)"),
            ("v".into(), None)
        );
        assert!(c("ALTER MATERIALIZED VIEW v SET refresh = 'x'").is_err());
    }

    #[test]
    fn refuses_broken_lists() {
        for bad in [
            "refresh = 'x'",
            "(refresh = )",
            "(refresh 'x')",
            "(= 1)",
            "(a = 1",
        ] {
            assert!(list(bad).is_err(), "{bad}");
        }
        assert!(refresh_value(&list("(refresh)").unwrap()).is_err());
    }
}
