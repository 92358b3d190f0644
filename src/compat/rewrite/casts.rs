//! Casts DuckDB lacks: `::regclass` and friends become lookups, PostgreSQL-only
//! type names become DuckDB's, and bytea and array literals are read PostgreSQL's way.

use super::{is_name, matching, name_of, word_is, Edit};
use crate::sql::lex::{Tok, Token};

/// The reg* type a cast names, with the duckmv function family.
fn reg_type(name: &str) -> Option<&'static str> {
    Some(match name {
        "regclass" => "regclass",
        "regtype" => "regtype",
        "regnamespace" => "regnamespace",
        "regrole" => "regrole",
        "regproc" | "regprocedure" => "regproc",
        _ => return None,
    })
}

/// DuckDB's spelling of PostgreSQL-only types used in catalog queries.
fn plain_type(name: &str) -> Option<&'static str> {
    Some(match name {
        "name" | "pg_node_tree" | "aclitem" | "regoper" | "regoperator" => "VARCHAR",
        "int2vector" => "SMALLINT[]",
        "oidvector" => "INTEGER[]",
        "xid" | "cid" | "xid8" => "BIGINT",
        // DuckDB's own `oid` is BIGINT; PostgreSQL's is unsigned 32-bit,
        // which the wire reports as oid (26), `oid[]` as _oid (1028).
        "oid" => "UINTEGER",
        _ => return None,
    })
}

/// A type name after `::` or `AS` at `j`: (first token, name token, is array).
fn type_at(toks: &[Token], j: usize) -> Option<(usize, usize, bool)> {
    let mut k = j;
    if toks.get(k).is_some_and(|t| word_is(t, "pg_catalog"))
        && toks.get(k + 1).is_some_and(|t| t.is_punct("."))
    {
        k += 2;
    }
    let t = toks.get(k)?;
    if !is_name(t) {
        return None;
    }
    let array = toks.get(k + 1).is_some_and(|t| t.is_punct("["));
    Some((j, k, array))
}

/// A `'…'` literal cast to `type_name` (`array`: to an array of it), written as DuckDB reads
/// what PostgreSQL would: bytea in hex or escape form becomes one `\xHH` per byte (DuckDB
/// would read `'\x0001ff'` as five bytes), and an array literal (`'{1,NULL,"a b"}'`) becomes a
/// list of its elements' texts (DuckDB casts only `[…]` text to a list). None for other casts,
/// and for input PostgreSQL would refuse (DuckDB then reports it its own way).
fn typed_literal(t: &Token, type_name: &str, array: bool) -> Option<String> {
    let body = t
        .text
        .strip_prefix('\'')?
        .strip_suffix('\'')?
        .replace("''", "'");
    if array {
        return Some(list_of(&crate::types::parse_array(&body).ok()?));
    }
    if type_name != "bytea" {
        return None;
    }
    let bytes = crate::types::parse_bytea(&body).ok()?;
    let hex: String = bytes.iter().map(|b| format!("\\x{b:02X}")).collect();
    Some(format!("'{hex}'"))
}

/// Replaces the operand `t` of a cast by its `typed_literal`, when it has one.
fn retype_literal(t: &Token, type_name: &str, array: bool, edits: &mut Vec<Edit>) {
    if let Some(text) = typed_literal(t, type_name, array) {
        edits.push(Edit {
            start: t.start,
            end: t.end,
            text,
        });
    }
}

/// `[…]` of the elements as VARCHAR literals (nested for sub-arrays).
fn list_of(elems: &[crate::types::ArrayElem]) -> String {
    use crate::types::ArrayElem;
    let items: Vec<String> = elems
        .iter()
        .map(|e| match e {
            ArrayElem::Null => "NULL".into(),
            ArrayElem::Value(v) => format!("'{}'", v.replace('\'', "''")),
            ArrayElem::Sub(sub) => list_of(sub),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

/// Rewrites the cast whose `::` is token `i`; returns where to continue.
pub(super) fn cast(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let (first, name_tok, array) = type_at(toks, i + 1)?;
    let tname = name_of(&toks[name_tok]);
    if i > 0 {
        retype_literal(&toks[i - 1], &tname, array, edits);
    }
    if let (Some(family), false) = (reg_type(&tname), array) {
        let start = operand_start(toks, i)?;
        let dir = if is_name_input(&toks[start..i]) {
            "in"
        } else {
            "out"
        };
        edits.push(Edit {
            start: toks[start].start,
            end: toks[start].start,
            text: format!("duckmv.{family}_{dir}("),
        });
        edits.push(Edit {
            start: toks[i].start,
            end: toks[name_tok].end,
            text: ")".into(),
        });
        return Some(name_tok + 1);
    }
    if let Some(t) = plain_type(&tname) {
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].end,
            text: t.into(),
        });
        return Some(name_tok + 1);
    }
    if first != name_tok {
        // `::pg_catalog.text` -> `::text`
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].start,
            text: String::new(),
        });
        return Some(name_tok + 1);
    }
    None
}

/// `CAST(x AS regclass)` starting at the CAST word.
pub(super) fn cast_call(toks: &[Token], i: usize, edits: &mut Vec<Edit>) {
    let Some(close) = matching(toks, i + 1) else {
        return;
    };
    // The AS at depth 1 closest to the end.
    let mut depth = 0;
    let mut as_at = None;
    for (j, t) in toks.iter().enumerate().take(close).skip(i + 1) {
        if t.is_punct("(") || t.is_punct("[") {
            depth += 1;
        } else if t.is_punct(")") || t.is_punct("]") {
            depth -= 1;
        } else if depth == 1 && word_is(t, "as") {
            as_at = Some(j);
        }
    }
    let Some(as_at) = as_at else { return };
    let Some((first, name_tok, array)) = type_at(toks, as_at + 1) else {
        return;
    };
    let tname = name_of(&toks[name_tok]);
    if as_at == i + 3 {
        retype_literal(&toks[i + 2], &tname, array, edits);
    }
    if let (Some(family), false) = (reg_type(&tname), array) {
        let dir = if is_name_input(&toks[i + 2..as_at]) {
            "in"
        } else {
            "out"
        };
        edits.push(Edit {
            start: toks[i].start,
            end: toks[i + 1].end,
            text: format!("duckmv.{family}_{dir}("),
        });
        edits.push(Edit {
            start: toks[as_at - 1].end,
            end: toks[close].start,
            text: String::new(),
        });
    } else if let Some(t) = plain_type(&tname) {
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].end,
            text: t.into(),
        });
    } else if first != name_tok {
        edits.push(Edit {
            start: toks[first].start,
            end: toks[name_tok].start,
            text: String::new(),
        });
    }
}

/// A cast operand that is a name to look up rather than an oid: a string
/// literal or a bind parameter (possibly cast to text first), or text built
/// by a call or by `||` (Metabase casts `format('%I.%I', s, t)`).
fn is_name_input(operand: &[Token]) -> bool {
    const TEXT_CALLS: &[&str] = &[
        "FORMAT",
        "CONCAT",
        "CONCAT_WS",
        "QUOTE_IDENT",
        "LOWER",
        "UPPER",
    ];
    match operand.first() {
        Some(t) if t.kind == Tok::Str => true,
        Some(t) if t.kind == Tok::Punct && t.text.starts_with('$') => true,
        Some(t)
            if t.kind == Tok::Word
                && TEXT_CALLS.contains(&t.text.as_str())
                && operand.get(1).is_some_and(|n| n.is_punct("(")) =>
        {
            true
        }
        _ => operand.iter().any(|t| t.is_punct("||")),
    }
}

/// Words that end an operand when scanning backwards from a `(`.
const NOT_A_FUNCTION: &[&str] = &[
    "SELECT",
    "WHERE",
    "AND",
    "OR",
    "NOT",
    "IN",
    "ON",
    "WHEN",
    "THEN",
    "ELSE",
    "BY",
    "FROM",
    "AS",
    "JOIN",
    "IS",
    "CASE",
    "VALUES",
    "HAVING",
    "USING",
    "LIKE",
    "ILIKE",
    "BETWEEN",
    "DISTINCT",
    "RETURNING",
    "SET",
    "LIMIT",
    "OFFSET",
    "ANY",
    "ALL",
    "SOME",
    "EXISTS",
    "WITH",
    "UNION",
    "EXCEPT",
    "INTERSECT",
    "INTO",
];

/// First token of the operand of the postfix cast whose `::` is token `i`.
fn operand_start(toks: &[Token], i: usize) -> Option<usize> {
    if i == 0 {
        return None;
    }
    let last = i - 1;
    let t = &toks[last];
    let mut start = if t.is_punct(")") || t.is_punct("]") {
        let open = matching_back(toks, last)?;
        if open > 0 {
            let w = &toks[open - 1];
            let callee = (w.kind == Tok::Word && !NOT_A_FUNCTION.contains(&w.text.as_str()))
                || w.kind == Tok::Ident;
            if callee {
                qualified_start(toks, open - 1)
            } else {
                open
            }
        } else {
            open
        }
    } else if word_is(t, "end") {
        case_start(toks, last)?
    } else if matches!(t.kind, Tok::Str | Tok::Number)
        || (t.kind == Tok::Punct && t.text.starts_with('$'))
    {
        last
    } else if is_name(t) {
        qualified_start(toks, last)
    } else {
        return None;
    };
    // A chain of casts: `x::int::regclass` casts `x::int`.
    while start > 1 && toks[start - 1].is_punct("::") {
        start = operand_start(toks, start - 1)?;
    }
    Some(start)
}

/// Start of a dotted name ending at `j` (`a.b.c`).
fn qualified_start(toks: &[Token], mut j: usize) -> usize {
    while j >= 2 && toks[j - 1].is_punct(".") && is_name(&toks[j - 2]) {
        j -= 2;
    }
    j
}

fn matching_back(toks: &[Token], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=close).rev() {
        let t = &toks[j];
        if t.is_punct(")") || t.is_punct("]") {
            depth += 1;
        } else if t.is_punct("(") || t.is_punct("[") {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}

/// The CASE that an END at `end` closes.
fn case_start(toks: &[Token], end: usize) -> Option<usize> {
    let mut depth = 0usize;
    for j in (0..=end).rev() {
        if word_is(&toks[j], "end") {
            depth += 1;
        } else if word_is(&toks[j], "case") {
            depth -= 1;
            if depth == 0 {
                return Some(j);
            }
        }
    }
    None
}
