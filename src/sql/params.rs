//! Parameter placeholders (`$1`, `$2`, …) in statement text: the types a
//! statement gives them with casts, and substitutions that let DuckDB type
//! a statement before any value is bound.

use super::lex::Tok;
use super::lexed::Lexed;

/// For each `$n` followed by `::type` or inside `CAST($n AS type)`, the
/// type name as written (`integer`, `varchar(10)`, `int[]`).
pub fn cast_types(s: &Lexed) -> Vec<(usize, String)> {
    let (sql, toks) = (s.text(), s.tokens());
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        let Some(n) = param_index(t) else { continue };
        let cast_suffix = toks.get(i + 1).is_some_and(|c| c.is_punct("::"));
        let cast_call = i >= 2
            && toks[i - 1].is_punct("(")
            && toks[i - 2].is_kw("CAST")
            && toks.get(i + 1).is_some_and(|a| a.is_kw("AS"));
        let type_start = if cast_suffix || cast_call {
            i + 2
        } else {
            continue;
        };
        // The type: words, plus (..) and [] suffixes.
        let Some(first) = toks.get(type_start) else {
            continue;
        };
        if first.kind != Tok::Word && first.kind != Tok::Ident {
            continue;
        }
        let mut end = type_start + 1;
        while let Some(t) = toks.get(end) {
            if t.kind == Tok::Word
                && matches!(
                    t.text.as_str(),
                    "PRECISION" | "VARYING" | "WITH" | "WITHOUT" | "TIME" | "ZONE"
                )
            {
                end += 1;
            } else if t.is_punct("(") {
                while toks.get(end).is_some_and(|t| !t.is_punct(")")) {
                    end += 1;
                }
                end += 1;
            } else if t.is_punct("[") {
                while toks.get(end).is_some_and(|t| !t.is_punct("]")) {
                    end += 1;
                }
                end += 1;
            } else {
                break;
            }
        }
        let last = toks.get(end - 1).map(|t| t.end).unwrap_or(sql.len());
        out.push((n, sql[first.start..last.min(sql.len())].to_string()));
    }
    out
}

fn param_index(t: &super::lex::Token) -> Option<usize> {
    if t.kind != Tok::Punct || !t.text.starts_with('$') {
        return None;
    }
    t.text[1..].parse().ok().filter(|n| *n > 0)
}

/// Replaces every `$n` by `f(n)` (text outside placeholders unchanged).
pub fn substitute(s: &Lexed, f: &dyn Fn(usize) -> String) -> String {
    let sql = s.text();
    let mut out = String::with_capacity(sql.len() + 16);
    let mut last = 0;
    for t in s.tokens() {
        if let Some(n) = param_index(t) {
            out.push_str(&sql[last..t.start]);
            out.push_str(&f(n));
            last = t.end;
        }
    }
    out.push_str(&sql[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cast_types(sql: &str) -> Vec<(usize, String)> {
        super::cast_types(&Lexed::new(sql))
    }

    fn substitute(sql: &str, f: &dyn Fn(usize) -> String) -> String {
        super::substitute(&Lexed::new(sql), f)
    }

    #[test]
    fn finds_casts() {
        assert_eq!(
            cast_types("select i from range($1::integer, CAST($2 AS BIGINT))"),
            vec![(1, "integer".into()), (2, "BIGINT".into())]
        );
        assert_eq!(
            cast_types("select $1::double precision, $2::varchar(3)"),
            vec![(1, "double precision".into()), (2, "varchar(3)".into())]
        );
        assert!(cast_types("select $1 + 1, '$2::int'").is_empty());
    }

    #[test]
    fn substitutes_placeholders_only() {
        assert_eq!(
            substitute("select $1, '$2', $10", &|n| format!("p{n}")),
            "select p1, '$2', p10"
        );
    }
}
