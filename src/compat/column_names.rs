//! Result columns named as PostgreSQL names them.
//!
//! DuckDB names an unaliased expression by its text (`count_star()`,
//! `CAST(x AS INTEGER)`); PostgreSQL by the rules in `colname_rules`
//! (`count`, `x`). Clients read results by those names, and views and tables
//! created from a query keep them. So each unaliased select-list item whose
//! DuckDB name differs gets the PostgreSQL name as an explicit alias.
//!
//! What to name comes from sqlparser's parse; where to put the alias comes
//! from its tokens: the item ends before the comma or clause keyword that
//! follows it at the same depth. A select list whose items the tokens do not
//! count the same as the parse is left alone.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArguments, ObjectNamePart, Query, Select, SelectItem, SetExpr, Statement, Visit,
    Visitor,
};
use sqlparser::dialect::{Dialect, DuckDbDialect, PostgreSqlDialect};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Location, Token, TokenWithSpan, Tokenizer};

use super::colname_rules::{figure, folded};
use crate::sql::Lexed;

/// `sql` with aliases added where PostgreSQL's column names differ from
/// DuckDB's, or None when none is needed (or the statement does not parse).
pub fn name_columns(s: &Lexed) -> Option<String> {
    let sql = s.text();
    if !reads_a_query(s) {
        return None;
    }
    // PostgreSQL's syntax first; DuckDB's for what only it has.
    let dialects: [&dyn Dialect; 2] = [&PostgreSqlDialect {}, &DuckDbDialect {}];
    dialects.iter().find_map(|d| {
        let mut stmts = Parser::parse_sql(*d, sql).ok()?;
        let stmt = (stmts.len() == 1).then(|| stmts.pop())??;
        Some(aliases(sql, *d, &stmt))
    })?
}

/// Statements whose result or created relation has query columns.
fn reads_a_query(s: &Lexed) -> bool {
    let words: Vec<&str> = s.leading_words(6).collect();
    match words.first().copied() {
        Some("SELECT" | "WITH" | "VALUES") => true,
        Some("CREATE") => words.iter().any(|w| *w == "VIEW" || *w == "TABLE") && s.has_kw("SELECT"),
        _ => false,
    }
}

/// The statement with its aliases inserted, or None when it needs none.
fn aliases(sql: &str, dialect: &dyn Dialect, stmt: &Statement) -> Option<String> {
    let mut selects = Selects(Vec::new());
    let _ = stmt.visit(&mut selects);
    let toks = Tokenizer::new(dialect, sql).tokenize_with_location().ok()?;
    let offsets = Offsets::new(sql);
    let mut inserts: Vec<(usize, String)> = Vec::new();
    for sel in selects.0 {
        let Some(ends) = item_ends(&toks, sel.select_token.0.span.start) else {
            continue;
        };
        if ends.len() != sel.projection.len() {
            continue;
        }
        for (item, end) in sel.projection.iter().zip(ends) {
            let SelectItem::UnnamedExpr(e) = item else {
                continue;
            };
            if let (Some(name), Some(at)) = (alias_for(e), offsets.of(end)) {
                inserts.push((at, format!(" AS \"{}\"", name.replace('"', "\"\""))));
            }
        }
    }
    if inserts.is_empty() {
        return None;
    }
    inserts.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(sql.len() + 16 * inserts.len());
    let mut pos = 0;
    for (at, text) in inserts {
        out.push_str(&sql[pos..at]);
        out.push_str(&text);
        pos = at;
    }
    out.push_str(&sql[pos..]);
    Some(out)
}

/// The alias an item needs. None for a column reference, which DuckDB names
/// by the column as PostgreSQL does, and for SQL functions written without
/// parentheses (`current_user`), which DuckDB reads as names too (an alias of
/// the same name would refer to itself) — unless the rewriter turns them into
/// calls (`current_schema`), which then need their name back.
fn alias_for(e: &Expr) -> Option<String> {
    const REWRITTEN_TO_CALLS: &[&str] = &[
        "current_schema",
        "current_catalog",
        "current_user",
        "session_user",
        "current_role",
    ];
    let bare = match e {
        Expr::Identifier(id) => Some(id),
        Expr::CompoundIdentifier(_) => return None,
        Expr::Function(f) if matches!(f.args, FunctionArguments::None) => match f.name.0.last() {
            Some(ObjectNamePart::Identifier(id)) => Some(id),
            _ => return None,
        },
        _ => None,
    };
    if let Some(id) = bare {
        if id.quote_style.is_some() || !REWRITTEN_TO_CALLS.contains(&folded(id).as_str()) {
            return None;
        }
    }
    figure(e).column()
}

/// Every SELECT block of a statement, in any query (subqueries, CTEs, the
/// query of CREATE VIEW / TABLE AS).
struct Selects(Vec<Select>);

impl Visitor for Selects {
    type Break = ();

    fn pre_visit_query(&mut self, q: &Query) -> ControlFlow<()> {
        // Nested queries (SetExpr::Query) are visited on their own.
        let mut stack = vec![q.body.as_ref()];
        while let Some(body) = stack.pop() {
            match body {
                SetExpr::Select(s) => self.0.push(s.as_ref().clone()),
                SetExpr::SetOperation { left, right, .. } => {
                    stack.push(right);
                    stack.push(left);
                }
                _ => {}
            }
        }
        ControlFlow::Continue(())
    }
}

/// Where each item of the select list opened by the SELECT at `start` ends,
/// or None when the list cannot be delimited.
fn item_ends(toks: &[TokenWithSpan], start: Location) -> Option<Vec<Location>> {
    let first = toks.iter().position(|t| t.span.start == start)?;
    let mut i = skip_distinct(toks, first + 1);
    let mut depth = 0i32;
    let mut ends = Vec::new();
    let mut last: Option<usize> = None;
    let mut prev_word: Option<Keyword> = None;
    // A word after `::` names a type (`::union(a int)`), never a clause.
    let mut after_cast = false;
    while let Some(t) = toks.get(i) {
        match &t.token {
            Token::Whitespace(_) => {
                i += 1;
                continue;
            }
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace if depth > 0 => depth -= 1,
            Token::RParen | Token::SemiColon | Token::EOF => break,
            Token::Comma if depth == 0 => {
                ends.push(toks[last?].span.end);
                last = None;
                prev_word = None;
                i += 1;
                continue;
            }
            Token::Word(w) if depth == 0 && !after_cast && ends_list(w.keyword, prev_word) => break,
            _ => {}
        }
        after_cast = matches!(t.token, Token::DoubleColon);
        prev_word = match &t.token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
            _ => None,
        };
        last = Some(i);
        i += 1;
    }
    ends.push(toks[last?].span.end);
    Some(ends)
}

/// Past `DISTINCT [ON (…)]` or `ALL` after SELECT.
fn skip_distinct(toks: &[TokenWithSpan], mut i: usize) -> usize {
    let word_at = |i: usize| -> (usize, Option<Keyword>) {
        let mut j = i;
        while matches!(toks.get(j).map(|t| &t.token), Some(Token::Whitespace(_))) {
            j += 1;
        }
        match toks.get(j).map(|t| &t.token) {
            Some(Token::Word(w)) if w.quote_style.is_none() => (j, Some(w.keyword)),
            _ => (j, None),
        }
    };
    let (j, kw) = word_at(i);
    match kw {
        Some(Keyword::ALL) => return j + 1,
        Some(Keyword::DISTINCT) => i = j + 1,
        _ => return i,
    }
    let (j, kw) = word_at(i);
    if kw != Some(Keyword::ON) {
        return i;
    }
    // DISTINCT ON (…): past the matching parenthesis.
    let mut depth = 0;
    for (k, t) in toks.iter().enumerate().skip(j + 1) {
        match t.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return k + 1;
                }
            }
            _ => {}
        }
    }
    toks.len()
}

/// Keywords that end a select list at its own depth. `IS DISTINCT FROM` and
/// `WITHIN GROUP (…)` do not.
fn ends_list(kw: Keyword, prev: Option<Keyword>) -> bool {
    match kw {
        Keyword::FROM => prev != Some(Keyword::DISTINCT),
        Keyword::GROUP => prev != Some(Keyword::WITHIN),
        Keyword::INTO
        | Keyword::WHERE
        | Keyword::HAVING
        | Keyword::WINDOW
        | Keyword::QUALIFY
        | Keyword::ORDER
        | Keyword::LIMIT
        | Keyword::OFFSET
        | Keyword::FETCH
        | Keyword::UNION
        | Keyword::EXCEPT
        | Keyword::INTERSECT
        | Keyword::FOR => true,
        _ => false,
    }
}

/// Byte offsets of the tokenizer's (line, column) locations; columns count
/// characters.
struct Offsets<'a> {
    sql: &'a str,
    lines: Vec<usize>,
}

impl<'a> Offsets<'a> {
    fn new(sql: &'a str) -> Self {
        let mut lines = vec![0];
        lines.extend(sql.match_indices('\n').map(|(i, _)| i + 1));
        Offsets { sql, lines }
    }

    fn of(&self, loc: Location) -> Option<usize> {
        let line_start = *self
            .lines
            .get(usize::try_from(loc.line).ok()?.checked_sub(1)?)?;
        let col = usize::try_from(loc.column).ok()?.checked_sub(1)?;
        let rest = &self.sql[line_start..];
        match rest.char_indices().nth(col) {
            Some((i, _)) => Some(line_start + i),
            None if rest.chars().count() == col => Some(self.sql.len()),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name_columns(sql: &str) -> Option<String> {
        super::name_columns(&Lexed::new(sql))
    }

    fn named(sql: &str) -> String {
        name_columns(sql).unwrap_or_else(|| sql.to_string())
    }

    #[test]
    fn aliases_go_after_each_unnamed_item() {
        assert_eq!(
            named("select count(*), sum(x) s, x::int, t.y from t where a"),
            r#"select count(*) AS "count", sum(x) s, x::int AS "x", t.y from t where a"#
        );
        assert_eq!(
            named("SELECT DISTINCT ON (a) a, 1 /* one */\nFROM t"),
            "SELECT DISTINCT ON (a) a, 1 AS \"?column?\" /* one */\nFROM t"
        );
        assert_eq!(
            named("select * from (select max(v) from t) s union select 1"),
            r#"select * from (select max(v) AS "max" from t) s union select 1 AS "?column?""#
        );
        assert_eq!(
            named("create view v as select k, count(*) from t group by k"),
            r#"create view v as select k, count(*) AS "count" from t group by k"#
        );
        assert_eq!(
            named("select a is distinct from b, percentile_cont(0.5) within group (order by v) from t"),
            r#"select a is distinct from b AS "?column?", percentile_cont(0.5) within group (order by v) AS "percentile_cont" from t"#
        );
        assert_eq!(
            named("select union_value(num := 2)::union(num integer, str varchar) from t"),
            r#"select union_value(num := 2)::union(num integer, str varchar) AS "union_value" from t"#
        );
        assert_eq!(
            named("select 'é', 2"),
            r#"select 'é' AS "?column?", 2 AS "?column?""#
        );
        assert_eq!(
            named("select current_schema, current_database(), session_user, current_date"),
            r#"select current_schema AS "current_schema", current_database() AS "current_database", session_user AS "session_user", current_date"#
        );
    }

    #[test]
    fn statements_that_need_none() {
        for sql in [
            "select a, t.b, * from t",
            "select count(*) as n from t",
            "insert into t select count(*) from u",
            "update t set a = 1",
            "select from t",
            "not sql at all",
        ] {
            assert_eq!(name_columns(sql), None, "{sql}");
        }
    }
}
