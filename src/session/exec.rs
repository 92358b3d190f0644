//! Running one statement: preparing it, the checks the server adds in
//! front of DuckDB, and streaming its rows to the client.

use crate::sqlstate::SqlState;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use duckdb::arrow::array::RecordBatch;

use super::context::Context;
use super::reply::{FieldDesc, Reply, SqlError};
use super::transaction::{Tx, Txn};
use super::{matview, Out};
use crate::engine::{Column, Prepared, QueryResult, StatementKind};
use crate::sql::{self, Command, Lexed};
use crate::types::{self, DuckType, Format, ParamValue};

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
    writes: Vec<String>,
    /// Whether it only adds rows (INSERT without upsert, COPY FROM).
    insert_only: bool,
    /// Whether it has a RETURNING clause.
    returning: bool,
    params: Vec<DuckType>,
    columns: Vec<Column>,
    /// An empty select list: rows without columns (DuckDB's placeholder column is dropped).
    no_columns: bool,
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

    /// Runs as several DuckDB statements that must commit together.
    pub fn needs_transaction(&self) -> bool {
        match &self.kind {
            StmtKind::Rewrite(_) => true,
            StmtKind::Command(c) => needs_transaction(c),
            _ => false,
        }
    }

    /// Whether executing it yields rows (Describe must say so beforehand).
    fn returns_rows(&self) -> bool {
        match &self.kind {
            StmtKind::Rewrite(r) => return r.describe.is_some(),
            // SHOW answered by the server has one row, described like DuckDB's.
            StmtKind::Command(Command::Show { .. } | Command::ExplainRefresh { .. }) => {
                return true
            }
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

pub fn prepare(
    ctx: &Context,
    tx: &mut Tx,
    lexed: Lexed,
    cmd: Command,
    client_oids: Vec<u32>,
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
    // Statements the server runs as several (multi-object DROP, upsert, MERGE) are checked as
    // written, strictly: DuckDB never prepares them whole.
    // DuckDB drops and truncates one object per statement.
    if let Some(r) = sql::multi::split(text) {
        check_strictly(ctx, text)?;
        st.kind = StmtKind::Rewrite(r);
        return Ok(st);
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
    // What DuckDB is given: the statement, or its compatibility rewrite, lexed as new text.
    let rewritten = crate::compat::rewrite(text).map(Lexed::new);
    let base = rewritten.as_ref().unwrap_or(text);
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
    let mut p = ctx.conn.prepare(duck.text())?;
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
    if let [only] = st.columns.as_slice() {
        if only.name == crate::compat::NO_COLUMNS {
            st.columns.clear();
            st.no_columns = true;
        }
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

pub fn row_description(st: &Statement, formats: &[Format]) -> Reply {
    if !st.returns_rows() {
        return Reply::NoData;
    }
    Reply::RowDescription(fields(st.columns(), formats))
}

pub fn fields(cols: &[Column], formats: &[Format]) -> Vec<FieldDesc> {
    cols.iter()
        .enumerate()
        .map(|(i, c)| {
            let pg = types::pg_type(&c.ty);
            FieldDesc {
                name: c.name.clone(),
                oid: pg.oid,
                len: pg.len,
                typmod: pg.typmod,
                format: formats.get(i).copied().unwrap_or(Format::Text),
            }
        })
        .collect()
}

pub struct Portal {
    pub stmt: Rc<Statement>,
    pub params: Vec<ParamValue>,
    pub formats: Vec<Format>,
    /// Bind's result format codes, applied to the columns the statement
    /// really returns.
    pub codes: Vec<i16>,
    pub state: PortalState,
}

pub enum PortalState {
    New,
    Streaming(Box<Stream>),
    Done,
}

pub struct Stream {
    /// DuckDB's open result; None once everything is in `queue`.
    result: Option<QueryResult>,
    queue: VecDeque<RecordBatch>,
    /// Rows of the front batch already sent.
    offset: usize,
    cols: Vec<(DuckType, Format)>,
    sent: u64,
    /// An error DuckDB raised while the rest was buffered.
    failed: Option<SqlError>,
    /// Rows are sent without their columns (`SELECT FROM t`).
    no_columns: bool,
}

impl Stream {
    /// A batch as it is sent: without columns for an empty select list.
    fn keep(&self, b: RecordBatch) -> Result<RecordBatch, SqlError> {
        if !self.no_columns {
            return Ok(b);
        }
        b.project(&[])
            .map_err(|e| SqlError::new(SqlState::INTERNAL_ERROR, e.to_string()))
    }
}

impl Portal {
    pub fn new(stmt: Rc<Statement>, params: Vec<ParamValue>, formats: Vec<Format>) -> Self {
        Portal {
            stmt,
            params,
            formats,
            codes: Vec::new(),
            state: PortalState::New,
        }
    }
}

/// Moves a suspended portal's remaining rows out of DuckDB into memory.
pub fn buffer_rest(p: &mut Portal) {
    if let PortalState::Streaming(s) = &mut p.state {
        if let Some(mut r) = s.result.take() {
            loop {
                match r.next_batch() {
                    Ok(Some(b)) => match s.keep(b) {
                        Ok(b) => s.queue.push_back(b),
                        Err(e) => {
                            s.failed = Some(e);
                            break;
                        }
                    },
                    Ok(None) => break,
                    // Reported when the client fetches past the rows read.
                    Err(e) => {
                        s.failed = Some(e.into());
                        break;
                    }
                }
            }
        }
    }
}

/// What every statement does before it first runs: counted for savepoints, the capture lock
/// taken for what it writes, the transaction's snapshot noted.
pub fn start(ctx: &Context, tx: &mut Tx, stmt: &Statement) -> Result<(), SqlError> {
    tx.savepoints.note(stmt);
    tx.lock_capture(ctx, &stmt.writes, stmt.insert_only)?;
    tx.note_snapshot();
    Ok(())
}

/// Executes (or continues) a portal of a statement DuckDB runs, sending at most `limit` rows
/// (0 = all). `describe` sends the RowDescription first (simple protocol). Commands the server
/// answers itself are the worker's.
pub fn execute(
    ctx: &Context,
    tx: &mut Tx,
    portal: &mut Portal,
    limit: u64,
    describe: bool,
    out: &Out,
) -> Result<(), SqlError> {
    if let PortalState::New = portal.state {
        let stmt = portal.stmt.clone();
        start(ctx, tx, &stmt)?;
        match &stmt.kind {
            StmtKind::Empty => {
                out.send(Reply::EmptyQuery);
                portal.state = PortalState::Done;
                return Ok(());
            }
            StmtKind::Rewrite(r) => {
                // Its write targets were checked when it was prepared.
                matview::check_statement(ctx, tx, &stmt.command, out)?;
                let (n, rows) = run_steps(ctx, &r.steps)?;
                let tag = match r.tag {
                    "INSERT" => format!("INSERT 0 {n}"),
                    "MERGE" => format!("MERGE {n}"),
                    other => other.to_string(),
                };
                if r.describe.is_none() {
                    out.send(Reply::Complete(tag));
                    portal.state = PortalState::Done;
                    return Ok(());
                }
                // RETURNING: the collected rows stream like a query's, then the tag.
                let formats: Vec<Format> = if describe {
                    Vec::new()
                } else {
                    portal.formats.clone()
                };
                if describe {
                    out.send(Reply::RowDescription(fields(stmt.columns(), &formats)));
                }
                let cols = stmt
                    .columns()
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let f = formats.get(i).copied().unwrap_or(Format::Text);
                        (c.ty.clone(), f)
                    })
                    .collect();
                let mut s = Stream {
                    result: None,
                    queue: rows.into(),
                    offset: 0,
                    cols,
                    sent: 0,
                    failed: None,
                    no_columns: false,
                };
                fetch(&mut s, 0, out)?;
                out.send(Reply::Complete(tag));
                portal.state = PortalState::Done;
                return Ok(());
            }
            StmtKind::Command(_) => {
                return Err(SqlError::new(
                    SqlState::INTERNAL_ERROR,
                    "a command the server answers reached DuckDB's executor",
                ))
            }
            StmtKind::Duck(p) => {
                matview::check_statement(ctx, tx, &stmt.command, out)?;
                if let Some(tag) = matview::alter_tracked(ctx, tx, &stmt.command, &stmt.lexed, out)?
                {
                    out.send(Reply::Complete(tag));
                    portal.state = PortalState::Done;
                    return Ok(());
                }
                let mut p = p.borrow_mut();
                p.clear_bindings();
                for (i, v) in portal.params.iter().enumerate() {
                    p.bind(i + 1, v)?;
                }
                let mut result = ctx.conn.execute(&p)?;
                if !result.returns_rows {
                    let rows = result.drain_changed_rows()?;
                    drop(result);
                    out.send(Reply::Complete(sql::command_tag(
                        &stmt.lexed,
                        p.kind,
                        rows,
                        false,
                    )));
                    portal.state = PortalState::Done;
                    return Ok(());
                }
                let formats: Vec<Format> = if describe {
                    Vec::new()
                } else {
                    portal.formats.clone()
                };
                let shown: &[crate::engine::Column] = if stmt.no_columns {
                    &[]
                } else {
                    &result.columns
                };
                let cols = shown
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        (
                            c.ty.clone(),
                            formats.get(i).copied().unwrap_or(Format::Text),
                        )
                    })
                    .collect();
                if describe {
                    out.send(Reply::RowDescription(fields(shown, &formats)));
                }
                portal.state = PortalState::Streaming(Box::new(Stream {
                    result: Some(result),
                    queue: VecDeque::new(),
                    offset: 0,
                    cols,
                    sent: 0,
                    failed: None,
                    no_columns: stmt.no_columns,
                }));
            }
        }
    }
    let kind = match &portal.stmt.kind {
        StmtKind::Duck(p) => p.borrow().kind,
        _ => StatementKind::Select,
    };
    match &mut portal.state {
        PortalState::Streaming(s) => {
            let finished = fetch(s, limit, out)?;
            if finished {
                let tag = sql::command_tag(&portal.stmt.lexed, kind, s.sent, true);
                out.send(Reply::Complete(tag));
                portal.state = PortalState::Done;
            } else {
                out.send(Reply::Suspended);
            }
        }
        PortalState::Done => {
            out.send(Reply::Complete(sql::command_tag(
                &portal.stmt.lexed,
                kind,
                0,
                true,
            )));
        }
        PortalState::New => unreachable!(),
    }
    Ok(())
}

/// Runs a rewrite's statements in order: the changed-row count for the tag, and the rows of
/// its RETURNING statements.
fn run_steps(
    ctx: &Context,
    steps: &[sql::upsert::Step],
) -> Result<(u64, Vec<RecordBatch>), SqlError> {
    use sql::upsert::Step;
    let mut n = 0;
    let mut rows = Vec::new();
    for step in steps {
        match step {
            Step::Run { sql, counted } => {
                let changed = ctx.conn.exec(sql)?;
                if *counted {
                    n += changed;
                }
            }
            Step::MustBeEmpty { sql, code, message } => {
                let mut r = ctx.conn.query(sql)?;
                while let Some(b) = r.next_batch()? {
                    if b.num_rows() > 0 {
                        return Err(SqlError::new(*code, *message));
                    }
                }
            }
            Step::Returning { sql } => {
                let mut r = ctx.conn.query(sql)?;
                while let Some(b) = r.next_batch()? {
                    n += b.num_rows() as u64;
                    rows.push(b);
                }
            }
        }
    }
    Ok((n, rows))
}

/// Sends up to `limit` rows (0 = all); true when the result is exhausted.
fn fetch(s: &mut Stream, limit: u64, out: &Out) -> Result<bool, SqlError> {
    let ncols = s.cols.len() as i16;
    let mut budget = if limit == 0 { u64::MAX } else { limit };
    loop {
        if s.queue.is_empty() {
            if let Some(e) = s.failed.take() {
                return Err(e);
            }
            match s.result.as_mut() {
                Some(r) => match r.next_batch()? {
                    Some(b) => {
                        let b = s.keep(b)?;
                        s.queue.push_back(b)
                    }
                    None => {
                        s.result = None;
                        return Ok(true);
                    }
                },
                None => return Ok(true),
            }
        }
        if budget == 0 {
            // The limit is reached and rows remain: suspend.
            return Ok(false);
        }
        let batch = s.queue.front().unwrap();
        let avail = batch.num_rows() - s.offset;
        let take = (avail as u64).min(budget) as usize;
        let mut rows = Vec::with_capacity(take);
        types::encode_rows(batch, &s.cols, s.offset, s.offset + take, &mut rows)?;
        if !out.send(Reply::Rows(rows, ncols)) {
            return Err(SqlError::new(
                SqlState::CONNECTION_FAILURE,
                "client went away",
            ));
        }
        s.sent += take as u64;
        budget -= take as u64;
        s.offset += take;
        if s.offset >= batch.num_rows() {
            s.queue.pop_front();
            s.offset = 0;
        }
    }
}
