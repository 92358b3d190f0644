//! `extract(second FROM …)` and `extract(milliseconds FROM …)` keep their fraction, as in
//! PostgreSQL (`10.250000`, `10250.000`); DuckDB's parts are whole numbers (`10`, `10250`), a
//! silent difference. Both are read from the microseconds part instead, which DuckDB keeps
//! whole: `extract` as PostgreSQL's numeric with 6 or 3 decimals, `date_part` as its double.
//! `extract(epoch FROM …)`, a double in DuckDB, is given PostgreSQL's 6 decimals too.

use super::{matching, replace_token, Edit};
use crate::sql::lex::{Tok, Token};

/// The part's scale: how many microseconds make one unit, and the decimals of extract's result.
fn fractional(part: &str) -> Option<(&'static str, u32)> {
    match part.to_ascii_lowercase().as_str() {
        "second" | "seconds" | "sec" | "secs" | "s" => Some(("1000000.0", 6)),
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => Some(("1000.0", 3)),
        _ => None,
    }
}

/// The part named by a token: a bare word or a string literal.
fn part_name(t: &Token) -> Option<String> {
    match t.kind {
        Tok::Word => Some(t.text.clone()),
        Tok::Str => Some(t.text.trim_matches('\'').to_string()),
        _ => None,
    }
}

/// `extract(part FROM x)` at `i`.
pub(super) fn extract(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let close = matching(toks, i + 1)?;
    let from = toks.get(i + 3).filter(|t| t.is_kw("FROM"))?;
    let part = part_name(toks.get(i + 2)?)?;
    let (head, tail) = if part.eq_ignore_ascii_case("epoch") {
        (
            "CAST(date_part('epoch',".to_string(),
            ") AS DECIMAL(24,6))".to_string(),
        )
    } else {
        let (per_unit, scale) = fractional(&part)?;
        (
            "CAST(date_part('microseconds',".to_string(),
            format!(") / {per_unit} AS DECIMAL(18,{scale}))"),
        )
    };
    edits.push(Edit {
        start: toks[i].start,
        end: from.end,
        text: head,
    });
    replace_token(toks, close, &tail, edits)?;
    Some(i + 4)
}

/// `date_part('part', x)` at `i`.
pub(super) fn date_part(toks: &[Token], i: usize, edits: &mut Vec<Edit>) -> Option<usize> {
    let close = matching(toks, i + 1)?;
    let part = toks.get(i + 2).filter(|t| t.kind == Tok::Str)?;
    let comma = toks.get(i + 3).filter(|t| t.is_punct(","))?;
    let (per_unit, _) = fractional(&part_name(part)?)?;
    edits.push(Edit {
        start: toks[i].start,
        end: comma.end,
        text: "(date_part('microseconds',".into(),
    });
    replace_token(toks, close, &format!(") / {per_unit})"), edits)?;
    Some(i + 4)
}
