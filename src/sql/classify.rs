//! What a statement is, as far as the server needs to know before handing
//! it to DuckDB: transaction control, materialized-view commands, the
//! tables a statement writes, and the command tag PostgreSQL would send.

use super::lex::{Tok, Token};
use super::lexed::Lexed;
use crate::engine::StatementKind;

/// A (possibly schema- or catalog-qualified) object name as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Name {
    /// The attached database of a three-part name.
    pub catalog: Option<String>,
    pub schema: Option<String>,
    pub name: String,
}

impl Name {
    /// The name quoted for DuckDB.
    pub fn quoted(&self) -> String {
        let mut parts: Vec<String> = Vec::with_capacity(3);
        if let Some(c) = &self.catalog {
            parts.push(quote_ident(c));
        }
        if let Some(s) = &self.schema {
            parts.push(quote_ident(s));
        }
        parts.push(quote_ident(&self.name));
        parts.join(".")
    }
}

pub fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Begin,
    /// START TRANSACTION: BEGIN with its own command tag.
    StartTransaction,
    Commit,
    Rollback,
    /// SAVEPOINT / RELEASE / ROLLBACK TO: DuckDB has no savepoints; the
    /// session emulates what it can (session::savepoint).
    Savepoint(super::savepoint::SavepointOp),
    CreateMatView {
        name: Name,
        columns: Option<Vec<String>>,
        query: String,
        with_data: bool,
        if_not_exists: bool,
        /// CREATE OR REPLACE: an existing materialized view of that name is replaced.
        or_replace: bool,
        /// `WITH (refresh = '…')`: the view's refresh policy as written.
        refresh: Option<String>,
    },
    /// ALTER MATERIALIZED VIEW … SET (…) / RESET (…): `refresh` is Some when the list names the
    /// refresh policy (Some(None): RESET, back to on demand).
    AlterMatViewOptions {
        name: Name,
        refresh: Option<Option<String>>,
    },
    RefreshMatView {
        name: Name,
        with_data: bool,
    },
    /// EXPLAIN REFRESH MATERIALIZED VIEW: the statements a refresh would run, as rows.
    ExplainRefresh {
        name: Name,
    },
    DropMatView {
        names: Vec<Name>,
        if_exists: bool,
        cascade: bool,
    },
    RenameMatView {
        name: Name,
        new_name: String,
    },
    /// DROP TABLE/VIEW: checked for dependent materialized views.
    DropRelation {
        names: Vec<Name>,
        cascade: bool,
    },
    /// ALTER TABLE/VIEW: checked for dependent materialized views.
    AlterRelation {
        name: Name,
    },
    /// SET of a PostgreSQL session parameter (others go to DuckDB).
    Set {
        name: String,
        /// None for DEFAULT.
        value: Option<String>,
    },
    Show {
        name: String,
    },
    /// RESET name, or RESET ALL (None).
    Reset {
        name: Option<String>,
    },
    /// SET TRANSACTION / SET SESSION CHARACTERISTICS: accepted, DuckDB has
    /// one isolation level (snapshot).
    TransactionMode,
    DiscardAll,
    /// DEALLOCATE name, or DEALLOCATE ALL (None).
    Deallocate {
        name: Option<String>,
    },
    /// COPY … FROM STDIN / TO STDOUT (other COPYs go to DuckDB).
    Copy(super::copy::Copy),
    /// LISTEN / UNLISTEN / NOTIFY, and a statement that is only `SELECT pg_notify(…)`: DuckDB
    /// has no notifications; the session delivers them (session::notify).
    Notify(super::notify::NotifyCommand),
    /// Everything else goes to DuckDB as written.
    Passthrough,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClassifyError(pub String);

pub fn classify(s: &Lexed) -> Result<Command, ClassifyError> {
    let (sql, toks) = (s.text(), s.tokens());
    let w = |i: usize| {
        toks.get(i)
            .filter(|t| t.kind == Tok::Word)
            .map(|t| t.text.as_str())
            .unwrap_or("")
    };
    Ok(match w(0) {
        "BEGIN" => Command::Begin,
        "START" => Command::StartTransaction,
        "COMMIT" | "END" => Command::Commit,
        "ROLLBACK" | "ABORT" if toks.iter().any(|t| t.is_kw("TO")) => {
            Command::Savepoint(super::savepoint::parse(toks).map_err(ClassifyError)?)
        }
        "ROLLBACK" | "ABORT" => Command::Rollback,
        "SAVEPOINT" | "RELEASE" => {
            Command::Savepoint(super::savepoint::parse(toks).map_err(ClassifyError)?)
        }
        "SET" => parse_set(s),
        "COPY" => match super::copy::parse_copy(s) {
            Ok(Some(c)) => Command::Copy(c),
            Ok(None) => Command::Passthrough,
            Err(e) => return Err(ClassifyError(e)),
        },
        "SHOW" => match setting_name(toks, 1) {
            Some((name, _))
                if crate::compat::Settings::is_known(&name)
                    || name == "transaction isolation level" =>
            {
                Command::Show { name }
            }
            _ => Command::Passthrough,
        },
        "RESET" => {
            if w(1) == "ALL" {
                Command::Reset { name: None }
            } else {
                match setting_name(toks, 1) {
                    Some((name, _)) if crate::compat::Settings::is_known(&name) => {
                        Command::Reset { name: Some(name) }
                    }
                    _ => Command::Passthrough,
                }
            }
        }
        "DISCARD" => Command::DiscardAll,
        "LISTEN" | "UNLISTEN" | "NOTIFY" => {
            Command::Notify(super::notify::parse(s).map_err(ClassifyError)?)
        }
        "SELECT" => match super::notify::parse_pg_notify(s) {
            Some(r) => Command::Notify(r.map_err(ClassifyError)?),
            None => Command::Passthrough,
        },
        "DEALLOCATE" => {
            let i = if w(1) == "PREPARE" { 2 } else { 1 };
            match toks.get(i) {
                Some(t) if t.is_kw("ALL") => Command::Deallocate { name: None },
                Some(t) if matches!(t.kind, Tok::Word | Tok::Ident) => Command::Deallocate {
                    name: Some(ident_text(t, sql)),
                },
                _ => Command::Passthrough,
            }
        }
        "CREATE" if w(1) == "MATERIALIZED" && w(2) == "VIEW" => parse_create_matview(s, false)?,
        "CREATE"
            if w(1) == "OR" && w(2) == "REPLACE" && w(3) == "MATERIALIZED" && w(4) == "VIEW" =>
        {
            parse_create_matview(s, true)?
        }
        "REFRESH" if w(1) == "MATERIALIZED" && w(2) == "VIEW" => {
            let all = toks;
            let mut i = 3;
            if all.get(i).is_some_and(|t| t.is_kw("CONCURRENTLY")) {
                i += 1;
            }
            let (name, next) = parse_name(all, i)
                .ok_or_else(|| ClassifyError("expected a materialized view name".into()))?;
            let with_data = !matches!(all.get(next..next + 3), Some([a, b, c]) if a.is_kw("WITH") && b.is_kw("NO") && c.is_kw("DATA"));
            Command::RefreshMatView { name, with_data }
        }
        "EXPLAIN" if w(1) == "REFRESH" && w(2) == "MATERIALIZED" && w(3) == "VIEW" => {
            let all = toks;
            let (name, _) = parse_name(all, 4)
                .ok_or_else(|| ClassifyError("expected a materialized view name".into()))?;
            Command::ExplainRefresh { name }
        }
        "DROP" if w(1) == "MATERIALIZED" && w(2) == "VIEW" => {
            let all = toks;
            let (names, if_exists, cascade) = parse_drop_list(all, 3)?;
            Command::DropMatView {
                names,
                if_exists,
                cascade,
            }
        }
        "ALTER" if w(1) == "MATERIALIZED" && w(2) == "VIEW" => {
            let all = toks;
            let mut i = 3;
            if all.get(i).is_some_and(|t| t.is_kw("IF")) {
                i += 2;
            }
            let (name, next) = parse_name(all, i)
                .ok_or_else(|| ClassifyError("expected a materialized view name".into()))?;
            if let Some(verb) = all.get(next).filter(|t| t.is_kw("SET") || t.is_kw("RESET")) {
                let (opts, _) =
                    super::matview_options::parse_list(all, next + 1).map_err(ClassifyError)?;
                let refresh = if verb.is_kw("RESET") {
                    opts.iter()
                        .any(|o| o.name == super::matview_options::REFRESH)
                        .then_some(None)
                } else {
                    super::matview_options::refresh_value(&opts)
                        .map_err(ClassifyError)?
                        .map(Some)
                };
                return Ok(Command::AlterMatViewOptions { name, refresh });
            }
            match all.get(next..next + 3) {
                Some([r, t, n])
                    if r.is_kw("RENAME")
                        && t.is_kw("TO")
                        && matches!(n.kind, Tok::Word | Tok::Ident) =>
                {
                    Command::RenameMatView {
                        name,
                        new_name: ident_text(n, sql),
                    }
                }
                _ => {
                    return Err(ClassifyError(
                        "only ALTER MATERIALIZED VIEW ... RENAME TO, SET (...) and RESET (...) are supported"
                            .into(),
                    ))
                }
            }
        }
        "DROP" if matches!(w(1), "TABLE" | "VIEW") => {
            let all = toks;
            let (names, _, cascade) = parse_drop_list(all, 2)?;
            Command::DropRelation { names, cascade }
        }
        "ALTER" if matches!(w(1), "TABLE" | "VIEW") => {
            let all = toks;
            let mut i = 2;
            if all.get(i).is_some_and(|t| t.is_kw("IF")) {
                i += 2;
            }
            match parse_name(all, i) {
                Some((name, _)) => Command::AlterRelation { name },
                None => Command::Passthrough,
            }
        }
        _ => Command::Passthrough,
    })
}

/// A setting name at `i` (possibly dotted, e.g. `duckmv.refresh_mode`), lower-cased.
fn setting_name(toks: &[Token], i: usize) -> Option<(String, usize)> {
    let t = toks.get(i)?;
    if !matches!(t.kind, Tok::Word | Tok::Ident) {
        return None;
    }
    // SHOW TRANSACTION ISOLATION LEVEL / SET TIME ZONE
    if t.is_kw("TRANSACTION") && toks.get(i + 1).is_some_and(|n| n.is_kw("ISOLATION")) {
        return Some(("transaction isolation level".into(), i + 4));
    }
    if t.is_kw("TIME") && toks.get(i + 1).is_some_and(|n| n.is_kw("ZONE")) {
        return Some(("timezone".into(), i + 2));
    }
    let mut name = t.text.to_ascii_lowercase();
    let mut j = i + 1;
    while toks.get(j).is_some_and(|p| p.is_punct(".")) {
        let part = toks.get(j + 1)?;
        name.push('.');
        name.push_str(&part.text.to_ascii_lowercase());
        j += 2;
    }
    Some((name, j))
}

fn parse_set(s: &Lexed) -> Command {
    let (sql, toks) = (s.text(), s.tokens());
    let mut i = 1;
    if toks
        .get(i)
        .is_some_and(|t| t.is_kw("SESSION") || t.is_kw("LOCAL"))
    {
        if toks.get(i + 1).is_some_and(|t| t.is_kw("CHARACTERISTICS")) {
            return Command::TransactionMode;
        }
        i += 1;
    }
    if toks.get(i).is_some_and(|t| t.is_kw("TRANSACTION")) {
        return Command::TransactionMode;
    }
    let Some((name, mut j)) = setting_name(toks, i) else {
        return Command::Passthrough;
    };
    if name == "transaction isolation level" || !crate::compat::Settings::is_known(&name) {
        return Command::Passthrough;
    }
    if toks
        .get(j)
        .is_some_and(|t| t.is_kw("TO") || t.is_punct("="))
    {
        j += 1;
    }
    let value = match toks.get(j) {
        None => None,
        Some(t) if t.is_kw("DEFAULT") => None,
        Some(t) => Some(
            sql[t.start..]
                .trim()
                .trim_end_matches(';')
                .trim()
                .to_string(),
        ),
    };
    Command::Set { name, value }
}

fn ident_text(t: &Token, _sql: &str) -> String {
    match t.kind {
        Tok::Ident => t.text.clone(),
        _ => t.text.to_ascii_lowercase(),
    }
}

/// Reads `a`, `a.b` or `a.b.c` at `i`.
fn parse_name(toks: &[Token], i: usize) -> Option<(Name, usize)> {
    let mut parts = Vec::new();
    let mut j = i;
    loop {
        let t = toks.get(j)?;
        let part = match t.kind {
            // Bare identifiers keep their spelling in DuckDB (it is
            // case-insensitive); lower-case them as PostgreSQL folds them.
            Tok::Word => t.text.to_ascii_lowercase(),
            Tok::Ident => t.text.clone(),
            _ => return None,
        };
        parts.push(part);
        j += 1;
        if toks.get(j).is_some_and(|t| t.is_punct(".")) {
            j += 1;
        } else {
            break;
        }
    }
    let name = parts.pop()?;
    let schema = parts.pop();
    let catalog = parts.pop();
    Some((
        Name {
            catalog,
            schema,
            name,
        },
        j,
    ))
}

fn parse_drop_list(toks: &[Token], mut i: usize) -> Result<(Vec<Name>, bool, bool), ClassifyError> {
    let mut if_exists = false;
    if toks.get(i).is_some_and(|t| t.is_kw("IF"))
        && toks.get(i + 1).is_some_and(|t| t.is_kw("EXISTS"))
    {
        if_exists = true;
        i += 2;
    }
    let mut names = Vec::new();
    loop {
        let (n, next) =
            parse_name(toks, i).ok_or_else(|| ClassifyError("expected a name".into()))?;
        names.push(n);
        i = next;
        if toks.get(i).is_some_and(|t| t.is_punct(",")) {
            i += 1;
        } else {
            break;
        }
    }
    let cascade = toks.get(i).is_some_and(|t| t.is_kw("CASCADE"));
    Ok((names, if_exists, cascade))
}

fn parse_create_matview(s: &Lexed, or_replace: bool) -> Result<Command, ClassifyError> {
    let (sql, toks) = (s.text(), s.tokens());
    let mut i = if or_replace { 5 } else { 3 };
    let mut if_not_exists = false;
    if toks.get(i).is_some_and(|t| t.is_kw("IF")) {
        if_not_exists = true;
        i += 3;
    }
    let (name, mut i) = parse_name(toks, i)
        .ok_or_else(|| ClassifyError("expected a materialized view name".into()))?;
    let mut columns = None;
    if toks.get(i).is_some_and(|t| t.is_punct("(")) {
        let mut cols = Vec::new();
        i += 1;
        while let Some(t) = toks.get(i) {
            match t.kind {
                Tok::Word => cols.push(t.text.to_ascii_lowercase()),
                Tok::Ident => cols.push(t.text.clone()),
                Tok::Punct if t.text == "," => {}
                Tok::Punct if t.text == ")" => break,
                _ => return Err(ClassifyError("bad column list".into())),
            }
            i += 1;
        }
        i += 1;
        columns = Some(cols);
    }
    // USING / TABLESPACE are accepted and ignored; of the storage parameters in WITH (…), only
    // `refresh` means something to duckmv.
    let mut refresh = None;
    while let Some(t) = toks.get(i) {
        if t.is_kw("AS") {
            break;
        }
        if t.is_kw("WITH") && toks.get(i + 1).is_some_and(|p| p.is_punct("(")) {
            let (opts, next) =
                super::matview_options::parse_list(toks, i + 1).map_err(ClassifyError)?;
            refresh = super::matview_options::refresh_value(&opts).map_err(ClassifyError)?;
            i = next;
            continue;
        }
        i += 1;
    }
    let as_tok = toks
        .get(i)
        .ok_or_else(|| ClassifyError("expected AS <query>".into()))?;
    let mut end = sql.len();
    let mut with_data = true;
    let n = toks.len();
    if n >= 2 && toks[n - 1].is_kw("DATA") {
        if n >= 3 && toks[n - 2].is_kw("NO") && toks[n - 3].is_kw("WITH") {
            with_data = false;
            end = toks[n - 3].start;
        } else if toks[n - 2].is_kw("WITH") {
            end = toks[n - 2].start;
        }
    }
    let query = sql[as_tok.end..end]
        .trim()
        .trim_end_matches(';')
        .trim()
        .to_string();
    if query.is_empty() {
        return Err(ClassifyError("expected AS <query>".into()));
    }
    if or_replace && if_not_exists {
        return Err(ClassifyError(
            "OR REPLACE and IF NOT EXISTS cannot both be used".into(),
        ));
    }
    Ok(Command::CreateMatView {
        name,
        columns,
        query,
        with_data,
        if_not_exists,
        or_replace,
        refresh,
    })
}

/// Tables a statement writes: INSERT INTO, UPDATE, DELETE FROM, TRUNCATE,
/// MERGE INTO and COPY ... FROM targets, including inside WITH clauses.
pub fn write_targets(s: &Lexed) -> Vec<Name> {
    let toks = s.tokens();
    let starts_like_write = toks.iter().take(1).any(|t| {
        t.kind == Tok::Word
            && matches!(
                t.text.as_str(),
                "WITH" | "INSERT" | "UPDATE" | "DELETE" | "TRUNCATE" | "MERGE" | "COPY"
            )
    });
    if !starts_like_write {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if t.kind != Tok::Word {
            continue;
        }
        let target = match t.text.as_str() {
            "INSERT" | "MERGE" if toks.get(i + 1).is_some_and(|n| n.is_kw("INTO")) => {
                parse_name(toks, i + 2)
            }
            // DuckDB's INSERT OR REPLACE / OR IGNORE INTO.
            "INSERT"
                if toks.get(i + 1).is_some_and(|n| n.is_kw("OR"))
                    && toks.get(i + 3).is_some_and(|n| n.is_kw("INTO")) =>
            {
                parse_name(toks, i + 4)
            }
            "DELETE" if toks.get(i + 1).is_some_and(|n| n.is_kw("FROM")) => parse_name(toks, i + 2),
            "UPDATE"
                if i == 0
                    || !toks[i - 1].is_kw("DO")
                        && !toks[i - 1].is_kw("FOR")
                        && !toks[i - 1].is_kw("THEN") =>
            {
                parse_name(toks, i + 1).filter(|(n, _)| !n.name.eq_ignore_ascii_case("set"))
            }
            "TRUNCATE" => {
                let j = if toks.get(i + 1).is_some_and(|n| n.is_kw("TABLE")) {
                    i + 2
                } else {
                    i + 1
                };
                parse_name(toks, j)
            }
            "COPY" if i == 0 => {
                let named = parse_name(toks, i + 1);
                if toks.iter().any(|t| t.is_kw("FROM")) {
                    named
                } else {
                    None
                }
            }
            _ => None,
        };
        if let Some((n, _)) = target {
            out.push(n);
        }
    }
    out
}

/// The relation a `CREATE OR REPLACE TABLE|VIEW …` would replace.
pub fn replaced_relation(s: &Lexed) -> Option<Name> {
    let toks = s.tokens();
    let mut i = 0;
    for kw in ["CREATE", "OR", "REPLACE"] {
        if !toks.get(i)?.is_kw(kw) {
            return None;
        }
        i += 1;
    }
    while toks
        .get(i)
        .is_some_and(|t| t.is_kw("TEMP") || t.is_kw("TEMPORARY"))
    {
        i += 1;
    }
    let kind = toks.get(i)?;
    if !(kind.is_kw("TABLE") || kind.is_kw("VIEW")) {
        return None;
    }
    parse_name(toks, i + 1).map(|(n, _)| n)
}

/// The command tag PostgreSQL sends for a completed statement.
pub fn command_tag(s: &Lexed, kind: StatementKind, rows: u64, returned_rows: bool) -> String {
    let toks = &s.tokens()[..s.tokens().len().min(8)];
    let words: Vec<&str> = toks
        .iter()
        .skip_while(|t| t.is_punct("("))
        .take_while(|t| t.kind == Tok::Word)
        .map(|t| t.text.as_str())
        .collect();
    let first = words.first().copied().unwrap_or("");
    match kind {
        StatementKind::Insert => return format!("INSERT 0 {rows}"),
        StatementKind::Update => return format!("UPDATE {rows}"),
        // DuckDB runs TRUNCATE as a DELETE; PostgreSQL's tag names the statement.
        StatementKind::Delete if first == "TRUNCATE" => return "TRUNCATE TABLE".into(),
        StatementKind::Delete => return format!("DELETE {rows}"),
        StatementKind::Merge => return format!("MERGE {rows}"),
        StatementKind::Copy => return format!("COPY {rows}"),
        _ => {}
    }
    match first {
        "SHOW" => return "SHOW".into(),
        "EXPLAIN" => return "EXPLAIN".into(),
        "SET" => return "SET".into(),
        "RESET" => return "RESET".into(),
        _ => {}
    }
    if matches!(
        kind,
        StatementKind::Create | StatementKind::Drop | StatementKind::Alter
    ) {
        let rest: Vec<&str> = words
            .iter()
            .skip(1)
            .copied()
            .filter(|w| {
                !matches!(
                    *w,
                    "OR" | "REPLACE"
                        | "TEMP"
                        | "TEMPORARY"
                        | "UNIQUE"
                        | "PERSISTENT"
                        | "UNLOGGED"
                        | "IF"
                        | "NOT"
                        | "EXISTS"
                )
            })
            .collect();
        let object = match rest.first().copied().unwrap_or("") {
            "MACRO" | "FUNCTION" => "FUNCTION",
            "MATERIALIZED" => "MATERIALIZED VIEW",
            "" => "",
            o => o,
        };
        if kind == StatementKind::Create && object == "TABLE" && toks.iter().any(|t| t.is_kw("AS"))
        {
            return format!("SELECT {rows}");
        }
        return format!("{first} {object}").trim().to_string();
    }
    if returned_rows || matches!(kind, StatementKind::Select) {
        return format!("SELECT {rows}");
    }
    if first.is_empty() {
        return "SELECT 0".into();
    }
    first.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::savepoint::SavepointOp;

    fn classify(sql: &str) -> Result<Command, ClassifyError> {
        super::classify(&Lexed::new(sql))
    }

    fn command_tag(sql: &str, kind: StatementKind, rows: u64, returned: bool) -> String {
        super::command_tag(&Lexed::new(sql), kind, rows, returned)
    }

    #[test]
    fn matview_commands() {
        let c = classify(
            "CREATE MATERIALIZED VIEW IF NOT EXISTS s.v (a, \"B\") AS SELECT 1, 2 WITH NO DATA",
        )
        .unwrap();
        assert_eq!(
            c,
            Command::CreateMatView {
                name: Name {
                    schema: Some("s".into()),
                    name: "v".into(),
                    ..Default::default()
                },
                columns: Some(vec!["a".into(), "B".into()]),
                query: "SELECT 1, 2".into(),
                with_data: false,
                if_not_exists: true,
                or_replace: false,
                refresh: None,
            }
        );
        assert!(matches!(
            classify("CREATE OR REPLACE MATERIALIZED VIEW v AS SELECT 1").unwrap(),
            Command::CreateMatView { or_replace: true, ref query, .. } if query == "SELECT 1"
        ));
        assert_eq!(
            classify("refresh materialized view concurrently V").unwrap(),
            Command::RefreshMatView {
                name: Name {
                    schema: None,
                    name: "v".into(),
                    ..Default::default()
                },
                with_data: true
            }
        );
        assert_eq!(
            classify("explain refresh materialized view s.V").unwrap(),
            Command::ExplainRefresh {
                name: Name {
                    schema: Some("s".into()),
                    name: "v".into(),
                    ..Default::default()
                },
            }
        );
        assert_eq!(
            classify("drop materialized view if exists a, b cascade").unwrap(),
            Command::DropMatView {
                names: vec![
                    Name {
                        schema: None,
                        name: "a".into(),
                        ..Default::default()
                    },
                    Name {
                        schema: None,
                        name: "b".into(),
                        ..Default::default()
                    }
                ],
                if_exists: true,
                cascade: true
            }
        );
        assert_eq!(
            classify("alter materialized view a rename to b").unwrap(),
            Command::RenameMatView {
                name: Name {
                    schema: None,
                    name: "a".into(),
                    ..Default::default()
                },
                new_name: "b".into()
            }
        );
        assert_eq!(
            classify("begin isolation level serializable").unwrap(),
            Command::Begin
        );
        assert_eq!(
            classify("rollback to savepoint x").unwrap(),
            Command::Savepoint(SavepointOp::RollbackTo("x".into()))
        );
        assert_eq!(
            classify("SAVEPOINT \"_pg3_1\"").unwrap(),
            Command::Savepoint(SavepointOp::Define("_pg3_1".into()))
        );
        assert_eq!(classify("abort").unwrap(), Command::Rollback);
        assert!(classify("release").is_err());
    }

    #[test]
    fn finds_write_targets() {
        let names = |s: &str| {
            write_targets(&Lexed::new(s))
                .into_iter()
                .map(|n| n.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names("insert into t values (1) on conflict do update set a = 1"),
            vec!["t"]
        );
        assert_eq!(
            names("with x as (delete from a returning *) insert into b select * from x"),
            vec!["a", "b"]
        );
        assert_eq!(names("update s.t set a = 1"), vec!["t"]);
        assert_eq!(names("insert or replace into t values (1)"), vec!["t"]);
        assert_eq!(names("truncate table t"), vec!["t"]);
        assert!(names("select * from t for update").is_empty());
    }

    #[test]
    fn tags() {
        assert_eq!(
            command_tag("truncate t", StatementKind::Delete, 5, false),
            "TRUNCATE TABLE"
        );
        assert_eq!(
            command_tag("insert into t values (1)", StatementKind::Insert, 3, false),
            "INSERT 0 3"
        );
        assert_eq!(
            command_tag("create table t (a int)", StatementKind::Create, 0, false),
            "CREATE TABLE"
        );
        assert_eq!(
            command_tag(
                "create or replace temp view v as select 1",
                StatementKind::Create,
                0,
                false
            ),
            "CREATE VIEW"
        );
        assert_eq!(
            command_tag(
                "create table t as select 1",
                StatementKind::Create,
                1,
                false
            ),
            "SELECT 1"
        );
        assert_eq!(
            command_tag("select 1", StatementKind::Select, 1, true),
            "SELECT 1"
        );
        assert_eq!(
            command_tag("drop table if exists t", StatementKind::Drop, 0, false),
            "DROP TABLE"
        );
    }
}
