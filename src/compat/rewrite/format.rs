//! PostgreSQL's `format()`: `%s` inserts a value, `%I` an identifier quoted
//! as needed, `%L` a literal, `%%` a percent sign. DuckDB's `format` reads
//! fmt-style `{}` instead, so a call whose format string is a literal with
//! `%` specifiers becomes a `concat` of the string's pieces and the
//! (quoted) arguments. The arguments stay where they are, so rewrites
//! inside them still apply.

use super::{matching, Edit};
use crate::sql::lex::{Tok, Token};

/// One `%` specifier.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Spec {
    Value,
    Ident,
    Literal,
}

impl Spec {
    /// Text around the argument.
    fn wrap(self) -> (&'static str, &'static str) {
        match self {
            Spec::Value => ("", ""),
            Spec::Ident => ("duckmv.quote_ident(CAST(", " AS VARCHAR))"),
            Spec::Literal => ("duckmv.quote_nullable(", ")"),
        }
    }
}

/// Rewrites `format('…', …)` whose name is token `i`; returns where to go on.
pub(super) fn format_call(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let lit = toks.get(i + 2).filter(|t| t.kind == Tok::Str)?;
    if !toks.get(i + 1)?.is_punct("(") || !lit.text.starts_with('\'') {
        return None;
    }
    let close = matching(toks, i + 1)?;
    let (pieces, specs) = parse(&lit.text[1..lit.text.len() - 1].replace("''", "'"))?;
    let commas = argument_commas(toks, i + 3, close)?;
    if commas.len() != specs.len() || (specs.is_empty() && !lit.text.contains('%')) {
        return None;
    }
    if specs.is_empty() {
        edits.push(Edit {
            start: toks[i].start,
            end: toks[close].end,
            text: quote(&pieces[0]),
        });
        return Some(close + 1);
    }
    // `format('a%sb', x)` -> `concat('a', x, 'b')`, each argument wrapped by its spec.
    let mut bounds = commas.clone();
    bounds.push(close);
    for (k, &at) in bounds.iter().enumerate() {
        let before = if k == 0 {
            format!("concat({}, ", quote(&pieces[0]))
        } else {
            format!("{}, {}, ", specs[k - 1].wrap().1, quote(&pieces[k]))
        };
        let text = if k < specs.len() {
            format!("{before}{}", specs[k].wrap().0)
        } else {
            format!("{}, {})", specs[k - 1].wrap().1, quote(&pieces[k]))
        };
        let start = if k == 0 {
            toks[i].start
        } else {
            toks[at].start
        };
        // A separator takes the space after it; the closing parenthesis ends the call.
        let end = if k < specs.len() {
            toks[at + 1].start
        } else {
            toks[at].end
        };
        edits.push(Edit { start, end, text });
    }
    // Tokens inside the arguments are still to be looked at.
    Some(i + 3)
}

/// The literal pieces and the specifiers between them, or None for a
/// specifier this rewrite does not handle (widths, positions).
fn parse(fmt: &str) -> Option<(Vec<String>, Vec<Spec>)> {
    let mut pieces = vec![String::new()];
    let mut specs = Vec::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            pieces.last_mut()?.push(c);
            continue;
        }
        let spec = match chars.next()? {
            '%' => {
                pieces.last_mut()?.push('%');
                continue;
            }
            's' => Spec::Value,
            'I' => Spec::Ident,
            'L' => Spec::Literal,
            _ => return None,
        };
        specs.push(spec);
        pieces.push(String::new());
    }
    Some((pieces, specs))
}

/// The commas at depth 1 between `from` and the call's `)`.
fn argument_commas(toks: &[Token], from: usize, close: usize) -> Option<Vec<usize>> {
    let outer = super::outermost(toks, from, close)?;
    // Something other than a comma right after the format string.
    if outer.first() == Some(&from) && !toks[from].is_punct(",") {
        return None;
    }
    Some(
        outer
            .into_iter()
            .filter(|j| toks[*j].is_punct(","))
            .collect(),
    )
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::super::tests::rewrite;

    #[test]
    fn specifiers_become_concatenation() {
        assert_eq!(
            rewrite("SELECT format('%I.%I', s, t)").as_deref(),
            Some("SELECT concat('', duckmv.quote_ident(CAST(s AS VARCHAR)), '.', duckmv.quote_ident(CAST(t AS VARCHAR)), '')")
        );
        assert_eq!(
            rewrite("SELECT FORMAT('\"%s\".''%s'' 100%%', f(a, b), c)").as_deref(),
            Some("SELECT concat('\"', f(a, b), '\".''', c, ''' 100%')")
        );
        assert_eq!(
            rewrite("SELECT format('v = %L', x)").as_deref(),
            Some("SELECT concat('v = ', duckmv.quote_nullable(x), '')")
        );
        // Inside an argument, other rewrites still apply.
        assert_eq!(
            rewrite("SELECT format('%s', 'items'::regclass)").as_deref(),
            Some("SELECT concat('', duckmv.regclass_in('items'), '')")
        );
    }

    #[test]
    fn other_calls_stay() {
        for sql in [
            "SELECT format('{} and {}', a, b)",
            "SELECT format(fmt, a)",
            "SELECT format('%5s', a)",
            "SELECT format('%1$s', a)",
            "SELECT format('%s %s', a)",
        ] {
            assert_eq!(rewrite(sql), None, "{sql}");
        }
    }
}
