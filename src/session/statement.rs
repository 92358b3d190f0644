//! A statement made ready to run: what the server read from it (its command, the tables it
//! writes, whether it only adds rows or has RETURNING), the checks in front of DuckDB, and
//! DuckDB's prepared form with its parameter and result types.

use std::cell::RefCell;

use super::context::Context;
use super::matview;
use super::reply::SqlError;
use super::transaction::{Tx, Txn};
use crate::engine::{Column, Prepared, StatementKind};
use crate::sql::notify::NotifyCommand;
use crate::sql::{self, Command, Lexed};
use crate::types::{self, DuckType};

pub enum StmtKind {
    /// An empty query string.
    Empty,
    /// Prepared by DuckDB.
    Duck(RefCell<Prepared>),
    /// Handled by the server itself (transactions, materialized views).
    Command(Command),
    /// An upsert or MERGE on a table views read, run as plain statements
    /// so the capture triggers see every change.
    Rewrite(sql::upsert::Rewrite),
}

pub struct Statement {
    /// The statement as the server analysed it: its text and tokens.
    pub lexed: Lexed,
    pub kind: StmtKind,
    /// What the server checks before DuckDB runs it.
    pub command: Command,
    /// Parameter types the client declared in Parse (0 = unspecified).
    pub client_oids: Vec<u32>,
    /// Tables it writes (lower-cased names), for the capture lock.
    pub writes: Vec<String>,
    /// Whether it only adds rows (INSERT without upsert, COPY FROM).
    pub insert_only: bool,
    /// Whether it has a RETURNING clause.
    returning: bool,
    params: Vec<DuckType>,
    columns: Vec<Column>,
    /// An empty select list: rows without columns (DuckDB's placeholder column is dropped).
    pub no_columns: bool,
}

impl Statement {
    pub fn param_types(&self) -> &[DuckType] {
        &self.params
    }
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }
    pub fn is_empty(&self) -> bool {
        matches!(self.kind, StmtKind::Empty)
    }

    /// Whether it only reads (savepoints count the statements that may change something).
    pub fn only_reads(&self) -> bool {
        match &self.kind {
            StmtKind::Empty => true,
            // A WITH query may hold a data-modifying CTE: counted.
            StmtKind::Duck(p) => {
                p.borrow().kind == StatementKind::Select && self.lexed.first_word() != Some("WITH")
            }
            // LISTEN and UNLISTEN change no data: ROLLBACK TO need not undo them.
            StmtKind::Command(c) => matches!(
                c,
                Command::Show { .. }
                    | Command::ExplainRefresh { .. }
                    | Command::Copy(sql::copy::Copy::To { .. })
                    | Command::Notify(NotifyCommand::Listen(_) | NotifyCommand::Unlisten(_))
            ),
            StmtKind::Rewrite(_) => false,
        }
    }

    /// Runs as several DuckDB statements that must commit together.
    pub fn needs_transaction(&self) -> bool {
        match &self.kind {
            StmtKind::Rewrite(_) => true,
            StmtKind::Command(c) => needs_transaction(c),
            _ => false,
        }
    }

    /// Whether executing it yields rows (Describe must say so beforehand).
    pub fn returns_rows(&self) -> bool {
        match &self.kind {
            StmtKind::Rewrite(r) => return r.describe.is_some(),
            // SHOW answered by the server has one row, described like DuckDB's.
            StmtKind::Command(
                Command::Show { .. }
                | Command::ExplainRefresh { .. }
                | Command::Notify(NotifyCommand::PgNotify { .. }),
            ) => return true,
            _ => {}
        }
        let StmtKind::Duck(p) = &self.kind else {
            return false;
        };
        if self.no_columns {
            return true;
        }
        let kind = p.borrow().kind;
        if self.columns.is_empty() {
            return false;
        }
        match kind {
            StatementKind::Select
            | StatementKind::Explain
            | StatementKind::Pragma
            | StatementKind::Call => true,
            StatementKind::Insert
            | StatementKind::Update
            | StatementKind::Delete
            | StatementKind::Merge => self.returning,
            StatementKind::Other => true,
            _ => false,
        }
    }
}

pub fn is_transaction_control(cmd: &Command) -> bool {
    matches!(
        cmd,
        Command::Begin
            | Command::StartTransaction
            | Command::Commit
            | Command::Rollback
            | Command::Savepoint(_)
    )
}

/// Statements the server runs as several DuckDB statements, which must
/// succeed or fail together.
pub fn needs_transaction(cmd: &Command) -> bool {
    matches!(
        cmd,
        Command::CreateMatView { .. }
            | Command::RefreshMatView { .. }
            | Command::DropMatView { .. }
            | Command::RenameMatView { .. }
            | Command::AlterMatViewOptions { .. }
            | Command::DropRelation { .. }
            | Command::AlterRelation { .. }
    )
}

/// Whether a writing statement only adds rows: a plain INSERT (no ON CONFLICT, no INSERT OR
/// REPLACE) or COPY FROM. Such a statement cannot act on rows another transaction changed.
fn only_inserts(s: &Lexed, cmd: &Command) -> bool {
    if let Command::Copy(sql::copy::Copy::From { .. }) = cmd {
        return true;
    }
    let toks = s.tokens();
    toks.first().is_some_and(|t| t.is_kw("INSERT"))
        && !toks.iter().any(|t| {
            t.is_kw("CONFLICT") || t.is_kw("REPLACE") || t.is_kw("UPDATE") || t.is_kw("DELETE")
        })
}

/// Lower-cased names of the tables a statement writes.
fn write_targets(s: &Lexed, cmd: &Command) -> Vec<String> {
    match cmd {
        Command::Passthrough => sql::write_targets(s),
        Command::Copy(sql::copy::Copy::From { table, .. }) => vec![table.clone()],
        // Views reading the table are rebuilt by the ALTER: it waits for their writers.
        Command::AlterRelation { name } => vec![name.clone()],
        _ => Vec::new(),
    }
    .into_iter()
    .map(|n| n.name.to_ascii_lowercase())
    .collect()
}

/// Makes a statement of the extended protocol ready, with its parameter and result types
/// before it runs: a query or write without parameters is bound by DuckDB and planned only when
/// it runs; others are prepared.
pub fn prepare(
    ctx: &Context,
    tx: &mut Tx,
    lexed: Lexed,
    cmd: Command,
    client_oids: Vec<u32>,
) -> Result<Statement, SqlError> {
    make_ready(ctx, tx, lexed, cmd, client_oids, false)
}

/// Makes a statement of the simple protocol ready. It runs once, and its result columns are
/// sent when it runs: a query or a write is only parsed here, and planned when it runs (DuckDB
/// plans a prepared statement that reads a table again when it is executed, so preparing it
/// first would plan it twice).
pub fn prepare_once(
    ctx: &Context,
    tx: &mut Tx,
    lexed: Lexed,
    cmd: Command,
) -> Result<Statement, SqlError> {
    make_ready(ctx, tx, lexed, cmd, Vec::new(), true)
}

/// Statement kinds run as parsed: those whose parsed kind is the kind DuckDB prepares (the
/// guard reads it), and that the server answers the same way either way. Others (PRAGMA, which
/// DuckDB expands into other statements; SET, which the guard may scope; DDL) are prepared.
fn planned_once(kind: StatementKind) -> bool {
    matches!(
        kind,
        StatementKind::Select
            | StatementKind::Insert
            | StatementKind::Update
            | StatementKind::Delete
    )
}

/// Whether `s` may be one of those kinds, from its first word: what cannot be is prepared
/// without parsing it first (a CREATE TABLE … AS of a long query would be parsed twice). The
/// parsed kind still decides.
fn may_plan_once(s: &Lexed) -> bool {
    matches!(
        s.first_word(),
        None | Some(
            "SELECT" | "WITH" | "FROM" | "VALUES" | "TABLE" | "INSERT" | "UPDATE" | "DELETE"
        )
    )
}

/// Whether `cols` is the placeholder column DuckDB is given for an empty select list
/// (`SELECT FROM t`): the rows are sent without columns.
pub fn placeholder_only(cols: &[Column]) -> bool {
    matches!(cols, [only] if only.name == crate::compat::NO_COLUMNS)
}

fn make_ready(
    ctx: &Context,
    tx: &mut Tx,
    lexed: Lexed,
    cmd: Command,
    client_oids: Vec<u32>,
    once: bool,
) -> Result<Statement, SqlError> {
    let duck = matches!(
        cmd,
        Command::Passthrough | Command::DropRelation { .. } | Command::AlterRelation { .. }
    );
    let mut st = Statement {
        lexed,
        kind: StmtKind::Empty,
        command: cmd.clone(),
        client_oids,
        writes: Vec::new(),
        insert_only: false,
        returning: false,
        params: Vec::new(),
        columns: Vec::new(),
        no_columns: false,
    };
    if st.lexed.is_empty() {
        return Ok(st);
    }
    let text = &st.lexed;
    st.writes = write_targets(text, &cmd);
    st.insert_only = !st.writes.is_empty() && only_inserts(text, &cmd);
    st.returning = text.has_kw("RETURNING");
    if !duck {
        if let Command::Show { name } = &cmd {
            let shown = name.rsplit('.').next().unwrap_or(name);
            st.columns = vec![Column {
                name: crate::compat::show_column(shown),
                ty: DuckType::Varchar,
            }];
        }
        if let Command::Notify(n @ NotifyCommand::PgNotify { column, .. }) = &cmd {
            // One text column (PostgreSQL's is void, sent as an empty text value).
            st.params = vec![DuckType::Varchar; n.param_count()];
            st.columns = vec![Column {
                name: column.clone(),
                ty: DuckType::Varchar,
            }];
        }
        if let Command::ExplainRefresh { .. } = &cmd {
            // One text column, as PostgreSQL's EXPLAIN has.
            st.columns = vec![Column {
                name: "QUERY PLAN".into(),
                ty: DuckType::Varchar,
            }];
        }
        st.kind = StmtKind::Command(cmd);
        return Ok(st);
    }
    // Refuse writes into views and internal state before DuckDB sees them
    // (DuckDB would report a view as a missing table).
    if matches!(cmd, Command::Passthrough) {
        matview::check_writes(ctx, text)?;
    }
    // What DuckDB is given: the statement, or its compatibility rewrite, lexed as new text.
    let rewritten = crate::compat::rewrite(text).map(Lexed::new);
    let base = rewritten.as_ref().unwrap_or(text);
    // Statements the server runs as several (multi-object DROP, upsert, MERGE, a table with
    // serial columns) are checked as written, strictly: DuckDB never prepares them whole.
    // DuckDB drops and truncates one object per statement, and knows no serial type. They are
    // split from the compatibility rewrite, so their parts read as the rest do (a jsonb column
    // beside a serial one).
    if let Some(r) = sql::multi::split(base).or_else(|| sql::serial::split(base)) {
        check_strictly(ctx, text)?;
        st.kind = StmtKind::Rewrite(r);
        return Ok(st);
    }
    // The statistics of committed refreshes are written before a statement reads them.
    if super::refresh_stats::reads_stats(text) {
        ctx.shared.refresh_stats.flush();
    }
    // Preparing inside a transaction fixes its snapshot (DuckDB takes it
    // at the first statement after BEGIN): a writer of a tracked table
    // queues for the capture lock before that.
    if tx.state != Txn::Idle {
        tx.lock_capture(ctx, &st.writes, st.insert_only)?;
    }
    tx.note_snapshot();
    if let Some(r) = matview::rewrite_for_capture(ctx, text)? {
        check_strictly(ctx, text)?;
        if let Some(d) = &r.describe {
            st.columns = ctx.conn.prepare(d)?.columns.clone();
        }
        st.kind = StmtKind::Rewrite(r);
        return Ok(st);
    }
    // DuckDB prepares SHOW / DESCRIBE / SUMMARIZE without result columns and
    // only learns them when it runs; as a subquery they are known up front, so
    // Describe can announce the row the client will get.
    let as_query;
    let base = if shows_rows(base) {
        as_query = Lexed::new(format!(
            "SELECT * FROM ({}) AS _duckmv_show",
            base.text().trim_end_matches(';')
        ));
        &as_query
    } else {
        base
    };
    // Types the client declared in Parse are written into the statement as
    // casts, so DuckDB types the statement as the client will bind it.
    let declared: Vec<Option<DuckType>> = st
        .client_oids
        .iter()
        .map(|o| types::duck_type_for_oid(*o))
        .collect();
    let typed;
    let duck = if declared.iter().any(Option::is_some) {
        typed = Lexed::new(sql::params::substitute(
            base,
            &|n| match declared.get(n - 1) {
                Some(Some(t)) => format!("CAST(${n} AS {})", t.sql_name()),
                _ => format!("${n}"),
            },
        ));
        &typed
    } else {
        base
    };
    // A query or write is planned once per run where it can be: run once as parsed (simple
    // protocol), or bound alone for Describe and submitted as parsed at each Execute.
    let parsed = if !may_plan_once(duck) {
        None
    } else if once {
        ctx.conn
            .parse_once(duck.text())
            .filter(|p| planned_once(p.kind))
    } else {
        ctx.conn
            .parse_described(duck.text(), planned_once)
            .transpose()?
    };
    let mut p = match parsed {
        Some(p) => p,
        None => ctx.conn.prepare(duck.text())?,
    };
    // What DuckDB prepared decides what the client may run (see guard.rs).
    if let Some(scoped) = ctx.guard(text, p.kind)? {
        p = ctx.conn.prepare(&scoped)?;
    }
    st.params = p.params.clone();
    for (i, slot) in st.params.iter_mut().enumerate() {
        if let Some(Some(t)) = declared.get(i) {
            *slot = t.clone();
        }
    }
    if st
        .params
        .iter()
        .any(|t| matches!(t, DuckType::Null | DuckType::Other(_)))
    {
        for (n, name) in sql::params::cast_types(base) {
            if let Some(slot) = st.params.get_mut(n - 1) {
                if matches!(slot, DuckType::Null | DuckType::Other(_)) {
                    let t = DuckType::parse(&name);
                    if !matches!(t, DuckType::Other(_)) {
                        *slot = t;
                    }
                }
            }
        }
    }
    st.columns = p.columns.clone();
    if placeholder_only(&st.columns) {
        st.columns.clear();
        st.no_columns = true;
    }
    if !st.params.is_empty() && p.kind == StatementKind::Select && unresolved(&st.columns) {
        if let Some(cols) = describe_with_nulls(ctx, duck, &st.params) {
            st.columns = cols;
        }
    }
    st.kind = StmtKind::Duck(RefCell::new(p));
    Ok(st)
}

/// DuckDB's statements that answer with rows but are no query.
fn shows_rows(s: &Lexed) -> bool {
    matches!(s.first_word(), Some("SHOW" | "DESCRIBE" | "SUMMARIZE"))
        && !s.tokens().first().is_some_and(|t| t.is_punct("("))
}

/// The guard's checks for a statement DuckDB never prepares whole (multi-object DROP, upsert,
/// MERGE): as written, with the strictest kind.
fn check_strictly(ctx: &Context, text: &Lexed) -> Result<(), SqlError> {
    ctx.guard(text, StatementKind::Other).map(|_| ())
}

/// DuckDB cannot always type a statement's result before its parameters
/// are bound (a table function taking `$1`, say).
fn unresolved(cols: &[Column]) -> bool {
    cols.is_empty()
        || cols
            .iter()
            .any(|c| matches!(c.ty, DuckType::Null | DuckType::Other(_)))
}

/// The result columns of a query, found by preparing it with each
/// parameter replaced by a typed NULL (read-only: the query is wrapped in
/// a LIMIT 0 SELECT and never runs).
fn describe_with_nulls(ctx: &Context, sql: &Lexed, params: &[DuckType]) -> Option<Vec<Column>> {
    let body = sql::params::substitute(sql, &|n| {
        let t = params
            .get(n - 1)
            .filter(|t| !matches!(t, DuckType::Null | DuckType::Other(_)))
            .map(|t| t.sql_name())
            .unwrap_or_else(|| "VARCHAR".into());
        format!("CAST(NULL AS {t})")
    });
    let p = ctx
        .conn
        .prepare(&format!(
            "SELECT * FROM ({body}) AS _duckmv_describe LIMIT 0"
        ))
        .ok()?;
    Some(p.columns.clone())
}
